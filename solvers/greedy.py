"""Cost-benefit greedy under the knapsack and one-per-group constraints."""

from __future__ import annotations

import heapq
import time

import numpy as np

from .coverage import Coverage
from .objective import budget_slack, evaluate, standalone_values
from .problem import Problem
from .result import Result, check_budget, make_result

__all__ = ["greedy", "greedy_store"]


def greedy_store(problem: Problem, budget: float, *, start=(), allowed=None,
                 deadline: float | None = None) -> np.ndarray:
    """Indices chosen by the lazy cost-benefit greedy, extending ``start``.

    Repeatedly adds the candidate with the largest marginal gain per cost
    that fits the remaining budget and belongs to a group with no chosen
    candidate yet; stops when no candidate has a positive gain.  Marginal
    gains only shrink as the store grows (F is submodular), so stale heap
    entries are re-scored lazily.  ``allowed`` (boolean mask) restricts the
    candidates that may be added.

    ``deadline`` (a :func:`time.perf_counter` value; default none) stops the adding once it has
    passed: the store built so far is returned, feasible like every store this returns (each
    addition is checked against the group and the budget when it is made).

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([1, 2, 2], [0, 1, 2], [[1, 0], [0, 1], [1, 1]], [1.0, 3.0])
    >>> greedy_store(p, 3).tolist(), greedy_store(p, 3, deadline=time.perf_counter() - 1).tolist()
    ([2], [])
    """
    chosen = [int(u) for u in start]
    used = np.zeros(problem.n_groups, dtype=bool)
    used[problem.groups[chosen]] = True
    remaining = budget - float(problem.costs[chosen].sum())
    state = Coverage(problem, chosen)
    ok = (problem.costs <= remaining + budget_slack(budget)) & ~used[problem.groups]
    if allowed is not None:
        ok &= allowed
    cand = np.flatnonzero(ok)
    if cand.size == 0:
        return np.array(sorted(chosen), dtype=np.int64)
    gains = state.gains(cand)
    keep = gains > 0
    # Python floats: a ratio past the largest float is +inf (it still sorts first), with no overflow warning
    heap = [(-float(g) / float(problem.costs[u]), int(u)) for g, u in zip(gains[keep], cand[keep])]
    heapq.heapify(heap)
    tol = 1e-12
    while heap:
        if deadline is not None and time.perf_counter() > deadline:
            break
        neg_ratio, u = heapq.heappop(heap)
        g = problem.groups[u]
        if used[g] or problem.costs[u] > remaining + budget_slack(budget):
            continue
        gain = state.gain(u)
        if gain <= tol:
            continue
        ratio = float(gain) / float(problem.costs[u])
        if heap and ratio < -heap[0][0] - tol:
            heapq.heappush(heap, (-ratio, u))
            continue
        chosen.append(u)
        used[g] = True
        remaining -= problem.costs[u]
        state.add(u)
    return np.array(sorted(chosen), dtype=np.int64)


def greedy(problem: Problem, budget: float, /) -> Result:
    """Cost-benefit greedy with the best single candidate as a fallback.

    Returns the better of the greedy store (:func:`greedy_store`) and the
    single candidate of largest value that fits the budget, the classic rule
    for budgeted submodular maximisation.  Status ``heuristic``.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([1, 10], [0, 1], [[1, 0], [0, 1]], [1.0, 5.0])
    >>> greedy(p, 10).chosen.tolist()   # 'best single' beats the density pick
    [1]
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    store = greedy_store(problem, budget)
    single = np.flatnonzero(problem.costs <= budget + budget_slack(budget))
    best, best_value = store, evaluate(problem, store)
    if single.size:
        values = standalone_values(problem)[single]
        u = int(single[np.argmax(values)])
        if values.max() > best_value:
            best, best_value = np.array([u]), float(values.max())
    return make_result(problem, budget, method="greedy", settings={}, chosen=best, status="heuristic",
                       bound=float("inf"), started=started)
