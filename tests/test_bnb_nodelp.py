"""bnb's node LP: the first solve's fall-back from the dual simplex to the interior-point method."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memaudit_solvers.bnb.nodelp as nodelp
from memaudit_solvers.bnb import branch_and_bound
from memaudit_solvers.bnb.nodelp import NodeLP
from memaudit_solvers.bnb.tableau import tableau_cuts
from memaudit_solvers.bruteforce import brute_force
from memaudit_solvers.random_problems import summary_problem

from test_bnb_cuts import family_problem


def root_bounds(p):
    return np.zeros(p.n_candidates), np.ones(p.n_candidates), np.zeros(p.n_groups)


def test_a_first_solve_the_dual_simplex_does_not_finish_goes_to_the_interior_point_method(monkeypatch):
    p = summary_problem(300, 0)
    budget = 0.25 * p.stream_cost()
    monkeypatch.setattr(nodelp, "FIRST_SOLVE_SECONDS", None)
    dual = NodeLP(p, budget)
    expected = dual.solve(*root_bounds(p))
    assert dual.first_solve == "dual simplex"
    monkeypatch.setattr(nodelp, "FIRST_SOLVE_SECONDS", 1e-9)     # no time: the time limit stops it at once
    ipm = NodeLP(p, budget)
    got = ipm.solve(*root_bounds(p))
    assert ipm.first_solve == "interior point"
    assert got[-1] == pytest.approx(expected[-1], rel=1e-9)
    assert (got[0] >= 0).all()       # unit prices (an optimal dual, not necessarily the dual simplex's)
    # the options are put back and the crossover left a basis: cuts from its tableau, and warm
    # re-solves that agree with the dual simplex's model
    assert ipm.h.getOptionValue("solver")[1] == "choose"
    assert ipm.h.getOptionValue("time_limit")[1] == float("inf")
    assert tableau_cuts(ipm, got[2], got[3])[1].size > 0
    lower, upper, group_lower = root_bounds(p)
    split = int(np.argmax(np.minimum(got[2], 1 - got[2])))
    upper[split] = 0.0
    assert ipm.solve(lower, upper, group_lower)[-1] == pytest.approx(dual.solve(lower, upper, group_lower)[-1],
                                                                     rel=1e-9)
    assert ipm.h.getInfo().simplex_iteration_count > 0                # the re-solve ran the simplex


def test_a_model_with_cut_rows_at_its_first_solve_keeps_the_dual_simplex(monkeypatch):
    p = summary_problem(120, 1)
    budget = 0.1 * p.stream_cost()
    first = NodeLP(p, budget)
    _, _, x, y, _ = first.solve(*root_bounds(p))
    cuts = tableau_cuts(first, x, y)
    assert cuts[1].size > 0
    monkeypatch.setattr(nodelp, "FIRST_SOLVE_SECONDS", 1e-9)
    again = NodeLP(p, budget)
    again.add_cuts(*cuts)
    assert again.solve(*root_bounds(p)) is not None
    assert again.first_solve == "dual simplex"


@settings(max_examples=15, deadline=None)
@given(st.integers(5, 7), st.integers(0, 10**6), st.sampled_from(["summary", "coupled", "pwl"]),
       st.sampled_from([0.1, 0.25, 0.5]))
def test_bnb_with_every_first_solve_by_the_interior_point_method_proves_the_brute_force_optimum(n, seed, family,
                                                                                                frac):
    # max_combos 1 and no tree DP keep the component coupled: the search runs its root LP
    p = family_problem(family, n, seed)
    budget = frac * p.stream_cost()
    ways = []
    first_run = NodeLP._first_run

    def recorded(lp):
        first_run(lp)
        ways.append(lp.first_solve)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(nodelp, "FIRST_SOLVE_SECONDS", 1e-9)
        mp.setattr(NodeLP, "_first_run", recorded)
        r = branch_and_bound(p, budget, max_combos=1, tree_limit=0)
    assert r.status == "optimal"
    # (some roots close before any LP: a component small enough for the dynamic programme)
    assert set(ways) == ({"interior point"} if r.stats["lp_solves"] else set())
    assert r.value == pytest.approx(brute_force(p, budget).value, rel=1e-9, abs=1e-9)
