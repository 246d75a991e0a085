"""Exhaustive enumeration: the oracle every exact method is checked against."""

from __future__ import annotations

import time

import numpy as np

from .objective import budget_slack, costs_fit, evaluate
from .problem import Problem
from .result import Declined, Result, check_budget, make_result
from .settings import Setting, validate_settings

__all__ = ["brute_force", "BRUTE_SETTINGS", "MAX_BRUTE_STORES"]

#: refuse problems with more feasible-or-not stores than this
MAX_BRUTE_STORES = 2_000_000

#: brute force's settings, declared once (the registry registers brute force with them)
BRUTE_SETTINGS = (Setting("max_stores", int, MAX_BRUTE_STORES, "Refuse problems with more stores than this.", low=1),)


def brute_force(problem: Problem, budget: float, /, *, max_stores: int = MAX_BRUTE_STORES) -> Result:
    """Enumerate every store (one candidate or none per group) and return the best.

    Only for small problems: the number of stores is the product over groups
    of (group size + 1); above ``max_stores`` it raises :class:`Declined`
    (a ValueError) saying so.  Ties are
    broken towards the store found first in lexicographic group order.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> r = brute_force(p, 4)
    >>> r.value, r.chosen.tolist(), r.status
    (2.5, [1, 2], 'optimal')
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    validate_settings("method 'brute'", BRUTE_SETTINGS, {"max_stores": max_stores})
    members = problem.group_members()
    n_stores = 1
    for m in members:
        n_stores *= len(m) + 1
        if n_stores > max_stores:
            raise Declined(f"brute force would enumerate more than {max_stores} stores "
                             f"({problem.n_candidates} candidates in {problem.n_groups} groups); "
                             "use bnb or a MILP back-end")
    costs = problem.costs
    slack = budget_slack(budget)
    best_value, best = -1.0, np.zeros(0, dtype=np.int64)
    n_checked = 0
    chosen: list[int] = []

    def visit(g: int, spent: float):
        nonlocal best_value, best, n_checked
        if g == len(members):
            if spent > budget - slack and not costs_fit(problem, costs[chosen], budget):
                return      # inside the float slack but over the budget, exactly
            n_checked += 1
            value = evaluate(problem, chosen)
            if value > best_value + 1e-12 * value:     # relative: ties go to the first store found
                best_value, best = value, np.array(chosen, dtype=np.int64)
            return
        visit(g + 1, spent)
        for u in members[g]:
            if spent + costs[u] <= budget + slack:
                chosen.append(int(u))
                visit(g + 1, spent + costs[u])
                chosen.pop()

    visit(0, 0.0)
    return make_result(problem, budget, method="brute", settings={"max_stores": max_stores}, chosen=best,
                       status="optimal", bound=best_value, started=started,
                       stats={"stores_evaluated": n_checked}, message=f"enumerated {n_checked} feasible stores")
