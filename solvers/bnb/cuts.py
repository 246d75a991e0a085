"""bnb's cuts: c-MIR and submodular inequalities on the coverage of one unit, separated at the root.

For one unit r, ``f(S) = h_r(sum_{u in S} a_ur)`` is submodular in the set S of candidates kept
(h_r concave, coverage >= 0).  Write ``rho_u(S) = f(S + u) - f(S)``.  For any set S and any store
T (Nemhauser, Wolsey and Fisher, 1978; Nemhauser and Wolsey, *Integer and Combinatorial
Optimization*, III.3.9)::

    (1)  f(T) <= f(S) - sum_{u in S \\ T} rho_u(S - u) + sum_{u in T \\ S} rho_u({})
    (2)  f(T) <= f(S) - sum_{u in S \\ T} rho_u(N - u) + sum_{u in T \\ S} rho_u(S)

with N every candidate covering r.  Both are linear in the store's 0/1 vector x:
``h_r(z_r(x)) <= gamma + alpha . x``.  The LP relaxation has only ``y_r <= a_k z_r + b_k``, which
with fractional coverage lets ``y_r`` reach 1 on a fractional x that no store matches; these rows
cut such points off.

Complemented mixed-integer rounding (c-MIR; Marchand and Wolsey, 2001) of one piece's row is tried
first, and is the stronger family on partial coverage: with ``U = h_r(sum_N a)`` (no store covers
more) and ``t = U - y >= 0``, the piece ``y <= s a . x + b`` reads ``-s a . x - t <= b - U``.  Some
candidates are complemented (``x = 1 - xbar``), the row is divided by ``delta > 0`` and rounded:
with ``beta`` its right-hand side, ``f = beta - floor(beta)`` and
``F(g) = floor(g) + max(0, g - floor(g) - f) / (1 - f)``, every 0/1 point satisfies
``sum F(g_j) z_j - t / (delta (1 - f)) <= floor(beta)``; multiplied by ``delta (1 - f)`` and with
``t = U - y`` substituted back this is again ``h_r(z_r(x)) <= gamma + alpha . x``.  It holds for
every y in ``[0, min(U, s z + b)]``, so for ``y = h_r(z)``.  ``F`` is continuous, so float error in
a floor moves a coefficient by rounding error only; a right-hand side whose ``f`` is within
``MIR_MIN_FRAC`` of an integer is not used.  On ``summary_problem(100, 0)`` at 25 % the root LP
falls from 200.21 (submodular cuts only) to 198.34 (OPT 197.99; SCIP with only its c-MIR
separator, 198.29).

A cut never enters a bound as an LP row that bnb must trust: the bound
(:meth:`memaudit_solvers.bnb.search.Search.analyse`) takes a multiplier ``pi_k >= 0`` per cut and
uses ``w_r h_r(z) = (w_r - Pi_r) h_r(z) + sum_k pi_k h_r(z) <= (w_r - Pi_r) h_r(z) + sum_k pi_k
(gamma_k + alpha_k . x)`` (``Pi_r`` the multipliers of r's cuts, scaled to at most ``w_r``), valid
for any multipliers because every cut is valid for every store.  ``gamma`` carries a margin of
``CUT_MARGIN`` relative to the cut's terms, so float rounding in the cut's own arithmetic cannot make
it invalid.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..objective import h_values
from ..problem import Problem

__all__ = ["Cuts", "separate", "mir_function", "ROUNDS", "CUT_MARGIN", "MIR_MIN_FRAC"]

#: separation rounds at the root, at most
ROUNDS = 12

#: a round must raise the LP bound by at least this share of the bound to be followed by another
MIN_GAIN = 1e-5

#: a cut must be violated by at least this much (y is in units of h)
VIOLATION = 1e-6

#: relative margin added to each cut's right-hand side
CUT_MARGIN = 1e-12

#: a c-MIR's right-hand side must have a fractional part in [MIR_MIN_FRAC, 1 - MIR_MIN_FRAC]
MIR_MIN_FRAC = 0.05


class Cuts:
    """The cuts found so far: ``ycoef[k] . h(z) <= gamma[k] + alpha[k] . x`` for every store x.

    ``h(z)`` is the vector of the units' ``h_r(z_r(x))``.  A cut of this module bounds one unit
    (``ycoef[k]`` is 1 on ``unit[k]``); a tableau cut (:mod:`memaudit_solvers.bnb.tableau`) may
    weigh several units, of either sign (``unit[k] = -1``).
    """

    def __init__(self, n_candidates: int, n_units: int):
        self.n_candidates = n_candidates
        self.n_units = n_units
        self.unit = np.zeros(0, dtype=np.int64)
        self.gamma = np.zeros(0)
        self.alpha = sp.csr_array((0, n_candidates))
        self.ycoef = sp.csr_array((0, n_units))

    def __len__(self) -> int:
        return int(self.unit.size)

    def extend(self, unit, gamma, alpha: sp.csr_array, ycoef: sp.csr_array | None = None) -> None:
        """Add cuts; without ``ycoef`` each bounds its ``unit`` alone (``ycoef`` 1 there)."""
        unit = np.asarray(unit, dtype=np.int64)
        if ycoef is None:
            ycoef = sp.csr_array((np.ones(unit.size), (np.arange(unit.size), unit)), shape=(unit.size, self.n_units))
        self.unit = np.concatenate([self.unit, unit])
        self.gamma = np.concatenate([self.gamma, np.asarray(gamma, dtype=float)])
        self.alpha = sp.csr_array(sp.vstack([self.alpha, alpha]))
        self.ycoef = sp.csr_array(sp.vstack([self.ycoef, ycoef]))

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the cuts where ``mask`` is True (in order)."""
        mask = np.asarray(mask, dtype=bool)
        self.unit, self.gamma = self.unit[mask], self.gamma[mask]
        self.alpha, self.ycoef = self.alpha[mask], self.ycoef[mask]

    def multipliers(self, pi, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(pi, W)``: the multipliers (>= 0) and the weight ``W_r`` they take off each unit.

        The bound uses ``sum_r w_r h_r = sum_r (w_r - L_r) h_r + pi . (ycoef h) <= sum_r max(w_r -
        L_r, 0) h_r + pi . (gamma + alpha . x)`` with ``L = ycoef^T pi``, valid for any ``pi >= 0``
        (``h >= 0``); ``W = w - max(w - L, 0)``.  The one-unit cuts' multipliers are first scaled
        per unit so that they take at most ``w_r`` (a larger share only loosens the bound).
        Shorter ``pi`` (cuts added since) is padded with zeros; None means no multipliers.
        """
        n_units = weights.size
        if pi is None or len(self) == 0:
            return np.zeros(len(self)), np.zeros(n_units)
        pi = np.maximum(np.nan_to_num(np.asarray(pi, dtype=float), nan=0.0, posinf=0.0), 0.0)
        pi = np.concatenate([pi, np.zeros(len(self) - pi.size)])[: len(self)]
        one = self.unit >= 0
        total = np.bincount(self.unit[one], weights=pi[one], minlength=n_units)
        over = total > weights
        if over.any():
            scale = np.ones(n_units)
            scale[over] = weights[over] / total[over]
            pi = np.where(one, pi * scale[np.maximum(self.unit, 0)], pi)
        load = self.ycoef.T @ pi
        return pi, weights - np.maximum(weights - load, 0.0)


def separate(problem: Problem, x: np.ndarray, y: np.ndarray, units: np.ndarray):
    """Cuts the LP point ``(x, y)`` violates, one per unit at most.

    For each unit of ``units`` with ``y_r > 0`` whose covering candidates are not all 0/1 in x, the
    least c-MIR cut at x is kept when it is below ``y_r`` by more than :data:`VIOLATION`; else the
    least of forms (1) and (2), the sets S tried being the prefixes of those candidates by falling
    ``x``, under the same rule.

    Returns ``(unit, gamma, alpha)`` (alpha a CSR matrix over the candidates), possibly empty.

    Examples
    --------
    Two candidates cover one unit with 0.6 each; the LP takes 5/6 of each and reaches ``y = 1``,
    while the best store with both is worth 1 and with one 0.6:

    >>> p = Problem.build([1.0, 1.0], [0, 1], [[0.6], [0.6]], [1.0])
    >>> unit, gamma, alpha = separate(p, np.array([5 / 6, 5 / 6]), np.array([1.0]), np.array([0]))
    >>> round(float(gamma[0]), 6), np.round(alpha.toarray(), 6).tolist()
    (0.2, [[0.4, 0.4]])
    """
    cov = sp.csc_array(problem.coverage)
    out_unit: list[int] = []
    out_gamma: list[float] = []
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    frac = (x > 1e-9) & (x < 1 - 1e-9)
    for r in np.asarray(units, dtype=np.int64).tolist():
        if y[r] <= VIOLATION:
            continue
        lo, hi = cov.indptr[r], cov.indptr[r + 1]
        c = cov.indices[lo:hi]
        if c.size < 2 or not frac[c].any():
            continue
        a = cov.data[lo:hi]
        best = _mir_cut(problem, r, a, x[c])
        if best is None or best[0] >= y[r] - VIOLATION:
            best = _best_cut(problem, r, a, x[c])
        if best is not None and best[0] < y[r] - VIOLATION:
            _, gamma, alpha = best
            nz = alpha != 0
            out_unit.append(r)
            out_gamma.append(gamma)
            rows.append(np.full(int(nz.sum()), len(out_unit) - 1))
            cols.append(c[nz])
            vals.append(alpha[nz])
    n = len(out_unit)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0), sp.csr_array((0, problem.n_candidates))
    alpha = sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(n, problem.n_candidates))
    return np.asarray(out_unit, dtype=np.int64), np.asarray(out_gamma), alpha


def _best_cut(problem: Problem, r: int, a: np.ndarray, xs: np.ndarray):
    """``(rhs at xs, gamma, alpha)`` of the least of the forms (1), (2) over prefix sets S."""
    m = a.size
    order = np.argsort(-xs, kind="stable")
    # prefix sets S_k = the k candidates of largest x, k = 0..m, as a mask per row
    in_s = np.zeros((m + 1, m), dtype=bool)
    for k in range(1, m + 1):
        in_s[k, order[:k]] = True
    z_s = in_s.astype(float) @ a                                   # (m + 1,)
    z_n = float(a.sum())

    # every value of h the forms need, in one evaluation: h(S_k), h(S_k - u), h(u), h(0), h(N), h(N - u),
    # h(S_k + u)
    parts = [z_s, (z_s[:, None] - a[None, :]).ravel(), a, np.zeros(1), np.full(1, z_n), z_n - a,
             (z_s[:, None] + a[None, :]).ravel()]
    hv = np.split(h_values(problem, np.array([r]), np.concatenate(parts)[:, None])[:, 0],
                  np.cumsum([part.size for part in parts])[:-1])
    f_s = hv[0]                                                     # f(S_k)
    rho_minus = f_s[:, None] - hv[1].reshape(m + 1, m)              # rho_u(S - u), u in S
    rho_empty = hv[2] - hv[3]                                       # rho_u({})
    rho_n = hv[4] - hv[5]                                           # rho_u(N - u)
    rho_plus = hv[6].reshape(m + 1, m) - f_s[:, None]               # rho_u(S), u not in S
    alpha1 = np.where(in_s, rho_minus, rho_empty[None, :])
    alpha2 = np.where(in_s, rho_n[None, :], rho_plus)
    alpha = np.concatenate([alpha1, alpha2])                        # (2m + 2, m)
    s2 = np.concatenate([in_s, in_s])
    gamma = np.concatenate([f_s, f_s]) - np.where(s2, alpha, 0.0).sum(axis=1)
    gamma += CUT_MARGIN * (1.0 + np.abs(np.concatenate([f_s, f_s])) + np.abs(alpha).sum(axis=1))
    rhs = gamma + alpha @ xs
    k = int(np.argmin(rhs))
    if not np.isfinite(rhs[k]):
        return None
    return float(rhs[k]), float(gamma[k]), alpha[k]


def mir_function(g, f):
    """The MIR coefficient ``F(g) = floor(g) + max(0, g - floor(g) - f) / (1 - f)`` for the fractional
    part ``f`` of the rounded right-hand side (continuous in g: a floor's float error moves it by
    rounding error only).  Shared by these cuts and :mod:`memaudit_solvers.bnb.tableau`."""
    fl = np.floor(g)
    return fl + np.maximum(0.0, g - fl - f) / (1 - f)


def _mir_cut(problem: Problem, r: int, a: np.ndarray, xs: np.ndarray):
    """``(rhs at xs, gamma, alpha)`` of the least c-MIR cut of unit r at ``xs`` (see the module), or None.

    Tried per piece of positive slope: every scale ``delta`` in ``s * a`` (the fractional candidates'
    first), then half, a quarter and an eighth of the best one; complemented sets ``x >= 0.5``, ``x > 0``
    and none.
    """
    cap = float(h_values(problem, np.array([r]), np.array([float(a.sum())]))[0])
    frac = (xs > 1e-9) & (xs < 1 - 1e-9)
    complements = np.stack([xs >= 0.5, xs > 1e-9, np.zeros(a.size, dtype=bool)])
    best = None
    for s, b in zip(problem.h_slopes[r].tolist(), problem.h_intercepts[r].tolist()):
        if s <= 0 or b >= cap:
            continue                    # a flat piece, or one that never binds below the cap
        deltas = np.unique(s * a[frac]) if frac.any() else np.unique(s * a)
        found = _mir_rows(-s * a, b - cap, cap, deltas, complements, xs)
        if found is None:
            continue
        scaled = _mir_rows(-s * a, b - cap, cap, found[3] / np.array([2.0, 4.0, 8.0]), complements, xs)
        for cut in (found, scaled):
            if cut is not None and (best is None or cut[0] < best[0]):
                best = cut
    return None if best is None else best[:3]


def _mir_rows(g0: np.ndarray, rhs0: float, cap: float, deltas: np.ndarray, complements: np.ndarray,
              xs: np.ndarray):
    """The least at ``xs`` of the c-MIR cuts of ``g0 . x - t <= rhs0`` (``t = cap - y >= 0``).

    One cut per scale in ``deltas`` and complemented set (rows of ``complements``); a right-hand
    side whose fractional part is outside [MIR_MIN_FRAC, 1 - MIR_MIN_FRAC] gives none.  Returns
    ``(rhs at xs, gamma, alpha, delta)`` or None.
    """
    d = deltas[:, None, None]                                           # (D, 1, 1)
    comp = complements[None, :, :]                                      # (1, K, m)
    g = g0[None, None, :] / d                                           # (D, 1, m)
    beta = rhs0 / d[:, :, 0] - np.where(comp, g, 0.0).sum(axis=2)       # (D, K)
    fl = np.floor(beta)
    f = beta - fl
    gz = np.where(comp, -g, g)                                          # (D, K, m): z = x or 1 - x
    with np.errstate(divide="ignore", invalid="ignore"):
        big_f = mir_function(gz, f[:, :, None])
    k = d[:, :, 0] * (1 - f)                                            # (D, K)
    alpha = np.where(comp, 1.0, -1.0) * k[:, :, None] * big_f
    on_comp = k * np.where(comp, big_f, 0.0).sum(axis=2)
    gamma = cap + k * fl - on_comp
    gamma = gamma + CUT_MARGIN * (1.0 + abs(cap) + np.abs(k * fl) + np.abs(on_comp) + np.abs(alpha).sum(axis=2))
    ok = (f >= MIR_MIN_FRAC) & (f <= 1 - MIR_MIN_FRAC)
    rhs = np.where(ok, gamma + np.einsum("dkm,m->dk", alpha, xs), np.inf)
    i, j = np.unravel_index(int(np.argmin(rhs)), rhs.shape)
    if not np.isfinite(rhs[i, j]):
        return None
    return float(rhs[i, j]), float(gamma[i, j]), alpha[i, j], float(deltas[i])
