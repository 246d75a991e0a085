"""Baselines and online writers: feasible, <= OPT, deterministic, and online writers never look ahead."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.baselines import PICKS, density, fifo, gvt, kind_writer, online_stores, random_store, recency
from solvers.bruteforce import brute_force
from solvers.objective import evaluate, is_feasible
from solvers.problem import Problem
from solvers.random_problems import random_problem, tiny_problem
from solvers.registry import BASELINES, ONLINE_METHODS, get_method

KINDS = ("raw", "fact", "update", "tombstone")
HEURISTICS = [*sorted(BASELINES), *sorted(ONLINE_METHODS), "kind:raw", "kind:fact", "kind:tombstone"]


def with_kinds(problem: Problem, seed: int) -> Problem:
    rng = np.random.default_rng(seed)
    return Problem.build(problem.costs, problem.groups, problem.coverage, problem.weights,
                         h_slopes=problem.h_slopes, h_intercepts=problem.h_intercepts, n_groups=problem.n_groups,
                         kinds=[KINDS[i] for i in rng.integers(0, len(KINDS), problem.n_candidates)])


def prefix(problem: Problem, t: int) -> Problem:
    """The problem made of the first t experiences (groups 0..t-1) only."""
    keep = np.flatnonzero(problem.groups < t)
    kinds = None if problem.kinds is None else [problem.kinds[i] for i in keep]
    return Problem.build(problem.costs[keep], problem.groups[keep], problem.coverage[keep], problem.weights,
                         h_slopes=problem.h_slopes, h_intercepts=problem.h_intercepts, n_groups=t, kinds=kinds)


# -- every baseline: feasible, <= OPT (brute force), deterministic ------------------------

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(1, 11), pieces=st.sampled_from(["min1", "cap", "pwl"]),
       frac=st.sampled_from([0.0, 0.1, 0.3, 0.6, 1.0]))
def test_baselines_are_feasible_and_below_brute_force(seed, n, pieces, frac):
    problem = with_kinds(tiny_problem(seed, n_candidates=n, n_units=4, pieces=pieces), seed)
    budget = frac * float(problem.costs.sum())
    opt = brute_force(problem, budget).value
    runs = [(name, get_method(name)(problem, budget)) for name in HEURISTICS]
    runs.append(("gvt upgrade", gvt(problem, budget, upgrade=True)))
    for name, r in runs:
        assert r.status == "heuristic"
        assert is_feasible(problem, r.chosen, budget), name
        assert r.value == evaluate(problem, r.chosen)
        assert r.value <= opt + 1e-9 * max(1.0, opt), (name, r.value, opt)


@pytest.mark.parametrize("name", HEURISTICS)
def test_same_settings_same_store(name):
    problem = random_problem(60, seed=11)
    runs = [get_method(name)(problem, 300.0).chosen.tolist() for _ in range(2)]
    assert runs[0] == runs[1]


def test_random_depends_on_its_seed_only():
    problem = random_problem(60, seed=3)
    stores = {tuple(random_store(problem, 300.0, seed=s).chosen.tolist()) for s in range(5)}
    assert len(stores) > 1
    assert random_store(problem, 300.0, seed=4).settings == {"seed": 4}


# -- density ------------------------------------------------------------------------------

def test_density_pays_again_for_a_unit_it_already_holds():
    # three restatements of unit 0 (density 1 each) and one unit-1 fact of density 0.9
    p = Problem.build([1, 1, 1, 1], [0, 1, 2, 3], [[1, 0], [1, 0], [1, 0], [0, 0.9]], [1.0, 1.0])
    d = density(p, 2)
    assert d.chosen.tolist() == [0, 1] and d.value == 1.0   # the second copy adds nothing
    assert gvt(p, 2).value == pytest.approx(1.9)            # exact marginals take the other unit


def test_density_spends_the_slot_on_the_cheap_fact():
    # one experience: fact (cost 1, value 1) and update (cost 4, value 3.6)
    p = Problem.build([1, 4], [0, 0], [[1, 0], [1, 1]], [1.0, 2.6])
    assert density(p, 10).chosen.tolist() == [0]
    assert brute_force(p, 10).chosen.tolist() == [1]


def test_density_orders_by_value_per_cost_not_by_value():
    p = Problem.build([10, 1], [0, 1], [[1, 0], [0, 1]], [5.0, 1.0])  # densities 0.5 and 1
    assert density(p, 10).chosen.tolist() == [1]


# -- gvt ----------------------------------------------------------------------------------

def test_gvt_threshold_schedule_is_as_documented():
    p = random_problem(20, seed=1)
    for eps, floor in [(0.1, 1e-3), (0.5, 0.1), (0.3, 1.0)]:
        r = gvt(p, 80.0, eps=eps, floor=floor)
        steps = 1 if floor == 1.0 else math.ceil(math.log(floor) / math.log(1 - eps)) + 1
        assert r.stats["thresholds"] == steps
        assert r.settings == {"eps": eps, "floor": floor, "best_single": True, "upgrade": False}


def test_gvt_is_at_least_the_best_single_candidate():
    for seed in range(20):
        p = tiny_problem(seed, n_candidates=9, n_units=3)
        budget = float(np.median(p.costs))
        fits = np.flatnonzero(p.costs <= budget)
        best = max((evaluate(p, [u]) for u in fits), default=0.0)
        assert gvt(p, budget).value >= best - 1e-12
        assert gvt(p, budget, best_single=False).value <= gvt(p, budget).value


def test_gvt_upgrade_leaves_the_slot_of_a_cheap_fact():
    # two experiences: each a fact (cost 1, value 1) and an update (cost 4, value 2.5)
    p = Problem.build([1, 4, 1, 4], [0, 0, 1, 1], [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]],
                      [1.0, 1.5, 1.0, 1.5])
    plain = gvt(p, 8)   # both facts at the first threshold (value 2); the best single update (2.5) wins
    assert plain.chosen.tolist() == [1] and plain.value == 2.5
    up = gvt(p, 8, upgrade=True)
    assert up.chosen.tolist() == [1, 3] and up.value == 5.0 == brute_force(p, 8).value


@pytest.mark.parametrize("kw", [{"eps": 0}, {"eps": 1}, {"eps": -0.1}, {"floor": 0}, {"floor": 1.5}])
def test_gvt_rejects_bad_settings(kw):
    with pytest.raises(ValueError, match="eps|floor"):
        gvt(random_problem(5, seed=0), 10.0, **kw)


# -- online writers -----------------------------------------------------------------------

WRITERS = [("fifo", {}), ("recency", {}), ("kind", {"kind": "fact"}), ("kind", {"kind": "raw"})] + \
          [(policy, {"pick": pick}) for policy in ("fifo", "recency") for pick in PICKS]


@pytest.mark.parametrize("policy, kw", WRITERS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_online_writers_never_look_ahead(policy, kw, seed):
    """The store after t experiences equals the final store on a stream cut after t."""
    problem = random_problem(25, seed=seed)
    budget = 0.2 * problem.stream_cost()
    trace = list(online_stores(problem, budget, policy, **kw))
    assert len(trace) == problem.n_groups
    for t in (1, 5, 12, 24, 25):
        cut = list(online_stores(prefix(problem, t), budget, policy, **kw))
        assert cut[-1] == trace[t - 1], t


def test_a_future_that_changes_the_offline_choice_leaves_online_writers_unchanged():
    # experience 0: a 6-word raw span of unit 0; the future: either nothing, or a very valuable
    # experience 1 that would fit only if experience 0 were not written
    now = dict(costs=[6.0, 2.0], groups=[0, 0], coverage=[[1.0, 0.0], [1.0, 0.0]], kinds=["raw", "fact"])
    future = dict(costs=[6.0, 2.0, 8.0], groups=[0, 0, 1], coverage=[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]],
                  kinds=["raw", "fact", "raw"])
    short = Problem.build(now["costs"], now["groups"], np.array(now["coverage"]), [1.0, 50.0], n_groups=2,
                          kinds=now["kinds"])
    long = Problem.build(future["costs"], future["groups"], np.array(future["coverage"]), [1.0, 50.0],
                         kinds=future["kinds"])
    # an offline method sees the future and changes its first decision ...
    assert brute_force(short, 8.0).chosen.tolist() == [0]
    assert brute_force(long, 8.0).chosen.tolist() == [2]
    # ... the online writers do not
    for policy, kw in WRITERS:
        first_short = next(iter(online_stores(short, 8.0, policy, **kw)))
        first_long = next(iter(online_stores(long, 8.0, policy, **kw)))
        assert first_short == first_long, (policy, kw)


def test_fifo_never_removes_and_recency_keeps_the_newest_run():
    problem = random_problem(40, seed=5)
    budget = 0.15 * problem.stream_cost()
    trace = list(online_stores(problem, budget, "fifo"))
    for a, b in itertools.pairwise(trace):
        assert set(a) <= set(b)
    # recency: the final store is the longest run of the latest picks (largest candidate) that fits
    members = problem.group_members()
    picks = [int(m[np.argmax(problem.costs[m])]) for m in members]
    run, held = [], 0.0
    for u in reversed(picks):
        if held + problem.costs[u] > budget:
            break
        run.append(u)
        held += problem.costs[u]
    assert recency(problem, budget).chosen.tolist() == sorted(run)
    assert fifo(problem, budget).value <= get_method("bnb")(problem, budget).value


def test_kind_writer_writes_only_its_kind_and_needs_kinds():
    problem = random_problem(30, seed=2)
    r = kind_writer(problem, 200.0, kind="tombstone")
    assert r.chosen.size and {problem.kinds[u] for u in r.chosen} == {"tombstone"}
    assert r.method == "kind:tombstone" and r.settings == {"kind": "tombstone"}
    assert kind_writer(problem, 200.0, kind="nothing-of-this-kind").chosen.size == 0
    with pytest.raises(ValueError, match="needs candidate kinds"):
        kind_writer(tiny_problem(0), 5.0, kind="raw")


def test_bad_pick_is_rejected():
    with pytest.raises(ValueError, match="pick must be one of"):
        fifo(random_problem(5, seed=0), 10.0, pick="smart")


def test_baseline_ratios_script_prints_one_row_per_method():
    import subprocess
    import sys
    from pathlib import Path
    script = Path(__file__).resolve().parents[1] / "scripts" / "baseline_ratios.py"
    out = subprocess.run([sys.executable, str(script), "--sizes", "8", "--seeds", "2", "--fracs", "0.2",
                          "--methods", "density,gvt"], capture_output=True, text=True, check=True).stdout
    rows = [ln for ln in out.splitlines() if ln.startswith("| density") or ln.startswith("| gvt")]
    assert len(rows) == 2
    for row in rows:
        mean, low = (float(x) for x in row.split("|")[2].split("/"))
        assert 0 <= low <= mean <= 1
