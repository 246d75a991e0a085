"""Baselines and online writers: feasible, <= OPT, deterministic, and online writers never look ahead."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memaudit_solvers.baselines import (PICKS, density, density_global, fifo, gvt, gvt_geometric, kind_greedy, kind_writer,
                               online_stores, random_store, recency, recency_raw)
from memaudit_solvers.bruteforce import brute_force
from memaudit_solvers.objective import evaluate, is_feasible
from memaudit_solvers.problem import Problem
from memaudit_solvers.random_problems import random_problem, tiny_problem
from memaudit_solvers.registry import BASELINES, ONLINE_METHODS, get_method

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
    runs.append(("gvt upgrade", gvt_geometric(problem, budget, upgrade=True)))
    for name, r in runs:
        assert r.status == "heuristic"
        assert is_feasible(problem, r.chosen, budget), name
        assert r.value == evaluate(problem, r.chosen)
        assert r.value <= opt + 1e-9 * max(1.0, opt), (name, r.value, opt)


@pytest.mark.parametrize("name", HEURISTICS)
def test_same_settings_same_store(name):
    # greedy-enum runs the greedy from every seed pair: O(n^2) runs, 63 s a call on these 200 candidates
    problem = random_problem(20 if name == "greedy-enum" else 60, seed=11)
    runs = [get_method(name)(problem, 300.0).chosen.tolist() for _ in range(2)]
    assert runs[0] == runs[1]


def test_random_depends_on_its_seed_only():
    problem = random_problem(60, seed=3)
    stores = {tuple(random_store(problem, 300.0, seed=s).chosen.tolist()) for s in range(5)}
    assert len(stores) > 1
    assert random_store(problem, 300.0, seed=4).settings == {"seed": 4}


# -- density (the paper's: one stream-order pass) and density-global -----------------------

def test_density_global_pays_again_for_a_unit_it_already_holds():
    # three restatements of unit 0 (density 1 each) and one unit-1 fact of density 0.9
    p = Problem.build([1, 1, 1, 1], [0, 1, 2, 3], [[1, 0], [1, 0], [1, 0], [0, 0.9]], [1.0, 1.0])
    d = density_global(p, 2)
    assert d.chosen.tolist() == [0, 1] and d.value == 1.0   # the second copy adds nothing
    assert d.method == "density-global"
    # the stream-order density scores marginal gains: the second copy gains 0, so it takes unit 1
    assert density(p, 2).chosen.tolist() == [0, 3] and density(p, 2).value == pytest.approx(1.9)
    assert gvt(p, 2).value == pytest.approx(1.9)


@pytest.mark.parametrize("fn", [density, density_global])
def test_density_spends_the_slot_on_the_cheap_fact(fn):
    # one experience: fact (cost 1, value 1) and update (cost 4, value 3.6)
    p = Problem.build([1, 4], [0, 0], [[1, 0], [1, 1]], [1.0, 2.6])
    assert fn(p, 10).chosen.tolist() == [0]
    assert brute_force(p, 10).chosen.tolist() == [1]


def test_density_global_orders_by_value_per_cost_not_by_stream():
    p = Problem.build([10, 1], [0, 1], [[1, 0], [0, 1]], [5.0, 1.0])  # densities 0.5 and 1
    assert density_global(p, 10).chosen.tolist() == [1]
    # the stream-order pass writes the first experience while it fits, then the second
    assert density(p, 10).chosen.tolist() == [0]
    assert density(p, 11).chosen.tolist() == [0, 1]


def test_density_stream_order_spends_the_budget_on_what_arrives_first():
    # experience 0: a cheap low-value fact; experience 1: a valuable one that no longer fits
    p = Problem.build([1, 2], [0, 1], [[1, 0], [0, 1]], [1.0, 5.0])
    assert density(p, 2).chosen.tolist() == [0]
    assert density_global(p, 2).chosen.tolist() == [1] == brute_force(p, 2).chosen.tolist()


def test_density_tie_breaks_larger_gain_then_later_candidate():
    # equal gain per cost (1) in one group: the larger gain (cost 2) wins
    p = Problem.build([1, 2], [0, 0], [[1, 0], [1, 1]], [1.0, 1.0])
    assert density(p, 5).chosen.tolist() == [1]
    # identical candidates: the later-listed one
    q = Problem.build([1, 1], [0, 0], [[1], [1]], [1.0])
    assert density(q, 5).chosen.tolist() == [1]


def test_density_takes_the_densest_that_fits_and_skips_zero_gain():
    # group 0: densest (cost 3) does not fit the budget 2, the next one does
    p = Problem.build([3, 2, 1], [0, 0, 1], [[3, 0], [1, 0], [1, 0]], [1.0, 1.0],
                      h_slopes=[[1.0, 0.0], [1.0, 0.0]], h_intercepts=[[0.0, 3.0], [0.0, 1.0]])
    assert density(p, 2).chosen.tolist() == [1]
    # a later candidate with no marginal gain is never written, even when it fits
    q = Problem.build([1, 1], [0, 1], [[1], [1]], [1.0])
    assert density(q, 5).chosen.tolist() == [0]


# -- gvt (the paper's: exact threshold grid) and gvt-geometric ------------------------------

def test_gvt_thresholds_are_the_distinct_singleton_densities_that_fit_plus_zero():
    p = Problem.build([1, 2, 4, 10], [0, 0, 1, 2], [[1, 0], [0, 1], [1, 1], [0, 1]], [1.0, 1.0])
    # densities 1, 0.5, 0.5 (cost 4 fits budget 5), 0.1 (cost 10 does not fit): grid {1, 0.5, 0}
    r = gvt(p, 5)
    assert r.stats["thresholds"] == 3 and r.settings == {}
    assert r.value == brute_force(p, 5).value


def test_gvt_takes_the_largest_gain_admissible_then_the_cheaper():
    # one group: a fact (cost 1, gain 1) and an update (cost 4, gain 3): at threshold 0.75 both
    # are admissible and the larger gain wins, so the best run stores the update
    p = Problem.build([1, 4], [0, 0], [[1, 0], [1, 1]], [1.0, 2.0])
    assert gvt(p, 4).chosen.tolist() == [1]
    # equal gains: the cheaper candidate
    q = Problem.build([2, 1], [0, 0], [[1], [1]], [1.0])
    assert gvt(q, 5).chosen.tolist() == [1]
    # equal gains and costs: the later-listed one
    r = Problem.build([1, 1], [0, 0], [[1], [1]], [1.0])
    assert gvt(r, 5).chosen.tolist() == [1]


def test_gvt_exact_grid_reaches_the_updates_the_geometric_schedule_misses():
    # two experiences: each a fact (cost 1, value 1) and an update (cost 4, value 2.5)
    p = Problem.build([1, 4, 1, 4], [0, 0, 1, 1], [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]],
                      [1.0, 1.5, 1.0, 1.5])
    assert gvt(p, 8).chosen.tolist() == [1, 3] and gvt(p, 8).value == 5.0 == brute_force(p, 8).value
    plain = gvt_geometric(p, 8)   # both facts at the first threshold (value 2); the best single update (2.5) wins
    assert plain.chosen.tolist() == [1] and plain.value == 2.5 and plain.method == "gvt-geometric"


def test_gvt_is_one_pass_per_threshold_each_run_from_scratch():
    """gvt equals the best of independent single-threshold passes (checked by a plain loop here)."""
    from memaudit_solvers.objective import marginal_gains, standalone_values
    for seed in range(15):
        p = tiny_problem(seed, n_candidates=9, n_units=3)
        budget = 0.4 * float(p.costs.sum())
        values = standalone_values(p)
        fits = p.costs <= budget
        best = -1.0
        for tau in sorted(set((values[fits] / p.costs[fits]).tolist()) | {0.0}, reverse=True):
            store, left = [], budget
            for members in p.group_members():
                sums = np.zeros(p.n_units)
                for u in store:
                    sums += p.coverage[[u]].toarray()[0]
                ok = [(float(g), -float(p.costs[u]), int(u)) for u, g in zip(members, marginal_gains(p, sums, members))
                      if p.costs[u] <= left + 1e-9 and g > 1e-12 and g / p.costs[u] + 1e-12 >= tau]
                if ok:
                    u = max(ok)[2]
                    store.append(u)
                    left -= p.costs[u]
            best = max(best, evaluate(p, store))
        assert gvt(p, budget).value == pytest.approx(best, abs=1e-12), seed


def test_gvt_geometric_threshold_schedule_is_as_documented():
    p = random_problem(20, seed=1)
    for eps, floor in [(0.1, 1e-3), (0.5, 0.1), (0.3, 1.0)]:
        r = gvt_geometric(p, 80.0, eps=eps, floor=floor, upgrade=True)
        steps = 1 if floor == 1.0 else math.ceil(math.log(floor) / math.log(1 - eps)) + 1
        assert r.stats["thresholds"] == steps
        assert r.settings == {"eps": eps, "floor": floor, "best_single": True, "upgrade": True}
        # without upgrade, passes that cannot store anything are skipped and the schedule may stop early
        assert gvt_geometric(p, 80.0, eps=eps, floor=floor).stats["thresholds"] <= steps


def test_gvt_geometric_is_at_least_the_best_single_candidate():
    for seed in range(20):
        p = tiny_problem(seed, n_candidates=9, n_units=3)
        budget = float(np.median(p.costs))
        fits = np.flatnonzero(p.costs <= budget)
        best = max((evaluate(p, [u]) for u in fits), default=0.0)
        assert gvt_geometric(p, budget).value >= best - 1e-12
        assert gvt_geometric(p, budget, best_single=False).value <= gvt_geometric(p, budget).value


def test_gvt_upgrade_leaves_the_slot_of_a_cheap_fact():
    p = Problem.build([1, 4, 1, 4], [0, 0, 1, 1], [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]],
                      [1.0, 1.5, 1.0, 1.5])
    up = gvt_geometric(p, 8, upgrade=True)
    assert up.chosen.tolist() == [1, 3] and up.value == 5.0 == brute_force(p, 8).value
    assert get_method("gvt-upgrade")(p, 8).method == "gvt-upgrade"


@pytest.mark.parametrize("kw", [{"eps": 0}, {"eps": 1}, {"eps": -0.1}, {"floor": 0}, {"floor": 1.5}])
def test_gvt_geometric_rejects_bad_settings(kw):
    with pytest.raises(ValueError, match="eps|floor"):
        gvt_geometric(random_problem(5, seed=0), 10.0, **kw)


def test_gvt_takes_no_settings():
    with pytest.raises(TypeError):
        gvt(random_problem(5, seed=0), 10.0, eps=0.1)


# -- the paper's simple writers -------------------------------------------------------------

def test_fact_only_and_summary_only_are_the_greedy_over_one_kind():
    p = Problem.build([2, 1, 2, 3], [0, 0, 1, 1], [[1, 0], [1, 0], [0, 1], [0, 1]], [1.0, 3.0],
                      kinds=["fact", "summary", "fact", "summary"])
    assert get_method("fact-only")(p, 4).chosen.tolist() == [0, 2]
    assert get_method("summary-only")(p, 4).chosen.tolist() == [1, 3]
    assert get_method("summary-only")(p, 3).chosen.tolist() == [3]    # equal density: the larger gain first
    assert kind_greedy(p, 4, kind="fact").method == "fact-only"
    with pytest.raises(ValueError, match="needs candidate kinds"):
        kind_greedy(tiny_problem(0), 5.0, kind="fact")


def test_recency_raw_takes_raw_spans_newest_first_and_skips_what_does_not_fit():
    p = Problem.build([1, 3, 2, 1], [0, 1, 2, 2], [[1, 0], [1, 0], [0, 1], [0, 1]], [1.0, 1.0],
                      kinds=["raw", "raw", "raw", "fact"])
    assert recency_raw(p, 3).chosen.tolist() == [0, 2]     # e2 (2), e1 (3) does not fit, e0 (1)
    assert recency_raw(p, 6).chosen.tolist() == [0, 1, 2]
    assert recency_raw(p, 0.5).chosen.tolist() == []


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
    paper = subprocess.run([sys.executable, str(script), "--sizes", "8", "--seeds", "2", "--fracs", "0.05",
                            "--methods", "density", "--budget-rule", "paper"], capture_output=True, text=True,
                           check=True).stdout
    assert "paper's budget rule: f=0.05: B=" in paper
    for row in rows:
        mean, low = (float(x) for x in row.split("|")[2].split("/"))
        assert 0 <= low <= mean <= 1
