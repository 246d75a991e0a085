"""bnb's knapsack DP over the options reduced-cost fixing keeps, and the tree DP run on many components at
once: each checked against brute force, and the bounds they give never fall below the brute-force optimum."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_solvers.bnb import branch_and_bound
from memaudit_solvers.bnb.mckp import kept_mckp, mckp_table
from memaudit_solvers.bnb.treedp import TREE_LIMIT, component_frontier, frontiers
from memaudit_solvers.problem import Problem, breakpoint_pieces, min_cap_pieces
from memaudit_solvers.random_problems import random_problem, tiny_problem
from test_bnb_bounds import assert_exact_with_valid_root
from test_bnb_treedp import brute_frontier, components


@st.composite
def knapsacks(draw):
    """Groups of options (the first of each is 'none': cost 0, profit 0), integer costs, a capacity."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    profit, cost = [], []
    for k in sizes:
        profit.append(0.0)
        cost.append(0)
        for _ in range(k):
            profit.append(draw(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 7.25])))
            cost.append(draw(st.integers(0, 6)))
    starts = np.cumsum([0] + [k + 1 for k in sizes[:-1]])
    return np.array(profit), np.array(cost, dtype=np.int64), starts, draw(st.integers(0, 15))


def brute_mckp(profit, cost, starts, cap, allowed=None):
    """Best total profit of one option per group within ``cap`` (only ``allowed`` options), -inf if none."""
    ends = list(starts[1:]) + [profit.size]
    best = -math.inf
    for pick in itertools.product(*[range(a, b) for a, b in zip(starts, ends)]):
        if allowed is not None and not all(allowed[o] for o in pick):
            continue
        if cost[list(pick)].sum() <= cap:
            best = max(best, float(profit[list(pick)].sum()))
    return best


@settings(max_examples=60, deadline=None)
@given(knapsacks())
def test_table_equals_brute_force(data):
    profit, cost, starts, cap = data
    value, picked = mckp_table(profit, cost, starts, cap)
    assert value == brute_mckp(profit, cost, starts, cap)
    assert len(picked) == starts.size and cost[picked].sum() <= cap
    assert float(profit[picked].sum()) == value
    seg_of = np.repeat(np.arange(starts.size), np.diff(np.append(starts, profit.size)))
    assert sorted(seg_of[picked].tolist()) == list(range(starts.size))     # one option per group


@settings(max_examples=60, deadline=None)
@given(knapsacks(), st.data())
def test_the_bound_over_kept_options_never_cuts_off_the_optimum(data, draw):
    """``max(DP over the kept options, largest forced bound left out)`` >= OPT, for any set of options
    left out, when each left-out option's forced bound is valid (here the exact best store using it)."""
    profit, cost, starts, cap = data
    seg_of = np.repeat(np.arange(starts.size), np.diff(np.append(starts, profit.size)))
    keep = np.array(draw.draw(st.lists(st.booleans(), min_size=profit.size, max_size=profit.size)))
    opt = brute_mckp(profit, cost, starts, cap)
    out = kept_mckp(profit, cost, seg_of, starts.size, keep, cap, 10**6)
    assert out is not None
    value, picked = out
    assert value == brute_mckp(profit, cost, starts, cap, allowed=keep)   # exact over the kept options
    if picked:
        assert all(keep[picked]) and cost[picked].sum() <= cap
    forced = [brute_mckp(profit, cost, starts, cap, allowed=(seg_of != seg_of[o]) | (np.arange(profit.size) == o))
              for o in np.flatnonzero(~keep)]
    assert max([value] + forced) >= opt


def with_h(p: Problem, kind: str) -> Problem:
    if kind == "min1":
        return p
    s, b = breakpoint_pieces([(1.0, 1.0), (2.0, 1.5), (3.0, 1.75)]) if kind == "pwl" else \
        (min_cap_pieces([2.0])[0][0], min_cap_pieces([2.0])[1][0])
    return Problem.build(p.costs, p.groups, p.coverage, p.weights, h_slopes=np.tile(s, (p.n_units, 1)),
                         h_intercepts=np.tile(b, (p.n_units, 1)), n_groups=p.n_groups)


