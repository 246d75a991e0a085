"""bnb's tableau cuts: Gomory mixed-integer cuts, as c-MIR of rows of the node LP's tableau.

The node LP (:class:`memaudit_solvers.bnb.nodelp.NodeLP`) has columns ``v = (x, y)`` and rows
``r = A v`` with ``lo <= r <= hi``.  For any vector ``lambda``, ``(A^T lambda) . v - lambda . r = 0``
holds at every point, so at every store (its x, ``y = h(z(x))``, its row activities); with
``lambda`` the basis-inverse row of a fractional basic ``x_j`` this is x_j's tableau row, and
mixed-integer rounding of it is the Gomory mixed-integer cut (Gomory 1960; as c-MIR: Marchand and
Wolsey 2001, Cornuejols 2008).  HiGHS only *proposes* ``lambda``: the row is combined here, every
variable kept with the coefficient it gets (none is assumed 0), so a cut is valid whatever the
basis was.  The steps, on ``row . v - lambda . r <= 0`` and on its negation:

1. each continuous variable (every y and every row activity but a group row's) is moved to the
   bound nearer its LP value: ``u = lo + s`` or ``u = hi - s`` with ``s >= 0`` (bounds that hold at
   every store: x in [0, 1], ``0 <= y_r <= min(cap, h_r(sum_N a))``, the rows' global bounds); the
   ``s`` with a positive coefficient are dropped (the row stays valid), the others sum to ``S >= 0``;
2. the integer variables are the candidates, the activities of the group rows (``sum_{u in g}
   x_u``, 0 or 1 at every store, as SCIP and HiGHS treat the slack of an integral row) and, with
   costs on a grid, the budget row's number of cost steps (0 to the steps within the budget); one
   whose LP value exceeds half its upper bound is complemented (``x = 1 - xbar``, ``K = top - Kbar``);
3. for each scale ``delta`` tried, with ``beta`` the right-hand side over ``delta`` and ``f`` its
   fractional part, ``sum F(g_j) z_j - S / (delta (1 - f)) <= floor(beta)`` (``F``:
   :func:`memaudit_solvers.bnb.cuts.mir_function`); the most violated is kept;
4. the substitutions are undone and ``r = A v`` put back: a cut ``beta . y <= gamma + alpha . x``.

Float error: the combined row is off from the identity by at most the rounding of ``A^T lambda``,
and every later step by rounding too; ``gamma`` gets a margin of :data:`MARGIN` times the sum of
the magnitudes involved (far above that rounding), so the cut holds at every store.  A cut whose
coefficients span more than :data:`MAX_DYNAMISM`, or whose right-hand side is within
:data:`MIN_FRAC` of an integer, is not used.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .cuts import mir_function

__all__ = ["tableau_cuts", "MARGIN", "MIN_FRAC", "MAX_DYNAMISM", "MAX_ROWS"]

#: relative margin added to a tableau cut's right-hand side
MARGIN = 1e-9

#: the fractional part of a rounded right-hand side must lie in [MIN_FRAC, 1 - MIN_FRAC]
MIN_FRAC = 0.05

#: largest ratio of a cut's largest to its smallest nonzero coefficient
MAX_DYNAMISM = 1e6

#: bound on the relative rounding error of one combination of rows (a sum of at most some
#: thousand terms in double precision errs by far less)
ROUNDING = 1e-11

#: coefficients smaller than this share of the largest are taken out (validly: see :func:`_mir_batch`)
TINY = 1e-9

#: tableau rows tried per round, at most (the most fractional basic candidates)
MAX_ROWS = 60

#: tableau rows rounded together (each with its negation): one array operation per step over them.
#: Against one row at a time (git 343f01a's ``_mir``, the same cuts to 1e-11): the rounding's time per
#: round median 0.50 (0.38-0.78 per solve, summaries and restated summaries n = 50-1,000; the
#: smallest gain at n = 1,000, where the rows have thousands of nonzeros); whole solves side by side,
#: 30 summary cells: median 0.895, total 0.890
BATCH = 16

#: the activity of a group row (0 or 1 at every store) is an integer variable of the rounding, not a
#: continuous one.  The first root of ``summary_problem(1000, 2)`` at 25 % ends at 2024.087 instead of
#: 2024.100 (HiGHS's first root: 2024.100; OPT 2024.054); over 21 runs of ``summary_problem(n, s)``
#: (n = 200-1,000, 10 % and 25 %) and ``summary_problem(n, s, restate=0.8)`` (n = 100, 200, 10 %)
#: side by side the time was 0.53-1.26 of that without, median 0.96, the 25 % cells' medians
#: 0.72-0.81 at n = 500 and 1,000
INTEGER_GROUP_ROWS = True

#: with costs on a grid (step ``cost_step``), the budget row's activity is ``sigma * K`` for an
#: integer K in [0, the steps within the budget]: an integer variable of the rounding too (27 runs
#: side by side, summaries at 5-25 %, restated summaries at 10 %, one cell of four other families:
#: time ratio median 0.97, 0.51-1.49, the noisiest cells those of tenths of a second)
INTEGER_BUDGET_ROW = True

#: a cut must be violated by at least this much, relative to its norm
MIN_EFFICACY = 1e-5

#: a finer scale (half, a quarter, an eighth of the best) replaces the best when its cut is violated at
#: least as much, within this share of the violation: at a tie in exact arithmetic the order of a sum
#: would decide.  Taking the coarser scale at a tie instead: 32 summary cells side by side, time median
#: 1.031, total 1.041 (single cells 0.37-2.7: a tie sends the search elsewhere)
TIE = 1e-9


def tableau_cuts(node_lp, x: np.ndarray, y: np.ndarray, max_rows: int | None = None):
    """Gomory mixed-integer cuts of the LP point ``(x, y)`` from the node LP's current basis.

    Returns ``(ycoef, gamma, alpha)``: the cuts ``ycoef . y <= gamma + alpha . x`` (``ycoef``, ``alpha``
    CSR matrices over the units and the candidates), possibly none; at most one per tableau row and
    sign, in that order.  The rows are rounded :data:`BATCH` at a time, each step one array operation
    over the batch (:func:`_mir_batch`).
    """
    max_rows = MAX_ROWS if max_rows is None else max_rows
    n_x, n_y = node_lp.n_x, node_lp.n_y
    v = np.concatenate([x, y])
    frac = np.minimum(x, 1 - x)
    basic_frac = np.flatnonzero(frac > MIN_FRAC)
    basic_frac = basic_frac[np.argsort(-frac[basic_frac], kind="stable")][:max_rows]
    lams = []
    for lam in node_lp.tableau_rows(basic_frac):
        lam = np.where(np.abs(lam) > 1e-12 * max(1.0, float(np.abs(lam).max())), lam, 0.0)
        if lam.any():
            lams.append(lam)
    out_y, out_gamma, out_x = [], [], []
    if lams:
        point = _Point(node_lp, x, y, v)
        for lo in range(0, len(lams), BATCH):
            lam = np.array(lams[lo:lo + BATCH])
            # each row and its negation: lambda . r - (A^T lambda) . v = 0 read both ways
            lam2 = np.repeat(lam, 2, axis=0) * np.tile([-1.0, 1.0], lam.shape[0])[:, None]
            ycoef, gamma, alpha = _mir_batch(point, lam2)
            out_y.append(ycoef)
            out_gamma.append(gamma)
            out_x.append(alpha)
    if not out_gamma or not sum(g.size for g in out_gamma):
        return sp.csr_array((0, n_y)), np.zeros(0), sp.csr_array((0, n_x))
    return sp.csr_array(np.vstack(out_y)), np.concatenate(out_gamma), sp.csr_array(np.vstack(out_x))


class _Point:
    """What the rounding of every tableau row at the LP point ``v = (x, y)`` shares: the rows' and
    columns' bounds, the side each continuous variable is moved to, the integer variables (the
    candidates and the integer rows: per row, arrays over all rows; :func:`_mir_batch` takes the
    rows a batch uses)."""

    def __init__(self, node_lp, x, y, v):
        self.n_x = n_x = node_lp.n_x
        self.a = a = node_lp.matrix
        self.abs_a = abs(a)
        self.v = v
        self.col_hi = col_hi = node_lp.col_hi
        m = a.shape[0]
        rows = np.arange(m)
        r_val = a @ v
        lo_r, hi_r = node_lp.row_lo, node_lp.row_hi
        is_int = ((rows >= node_lp.group_row0) & (rows < node_lp.cut_row0)) if INTEGER_GROUP_ROWS \
            else np.zeros(m, dtype=bool)
        # an integer row's activity is sigma * K for an integer K in [0, top]
        self.sigma, self.top = np.ones(m), np.ones(m)
        if INTEGER_BUDGET_ROW and node_lp.budget_steps is not None:
            on_budget = rows == node_lp.n_pieces
            is_int |= on_budget
            self.sigma[on_budget], self.top[on_budget] = node_lp.budget_sigma, float(node_lp.budget_steps)
        self.is_int = is_int
        # 1. continuous variables to their nearer finite bound: y in [0, col_hi], r in [lo, hi]
        y_hi = col_hi[n_x:]
        self.y_up = y_up = (y_hi - y) < y                         # nearer the upper bound
        with np.errstate(invalid="ignore"):
            self.r_up = r_up = ~np.isfinite(lo_r) | (np.isfinite(hi_r) & ((hi_r - r_val) < (r_val - lo_r)))
        # a row used with no finite bound on its side leaves its tableau row no cut
        self.bad = ~np.isfinite(np.where(r_up | is_int, hi_r, lo_r))
        finite = np.isfinite
        self.hi_r = np.where(finite(hi_r), hi_r, 0.0)
        self.lo_r = np.where(finite(lo_r), lo_r, 0.0)
        self.bound_r = np.where(r_up, self.hi_r, self.lo_r)   # finite wherever a cut may use it
        self.y_hi = y_hi
        self.s_y = np.where(y_up, y_hi - y, y)                   # s at the LP point
        s_r = np.where(r_up, hi_r - r_val, r_val - lo_r)
        self.s_r = np.where(finite(s_r), s_r, 0.0)
        # 2. the integer variables' LP values (a row's where it is an integer row), each complemented
        # above 1/2 of its upper bound (``x = 1 - xbar``; a group row's activity lies in [0, 1])
        self.v_x, self.v_r = x, np.clip(r_val / self.sigma, 0.0, self.top)


def _mir_batch(pt: _Point, lam: np.ndarray):
    """The most violated c-MIR cut of each row ``lam_i . r - (A^T lam_i) . v <= 0`` of ``lam`` (B, m).

    Returns ``(ycoef, gamma, alpha)`` (dense, one row per cut found) as :func:`tableau_cuts`.  With
    :data:`INTEGER_GROUP_ROWS` the activity of a group row used (``sum_{u in g} x_u``, 0 or 1 at every
    store) is an integer variable of the rounding, as a candidate is, and with
    :data:`INTEGER_BUDGET_ROW` the budget row's steps (``node_lp.budget_steps``); every other row
    activity and every y is continuous.  A variable a row does not use has coefficient 0 there, and
    F(0) = 0: it changes nothing; only the rows and the integer variables some row of the batch uses
    are taken.
    """
    n_x = pt.n_x
    rows = np.flatnonzero((lam != 0).any(axis=0))
    lam = lam[:, rows]
    a, abs_a = pt.a[rows], pt.abs_a[rows]
    is_int, r_up = pt.is_int[rows], pt.r_up[rows]
    coef_v = -(a.T @ lam.T).T                                 # the row on v: -(A^T lambda)
    # rounding of A^T lambda: at most (row length) x eps x |A|^T |lambda| per column (far below
    # ROUNDING of it); v lies in [0, col_hi]
    err = ROUNDING * ((abs_a.T @ np.abs(lam).T).T @ pt.col_hi)
    c_r = np.where(is_int, 0.0, lam)                          # continuous rows' coefficients
    ok = ~((lam != 0) & pt.bad[rows]).any(axis=1)
    # 1. continuous variables moved to a bound: u = lo + s or hi - s
    c_y = coef_v[:, n_x:]
    rhs = err - c_y[:, pt.y_up] @ pt.y_hi[pt.y_up] - c_r @ pt.bound_r[rows]
    neg_y = np.minimum(np.where(pt.y_up, -c_y, c_y), 0.0)    # only these stay: S = -sum neg * s
    neg_r = np.minimum(np.where(r_up, -c_r, c_r), 0.0)
    # 2. the integer part: the candidates some row has, then the integer rows used
    xs = np.flatnonzero((coef_v[:, :n_x] != 0).any(axis=0))
    int_at = np.flatnonzero(is_int)
    int_rows = rows[int_at]
    sigma = pt.sigma[int_rows]
    c_int = np.concatenate([coef_v[:, xs], lam[:, int_at] * sigma], axis=1)
    u_int = np.concatenate([np.ones(xs.size), pt.top[int_rows]])
    v_int = np.concatenate([pt.v_x[xs], pt.v_r[int_rows]])
    comp = v_int > 0.5 * u_int
    z_lp = np.where(comp, u_int - v_int, v_int)
    rhs -= c_int[:, comp] @ u_int[comp]
    g = np.where(comp, -c_int, c_int)
    # 3. scales: 1 (the Gomory cut), and the six largest distinct |g_j| of fractional variables
    fractional = np.abs(v_int - np.round(v_int)) > 1e-6
    abs_g = np.where(fractional & (np.abs(g) > 1e-9), np.abs(g), 0.0)
    ranked = -np.sort(-abs_g, axis=1)
    distinct = ranked > 0
    distinct[:, 1:] &= ranked[:, 1:] != ranked[:, :-1]
    order = np.argsort(~distinct, axis=1, kind="stable")[:, :6]
    deltas = np.concatenate([np.ones((lam.shape[0], 1)), np.take_along_axis(ranked, order, axis=1)], axis=1)
    live = np.concatenate([np.ones((lam.shape[0], 1), dtype=bool),
                           np.take_along_axis(distinct, order, axis=1)], axis=1)
    s_lp = -(neg_y @ pt.s_y) - (neg_r @ pt.s_r[rows])
    best = _rounded(g, z_lp, rhs, s_lp, np.where(live, deltas, 1.0), live)
    halves = best[1][:, None] / np.array([2.0, 4.0, 8.0])
    again = _rounded(g, z_lp, rhs, s_lp, halves, np.isfinite(best[0])[:, None] & np.ones((1, 3), dtype=bool))
    take = again[0] >= best[0] - TIE * np.maximum(1.0, np.abs(best[0]))     # the finer scale at a tie
    viol, d, f, fl = (np.where(take, b, a) for a, b in zip(best[:4], again[:4]))
    big_f = np.where(take[:, None], again[4], best[4])
    keep = ok & (viol > 0)                                    # (-inf where no scale rounds)
    if not keep.any():
        return np.zeros((0, pt.y_hi.size)), np.zeros(0), np.zeros((0, n_x))
    lam, g, rhs, d, f, fl, big_f = lam[keep], g[keep], rhs[keep], d[keep], f[keep], fl[keep], big_f[keep]
    neg_y, neg_r, err = neg_y[keep], neg_r[keep], err[keep]
    # 4. undo: d F . z - S / (1 - f) <= d floor(beta), z = v or 1 - v, s = u - lo or hi - u
    k = 1.0 / (1 - f)
    dbf = d[:, None] * big_f
    on_int = np.where(comp, -dbf, dbf)                        # coefficient on each integer variable
    alpha_x = np.zeros((lam.shape[0], n_x))                   # coefficient on x (cut: lhs <= rhs)
    alpha_x[:, xs] = on_int[:, :xs.size]
    gamma = d * fl - (dbf * u_int)[:, comp].sum(axis=1)
    # -S/(1-f) = k * sum neg * s; s_y = y (lower) or y_hi - y (upper)
    ky = k[:, None] * neg_y
    coef_y = np.where(pt.y_up, -ky, ky)
    gamma -= ky[:, pt.y_up] @ pt.y_hi[pt.y_up]
    kr = k[:, None] * neg_r
    coef_r_cut = np.where(r_up, -kr, kr)
    gamma -= kr[:, r_up] @ pt.hi_r[rows[r_up]] - kr[:, ~r_up] @ pt.lo_r[rows[~r_up]]
    coef_r_cut[:, int_at] = on_int[:, xs.size:] / sigma      # (kr is 0 there): on r = sigma K
    # r = A v on the rows used
    on_v = (a.T @ coef_r_cut.T).T
    abs_on_v = (abs_a.T @ np.abs(coef_r_cut).T).T
    alpha_x = alpha_x + on_v[:, :n_x]
    coef_y = coef_y + on_v[:, n_x:]
    # margin: the sum of the magnitudes every term went through, times MARGIN (|coef_r_cut| = |kr|
    # on the continuous rows)
    size = (err * k + np.abs(d * fl) + np.abs(dbf * u_int).sum(axis=1) + np.abs(ky) @ pt.y_hi
            + np.abs(kr) @ np.abs(pt.bound_r[rows]) + abs_on_v @ pt.col_hi)
    gamma += MARGIN * (1.0 + np.abs(gamma) + size)
    # coefficients below TINY of the largest go: a positive one by dropping its term (v >= 0), a
    # negative one by adding its largest value (v <= col_hi) to gamma
    coef = np.concatenate([alpha_x, coef_y], axis=1)
    abs_c = np.abs(coef)
    tiny = (coef != 0) & (abs_c < TINY * abs_c.max(axis=1, initial=0.0)[:, None])
    ti, tj = np.nonzero(tiny)
    np.add.at(gamma, ti, -np.minimum(coef[ti, tj], 0.0) * pt.col_hi[tj])
    coef[tiny] = 0.0
    abs_c[tiny] = 0.0
    # the cut: coef_y . y + alpha_x . x <= gamma, i.e. coef_y . y <= gamma - alpha_x . x
    nz = abs_c > 0
    big = abs_c.max(axis=1, initial=0.0)
    small = np.where(nz, abs_c, np.inf).min(axis=1, initial=np.inf)
    lhs = coef @ pt.v
    good = (nz.any(axis=1) & (big <= MAX_DYNAMISM * small)
            & (lhs - gamma > MIN_EFFICACY * np.sqrt((abs_c ** 2).sum(axis=1))))
    return coef[good, n_x:], gamma[good], -coef[good, :n_x]


def _rounded(g, z_lp, rhs, s_lp, deltas, live):
    """Per row of ``g`` (B, n), the first scale of ``deltas`` (B, D; those ``live`` marks) of largest
    violation at the LP point (``z_lp`` the variables' values): ``(violation, d, f, floor(beta),
    F(g / d))``, violation -inf where no scale leaves a fractional part in range.  F is evaluated on
    the scales in range only."""
    n_rows, n_d = deltas.shape
    beta = rhs[:, None] / deltas
    fl = np.floor(beta)
    f = beta - fl
    ok = live & (f >= MIN_FRAC) & (f <= 1 - MIN_FRAC)
    viol = np.full((n_rows, n_d), -np.inf)
    big_f = np.zeros_like(g)
    for k in range(n_d):
        at = np.flatnonzero(ok[:, k])
        if at.size == 0:
            continue
        fk = mir_function(g[at] / deltas[at, k, None], f[at, k, None])
        # d F . z - S / (1 - f) <= d floor(beta)
        vk = deltas[at, k] * (fk @ z_lp) - s_lp[at] / (1 - f[at, k]) - deltas[at, k] * fl[at, k]
        better = vk > viol[at].max(axis=1)            # the first scale of largest violation
        viol[at, k] = vk
        big_f[at[better]] = fk[better]
    i = np.argmax(viol, axis=1)
    b = np.arange(n_rows)
    return viol[b, i], deltas[b, i], np.where(np.isfinite(viol[b, i]), f[b, i], 0.5), fl[b, i], big_f
