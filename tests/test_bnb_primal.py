"""bnb's primal heuristics: the exchange greedy (a feasible store, its gains exact, the optimum at a root where
greedy misses it), the node-LP sub-MIP, and the repair of an incumbent around the units it falls short on."""

import itertools
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memaudit_solvers.bnb.search as search_module
from memaudit_solvers.bnb import branch_and_bound
import memaudit_solvers.bnb.primal as primal_module
from memaudit_solvers.bnb.primal import (_exchange_gains, _move_gain, exchange_greedy, greedy, node_lp_sub_mip_store,
                                         repair_groups, repair_sub_mip_store, shortfall_units)
from memaudit_solvers.milp import milp_highs
from memaudit_solvers.objective import costs_fit, coverage_sums, evaluate
from memaudit_solvers.problem import Problem
from memaudit_solvers.random_problems import random_problem, summary_problem

from test_bnb_bounds import with_pwl
from test_bnb_cuts import family_problem
from test_bnb_tableau import root_search


def _problem(family: str, n: int, seed: int):
    if family == "summary":
        return summary_problem(n, seed, restate=0.8)
    p = random_problem(n, seed, restate=0.8)
    return with_pwl(p) if family == "pwl" else p


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["summary", "restate", "pwl"]), st.integers(3, 40), st.integers(0, 10**6),
       st.sampled_from([0.03, 0.1, 0.25, 0.5, 1.0]), st.integers(0, 10**6))
def test_exchange_greedy_keeps_one_candidate_per_group_within_the_budget(family, n, seed, frac, start_seed):
    p = _problem(family, n, seed)
    budget = frac * p.stream_cost()
    # a start within the budget: one random candidate of some groups, cheapest first until it is full
    rng = np.random.default_rng(start_seed)
    start, spent = [], 0.0
    for g in rng.permutation(p.n_groups)[: p.n_groups // 2]:
        members = np.flatnonzero(p.groups == g)
        u = int(rng.choice(members))
        if spent + p.costs[u] <= budget:
            start.append(u)
            spent += p.costs[u]
    store = exchange_greedy(p, budget, time.perf_counter() + 60, start=start)
    assert store.tolist() == sorted(set(store.tolist()))
    assert np.unique(p.groups[store]).size == store.size             # at most one candidate per group
    assert costs_fit(p, p.costs[store], budget)
    assert evaluate(p, store) >= evaluate(p, start) - 1e-9             # it only makes moves that gain


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["summary", "restate", "pwl"]), st.integers(3, 30), st.integers(0, 10**6),
       st.integers(0, 10**6))
def test_exchange_gains_are_the_change_of_f(family, n, seed, store_seed):
    """Each move's gain is F(S - held + v) - F(S), held the candidate of v's group in S (if any), in the
    batch of the first scoring and one move at a time as the greedy re-scores them."""
    p = _problem(family, n, seed)
    rng = np.random.default_rng(store_seed)
    held = np.full(p.n_groups, -1)
    for g in range(p.n_groups):
        members = np.flatnonzero(p.groups == g)
        if members.size and rng.random() < 0.5:
            held[g] = int(rng.choice(members))
    store = held[held >= 0]
    cands = np.arange(p.n_candidates)
    sums = coverage_sums(p, store)
    gains = _exchange_gains(p, sums, cands, held[p.groups])
    f0 = evaluate(p, store)
    for v in cands:
        moved = [u for u in store if p.groups[u] != p.groups[v]] + [int(v)]
        assert gains[v] == pytest.approx(evaluate(p, moved) - f0, abs=1e-9)
        assert _move_gain(p, sums, int(v), int(held[p.groups[v]])) == pytest.approx(gains[v], abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_exchange_greedy_finds_the_optimum_greedy_misses_and_spares_the_cut_rounds(seed, monkeypatch):
    """summary_problem(200, s, restate=0.8) at 25 %: OPT saturates every unit.  The greedy keeps the
    first candidate it takes of each group and stops below OPT; exchanging a group's candidate for
    a better one reaches OPT (HiGHS's), and found at the root before the cut rounds it makes them
    needless."""
    p = summary_problem(200, seed, restate=0.8)
    budget = 0.25 * p.stream_cost()
    opt = milp_highs(p, budget).value
    plain = evaluate(p, greedy(p, budget, time.perf_counter() + 60))
    exchanged = evaluate(p, exchange_greedy(p, budget, time.perf_counter() + 60))
    assert plain < opt - 1.0
    assert exchanged == pytest.approx(opt, abs=1e-6)
    with_exchange = branch_and_bound(p, budget)
    monkeypatch.setattr(search_module, "EXCHANGE_AT_ROOT", False)
    without = branch_and_bound(p, budget)
    assert with_exchange.value == pytest.approx(opt, abs=1e-6) and without.value == pytest.approx(opt, abs=1e-6)
    assert with_exchange.stats["cut_rounds"] == 0 < without.stats["cut_rounds"]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["summary", "coupled", "pwl"]), st.integers(4, 7), st.integers(0, 10**6),
       st.sampled_from([0.1, 0.25, 0.5]), st.integers(0, 10**6), st.booleans(), st.sampled_from([100, 3, 0]))
