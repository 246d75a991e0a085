"""The MEMAUDIT paper's stream-order writers: density-only and the grouped value-threshold (GVT).

Both are one pass over the experiences in stream order per threshold (:func:`stream_passes`, every
pass run side by side on one :class:`memaudit_solvers.objective.Coverages`), as the paper's public
artifact (arXiv 2605.02199) runs them.
"""

from __future__ import annotations

import time

import numpy as np

from ..coverage import Coverages
from ..objective import budget_slack, standalone_values
from ..problem import Problem
from ..result import Result, check_budget, make_result
from .common import GAIN_TOL, lexmax

__all__ = ["stream_passes", "density", "gvt"]


def _group_keys(problem: Problem) -> list:
    """Per group: its members, their costs and their indices as floats (the last tie-break key)."""
    return problem.cached("group_keys", lambda: [(m, problem.costs[m], m.astype(float)) for m in problem.group_members()])


def stream_passes(problem: Problem, budget: float, thresholds, rule: str):
    """One stream-order pass per threshold, all run side by side: their stores, costs and values.

    In each pass the groups arrive in index order; for each, among its candidates that fit the
    remaining budget and have marginal gain > :data:`GAIN_TOL` against the pass's store so far,
    the pass stores at most one:

    * ``rule="density"``: the one of largest ``(gain / cost, gain, -cost, index)`` (the
      threshold is ignored);
    * ``rule="value"``: among those with ``gain / cost + 1e-12 >= threshold``, the one of largest
      ``(gain, -cost, index)``.

    Marginal gains are exact (recomputed against each pass's own store).

    Parameters
    ----------
    thresholds : array_like, shape (T,)

    Returns
    -------
    stores : list of T lists of candidate indices (stream order)
    costs : ndarray, shape (T,)
    values : ndarray, shape (T,)
        ``F`` of each store, from the pass's coverage state (:class:`memaudit_solvers.objective.Coverages`).
    """
    tau = np.asarray(thresholds, dtype=float).reshape(-1)
    n_t = tau.size
    states = Coverages(problem, n_t)
    remaining = np.full(n_t, float(budget))
    slack = budget_slack(budget)
    stores: list[list[int]] = [[] for _ in range(n_t)]
    for g, (members, costs, keys) in enumerate(_group_keys(problem)):
        if members.size == 0:
            continue
        gains = states.group_gains(g)                                      # (T, C)
        ok = (costs <= remaining[:, None] + slack) & (gains > GAIN_TOL)
        dens = gains / costs
        if rule == "density":
            pick = lexmax(ok, (dens, gains, -costs, keys))
        else:
            ok &= dens + 1e-12 >= tau[:, None]
            pick = lexmax(ok, (gains, -costs, keys))
        for t in np.flatnonzero(pick >= 0):
            j = int(pick[t])
            u = int(members[j])
            stores[t].append(u)
            remaining[t] -= costs[j]
            states.add(int(t), u)
    spent = np.array([float(problem.costs[s].sum()) for s in stores])
    return stores, spent, states.values


def density(problem: Problem, budget: float, /) -> Result:
    """The MEMAUDIT paper's density-only writer: one pass in stream order.

    For each arriving experience (group index order) it stores the candidate of largest
    marginal gain per cost ``(F(S + u) - F(S)) / c_u`` among those that fit the remaining budget
    and have gain > 1e-12; ties by larger gain, then lower cost, then the later-listed
    candidate.  No threshold, no look-ahead, never revisits: a cheap fact that arrives first
    takes its experience's one slot even when the costlier update of that experience carries
    the validity state, and budget spent early on dense but low-value experiences is gone when
    a valuable one arrives.  It can be arbitrarily bad (``memaudit generate density-trap``).
    ``density-global`` is the global-sort variant.

    Examples
    --------
    >>> p = Problem.build([1, 4], [0, 0], [[1, 0], [1, 1]], [1.0, 2.0])
    >>> density(p, 4).chosen.tolist()   # the cheap fact takes the slot of the update
    [0]
    >>> q = Problem.build([1, 2], [0, 1], [[1, 0], [0, 1]], [1.0, 5.0])
    >>> density(q, 2).chosen.tolist()   # stream order: the first experience spends the budget
    [0]
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    stores, _, _ = stream_passes(problem, budget, [0.0], "density")
    return make_result(problem, budget, method="density", settings={}, chosen=sorted(stores[0]),
                       status="heuristic", bound=float("inf"), started=started)


def gvt(problem: Problem, budget: float, /) -> Result:
    """The MEMAUDIT paper's grouped value-threshold (GVT), on the exact threshold grid.

    The thresholds are every singleton density ``F({u}) / c_u`` of a candidate that fits the
    budget, plus 0, in descending order: an exact finite grid, not a geometric one.  For each
    threshold, one pass in stream order: each arriving experience stores, among its candidates
    that fit the remaining budget, have marginal gain > 1e-12 and gain per cost
    ``+ 1e-12 >= threshold``, the one of largest marginal gain (ties: lower cost, then the
    later-listed candidate).  The result is the best-valued run (ties: the cheaper store, then
    the earlier threshold).  No best-single fallback: the threshold 0 run already admits every
    candidate.  ``gvt-geometric`` is our geometric-schedule variant.

    Examples
    --------
    >>> p = Problem.build([1, 2, 2], [0, 1, 2], [[1, 0], [1, 0], [0, 1]], [1.0, 1.0])
    >>> gvt(p, 3).chosen.tolist()   # the second copy of unit 0 gains nothing
    [0, 2]
    >>> r = gvt(Problem.build([1, 4], [0, 0], [[1, 0], [1, 1]], [1.0, 2.0]), 4)
    >>> r.chosen.tolist(), r.stats["thresholds"]   # at threshold 0.75 the update is admissible
    ([1], 3)
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    values = standalone_values(problem)
    fits = problem.costs <= budget + budget_slack(budget)
    grid = np.unique(np.concatenate([values[fits] / problem.costs[fits], [0.0]]))[::-1]
    stores, spent, values = stream_passes(problem, budget, grid, "value")
    best, best_value, best_cost = 0, -1.0, 0.0
    for t, value in enumerate(values.tolist()):
        if value > best_value + 1e-12 or (abs(value - best_value) <= 1e-12 and spent[t] < best_cost):
            best, best_value, best_cost = t, value, float(spent[t])
    return make_result(problem, budget, method="gvt", settings={}, chosen=sorted(stores[best]), status="heuristic",
                       bound=float("inf"), started=started,
                       stats={"thresholds": int(grid.size), "best_threshold": float(grid[best])})
