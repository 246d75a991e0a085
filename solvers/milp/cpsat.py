"""OR-Tools CP-SAT back-end on the model scaled exactly to integers."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from ..problem import Problem
from ..result import Result, SolverError, make_result
from .model import RANDOM_SEED, _check_hint, _check_settings, _hint_columns, _reduced_model, _trivial
from .scaling import _scale_for_cpsat
from .versions import _unavailable, backend_versions

def _plain(f: Fraction):
    """A scale for ``stats``: an int when it is one, else the fraction as text ("3/7")."""
    return int(f) if f.denominator == 1 else str(f)


def cpsat(problem: Problem, budget: float, /, *, time_limit: float | None = None, threads: int = 1,
          hint=None) -> Result:
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
    hint : array of int, optional
        A feasible store (candidate indices) given to CP-SAT as a solution hint (``add_hint`` on
        every variable): CP-SAT checks it in its own model; its bound is its own.
        ``stats["warm_start"]`` records its size and value.

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
    settings = _check_settings("cpsat", budget, time_limit, threads)
    hint = _check_hint(problem, budget, hint)
    try:
        from ortools.sat.python import cp_model
    except ImportError as err:
        raise _unavailable("cpsat", "OR-Tools", err) from err
    stats = {"backend": "cp-sat", "backend_version": backend_versions()["cpsat"],
             "gap_rel": 0.0, "gap_abs": 0.0, "random_seed": RANDOM_SEED, "linearization_level": 2}
    t0 = time.perf_counter()
    model = _reduced_model(problem, budget, fold_private=False)   # its objective is stated on y only
    if model.n_x == 0:
        return _trivial(problem, budget, "cpsat", settings, started, stats)
    scaled = _scale_for_cpsat(model)
    grid = scaled.grid
    stats.update(cost_scale=_plain(scaled.cost_scale), y_scale=grid.y_scale, value_scale=_plain(scaled.value_scale))

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
    start = _hint_columns(problem, model, grid, hint, stats)
    if start is not None:
        for var, v in zip(xs + ys, start.tolist()):
            m.add_hint(var, int(round(v)))

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
        bound = float(Fraction(solver.best_objective_bound) / scaled.value_scale) if has_solution else math.inf
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
