"""The MILP every back-end states: settings, the reduced model, the zero-gap rule."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ..exact import MAX_MAGNITUDE_RATIO, lattice_budget, power_of_two
from ..problem import Problem
from ..objective import evaluate, h_inf, h_values, infeasibility
from ..result import Declined, Result, SolverError, check_budget, make_result
from .presolve import folded_dominance, group_dominance, group_types

if TYPE_CHECKING:  # the grid is built from a model, in scaling.py
    from .scaling import _Grid

#: seed handed to every back-end, so a rerun makes the same choices
RANDOM_SEED = 0

#: the back-ends' primal and integer feasibility tolerance (their smallest allowed value; defaults are
#: 1e-7 / 1e-6): with the budget scaled into [1, 2) a store over the exact budget by more than about
#: this fraction cannot come back, and any that does is caught by the exact check in make_result
FEASIBILITY_TOL = 1e-10

#: relative tolerance on ``bound - value`` below which a zero-gap claim is accepted
_GAP_RTOL = 1e-9


#: a reduced model with at least this many columns (x and y, after the dominance presolve, before the fold)
#: is *at scale* (``_Model.at_scale``, decided once): units of one group fold, y stays continuous (the
#: objective's grid still closes the gap: :func:`memaudit_solvers.milp.scaling._grid_gap`) and HiGHS gets
#: its scale options (:func:`memaudit_solvers.milp.highs._scale_options`).  ``random_problem(10000, seed)``
#: reduces to about 22,000 columns after the fold, the benchmark families up to 3,000 experiences to under 8,000.  With
#: integral y at 10,000 experiences HiGHS needed 17.7 s (5 %) and had no proof in 60 s (25 %) where
#: continuous y with the grid rule took 0.5-0.9 s (docs/backends.md)
SCALE_COLUMNS = 20_000

_NOT_TAKEN = object()


def _check_settings(method: str, budget, time_limit, threads, integral_y=_NOT_TAKEN) -> dict:
    """Validate the budget and the settings against ``method``'s declarations in
    :data:`memaudit_solvers.registry.SETTINGS` (stated once, there); return the settings with
    defaults filled in and an infinite ``time_limit`` as None.

    ``integral_y`` is checked only for the back-ends that take it.
    """
    from ..registry import SETTINGS      # the registry imports the back-ends: look it up at call time
    from ..settings import validate_settings

    check_budget(budget)
    given = {"time_limit": time_limit, "threads": threads}
    if integral_y is not _NOT_TAKEN:
        given["integral_y"] = integral_y
    settings = validate_settings(f"method {method!r}", SETTINGS[method], given)
    if settings["time_limit"] is not None and math.isinf(settings["time_limit"]):
        settings["time_limit"] = None
    settings["threads"] = int(settings["threads"])
    return settings


@dataclass(frozen=True)
class _Model:
    """The MILP after dropping what cannot matter, with ``s[r]`` substituted away.

    Columns are ``x`` (one binary per kept candidate) then ``y`` (one per kept
    unit).  Rows are ``budget`` (only when it can bind), ``one_per_group_<g>``
    (groups with two or more kept candidates) and ``cover_<r>_piece_<k>``:
    ``y[r] - slope_k * sum_u a[u, r] x[u] <= intercept_k`` for each sloped piece
    (``r``, ``k`` and ``g`` are the problem's own indices).  Flat pieces become
    the upper bound of ``y[r]``; pieces that never bind and duplicates are
    dropped, as are candidates over the budget or covering nothing of value,
    candidates dominated inside their group (another costs no more and covers at
    least as much: :func:`memaudit_solvers.milp.presolve.group_dominance`, which keeps
    OPT) and units no kept candidate covers.  The budget row states the budget rounded
    down to the kept costs' grid (:func:`memaudit_solvers.exact.lattice_budget`: the same
    stores fit, and the LP cannot spend the remainder).

    Costs and budget, and weights, are multiplied by powers of two that bring the
    budget and the largest kept weight into [1, 2) (:func:`memaudit_solvers.exact.power_of_two`):
    exact in floating point, so the stores are the same and the objective is F times
    ``value_scale``, while the back-ends' absolute tolerances (1e-9 .. 1e-6) meet
    numbers of size 1 at every scale of the data.

    Aggregated (``_reduced_model(..., aggregate=True)`` at scale, for HiGHS): groups no cover row
    touches are *fully folded*; in them a candidate dominated by cost and folded value goes too
    (:func:`memaudit_solvers.milp.presolve.folded_dominance`), and the ``N_t >= 2`` groups of one
    *type* (the same list of (cost, folded value) options, equal as floats:
    :func:`memaudit_solvers.milp.presolve.group_types`) become one general-integer *count* column per
    option (upper bound ``N_t``: how many of those groups store that option) and one row
    ``one_per_group_of_type_<g>`` with right side ``N_t`` (``g``: the type's first group).  The groups
    are interchangeable, so a count decodes to a store by giving the option to that many of them
    (:meth:`store`) and a store encodes as counts (:meth:`columns_at`); OPT is the same.  Without it
    every x column is binary and stands for one candidate.
    """

    candidates: np.ndarray        # (n_x,) original index of each x column (a count column: its first member)
    costs: np.ndarray             # (n_x,) cost_scale * c
    units: np.ndarray             # (n_y,) original index of each y column
    weights: np.ndarray           # (n_y,) value_scale * w
    x_values: np.ndarray          # (n_x,) value_scale * the worth of the private units each x covers
    y_upper: np.ndarray           # (n_y,) smallest flat piece of h_r, inf if none
    cover: sp.csr_array           # (n_y, n_x) a[u, r] transposed
    piece_units: np.ndarray       # (n_p,) y column of each cover row
    piece_ids: np.ndarray         # (n_p,) original piece index k of each cover row
    piece_slopes: np.ndarray      # (n_p,) > 0
    piece_intercepts: np.ndarray  # (n_p,) < y_upper of the row's unit
    group_ids: np.ndarray         # (n_g,) original group of each one-per-group row
    group_rows: sp.csr_array      # (n_g, n_x) 0/1
    budget: float                 # cost_scale * B rounded down to the kept costs' grid (exact.lattice_budget)
    budget_row: bool              # False when every store of kept candidates fits
    cost_scale: float = 1.0       # power of two: the model's costs and budget are the problem's times it
    value_scale: float = 1.0      # power of two: the model's objective is F times it
    decimal_unit: float = 1.0     # power of two: the model's costs / it are the package's own numbers
    replaced: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))     # (k,) dominated, dropped
    replacement: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # (k,) a kept dominator of each
    at_scale: bool = False        # SCALE_COLUMNS or more columns before the fold: decided once, here
    x_upper: np.ndarray = field(default_factory=lambda: np.zeros(0))       # (n_x,) 1, or N_t for a count column
    group_upper: np.ndarray = field(default_factory=lambda: np.zeros(0))   # (n_g,) 1, or N_t for a type's row
    member_starts: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))  # (n_x + 1,)
    members: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # (members,) the candidates column j stands for: members[member_starts[j]:member_starts[j + 1]], one per
    # group of its type in group order (a binary x: its own candidate alone)
    type_start: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # (n_x,) the first column of column j's type (j itself for a binary x): a type's columns are contiguous

    @property
    def n_x(self) -> int:
        return int(self.candidates.shape[0])

    @property
    def n_y(self) -> int:
        return int(self.units.shape[0])

    @property
    def aggregated(self) -> bool:
        """True when some x column is a count of interchangeable groups (upper bound above 1)."""
        return bool(self.x_upper.size and self.x_upper.max() > 1)

    def store(self, x: np.ndarray, backend: str = "the back-end") -> np.ndarray:
        """The store (candidate indices) that the x part of a back-end's solution stands for.

        A binary x stores its candidate when it is above 1/2; a count column with (rounded) value
        ``n`` gives its option to the next ``n`` groups of its type, after those its type's earlier
        columns took.  :class:`SolverError` when the counts of a type exceed its groups.
        """
        n = np.rint(np.clip(np.asarray(x, dtype=float)[:self.n_x], 0.0, self.x_upper)).astype(np.int64)
        before = np.cumsum(n) - n
        offset = before - before[self.type_start]        # groups of the type its earlier columns took
        sizes = np.diff(self.member_starts)
        if np.any(offset + n > sizes):
            raise SolverError(f"{backend} returned counts that exceed the groups of a type: a back-end failure")
        taken = np.flatnonzero(n)
        first = np.repeat(self.member_starts[taken] + offset[taken], n[taken])
        within = np.arange(first.size) - np.repeat(np.cumsum(n[taken]) - n[taken], n[taken])
        return np.sort(self.members[first + within])

    def columns_at(self, store: np.ndarray) -> np.ndarray:
        """(n_x,) the x columns at a store of kept candidates (0/1, or how many of a type's groups
        store the column's option); candidates the model does not state are ignored."""
        store = np.asarray(store, dtype=np.int64).reshape(-1)
        column = np.repeat(np.arange(self.n_x), np.diff(self.member_starts))
        hit = np.isin(self.members, store)
        return np.bincount(column[hit], minlength=self.n_x).astype(float)

    def cover_row_names(self) -> list[str]:
        return [f"cover_{r}_piece_{k}" for r, k in zip(self.units[self.piece_units].tolist(), self.piece_ids.tolist())]

    def row_names(self) -> list[str]:
        names = ["budget"] if self.budget_row else []
        names += [f"one_per_group_of_type_{g}" if n > 1 else f"one_per_group_{g}"
                  for g, n in zip(self.group_ids.tolist(), self.group_upper.tolist())]
        return names + self.cover_row_names()

    def column_names(self) -> list[str]:
        return ([f"count_{u}" if n > 1 else f"x_{u}" for u, n in zip(self.candidates.tolist(), self.x_upper.tolist())]
                + [f"y_{r}" for r in self.units.tolist()])

    def matrix(self, grid: _Grid | None = None) -> tuple[sp.csr_array, np.ndarray]:
        """Row-wise constraint matrix (n_rows, n_x + n_y) and row upper bounds (rows are ``<=``).

        With a ``grid`` the cover rows are stated for ``Y = y_scale * y`` in integers.
        """
        n_x, n_y, n_p = self.n_x, self.n_y, self.piece_units.shape[0]
        if grid is None:
            x_part = sp.csr_array(sp.diags_array(-self.piece_slopes) @ self.cover[self.piece_units])
            cover_upper = self.piece_intercepts
        else:
            x_part = sp.csr_array((-grid.coefs.astype(float), grid.x_part.indices, grid.x_part.indptr),
                                  shape=(n_p, n_x))
            cover_upper = grid.intercepts.astype(float)
        y_part = sp.csr_array((np.ones(n_p), (np.arange(n_p), self.piece_units)), shape=(n_p, n_y))
        blocks: list[list] = []
        upper: list[np.ndarray] = []
        if self.budget_row:
            blocks.append([sp.csr_array(self.costs.reshape(1, n_x)), sp.csr_array((1, n_y))])
            upper.append(np.array([self.budget], dtype=float))
        if self.group_ids.size:
            blocks.append([self.group_rows, sp.csr_array((self.group_ids.size, n_y))])
            upper.append(self.group_upper)
        blocks.append([x_part, y_part])
        upper.append(cover_upper)
        a = sp.csr_array(sp.block_array(blocks, format="csr"))
        a.sort_indices()
        return a, np.concatenate(upper).astype(float)

    def columns(self, grid: _Grid | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Objective coefficients and upper bounds (``inf`` allowed) of the x then y columns."""
        if grid is None:
            y_cost, y_upper = self.weights, self.y_upper
        else:
            y_cost, y_upper = self.weights / grid.y_scale, grid.y_upper.astype(float)
        return np.concatenate([self.x_values, y_cost]), np.concatenate([self.x_upper, y_upper])


def _reduced_model(problem: Problem, budget: float, fold_private: bool = True, aggregate: bool = False) -> _Model:
    """Keep the candidates that fit the budget and cover a unit worth something, and those units.

    With ``fold_private`` a unit covered by one kept candidate (at scale, ``SCALE_COLUMNS``: by the
    candidates of one group) becomes part of those candidates' objective coefficients (``x_values``)
    instead of a y column: exact, and it removes the rows of a candidate that alone covers many units.
    With ``aggregate`` (and the fold) a model at scale merges interchangeable fully folded groups
    into count columns (see :class:`_Model`): for a back-end that states x as general integers.
    """
    n_units = problem.n_units
    y_upper_all = h_inf(problem)
    fits = np.flatnonzero(problem.costs <= budget)   # exact: one float against another (see exact.py)
    cov_fits = problem.coverage[fits]
    covered = np.zeros(n_units, dtype=bool)
    covered[cov_fits.indices[cov_fits.data > 0]] = True
    units = np.flatnonzero(covered & (y_upper_all > 0))
    sub = sp.csr_array(cov_fits[:, units])
    sub.eliminate_zeros()
    useful = np.flatnonzero(np.diff(sub.indptr) > 0)
    candidates = fits[useful]
    a = sp.csr_array(sub[useful])
    # our own presolve: a candidate dominated inside its group can go (see presolve.group_dominance)
    removed, kept_by = group_dominance(problem.costs[candidates], problem.groups[candidates], a)
    replaced, replacement = candidates[removed], candidates[kept_by]
    if removed.size:
        stay = np.ones(candidates.size, dtype=bool)
        stay[removed] = False               # a mask: setdiff1d sorted and hashed 200,000 indices (0.5 s)
        candidates, a = candidates[stay], sp.csr_array(a[stay])
    cover = sp.csr_array(a.T)
    cover.sort_indices()
    x_values = np.zeros(candidates.size)
    at_scale = candidates.size + units.size >= SCALE_COLUMNS
    if fold_private and units.size:
        # a unit whose kept candidates all lie in one group is worth sum_u w[r] * h_r(a[u, r]) * x[u]:
        # at most one of them is stored (one per group), h(0) = 0 and x is binary, so the sum is exact.
        # Its value moves onto those x columns and its y column and cover rows go.  Below SCALE_COLUMNS
        # only units one candidate covers fold: on the benchmark families (up to 3,000 experiences) the
        # wider fold was as often slower as faster for HiGHS (0.7-7x either way), at scale it pays
        if at_scale:
            own = _single_group_units(cover, problem.groups[candidates])
            if aggregate:
                own &= ~_in_coupled_group(cover, problem.groups[candidates], own, problem.n_groups)
        else:
            own = np.diff(cover.indptr) == 1
        if own.any():
            rows = np.flatnonzero(own)
            counts = np.diff(cover.indptr)[rows]
            starts = np.repeat(cover.indptr[rows], counts)
            entries = starts + np.arange(starts.size) - np.repeat(np.cumsum(counts) - counts, counts)
            owner, amount = cover.indices[entries], cover.data[entries]
            unit_of = np.repeat(units[rows], counts)
            worth = problem.weights[unit_of] * h_values(problem, unit_of, amount)
            np.add.at(x_values, owner, worth)
            keep_rows = np.flatnonzero(~own)
            units, cover = units[keep_rows], sp.csr_array(cover[keep_rows])
            cover.sort_indices()

    # sloped pieces of kept units; a piece never below the flat cap cannot bind; duplicates go
    slopes, intercepts = problem.h_slopes[units], problem.h_intercepts[units]
    n_y, n_k = slopes.shape if units.size else (0, problem.h_slopes.shape[1])
    y_upper = y_upper_all[units]
    pu = np.repeat(np.arange(n_y), n_k)
    pk = np.tile(np.arange(n_k), n_y)
    ps, pb = slopes.ravel(), intercepts.ravel()
    keep = (ps > 0) & (pb < y_upper[pu])
    pu, pk, ps, pb = pu[keep], pk[keep], ps[keep], pb[keep]
    if pu.size:
        _, first = np.unique(np.column_stack([pu, ps, pb]), axis=0, return_index=True)
        first = np.sort(first)
        pu, pk, ps, pb = pu[first], pk[first], ps[first], pb[first]

    budget_row = bool(infeasibility(problem, _group_max_store(problem, candidates), budget))
    merged = None
    if aggregate and fold_private and at_scale:
        merged = _merge_interchangeable(problem, candidates, x_values, cover, replaced, replacement)
        candidates, x_values, cover, replaced, replacement = (merged.candidates, merged.x_values, merged.cover,
                                                              merged.replaced, merged.replacement)
    n_binary = candidates.size if merged is None else merged.n_binary
    groups = problem.groups[candidates[:n_binary]]
    counts = np.bincount(groups, minlength=problem.n_groups)
    multi = np.flatnonzero(counts[groups] >= 2)
    group_ids, row_of = np.unique(groups[multi], return_inverse=True)
    group_rows = sp.csr_array((np.ones(multi.size), (row_of.reshape(-1), multi)),
                              shape=(group_ids.size, candidates.size))
    group_upper = np.ones(group_ids.size)
    if merged is None:
        x_upper = np.ones(candidates.size)
        members, member_starts = candidates.copy(), np.arange(candidates.size + 1, dtype=np.int64)
        type_start = np.arange(candidates.size, dtype=np.int64)
    else:
        x_upper, members, member_starts, type_start = (merged.x_upper, merged.members, merged.member_starts,
                                                       merged.type_start)
        group_ids = np.concatenate([group_ids, merged.type_groups])
        group_rows = sp.csr_array(sp.vstack([group_rows, merged.type_rows], format="csr"))
        group_upper = np.concatenate([group_upper, merged.type_upper])

    costs = problem.costs[candidates]
    weights = problem.weights[units]
    # the budget row states the budget rounded down to the kept costs' grid: the same stores fit,
    # and its LP cannot spend the remainder (HiGHS's presolve does this too, but it is off at scale;
    # measured at 10,000 experiences, 5 %: bound 10,652.98 -> 10,652.6 over OPT 10,652)
    row_budget = lattice_budget(costs, budget)
    cost_scale = power_of_two(row_budget)
    w_max = max(float(weights.max()) if weights.size else 0.0, float(x_values.max()) if x_values.size else 0.0)
    value_scale = power_of_two(w_max)
    return _Model(candidates=candidates, costs=costs * cost_scale, units=units, weights=weights * value_scale,
                  x_values=x_values * value_scale,
                  y_upper=y_upper, cover=cover, piece_units=pu, piece_ids=pk, piece_slopes=ps,
                  piece_intercepts=pb, group_ids=group_ids, group_rows=group_rows, budget=row_budget * cost_scale,
                  budget_row=budget_row,
                  cost_scale=cost_scale, value_scale=value_scale, decimal_unit=cost_scale * problem.cost_unit,
                  at_scale=bool(at_scale),
                  replaced=replaced, replacement=replacement, x_upper=x_upper, group_upper=group_upper,
                  members=members, member_starts=member_starts, type_start=type_start)


@dataclass(frozen=True)
class _Merged:
    """The x columns after :func:`_merge_interchangeable`: ``n_binary`` binary ones, then the count columns."""

    candidates: np.ndarray     # (n_x,) kept candidate of each column (a count column: its first member)
    x_values: np.ndarray       # (n_x,)
    cover: sp.csr_array        # (n_y, n_x)
    replaced: np.ndarray       # dominated candidates, the folded dominance's added
    replacement: np.ndarray    # a kept dominator of each
    n_binary: int
    x_upper: np.ndarray        # (n_x,)
    members: np.ndarray        # see _Model
    member_starts: np.ndarray  # (n_x + 1,)
    type_start: np.ndarray     # (n_x,)
    type_groups: np.ndarray    # (n_t,) first group of each type with two or more options (one row each)
    type_rows: sp.csr_array    # (n_t, n_x) 0/1 over the type's count columns
    type_upper: np.ndarray     # (n_t,) N_t


def _merge_interchangeable(problem: Problem, candidates: np.ndarray, x_values: np.ndarray, cover: sp.csr_array,
                           replaced: np.ndarray, replacement: np.ndarray) -> _Merged:
    """Merge the fully folded groups of one type into count columns (see :class:`_Model`).

    A fully folded group (no cover row touches its kept candidates) contributes the folded value of
    the candidate it stores and its cost, nothing else: its candidates dominated by cost and value go
    (:func:`~memaudit_solvers.milp.presolve.folded_dominance`), and groups whose remaining (cost, value)
    lists are equal floats (:func:`~memaudit_solvers.milp.presolve.group_types`) are interchangeable, so
    only how many of them store each option matters.  A type of one group stays binary.
    """
    n_x = candidates.size
    costs = problem.costs[candidates]
    groups = problem.groups[candidates]
    touched = np.zeros(problem.n_groups, dtype=bool)
    touched[groups[np.unique(cover.indices)]] = True
    folded = np.flatnonzero(~touched[groups])
    gone, by = folded_dominance(costs[folded], x_values[folded], groups[folded])
    gone, by = folded[gone], folded[by]
    if gone.size:
        # a candidate the coverage dominance replaced by one now gone is replaced by that one's dominator
        dropped, dominator = candidates[gone], candidates[by]
        at = np.searchsorted(dropped, replacement).clip(max=dropped.size - 1)
        replacement = np.where(dropped[at] == replacement, dominator[at], replacement)
        order = np.argsort(np.concatenate([replaced, dropped]), kind="stable")
        replaced = np.concatenate([replaced, dropped])[order]
        replacement = np.concatenate([replacement, dominator])[order]
    alive = np.ones(n_x, dtype=bool)
    alive[gone] = False
    folded = folded[alive[folded]]
    type_of, option_of, n_of_type = group_types(costs[folded], x_values[folded], groups[folded])
    merge = n_of_type[type_of] >= 2
    in_type = folded[merge]
    alive[in_type] = False
    binary = np.flatnonzero(alive)
    order = np.lexsort((groups[in_type], option_of[merge], type_of[merge]))
    ms, t, k = in_type[order], type_of[merge][order], option_of[merge][order]
    starts = np.flatnonzero(np.r_[True, (t[1:] != t[:-1]) | (k[1:] != k[:-1])]) if ms.size else np.zeros(0, np.int64)
    heads = ms[starts]                                  # first member (smallest group) of each count column
    n_binary, n_count = binary.size, starts.size
    col_type = t[starts]
    first_col = np.flatnonzero(np.r_[True, col_type[1:] != col_type[:-1]]) if n_count else np.zeros(0, np.int64)
    n_cols = np.diff(np.r_[first_col, n_count])          # columns (options) of each type
    upper = np.diff(np.r_[starts, ms.size]).astype(float)   # N_t of each count column
    rowed = np.flatnonzero(n_cols >= 2)                   # a type of one option needs only its upper bound
    row_of = np.repeat(np.arange(first_col.size), n_cols)
    with_row = np.isin(row_of, rowed)
    row_index = np.searchsorted(rowed, row_of[with_row])
    type_rows = sp.csr_array((np.ones(int(with_row.sum())), (row_index, n_binary + np.flatnonzero(with_row))),
                             shape=(rowed.size, n_binary + n_count))
    new_cover = sp.csr_array(sp.hstack([cover[:, binary], sp.csr_array((cover.shape[0], n_count))], format="csr"))
    new_cover.sort_indices()
    return _Merged(candidates=np.concatenate([candidates[binary], candidates[heads]]),
                   x_values=np.concatenate([x_values[binary], x_values[heads]]), cover=new_cover,
                   replaced=replaced, replacement=replacement, n_binary=n_binary,
                   x_upper=np.concatenate([np.ones(n_binary), upper]),
                   members=np.concatenate([candidates[binary], candidates[ms]]).astype(np.int64),
                   member_starts=np.concatenate([np.arange(n_binary), n_binary + starts, [n_binary + ms.size]]).astype(np.int64),
                   type_start=np.concatenate([np.arange(n_binary), n_binary + np.repeat(first_col, n_cols)]).astype(np.int64),
                   type_groups=groups[heads[first_col[rowed]]], type_rows=type_rows, type_upper=upper[first_col[rowed]])


def _in_coupled_group(cover: sp.csr_array, groups: np.ndarray, own: np.ndarray, n_groups: int) -> np.ndarray:
    """(n_y,) bool: the units of ``own`` (covered inside one group) whose group also covers a unit
    that is not (a *coupled* group).  For the aggregated model such units keep their y column:
    folded into x they made HiGHS's search slower (``random_problem(10000, 1)`` at 5 %: proof in
    6-17 s with them as y, none in 60 s folded; docs/backends.md)."""
    column_unit = np.repeat(np.arange(cover.shape[0]), np.diff(cover.indptr))
    coupled = np.zeros(n_groups, dtype=bool)
    coupled[groups[cover.indices[~own[column_unit]]]] = True
    return own & np.bincount(column_unit[coupled[groups[cover.indices]]], minlength=cover.shape[0]).astype(bool)


def _single_group_units(cover: sp.csr_array, groups: np.ndarray) -> np.ndarray:
    """(n_y,) bool: the rows of ``cover`` (units by kept candidates) whose candidates all lie
    in one group (``groups``: the group of each column)."""
    counts = np.diff(cover.indptr)
    own = counts == 0                       # a unit no candidate covers is worth nothing: it goes too
    rows = np.flatnonzero(~own)
    if rows.size:
        g, starts = groups[cover.indices], cover.indptr[rows]
        own[rows] = np.minimum.reduceat(g, starts) == np.maximum.reduceat(g, starts)
    return own


def _group_max_store(problem: Problem, candidates: np.ndarray) -> np.ndarray:
    """Indices of the costliest kept candidate of each group: the costliest store of kept candidates."""
    order = np.lexsort((-problem.costs[candidates], problem.groups[candidates]))
    ranked = candidates[order]
    first = np.r_[True, np.diff(problem.groups[ranked]) != 0] if ranked.size else np.zeros(0, dtype=bool)
    return ranked[first]


def _check_faithful(model: _Model, backend: str) -> None:
    """Decline data a float MILP cannot state next to its absolute tolerances.

    After the power-of-two scaling the largest weight and the budget are in [1, 2); a
    weight or a cost smaller than ``1 / MAX_MAGNITUDE_RATIO`` of them would sit below the
    back-end's feasibility and optimality tolerances.
    """
    w = np.concatenate([model.weights, model.x_values[model.x_values > 0]])
    if w.size and w.min() * MAX_MAGNITUDE_RATIO < w.max():
        raise Declined(f"the objective's coefficients (unit weights, and the worth of units one candidate alone "
                       f"covers) span {w.min() / model.value_scale:g} to {w.max() / model.value_scale:g}, a ratio "
                       f"above {MAX_MAGNITUDE_RATIO:g}: {backend} cannot state the small ones faithfully next to "
                       "its tolerances; rescale the weights or use bnb with brute force")
    if model.budget_row and model.costs.size and model.costs.min() * MAX_MAGNITUDE_RATIO < model.budget:
        raise Declined(f"a cost of {model.costs.min() / model.cost_scale:g} against the budget "
                       f"{model.budget / model.cost_scale:g} (a ratio above {MAX_MAGNITUDE_RATIO:g}): {backend} "
                       "cannot state the budget row faithfully next to its tolerances")


def _checked_store(problem: Problem, budget: float, chosen, backend: str) -> np.ndarray:
    """The back-end's store, or :class:`SolverError` when it does not fit the budget exactly.

    A float back-end may return a store over the budget by its feasibility tolerance; that is
    a failure of the back-end on valid data (the caller can try another), never bad input.
    """
    why = infeasibility(problem, chosen, budget)
    if why:
        raise SolverError(f"{backend} returned a store that is not feasible on the exact numbers ({why}); "
                          "its float tolerances admitted it: a back-end failure, not bad input")
    return np.asarray(chosen, dtype=np.int64)


def _unscaled_bound(model: _Model, bound: float) -> float:
    """A back-end's bound on the model's objective, as a bound on F (``inf`` stays ``inf``)."""
    return bound / model.value_scale if math.isfinite(bound) else math.inf


def _trivial(problem, budget, method, settings, started, stats) -> Result:
    """OPT is 0 when no candidate both fits the budget and covers a unit worth something."""
    stats = dict(stats, model_build_seconds=0.0, solve_seconds=0.0, backend_status="not run: empty model")
    return make_result(problem, budget, method=method, settings=settings, chosen=[], status="optimal", bound=0.0,
                       started=started, stats=stats,
                       message="no candidate fits the budget and covers a unit: OPT is 0 without a solve")


def _prepare(problem: Problem, budget: float, method: str, backend: str, version: str, settings: dict,
             started: float, aggregate: bool = False):
    """What every float MILP back-end does before it builds its own model: the recorded ``stats``,
    the reduced model and its objective grid, and the faithfulness check.

    Returns ``(trivial, model, grid, stats)``: ``trivial`` is the Result when no candidate can be
    stored (the caller returns it), else None.  With ``aggregate`` (a back-end whose x may be general
    integers, decoded by :meth:`_Model.store`) a model at scale merges interchangeable groups;
    ``stats["aggregated"]`` records how many columns and groups that left.
    """
    from .scaling import _try_grid   # scaling imports this module

    stats = {"backend": backend, "backend_version": version, "gap_rel": 0.0, "gap_abs": 0.0,
             "random_seed": RANDOM_SEED}
    model = _reduced_model(problem, budget, aggregate=aggregate)
    if model.n_x == 0:
        return _trivial(problem, budget, method, settings, started, stats), model, None, stats
    if model.aggregated:
        counts = model.x_upper > 1
        heads = counts & (model.type_start == np.arange(model.n_x))       # the first column of each type
        stats["aggregated"] = {"n_types": int(heads.sum()), "n_groups_merged": int(model.x_upper[heads].sum()),
                               "n_count_columns": int(counts.sum()), "n_binary_columns": int((~counts).sum())}
    grid = _try_grid(model, settings["integral_y"] and not model.at_scale)
    stats.update(integral_y=grid is not None, y_scale=None if grid is None else grid.y_scale)
    _check_faithful(model, method)
    return None, model, grid, stats


def _hint_columns(problem: Problem, model: _Model, grid: _Grid | None, hint, stats: dict) -> np.ndarray | None:
    """The model's column values (x then y) at the store ``hint``, for a back-end's MIP start; None
    without a hint.  ``stats["warm_start"]`` records the hint's size and value F.

    ``hint`` is a store of the problem (candidate indices, checked feasible by the caller).  A
    candidate dominated inside its group is replaced by its kept dominator (same group, cost no
    higher, coverage or folded value no lower: still a feasible store, worth no less); x is 0/1, or
    for a count column how many of its type's groups store its option (:meth:`_Model.columns_at`);
    the others the reduced
    model dropped cover nothing of value and are left out; each ``y[r]`` is
    set to the least of its cover rows and its upper bound, ``h_r`` at the store's coverage (on the
    grid when there is one), so the columns satisfy every row.  The back-end checks them in its
    own model and only uses them as a first incumbent: its bound is its own.
    """
    if hint is None:
        return None
    store = np.asarray(hint, dtype=np.int64).reshape(-1)
    stats["warm_start"] = {"n_chosen": int(store.size), "value": float(evaluate(problem, store))}
    # a hinted candidate our presolve dropped is replaced by the kept candidate that dominates it
    swap = np.isin(model.replaced, store)
    store = np.concatenate([store, model.replacement[swap]])
    x = model.columns_at(store)
    a, upper = model.matrix(grid)
    _, col_upper = model.columns(grid)
    n_p = model.piece_units.shape[0]
    # a cover row reads y[r] + (x part) <= rhs: y[r] is at most rhs - (x part) at this x
    rows = sp.csr_array(a[a.shape[0] - n_p:])
    room = upper[upper.shape[0] - n_p:] - rows[:, :model.n_x] @ x
    y = col_upper[model.n_x:].copy()
    np.minimum.at(y, model.piece_units, room)
    return np.concatenate([x, np.maximum(y, 0.0)])


def _check_hint(problem: Problem, budget: float, hint) -> np.ndarray | None:
    """``hint`` as sorted candidate indices, or None; a ValueError when it is not a feasible store."""
    if hint is None:
        return None
    try:
        store = np.unique(np.asarray(hint, dtype=np.int64).reshape(-1))
    except (TypeError, ValueError):
        raise ValueError(f"The 'hint' must be a store (candidate indices). Got {hint!r} instead.") from None
    if store.size and (store.min() < 0 or store.max() >= problem.n_candidates):
        raise ValueError(f"The 'hint' has a candidate index outside [0, {problem.n_candidates}).")
    why = infeasibility(problem, store, budget)
    if why:
        raise ValueError(f"The 'hint' must be a feasible store: {why}")
    return store


def _zero_gap(value: float, bound: float) -> bool:
    """True when a back-end's bound is within ``_GAP_RTOL`` of its value, relative (no floor)."""
    return bound - value <= _GAP_RTOL * max(abs(value), abs(bound))
