"""What a solved store holds: its rows by experience, and the units it leaves uncovered."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from memaudit_solvers import Problem, Result
from memaudit_solvers.coverage import saturated_units
from memaudit_solvers.objective import coverage_sums, h_inf, h_values

if TYPE_CHECKING:  # the report type only; solve imports this module
    from .solve import SolveReport

__all__ = ["store_rows", "fully_covered", "uncovered_units"]


def store_rows(report: SolveReport, result: Result | None = None) -> list[dict]:
    """The chosen store, one row per stored candidate, in stream order of the experiences.

    Each row: ``experience``, ``candidate``, ``kind``, ``cost``, ``units`` (``{unit id:
    coverage a[u, r]}`` for every unit the candidate covers).  ``result`` defaults to the
    method's (``report.result``); pass ``report.best_result`` for the store a reader should see.
    """
    pkg, compiled = report.package, report.compiled
    costs = compiled.problem.costs      # the resolved costs, candidate i at index i
    rows = []
    chosen = np.unique(np.asarray((result or report.result).chosen))
    for i, _ in zip(chosen.tolist(), compiled.ids(chosen)):   # ids() checks every index; ordered by experience below
        c = pkg.candidates[i]
        rows.append({"experience": c.experience, "candidate": c.id, "kind": c.kind, "cost": float(costs[i]),
                     "units": {u: float(a) for u, a in c.coverage.items() if a > 0}})
    order = {eid: g for g, eid in enumerate(compiled.experience_ids)}
    rows.sort(key=lambda row: order[row["experience"]])
    return rows


def fully_covered(problem: Problem, chosen) -> np.ndarray:
    """Boolean mask over units: True where the store ``chosen`` covers the unit fully.

    Unit r is fully covered when ``h_r(s_r) >= (1 - 1e-9) * h_r(inf)`` (see :func:`uncovered_units`), or
    when its h never flattens (:func:`memaudit_solvers.coverage.saturated_units` with ``unbounded``).
    """
    return saturated_units(problem, coverage_sums(problem, chosen), unbounded=True)


def uncovered_units(report: SolveReport, result: Result | None = None) -> list[dict]:
    """Units the store does not fully cover, in package order.

    Rule: unit r is fully covered when ``h_r(s_r) >= (1 - 1e-9) * h_r(inf)``, where ``s_r`` is
    the store's summed coverage and ``h_r(inf)`` the value h saturates at (1 for the default
    ``min(1, z)``, ``cap`` for ``{"cap": c}``, the last breakpoint's value otherwise).  Every other
    unit is listed, partly covered ones included.  Each row: ``unit``, ``kind``, ``weight``,
    ``coverage`` (s_r), ``level`` (h_r(s_r) / h_r(inf), in [0, 1)) and ``lost`` (the weighted
    value missing, ``w_r * (h_r(inf) - h_r(s_r))``).  ``result`` as in :func:`store_rows`.
    """
    problem = report.compiled.problem
    chosen = (result or report.result).chosen
    sums = coverage_sums(problem, chosen)
    h = h_values(problem, np.arange(problem.n_units), sums)
    full = h_inf(problem)
    left = np.flatnonzero(~fully_covered(problem, chosen))
    units = report.package.units
    return [{"unit": units[r].id, "kind": units[r].kind, "weight": float(units[r].weight), "coverage": s,
             "level": level, "lost": lost}
            for r, s, level, lost in zip(left.tolist(), sums[left].tolist(), (h[left] / full[left]).tolist(),
                                         (problem.weights[left] * (full[left] - h[left])).tolist())]
