"""bnb at every scale: scaling all costs and the budget, or all weights, by 10**k changes neither
the feasibility nor the optimality of its store (checked against the brute-force oracle at k = 0)."""

import numpy as np
import pytest

from memaudit_solvers.bnb import branch_and_bound
from memaudit_solvers.bruteforce import brute_force
from memaudit_solvers.problem import Problem
from memaudit_solvers.random_problems import random_problem, tiny_problem

SCALES = [-12, -11, -9, -6, -3, 3, 7, 12]
CONFIGS = {"default": {}, "coupled": {"max_combos": 1, "tree_limit": 0}, "tree-dp": {"max_combos": 1}}


def scaled(p: Problem, cost_factor: float = 1.0, weight_factor: float = 1.0) -> Problem:
    return Problem.build(p.costs * cost_factor, p.groups, p.coverage, p.weights * weight_factor,
                         h_slopes=p.h_slopes, h_intercepts=p.h_intercepts, n_groups=p.n_groups)


def small_problems():
    out = [(f"tiny-{pieces}-{seed}", tiny_problem(seed, n_candidates=9, n_units=5, pieces=pieces))
           for seed in range(2) for pieces in ("min1", "cap", "pwl")]
    out += [(f"coupled-{seed}", random_problem(5, seed, restate=0.8)) for seed in range(2)]
    return out


PROBLEMS = small_problems()


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("name, p", PROBLEMS, ids=[n for n, _ in PROBLEMS])
def test_scaling_costs_and_budget_keeps_the_optimum(name, p, config):
    budget = 0.4 * float(p.costs.sum())
    opt = brute_force(p, budget).value
    for k in SCALES:
        f = 10.0 ** k
        q = scaled(p, cost_factor=f)
        r = branch_and_bound(q, budget * f, **CONFIGS[config])
        assert r.status == "optimal"
        # the store fits the scaled budget up to the relative float slack, never an absolute one
        assert q.costs[r.chosen].sum() <= budget * f * (1 + 1e-9), (k, r.chosen)
        assert np.unique(q.groups[r.chosen]).size == r.chosen.size
        assert r.value == pytest.approx(opt, rel=1e-9, abs=0), k
        assert r.bound == pytest.approx(opt, rel=1e-9, abs=0), k


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("name, p", PROBLEMS, ids=[n for n, _ in PROBLEMS])
def test_scaling_weights_keeps_the_optimum(name, p, config):
    budget = 0.4 * float(p.costs.sum())
    opt = brute_force(p, budget).value
    for k in SCALES:
        f = 10.0 ** k
        r = branch_and_bound(scaled(p, weight_factor=f), budget, **CONFIGS[config])
        assert r.status == "optimal"
        assert r.value == pytest.approx(opt * f, rel=1e-9, abs=0), k
        assert r.bound == pytest.approx(opt * f, rel=1e-9, abs=0), k


def test_tiny_budget_never_exceeded():
    """Costs of 1e-12 with a budget a hair below every pair's sum: no pair is taken (an absolute
    slack of 1e-9 would take all three)."""
    p = Problem.build([3e-12, 4e-12, 5e-12], [0, 1, 2], [[1, 0, 0], [0, 1, 0], [0, 0, 1]], [1.0, 1.0, 1.5])
    for kwargs in ({}, {"max_combos": 1}, {"max_combos": 1, "root_lp": False, "node_lp": False}):
        r = branch_and_bound(p, 7e-12 * (1 - 1e-6), **kwargs)
        assert r.chosen.tolist() == [2] and r.value == 1.5 and r.status == "optimal"