@settings(max_examples=20, deadline=None)
@given(st.integers(4, 20), st.integers(0, 10**6), st.sampled_from(["min1", "pwl", "cap"]),
       st.sampled_from([math.inf, 0.1, 0.25]), st.booleans())
def test_frontiers_of_many_components_at_once_equal_brute_force(n, seed, kind, frac, limited):
    p = with_h(random_problem(n, seed, restate=0.8), kind)
    comps = [c for c in components(p) if np.prod([len(m) + 1 for m in c.values()]) <= 1500]
    budget = frac * p.stream_cost()
    limits = [TREE_LIMIT if limited else None] * len(comps)
    for comp, f in zip(comps, frontiers(p, comps, budget=budget, limits=limits)):
        want = brute_frontier(p, comp, budget)
        assert f is not None
        assert f.costs.tolist() == [c for c, _ in want]
        assert f.values.tolist() == pytest.approx([v for _, v in want], rel=1e-12)
        # the one-component programme gives the same frontier
        one = component_frontier(p, comp, budget=budget)
        assert one.costs.tolist() == f.costs.tolist() and one.values.tolist() == f.values.tolist()


def test_a_component_over_its_limit_gives_none_and_the_others_still_finish():
    p = random_problem(40, 1, restate=0.8)
    comps = [c for c in components(p) if len(c) > 1]
    big = max(range(len(comps)), key=lambda c: len(comps[c]))
    limits = [3 if c == big else None for c in range(len(comps))]
    got = frontiers(p, comps, limits=limits)
    assert got[big] is None
    assert all(f is not None for c, f in enumerate(got) if c != big)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(["min1", "cap", "pwl"]), st.sampled_from([0.1, 0.25, 0.5]),
       st.sampled_from([{}, {"max_combos": 1}, {"max_combos": 1, "tree_limit": 0}]))
def test_root_bound_is_at_least_opt_on_tiny_problems(seed, pieces, frac, kwargs):
    p = tiny_problem(seed, n_candidates=10, n_units=4, pieces=pieces)
    assert_exact_with_valid_root(p, frac * float(p.costs.sum()), **kwargs)


@settings(max_examples=25, deadline=None)
@given(st.integers(3, 6), st.integers(0, 10**6), st.sampled_from([0.05, 0.1, 0.25, 0.5]))
def test_root_bound_is_at_least_opt_with_capped_h(n, seed, frac):
    p = with_h(random_problem(n, seed, restate=0.8), "cap")
    assert_exact_with_valid_root(p, frac * p.stream_cost())


def test_a_table_with_more_than_256_options_in_a_group_keeps_their_indices():
    """Choices are stored as bytes only while a group has at most 256 options; the 300th option of a
    group must still be picked (a byte would wrap it to the 44th)."""
    profit = np.zeros(301)
    cost = np.ones(301, dtype=np.int64)
    profit[300] = 5.0
    assert mckp_table(profit, cost, np.array([0]), 3) == (5.0, [300])


def test_the_table_stops_at_its_deadline():
    profit, cost, starts = np.array([0.0, 1.0, 0.0, 2.0]), np.array([0, 1, 0, 1]), np.array([0, 2])
    assert mckp_table(profit, cost, starts, 2, deadline=0.0) is None
    seg_of = np.array([0, 0, 1, 1])
    assert kept_mckp(profit, cost, seg_of, 2, np.ones(4, dtype=bool), 2, 10**6, deadline=0.0) is None
    assert mckp_table(profit, cost, starts, 2) == (3.0, [1, 3])


def test_a_knapsack_of_ten_thousand_experiences_is_closed_by_the_dp_at_the_root():
    """``random_problem(10000, 1)`` at 5 %: every component collapses (a pure multiple-choice
    knapsack), the knapsack LP is 0.98 above OPT on a 0.5 grid, and with a 20-million-cell table
    limit (the first default) the DP bound never ran: the search timed out with its bound unmoved.
    The DP's table here is about 100 million cells."""
    p = random_problem(10000, 1)
    r = branch_and_bound(p, 0.05 * p.stream_cost(), time_limit=60)
    assert r.status == "optimal" and r.value == 10652.0
    assert r.stats["dp_solves"] >= 1 and r.stats["coupled_groups"] == 0


