"""bnb's bound: unit prices, the concave conjugate of each unit's h, and the multiple-choice knapsack LP."""

from __future__ import annotations

import math

import numpy as np

from ..objective import budget_slack, unit_values
from ..problem import Problem

__all__ = ["lagrangian_bound", "kinks", "right_slopes", "residual_conjugate", "lagrangian_min"]


def kinks(problem: Problem):
    """Pairwise piece intersections z > 0 per unit and h there (padded with NaN / -inf)."""
    def build():
        a, b = problem.h_slopes, problem.h_intercepts
        k = a.shape[1]
        zs = []
        for i in range(k):
            for j in range(i + 1, k):
                with np.errstate(divide="ignore", invalid="ignore"):
                    z = (b[:, j] - b[:, i]) / (a[:, i] - a[:, j])
                z[~np.isfinite(z) | (z <= 0)] = np.nan
                zs.append(z)
        if not zs:
            zs = [np.full(problem.n_units, np.nan)]
        z = np.column_stack(zs)
        hz = np.min(a[:, None, :] * np.nan_to_num(z)[:, :, None] + b[:, None, :], axis=2)
        return z, hz
    return problem.cached("kinks", build)


def right_slopes(problem: Problem, sums: np.ndarray) -> np.ndarray:
    """``h_r'(s_r+)`` for every unit."""
    a, b = problem.h_slopes, problem.h_intercepts
    vals = a * sums[:, None] + b
    m = vals.min(axis=1, keepdims=True)
    active = vals <= m + 1e-12 * np.maximum(1.0, np.abs(m))
    return np.where(active, a, np.inf).min(axis=1)


def residual_conjugate(problem: Problem, sums: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``phi_r = sup_{y>=0} w_r (h_r(s_r + y) - h_r(s_r)) - mu_r y`` (finite for mu_r >= w_r h_r'(inf))."""
    z, hz = kinks(problem)
    w = problem.weights
    hs = unit_values(problem, sums) / w
    with np.errstate(invalid="ignore"):
        terms = w[:, None] * (hz - hs[:, None]) - mu[:, None] * (z - sums[:, None])
    terms = np.where(z > sums[:, None], terms, -np.inf)
    return np.maximum(0.0, terms.max(axis=1))


def lagrangian_min(profit, cost, seg_starts, budget):
    """Minimise ``lam*budget + sum_g max_{o in g}(profit_o - lam*cost_o)`` over lam >= 0.

    This is the LP value of the multiple-choice knapsack with these profits
    (options are grouped in contiguous segments).  Returns
    ``(value, lam, d, m, fit_choice)`` where ``d = profit - lam*cost``, ``m`` the
    group maxima and ``fit_choice`` a boolean mask of one maximiser per group
    at a lam where the maximisers fit the budget.  ``value = inf`` when no
    choice fits.
    """
    n_seg = seg_starts.size
    seg_of = np.repeat(np.arange(n_seg), np.diff(np.append(seg_starts, profit.size)))

    def at(lam):
        d = profit - lam * cost
        m = np.maximum.reduceat(d, seg_starts)
        is_max = d >= m[seg_of]
        c_min = np.minimum.reduceat(np.where(is_max, cost, np.inf), seg_starts)
        return lam * budget + m.sum(), budget - c_min.sum(), d, m

    min_cost = np.minimum.reduceat(cost, seg_starts).sum()
    if min_cost > budget + budget_slack(budget):
        return math.inf, 0.0, None, None, None
    val0, slope0, d0, m0 = at(0.0)
    if slope0 >= 0:
        lo = hi = 0.0
    else:
        pos = cost > 0
        hi = 2.0 * float(np.max(profit[pos] / cost[pos]))   # every real option's d < 0 there
        for _ in range(200):
            if at(hi)[1] >= 0:
                break
            hi *= 2.0
        lo = 0.0
        for _ in range(64):
            mid = 0.5 * (lo + hi)
            # any lam gives a valid bound; 1e-10 relative in lam loosens it by at most 1e-10 * lam * budget
            if mid in (lo, hi) or hi - lo <= 1e-10 * hi:
                break
            if at(mid)[1] >= 0:
                hi = mid
            else:
                lo = mid
    v_lo = at(lo)
    v_hi = at(hi)
    val, lam, d, m = (v_lo[0], lo, v_lo[2], v_lo[3]) if v_lo[0] <= v_hi[0] else (v_hi[0], hi, v_hi[2], v_hi[3])
    # one maximiser per group at hi, cheapest among ties: it fits the budget
    d_hi, m_hi = v_hi[2], v_hi[3]
    is_max = d_hi >= m_hi[seg_of]
    c_tie = np.where(is_max, cost, np.inf)
    c_min = np.minimum.reduceat(c_tie, seg_starts)
    pick = is_max & (cost == c_min[seg_of])
    first = np.zeros_like(pick)
    idx = np.flatnonzero(pick)
    _, first_pos = np.unique(seg_of[idx], return_index=True)
    first[idx[first_pos]] = True
    return float(val), float(lam), d, m, first


def lagrangian_bound(problem: Problem, budget: float, mu=None) -> float:
    """Upper bound on OPT from unit prices ``mu`` (default: ``w``, the marginal-gain bound).

    ``F(X) <= sum_r phi_r(mu_r) + sum_{u in X} sum_r mu_r a[u, r]`` for any
    ``mu_r >= w_r h_r'(inf)`` (lower prices are raised to that), where ``phi_r`` is the concave conjugate of
    ``w_r h_r``; the right side's best store is then a multiple-choice
    knapsack whose LP value is computed exactly.  With the LP-dual prices
    this equals the LP relaxation of the MILP.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([2, 2], [0, 1], [[1.0], [1.0]], [1.0])
    >>> lagrangian_bound(p, 4.0), lagrangian_bound(p, 4.0, mu=[0.0])
    (2.0, 1.0)
    """
    sums = np.zeros(problem.n_units)
    slope_inf = problem.weights * problem.h_slopes.min(axis=1)
    mu = problem.weights * right_slopes(problem, sums) if mu is None else np.asarray(mu, dtype=float)
    mu = np.maximum(mu, slope_inf)   # below w_r h_r'(inf) the conjugate is +inf: raise such prices
    const = float(residual_conjugate(problem, sums, mu).sum())
    if problem.n_candidates == 0:
        return const
    profit = problem.coverage @ mu
    order = np.lexsort((np.arange(problem.n_candidates), problem.groups))
    g = problem.groups[order]
    groups_present = np.unique(g)
    # add a 'none' option per group
    all_profit = np.concatenate([profit[order], np.zeros(groups_present.size)])
    all_cost = np.concatenate([problem.costs[order], np.zeros(groups_present.size)])
    all_group = np.concatenate([g, groups_present])
    o2 = np.argsort(all_group, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(all_group[o2]) != 0])
    val = lagrangian_min(all_profit[o2], all_cost[o2], starts, budget)[0]
    return const + val
