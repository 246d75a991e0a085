"""Our own value-threshold variant on a geometric schedule (``gvt-geometric``), optionally with upgrades (``gvt-upgrade``)."""

from __future__ import annotations

import time

import numpy as np

from ..coverage import Coverage
from ..objective import budget_slack, evaluate, standalone_values
from ..problem import Problem
from ..result import Result, check_budget, make_result

__all__ = ["gvt_geometric", "gvt_upgrade"]


def _exchange(problem, state, held, g, members, remaining, tau, budget) -> float:
    """GVT's optional upgrade: switch group g from its stored u to the best v whose exchange clears tau."""
    u = int(held[g])
    others = members[(members != u) & (problem.costs[members] <= remaining + problem.costs[u] + budget_slack(budget))]
    if others.size == 0:
        return remaining
    without = state.copy()
    without.remove(u)
    base = without.gain(u)
    gains = without.gains(others) - base
    extra = problem.costs[others] - problem.costs[u]
    ok = (gains > 1e-12) & ((extra <= 0) | (gains >= tau * extra * (1 - 1e-12)))
    if not ok.any():
        return remaining
    others, gains = others[ok], gains[ok]
    v = int(others[np.lexsort((others, problem.costs[others], -gains))[0]])
    state.remove(u)
    state.add(v)
    held[g] = v
    return remaining + problem.costs[u] - problem.costs[v]


def gvt_geometric(problem: Problem, budget: float, /, *, eps: float = 0.1, floor: float = 1e-3,
                  best_single: bool = True, upgrade: bool = False) -> Result:
    """Group Value-Threshold on a geometric schedule: our variant (``gvt-geometric``).

    Let ``d`` be the best standalone density ``F({u}) / c_u`` over candidates that fit.
    The thresholds are ``d, d(1-eps), d(1-eps)^2, ...`` down to ``floor * d``, then one
    last pass at the floor.  At each threshold the groups are scanned in stream order;
    in each group with nothing stored yet, among its candidates that fit the remaining
    budget and whose *exact* marginal gain per cost clears the threshold, the one with
    the largest marginal gain is stored (ties: cheaper, then smaller index).  Marginal
    gains are recomputed against the store so far, so a unit already held is not paid
    for twice.  With ``best_single`` the result is the better of this store and the
    best single candidate that fits (the fallback that bounds the loss of any
    threshold rule on a knapsack).

    A stored representation is final: once a cheap fact holds an experience's slot at a
    high threshold, the costlier update of that experience cannot follow at a lower one.
    ``upgrade=True`` (not the default) relaxes this: a group that holds u may switch to v
    when the exchange's gain per extra cost, ``(F(S - u + v) - F(S)) / (c_v - c_u)``, clears
    the threshold (any positive gain when v is not costlier) and v fits.

    Parameters
    ----------
    eps : float in (0, 1)
        Relative step of the threshold schedule (default 0.1: 10 % per step).
    floor : float in (0, 1]
        Lowest threshold, as a fraction of the first one (default 1e-3).
    best_single : bool
        Compare with the best single candidate (default True).
    upgrade : bool
        Allow exchanges within a group at later thresholds (default False).

    Examples
    --------
    >>> p = Problem.build([1, 2, 2], [0, 1, 2], [[1, 0], [1, 0], [0, 1]], [1.0, 1.0])
    >>> gvt_geometric(p, 3).chosen.tolist()   # the second copy of unit 0 gains nothing
    [0, 2]
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    if not (0 < eps < 1):
        raise ValueError(f"gvt-geometric: eps must lie in (0, 1); got {eps!r}")
    if not (0 < floor <= 1):
        raise ValueError(f"gvt-geometric: floor must lie in (0, 1]; got {floor!r}")
    settings = {"eps": float(eps), "floor": float(floor), "best_single": bool(best_single),
                "upgrade": bool(upgrade)}
    values = standalone_values(problem)
    fits = np.flatnonzero((problem.costs <= budget + budget_slack(budget)) & (values > 0))
    chosen: list[int] = []
    thresholds = 0
    if fits.size:
        d = float(np.max(values[fits] / problem.costs[fits]))
        members = problem.group_members()
        held = np.full(problem.n_groups, -1, dtype=np.int64)   # the stored candidate of each group, -1: none
        state = Coverage(problem)
        remaining = budget
        tau, last = d, floor * d
        while True:
            thresholds += 1
            if not upgrade:
                # gains only shrink as the store grows and the budget left only falls, so a pass in which
                # no candidate is admissible at its start stores nothing; when nothing fits, no later one does
                open_ = np.flatnonzero((held[problem.groups] < 0) & (problem.costs <= remaining + budget_slack(budget)))
                if open_.size == 0:
                    break
                start_gains = state.gains(open_)
                if not np.any((start_gains > 0) & (start_gains >= tau * problem.costs[open_] * (1 - 1e-12))):
                    if tau <= last:
                        break
                    tau = max(tau * (1 - eps), last)
                    continue
            for g in range(problem.n_groups):
                if held[g] >= 0:
                    if upgrade:
                        remaining = _exchange(problem, state, held, g, members[g], remaining, tau, budget)
                    continue
                cand = members[g][problem.costs[members[g]] <= remaining + budget_slack(budget)]
                if cand.size == 0:
                    continue
                gains = state.gains(cand)
                ok = (gains > 0) & (gains >= tau * problem.costs[cand] * (1 - 1e-12))
                if not ok.any():
                    continue
                cand, gains = cand[ok], gains[ok]
                u = int(cand[np.lexsort((cand, problem.costs[cand], -gains))[0]])
                held[g] = u
                remaining -= problem.costs[u]
                state.add(u)
            if tau <= last:
                break
            tau = max(tau * (1 - eps), last)
        chosen = [int(u) for u in held if u >= 0]
        if best_single:
            u = int(fits[np.lexsort((fits, problem.costs[fits], -values[fits]))[0]])
            if values[u] > evaluate(problem, chosen):
                chosen = [u]
    return make_result(problem, budget, method="gvt-upgrade" if upgrade else "gvt-geometric", settings=settings, chosen=sorted(chosen),
                       status="heuristic", bound=float("inf"), started=started,
                       stats={"thresholds": thresholds})


def gvt_upgrade(problem: Problem, budget: float, /, *, eps: float = 0.1, floor: float = 1e-3,
                best_single: bool = True) -> Result:
    """:func:`gvt_geometric` with ``upgrade=True``, registered as ``gvt-upgrade``."""
    return gvt_geometric(problem, budget, eps=eps, floor=floor, best_single=best_single, upgrade=True)
