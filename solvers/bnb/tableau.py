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

from ..objective import rows_entries
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

#: coefficients smaller than this share of the largest are taken out (validly: see :func:`_mir`)
TINY = 1e-9

#: tableau rows tried per round, at most (the most fractional basic candidates)
MAX_ROWS = 60

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


def tableau_cuts(node_lp, x: np.ndarray, y: np.ndarray, max_rows: int | None = None):
    """Gomory mixed-integer cuts of the LP point ``(x, y)`` from the node LP's current basis.

    Returns ``(ycoef, gamma, alpha)``: the cuts ``ycoef . y <= gamma + alpha . x`` (``ycoef``, ``alpha``
    CSR matrices over the units and the candidates), possibly none.
    """
    max_rows = MAX_ROWS if max_rows is None else max_rows
    n_x, n_y = node_lp.n_x, node_lp.n_y
    a = node_lp.matrix
    v = np.concatenate([x, y])
    r_val = a @ v
    col_hi = node_lp.col_hi
    frac = np.minimum(x, 1 - x)
    basic_frac = np.flatnonzero(frac > MIN_FRAC)
    basic_frac = basic_frac[np.argsort(-frac[basic_frac], kind="stable")][:max_rows]
    out_y, out_gamma, out_x = [], [], []
    for lam in node_lp.tableau_rows(basic_frac):
        lam = np.where(np.abs(lam) > 1e-12 * max(1.0, float(np.abs(lam).max())), lam, 0.0)
        rows = np.flatnonzero(lam)
        if rows.size == 0:
            continue
        coef, abs_coef = _combine(a, rows, lam[rows])      # A^T lambda and |A|^T |lambda|, on v
        # rounding of A^T lambda: at most (row length) x eps x |A|^T |lambda| per column (far below
        # ROUNDING of it); v lies in [0, col_hi]
        err = ROUNDING * float(abs_coef @ col_hi)
        for sign in (1.0, -1.0):
            cut = _mir(sign * coef, -sign * lam, rows, x, y, r_val, node_lp, err, col_hi, a)
            if cut is not None:
                out_y.append(cut[0])
                out_gamma.append(cut[1])
                out_x.append(cut[2])
    if not out_gamma:
        return sp.csr_array((0, n_y)), np.zeros(0), sp.csr_array((0, n_x))
    return sp.csr_array(np.array(out_y)), np.array(out_gamma), sp.csr_array(np.array(out_x))


