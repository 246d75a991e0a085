"""Exact MILP back-ends for the same model: HiGHS (highspy), CBC (through PuLP) and OR-Tools CP-SAT."""

from __future__ import annotations

import math
import numbers
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass
from fractions import Fraction
from importlib import metadata

import numpy as np
import scipy.sparse as sp

from .objective import evaluate
from .problem import Problem
from .result import BackendUnavailable, Declined, Result, SolverError, check_budget, make_result

__all__ = ["milp_highs", "milp_cbc", "cpsat", "BACKENDS", "backend_versions"]

#: seed handed to every back-end, so a rerun makes the same choices
RANDOM_SEED = 0

#: relative tolerance on ``bound - value`` below which a zero-gap claim is accepted
_GAP_RTOL = 1e-9

#: CP-SAT data: largest denominator tried for each number, and largest scaled integer accepted
_MAX_DENOMINATOR = 10**6
_MAX_SCALED = 2**40

_INSTALL = {
    "milp-highs": "pip install highspy",
    "milp-cbc": "pip install 'pulp[cbc]'",
    "cpsat": "pip install ortools",
}


# -- settings and the model every back-end states ---------------------------

_NOT_TAKEN = object()


def _check_settings(budget, time_limit, threads, integral_y=_NOT_TAKEN) -> dict:
    """Validate the budget and the settings; return the settings with defaults filled in.

    ``integral_y`` is checked only for the back-ends that take it.
    """
    check_budget(budget)
    if time_limit is not None:
        if (isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real)
                or math.isnan(time_limit) or not time_limit > 0):
            raise ValueError(f"The 'time_limit' must be None or a number of seconds > 0. Got {time_limit!r} instead.")
        time_limit = None if math.isinf(time_limit) else float(time_limit)
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or threads < 1:
        raise ValueError(f"The 'threads' must be an integer >= 1. Got {threads!r} instead.")
    settings = {"time_limit": time_limit, "threads": int(threads)}
    if integral_y is not _NOT_TAKEN:
        if not isinstance(integral_y, (bool, np.bool_)):
            raise ValueError(f"The 'integral_y' must be True or False. Got {integral_y!r} instead.")
        settings["integral_y"] = bool(integral_y)
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
    dropped, as are candidates over the budget or covering nothing of value and
    units no kept candidate covers.
    """

    candidates: np.ndarray        # (n_x,) original index of each x column
    costs: np.ndarray             # (n_x,)
    units: np.ndarray             # (n_y,) original index of each y column
    weights: np.ndarray           # (n_y,)
    y_upper: np.ndarray           # (n_y,) smallest flat piece of h_r, inf if none
    cover: sp.csr_array           # (n_y, n_x) a[u, r] transposed
    piece_units: np.ndarray       # (n_p,) y column of each cover row
    piece_ids: np.ndarray         # (n_p,) original piece index k of each cover row
    piece_slopes: np.ndarray      # (n_p,) > 0
    piece_intercepts: np.ndarray  # (n_p,) < y_upper of the row's unit
    group_ids: np.ndarray         # (n_g,) original group of each one-per-group row
    group_rows: sp.csr_array      # (n_g, n_x) 0/1
    budget: float
    budget_row: bool              # False when every store of kept candidates fits

    @property
    def n_x(self) -> int:
        return int(self.candidates.shape[0])

    @property
    def n_y(self) -> int:
        return int(self.units.shape[0])

    def cover_row_names(self) -> list[str]:
        return [f"cover_{r}_piece_{k}" for r, k in zip(self.units[self.piece_units].tolist(), self.piece_ids.tolist())]

    def row_names(self) -> list[str]:
        names = ["budget"] if self.budget_row else []
        names += [f"one_per_group_{g}" for g in self.group_ids.tolist()]
        return names + self.cover_row_names()

    def column_names(self) -> list[str]:
        return [f"x_{u}" for u in self.candidates.tolist()] + [f"y_{r}" for r in self.units.tolist()]

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
        blocks, upper = [], []
        if self.budget_row:
            blocks.append([sp.csr_array(self.costs.reshape(1, n_x)), sp.csr_array((1, n_y))])
            upper.append([self.budget])
        if self.group_ids.size:
            blocks.append([self.group_rows, sp.csr_array((self.group_ids.size, n_y))])
            upper.append(np.ones(self.group_ids.size))
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
        return np.concatenate([np.zeros(self.n_x), y_cost]), np.concatenate([np.ones(self.n_x), y_upper])


def _reduced_model(problem: Problem, budget: float) -> _Model:
    """Keep the candidates that fit the budget and cover a unit worth something, and those units."""
    n_units = problem.n_units
    flat = problem.h_slopes == 0
    y_upper_all = np.where(flat, problem.h_intercepts, np.inf).min(axis=1) if n_units else np.zeros(0)
    fits = np.flatnonzero(problem.costs <= budget)
    cov_fits = problem.coverage[fits]
    covered = np.zeros(n_units, dtype=bool)
    covered[cov_fits.indices[cov_fits.data > 0]] = True
    units = np.flatnonzero(covered & (y_upper_all > 0))
    sub = sp.csr_array(cov_fits[:, units])
    sub.eliminate_zeros()
    useful = np.diff(sub.indptr) > 0
    candidates = fits[useful]
    a = sp.csr_array(sub[np.flatnonzero(useful)])
    cover = sp.csr_array(a.T)
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

    groups = problem.groups[candidates]
    counts = np.bincount(groups, minlength=problem.n_groups)
    multi = np.flatnonzero(counts[groups] >= 2)
    group_ids, row_of = np.unique(groups[multi], return_inverse=True)
    group_rows = sp.csr_array((np.ones(multi.size), (row_of.reshape(-1), multi)),
                              shape=(group_ids.size, candidates.size))

    costs = problem.costs[candidates]
    group_max = np.zeros(problem.n_groups)
    np.maximum.at(group_max, groups, costs)
    return _Model(candidates=candidates, costs=costs, units=units, weights=problem.weights[units],
                  y_upper=y_upper, cover=cover, piece_units=pu, piece_ids=pk, piece_slopes=ps,
                  piece_intercepts=pb, group_ids=group_ids, group_rows=group_rows, budget=float(budget),
                  budget_row=bool(group_max.sum() > budget))


def _trivial(problem, budget, method, settings, started, stats) -> Result:
    """OPT is 0 when no candidate both fits the budget and covers a unit worth something."""
    stats = dict(stats, model_build_seconds=0.0, solve_seconds=0.0, backend_status="not run: empty model")
    return make_result(problem, budget, method=method, settings=settings, chosen=[], status="optimal", bound=0.0,
                       started=started, stats=stats,
                       message="no candidate fits the budget and covers a unit: OPT is 0 without a solve")


def _zero_gap(value: float, bound: float) -> bool:
    return bound - value <= _GAP_RTOL * max(1.0, abs(value))


# -- exact integer data (the grid of h, CP-SAT's scaling) ---------------------------

def _fractions(values: np.ndarray, describe) -> dict[float, Fraction]:
    """Each distinct value as a small-integer ratio, or raise :class:`Declined` naming the first that is not."""
    out = {}
    uniq, first = np.unique(np.asarray(values, dtype=float), return_index=True)
    for v, i in zip(uniq.tolist(), first.tolist()):
        f = Fraction(v).limit_denominator(_MAX_DENOMINATOR)
        if float(f) != v:   # exact: the nearest float of the ratio must be v itself
            raise Declined(f"{describe(i, v)} is not a ratio of small integers; CP-SAT needs data that scale "
                           "exactly to integers — use milp-highs or milp-cbc")
        out[v] = f
    return out


def _lcm_of_denominators(fracs) -> int:
    scale = 1
    for f in fracs:
        scale = math.lcm(scale, f.denominator)
    return scale


def _scaled_ints(values: np.ndarray, as_int, what: str) -> np.ndarray:
    """Map each distinct value through ``as_int`` (exact Python ints) and check the magnitude."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    uniq, inverse = np.unique(values, return_inverse=True)
    ints = [as_int(v) for v in uniq.tolist()]
    big = max(abs(i) for i in ints)
    if big > _MAX_SCALED:
        raise Declined(f"{what} scale to integers as large as {big} > 2**40; CP-SAT would risk overflow "
                       "— use milp-highs or milp-cbc")
    return np.array(ints, dtype=np.int64)[inverse.reshape(-1)]


