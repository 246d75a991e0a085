"""bnb's progress reports, and its time and memory on inputs that once grew with the square (or cube) of their size."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from memaudit_solvers.bnb import Progress, branch_and_bound
from memaudit_solvers.bnb.bound import kinks, residual_conjugate
from memaudit_solvers.objective import h_values
from memaudit_solvers.problem import Problem, breakpoint_pieces
from memaudit_solvers.random_problems import random_problem

ROOT = Path(__file__).resolve().parents[1]


def test_progress_is_reported_on_a_search_that_takes_nodes():
    p = random_problem(12, 2, restate=0.8)      # the Lagrangian bound alone needs a few hundred nodes here
    calls = []
    r = branch_and_bound(p, 0.1 * p.stream_cost(), max_combos=1, tree_limit=0, dp_limit=1, root_lp=False,
                         node_lp=False, progress=calls.append)
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
    def peak_mb():  # this process's own peak RSS: ru_maxrss after exec keeps the forking parent's size
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
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
    base = peak_mb() * 1024
    t = time.perf_counter()
    r = branch_and_bound(p, 0.25 * float(costs.sum()), time_limit=2.0)
    print(json.dumps({"seconds": time.perf_counter() - t, "status": r.status, "value": r.value,
                      "rss_mb": peak_mb(),
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


# -- the conjugate's kinks: linear in the breakpoints, the same conjugate as every pairwise intersection --

def pairwise_kinks(problem):
    """The former ``kinks``: every pairwise piece intersection z > 0 and h there (n_units x k^2 memory)."""
    a, b = problem.h_slopes, problem.h_intercepts
    k = a.shape[1]
    zs = []
    for i in range(k):
        for j in range(i + 1, k):
            with np.errstate(divide="ignore", invalid="ignore"):
                z = (b[:, j] - b[:, i]) / (a[:, i] - a[:, j])
            z[~np.isfinite(z) | (z <= 0)] = np.nan
            zs.append(z)
    if not zs:
        zs = [np.full(problem.n_units, np.nan)]
    z = np.column_stack(zs)
    hz = np.min(a[:, None, :] * np.nan_to_num(z)[:, :, None] + b[:, None, :], axis=2)
    return z, hz


def random_pwl_problem(rng, n_units: int, max_points: int) -> Problem:
    """Units with random concave h: breakpoints, plus pieces above the envelope, repeats and shuffled columns."""
    rows = []
    for _ in range(n_units):
        n_pts = int(rng.integers(1, max_points + 1))
        z = np.cumsum(rng.choice([0.25, 0.5, 1.0, 2.0], size=n_pts))
        slopes = np.sort(rng.choice([0.0, 0.125, 0.25, 0.5, 1.0, 2.0, 3.0], size=n_pts))[::-1]
        v = np.cumsum(slopes * np.diff(np.r_[0.0, z]))
        s, b = breakpoint_pieces(list(zip(z, v)))
        extra = int(rng.integers(0, 4))
        # pieces that are never the minimum: an envelope piece lifted, or a steep line through (0, 0)
        lift = rng.integers(0, s.size, size=extra)
        s = np.r_[s, s[lift], [7.0] * int(rng.integers(0, 2))]
        b = np.r_[b, b[lift] + rng.choice([0.0, 0.5, 3.0], size=extra), [0.0] * (s.size - b.size - extra)]
        rows.append((s, b))
    k = max(s.size for s, _ in rows)
    slopes = np.array([np.pad(s, (0, k - s.size), mode="edge") for s, _ in rows])
    intercepts = np.array([np.pad(b, (0, k - b.size), mode="edge") for _, b in rows])
    perm = rng.permuted(np.tile(np.arange(k), (n_units, 1)), axis=1)
    slopes, intercepts = np.take_along_axis(slopes, perm, 1), np.take_along_axis(intercepts, perm, 1)
    return Problem.build(np.ones(1), [0], sp.csr_array((1, n_units)), rng.integers(1, 4, n_units).astype(float),
                         h_slopes=slopes, h_intercepts=intercepts)


@pytest.mark.parametrize("seed", range(20))
def test_kinks_give_the_conjugate_of_every_pairwise_intersection(seed):
    rng = np.random.default_rng(seed)
    p = random_pwl_problem(rng, n_units=int(rng.integers(1, 8)), max_points=int(rng.integers(1, 9)))
    z, hz = kinks(p)
    old_z, old_hz = pairwise_kinks(p)
    # the envelope's kinks are among the pairwise intersections, h there is the same, and a unit has
    # at most one kink per breakpoint
    assert z.shape[1] <= max(1, p.h_slopes.shape[1] - 1)
    for r in range(p.n_units):
        zr = z[r][np.isfinite(z[r])]
        assert np.all(np.diff(zr) > 0)
        for zz, hh in zip(zr, hz[r][np.isfinite(z[r])]):
            at = np.flatnonzero(np.isclose(old_z[r], zz, rtol=1e-12, atol=0))
            assert at.size and np.allclose(old_hz[r, at], hh, rtol=1e-12, atol=1e-12)
            assert hh == pytest.approx(float(h_values(p, np.array([r]), np.array([zz]))[0]), rel=1e-12, abs=1e-12)
    # the conjugate (the only use of the kinks) is the same as with every pairwise intersection
    old = Problem.build(p.costs, p.groups, p.coverage, p.weights, h_slopes=p.h_slopes, h_intercepts=p.h_intercepts)
    old._cache["kinks"] = (old_z, old_hz)
    for _ in range(10):
        sums = rng.choice([0.0, 0.25, 0.5, 1.0, 1.5, 3.0, 10.0], size=p.n_units)
        slope_inf = p.weights * p.h_slopes.min(axis=1)
        mu = slope_inf + rng.choice([0.0, 0.1, 0.5, 1.0, 2.0, 5.0], size=p.n_units)
        assert np.allclose(residual_conjugate(p, sums, mu), residual_conjugate(old, sums, mu), rtol=1e-12, atol=1e-12)


#: a child solves a problem whose one unit has many breakpoints, under a 3 GB address-space cap
KINKS_CHILD = textwrap.dedent("""
    import json, resource, sys, time
    import numpy as np
    from memaudit_solvers.bnb import branch_and_bound
    from memaudit_solvers.bruteforce import brute_force
    from memaudit_solvers.problem import Problem, breakpoint_pieces
    def peak_mb():  # this process's own peak RSS: ru_maxrss after exec keeps the forking parent's size
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
    n_points = int(sys.argv[1])
    rng = np.random.default_rng(n_points)
    n_units, n_cand = 50, 8
    z = np.arange(1, n_points + 1) / 100.0
    s, b = breakpoint_pieces(list(zip(z, np.sqrt(z))))               # a concave h with n_points breakpoints
    k = s.size
    slopes = np.tile(np.r_[1.0, [0.0] * (k - 1)], (n_units, 1))         # min(1, z), padded to k pieces
    intercepts = np.tile(np.r_[0.0, [1.0] * (k - 1)], (n_units, 1))
    slopes[0], intercepts[0] = s, b
    cov = rng.choice([0.0, 0.0, 0.0, 0.5, 1.0, 2.5], size=(n_cand, n_units))
    cov[:, 0] = rng.choice([0.5, 1.0, 3.0, 4.0], size=n_cand)
    p = Problem.build(rng.integers(1, 9, n_cand).astype(float), np.arange(n_cand) // 2, cov,
                      rng.integers(1, 4, n_units).astype(float), h_slopes=slopes, h_intercepts=intercepts)
    budget = 0.3 * float(p.costs.sum())
    t = time.perf_counter()
    r = branch_and_bound(p, budget, max_combos=1, tree_limit=0, time_limit=60.0)
    seconds = time.perf_counter() - t
    print(json.dumps({"seconds": seconds, "status": r.status, "value": r.value,
                      "brute": brute_force(p, budget).value,
                      "rss_mb": peak_mb()}))
