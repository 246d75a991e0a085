"""bnb's exact one-unit cuts: inequalities of the convex hull of one unit's coverage, found by row generation.

For one unit r let N_r be the candidates covering it and ``f(x) = h_r(sum_{u in N_r} a_ur x_u)``
on the stores x (at most one candidate per group).  Every inequality ``h_r(z_r(x)) <= gamma +
alpha . x`` that holds at every store is a cut for the LP's ``y_r`` (as those of
:mod:`memaudit_solvers.bnb.cuts`).  The least right-hand side any such cut can have at an LP point
``x*`` is the concave envelope of f at ``x*``; it is the value of the LP

    min gamma + alpha . x*   s.t.   gamma + alpha . x^p >= f(x^p)   for every store p,

solved here by row generation: the store that violates the current ``(gamma, alpha)`` most is
found by a dynamic programme over the unit's coverage *levels*.  When every ``a_ur`` is a
multiple of a step q (the unit's decimal step, :func:`memaudit_solvers.bnb.grid.coverage_values`)
a store's coverage is ``l q`` for an integer level l, and h is constant from its saturation point
on, so the levels stop at the first one there: the programme is exact, group by group, one
option each, in O(options x levels).

The cut most violated at ``x*`` is a vertex of that LP's optimal face, often one only ``x*``
needs: added alone, such cuts moved the root LP of ``summary_problem(500, 1, restate=0.8)`` at
10 % by 0.012 in 12 rounds from where the other one-unit cuts stop (351.810).  So a second LP picks, among the cuts keeping :data:`KEEP_VIOLATION`
of the largest violation, the one of least ``sum alpha`` (``alpha >= 0``: h is nondecreasing),
again by row generation; with those, rounds from the first LP point reach the one-unit closure,
351.637, in 14 rounds (SCIP's
root with every separator: 351.652-351.667; HiGHS's 351.674; the c-MIR and submodular cuts of
:mod:`~memaudit_solvers.bnb.cuts` with the tableau cuts: 351.737; OPT 351.546).

The final programme run gives the largest excess of ``f`` over the cut at any store (in floats);
it is added to ``gamma`` with a margin of :data:`~memaudit_solvers.bnb.cuts.CUT_MARGIN` relative
to the cut's terms, so every cut returned holds at every store.  Units whose coverage has no
decimal step, more than :data:`MAX_LEVELS` levels or more than :data:`MAX_CANDIDATES`
candidates are left to the other separators.
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from ..objective import h_inf, h_values
from ..problem import Problem
from .cuts import CUT_MARGIN, VIOLATION, fractional_per_unit
from .grid import coverage_values

__all__ = ["hull_cuts", "unit_levels", "most_violated_store"]

#: most coverage levels (saturation point / decimal step) of a unit whose hull is separated: 1,000
#: takes in three-decimal coverage saturating at 1 (at 400 the patient root of
#: summary_problem(103, 181109, window=2, restate=0.8126, coverage_decimals=3) at 10 % found no unit
#: to separate and its bound stayed at the weights' sum, 65.199; with them 65.1975, OPT 65.1866)
MAX_LEVELS = 1000

#: most candidates covering a unit whose hull is separated
MAX_CANDIDATES = 120

#: most stores added to one unit's LP (per phase) before its separation gives up
MAX_POINTS = 300

#: the cut chosen keeps at least this share of the largest violation at the LP point
KEEP_VIOLATION = 0.9

#: stores added per LP solve of the row generation, at most (the best at each of as many levels)
STORES_PER_SOLVE = 6

#: a store whose excess over the current cut is at most this (relative to h's top) is not added
PRICE_TOL = 1e-9


def unit_levels(problem: Problem):
    """Per unit, the coverage step q_r (0 where there is none) and the number of levels L_r.

    ``L_r = ceil(z_sat / q_r)``, z_sat the least coverage at which h_r reaches its top; a unit
    whose h never flattens gets the levels of every candidate covering it at once.  Cached.
    """
    def compute():
        units, first, values, decimal = coverage_values(problem)
        step = np.zeros(problem.n_units)
        if decimal is not None:
            step[units] = decimal
        top = h_inf(problem)
        s, b = problem.h_slopes, problem.h_intercepts
        with np.errstate(divide="ignore", invalid="ignore"):
            reach = np.where(s > 0, (top[:, None] - b) / np.where(s > 0, s, 1.0), 0.0)
        z_sat = np.where(np.isfinite(top), np.maximum(reach.max(axis=1), 0.0), np.inf)
        total = np.asarray(problem.coverage.sum(axis=0)).ravel()
        z_cap = np.minimum(z_sat, total)
        with np.errstate(divide="ignore", invalid="ignore"):
            levels = np.where(step > 0, np.ceil(z_cap / np.where(step > 0, step, 1.0) - 1e-9), 0)
        return step, np.maximum(levels, 0).astype(np.int64)
    return problem.cached("unit_levels", compute)


def most_violated_store(k: np.ndarray, seg: np.ndarray, n_seg: int, alpha: np.ndarray, h_level: np.ndarray,
                        many: int = 1, floor: float = 0.0):
    """The store of largest ``h(level) - alpha . x`` over one option (or none) per segment.

    ``k`` are the options' levels (>= 1), ``seg`` their segment (ascending, 0..n_seg-1), ``alpha``
    their coefficients and ``h_level`` h at levels 0..L (level L standing for L and above).
    Returns ``(value, chosen options)``; with ``many > 1`` a list of such pairs: the best store
    ending at each of the ``many`` best levels, while its value is above ``floor`` (the first
    always).

    Examples
    --------
    Two groups, options at levels 1 and 2 of h = min(2, level), each costing 0.5:

    >>> v, chosen = most_violated_store(np.array([1, 2]), np.array([0, 1]), 2, np.array([0.5, 0.5]),
    ...                                 np.array([0.0, 1.0, 2.0]))
    >>> v, chosen
    (1.5, [1])
    """
    seg = np.asarray(seg, dtype=np.int64)
    starts = np.searchsorted(seg, np.arange(n_seg)).astype(np.int64)
    ends = np.append(starts[1:], seg.size).astype(np.int64)
    kk = np.minimum(np.asarray(k, dtype=np.int64), h_level.size - 1)
    values, chosen = _compiled()(kk, starts, ends, np.asarray(alpha, dtype=float),
                                 np.asarray(h_level, dtype=float), int(many), float(floor))
    out = [(float(values[i]), [int(c) for c in chosen[i] if c >= 0]) for i in range(values.size)]
    return out if many > 1 else out[0]


_KERNEL = None


def _compiled():
    """:func:`_best_stores` compiled by numba (cached on disk); numba is imported on the first call
    (about 0.1 s), not with bnb."""
    global _KERNEL
    if _KERNEL is None:
        from numba import njit
        _KERNEL = njit(cache=True)(_best_stores)
    return _KERNEL


def _best_stores(kk, starts, ends, alpha, h_level, many, floor):
    """:func:`most_violated_store`'s programme: forward over the segments, then each store traced back.

    Returns the stores' values and their options (one row each, padded with -1, in segment order).
    Compiled by numba (:func:`_compiled`; its loops over levels would be slow in plain Python): on
    3,000 random programmes the numpy version it replaced (a loop over segments, vectorised over
    levels) found the same stores in 10x the time.
    """
    n_seg = starts.size
    n_lev = h_level.size
    top = n_lev - 1
    best = np.full(n_lev, -np.inf)
    best[0] = 0.0
    tables = np.empty((n_seg, n_lev))
    picks = np.full((n_seg, n_lev), -1, dtype=np.int64)
    suffix = np.empty(n_lev)
    new = np.empty(n_lev)
    for g in range(n_seg):
        tables[g] = best
        m = -np.inf
        for lev in range(top, -1, -1):       # every level from top - k on lands on the top
            if best[lev] > m:
                m = best[lev]
            suffix[lev] = m
        new[:] = best
        for o in range(starts[g], ends[g]):  # the first option of the largest value, if above best
            kk_o = kk[o]
            a = alpha[o]
            for lev in range(kk_o, top):
                v = best[lev - kk_o] - a
                if v > best[lev] and (picks[g, lev] < 0 or v > new[lev]):
                    new[lev] = v
                    picks[g, lev] = o
            v = suffix[top - kk_o] - a
            if v > best[top] and (picks[g, top] < 0 or v > new[top]):
                new[top] = v
                picks[g, top] = o
        best[:] = new
    total = best + h_level
    order = np.argsort(-total, kind="mergesort")
    n_out = min(many, n_lev)
    values = np.empty(n_out)
    chosen = np.full((n_out, n_seg), -1, dtype=np.int64)
    count = 0
    for i in range(n_out):
        level = order[i]
        if count > 0 and total[level] <= floor:
            break
        values[count] = total[level]
        for g in range(n_seg - 1, -1, -1):
            pick = picks[g, level]
            if pick < 0:
                continue
            chosen[count, g] = pick
            kk_p = kk[pick]
            if level == top:
                j = top - kk_p
                for lev in range(top - kk_p, n_lev):
                    if tables[g, lev] > tables[g, j]:
                        j = lev
                level = j
            else:
                level -= kk_p
        count += 1
    return values[:count], chosen[:count]


class _UnitLP:
    """The row-generation LP of one unit over ``(gamma, alpha)``: one row per store added.

    Kept across the rounds of one problem's root (the stores do not depend on the LP point, so a
    later round starts from every store an earlier one generated, and from its basis).
    """

    def __init__(self, k: np.ndarray, seg: np.ndarray, h_level: np.ndarray):
        import highspy

        from ..milp.highs import _new_silent_highs

        self.hs = highspy
        self.k, self.seg, self.h_level = np.minimum(k, h_level.size - 1), seg, h_level
        self.n, self.n_seg = k.size, int(seg.max()) + 1
        self.top_h = float(h_level[-1])
        self.tol = PRICE_TOL * max(self.top_h, 1.0)
        self.n_stores = 0
        h = _new_silent_highs(highspy)
        h.setOptionValue("threads", 1)
        self.inf = highspy.kHighsInf
        # gamma and alpha in [0, h's top]: no cut needs more (h >= 0 is nondecreasing)
        h.addVars(self.n + 1, np.zeros(self.n + 1), np.full(self.n + 1, self.top_h))
        self.h = h
        self.add_store([])
        for o in range(self.n):
            self.add_store([o])

    def objective(self, cost: np.ndarray) -> None:
        self.h.changeColsCost(self.n + 1, np.arange(self.n + 1, dtype=np.int32), np.asarray(cost, dtype=float))

    def add_store(self, options) -> None:
        """``gamma + sum_{o in options} alpha_o >= f(store)``."""
        options = np.asarray(options, dtype=np.int64)
        value = float(self.h_level[min(int(self.k[options].sum()), self.h_level.size - 1)])
        idx = np.concatenate([[0], options + 1]).astype(np.int32)
        self.h.addRow(value, self.inf, idx.size, idx, np.ones(idx.size))
        self.n_stores += 1

    def solve(self):
        self.h.run()
        if self.h.getModelStatus() != self.hs.HighsModelStatus.kOptimal:
            return None
        col = np.asarray(self.h.getSolution().col_value)
        return float(col[0]), col[1:]

    def generate(self):
        """Solve, add the stores that violate the solution most, repeat while there is room
        (:data:`MAX_POINTS`); the last ``(gamma, alpha)``, valid at every store within the
        tolerance, or None."""
        while self.n_stores <= MAX_POINTS:
            sol = self.solve()
            if sol is None:
                return None
            gamma, alpha = sol
            stores = most_violated_store(self.k, self.seg, self.n_seg, alpha, self.h_level - gamma,
                                         many=STORES_PER_SOLVE, floor=self.tol)
            if stores[0][0] <= self.tol:
                return gamma, alpha
            for _, chosen in stores:
                self.add_store(chosen)
        return None

    def separate(self, xs: np.ndarray, y_r: float):
        """``(gamma, alpha)`` of a cut violated at ``xs`` by more than VIOLATION, or None."""
        self.objective(np.concatenate([[1.0], xs]))
        sol = self.generate()
        if sol is None:
            return None
        gamma, alpha = sol
        envelope = gamma + float(alpha @ xs)
        if envelope >= y_r - VIOLATION:
            return None
        # among the cuts keeping KEEP_VIOLATION of the violation, the one of least sum alpha
        row = self.h.getNumRow()
        coef = np.concatenate([[1.0], xs])
        idx = np.flatnonzero(coef).astype(np.int32)
        self.h.addRow(-self.inf, envelope + (1.0 - KEEP_VIOLATION) * (y_r - envelope), idx.size, idx, coef[idx])
        self.objective(np.concatenate([[0.0], np.ones(self.n)]))
        sol2 = self.generate()
        self.h.deleteRows(1, np.array([row], dtype=np.int32))
        if sol2 is not None:
            gamma, alpha = sol2
        # the largest excess of f over the cut at any store, from the programme itself, then a margin
        excess, _ = most_violated_store(self.k, self.seg, self.n_seg, alpha, self.h_level - gamma)
        gamma += max(excess, 0.0) + CUT_MARGIN * (1.0 + abs(gamma) + float(np.abs(alpha).sum()) + self.top_h)
        if gamma + float(alpha @ xs) >= y_r - VIOLATION:
            return None
        return gamma, alpha


def hull_cuts(problem: Problem, x: np.ndarray, y: np.ndarray, units: np.ndarray, known: dict | None = None,
              deadline: float = math.inf):
    """The exact one-unit cuts the LP point ``(x, y)`` violates, one per unit at most.

    Tried on each unit of ``units`` with ``y_r > VIOLATION`` and fractional candidates covering it
    in two groups at least, whose coverage has a decimal step and at most :data:`MAX_LEVELS` levels and
    :data:`MAX_CANDIDATES` candidates.  Returns ``(unit, gamma, alpha)`` as
    :func:`memaudit_solvers.bnb.cuts.separate` does.  ``known`` (unit -> its LP) keeps each unit's
    LP with the stores it generated, for the next call on the same problem.  No unit is started after
    ``deadline`` (a ``time.perf_counter()`` value).

    Examples
    --------
    Two candidates cover one unit with 0.6 each; the LP takes 5/6 of each and reaches ``y = 1``,
    while no store is worth more than 1 with both and 0.6 with one.  The cut chosen keeps 90 % of
    the largest violation (the envelope there is 0.8667) and holds at all four stores:

    >>> p = Problem.build([1.0, 1.0], [0, 1], [[0.6], [0.6]], [1.0])
    >>> x = np.array([5 / 6, 5 / 6])
    >>> unit, gamma, alpha = hull_cuts(p, x, np.array([1.0]), np.array([0]))
    >>> a = alpha.toarray()[0]
    >>> round(float(gamma[0] + a @ x), 4)
    0.88
    >>> [round(float(gamma[0] + a @ s), 4) for s in ([0, 0], [1, 0], [0, 1], [1, 1])]
    [0.28, 0.6, 0.68, 1.0]
    """
    step, levels = unit_levels(problem)
    cov = problem.coverage_csc
    units = np.asarray(units, dtype=np.int64)
    frac, counts, n_frac = fractional_per_unit(cov, x)
    ok = ((y[units] > VIOLATION) & (counts[units] >= 2) & (n_frac[units] > 1) & (step[units] > 0)
          & (levels[units] >= 1) & (levels[units] <= MAX_LEVELS) & (counts[units] <= MAX_CANDIDATES))
    # fractional candidates in two groups at least: with one, the envelope is the interpolation over
    # that group's options, which the single-row c-MIR with the stored candidates complemented gives
    # (the hull rounds start where those cuts stall); on summary_problem(200, s) at 5-10 % that
    # leaves 4-7 of 23-50 units to try
    ok[ok] = [np.unique(problem.groups[c[frac[c]]]).size >= 2
              for c in (cov.indices[cov.indptr[r]:cov.indptr[r + 1]] for r in units[ok].tolist())]
    found_unit, found_gamma, rows, cols, vals = [], [], [], [], []
    for r in units[ok].tolist():
        if time.perf_counter() > deadline:
            break
        lo, hi = cov.indptr[r], cov.indptr[r + 1]
        cands, a = cov.indices[lo:hi], cov.data[lo:hi]
        order = np.argsort(problem.groups[cands], kind="stable")
        cands, a = cands[order], a[order]
        lp = known.get(r) if known is not None else None
        if lp is None or lp.n_stores > MAX_POINTS:
            _, seg = np.unique(problem.groups[cands], return_inverse=True)
            k = np.maximum(np.rint(a / step[r]).astype(np.int64), 1)      # each candidate's level
            h_level = h_values(problem, np.full(levels[r] + 1, r), np.arange(levels[r] + 1) * step[r])
            lp = _UnitLP(k, seg.reshape(-1), h_level)
            if known is not None:
                known[r] = lp
        cut = lp.separate(x[cands], float(y[r]))
        if cut is None:
            continue
        gamma, alpha = cut
        nz = alpha != 0
        found_unit.append(r)
        found_gamma.append(gamma)
        rows.append(np.full(int(nz.sum()), len(found_unit) - 1))
        cols.append(cands[nz])
        vals.append(alpha[nz])
    n = len(found_unit)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0), sp.csr_array((0, problem.n_candidates))
    alpha = sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(n, problem.n_candidates))
    return np.array(found_unit, dtype=np.int64), np.array(found_gamma), alpha
