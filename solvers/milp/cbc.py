"""CBC back-end through PuLP (``pulp.COIN_CMD`` on the cbcbox binary)."""

from __future__ import annotations

import math
import os
import re
import tempfile
import time

import numpy as np

from ..objective import evaluate
from ..problem import Problem
from ..result import Result, SolverError, make_result
from .model import (FEASIBILITY_TOL, _check_hint, _checked_store, _check_settings, _hint_columns, _Model,
                    _prepare, _unscaled_bound)
from .scaling import _Grid, _grid_gap, _grid_message
from .versions import _unavailable, backend_versions

#: CBC's end-of-run summary; the bound of a maximisation is its "Upper bound" line
_CBC_SUMMARY_BOUND = re.compile(r"^Upper bound:\s*(\S+)\s*$", re.MULTILINE)
_CBC_STOPPED_ON_TIME = re.compile(r"^Result - Stopped on time|Exiting on maximum time", re.MULTILINE)


def _cbc_log_bound(log: str) -> float:
    """The dual bound CBC printed at the end of its log, or ``inf`` when there is none."""
    found = _CBC_SUMMARY_BOUND.findall(log)
    try:
        bound = float(found[-1]) if found else math.inf
    except ValueError:
        return math.inf
    return bound if math.isfinite(bound) else math.inf


def _cbc_problem(pulp, model: _Model, grid: _Grid | None = None, start=None):
    """The PuLP model: returns (problem, x variables in column order, number of rows).

    ``start`` (column values, or None) becomes the variables' initial values, for CBC's warm start.
    """
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
    if start is not None:
        for var, v in zip(columns, start.tolist()):
            var.setInitialValue(v)
    a, upper = model.matrix(grid)
    indptr, indices, data = a.indptr.tolist(), a.indices.tolist(), a.data.tolist()
    le = pulp.LpConstraintLE
    for i, (name, rhs) in enumerate(zip(model.row_names(), upper.tolist())):
        s, e = indptr[i], indptr[i + 1]
        expr = pulp.LpAffineExpression(zip([columns[j] for j in indices[s:e]], data[s:e]))
        prob.addConstraint(pulp.LpConstraint(expr, sense=le, name=name, rhs=rhs))
    prob.setObjective(pulp.LpAffineExpression([(v, c) for v, c in zip(columns, cost.tolist()) if c != 0]))
    return prob, xs, a.shape[0]


def milp_cbc(problem: Problem, budget: float, /, *, time_limit: float | None = None, threads: int = 1,
             integral_y: bool = True, hint=None) -> Result:
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
    hint : array of int, optional
        A feasible store (candidate indices) handed to CBC as a warm start (PuLP's
        ``warmStart``: a MIP start file): CBC checks it in its own model; its bound is its own.
        ``stats["warm_start"]`` records its size and value.

    Returns
    -------
    Result
        ``optimal`` only when PuLP's ``sol_status`` is ``LpSolutionOptimal``
        (``gapRel = gapAbs = 0``), CBC's log shows no time-out and its run ended before
        ``time_limit`` (CBC can call a search it stopped on time optimal, coin-or/Cbc#364,
        without always logging the time-out); PuLP's ``status`` can
        read Optimal after a time-out and is not trusted.  A time-out returns ``timeout`` with the
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
    settings = _check_settings("milp-cbc", budget, time_limit, threads, integral_y)
    hint = _check_hint(problem, budget, hint)
    try:
        import cbcbox
        import pulp
    except ImportError as err:
        raise _unavailable("milp-cbc", "PuLP with the cbcbox CBC binary", err) from err
    t0 = time.perf_counter()
    trivial, model, grid, stats = _prepare(problem, budget, "milp-cbc", "cbc",
                                           backend_versions()["milp-cbc"], settings, started)
    if trivial is not None:
        return trivial
    start = _hint_columns(problem, model, grid, hint, stats)
    step, abs_gap = _grid_gap(problem, budget, model, grid, stats)   # F on a grid: stop one step short
    prob, xs, n_rows = _cbc_problem(pulp, model, grid, start)
    path = cbcbox.cbc_bin_path()
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memaudit-cbc-") as tmp:
        log_path = os.path.join(tmp, "cbc.log")
        solver = pulp.COIN_CMD(path=path, msg=False, gapRel=0, gapAbs=abs_gap, timeLimit=settings["time_limit"],
                               threads=settings["threads"], logPath=log_path, warmStart=start is not None,
                               options=[f"primalTolerance {FEASIBILITY_TOL:g}", f"integerTolerance {FEASIBILITY_TOL:g}"])
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
                 sol_status=int(sol_status), cbc_path=path, cost_scale=model.cost_scale,
                 value_scale=model.value_scale)
    log_bound = _unscaled_bound(model, _cbc_log_bound(log))
    stats["log_bound"] = log_bound
    timed_out = bool(_CBC_STOPPED_ON_TIME.search(log))
    # CBC can end a search it stopped on time with "Optimal" (coin-or/Cbc#364: seen here at a 0.05 s limit
    # under load, a store 24.5 below OPT; and at 0.02 s under load with no time-out line in its log, a store
    # 7.5 below OPT): its Optimal counts only when its log shows no time-out and its run ended inside the limit
    ran_to_limit = settings["time_limit"] is not None and t2 - t1 >= settings["time_limit"]
    stats["ran_to_limit"] = ran_to_limit
    proved = sol_status == pulp.LpSolutionOptimal and not timed_out and not ran_to_limit
    stats["optimal_after_time_out"] = sol_status == pulp.LpSolutionOptimal and timed_out

    def chosen_now():
        return _checked_store(problem, budget, model.candidates[np.array([(v.varValue or 0.0) > 0.5 for v in xs],
                                                                          dtype=bool)], "CBC")

    if step is not None and sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        # CBC's Optimal means its bound is within gapAbs (under one grid step) of its store; a store
        # stopped by the time limit counts only when the bound CBC logged shows it
        chosen = chosen_now()
        if proved or log_bound - evaluate(problem, chosen) <= abs_gap / model.value_scale:
            return make_result(problem, budget, method="milp-cbc", settings=settings, chosen=chosen,
                               status="optimal", bound=None, started=started, stats=stats,
                               message=_grid_message("CBC", log_bound, step))
    if proved:
        return make_result(problem, budget, method="milp-cbc", settings=settings, chosen=chosen_now(),
                           status="optimal", bound=None, started=started, stats=stats,
                           message="CBC proved optimality with gapRel = gapAbs = 0")
    if sol_status in (pulp.LpSolutionIntegerFeasible, pulp.LpSolutionOptimal) or (
            sol_status == pulp.LpSolutionNoSolutionFound and prob.status == pulp.LpStatusNotSolved):
        chosen = chosen_now() if sol_status != pulp.LpSolutionNoSolutionFound else []
        # a bound read from a log is advisory: one below the store's own value is discarded, not trusted
        bound = log_bound
        value = evaluate(problem, chosen)
        if bound < value - 1e-6 * value:
            bound = math.inf
        status = "timeout" if settings["time_limit"] is not None else "feasible"
        return make_result(problem, budget, method="milp-cbc", settings=settings, chosen=chosen, status=status,
                           bound=bound, started=started, stats=stats,
                           message=("CBC stopped before proving optimality"
                                    + (f" (time limit {settings['time_limit']:g} s)" if timed_out else "")
                                    + ("" if len(chosen) else "; returning the empty store")))
    raise SolverError(f"CBC ended with {stats['backend_status']!r}; the empty store is feasible, "
                      "so this is a back-end failure")
