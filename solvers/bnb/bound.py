"""bnb's bound: unit prices, the concave conjugate of each unit's h, and the multiple-choice knapsack LP."""

from __future__ import annotations

import math

import numpy as np

from ..objective import budget_slack, unit_values
from ..problem import Problem

__all__ = ["lagrangian_bound", "kinks", "right_slopes", "residual_conjugate", "lagrangian_min"]


def kinks(problem: Problem):
    """The kinks ``z > 0`` of each unit's h and h there, shape (n_units, m) each (padded with NaN / -inf).

    A kink is where the lower envelope ``min_k (a_k z + b_k)`` changes piece.  The pieces of every
    unit are sorted by slope (falling) and the envelope is built with one stack per unit
    (the convex-hull trick, all units at once): memory ``O(n_units * n_pieces)`` and
    ``m <= n_pieces - 1``, however many breakpoints an h has.  Pieces that are never the minimum
    (repeated or above the envelope) give no kink; ``sup`` of a concave h minus a line is taken at
    a kink, so :func:`residual_conjugate` needs no other points.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem, breakpoint_pieces
    >>> s, b = breakpoint_pieces([(1.0, 1.0), (2.0, 1.5)])
    >>> p = Problem.build([1.0], [0], [[1.0]], [1.0], h_slopes=[s], h_intercepts=[b])
    >>> z, hz = kinks(p)
    >>> z.tolist(), hz.tolist()
    ([[1.0, 2.0]], [[1.0, 1.5]])
    """
    def build():
        n, k = problem.h_slopes.shape
        order = np.lexsort((problem.h_intercepts, -problem.h_slopes))     # per unit: slope falling, then intercept
        a = np.take_along_axis(problem.h_slopes, order, axis=1)
        b = np.take_along_axis(problem.h_intercepts, order, axis=1)
        # stack of each unit's envelope pieces so far (slopes strictly falling), ``top`` pieces deep
        sa, sb = np.zeros((n, k)), np.zeros((n, k))
        top = np.zeros(n, dtype=np.int64)
        for j in range(k):
            aj, bj = a[:, j], b[:, j]
            # a piece as steep as the top one has no lower intercept (the sort): it is never the minimum
            push = (top == 0) | (sa[np.arange(n), np.maximum(top - 1, 0)] != aj)
            rows = np.flatnonzero(push & (top >= 2))
            while rows.size:
                t = top[rows]
                pa, pb = sa[rows, t - 2], sb[rows, t - 2]
                ta, tb = sa[rows, t - 1], sb[rows, t - 1]
                # the top piece is never the minimum when the new one crosses the piece below it no
                # later than the top one does (pa > ta > aj: both denominators are > 0)
                pop = (bj[rows] - pb) / (pa - aj[rows]) <= (tb - pb) / (pa - ta)
                rows = rows[pop]
                top[rows] -= 1
                rows = rows[top[rows] >= 2]
            rows = np.flatnonzero(push)
            sa[rows, top[rows]], sb[rows, top[rows]] = aj[rows], bj[rows]
            top[rows] += 1
        m = max(int(top.max()) - 1, 1) if n else 1
        a0, b0, a1, b1 = sa[:, :m], sb[:, :m], sa[:, 1:m + 1], sb[:, 1:m + 1]
        if a1.shape[1] < m:                                   # every unit has a single piece
            a1, b1 = np.zeros((n, m)), np.zeros((n, m))
        real = np.arange(m)[None, :] < (top - 1)[:, None]
        z = np.full((n, m), np.nan)
        z[real] = (b1[real] - b0[real]) / (a0[real] - a1[real])
        real &= z > 0
        z[~real] = np.nan
        hz = np.full((n, m), -np.inf)
        hz[real] = np.minimum(a0[real] * z[real] + b0[real], a1[real] * z[real] + b1[real])
        return z, hz
    return problem.cached("kinks", build)


def right_slopes(problem: Problem, sums: np.ndarray) -> np.ndarray:
    """``h_r'(s_r+)`` for every unit."""
    a, b = problem.h_slopes, problem.h_intercepts
    vals = a * sums[:, None] + b
    m = vals.min(axis=1, keepdims=True)
    active = vals <= m + 1e-12 * np.maximum(1.0, np.abs(m))
    return np.where(active, a, np.inf).min(axis=1)


