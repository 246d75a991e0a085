"""HiGHS (highspy) back-end."""

from __future__ import annotations

import threading
import time

import numpy as np

from ..problem import Problem
from ..result import Result, SolverError, make_result
from .model import (FEASIBILITY_TOL, RANDOM_SEED, _check_hint, _checked_store, _check_settings, _hint_columns, _Model, _prepare, _unscaled_bound, _zero_gap)
from .scaling import _Grid, _grid_gap, _grid_message
from .versions import _dist_version, _unavailable

#: HiGHS's ``mip_feasibility_tolerance`` (its integrality tolerance).  At 1e-10, the primal tolerance's value,
#: HiGHS 1.16 "proved" 87.8634 on ``summary_problem(211, 208871, window=7, restate=0.88,
#: coverage_decimals=1)`` at 5 % where bnb, SCIP and CP-SAT prove 87.8801 (a store within the budget);
#: from 1e-9 up it proves 87.8801.  The store HiGHS returns is rounded and checked exactly either way.
INTEGRALITY_TOL = 1e-9

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


#: HiGHS's primal heuristics, switched off at scale when a MIP start is given
_HEURISTICS_OFF = {"mip_heuristic_effort": 0.0, "mip_heuristic_run_rins": False, "mip_heuristic_run_rens": False,
                   "mip_heuristic_run_root_reduced_cost": False}


def _scale_options(model: _Model, has_start: bool) -> dict:
    """HiGHS options for a model at scale (``_Model.at_scale``: ``SCALE_COLUMNS`` columns or more before
    the fold); none below that size.

    Measured on ``random_problem`` at 10,000-100,000 experiences (docs/backends.md): HiGHS's own
    presolve took 1-3 s at 10,000 experiences and its restarts after reduced-cost fixing re-ran it up
    to four times, where without it the root LP and its cuts close the gap in one node; the dual
    simplex needed 76 s for the root LP at 100,000 experiences and the interior-point solver 10-16 s
    (``mip_lp_solver = ipm``, its crossover gives the basis the cuts need).  The feasibility jump
    heuristic is off (the empty store is always feasible; with it a 60 s limit was overrun by 744 s at
    100,000 experiences), and with a MIP start the other primal heuristics too: the start is the
    store to beat, and they took most of the time at 10,000 experiences.  None of these options
    touches the proof: the bound is HiGHS's own, from its own model.

    An aggregated model (interchangeable groups merged into count columns, ``_Model.aggregated``)
    keeps HiGHS's presolve: with it HiGHS proved ``random_problem(10000, 1)`` and ``(10000, 2)`` at
    5 % in 6-17 s where without it neither was proved in 60 s (docs/backends.md).  :func:`milp_highs`
    runs such a model's root without presolve first (most close there) and these options only
    when the root leaves a gap.
    """
    if not model.at_scale:
        return {}
    options: dict = {"mip_lp_solver": "ipm", "mip_heuristic_run_feasibility_jump": False}
    if not model.aggregated:
        options["presolve"] = "off"
    if has_start:
        options.update(_HEURISTICS_OFF)
    return options


def _solve_highs(highspy, lp, settings: dict, started: float, presolve: bool = True, start=None,
                 abs_gap: float = 0.0, extra: dict | None = None):
    """A fresh silent HiGHS run on ``lp``: returns (the Highs object, its run status).

    The time limit counts from ``started``, so a second run gets only what is left.  ``start``
    (column values, or None) is handed to HiGHS as a MIP start (``setSolution``); ``abs_gap`` is
    ``mip_abs_gap`` (0, or just under one step of the objective's grid: see :func:`milp_highs`);
    ``extra`` are further options (:func:`_scale_options`).
    """
    h = _new_silent_highs(highspy)
    options = {"mip_rel_gap": 0.0, "mip_abs_gap": abs_gap, "threads": settings["threads"], "random_seed": RANDOM_SEED,
               "primal_feasibility_tolerance": FEASIBILITY_TOL, "mip_feasibility_tolerance": INTEGRALITY_TOL,
               **(extra or {})}
    if not presolve:
        options["presolve"] = "off"
    if settings["time_limit"] is not None:
        options["time_limit"] = max(settings["time_limit"] - (time.perf_counter() - started), 1e-3)
    for name, value in options.items():
        if h.setOptionValue(name, value) != highspy.HighsStatus.kOk:
            raise SolverError(f"HiGHS rejected option {name} = {value!r}")
    if h.passModel(lp) == highspy.HighsStatus.kError:
        raise SolverError("HiGHS rejected the model (passModel returned kError)")
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = start.tolist()
        sol.value_valid = True
        if h.setSolution(sol) == highspy.HighsStatus.kError:
            raise SolverError("HiGHS rejected the MIP start (setSolution returned kError)")
    return h, _run_highs(h, settings["threads"])


