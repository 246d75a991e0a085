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

The same c-MIR is also taken of each unit's coverage in its *group form* (:func:`_gub_rows`):
with ``m_g`` the most a candidate of group g covers of r, ``z_r = M_r - sum_g m_g s_g - sum_u d_u
x_u`` where ``s_g = 1 - sum_{u in g} x_u`` is 1 when g stores nothing and ``d_u = m_g - a_ur`` (a
candidate of g covering less of r, or nothing), exact at every store since a group stores one
candidate at most.  Its rounding sees the one-per-group rows the single row does not: the cut gets
one coefficient for a group's candidates, and a positive one for a candidate that covers nothing of
r but takes the group's place (the structure of the cuts HiGHS's root keeps on these problems).  Such
a cut holds at every store, not at every set of candidates.  Per unit the more violated of the two
is kept.  On ``summary_problem(1000, 2)`` at 25 % the first root ends at 2024.100 instead of 2024.135
(HiGHS's first root: 2024.100; OPT 2024.054).

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

from ..objective import h_values, rows_entries
from ..problem import Problem

__all__ = ["Cuts", "separate", "mir_function", "ROUNDS", "CUT_MARGIN", "MIR_MIN_FRAC"]

#: separation rounds at the root, at most
ROUNDS = 12

#: a round must raise the LP bound by at least this share of the bound to be followed by another
MIN_GAIN = 1e-5

#: rounds in a row that may leave the LP value unchanged (within STALL_GAIN of it) before the rounds
#: stop: on a degenerate LP the cuts of a round move the point and not the value
STALL_ROUNDS = 2

#: a round that raises the LP value by at most this share of it left the value unchanged
STALL_GAIN = 1e-9

#: a cut must be violated by at least this much (y is in units of h)
VIOLATION = 1e-6

#: relative margin added to each cut's right-hand side
CUT_MARGIN = 1e-12

#: a c-MIR's right-hand side must have a fractional part in [MIR_MIN_FRAC, 1 - MIR_MIN_FRAC]
MIR_MIN_FRAC = 0.05

#: most entries (units x scales x complemented sets x candidates) of one batch of c-MIR rows
MIR_BATCH = 1_000_000

#: also separate the c-MIR cuts of each unit's coverage in its group form (:func:`_gub_cuts`)
GUB_CUTS = True

#: group forms with more variables than this are not tried
GUB_MAX_TERMS = 64

#: group forms are batched by their number of variables rounded up to a multiple of this
GUB_BUCKET = 8


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
    ``x``, under the same rule.  With :data:`GUB_CUTS` the c-MIR cut of the unit's group form
    (:func:`_gub_cuts`) takes its place where it is the more violated.

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
    cov = problem.coverage_csc
    units = np.asarray(units, dtype=np.int64)
    frac, counts, n_frac = fractional_per_unit(cov, x)
    pos = np.flatnonzero((y[units] > VIOLATION) & (counts[units] >= 2) & (n_frac[units] > 0))
    found: list[tuple[int, int, float, np.ndarray, np.ndarray, float]] = []  # (position, unit, gamma, cols, alpha, rhs)
    # the c-MIR cuts of all units with the same number of candidates at once, a chunk at a time
    for m in np.unique(counts[units[pos]]).tolist():
        mine = pos[counts[units[pos]] == m]
        step = max(1, MIR_BATCH // (3 * m * m))
        for lo in range(0, mine.size, step):
            at = mine[lo:lo + step]
            rs = units[at]
            idx = cov.indptr[rs][:, None] + np.arange(m)
            cols, a, xs = cov.indices[idx], cov.data[idx], x[cov.indices[idx]]
            rhs, gamma, alpha = _mir_cuts(problem, rs, a, xs)
            # the submodular forms where no c-MIR cut is violated
            other = rhs >= y[rs] - VIOLATION
            if other.any():
                rhs[other], gamma[other], alpha[other] = _best_cuts(problem, rs[other], a[other], xs[other])
            for i in np.flatnonzero(rhs < y[rs] - VIOLATION).tolist():
                nz = alpha[i] != 0
                found.append((int(at[i]), int(rs[i]), float(gamma[i]), cols[i][nz], alpha[i][nz], float(rhs[i])))
    if GUB_CUTS and pos.size:
        # the group form's cut of a unit where it is the more violated one (adding both instead
        # stopped the root's rounds earlier, at a weaker bound, on summary_problem(1000, 2))
        best = {cut[0]: cut for cut in found}
        for cut in _gub_cuts(problem, units, pos, x, y):
            if cut[0] not in best or cut[5] < best[cut[0]][5]:
                best[cut[0]] = cut
        found = list(best.values())
    if not found:
        return np.zeros(0, dtype=np.int64), np.zeros(0), sp.csr_array((0, problem.n_candidates))
    found.sort(key=lambda cut: cut[0])          # in the order of ``units``
    n = len(found)
    lengths = [cut[3].size for cut in found]
    alpha = sp.csr_array((np.concatenate([cut[4] for cut in found]),
                          (np.repeat(np.arange(n), lengths), np.concatenate([cut[3] for cut in found]))),
                         shape=(n, problem.n_candidates))
    return (np.array([cut[1] for cut in found], dtype=np.int64), np.array([cut[2] for cut in found]), alpha)


def fractional_per_unit(cov, x: np.ndarray):
    """``(frac, counts, n_frac)``: which candidates are fractional in ``x``, and per unit (a column of the
    CSC coverage ``cov``) how many candidates cover it and how many of those are fractional (from the
    prefix sums over the column entries).  Shared by :func:`separate` and
    :func:`memaudit_solvers.bnb.hull.hull_cuts`."""
    frac = (x > 1e-9) & (x < 1 - 1e-9)
    counts = np.diff(cov.indptr)
    n_frac = np.diff(np.concatenate([[0], np.cumsum(frac[cov.indices])])[cov.indptr])
    return frac, counts, n_frac


def _gub_rows(problem: Problem, units: np.ndarray, x: np.ndarray):
    """Each unit's coverage in its group form: ``z_r = M_r - sum_g m_g s_g - sum_u d_u x_u``.

    ``m_g`` is the most any candidate of group g covers of r, ``M_r = sum_g m_g`` over the groups
    with a candidate covering r, ``s_g = 1 - sum_{u in g} x_u`` (1 when the group stores nothing)
    and ``d_u = m_g - a_ur`` for every candidate of those groups (covering r or not) with ``d_u > 0``.
    At every store each ``s_g`` and ``x_u`` is 0 or 1 and the identity holds (a group storing u adds
    ``m_g - d_u = a_ur``; one storing nothing adds 0).

    Returns ``(total, length, var_unit, var_pos, coef, value, kind)``: ``M_r`` and the number of
    variables per unit, then per variable its unit (index into ``units``), its position in the
    unit's row (the ``s_g`` first), coefficient, LP value and ``kind`` (``-1 - g`` for ``s_g``, u for
    ``x_u``).
    """
    cov = problem.coverage_csc
    groups = problem.groups
    n_u, n_g, n_c = units.size, problem.n_groups, problem.n_candidates
    ent_unit, ent_pos = rows_entries(cov.indptr, units)          # (a CSC column is a unit)
    ent_cand, ent_a = cov.indices[ent_pos], cov.data[ent_pos]
    # (unit, group) pairs and the most a candidate of the group covers of the unit
    pair_key, pair_of = np.unique(ent_unit * n_g + groups[ent_cand], return_inverse=True)
    pair_of = pair_of.reshape(-1)
    pair_unit, pair_group = pair_key // n_g, pair_key % n_g
    m_g = np.zeros(pair_key.size)
    np.maximum.at(m_g, pair_of, ent_a)
    total = np.bincount(pair_unit, weights=m_g, minlength=n_u)
    # every candidate of each pair's group, with what it covers of the pair's unit (0 if nothing)
    order, bounds = problem.group_order()
    mem_pair, mem_at = rows_entries(bounds, pair_group)
    mem_cand = order[mem_at]
    by_key = np.argsort(ent_unit * n_c + ent_cand, kind="stable")
    ent_key, ent_a_sorted = (ent_unit * n_c + ent_cand)[by_key], ent_a[by_key]
    mem_key = pair_unit[mem_pair] * n_c + mem_cand
    at = np.minimum(np.searchsorted(ent_key, mem_key), ent_key.size - 1)   # (no pair: both empty)
    mem_a = np.where(ent_key[at] == mem_key, ent_a_sorted[at], 0.0)
    d = m_g[mem_pair] - mem_a
    keep = d > 0
    mem_pair, mem_cand, d = mem_pair[keep], mem_cand[keep], d[keep]
    mem_unit = pair_unit[mem_pair]
    # positions: a unit's s_g first (pairs are sorted by unit), then its x_u
    n_pairs = np.bincount(pair_unit, minlength=n_u)
    pair_pos = np.arange(pair_key.size) - np.repeat(np.cumsum(n_pairs) - n_pairs, n_pairs)
    n_mem = np.bincount(mem_unit, minlength=n_u)
    by_unit = np.argsort(mem_unit, kind="stable")
    mem_unit, mem_cand, d = mem_unit[by_unit], mem_cand[by_unit], d[by_unit]
    mem_pos = n_pairs[mem_unit] + np.arange(mem_unit.size) - np.repeat(np.cumsum(n_mem) - n_mem, n_mem)
    taken = np.bincount(groups, weights=x, minlength=n_g)
    var_unit = np.concatenate([pair_unit, mem_unit])
    var_pos = np.concatenate([pair_pos, mem_pos])
    coef = np.concatenate([m_g, d])
    value = np.concatenate([np.clip(1.0 - taken[pair_group], 0.0, 1.0), x[mem_cand]])
    kind = np.concatenate([-1 - pair_group, mem_cand])
    return total, n_pairs + n_mem, var_unit, var_pos, coef, value, kind


def _gub_cuts(problem: Problem, units: np.ndarray, pos: np.ndarray, x: np.ndarray, y: np.ndarray):
    """The least c-MIR cut of the group form (:func:`_gub_rows`) of each unit ``units[pos]``, where it
    is violated: ``(position, unit, gamma, candidates, alpha, rhs at x)``.

    The c-MIR of the form is taken over its 0/1 variables; ``s_g = 1 - sum_{u in g} x_u`` is then
    put back (its coefficient goes to ``gamma`` and, negated, to every candidate of g), so the cut
    reads ``h_r(z_r) <= gamma + alpha . x`` and holds at every store (one candidate per group at
    most), not at every set of candidates.
    """
    rs_all = units[pos]
    total, length, var_unit, var_pos, coef, value, kind = _gub_rows(problem, rs_all, x)
    found = []
    # rows padded to a multiple of GUB_BUCKET with variables of coefficient 0 (never a scale, never
    # complemented: the cut gives them 0), so few batches of the c-MIR run
    width = -(-length // GUB_BUCKET) * GUB_BUCKET
    for m in np.unique(width[(length > 0) & (length <= GUB_MAX_TERMS)]).tolist():
        mine = np.flatnonzero((width == m) & (length > 0) & (length <= GUB_MAX_TERMS))
        row = np.full(rs_all.size, -1)
        row[mine] = np.arange(mine.size)
        on = row[var_unit] >= 0
        c = np.zeros((mine.size, m))
        v = np.zeros((mine.size, m))
        k_of = np.zeros((mine.size, m), dtype=np.int64)
        c[row[var_unit[on]], var_pos[on]] = coef[on]
        v[row[var_unit[on]], var_pos[on]] = value[on]
        k_of[row[var_unit[on]], var_pos[on]] = kind[on]
        rs = rs_all[mine]
        rhs, gamma, alpha = _mir_cuts(problem, rs, c, v, total[mine])
        for i in np.flatnonzero(rhs < y[rs] - VIOLATION).tolist():
            n_var = int(length[mine[i]])                  # the padding comes last, with 0 in the cut
            g_new, cols, a_x = _from_group_form(problem, float(gamma[i]), alpha[i][:n_var], k_of[i][:n_var])
            at_x = float(g_new + a_x @ x[cols])
            if at_x < y[rs[i]] - VIOLATION:     # (as in the form's variables wherever x keeps one per group)
                found.append((int(pos[mine[i]]), int(rs[i]), g_new, cols, a_x, at_x))
    return found


def _from_group_form(problem: Problem, gamma: float, alpha: np.ndarray, kinds: np.ndarray):
    """A cut ``h <= gamma + alpha . v`` over the variables of a group form (``kinds`` as
    :func:`_gub_rows` gives them) as ``h <= gamma' + alpha' . x``: ``(gamma', candidates, alpha')``.

    ``s_g = 1 - sum_{u in g} x_u``: its coefficient moves to ``gamma`` and, negated, onto every
    candidate of g; the same value at every store, up to the margin of :data:`CUT_MARGIN` added to
    ``gamma'``.
    """
    members = problem.group_members()
    on_s = kinds < 0
    g_s = (-1 - kinds[on_s]).tolist()
    cols = np.concatenate([kinds[~on_s]] + [members[g] for g in g_s])
    coeffs = np.concatenate([alpha[~on_s]] + [np.full(members[g].size, -a) for g, a in zip(g_s, alpha[on_s].tolist())])
    uniq, inv = np.unique(cols, return_inverse=True)
    summed = np.bincount(inv.reshape(-1), weights=coeffs, minlength=uniq.size)
    g_new = gamma + float(alpha[on_s].sum())
    g_new += CUT_MARGIN * (1.0 + abs(gamma) + float(np.abs(alpha).sum()))
    nz = summed != 0
    return g_new, uniq[nz].astype(np.int64), summed[nz]


def _best_cut(problem: Problem, r: int, a: np.ndarray, xs: np.ndarray):
    """``(rhs at xs, gamma, alpha)`` of the least of the forms (1), (2) over prefix sets S, or None."""
    rhs, gamma, alpha = _best_cuts(problem, np.array([r]), np.asarray(a, dtype=float)[None, :],
                                   np.asarray(xs, dtype=float)[None, :])
    return (float(rhs[0]), float(gamma[0]), alpha[0]) if np.isfinite(rhs[0]) else None


def _best_cuts(problem: Problem, units: np.ndarray, a: np.ndarray, xs: np.ndarray):
    """Per unit, the least at its point of the forms (1), (2) over the prefix sets S of its candidates by
    falling x: ``(rhs, gamma, alpha)``, rhs ``inf`` where none.  ``a``, ``xs``: (U, m), as for
    :func:`_mir_cuts`."""
    n_u, m = a.shape
    order = np.argsort(-xs, axis=1, kind="stable")
    # prefix sets S_k = the k candidates of largest x, k = 0..m, as a mask per row
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(m)[None, :], axis=1)
    in_s = rank[:, None, :] < np.arange(m + 1)[None, :, None]                   # (U, m + 1, m)
    z_s = np.einsum("ukm,um->uk", in_s.astype(float), a)                        # (U, m + 1)
    z_n = a.sum(axis=1)
    # every value of h the forms need, in one evaluation: h(S_k), h(S_k - u), h(u), h(0), h(N), h(N - u),
    # h(S_k + u)
    parts = [z_s, (z_s[:, :, None] - a[:, None, :]).reshape(n_u, -1), a, np.zeros((n_u, 1)), z_n[:, None],
             z_n[:, None] - a, (z_s[:, :, None] + a[:, None, :]).reshape(n_u, -1)]
    hv = np.split(h_values(problem, units, np.concatenate(parts, axis=1).T).T,
                  np.cumsum([part.shape[1] for part in parts])[:-1], axis=1)
    f_s = hv[0]                                                                  # f(S_k)
    rho_minus = f_s[:, :, None] - hv[1].reshape(n_u, m + 1, m)                   # rho_u(S - u), u in S
    rho_empty = hv[2] - hv[3]                                                    # rho_u({})
    rho_n = hv[4] - hv[5]                                                        # rho_u(N - u)
    rho_plus = hv[6].reshape(n_u, m + 1, m) - f_s[:, :, None]                    # rho_u(S), u not in S
    alpha1 = np.where(in_s, rho_minus, rho_empty[:, None, :])
    alpha2 = np.where(in_s, rho_n[:, None, :], rho_plus)
    alpha = np.concatenate([alpha1, alpha2], axis=1)                             # (U, 2m + 2, m)
    s2 = np.concatenate([in_s, in_s], axis=1)
    f2 = np.concatenate([f_s, f_s], axis=1)
    gamma = f2 - np.where(s2, alpha, 0.0).sum(axis=2)
    gamma += CUT_MARGIN * (1.0 + np.abs(f2) + np.abs(alpha).sum(axis=2))
    rhs = gamma + np.einsum("ukm,um->uk", alpha, xs)
    k = np.argmin(rhs, axis=1)
    u = np.arange(n_u)
    best = rhs[u, k]
    return np.where(np.isfinite(best), best, np.inf), gamma[u, k], alpha[u, k]


def mir_function(g, f):
    """The MIR coefficient ``F(g) = floor(g) + max(0, g - floor(g) - f) / (1 - f)`` for the fractional
    part ``f`` of the rounded right-hand side (continuous in g: a floor's float error moves it by
    rounding error only).  Shared by these cuts and :mod:`memaudit_solvers.bnb.tableau`."""
    fl = np.floor(g)
    return fl + np.maximum(0.0, g - fl - f) / (1 - f)


def _mir_cut(problem: Problem, r: int, a: np.ndarray, xs: np.ndarray):
    """``(rhs at xs, gamma, alpha)`` of the least c-MIR cut of unit r at ``xs`` (see the module), or None."""
    rhs, gamma, alpha = _mir_cuts(problem, np.array([r]), np.asarray(a, dtype=float)[None, :],
                                  np.asarray(xs, dtype=float)[None, :])
    return (float(rhs[0]), float(gamma[0]), alpha[0]) if np.isfinite(rhs[0]) else None


def _mir_cuts(problem: Problem, units: np.ndarray, a: np.ndarray, xs: np.ndarray, total: np.ndarray | None = None):
    """The least c-MIR cut of each unit at its point: ``(rhs, gamma, alpha)``, rhs ``inf`` where none.

    ``a`` and ``xs`` (U, m) are the coverage and the LP values of each unit's m candidates (every
    unit of a call has m).  Tried per piece of positive slope: every scale ``delta`` in ``s * a``
    (the fractional candidates' when there are any), then half, a quarter and an eighth of the
    best one; complemented sets ``x >= 0.5``, ``x > 0`` and none.  Among equal right-hand sides the
    first piece, pass, scale and set in that order wins.

    With ``total`` (U,) the row is a unit's coverage in the group form of :func:`_gub_rows`:
    ``z = total - a . v`` for 0/1 variables ``v`` (LP values ``xs``), so the piece reads
    ``s a . v - t <= s total + b - cap`` with ``cap = h(total)``.
    """
    n_u, m = a.shape
    cap = h_values(problem, units, a.sum(axis=1) if total is None else total)
    frac = np.asarray((xs > 1e-9) & (xs < 1 - 1e-9))
    complements = np.stack([xs >= 0.5, xs > 1e-9, np.zeros_like(frac)], axis=1)      # (U, 3, m)
    pool = np.where(np.any(frac, axis=1)[:, None], frac, True)
    best_rhs, best_gamma, best_alpha = np.full(n_u, np.inf), np.zeros(n_u), np.zeros((n_u, m))
    for k in range(problem.h_slopes.shape[1]):
        s, b = problem.h_slopes[units, k], problem.h_intercepts[units, k]
        live = (s > 0) & (b < cap)      # not a flat piece, nor one that never binds below the cap
        if not live.any():
            continue
        sa = s[:, None] * a
        # each unit's distinct scales, ascending (np.unique's order), the rest masked out
        deltas = np.sort(np.where(pool, sa, np.inf), axis=1)
        usable = np.isfinite(deltas) & (deltas > 0)       # (0: a group form's padding)
        usable[:, 1:] &= deltas[:, 1:] != deltas[:, :-1]
        usable &= live[:, None]
        g0, rhs0 = (-sa, b - cap) if total is None else (sa, s * total + b - cap)
        found = _mir_rows(g0, rhs0, cap, np.where(usable, deltas, 1.0), usable, complements, xs)
        halves = found[3][:, None] / np.array([2.0, 4.0, 8.0])
        again = np.isfinite(found[0])[:, None] & np.ones((1, 3), dtype=bool)
        scaled = _mir_rows(g0, rhs0, cap, np.where(again, halves, 1.0), again, complements, xs)
        for rhs, gamma, alpha, _ in (found, scaled):
            better = rhs < best_rhs
            best_rhs = np.where(better, rhs, best_rhs)
            best_gamma = np.where(better, gamma, best_gamma)
            best_alpha = np.where(better[:, None], alpha, best_alpha)
    return best_rhs, best_gamma, best_alpha


def _mir_rows(g0: np.ndarray, rhs0: np.ndarray, cap: np.ndarray, deltas: np.ndarray, usable: np.ndarray,
              complements: np.ndarray, xs: np.ndarray):
    """Per unit, the least at ``xs`` of the c-MIR cuts of ``g0 . x - t <= rhs0`` (``t = cap - y >= 0``).

    One cut per scale in ``deltas`` (U, D; those ``usable`` marks) and complemented set (rows of
    ``complements``, U x K x m); a right-hand side whose fractional part is outside [MIR_MIN_FRAC,
    1 - MIR_MIN_FRAC] gives none.  Returns ``(rhs at xs, gamma, alpha, delta)`` per unit, rhs ``inf``
    (and the rest meaningless) where there is none.
    """
    d = deltas[:, :, None, None]                                        # (U, D, 1, 1)
    comp = complements[:, None, :, :]                                   # (U, 1, K, m)
    g = g0[:, None, None, :] / d                                        # (U, D, 1, m)
    beta = rhs0[:, None, None] / d[..., 0] - np.where(comp, g, 0.0).sum(axis=3)   # (U, D, K)
    fl = np.floor(beta)
    f = beta - fl
    gz = np.where(comp, -g, g)                                          # (U, D, K, m): z = x or 1 - x
    with np.errstate(divide="ignore", invalid="ignore"):
        big_f = mir_function(gz, f[..., None])
    k = d[..., 0] * (1 - f)                                             # (U, D, K)
    alpha = np.where(comp, 1.0, -1.0) * k[..., None] * big_f
    on_comp = k * np.where(comp, big_f, 0.0).sum(axis=3)
    c = cap[:, None, None]
    gamma = c + k * fl - on_comp
    gamma = gamma + CUT_MARGIN * (1.0 + np.abs(c) + np.abs(k * fl) + np.abs(on_comp) + np.abs(alpha).sum(axis=3))
    ok = (f >= MIR_MIN_FRAC) & (f <= 1 - MIR_MIN_FRAC) & usable[:, :, None]
    rhs = np.where(ok, gamma + np.einsum("udkm,um->udk", alpha, xs), np.inf)
    n_u, n_d, n_k = rhs.shape
    j = np.argmin(rhs.reshape(n_u, -1), axis=1)
    i_d, i_k = np.divmod(j, n_k)
    u = np.arange(n_u)
    return rhs[u, i_d, i_k], gamma[u, i_d, i_k], alpha[u, i_d, i_k], deltas[u, i_d]
