"""bnb's restart after reduced-cost fixing at the root: the candidates taken in every better store
fixed into the problem (:func:`fix_in`), and the root's cuts carried over to the problem rebuilt from
what is left (:func:`carry_cuts`)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..objective import h_inf, h_values
from ..problem import Problem
from .cuts import CUT_MARGIN, Cuts

__all__ = ["carry_cuts", "clip_at_saturation", "fix_in"]

def carry_cuts(cuts: Cuts, old: Problem, new: Problem, members, unit_origin: np.ndarray) -> tuple[Cuts, np.ndarray]:
    """The cuts of ``old`` rewritten for ``new``, the problem :func:`~memaudit_solvers.bnb.decompose.decompose`
    built from some of ``old``'s candidates (``members[j]``: the old candidates behind new candidate j;
    ``unit_origin``: the old unit behind each coupled new unit, -1 for a frontier option's own).

    A cut ``ycoef . h(z) <= gamma + alpha . x`` holds at every store of ``old`` within the budget, and
    every store of ``new`` is one of those (new candidate j stands for its members together), so it
    holds there with ``alpha_j`` the sum over j's members.  A unit that stays coupled keeps its term.
    Any other unit is covered only by the options of one collapsed group (or by no candidate kept):
    one option of that group or none is taken, so ``h_r(z_r) = sum_j x_j h_r(z_r(M_j))`` exactly
    (``h_r(0) = 0``), and its term moves to ``alpha``.  Both sides of a cut keep their value at every
    store.  Cuts left with no unit say nothing about the objective and are dropped; a one-unit cut
    whose unit stays coupled keeps it.  ``gamma`` gets a margin of
    :data:`~memaudit_solvers.bnb.cuts.CUT_MARGIN` of the terms summed.

    Returns the new cuts and the indices of the input cuts they come from.
    """
    out = Cuts(new.n_candidates, new.n_units)
    if len(cuts) == 0 or new.n_candidates == 0:
        return out, np.zeros(0, dtype=np.int64)
    sizes = np.fromiter((len(m) for m in members), dtype=np.int64, count=len(members))
    cols = np.fromiter((u for m in members for u in m), dtype=np.int64, count=int(sizes.sum()))
    memb = sp.csr_array((np.ones(cols.size), (np.repeat(np.arange(len(members)), sizes), cols)),
                        shape=(new.n_candidates, old.n_candidates))
    unit_origin = np.asarray(unit_origin, dtype=np.int64)
    stays = np.flatnonzero(unit_origin >= 0)
    new_index = np.full(old.n_units, -1, dtype=np.int64)
    new_index[unit_origin[stays]] = stays
    folded = np.flatnonzero(new_index < 0)
    ycoef = sp.csc_array(cuts.ycoef)
    y_new = sp.csr_array(ycoef @ sp.csr_array((np.ones(stays.size), (unit_origin[stays], stays)),
                                              shape=(old.n_units, new.n_units)))
    # h_r(z_r(M_j)) of each new candidate on each folded unit (0 where it does not cover it)
    z = sp.csr_array(sp.csr_array(memb @ old.coverage)[:, folded])
    h_folded = sp.csr_array((h_values(old, folded[z.indices], z.data), z.indices, z.indptr), shape=z.shape)
    alpha_members = sp.csr_array(cuts.alpha @ memb.T)
    fold_on_x = sp.csr_array(sp.csr_array(ycoef[:, folded]) @ h_folded.T)
    alpha = sp.csr_array(alpha_members - fold_on_x)
    size = (np.abs(cuts.gamma) + np.asarray(abs(alpha_members).sum(axis=1)).ravel()
            + np.asarray(abs(fold_on_x).sum(axis=1)).ravel())
    gamma = cuts.gamma + CUT_MARGIN * (1.0 + size)
    unit = np.where(cuts.unit >= 0, new_index[np.maximum(cuts.unit, 0)], -1)
    kept = np.flatnonzero((np.diff(y_new.indptr) > 0) & ((cuts.unit < 0) | (unit >= 0)))
    if kept.size:
        out.extend(unit[kept], gamma[kept], sp.csr_array(alpha[kept]), sp.csr_array(y_new[kept]))
    return out, kept


def clip_at_saturation(problem: Problem) -> Problem:
    """``problem`` with each coverage entry cut to its unit's saturation point, or ``problem`` itself.

    For ``h_r`` concave and flat from ``z_sat`` on, ``h_r(sum_u min(a_ur, z_sat)) = h_r(sum_u a_ur)``
    at every store (a candidate covering at least ``z_sat`` saturates the unit either way; otherwise
    nothing changes), so F is the same and every store keeps its value; only the LP relaxation
    changes, for the better: ``y_r <= a x_u`` with ``a`` above the cap let a fraction of x_u fill
    the unit.  After a restart's shift (``h'(z) = h(c + z) - h(c)``) the caps are ``1 - c`` while
    the coverage stays up to 1: on the problem ``summary_problem(1000, 2)``'s last restart leaves at
    25 %, 189 of 1,179 entries are cut and its LP without cuts falls from 767.2 to 754.5 (OPT 733.4;
    the cuts carried over had already taken most of that).  A unit is cut only where ``h`` at its
    saturation point is exactly its top value in floating point.
    """
    from .treedp import saturation

    cov = sp.csr_array(problem.coverage)
    if cov.nnz == 0:
        return problem
    units = np.arange(problem.n_units)
    z_sat = saturation(problem, units)
    exact = np.isfinite(z_sat)
    exact[exact] = h_values(problem, units[exact], z_sat[exact]) >= h_inf(problem)[exact]
    cap = np.where(exact, z_sat, np.inf)[cov.indices]
    over = cov.data > cap
    if not over.any():
        return problem
    data = np.where(over, cap, cov.data)
    clipped = sp.csr_array((data, cov.indices, cov.indptr), shape=cov.shape)
    return Problem.build(problem.costs, problem.groups, clipped, problem.weights, h_slopes=problem.h_slopes,
                         h_intercepts=problem.h_intercepts, n_groups=problem.n_groups)


def fix_in(problem: Problem, fixed: np.ndarray, cuts: Cuts) -> tuple[Problem, float, float, Cuts]:
    """Take the candidates ``fixed`` into every store: ``(shifted, offset, cost, cuts)``.

    With ``c_r`` the coverage the fixed candidates give unit r, each h becomes ``h'_r(z) = h_r(c_r +
    z) - h_r(c_r)`` (the same slopes, intercepts ``a_k c_r + b_k - h_r(c_r)``), so ``F(fixed + S) =
    offset + F'(S)`` with ``offset = F(fixed)``; a store S of the other candidates fits ``budget -
    cost`` when ``fixed + S`` fits the budget.  A unit the fixed candidates already take to the top
    of its h is covered by no candidate in ``shifted`` (it adds nothing more).  The fixed candidates
    stay (the indices do not change) but no store of the restart uses them, nor any other candidate
    of their groups.  Coverage above a unit's new saturation point is then cut to it
    (:func:`clip_at_saturation`: F' is the same at every store, its LP tighter).  The cuts
    ``ycoef . h(z) <= gamma + alpha . x`` are rewritten for ``F'``:
    ``gamma`` gains ``alpha`` on the fixed candidates and loses ``ycoef . h(c)``.
    """
    fixed = np.asarray(fixed, dtype=np.int64)
    x = np.zeros(problem.n_candidates)
    x[fixed] = 1.0
    c = problem.coverage.T @ x
    vals = problem.h_slopes * c[:, None] + problem.h_intercepts
    hc = vals.min(axis=1)
    intercepts = vals - hc[:, None]                     # smallest exactly 0
    top = (intercepts <= 0) & (problem.h_slopes <= 0)   # a flat piece at h(c): h' is 0 from here on
    done = top.any(axis=1)
    coverage = sp.csr_array(problem.coverage)
    if done.any():
        coverage = sp.csr_array(coverage @ sp.diags_array((~done).astype(float)))
        coverage.eliminate_zeros()
    shifted = Problem.build(problem.costs, problem.groups, coverage, problem.weights, h_slopes=problem.h_slopes,
                            h_intercepts=intercepts, n_groups=problem.n_groups)
    shifted = clip_at_saturation(shifted)
    offset = float(problem.weights @ hc)
    cost = float(problem.costs[fixed].sum())
    out = Cuts(problem.n_candidates, problem.n_units)
    if len(cuts):
        on_fixed = cuts.alpha @ x
        on_c = cuts.ycoef @ hc
        gamma = cuts.gamma + on_fixed - on_c
        gamma = gamma + CUT_MARGIN * (1.0 + np.abs(cuts.gamma) + np.abs(on_fixed) + abs(cuts.ycoef) @ np.abs(hc))
        out.extend(cuts.unit, gamma, cuts.alpha, cuts.ycoef)
    return shifted, offset, cost, out