@dataclass(frozen=True)
class _Grid:
    """The cover rows in integers: ``Y[r] = y_scale * y[r]`` is integral at every optimum.

    ``Y[r] - sum_u coefs * x[u] <= intercepts`` with integer data, so for any
    binary x the largest feasible ``Y[r]`` is an integer: declaring Y integer
    loses no store and lets a solver use the objective's grid to close its gap.
    """

    y_scale: int
    x_part: sp.csr_array     # (n_p, n_x) a[u, r] of each cover row; only its pattern is used
    coefs: np.ndarray        # (nnz,) y_scale * slope * a[u, r], aligned with x_part.indices
    intercepts: np.ndarray   # (n_p,) y_scale * intercept
    y_upper: np.ndarray      # (n_y,) largest value Y[r] can reach
    weights: dict            # distinct weight -> Fraction, for the objective scale


def _grid(model: _Model) -> _Grid:
    """Scale the cover rows exactly to integers, or raise :class:`Declined` saying which data cannot be."""
    cover = model.cover  # (n_y, n_x)
    nz_unit = np.repeat(np.arange(model.n_y), np.diff(cover.indptr))
    fa = _fractions(cover.data, lambda i, v: f"coverage value {v!r} of candidate {model.candidates[cover.indices[i]]} "
                                             f"on unit {model.units[nz_unit[i]]}")

    def piece(i):
        return f"unit {model.units[model.piece_units[i]]} (piece {model.piece_ids[i]})"

    fs = _fractions(model.piece_slopes, lambda i, v: f"h slope {v!r} of {piece(i)}")
    fb = _fractions(model.piece_intercepts, lambda i, v: f"h intercept {v!r} of {piece(i)}")
    finite_cap = np.isfinite(model.y_upper)
    fu = _fractions(model.y_upper[finite_cap], lambda i, v: f"h cap {v!r} of unit {model.units[finite_cap][i]}")
    fw = _fractions(model.weights, lambda i, v: f"weight {v!r} of unit {model.units[i]}")

    x_part = sp.csr_array(cover[model.piece_units])
    x_part.sort_indices()
    row_ids = np.repeat(np.arange(x_part.shape[0]), np.diff(x_part.indptr))
    pairs = np.column_stack([model.piece_slopes[row_ids], x_part.data])
    uniq_pairs, pair_inverse = (np.unique(pairs, axis=0, return_inverse=True) if len(pairs)
                                else (np.zeros((0, 2)), np.zeros(0, dtype=np.int64)))
    products = [fs[s] * fa[a] for s, a in uniq_pairs.tolist()]
    y_scale = _lcm_of_denominators(products + list(fb.values()) + list(fu.values()))
    if y_scale > _MAX_SCALED:
        raise Declined(f"the scale needed to make the h values integer is {y_scale} > 2**40; CP-SAT would risk "
                       "overflow — use milp-highs or milp-cbc")
    prod_ints = [int(p * y_scale) for p in products]
    if prod_ints and max(prod_ints) > _MAX_SCALED:
        raise Declined("cover coefficients scale to integers above 2**40 — use milp-highs or milp-cbc")
    coefs = np.array(prod_ints, dtype=np.int64)[pair_inverse.reshape(-1)]
    intercepts = _scaled_ints(model.piece_intercepts, lambda v: int(fb[v] * y_scale), "h intercepts")

    # Y[r] can reach at most min over its pieces of (intercept + sum of its coefficients), and its cap
    row_sums = np.zeros(x_part.shape[0], dtype=np.int64)
    np.add.at(row_sums, row_ids, coefs)
    reach = np.full(model.n_y, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(reach, model.piece_units, intercepts + row_sums)
    caps = _scaled_ints(model.y_upper[finite_cap], lambda v: int(fu[v] * y_scale), "h caps")
    y_upper = reach.copy()
    y_upper[finite_cap] = np.minimum(reach[finite_cap], caps)
    if y_upper.size and int(y_upper.max()) > _MAX_SCALED:
        raise Declined("h values scale to integers above 2**40 — use milp-highs or milp-cbc")
    return _Grid(y_scale=y_scale, x_part=x_part, coefs=coefs, intercepts=intercepts, y_upper=y_upper, weights=fw)


def _try_grid(model: _Model, wanted: bool) -> _Grid | None:
    """The integer cover rows when wanted and the data allow them, else None (y stays continuous)."""
    if not wanted:
        return None
    try:
        return _grid(model)
    except Declined:
        return None


@dataclass(frozen=True)
class _Scaled:
    """All-integer data for CP-SAT: F = objective . Y / value_scale."""

    grid: _Grid
    costs: np.ndarray        # (n_x,) cost_scale * c (zeros when there is no budget row)
    budget: int              # floor(cost_scale * B), snapped when within round-off of an integer
    objective: np.ndarray    # (n_y,) value_scale * w / y_scale
    cost_scale: int
    value_scale: int


def _scale_for_cpsat(model: _Model) -> _Scaled:
    """Scale the whole reduced model exactly to integers, or raise :class:`Declined`."""
    grid = _grid(model)
    # costs enter only through the budget row
    fc = _fractions(model.costs if model.budget_row else np.zeros(0),
                    lambda i, v: f"cost {v!r} of candidate {model.candidates[i]}")
    value_scale = _lcm_of_denominators([f / grid.y_scale for f in grid.weights.values()])
    cost_scale = _lcm_of_denominators(fc.values())
    for what, scale in (("value", value_scale), ("cost", cost_scale)):
        if scale > _MAX_SCALED:
            raise Declined(f"the {what} scale needed to make the data integer is {scale} > 2**40; CP-SAT would risk "
                           "overflow — use milp-highs or milp-cbc")
    objective = _scaled_ints(model.weights, lambda v: int(grid.weights[v] * value_scale / grid.y_scale), "weights")
    if float(np.dot(objective.astype(float), grid.y_upper.astype(float))) > 2.0**53:
        raise Declined("the scaled objective can exceed 2**53 — use milp-highs or milp-cbc")
    costs = (_scaled_ints(model.costs, lambda v: int(fc[v] * cost_scale), "costs") if model.budget_row
             else np.zeros(model.n_x, dtype=np.int64))

    b = model.budget * cost_scale
    total = int(costs.sum())
    if not math.isfinite(b) or b >= total:
        budget_int = total
    else:
        nearest = round(b)
        budget_int = int(nearest) if abs(b - nearest) <= 1e-9 * max(1.0, abs(b)) else math.floor(b)
    return _Scaled(grid=grid, costs=costs, budget=budget_int, objective=objective, cost_scale=cost_scale,
                   value_scale=value_scale)


# -- versions and imports -----------------------------------------------------------

def _dist_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def backend_versions() -> dict[str, str]:
    """Installed version of the package behind each back-end.

    Reads package metadata only: nothing heavy is imported.

    Returns
    -------
    dict
        ``{method name: version string}``; a missing package reads ``"not installed"``.

    Examples
    --------
    >>> sorted(backend_versions())
    ['cpsat', 'milp-cbc', 'milp-highs']
    """
    return {
        "milp-highs": f"highspy {_dist_version('highspy')}",
        "milp-cbc": f"pulp {_dist_version('pulp')}, cbcbox {_dist_version('cbcbox')}",
        "cpsat": f"ortools {_dist_version('ortools')}",
    }


def _unavailable(method: str, what: str, err: Exception) -> BackendUnavailable:
    return BackendUnavailable(f"{method} needs {what}, which is not installed ({err}): {_INSTALL[method]}")


# -- HiGHS --------------------------------------------------------------------

_HIGHS_LOCK = threading.Lock()
_HIGHS_SCHEDULER_THREADS: list = [None]


def _new_silent_highs(highspy):
    """A Highs instance that has printed nothing.

    ``highspy.Highs()`` registers its callbacks in the constructor, which prints
    the "Running HiGHS" banner to stdout before ``output_flag`` can be set
    (HiGHS issues #1702, #2749).  Its base class ``_Highs`` does not, so use
    it when present and switch the output off before anything else.
    """
    cls = getattr(getattr(highspy, "_core", None), "_Highs", None) or highspy.Highs
    h = cls()
    h.setOptionValue("output_flag", False)
    return h


def _run_highs(h, threads: int):
    """Run, restarting HiGHS's process-wide thread scheduler when the thread count changes.

    The scheduler is created on the first run with that run's ``threads`` and a
    later run asking for another count fails with kError until it is reset.
    """
    with _HIGHS_LOCK:
        if _HIGHS_SCHEDULER_THREADS[0] != threads:
            h.resetGlobalScheduler(True)
            _HIGHS_SCHEDULER_THREADS[0] = threads
        status = h.run()
        if status.name == "kError" and h.getModelStatus().name == "kNotset":
            # other code in this process may have started the scheduler with another count
            h.resetGlobalScheduler(True)
            status = h.run()
        return status


def _highs_lp(highspy, model: _Model, grid: _Grid | None):
    a, upper = model.matrix(grid)
    cost, col_upper = model.columns(grid)
    n_col = model.n_x + model.n_y
    lp = highspy.HighsLp()
    lp.num_col_ = n_col
    lp.num_row_ = a.shape[0]
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.col_cost_ = cost
    lp.col_lower_ = np.zeros(n_col)
    lp.col_upper_ = np.where(np.isinf(col_upper), highspy.kHighsInf, col_upper)
    lp.row_lower_ = np.full(a.shape[0], -highspy.kHighsInf)
    lp.row_upper_ = upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = n_col
    lp.a_matrix_.num_row_ = a.shape[0]
    lp.a_matrix_.start_ = a.indptr.astype(np.int32)
    lp.a_matrix_.index_ = a.indices.astype(np.int32)
    lp.a_matrix_.value_ = a.data.astype(float)
    y_type = highspy.HighsVarType.kContinuous if grid is None else highspy.HighsVarType.kInteger
    lp.integrality_ = [highspy.HighsVarType.kInteger] * model.n_x + [y_type] * model.n_y
    lp.col_names_ = model.column_names()
    lp.row_names_ = model.row_names()
    return lp


def milp_highs(problem: Problem, budget: float, /, *, time_limit: float | None = None, threads: int = 1,
               integral_y: bool = True) -> Result:
    """Solve exactly with HiGHS (through highspy), proving optimality with a zero gap.

    Parameters
    ----------
    problem : Problem
    budget : float
        Storage limit B >= 0.
    time_limit : float or None, optional
        Wall-clock seconds for HiGHS; ``None`` means no limit.
    threads : int, optional
        HiGHS ``threads`` option (default 1).
    integral_y : bool, optional
        When the data scale exactly to integers (as for CP-SAT), state each
        ``y[r]`` as an integer ``Y[r] = y_scale * y[r]`` (default True).  This
        is exact, since ``y_scale * h_r`` is an integer at every store, and it
        hands the solver the objective's grid: without it the bound can stall
        just above the optimum.  Data that do not scale keep ``y`` continuous;
        ``stats["integral_y"]`` and ``stats["y_scale"]`` say which form ran.

    Returns
    -------
    Result
        ``optimal`` when HiGHS reports kOptimal with ``mip_gap`` 0 or its
        ``mip_dual_bound`` within 1e-9 relative of its objective
        (``mip_rel_gap = mip_abs_gap = 0``); ``timeout`` with the best store
        found (possibly empty) and ``mip_dual_bound`` when the time limit stops
        it.  ``stats`` records the back-end, its version, the gaps and the
        reported ``mip_gap`` / ``mip_dual_bound``.

    Raises
    ------
    ValueError
        A bad budget or setting.
    BackendUnavailable
        highspy is not installed.
    SolverError
        HiGHS fails or ends in any other state.

    Examples
    --------
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> r = milp_highs(p, 4)
    >>> r.status, r.value, r.bound
    ('optimal', 2.5, 2.5)
    """
    started = time.perf_counter()
    settings = _check_settings(budget, time_limit, threads, integral_y)
    try:
        import highspy
    except ImportError as err:
        raise _unavailable("milp-highs", "highspy", err) from err
    stats = {"backend": "highs", "backend_version": f"highspy {_dist_version('highspy')}",
             "gap_rel": 0.0, "gap_abs": 0.0, "random_seed": RANDOM_SEED}
    t0 = time.perf_counter()
    model = _reduced_model(problem, budget)
    if model.n_x == 0:
        return _trivial(problem, budget, "milp-highs", settings, started, stats)
    grid = _try_grid(model, settings["integral_y"])
    stats.update(integral_y=grid is not None, y_scale=None if grid is None else grid.y_scale)
    h = _new_silent_highs(highspy)
    options = {"mip_rel_gap": 0.0, "mip_abs_gap": 0.0, "threads": settings["threads"], "random_seed": RANDOM_SEED}
    if settings["time_limit"] is not None:
        options["time_limit"] = settings["time_limit"]
    for name, value in options.items():
        if h.setOptionValue(name, value) != highspy.HighsStatus.kOk:
            raise SolverError(f"HiGHS rejected option {name} = {value!r}")
    if h.passModel(_highs_lp(highspy, model, grid)) == highspy.HighsStatus.kError:
        raise SolverError("HiGHS rejected the model (passModel returned kError)")
    t1 = time.perf_counter()
    run_status = _run_highs(h, settings["threads"])
    t2 = time.perf_counter()
    model_status = h.getModelStatus()
    info = h.getInfo()
    stats.update(model_build_seconds=t1 - t0, solve_seconds=t2 - t1, backend_status=h.modelStatusToString(model_status),
                 n_variables=model.n_x + model.n_y, n_constraints=int(h.getNumRow()),
                 mip_node_count=int(info.mip_node_count), mip_gap=float(info.mip_gap),
                 mip_dual_bound=float(info.mip_dual_bound), objective=float(info.objective_function_value))
    if run_status == highspy.HighsStatus.kError:
        raise SolverError(f"HiGHS failed: run returned kError with model status {stats['backend_status']!r}")
    has_solution = info.primal_solution_status == highspy.kSolutionStatusFeasible
    chosen = []
    if has_solution:
        x = np.asarray(h.getSolution().col_value, dtype=float)[:model.n_x]
        chosen = model.candidates[x > 0.5]
    bound = float(info.mip_dual_bound)
    bound = math.inf if not math.isfinite(bound) else bound
    if model_status == highspy.HighsModelStatus.kOptimal and has_solution:
        value = float(info.objective_function_value)
        if info.mip_gap == 0 or _zero_gap(value, bound):
            return make_result(problem, budget, method="milp-highs", settings=settings, chosen=chosen,
                               status="optimal", bound=bound, started=started, stats=stats,
                               message="HiGHS proved optimality with a zero gap")
        return make_result(problem, budget, method="milp-highs", settings=settings, chosen=chosen, status="feasible",
                           bound=bound, started=started, stats=stats,
                           message=f"HiGHS stopped as optimal with a nonzero gap {info.mip_gap:g}: not proven")
    if model_status == highspy.HighsModelStatus.kTimeLimit:
        return make_result(problem, budget, method="milp-highs", settings=settings, chosen=chosen, status="timeout",
                           bound=bound, started=started, stats=stats,
                           message=f"HiGHS reached the time limit of {settings['time_limit']:g} s"
                                   + ("" if has_solution else " without a store; returning the empty store"))
    raise SolverError(f"HiGHS ended with model status {stats['backend_status']!r}; "
                      "the empty store is feasible, so this is a back-end failure")


# -- CBC through PuLP -----------------------------------------------------------

#: CBC's end-of-run summary; the bound of a maximisation is its "Upper bound" line
_CBC_SUMMARY_BOUND = re.compile(r"^Upper bound:\s*(\S+)\s*$", re.MULTILINE)
_CBC_STOPPED_ON_TIME = re.compile(r"^Result - Stopped on time", re.MULTILINE)


def _cbc_log_bound(log: str) -> float:
    """The dual bound CBC printed at the end of its log, or ``inf`` when there is none."""
    found = _CBC_SUMMARY_BOUND.findall(log)
    try:
        bound = float(found[-1]) if found else math.inf
    except ValueError:
        return math.inf
    return bound if math.isfinite(bound) else math.inf


def _cbc_problem(pulp, model: _Model, grid: _Grid | None = None):
    """The PuLP model: returns (problem, x variables in column order, number of rows)."""
    prob = pulp.LpProblem("memaudit", pulp.LpMaximize)
    x = prob.add_variable_dicts("x", model.candidates.tolist(), 0, 1, pulp.LpBinary)
    y = prob.add_variable_dicts("y", model.units.tolist(), 0, None,
                                pulp.LpContinuous if grid is None else pulp.LpInteger)
    xs = [x[u] for u in model.candidates.tolist()]
    ys = [y[r] for r in model.units.tolist()]
    cost, col_upper = model.columns(grid)
    for var, ub in zip(ys, col_upper[model.n_x:].tolist()):
        if math.isfinite(ub):
            var.upBound = ub
    columns = xs + ys
    a, upper = model.matrix(grid)
    indptr, indices, data = a.indptr.tolist(), a.indices.tolist(), a.data.tolist()
    le = pulp.LpConstraintLE
    for i, (name, rhs) in enumerate(zip(model.row_names(), upper.tolist())):
        s, e = indptr[i], indptr[i + 1]
        expr = pulp.LpAffineExpression(zip([columns[j] for j in indices[s:e]], data[s:e]))
        prob.addConstraint(pulp.LpConstraint(expr, sense=le, name=name, rhs=rhs))
    prob.setObjective(pulp.LpAffineExpression(zip(ys, cost[model.n_x:].tolist())))
    return prob, xs, a.shape[0]


def milp_cbc(problem: Problem, budget: float, /, *, time_limit: float | None = None, threads: int = 1,
             integral_y: bool = True) -> Result:
    """Solve exactly with CBC through PuLP (``pulp.COIN_CMD`` on the cbcbox binary).

    Parameters
    ----------
    problem : Problem
    budget : float
        Storage limit B >= 0.
    time_limit : float or None, optional
        Wall-clock seconds for CBC (``-sec``); ``None`` means no limit.
    threads : int, optional
        CBC ``-threads`` (default 1).
    integral_y : bool, optional
        When the data scale exactly to integers (as for CP-SAT), state each
        ``y[r]`` as an integer ``Y[r] = y_scale * y[r]`` (default True).  This
        is exact, since ``y_scale * h_r`` is an integer at every store, and it
        hands the solver the objective's grid: without it the bound can stall
        just above the optimum.  Data that do not scale keep ``y`` continuous;
        ``stats["integral_y"]`` and ``stats["y_scale"]`` say which form ran.

    Returns
    -------
    Result
        ``optimal`` only when PuLP's ``sol_status`` is ``LpSolutionOptimal``
        (``gapRel = gapAbs = 0``); PuLP's ``status`` can read Optimal after a
        time-out and is not trusted.  A time-out returns ``timeout`` with the
        best store found (possibly empty) and the bound CBC logs, or ``inf``
        when its log shows none.

    Raises
    ------
    ValueError
        A bad budget or setting.
    BackendUnavailable
        PuLP or cbcbox is not installed.
    SolverError
        CBC fails or ends in any other state.

    Examples
    --------
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> r = milp_cbc(p, 4)
    >>> r.status, r.value, r.bound
    ('optimal', 2.5, 2.5)
    """
    started = time.perf_counter()
    settings = _check_settings(budget, time_limit, threads, integral_y)
    try:
        import cbcbox
        import pulp
    except ImportError as err:
        raise _unavailable("milp-cbc", "PuLP with the cbcbox CBC binary", err) from err
    stats = {"backend": "cbc", "backend_version": backend_versions()["milp-cbc"],
             "gap_rel": 0.0, "gap_abs": 0.0, "random_seed": RANDOM_SEED}
    t0 = time.perf_counter()
    model = _reduced_model(problem, budget)
    if model.n_x == 0:
        return _trivial(problem, budget, "milp-cbc", settings, started, stats)
    grid = _try_grid(model, settings["integral_y"])
    stats.update(integral_y=grid is not None, y_scale=None if grid is None else grid.y_scale)
    prob, xs, n_rows = _cbc_problem(pulp, model, grid)
    path = cbcbox.cbc_bin_path()
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memaudit-cbc-") as tmp:
        log_path = os.path.join(tmp, "cbc.log")
        solver = pulp.COIN_CMD(path=path, msg=False, gapRel=0, gapAbs=0, timeLimit=settings["time_limit"],
                               threads=settings["threads"], logPath=log_path)
        try:
            prob.solve(solver)
        except pulp.PulpSolverError as err:
            raise SolverError(f"CBC failed: {err}") from err
        try:
            with open(log_path, encoding="utf-8", errors="replace") as f:
                log = f.read()
        except OSError:
            log = ""
    t2 = time.perf_counter()
    sol_status = prob.sol_status
    stats.update(model_build_seconds=t1 - t0, solve_seconds=t2 - t1,
                 backend_status=f"{pulp.LpStatus.get(prob.status, prob.status)} / "
                                f"{pulp.LpSolution.get(sol_status, sol_status)}",
                 n_variables=model.n_x + model.n_y, n_constraints=n_rows,
                 sol_status=int(sol_status), cbc_path=path)
    log_bound = _cbc_log_bound(log)
    stats["log_bound"] = log_bound
    timed_out = bool(_CBC_STOPPED_ON_TIME.search(log))

    def chosen_now():
        return model.candidates[np.array([(v.varValue or 0.0) > 0.5 for v in xs], dtype=bool)]

    if sol_status == pulp.LpSolutionOptimal:
        return make_result(problem, budget, method="milp-cbc", settings=settings, chosen=chosen_now(),
                           status="optimal", bound=None, started=started, stats=stats,
                           message="CBC proved optimality with gapRel = gapAbs = 0")
    if sol_status == pulp.LpSolutionIntegerFeasible or (
            sol_status == pulp.LpSolutionNoSolutionFound and prob.status == pulp.LpStatusNotSolved):
        chosen = chosen_now() if sol_status == pulp.LpSolutionIntegerFeasible else []
        # a bound read from a log is advisory: one below the store's own value is discarded, not trusted
        bound = log_bound
        if bound < evaluate(problem, chosen) - 1e-6 * max(1.0, abs(bound)):
            bound = math.inf
        status = "timeout" if settings["time_limit"] is not None else "feasible"
        return make_result(problem, budget, method="milp-cbc", settings=settings, chosen=chosen, status=status,
                           bound=bound, started=started, stats=stats,
                           message=("CBC stopped before proving optimality"
                                    + (f" (time limit {settings['time_limit']:g} s)" if timed_out else "")
                                    + ("" if len(chosen) else "; returning the empty store")))
    raise SolverError(f"CBC ended with {stats['backend_status']!r}; the empty store is feasible, "
                      "so this is a back-end failure")


# -- CP-SAT -------------------------------------------------------------------

def cpsat(problem: Problem, budget: float, /, *, time_limit: float | None = None, threads: int = 1) -> Result:
    """Solve exactly with OR-Tools CP-SAT on the model scaled exactly to integers.

    Every coverage value, h piece and weight that enters the model (and every
    cost, when the budget can bind) must be a ratio of small integers
    (denominator <= 10**6, reproduced within 1e-12 relative); the model is
    multiplied by the smallest integer scales that make it integral (the
    budget is floored after scaling the costs) and the objective and its bound
    are divided back.  Runs with ``linearization_level = 2`` (the default presolve
    drops the coverage rows from CP-SAT's LP) and zero gap limits.

    Parameters
    ----------
    problem : Problem
    budget : float
        Storage limit B >= 0.
    time_limit : float or None, optional
        ``max_time_in_seconds``; ``None`` means no limit.
    threads : int, optional
        ``num_workers`` (default 1).

    Returns
    -------
    Result
        ``optimal`` only when CP-SAT reports OPTIMAL; ``timeout`` with the
        best store found (possibly empty) and the bound when the time limit
        stops it.  ``stats`` records the scales used.

    Raises
    ------
    ValueError
        A bad budget or setting.
    Declined
        The data do not scale exactly to integers of a safe size; the message
        names the value and suggests milp-highs or milp-cbc.
    BackendUnavailable
        OR-Tools is not installed.
    SolverError
        CP-SAT rejects the model or ends in any other state.

    Examples
    --------
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> r = cpsat(p, 4)
    >>> r.status, r.value, r.bound
    ('optimal', 2.5, 2.5)
    """
    started = time.perf_counter()
    settings = _check_settings(budget, time_limit, threads)
    try:
        from ortools.sat.python import cp_model
    except ImportError as err:
        raise _unavailable("cpsat", "OR-Tools", err) from err
    stats = {"backend": "cp-sat", "backend_version": backend_versions()["cpsat"],
             "gap_rel": 0.0, "gap_abs": 0.0, "random_seed": RANDOM_SEED, "linearization_level": 2}
    t0 = time.perf_counter()
    model = _reduced_model(problem, budget)
    if model.n_x == 0:
        return _trivial(problem, budget, "cpsat", settings, started, stats)
    scaled = _scale_for_cpsat(model)
    grid = scaled.grid
    stats.update(cost_scale=scaled.cost_scale, y_scale=grid.y_scale, value_scale=scaled.value_scale)

    m = cp_model.CpModel()
    lin = cp_model.LinearExpr
    xs = [m.new_bool_var(f"x_{u}") for u in model.candidates.tolist()]
    ys = [m.new_int_var(0, ub, f"y_{r}") for r, ub in zip(model.units.tolist(), grid.y_upper.tolist())]
    if model.budget_row:
        m.add(lin.weighted_sum(xs, scaled.costs.tolist()) <= scaled.budget).with_name("budget")
    gr = model.group_rows
    g_ptr, g_idx = gr.indptr.tolist(), gr.indices.tolist()
    for i, g in enumerate(model.group_ids.tolist()):
        m.add_at_most_one([xs[j] for j in g_idx[g_ptr[i]:g_ptr[i + 1]]]).with_name(f"one_per_group_{g}")
    xp = grid.x_part
    ptr, idx, coefs = xp.indptr.tolist(), xp.indices.tolist(), grid.coefs.tolist()
    names = model.cover_row_names()
    for i, (r, rhs) in enumerate(zip(model.piece_units.tolist(), grid.intercepts.tolist())):
        s, e = ptr[i], ptr[i + 1]
        expr = lin.weighted_sum([ys[r]] + [xs[j] for j in idx[s:e]], [1] + [-c for c in coefs[s:e]])
        m.add(expr <= rhs).with_name(names[i])
    m.maximize(lin.weighted_sum(ys, scaled.objective.tolist()))

    solver = cp_model.CpSolver()
    params = solver.parameters
    params.num_workers = settings["threads"]
    params.linearization_level = 2
    params.relative_gap_limit = 0.0
    params.absolute_gap_limit = 0.0
    params.random_seed = RANDOM_SEED
    if settings["time_limit"] is not None:
        params.max_time_in_seconds = settings["time_limit"]
    t1 = time.perf_counter()
    status = solver.solve(m)
    t2 = time.perf_counter()
    stats.update(model_build_seconds=t1 - t0, solve_seconds=t2 - t1, backend_status=solver.status_name(status),
                 n_variables=len(xs) + len(ys), n_constraints=len(m.proto.constraints),
                 num_branches=int(solver.num_branches), num_conflicts=int(solver.num_conflicts))
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN):
        has_solution = status != cp_model.UNKNOWN
        chosen = []
        if has_solution:
            chosen = model.candidates[np.array([solver.boolean_value(v) for v in xs], dtype=bool)]
        # without a solution CP-SAT reports a bound of 0, which proves nothing
        bound = float(solver.best_objective_bound) / scaled.value_scale if has_solution else math.inf
        if not math.isfinite(bound):
            bound = math.inf
        stats["objective_scaled"] = float(solver.objective_value) if has_solution else None
        stats["bound_scaled"] = float(solver.best_objective_bound) if has_solution else None
        if status == cp_model.OPTIMAL:
            return make_result(problem, budget, method="cpsat", settings=settings, chosen=chosen, status="optimal",
                               bound=bound, started=started, stats=stats,
                               message="CP-SAT proved optimality on the exactly scaled model")
        return make_result(problem, budget, method="cpsat", settings=settings, chosen=chosen,
                           status="timeout" if settings["time_limit"] is not None else "feasible",
                           bound=bound, started=started, stats=stats,
                           message="CP-SAT stopped before proving optimality"
                                   + ("" if has_solution else "; returning the empty store"))
    detail = m.validate() if status == cp_model.MODEL_INVALID else ""
    raise SolverError(f"CP-SAT ended with status {solver.status_name(status)}" + (f": {detail}" if detail else "")
                      + "; the empty store is feasible, so this is a back-end failure")


#: every exact MILP back-end by its method name
BACKENDS = {"milp-highs": milp_highs, "milp-cbc": milp_cbc, "cpsat": cpsat}