def test_node_lp_sub_mip_finds_the_best_store_of_its_candidates(family, n, seed, frac, pick_seed, start, max_nnz):
    """The node LP of a root (its rows and the cuts of its rounds up to ``SUB_MIP_MAX_CUT_NNZ`` nonzeros;
    with 0 no cut) made a MIP over some candidates is the problem restricted to them: HiGHS proves a store,
    within the budget, one per group, of them only, worth brute force's best over them, with the incumbent
    as a MIP start or without (a row of the model left out with the cuts would show here)."""
    p = family_problem(family, n, seed)
    budget = frac * p.stream_cost()
    search, _, info, lp = root_search(p, budget)
    if info is None or lp is None:
        return
    rng = np.random.default_rng(pick_seed)
    cands = np.flatnonzero(rng.random(p.n_candidates) < rng.choice([0.5, 0.8, 1.0]))
    best, best_store = 0.0, []
    for pick in itertools.product(*[[-1] + [u for u in cands.tolist() if p.groups[u] == g]
                                    for g in range(p.n_groups)]):
        chosen = [u for u in pick if u >= 0]
        if costs_fit(p, p.costs[chosen], budget) and evaluate(p, chosen) > best:
            best, best_store = evaluate(p, chosen), chosen
    if start:
        search.offer(best_store if rng.random() < 0.5 else best_store[:-1])
    saved = primal_module.SUB_MIP_MAX_CUT_NNZ
    primal_module.SUB_MIP_MAX_CUT_NNZ = max_nnz
    try:
        store, proved = node_lp_sub_mip_store(search, cands, 30.0)
    finally:
        primal_module.SUB_MIP_MAX_CUT_NNZ = saved
    assert proved and store is not None
    assert set(store.tolist()) <= set(cands.tolist())
    assert np.unique(p.groups[store]).size == store.size and costs_fit(p, p.costs[store], budget)
    assert evaluate(p, store) == pytest.approx(best, rel=1e-9, abs=1e-12)


def _random_store(p, budget, rng):
    """A random store within the budget: one random candidate of groups in random order while it fits."""
    store, spent = [], 0.0
    for g in rng.permutation(p.n_groups):
        u = int(rng.choice(np.flatnonzero(p.groups == g)))
        if rng.random() < 0.7 and spent + p.costs[u] <= budget:
            store.append(u)
            spent += p.costs[u]
    return np.asarray(sorted(store), dtype=np.int64)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["summary", "coupled", "pwl"]), st.integers(3, 7), st.integers(0, 10**6),
       st.sampled_from([0.1, 0.25, 0.5, 1.0]), st.integers(0, 10**6))
