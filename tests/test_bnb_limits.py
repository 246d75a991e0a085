"""bnb's progress reports, and its time and memory on inputs that once grew with the square of their size."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memaudit_solvers.bnb import Progress, branch_and_bound
from memaudit_solvers.random_problems import random_problem

ROOT = Path(__file__).resolve().parents[1]


def test_progress_is_reported_on_a_search_that_takes_nodes():
    p = random_problem(12, 2, restate=0.8)      # the Lagrangian bound alone needs a few hundred nodes here
    calls = []
    r = branch_and_bound(p, 0.1 * p.stream_cost(), max_combos=1, dp_limit=1, root_lp=False, node_lp=False,
                         progress=calls.append)
    assert r.status == "optimal" and r.stats["nodes"] > 1
    assert calls and all(isinstance(c, Progress) for c in calls)
    for c in calls:
        assert 1 <= c.nodes <= r.stats["nodes"]
        assert c.incumbent <= r.value + 1e-9 <= c.bound + 2e-9       # the bound never falls below OPT
        assert c.gap == pytest.approx((c.bound - c.incumbent) / abs(c.bound))
        assert 0 <= c.elapsed
    # at most about once a second: consecutive reports are at least PROGRESS_EVERY apart
    assert all(b.elapsed - a.elapsed >= 1.0 for a, b in zip(calls, calls[1:]))


def test_progress_not_called_when_the_root_closes_the_search():
    p = random_problem(60, 1, restate=0.8)
    calls = []
    r = branch_and_bound(p, 0.1 * p.stream_cost(), progress=calls.append)
    assert r.stats["nodes"] == 1 and calls == []


def test_progress_must_be_callable():
    with pytest.raises(ValueError, match="progress"):
        branch_and_bound(random_problem(5, 0), 10.0, progress=3)


#: a child builds a pathological problem and solves it with a 2 s time limit under a 3 GB address-space cap
CHILD = textwrap.dedent("""
    import json, resource, sys, time
    import numpy as np, scipy.sparse as sp
    from memaudit_solvers.bnb import branch_and_bound
    from memaudit_solvers.problem import Problem
    case = sys.argv[1]
    rng = np.random.default_rng(0)
    if case == "shared":      # 12,000 experiences whose two candidates all cover one unit
        n = 12000
        costs = rng.integers(1, 10, 2 * n).astype(float)
        cov = sp.csr_array((np.ones(2 * n), (np.arange(2 * n), np.zeros(2 * n, dtype=int))), shape=(2 * n, 1))
        p = Problem.build(costs, np.repeat(np.arange(n), 2), cov, [1.0], n_groups=n)
    else:                     # one experience with 4,000 candidates over 4,000 units
        n = 4000
        costs = rng.integers(1, 50, n).astype(float)
        cov = sp.csr_array((np.ones(n), (np.arange(n), np.arange(n))), shape=(n, n))
        p = Problem.build(costs, np.zeros(n, dtype=int), cov, rng.integers(1, 4, n).astype(float), n_groups=1)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    r = branch_and_bound(p, 0.25 * float(costs.sum()), time_limit=2.0)
    print(json.dumps({"seconds": time.perf_counter() - t, "status": r.status, "value": r.value,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "base_mb": base / 1024}))
""")


@pytest.mark.parametrize("case, value", [("shared", 1.0), ("one-group", 3.0)])
def test_one_shared_unit_or_one_huge_group_stays_small(case, value):
    """Measured on this kind of machine: 60-110 MB peak RSS and 0.6-6 s (before: 4.6-6.2 GB, minutes)."""
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
    out = subprocess.run([sys.executable, "-c", limit + "exec(compile(open(0).read(), 'child', 'exec'))", case],
                         input=CHILD, capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["rss_mb"] < 400, got
    assert got["seconds"] < 60, got
    assert got["status"] in ("optimal", "timeout") and got["value"] == value
