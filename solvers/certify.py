"""Certification: an exact method and an independent MILP back-end must agree."""

from __future__ import annotations

from dataclasses import dataclass, field

from .objective import evaluate, infeasibility
from .problem import Problem
from .result import Result

__all__ = ["Certification", "CERT_RTOL", "compare_results", "certify"]

#: relative tolerance within which two proven optima must agree
CERT_RTOL = 1e-6


@dataclass(frozen=True)
class Certification:
    """Outcome of comparing two results on the same problem and budget.

    ``certified`` is True only when both results are proven optimal, both
    stores are feasible and re-evaluate to their reported values, and the
    two values agree within ``rtol``.  ``reasons`` says what failed.
    """

    certified: bool
    value: float
    results: tuple
    rtol: float
    reasons: list = field(default_factory=list)

    @property
    def summary(self) -> str:
        names = " + ".join(r.method for r in self.results)
        if self.certified:
            return f"certified by {names}: both proved OPT = {self.value:.10g}"
        return f"NOT certified ({names}): " + "; ".join(self.reasons)


def compare_results(problem: Problem, budget: float, *results: Result, rtol: float = CERT_RTOL) -> Certification:
    """Check independent results against each other and against the problem itself."""
    reasons = []
    if len(results) < 2:
        reasons.append("certification needs two results")
    for r in results:
        if r.status == "heuristic":
            reasons.append(f"{r.method} is a heuristic: it does not prove optimality")
        elif r.status != "optimal":
            reasons.append(f"{r.method} did not prove optimality (status {r.status}"
                           + (f": {r.message})" if r.message else ")"))
        why = infeasibility(problem, r.chosen, budget)
        if why:
            reasons.append(f"{r.method}'s store is infeasible: {why}")
        value = evaluate(problem, r.chosen)
        if abs(value - r.value) > rtol * max(1.0, abs(value)):
            reasons.append(f"{r.method} reports {r.value} but its store evaluates to {value}")
        if abs(r.budget - budget) > 1e-12 * max(1.0, abs(budget)):
            reasons.append(f"{r.method} ran with budget {r.budget}, not {budget}")
    values = [r.value for r in results]
    best = max(values) if values else 0.0
    # values of results that did not all prove optimality may differ: the reasons above say why
    proved = all(r.status == "optimal" for r in results)
    if proved and values and max(values) - min(values) > rtol * max(1.0, abs(best)):
        reasons.append("values disagree: " + ", ".join(f"{r.method}={r.value:.10g}" for r in results))
    return Certification(certified=not reasons, value=best, results=tuple(results), rtol=rtol, reasons=reasons)


def certify(problem: Problem, budget: float, /, *, method: str = "bnb", backend: str = "milp-highs",
            time_limit: float | None = None, rtol: float = CERT_RTOL) -> Certification:
    """Solve with ``method`` and with the independent ``backend``, then :func:`compare_results`.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> c = certify(p, 4, backend="brute")
    >>> c.certified, c.value
    (True, 2.5)
    """
    from .registry import EXACT_METHODS, get_method

    for name in (method, backend):
        if name not in EXACT_METHODS:
            raise ValueError(f"{name!r} is not an exact method; choose from {', '.join(sorted(EXACT_METHODS))}")
    if method == backend:
        raise ValueError("certification needs two different methods; got the same one twice")
    kwargs = {} if time_limit is None else {"time_limit": time_limit}
    a = get_method(method)(problem, budget, **(kwargs if method != "brute" else {}))
    b = get_method(backend)(problem, budget, **(kwargs if backend != "brute" else {}))
    return compare_results(problem, budget, a, b, rtol=rtol)
