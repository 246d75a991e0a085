"""benchmarks/bench_shapes.py at a few seconds with the real solvers: every kind draws, solves and agrees."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_shapes  # noqa: E402


@pytest.mark.parametrize("kind", bench_shapes.KINDS)
def test_every_kind_draws_a_reproducible_problem(kind):
    a_label, a = bench_shapes.draw(kind, np.random.default_rng(3))
    b_label, b = bench_shapes.draw(kind, np.random.default_rng(3))
    assert a_label == b_label and a.n_candidates == b.n_candidates > 0
    assert np.array_equal(a.costs, b.costs) and (a.coverage != b.coverage).nnz == 0


def test_a_short_run_agrees_with_brute_force_and_highs(tmp_path, capsys):
    out = tmp_path / "runs.json"
    code = bench_shapes.main(["--kinds", "tiny,summary", "--seconds", "2", "--seed", "5", "--time-limit", "20",
                              "--json", str(out)])
    text = capsys.readouterr().out
    runs = json.loads(out.read_text())
    assert code == 0 and runs and not any(r["mismatch"] for r in runs)
    assert {r["kind"] for r in runs} == {"tiny", "summary"} or len(runs) == 1
    assert all(r["reference"] is not None for r in runs if r["kind"] == "tiny")
    assert "| tiny |" in text and "mismatches" in text


def test_unknown_kinds_are_named(capsys):
    with pytest.raises(SystemExit):
        bench_shapes.main(["--kinds", "tiny,nope"])
    assert "unknown kind(s) nope; known: summary, validity, coupled, tiny" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["summary", "coupled", "validity"])
def test_scale_multiplies_the_size_and_keeps_the_draw(kind):
    label1, p1 = bench_shapes.draw(kind, np.random.default_rng(7))
    label3, p3 = bench_shapes.draw(kind, np.random.default_rng(7), scale=3)
    if kind == "validity":
        streams = int(label1.split(" x ")[0])
        assert label3.startswith(f"{3 * streams} x ") and p3.n_groups > p1.n_groups
    else:
        n1 = int(label1.split("(")[1].split(",")[0])
        assert label3 == label1.replace(f"({n1},", f"({3 * n1},", 1) and p3.n_groups == 3 * p1.n_groups


def test_a_scale_out_of_range_is_refused(capsys):
    with pytest.raises(SystemExit):
        bench_shapes.main(["--scale", "0"])
    assert "--scale must be above 0" in capsys.readouterr().err
