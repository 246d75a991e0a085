"""bnb's root bound and root LP value are valid (never below brute-force OPT) on small coupled problems."""

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memaudit_solvers.bnb import branch_and_bound
from memaudit_solvers.bruteforce import brute_force
from memaudit_solvers.problem import Problem, breakpoint_pieces
from memaudit_solvers.random_problems import random_problem, summary_problem


def with_pwl(p: Problem) -> Problem:
    s, b = breakpoint_pieces([(1.0, 1.0), (2.0, 1.5), (3.0, 1.75)])
    return Problem.build(p.costs, p.groups, p.coverage, p.weights, h_slopes=np.tile(s, (p.n_units, 1)),
                         h_intercepts=np.tile(b, (p.n_units, 1)), n_groups=p.n_groups)


def assert_exact_with_valid_root(p: Problem, budget: float, **kwargs):
    """bnb's result on ``p``, after checking it proves brute force's OPT and its root bound is >= OPT."""
    opt = brute_force(p, budget).value
    r = branch_and_bound(p, budget, **kwargs)
    assert r.status == "optimal" and r.value == pytest.approx(opt, rel=1e-9, abs=1e-12)
    root = r.stats["root_bound"] if r.stats["nodes"] else r.bound      # no node when nothing fits the budget
    assert root >= opt - 1e-9 * max(1.0, opt)
    return r


@settings(max_examples=25, deadline=None)
@given(st.integers(3, 7), st.integers(0, 10**6), st.sampled_from([0.05, 0.1, 0.25, 0.5]),
       st.booleans(), st.sampled_from([{}, {"max_combos": 1}, {"max_combos": 1, "dp_limit": 1}]))
def test_root_bound_is_at_least_opt_on_coupled_problems(n, seed, frac, pwl, kwargs):
    p = random_problem(n, seed, restate=0.8)
    p = with_pwl(p) if pwl else p
    budget = frac * p.stream_cost()
    r = assert_exact_with_valid_root(p, budget, **kwargs)
    opt = r.value
    if r.stats.get("root_lp_value", math.nan) == r.stats.get("root_lp_value"):   # an LP ran at the root
        assert r.stats["root_lp_value"] >= opt - 1e-7 * max(1.0, opt)


@settings(max_examples=20, deadline=None)
@given(st.integers(3, 7), st.integers(0, 10**6), st.sampled_from([0.05, 0.1, 0.25, 0.5]))
def test_bnb_is_exact_on_windowed_summary_problems(n, seed, frac):
    """Partial coverage, real weights and summaries over a window (no objective grid)."""
    p = summary_problem(n, seed)
    assert_exact_with_valid_root(p, frac * p.stream_cost())


@st.composite
def mckp_lps(draw):
    """Groups of options (contiguous), real profits of either sign, costs >= 0 (some 0), a budget."""
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=8))
    n = sum(sizes)
    profit = np.array(draw(st.lists(st.floats(-5, 20, allow_nan=False), min_size=n, max_size=n)))
    cost = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.25, 7.0, 12.5]), min_size=n,
                                  max_size=n)))
    starts = np.cumsum([0] + sizes[:-1])
    min_cost = np.minimum.reduceat(cost, starts).sum()
    budget = draw(st.floats(float(min_cost), float(min_cost) + 30.0, allow_nan=False))
    return profit, cost, starts, budget


@settings(max_examples=150, deadline=None)
@given(mckp_lps())
# a group whose cheapest option has a negative profit and whose costly one a tiny positive profit: the
# budget price must reach 2 (a bracket from profit / cost alone stopped near 1e-229)
@example((np.array([-1.0, 9.79155764e-290]), np.array([0.0, 0.5]), np.array([0]), 0.0))
# a profit of 6e-8, below HiGHS's default dual feasibility tolerance of 1e-7: its LP said 0 (the reference
# LP now runs at HiGHS's tightest tolerances, 1e-10)
@example((np.array([0.0, 0.0, 5.96046448e-08]), np.zeros(3), np.array([0]), 0.0))
def test_lagrangian_min_is_the_multiple_choice_knapsacks_lp_value(case):
    """The budget price found by lagrangian_min gives the LP value of the multiple-choice knapsack (one
    option per group, the budget), as HiGHS's LP has it, and its choice takes one option per group within
    the budget."""
    from scipy.optimize import linprog

    from memaudit_solvers.bnb.bound import lagrangian_min

    profit, cost, starts, budget = case
    value, lam, _, _, first = lagrangian_min(profit, cost, starts, budget)
    seg_of = np.repeat(np.arange(starts.size), np.diff(np.append(starts, profit.size)))
    eq = (seg_of[None, :] == np.arange(starts.size)[:, None]).astype(float)
    lp = linprog(-profit, A_ub=cost[None, :], b_ub=[budget], A_eq=eq, b_eq=np.ones(starts.size),
                 bounds=(0, 1), method="highs",
                 options={"dual_feasibility_tolerance": 1e-10, "primal_feasibility_tolerance": 1e-10})
    assert lp.status == 0
    assert value == pytest.approx(-lp.fun, rel=1e-9, abs=1e-9)
    assert lam >= 0
    assert np.bincount(seg_of[first], minlength=starts.size).tolist() == [1] * starts.size
    assert cost[first].sum() <= budget + 1e-9 * max(1.0, budget)