def test_repair_sub_mip_is_the_best_store_that_keeps_the_rest(family, n, seed, frac, pick_seed):
    """With the store fixed outside some groups, the repair's sub-MIP (h shifted by what the fixed part
    covers, the budget what it leaves) finds brute force's best store that keeps the store outside them."""
    p = family_problem(family, n, seed)
    budget = frac * p.stream_cost()
    rng = np.random.default_rng(pick_seed)
    store = _random_store(p, budget, rng)
    free = rng.random(p.n_groups) < 0.6
    outside = [u for u in store.tolist() if not free[p.groups[u]]]
    best = -1.0
    for pick in itertools.product(*[[-1] + np.flatnonzero(p.groups == g).tolist() for g in np.flatnonzero(free)]):
        chosen = outside + [u for u in pick if u >= 0]
        if costs_fit(p, p.costs[chosen], budget):
            best = max(best, evaluate(p, chosen))
    out = repair_sub_mip_store(p, budget, store, free, 30.0)
    if not free.any():
        assert out is None
        return
    assert out is not None
    assert set(outside) <= set(out.tolist())
    assert all(free[p.groups[u]] for u in set(out.tolist()) - set(outside))
    assert np.unique(p.groups[out]).size == out.size and costs_fit(p, p.costs[out], budget)
    assert evaluate(p, out) == pytest.approx(best, rel=1e-9, abs=1e-12)
    assert evaluate(p, out) >= evaluate(p, store) - 1e-12


def test_shortfall_units_and_the_groups_around_them():
    # unit 0 is covered by group 0 (candidate 0) and group 1 (candidate 2); unit 1 by group 1 (candidate 1),
    # unit 2 by group 2 only
    p = Problem.build([1, 1, 1, 1], [0, 1, 1, 2], [[0.5, 0, 0], [0, 1, 0], [0.5, 0, 0], [0, 0, 1]], [1, 2, 3])
    store = np.array([0, 1, 3])                   # unit 0 at 0.5 of 1
    x = np.array([1.0, 0.5, 0.5, 1.0])             # the LP covers unit 0 fully, unit 1 at 0.5
    assert shortfall_units(p, store, x).tolist() == [0]
    # around unit 0: groups 0 and 1 cover it; group 1's candidate in the store covers unit 1, which only
    # group 1 covers: nothing new; group 2 is not reached
    assert repair_groups(p, store, [0], 10).tolist() == [True, True, False]
    assert repair_groups(p, store, [0], 1).sum() == 1
    assert repair_groups(p, store, [2], 10).tolist() == [False, False, True]


@pytest.mark.slow
def test_the_repair_finds_the_optimum_the_root_sub_mip_misses():
    """summary_problem(3000, 0, restate=0.8) at 25 %: the budget does not bind and OPT is the weights' sum,
    which the root LP reaches; the root sub-MIP's store leaves two units at 0.98, and without the repair
    the search times out (still 0.053 short at 150 s)."""
    p = summary_problem(3000, 0, restate=0.8)
    budget = 0.25 * p.stream_cost()
    r = branch_and_bound(p, budget, time_limit=120)
    assert r.status == "optimal" and r.stats["repairs_improved"] >= 1
    assert r.value == pytest.approx(p.weights.sum(), rel=1e-12)    # (F <= the weights' sum: optimal)


def test_after_a_sub_mip_ran_out_the_later_roots_get_the_shorter_cap(monkeypatch):
    """A root sub-MIP that ran out of its time unproved leaves the later roots of the solve, restarts
    included, :data:`~memaudit_solvers.bnb.primal.SUB_MIP_SECONDS_AGAIN`; at 0 they run none (a cap of
    0.05 s or less skips the sub-MIP).  summary_problem(200, 0, restate=0.8) at 10 % restarts, and its
    first sub-MIP (510 candidates) takes about 2 s to prove here: with a 0.06 s cap it runs out."""
    p = summary_problem(200, 0, restate=0.8)
    budget = 0.1 * p.stream_cost()
    opt = milp_highs(p, budget).value
    monkeypatch.setattr(primal_module, "SUB_MIP_SECONDS", 0.06)
    monkeypatch.setattr(primal_module, "SUB_MIP_SECONDS_AGAIN", 0.0)
    once = branch_and_bound(p, budget)
    assert once.status == "optimal" and once.value == pytest.approx(opt, abs=1e-6)
    assert once.stats["restarts"] >= 1
    assert once.stats["sub_mips"] == once.stats["sub_mips_ran_out"] == 1
    monkeypatch.setattr(primal_module, "SUB_MIP_SECONDS_AGAIN", 0.06)      # the restarted roots run theirs
    again = branch_and_bound(p, budget)
    assert again.status == "optimal" and again.value == pytest.approx(opt, abs=1e-6)
    assert again.stats["sub_mips"] >= 2 and again.stats["sub_mips_ran_out"] >= 1
