"""One result schema for every method, with value and cost recomputed by `evaluate`."""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, field

import numpy as np

from .objective import as_indices, evaluate, infeasibility, total_cost
from .problem import Problem

__all__ = ["Result", "STATUSES", "make_result", "relative_gap", "check_budget", "SolverError", "BackendUnavailable",
           "Declined"]

#: relative round-off allowed between a reported bound and the recomputed value of the store
BOUND_RTOL = 1e-6

#: every status a method may report
STATUSES = ("optimal", "feasible", "timeout", "heuristic")


class SolverError(RuntimeError):
    """A method failed in a way that is not the caller's input (a back-end bug, an infeasible answer)."""


class BackendUnavailable(ImportError):
    """An optional back-end is not installed; the message says what to install."""


class Declined(ValueError):
    """A back-end cannot state this problem exactly (e.g. CP-SAT and non-integer data)."""


def check_budget(budget) -> float:
    """The budget as a float; a ValueError unless it is a finite number >= 0.

    Every method calls this first, so they all reject the same inputs.

    Examples
    --------
    >>> check_budget(3)
    3.0
    >>> check_budget(-1)
    Traceback (most recent call last):
    ...
    ValueError: The 'budget' must be a finite number >= 0. Got -1 instead.
    """
    if (isinstance(budget, bool) or not isinstance(budget, numbers.Real) or not math.isfinite(budget)
            or budget < 0):
        raise ValueError(f"The 'budget' must be a finite number >= 0. Got {budget!r} instead.")
    return float(budget)


def relative_gap(value: float, bound: float) -> float:
    """``(bound - value) / |bound|``, clipped at 0 (0 when the bound is 0); ``inf`` for an unknown bound.

    Relative at every scale: no floor, so a bound of 2e-15 over a value of 1e-15 is a gap of 0.5.

    Examples
    --------
    >>> relative_gap(9.0, 10.0), relative_gap(0.0, 0.0), relative_gap(1.0, math.inf), relative_gap(1e-15, 2e-15)
    (0.1, 0.0, inf, 0.5)
    """
    if math.isinf(bound):
        return math.inf
    if bound == 0:
        return 0.0
    return max(0.0, (bound - value) / abs(bound))


@dataclass(frozen=True)
class Result:
    """What a method returns.

    Attributes
    ----------
    method : str
        Registered name of the method.
    settings : dict
        The settings the method ran with (defaults filled in).
    budget : float
    chosen : ndarray of int, shape (n_chosen,)
        Sorted candidate indices of the store.
    value : float
        ``evaluate(problem, chosen)``, recomputed, never taken from a back-end.
    cost : float
        Total cost of ``chosen``, recomputed.
    status : str
        ``optimal`` (proven, zero gap), ``feasible`` (a store, optimality not
        proven), ``timeout`` (time limit hit: best store found and a bound)
        or ``heuristic`` (a baseline that claims nothing).
    bound : float
        Proven upper bound on OPT (``inf`` when the method proves none).
    gap : float
        Relative gap between ``value`` and ``bound``.
    wall_time : float
        Seconds, measured around the whole method.
    stats : dict
        Method-specific counters (nodes, pruned, back-end status ...).
    message : str
        One human sentence about how the method ended.
    """

    method: str
    settings: dict
    budget: float
    chosen: np.ndarray
    value: float
    cost: float
    status: str
    bound: float
    gap: float
    wall_time: float
    stats: dict = field(default_factory=dict)
    message: str = ""

    @property
    def is_optimal(self) -> bool:
        return self.status == "optimal"

    def to_dict(self) -> dict:
        """JSON-ready dict (``inf`` bound becomes the string ``"inf"``)."""
        return {
            "method": self.method,
            "settings": dict(self.settings),
            "budget": self.budget,
            "chosen": [int(i) for i in self.chosen],
            "value": self.value,
            "cost": self.cost,
            "status": self.status,
            "bound": "inf" if math.isinf(self.bound) else self.bound,
            "gap": "inf" if math.isinf(self.gap) else self.gap,
            "wall_time": self.wall_time,
            "stats": dict(self.stats),
            "message": self.message,
        }


def make_result(problem: Problem, budget: float, *, method: str, settings: dict, chosen, status: str,
                bound: float | None, started: float, stats: dict | None = None, message: str = "") -> Result:
    """Build a :class:`Result`, re-checking feasibility and recomputing value and cost.

    ``started`` is the ``time.perf_counter()`` reading taken when the method began.
    ``bound`` may be None (or NaN) only with status ``optimal``: the bound is then the value.
    A proven bound below the recomputed value by more than ``BOUND_RTOL`` (relative)
    is a solver bug and raises :class:`SolverError`, as does an infeasible store
    (checked exactly, see :func:`memaudit_solvers.objective.infeasibility`).
    """
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}; got {status!r}")
    idx = as_indices(problem, chosen)
    why = infeasibility(problem, idx, budget)
    if why:
        raise SolverError(f"method {method!r} returned an infeasible store: {why}")
    value = evaluate(problem, idx)
    if status == "optimal":
        bound = value if bound is None or math.isnan(bound) else max(float(bound), value)
    elif bound is None:
        raise ValueError(f"method {method!r}: a bound of None is only for status 'optimal'; got status {status!r}")
    bound = float(bound)
    if value > 0 and bound < value * (1 - BOUND_RTOL):
        raise SolverError(f"method {method!r} claims bound {bound} below the value {value} of its own store")
    bound = max(bound, value)
    return Result(method=method, settings=dict(settings), budget=float(budget), chosen=idx, value=value,
                  cost=total_cost(problem, idx), status=status, bound=bound, gap=relative_gap(value, bound),
                  wall_time=time.perf_counter() - started, stats=dict(stats or {}), message=message)