def milp_highs(problem: Problem, budget: float, /, *, time_limit: float | None = None, threads: int = 1,
               integral_y: bool = True, hint=None) -> Result:
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
    hint : array of int, optional
        A feasible store (candidate indices) handed to HiGHS as a MIP start: HiGHS checks it in
        its own model and starts from it as its first incumbent; its bound is its own.
        ``stats["warm_start"]`` records its size and value.  Not a setting: the optimum and the
        proof do not depend on it, only the time.

    Returns
    -------
    Result
        ``optimal`` when HiGHS reports kOptimal with ``mip_gap`` 0 or its
        ``mip_dual_bound`` within 1e-9 relative of its objective
        (``mip_rel_gap = mip_abs_gap = 0``); ``timeout`` with the best store
        found (possibly empty) and ``mip_dual_bound`` when the time limit stops
        it.  ``stats`` records the back-end, its version, the gaps and the
        reported ``mip_gap`` / ``mip_dual_bound``.  When y is continuous (no integral
        y: too many units or too fine a grid) but F still lies on a grid of step g
        (:func:`~memaudit_solvers.milp.scaling.objective_step`), ``mip_abs_gap`` is
        0.99 g and a store whose value is within that of HiGHS's own bound is
        ``optimal``: no store is worth more than it and less than it plus g
        (``stats["grid_step"]``, ``stats["gap_abs"]``; the message says so).

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
    settings = _check_settings("milp-highs", budget, time_limit, threads, integral_y)
    hint = _check_hint(problem, budget, hint)
    try:
        import highspy
    except ImportError as err:
        raise _unavailable("milp-highs", "highspy", err) from err
    t0 = time.perf_counter()
    trivial, model, grid, stats = _prepare(problem, budget, "milp-highs", "highs",
                                           f"highspy {_dist_version('highspy')}", settings, started,
                                           aggregate=True)
    if trivial is not None:
        return trivial
    lp = _highs_lp(highspy, model, grid)
    # F is a multiple of step: HiGHS may stop once its bound is less than one step above its store
    step, abs_gap = _grid_gap(problem, budget, model, grid, stats)
    start = _hint_columns(problem, model, grid, hint, stats)
    extra = _scale_options(model, start is not None)
    stats["scale_options"] = extra
    t1 = time.perf_counter()
    if model.at_scale and model.aggregated:
        # the root first, without presolve (as the binary model at scale): most models at scale close
        # there in under a second, where the presolve costs 0.3-1.4 s; only when the root leaves a gap
        # does the search with presolve run (from the same start, in the time that is left)
        h, run_status = _solve_highs(highspy, lp, settings, started, start=start, abs_gap=abs_gap,
                                     extra={**extra, "presolve": "off", "mip_max_nodes": 1})
        stats["root_without_presolve"] = h.modelStatusToString(h.getModelStatus())
        if h.getModelStatus() not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit):
            h, run_status = _solve_highs(highspy, lp, settings, started, start=start, abs_gap=abs_gap, extra=extra)
    else:
        h, run_status = _solve_highs(highspy, lp, settings, started, start=start, abs_gap=abs_gap, extra=extra)
    if "presolve" not in extra and h.getModelStatus() in (highspy.HighsModelStatus.kInfeasible,
                                                           highspy.HighsModelStatus.kUnboundedOrInfeasible):
        # the empty store is feasible: HiGHS's presolve erred (seen on near-equal coefficients
        # such as 1/3 next to 0.333333); solve once more without it, in the time that is left
        stats["presolve_failed"] = h.modelStatusToString(h.getModelStatus())
        h, run_status = _solve_highs(highspy, lp, settings, started, presolve=False, start=start, abs_gap=abs_gap,
                                     extra=extra)
    t2 = time.perf_counter()
    model_status = h.getModelStatus()
    info = h.getInfo()
    stats.update(model_build_seconds=t1 - t0, solve_seconds=t2 - t1, backend_status=h.modelStatusToString(model_status),
                 n_variables=model.n_x + model.n_y, n_constraints=int(h.getNumRow()),
                 mip_node_count=int(info.mip_node_count), mip_gap=float(info.mip_gap),
                 mip_dual_bound=float(info.mip_dual_bound), objective=float(info.objective_function_value),
                 cost_scale=model.cost_scale, value_scale=model.value_scale)
    if run_status == highspy.HighsStatus.kError:
        raise SolverError(f"HiGHS failed: run returned kError with model status {stats['backend_status']!r}")
    has_solution = info.primal_solution_status == highspy.kSolutionStatusFeasible
    chosen: np.ndarray | list[int] = []
    if has_solution:
        x = np.asarray(h.getSolution().col_value, dtype=float)[:model.n_x]
        chosen = _checked_store(problem, budget, model.store(x, "HiGHS"), "HiGHS")
    bound = _unscaled_bound(model, float(info.mip_dual_bound))
    value, dual = float(info.objective_function_value), float(info.mip_dual_bound)
    if model_status == highspy.HighsModelStatus.kOptimal and has_solution:
        if info.mip_gap == 0 or _zero_gap(value, dual):
            return make_result(problem, budget, method="milp-highs", settings=settings, chosen=chosen,
                               status="optimal", bound=bound, started=started, stats=stats,
                               message="HiGHS proved optimality with a zero gap")
    if has_solution and step is not None and dual - value <= abs_gap:
        # the bound is HiGHS's own; the grid turns it into a proof (the proven bound is then the value)
        return make_result(problem, budget, method="milp-highs", settings=settings, chosen=chosen,
                           status="optimal", bound=None, started=started, stats=stats,
                           message=_grid_message("HiGHS", bound, step))
    if model_status == highspy.HighsModelStatus.kOptimal and has_solution:
        return make_result(problem, budget, method="milp-highs", settings=settings, chosen=chosen, status="feasible",
                           bound=bound, started=started, stats=stats,
                           message=f"HiGHS stopped as optimal with a nonzero gap {info.mip_gap:g}: not proven")
    if model_status == highspy.HighsModelStatus.kTimeLimit:
        return make_result(problem, budget, method="milp-highs", settings=settings, chosen=chosen, status="timeout",
                           bound=bound, started=started, stats=stats,
                           message=f"HiGHS reached the time limit of {settings['time_limit']:g} s"
                                   + ("" if has_solution else " without a store; returning the empty store"))
    raise SolverError(f"HiGHS ended with model status {stats['backend_status']!r}"
                      + (" (also without presolve)" if "presolve_failed" in stats else "")
                      + "; the empty store is feasible, so this is a back-end failure")
