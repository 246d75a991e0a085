"""Greedy with partial enumeration: every small seed set completed by the cost-benefit greedy."""

from __future__ import annotations

import itertools
import time

import numpy as np

from .greedy import greedy_store
from .objective import budget_slack, evaluate
from .problem import Problem
from .result import Result, check_budget, make_result

__all__ = ["greedy_enum"]


def greedy_enum(problem: Problem, budget: float, /, *, size: int = 2) -> Result:
    """Partial enumeration (Sviridenko's rule for budgeted submodular maximisation): every feasible
    seed set of at most ``size`` candidates (one per group, within the budget) is completed by the
    cost-benefit greedy (:func:`~memaudit_solvers.greedy.greedy_store`); the best store wins (ties: the
    seed found first, in lexicographic order).  ``size=0`` is the plain greedy; ``size=3`` keeps
    (1 - 1/e) of OPT on a knapsack alone, at ``O(n^3)`` greedy runs.  Status ``heuristic``.

    Examples
    --------
    >>> p = Problem.build([1, 10], [0, 1], [[1, 0], [0, 1]], [1.0, 5.0])
    >>> greedy_enum(p, 10, size=0).chosen.tolist(), greedy_enum(p, 10, size=1).chosen.tolist()
    ([0], [1])
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    fits = np.flatnonzero(problem.costs <= budget + budget_slack(budget)).tolist()
    best = greedy_store(problem, budget)
    best_value, seeds = evaluate(problem, best), 0
    for k in range(1, size + 1):
        for seed in itertools.combinations(fits, k):
            if (len(set(problem.groups[list(seed)].tolist())) < k
                    or problem.costs[list(seed)].sum() > budget + budget_slack(budget)):
                continue
            seeds += 1
            store = greedy_store(problem, budget, start=seed)
            value = evaluate(problem, store)
            if value > best_value:
                best, best_value = store, value
    return make_result(problem, budget, method="greedy-enum", settings={"size": int(size)}, chosen=best,
                       status="heuristic", bound=float("inf"), started=started, stats={"seeds": seeds})