def residual_conjugate(problem: Problem, sums: np.ndarray, mu: np.ndarray, weights=None) -> np.ndarray:
    """``phi_r = sup_{y>=0} w_r (h_r(s_r + y) - h_r(s_r)) - mu_r y`` (finite for mu_r >= w_r h_r'(inf)).

    ``weights`` (default the problem's) are the ``w_r`` used; the bound with cuts passes less.
    """
    z, hz = kinks(problem)
    hs = unit_values(problem, sums) / problem.weights
    w = problem.weights if weights is None else weights
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
    # lam is searched in units of a power of two near the largest cost (an exact rescaling: d, m and
    # the value are the same), so tiny costs do not overflow profit / cost; a budget that far above
    # every cost is infinite there (lam is then 0)
    shift = math.frexp(float(cost.max()) if cost.size else 0.0)[1]
    cost_s = np.ldexp(cost, -shift)
    budget_s = math.ldexp(budget, -shift) if math.frexp(budget)[1] - shift < 1024 else math.inf

    def at(lam):
        d = profit - lam * cost_s
        m = np.maximum.reduceat(d, seg_starts)
        is_max = d >= m[seg_of]
        c_min = np.minimum.reduceat(np.where(is_max, cost_s, np.inf), seg_starts)
        return (lam * budget_s if lam else 0.0) + m.sum(), budget_s - c_min.sum(), d, m

    min_cost = np.minimum.reduceat(cost, seg_starts).sum()
    if min_cost > budget + budget_slack(budget):
        return math.inf, 0.0, None, None, None
    at_lo = at_hi = at(0.0)
    if at_lo[1] < 0:
        # beyond (largest profit - smallest) / (smallest extra cost of an option over its group's
        # cheapest) only a group's cheapest options can be its maximisers, and they fit the budget
        # (a bound from profit / cost alone fails when a group's cheapest option has a negative profit)
        extra = cost_s - np.minimum.reduceat(cost_s, seg_starts)[seg_of]
        hi = 2.0 * float(profit.max() - profit.min()) / float(extra[extra > 0].min())
        if not (0 < hi < math.inf):
            hi = 1.0    # equal profits (any lam > 0 does), or a spread too wide for the float range
        for _ in range(200):
            at_hi = at(hi)
            if at_hi[1] >= 0:
                break
            hi *= 2.0
        else:
            at_hi = at(hi)
        lo = 0.0
        # the function is convex and piecewise linear, its right slope negative at lo and not at hi:
        # where the supporting lines at lo and hi meet is a breakpoint of it or the minimum (the value
        # there equals the lines'), found in a few steps where halving took about 40; a halving step
        # where the meeting point is not strictly inside
        for _ in range(64):
            # any lam gives a valid bound; 1e-10 relative in lam loosens it by at most 1e-10 * lam * budget
            if hi - lo <= 1e-10 * hi:
                break
            (v_lo, s_lo), (v_hi, s_hi) = at_lo[:2], at_hi[:2]
            mid = (v_hi - v_lo - s_hi * hi + s_lo * lo) / (s_lo - s_hi) if s_hi > s_lo else 0.5 * (lo + hi)
            if not lo < mid < hi:
                mid = 0.5 * (lo + hi)
                if mid in (lo, hi):
                    break
            at_mid = at(mid)
            if at_mid[1] < 0:
                lo, at_lo = mid, at_mid
                continue
            on_lines = at_mid[0] <= v_lo + s_lo * (mid - lo) + 1e-12 * max(1.0, abs(at_mid[0]))
            hi, at_hi = mid, at_mid
            if on_lines:
                break       # the lines meet on the function at a lam whose right slope is >= 0: its minimum
    else:
        lo = hi = 0.0
    val, lam, d, m = (at_lo[0], lo, at_lo[2], at_lo[3]) if at_lo[0] <= at_hi[0] else (at_hi[0], hi, at_hi[2], at_hi[3])
    # one maximiser per group at hi, cheapest among ties: it fits the budget
    d_hi, m_hi = at_hi[2], at_hi[3]
    is_max = d_hi >= m_hi[seg_of]
    c_tie = np.where(is_max, cost, np.inf)
    c_min = np.minimum.reduceat(c_tie, seg_starts)
    pick = is_max & (cost == c_min[seg_of])
    first = np.zeros_like(pick)
    idx = np.flatnonzero(pick)
    _, first_pos = np.unique(seg_of[idx], return_index=True)
    first[idx[first_pos]] = True
    # lam back in the costs' own unit (beyond the float range when the costs are that tiny)
    lam = math.ldexp(lam, -shift) if lam == 0 or math.frexp(lam)[1] - shift <= 1024 else math.inf
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