def reference_mckp_value(profit, cost, starts, cap):
    """The multiple-choice knapsack's value by the textbook recursion in plain Python (no numpy)."""
    ends = list(starts[1:]) + [len(profit)]
    table = [0.0] + [-math.inf] * cap
    for a, b in zip(starts, ends):
        new = [-math.inf] * (cap + 1)
        for o in range(a, b):
            c = int(cost[o])
            for j in range(c, cap + 1):
                new[j] = max(new[j], table[j - c] + profit[o])
        table = new
    return max(table)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.integers(0, 40), st.integers(0, 2**31 - 1), st.floats(-5, 60))
def test_the_trace_from_checkpoints_picks_a_store_worth_the_value(n_groups, cap, seed, trace_above):
    """Many groups (several checkpoint blocks): the value is the textbook recursion's; the store traced
    back is one option per group, within the capacity and worth exactly the value; no trace at or
    below ``trace_above``."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5, n_groups)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    profit = rng.choice([0.0, 0.5, 1.0, 2.5, 3.0], sizes.sum())
    cost = rng.integers(0, 7, sizes.sum())
    value, picked = mckp_table(profit, cost, starts, cap)
    assert value == reference_mckp_value(profit, cost, starts, cap)
    if math.isfinite(value):
        seg_of = np.repeat(np.arange(n_groups), sizes)
        assert sorted(seg_of[picked].tolist()) == list(range(n_groups))
        assert cost[picked].sum() <= cap and float(profit[picked].sum()) == value
    again = mckp_table(profit, cost, starts, cap, trace_above=trace_above)
    assert again[0] == value
    assert (again[1] is None) == (math.isfinite(value) and not value > trace_above)


def test_a_deadline_during_the_trace_keeps_the_value_and_traces_nothing(monkeypatch):
    """The forward pass ends in time, then the clock passes the deadline: the value (the bound) is
    returned, the store is not (the trace would take as long again)."""
    import memaudit_solvers.bnb.mckp as mckp
    calls = iter(range(10**6))
    monkeypatch.setattr(mckp.time, "perf_counter", lambda: float(next(calls)))
    profit, cost, starts = np.array([0.0, 1.0, 0.0, 2.0]), np.array([0, 1, 0, 1]), np.array([0, 2])
    # the clock reads 0 and 1 in the forward pass (two groups), 2 at the first trace block
    assert mckp.mckp_table(profit, cost, starts, 2, deadline=1.5) == (3.0, None)


def test_the_dp_below_the_root_stops_where_it_closes_no_node():
    """With an LP at every node, the knapsack DP runs below the root until DP_TRIAL nodes in which it
    closed none, then no more in that search (summary_problem(100, 3) at 25 %: 150-odd nodes, 8 DP
    calls below its roots); a DP that has closed a node keeps running.  The optimum is HiGHS's."""
    from memaudit_solvers.bnb.search import DP_TRIAL, Search
    from memaudit_solvers.milp import milp_highs
    from memaudit_solvers.random_problems import summary_problem

    p = summary_problem(100, 3)
    budget = 0.25 * p.stream_cost()
    r = branch_and_bound(p, budget)
    assert r.status == "optimal" and r.value == pytest.approx(milp_highs(p, budget).value, rel=1e-9)
    st = r.stats
    assert st["nodes"] > 4 * DP_TRIAL and st["dp_node_closes"] == 0
    assert 0 < st["dp_node_calls"] <= DP_TRIAL * (st["restarts"] + 1)
    search = Search(p, budget, exact_units=np.zeros(p.n_units, dtype=bool), use_lp=True, deadline=math.inf,
                    dp_limit=10**6)
    assert search.dp_pays(False) and search.dp_pays(True)
    search.stats.update(dp_node_calls=DP_TRIAL)
    assert not search.dp_pays(False) and search.dp_pays(True)
    search.stats.update(dp_node_closes=1)
    assert search.dp_pays(False)
