"""bnb's root bound and root LP value are valid (never below brute-force OPT) on small coupled problems."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
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
