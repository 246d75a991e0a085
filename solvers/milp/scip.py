"""SCIP back-end (PySCIPOpt): proven optimal only with a zero gap, the returned store re-checked exactly."""

from __future__ import annotations

import math
import time

import numpy as np

from ..problem import Problem
from ..result import Result, SolverError, make_result
from .model import (FEASIBILITY_TOL, RANDOM_SEED, _check_hint, _check_settings, _checked_store, _hint_columns,
                    _Model, _prepare, _unscaled_bound, _zero_gap)
from .scaling import _Grid, _grid_gap, _grid_message
from .versions import _unavailable, backend_versions


#: most x columns SCIP gets its symmetry detection on: that step does not check the time limit (on
#: ``random_problem(10000, 0)`` at 10 %, 32,444 columns, it ran 145 s past a 60 s limit); the
#: detection is a speed-up only, so leaving it off changes no proof
_SYMMETRY_MAX_COLUMNS = 5000


def _scip_model(pyscipopt, model: _Model, grid: _Grid | None):
    """The SCIP model: returns (model, every variable in column order: x then y)."""
    m = pyscipopt.Model("memaudit")
    m.hideOutput()
    cost, col_upper = model.columns(grid)
    xs = [m.addVar(name=f"x_{u}", vtype="B") for u in model.candidates.tolist()]
    y_type = "C" if grid is None else "I"
    ys = [m.addVar(name=f"y_{r}", vtype=y_type, lb=0.0, ub=(ub if math.isfinite(ub) else None))
          for r, ub in zip(model.units.tolist(), col_upper[model.n_x:].tolist())]
    columns = xs + ys
    a, upper = model.matrix(grid)
    indptr, indices, data = a.indptr.tolist(), a.indices.tolist(), a.data.tolist()
    for i, (name, rhs) in enumerate(zip(model.row_names(), upper.tolist())):
        s, e = indptr[i], indptr[i + 1]
        m.addCons(pyscipopt.quicksum(c * columns[j] for j, c in zip(indices[s:e], data[s:e])) <= rhs, name=name)
    m.setObjective(pyscipopt.quicksum(c * v for v, c in zip(columns, cost.tolist()) if c != 0), "maximize")
    return m, columns