""")


@pytest.mark.parametrize("n_points", [500, 2000])
def test_many_breakpoints_stay_small(n_points):
    """Measured on this kind of machine: 75-100 MB peak RSS and 1-6 s under load (before: a 23.4 GiB
    allocation at 500 breakpoints, shape (50, 125250, 501), and a memory error at 2,000)."""
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
    out = subprocess.run([sys.executable, "-c", limit + "exec(compile(open(0).read(), 'child', 'exec'))",
                          str(n_points)], input=KINKS_CHILD, capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["rss_mb"] < 400, got
    assert got["status"] == "optimal" and got["value"] == pytest.approx(got["brute"], rel=1e-9), got


# -- no float overflow on tiny numbers ----------------------------------------------------------------

@pytest.mark.parametrize("k", [-320, -310, -300, -200, 200])
def test_tiny_or_huge_costs_do_not_overflow_the_knapsack_price(k):
    """Costs of 10**k: the budget price is searched in a power-of-two unit of the costs (profit / cost
    once overflowed to inf, then inf * 0 = nan), so bnb's own code warns nothing and its bound is the
    unscaled one."""
    import warnings

    from memaudit_solvers.bnb import lagrangian_bound
    from memaudit_solvers.bruteforce import brute_force

    p = random_problem(6, 3, restate=0.8)
    budget = 0.25 * p.stream_cost()
    f = 10.0 ** k
    q = Problem.build(p.costs * f, p.groups, p.coverage, p.weights, n_groups=p.n_groups)
    opt = brute_force(p, budget).value
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=RuntimeWarning, module=r"memaudit_solvers\.bnb")
        assert lagrangian_bound(q, budget * f) == pytest.approx(lagrangian_bound(p, budget), rel=1e-12)
        for kwargs in ({}, {"max_combos": 1}, {"max_combos": 1, "tree_limit": 0},
                       {"max_combos": 1, "tree_limit": 0, "root_lp": False, "node_lp": False}):
            r = branch_and_bound(q, budget * f, **kwargs)
            assert r.status == "optimal" and r.value == pytest.approx(opt, rel=1e-9), kwargs
