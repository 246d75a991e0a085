"""The size limit of h in Problem (MAX_H_CELLS), measured in a fresh process."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from memaudit.errors import PackageError
from memaudit.package import compile_package, package_from_dict
from memaudit_solvers.problem import (MAX_H_CELLS, Problem, ProblemError, breakpoint_pieces, check_h_cells,
                                      min_cap_pieces, stack_pieces)

ROOT = Path(__file__).resolve().parents[1]


def _package(n_units, n_breakpoints):
    """One unit whose h has ``n_breakpoints`` breakpoints beside ``n_units - 1`` min1 units."""
    pts, v = [], 0.0
    for k in range(n_breakpoints):
        v += 1.0 / (k + 1)                       # slopes 1, 1/2, 1/3, ...: concave
        pts.append([float(k + 1), v])
    units = [{"id": "big", "kind": "detail", "weight": 1.0, "h": {"breakpoints": pts}}]
    units += [{"id": f"u{i}", "kind": "current", "weight": 1.0} for i in range(n_units - 1)]
    exps = [{"id": f"e{e}", "text": "x"} for e in range(10)]
    cands = [{"id": f"e{e}.c{j}", "experience": f"e{e}", "kind": "fact", "text": "x", "cost": 1 + j,
              "coverage": {"big": 1.0 + e, f"u{(2 * e + j) % (n_units - 1)}": 1.0}}
             for e in range(10) for j in range(2)]
    return {"format": "memaudit-package/1", "id": f"h-{n_units}x{n_breakpoints}", "cost_model": "words",
            "cost_source": "given", "budget": 5, "experiences": exps, "units": units, "candidates": cands}


def test_stack_pieces_repeats_the_last_piece_of_shorter_rows():
    rows = [breakpoint_pieces([(1.0, 1.0), (2.0, 1.5), (4.0, 2.0)]), tuple(a[0] for a in min_cap_pieces([3.0]))]
    s, b = stack_pieces(rows)
    assert s.shape == b.shape == (2, 4)
    assert s[1].tolist() == [1.0, 0.0, 0.0, 0.0] and b[1].tolist() == [0.0, 3.0, 3.0, 3.0]
    p = Problem.build([1.0], [0], [[2.5, 2.5]], [1.0, 1.0], h_slopes=s, h_intercepts=b)
    z = np.array([0.5, 1.5, 3.0, 9.0])
    for r, (rs, rb) in enumerate(rows):          # the padded table states the same h as the unit's own pieces
        assert np.array_equal(np.min(p.h_slopes[r] * z[:, None] + p.h_intercepts[r], axis=1),
                              np.min(np.asarray(rs) * z[:, None] + np.asarray(rb), axis=1))


def test_stack_pieces_and_build_refuse_beyond_the_limit_before_allocating():
    n_units = MAX_H_CELLS // 2 + 1
    with pytest.raises(ProblemError, match=r"5,000,001 units x 2 pieces = 10,000,002 cells, more than MAX_H_CELLS"):
        stack_pieces([(np.zeros(2), np.zeros(2))] * n_units)
    # a broadcast view of 20 million cells costs no memory; build refuses it before copying
    view = np.broadcast_to(np.array([1.0, 0.0]), (n_units * 2, 2))
    with pytest.raises(ProblemError, match="more than MAX_H_CELLS"):
        Problem.build([1.0], [0], sp.csr_array((1, n_units * 2)), np.ones(n_units * 2), h_slopes=view,
                      h_intercepts=view)
    check_h_cells(MAX_H_CELLS // 2, 2)                      # exactly at the limit: accepted


def test_compiling_a_package_beyond_the_limit_is_one_line():
    pkg = package_from_dict(_package(600, 20_000))           # 600 units x 20,001 pieces
    with pytest.raises(PackageError, match=r"package 'h-600x20000' cannot be compiled: h needs 600 units x "
                                           r"20,001 pieces = 12,000,600 cells, more than MAX_H_CELLS = 10,000,000"):
        compile_package(pkg)


_PROBE = """
import json, sys, time
from memaudit.errors import MemauditError
from memaudit.package import compile_package, load_package

def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(key))

for path in sys.argv[1:]:
    with open("/proc/self/clear_refs", "w") as fh:  # reset the peak (VmHWM) to the current RSS
        fh.write("5")
    before, t = status("VmRSS:"), time.perf_counter()
    try:
        shape = compile_package(load_package(path)).problem.h_slopes.shape
        outcome = f"accepted {shape[0]} x {shape[1]}"
    except MemauditError as exc:
        outcome = "error: " + str(exc)
    print(json.dumps([outcome[:300], (status("VmHWM:") - before) // 1024, round(time.perf_counter() - t, 2)]))
"""


def test_one_unit_of_many_breakpoints_among_many_units_stays_bounded(tmp_path):
    """Measured: 20,000 units beside one of 2,000 breakpoints (3.9 MB) took +975 MiB and 17 s to compile
    before the limit; now it is refused.  At the limit (4,999 x 2,000 cells) compiling takes about +200 MiB."""
    cases = {"beyond": (5_001, 1_999), "at": (4_999, 1_999)}
    paths = []
    for name, (n_units, n_bp) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(_package(n_units, n_bp)))
        paths.append(str(path))
    proc = subprocess.run([sys.executable, "-c", _PROBE, *paths], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (beyond, beyond_mib, beyond_s), (at, at_mib, at_s) = [json.loads(x) for x in proc.stdout.strip().splitlines()]
    assert beyond.startswith("error: ") and "10,002,000 cells, more than MAX_H_CELLS" in beyond, beyond
    assert at == "accepted 4999 x 2000", at
    assert beyond_mib < 60, beyond_mib
    assert at_mib < 400, at_mib
    assert beyond_s < 20 and at_s < 30, (beyond_s, at_s)