def milp_scip(problem: Problem, budget: float, /, *, time_limit: float | None = None, threads: int = 1,
              integral_y: bool = True, hint=None) -> Result:
    """Solve exactly with SCIP (through PySCIPOpt), proving optimality with a zero gap.

    Same model as :func:`~memaudit_solvers.milp.milp_highs` (reduced, rescaled by powers of two,
    private units folded, integral y on a coarse grid), with ``limits/gap = limits/absgap = 0``
    and a feasibility tolerance of 1e-9 (SCIP's epsilon; smaller ones gave wrong proofs); with y continuous and F on a grid, ``limits/absgap`` is
    0.99 of its step and a store within that of SCIP's bound is optimal, as for milp-highs.

    Parameters
    ----------
    problem : Problem
    budget : float
        Storage limit B >= 0.
    time_limit : float or None, optional
        ``limits/time`` in seconds; ``None`` means no limit.
    threads : int, optional
        Accepted for the common contract; SCIP solves with one thread.
    integral_y : bool, optional
        As for milp-highs.
    hint : array of int, optional
        A feasible store (candidate indices) added as a starting solution (``createSol`` /
        ``addSol``): SCIP checks it in its own model; its bound is its own.
        ``stats["warm_start"]`` records its size, its value and whether SCIP accepted it.

    Returns
    -------
    Result
        ``optimal`` only when SCIP's status is ``optimal`` and its gap is 0 (its dual bound
        within 1e-9 relative of its primal value); ``timeout`` with the best store found and
        the dual bound when the time limit stops it.  The store is re-checked on the exact numbers.

    Raises
    ------
    ValueError
        A bad budget or setting.
    Declined
        Mixed magnitudes the float model cannot state faithfully.
    BackendUnavailable
        PySCIPOpt is not installed (``pip install pyscipopt``).
    SolverError
        SCIP ends in any other state, or returns a store over the exact budget.

    Examples
    --------
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> r = milp_scip(p, 4)   # doctest: +SKIP
    >>> r.status, r.value, r.bound   # doctest: +SKIP
    ('optimal', 2.5, 2.5)
    """
    started = time.perf_counter()
    settings = _check_settings("milp-scip", budget, time_limit, threads, integral_y)
    hint = _check_hint(problem, budget, hint)
    try:
        import pyscipopt
    except ImportError as err:
        raise _unavailable("milp-scip", "PySCIPOpt", err) from err
    t0 = time.perf_counter()
    trivial, model, grid, stats = _prepare(problem, budget, "milp-scip", "scip",
                                           backend_versions()["milp-scip"], settings, started)
    if trivial is not None:
        return trivial
    m, columns = _scip_model(pyscipopt, model, grid)
    xs = columns[:model.n_x]
    m.setParam("limits/gap", 0.0)
    step, abs_gap = _grid_gap(problem, budget, model, grid, stats)   # F on a grid: stop one step short
    m.setParam("limits/absgap", abs_gap)
    # not below SCIP's own epsilon (1e-9, under which it counts a number as zero): with 1e-10, SCIP 10.0
    # proved wrong optima on 2 of 54 validity packages (449.0 for 449.5: validity_stream(0) at 10 %;
    # docs/backends.md); a store over the exact budget is still caught by _checked_store
    m.setParam("numerics/feastol", max(FEASIBILITY_TOL, float(m.getParam("numerics/epsilon"))))
    m.setParam("randomization/randomseedshift", RANDOM_SEED)
    if model.n_x > _SYMMETRY_MAX_COLUMNS:
        m.setParam("misc/usesymmetry", 0)
    stats["symmetry"] = model.n_x <= _SYMMETRY_MAX_COLUMNS
    if settings["time_limit"] is not None:
        m.setParam("limits/time", max(settings["time_limit"] - (time.perf_counter() - started), 1e-3))
    start = _hint_columns(problem, model, grid, hint, stats)
    if start is not None:
        sol = m.createSol()
        for var, v in zip(columns, start.tolist()):
            m.setSolVal(sol, var, v)
        stats["warm_start"]["accepted"] = bool(m.addSol(sol, free=True))
    t1 = time.perf_counter()
    m.optimize()
    t2 = time.perf_counter()
    status = m.getStatus()
    has_solution = m.getNSols() > 0
    primal = float(m.getPrimalbound()) if has_solution else -math.inf
    dual = float(m.getDualbound())
    stats.update(model_build_seconds=t1 - t0, solve_seconds=t2 - t1, backend_status=status,
                 n_variables=model.n_x + model.n_y, n_constraints=int(m.getNConss()),
                 n_nodes=int(m.getNNodes()), scip_gap=float(m.getGap()) if has_solution else math.inf,
                 cost_scale=model.cost_scale, value_scale=model.value_scale)
    chosen: np.ndarray | list[int] = []
    if has_solution:
        sol = m.getBestSol()
        x = np.array([m.getSolVal(sol, v) for v in xs], dtype=float)
        chosen = _checked_store(problem, budget, model.candidates[x > 0.5], "SCIP")
    bound = _unscaled_bound(model, dual)
    if has_solution and step is not None and dual - primal <= abs_gap:
        return make_result(problem, budget, method="milp-scip", settings=settings, chosen=chosen, status="optimal",
                           bound=None, started=started, stats=stats, message=_grid_message("SCIP", bound, step))
    if status == "optimal" and has_solution:
        if _zero_gap(primal, dual):
            return make_result(problem, budget, method="milp-scip", settings=settings, chosen=chosen,
                               status="optimal", bound=bound, started=started, stats=stats,
                               message="SCIP proved optimality with a zero gap")
        return make_result(problem, budget, method="milp-scip", settings=settings, chosen=chosen, status="feasible",
                           bound=bound, started=started, stats=stats,
                           message=f"SCIP stopped as optimal with a nonzero gap {m.getGap():g}: not proven")
    if status in ("timelimit", "userinterrupt", "nodelimit", "gaplimit"):
        return make_result(problem, budget, method="milp-scip", settings=settings, chosen=chosen,
                           status="timeout" if settings["time_limit"] is not None else "feasible",
                           bound=bound, started=started, stats=stats,
                           message=f"SCIP stopped before proving optimality (status {status})"
                                   + ("" if has_solution else "; returning the empty store"))
    raise SolverError(f"SCIP ended with status {status!r}; the empty store is feasible, so this is a back-end failure")
