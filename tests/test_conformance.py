"""One conformance suite over every registered method: the contract of DESIGN.md "Methods: one contract"."""

import functools
import json
import math

import numpy as np
import pytest

from memaudit_solvers.objective import evaluate, is_feasible, total_cost
from memaudit_solvers.problem import Problem
from memaudit_solvers.random_problems import random_problem, tiny_problem
from memaudit_solvers.milp import BACKENDS as MILPS
from memaudit_solvers.milp import installed_backends
from memaudit_solvers.registry import EXACT_METHODS, METHODS, NEEDS_KINDS, get_method, run_method
from memaudit_solvers.result import STATUSES, Declined, Result


def _off_grid():
    """Coverage and weights that are no small-integer ratios: CP-SAT must decline, the others solve."""
    rng = np.random.default_rng(5)
    cov = rng.uniform(0.1, 1.3, (9, 4)) * (rng.random((9, 4)) < 0.6)
    return Problem.build(rng.uniform(1.0, 5.0, 9), np.arange(9) // 2, cov, [0.1234567891, 1.7320508075688772,
                                                                            2.0, 1.0])


#: name -> (problem, budgets, data scale exactly to integers)
CASES = {
    "tiny-min1": (tiny_problem(1, n_candidates=10, pieces="min1"), (0.0, 6.0, 15.0), True),
    "tiny-cap": (tiny_problem(2, n_candidates=12, n_units=4, pieces="cap"), (4.0, 12.0), True),
    "tiny-pwl": (tiny_problem(3, n_candidates=12, n_units=5, pieces="pwl"), (5.0, 100.0), True),
    "package-n7": (random_problem(7, 4), (30.0, 80.0), True),
    "package-n12": (random_problem(12, 0), (40.0, 120.0), True),          # brute force refuses
    "off-grid": (_off_grid(), (4.5, 9.0), False),
    "no-candidates": (Problem.build([], [], np.zeros((0, 2)), [1.0, 1.0]), (0.0, 5.0), True),
}
#: every registered name plus two instances of the parametric kind:<k> writer
EXACT_NAMES = [n for n in EXACT_METHODS if n not in MILPS or n in installed_backends()]
NAMES = [*sorted(n for n in METHODS if n not in MILPS or n in installed_backends()), "kind:raw", "kind:fact"]
PARAMS = [pytest.param(name, case, i, id=f"{name}-{case}-b{i}")
          for name in NAMES for case in CASES for i in range(len(CASES[case][1]))]


@functools.lru_cache(maxsize=None)
def run(name, case, i):
    """The result of method ``name`` on a case and budget, or the exception it raised."""
    problem, budgets, _ = CASES[case]
    try:
        return get_method(name)(problem, budgets[i])
    except (ValueError, Declined) as err:
        return err


def refused(name, case, outcome):
    """Skip the cases a method may legitimately refuse, after checking that it says why."""
    if not isinstance(outcome, ValueError):  # Declined is a ValueError too
        return False
    if name == "cpsat":
        assert isinstance(outcome, Declined) and not CASES[case][2], f"cpsat declined {case}: {outcome}"
        assert "integers" in str(outcome)
        return True
    if name.startswith("kind:") or name in NEEDS_KINDS:
        assert CASES[case][0].kinds is None and "needs candidate kinds" in str(outcome), f"{name}: {outcome}"
        return True
    assert name == "brute" and "brute force would enumerate" in str(outcome), f"{name} on {case}: {outcome}"
    return True


@functools.lru_cache(maxsize=None)
def reference(case, i):
    """OPT: the value every exact method that runs agrees on (checked in test_exact_methods_agree)."""
    values = [r.value for r in (run(m, case, i) for m in sorted(EXACT_NAMES)) if isinstance(r, Result)]
    assert len(values) >= 2
    return max(values)


@pytest.mark.parametrize("name, case, i", PARAMS)
def test_method_contract(name, case, i):
    problem, budgets, _ = CASES[case]
    budget = budgets[i]
    r = run(name, case, i)
    if refused(name, case, r):
        pytest.skip(f"{name} refuses {case}: {r}")
    assert isinstance(r, Result)
    assert r.method == name
    assert isinstance(r.settings, dict)
    assert r.budget == budget
    assert r.chosen.dtype.kind == "i" and r.chosen.tolist() == sorted(set(r.chosen.tolist()))
    assert is_feasible(problem, r.chosen, budget)
    assert r.value == evaluate(problem, r.chosen)
    assert r.cost == total_cost(problem, r.chosen)
    assert r.status in STATUSES
    assert r.bound >= r.value
    assert isinstance(r.stats, dict) and isinstance(r.message, str)
    json.dumps(r.to_dict())  # the record is plain JSON
    opt = reference(case, i)
    tol = 1e-9 * max(1.0, abs(opt))
    if name in EXACT_METHODS:
        assert r.status == "optimal", r.message
        assert abs(r.value - opt) <= tol
        assert r.gap <= 1e-9
    else:
        assert r.status == "heuristic"
        assert r.value <= opt + tol


@pytest.mark.parametrize("name, case, i", PARAMS)
def test_method_is_deterministic(name, case, i):
    problem, budgets, _ = CASES[case]
    first = run(name, case, i)
    if refused(name, case, first):
        pytest.skip(f"{name} refuses {case}")
    again = get_method(name)(problem, budgets[i])
    assert again.chosen.tolist() == first.chosen.tolist()
    assert again.value == first.value and again.status == first.status


@pytest.mark.parametrize("case", list(CASES))
def test_exact_methods_agree(case):
    for i in range(len(CASES[case][1])):
        ran = {m: run(m, case, i) for m in sorted(EXACT_NAMES)}
        values = {m: r.value for m, r in ran.items() if isinstance(r, Result)}
        assert len(values) >= 2, ran
        assert max(values.values()) - min(values.values()) <= 1e-9 * max(1.0, max(values.values())), values


def test_cpsat_declines_off_grid_data_and_says_integers():
    with pytest.raises(Declined, match="integers"):
        get_method("cpsat")(CASES["off-grid"][0], 4.5)


def test_brute_force_refuses_large_problems():
    with pytest.raises(ValueError, match="brute force would enumerate more than"):
        get_method("brute")(CASES["package-n12"][0], 40.0)


@pytest.mark.parametrize("budget", [-1.0, math.nan, math.inf, "5"], ids=["negative", "nan", "inf", "str"])
@pytest.mark.parametrize("name", NAMES)
def test_bad_budget_is_rejected(name, budget):
    with pytest.raises(ValueError, match="budget"):
        get_method(name)(CASES["tiny-min1"][0], budget)


def test_unknown_method_lists_the_valid_names():
    with pytest.raises(ValueError, match="unknown method 'nope'") as err:
        get_method("nope")
    for name in METHODS:
        assert name in str(err.value)
    with pytest.raises(ValueError, match="valid methods"):
        run_method("nope", CASES["tiny-min1"][0], 1.0)


def test_registry_shape():
    assert set(EXACT_METHODS) <= set(METHODS)
    assert {"bnb", "brute", "milp-highs", "milp-cbc", "cpsat", "greedy"} <= set(METHODS)
    assert {"density", "gvt", "random", "fifo", "recency"} <= set(METHODS)
    assert not ({"greedy", "density", "gvt", "random", "fifo", "recency"} & set(EXACT_METHODS))
    for name, fn in METHODS.items():
        assert get_method(name) is fn
    assert get_method("kind:tombstone").keywords == {"kind": "tombstone"}
    with pytest.raises(ValueError, match="needs an argument"):
        get_method("kind:")