def _combine(a: sp.csr_array, rows: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(A^T w, |A|^T |w|)`` for ``w`` nonzero on ``rows`` only, from those rows' entries alone.

    The node LP's matrix grows by a dense row per tableau cut; a product with the whole transpose cost
    every combination all of them (13 of 25 s on ``summary_problem(500, 1)``'s roots with 30 rounds).
    Each column's terms are added in the rows' order, as the sparse product adds them.
    """
    row_of, pos = rows_entries(a.indptr, rows)
    cols, vals = a.indices[pos], a.data[pos]
    n = a.shape[1]
    w = weights[row_of]
    return (np.bincount(cols, weights=vals * w, minlength=n).astype(float, copy=False),
            np.bincount(cols, weights=np.abs(vals) * np.abs(w), minlength=n).astype(float, copy=False))


def _mir(coef_v, coef_r, rows, x, y, r_val, node_lp, err, col_hi, a):
    """The most violated c-MIR cut of ``coef_v . v + coef_r . r <= 0`` (r on ``rows`` only), or None.

    ``a`` is the node LP's matrix (CSR).  With :data:`INTEGER_GROUP_ROWS` the activity of a group row
    used (``sum_{u in g} x_u``, 0 or 1 at every store) is an integer variable of the rounding, as a
    candidate is, and with :data:`INTEGER_BUDGET_ROW` the budget row's steps (``node_lp.budget_steps``);
    every other row activity and every y is continuous.
    """
    n_x = node_lp.n_x
    lo_r, hi_r = node_lp.row_lo[rows], node_lp.row_hi[rows]
    c_r = coef_r[rows]
    is_int = ((rows >= node_lp.group_row0) & (rows < node_lp.cut_row0)) if INTEGER_GROUP_ROWS \
        else np.zeros(rows.size, dtype=bool)
    # an integer row's activity is sigma * K for an integer K in [0, top]
    sigma, top = np.ones(rows.size), np.ones(rows.size)
    if INTEGER_BUDGET_ROW and node_lp.budget_steps is not None:
        on_budget = rows == node_lp.n_pieces
        is_int |= on_budget
        sigma[on_budget], top[on_budget] = node_lp.budget_sigma, float(node_lp.budget_steps)
    # 1. continuous variables to their nearer finite bound: y in [0, col_hi], r in [lo, hi]
    c_y = coef_v[n_x:]
    y_hi = col_hi[n_x:]
    y_up = (y_hi - y) < y                                  # nearer the upper bound
    r_up = ~np.isfinite(lo_r) | (np.isfinite(hi_r) & ((hi_r - r_val[rows]) < (r_val[rows] - lo_r)))
    if not np.isfinite(np.where(r_up | is_int, hi_r, lo_r)).all():
        return None
    bound_r = np.where(r_up, hi_r, lo_r)
    cont = ~is_int
    rhs = err - float(c_y[y_up] @ y_hi[y_up]) - float(c_r[cont] @ bound_r[cont])
    s_coef_y = np.where(y_up, -c_y, c_y)                   # coefficient of s >= 0
    s_coef_r = np.where(r_up, -c_r, c_r)
    neg_y = np.minimum(s_coef_y, 0.0)                      # only these stay: S = -sum neg * s
    neg_r = np.where(cont, np.minimum(s_coef_r, 0.0), 0.0)
    # 2. integer part: the candidates the row has (``supp``; F(0) = 0) and the integer rows, each
    # complemented above 1/2 (``x = 1 - xbar``; a group row's activity lies in [0, 1])
    c_x = coef_v[:n_x]
    supp = np.flatnonzero(c_x)
    n_s = supp.size
    int_rows = np.flatnonzero(is_int)
    c_int = np.concatenate([c_x[supp], c_r[int_rows] * sigma[int_rows]])
    u_int = np.concatenate([np.ones(n_s), top[int_rows]])
    v_int = np.concatenate([x[supp], np.clip(r_val[rows[int_rows]] / sigma[int_rows], 0.0, top[int_rows])])
    comp_s = v_int > 0.5 * u_int
    rhs -= float((c_int * u_int)[comp_s].sum())
    g = np.where(comp_s, -c_int, c_int)
    # 3. scales: 1 (the Gomory cut), and |g_j| of fractional variables with the largest ones
    fr = np.flatnonzero((np.abs(v_int - np.round(v_int)) > 1e-6) & (np.abs(g) > 1e-9))
    deltas = [1.0] + sorted(set(np.abs(g[fr]).tolist()), reverse=True)[:6]
    s_y = np.where(y_up, y_hi - y, y)                      # s at the LP point
    s_r = np.where(r_up, hi_r - r_val[rows], r_val[rows] - lo_r)
    s_lp = float(-(neg_y @ s_y) - (neg_r @ s_r))
    z_lp = np.where(comp_s, u_int - v_int, v_int)

    def rounded(ds):
        """The first scale of ``ds`` of largest violation at the LP point: ``(violation, d, f,
        floor(beta), F(g / d))``, or None where no scale leaves a fractional part in range."""
        ds = np.asarray(ds, dtype=float)
        beta = rhs / ds
        fl = np.floor(beta)
        f = beta - fl
        ok = (f >= MIN_FRAC) & (f <= 1 - MIN_FRAC)
        if not ok.any():
            return None
        ds, fl, f = ds[ok], fl[ok], f[ok]
        big_f = mir_function(g[None, :] / ds[:, None], f[:, None])
        # d F . z - S / (1 - f) <= d floor(beta)
        viol = ds * (big_f @ z_lp) - s_lp / (1 - f) - ds * fl
        i = int(np.argmax(viol))
        return float(viol[i]), float(ds[i]), float(f[i]), float(fl[i]), big_f[i]

    best = rounded(deltas)
    if best is None:
        return None
    halves = rounded([best[1] / 2, best[1] / 4, best[1] / 8])
    if halves is not None and halves[0] > best[0]:
        best = halves
    if best[0] <= 0:
        return None
    _, d, f, fl, big_f = best
    # 4. undo: d F . z - S / (1 - f) <= d floor(beta), z = v or 1 - v, s = u - lo or hi - u
    k = 1.0 / (1 - f)
    on_int = np.where(comp_s, -d * big_f, d * big_f)       # coefficient on each integer variable
    alpha_x = np.zeros(n_x)                                # coefficient on x (cut: lhs <= rhs)
    alpha_x[supp] = on_int[:n_s]
    gamma = d * fl - float((d * big_f * u_int)[comp_s].sum())
    # -S/(1-f) = k * sum neg * s; s_y = y (lower) or y_hi - y (upper)
    ky = k * neg_y
    coef_y = np.where(y_up, -ky, ky)
    gamma -= float(ky[y_up] @ y_hi[y_up])
    kr = k * neg_r
    coef_r_cut = np.where(r_up, -kr, kr)
    gamma -= float(kr[r_up] @ hi_r[r_up]) - float(kr[~r_up] @ lo_r[~r_up])
    coef_r_cut[int_rows] = on_int[n_s:] / sigma[int_rows]  # (kr is 0 there): on r = sigma K
    # r = A v on the rows used
    on_v, abs_on_v = _combine(a, rows, coef_r_cut)
    alpha_x = alpha_x + on_v[:n_x]
    coef_y = coef_y + on_v[n_x:]
    # margin: the sum of the magnitudes every term went through, times MARGIN (|coef_r_cut| = |kr|
    # on the continuous rows)
    size = (err * k + abs(d * fl) + float(np.abs(d * big_f * u_int).sum()) + float(np.abs(ky) @ y_hi)
            + float(np.abs(kr) @ np.abs(np.where(r_up, hi_r, lo_r))) + float(abs_on_v @ col_hi))
    gamma += MARGIN * (1.0 + abs(gamma) + size)
    # coefficients below TINY of the largest go: a positive one by dropping its term (v >= 0), a
    # negative one by adding its largest value (v <= col_hi) to gamma
    coef = np.concatenate([alpha_x, coef_y])
    tiny = (coef != 0) & (np.abs(coef) < TINY * float(np.abs(coef).max(initial=0.0)))
    gamma += float(-np.minimum(coef[tiny], 0.0) @ col_hi[tiny])
    coef[tiny] = 0.0
    alpha_x, coef_y = coef[:n_x], coef[n_x:]
    # the cut: coef_y . y + alpha_x . x <= gamma, i.e. coef_y . y <= gamma - alpha_x . x
    nz = np.abs(coef[coef != 0])
    if nz.size == 0 or nz.max() > MAX_DYNAMISM * nz.min():
        return None
    lhs = float(coef_y @ y + alpha_x @ x)
    if lhs - gamma <= MIN_EFFICACY * float(np.sqrt((nz ** 2).sum())):
        return None
    return coef_y, gamma, -alpha_x
