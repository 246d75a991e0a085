"""Certification: an exact method and an independent MILP back-end must agree."""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Sequence

from .exact import rescale_factors, rescaled
from .objective import evaluate, infeasibility
from .problem import Problem
from .result import Result, check_budget, make_result
from .settings import TIME_LIMIT

__all__ = ["Certification", "CERT_RTOL", "agree", "refutation", "compare_results", "run_rescaled", "certify"]

#: relative tolerance within which two proven optima must agree
CERT_RTOL = 1e-6


@dataclass(frozen=True)
class Certification:
    """Outcome of comparing two results on the same problem and budget.

    ``certified`` is True only when both results are proven optimal, both
    stores are feasible and re-evaluate to their reported values, and the
    two values agree within ``rtol`` relative (:func:`agree`, no absolute floor).
    ``reasons`` says what failed.
    """

    certified: bool
    value: float
    results: tuple
    rtol: float
    reasons: list = field(default_factory=list)
    attempts: list = field(default_factory=list)   # one line per back-end attempt that did not count

    @property
    def summary(self) -> str:
        names = " + ".join(r.method for r in self.results)
        if self.certified:
            return f"certified by {names}: both proved OPT = {self.value:.10g}"
        return f"NOT certified ({names}): " + "; ".join(self.reasons)


def agree(a: float, b: float, rtol: float = CERT_RTOL) -> bool:
    """True when ``|a - b| <= rtol * max(|a|, |b|)``: relative at every scale, no absolute floor.

    Two values agree at 1e-15 exactly as they do at 1 (so 0 and 9.5e-9 never agree).

    Examples
    --------
    >>> agree(1.0, 1.0 + 1e-7), agree(1e-8, 9.5e-9), agree(0.0, 0.0), agree(0.0, 1e-300)
    (True, False, True, False)
    """
    return abs(a - b) <= rtol * max(abs(a), abs(b))


def refutation(problem: Problem, budget: float, claimed: Result, *others: Result, rtol: float = CERT_RTOL) -> str:
    """Why the bound ``claimed`` proves is wrong, or ``""``: a store of one of ``others``, feasible on
    the exact numbers and evaluated exactly, worth more than that bound (beyond ``rtol``, :func:`agree`).

    A feasible store is a lower bound on OPT that needs no trust in the method that found it, so it
    refutes any claim below it: a back-end whose "optimal" is refuted has a wrong proof (SCIP 10.0 with a
    feasibility tolerance below its epsilon returned such proofs: ``docs/backends.md``).

    Examples
    --------
    >>> import time
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> right = make_result(p, 4, method="a", settings={}, chosen=[1, 2], status="optimal", bound=None,
    ...                     started=time.perf_counter())
    >>> wrong = make_result(p, 4, method="b", settings={}, chosen=[2], status="optimal", bound=None,
    ...                     started=time.perf_counter())
    >>> refutation(p, 4, wrong, right)
    "b's proof is refuted: a's store, feasible on the exact numbers, is worth 2.5, more than the bound b proves (1.5)"
    >>> refutation(p, 4, right, wrong)
    ''
    """
    claim = claimed.bound
    if not math.isfinite(claim):
        return ""
    for other in others:
        if other is claimed or infeasibility(problem, other.chosen, budget):
            continue
        worth = evaluate(problem, other.chosen)
        if worth > claim and not agree(worth, claim, rtol):
            what = "proof" if claimed.status == "optimal" else "bound"
            return (f"{claimed.method}'s {what} is refuted: {other.method}'s store, feasible on the exact numbers, "
                    f"is worth {worth:.10g}, more than the bound {claimed.method} proves ({claim:.10g})")
    return ""


def _proved_by_one(results: Sequence[Result], rtol: float) -> list[str]:
    """What a single proof still shows when the other result has none: for a result that did not prove
    optimality, the proved optimum of another and whether its store attains it (one proof, so the pair
    stays uncertified)."""
    out = []
    for r in results:
        if r.status == "optimal":
            continue
        for other in results:
            if other is r or other.status != "optimal":
                continue
            if agree(r.value, other.value, rtol):
                out.append(f"{other.method} alone proves the optimum {other.value:.10g}, which {r.method}'s store "
                           f"attains: the store is optimal by one proof, not two")
            else:
                out.append(f"{other.method} alone proves the optimum {other.value:.10g}; {r.method}'s store is "
                           f"worth {r.value:.10g}")
            break
    return out


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
        if not agree(value, r.value, rtol):
            reasons.append(f"{r.method} reports {r.value} but its store evaluates to {value}")
        if r.budget != float(budget):
            reasons.append(f"{r.method} ran with budget {r.budget}, not {budget}")
    values = [r.value for r in results]
    best = max(values) if values else 0.0
    # values of results that did not all prove optimality may differ: the reasons above say why
    proved = all(r.status == "optimal" for r in results)
    if proved and values and not agree(max(values), min(values), rtol):
        reasons.append("values disagree: " + ", ".join(f"{r.method}={r.value:.10g}" for r in results))
    reasons.extend(why for why in (refutation(problem, budget, r, *results, rtol=rtol) for r in results) if why)
    reasons.extend(_proved_by_one(results, rtol))
    return Certification(certified=not reasons, value=best, results=tuple(results), rtol=rtol, reasons=reasons)


def run_rescaled(fn, problem: Problem, budget: float, /, **settings) -> Result:
    """Run a method on the problem rescaled exactly by powers of two, and return its result on ``problem``.

    The budget and the largest weight are brought into [1, 2) when they lie far from 1
    (:func:`memaudit_solvers.exact.rescale_factors`), so a method's own float rules meet numbers of
    size 1 at every scale of the data.  The store comes back by index and the result is
    rebuilt by :func:`~memaudit_solvers.result.make_result` on the original problem: value and cost
    recomputed, feasibility checked exactly, the bound divided back.

    Examples
    --------
    >>> from memaudit_solvers.bruteforce import brute_force
    >>> p = Problem.build([4e-10] * 5, [0, 1, 2, 3, 4], [[1e-9]] * 5, [1e-9])
    >>> r = run_rescaled(brute_force, p, 1e-9)
    >>> r.chosen.tolist(), r.value, r.stats["rescaled"]
    ([3, 4], 2e-18, {'cost_scale': 1073741824.0, 'value_scale': 1073741824.0})
    """
    cost_scale, value_scale = rescale_factors(problem, budget)
    if cost_scale == 1.0 and value_scale == 1.0:
        return fn(problem, budget, **settings)
    check_budget(budget)
    scaled_problem, scaled_budget = rescaled(problem, budget, cost_scale, value_scale)
    started = time.perf_counter()
    r = fn(scaled_problem, scaled_budget, **settings)
    bound = r.bound / value_scale if math.isfinite(r.bound) else math.inf
    out = make_result(problem, budget, method=r.method, settings=r.settings, chosen=r.chosen, status=r.status,
                      bound=bound, started=started,
                      stats=dict(r.stats, rescaled={"cost_scale": cost_scale, "value_scale": value_scale}),
                      message=r.message)
    return dataclasses.replace(out, wall_time=r.wall_time + out.wall_time)


def certify(problem: Problem, budget: float, /, *, method: str = "bnb", backend: str | Sequence[str] = "milp-highs",
            time_limit: float | None = None, rtol: float = CERT_RTOL, warm_start: bool = True,
            time_box: float | str | None = None, backend_time_limit: float | None = None,
            retry: bool = True) -> Certification:
    """Solve with ``method`` and with an independent back-end, then :func:`compare_results`.

    ``backend`` is one name (its ``Declined``, ``SolverError`` or ``BackendUnavailable`` propagates) or a
    sequence of names tried in order (:func:`memaudit_solvers.fallthrough.certify_result`, the loop
    ``memaudit solve`` uses): a back-end that declines the data, fails
    (:class:`~memaudit_solvers.result.Declined`, :class:`~memaudit_solvers.result.SolverError`), is not
    installed, or stops without a proof is recorded in ``Certification.attempts`` and the next one runs;
    when none proves anything, the time-out that came closest is the answer.  Every method runs through
    :func:`run_rescaled`.

    With ``warm_start`` (default) each MILP back-end is given the method's store as a MIP start
    (``hint``): it checks that store in its own model and starts from it, but its bound is its own
    and nothing the method proved reaches it, so the two proofs stay independent.

    Parameters
    ----------
    time_limit : float or None
        Seconds for the method and, without a ``time_box``, for each back-end.
    time_box : float, ``"default"`` or None
        Seconds each back-end gets (``"default"``:
        :func:`~memaudit_solvers.fallthrough.default_time_box` of the method's time, as ``memaudit solve
        --backend auto`` does); None (default): no box, each back-end has ``time_limit``.  The box is
        the back-end's own time limit, run in this process.
    backend_time_limit : float or None
        With a time box: the seconds all back-end attempts share (default ``time_limit``).
    retry : bool
        With a time box: when every attempt timed out and ``backend_time_limit`` is not spent, the one
        that came closest runs again with the time left (default True).

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> c = certify(p, 4, backend="brute")
    >>> c.certified, c.value
    (True, 2.5)
    >>> certify(p, 4, backend=("cpsat", "brute")).results[1].method
    'cpsat'
    >>> certify(p, 4).results[1].stats["warm_start"]
    {'n_chosen': 2, 'value': 2.5}
    >>> certify(p, 4, backend=("milp-cbc", "milp-highs"), time_box=5.0).certified
    True
    """
    from .fallthrough import certify_result, default_time_box, run_backend
    from .registry import CERTIFIERS, EXACT_METHODS

    backends = [backend] if isinstance(backend, str) else list(backend)
    if not backends:
        raise ValueError("certification needs at least one back-end")
    if method not in EXACT_METHODS:
        raise ValueError(f"{method!r} is not an exact method; choose from {', '.join(sorted(EXACT_METHODS))}")
    for name in backends:
        if name not in EXACT_METHODS and name not in CERTIFIERS:
            raise ValueError(f"{name!r} is not an exact method or a certifier; choose from "
                             f"{', '.join(sorted({**EXACT_METHODS, **CERTIFIERS}))}")
    if method in backends:
        raise ValueError("certification needs two different methods; got the same one twice")
    if time_box is not None and time_box != "default" and (isinstance(time_box, (bool, str))
                                                          or not 0 < time_box < math.inf):
        raise ValueError(f"time_box must be None, 'default' or a number of seconds > 0; got {time_box!r}")
    shared_limit = dataclasses.replace(TIME_LIMIT, name="backend_time_limit").check("certify", backend_time_limit)
    a = run_backend(method, problem, budget, time_limit)
    if time_box is None:
        box, shared = time_limit, None
    else:
        box = default_time_box(a.wall_time) if time_box == "default" else float(time_box)
        shared = time_limit if shared_limit is None else shared_limit
    out = certify_result(problem, budget, a, backends, time_box=box, time_limit=shared,
                         retry=retry and time_box is not None,
                         warm_start=warm_start, rtol=rtol)
    attempts = [at.line() for at in out.attempts if not at.counted]
    if out.certification is not None:
        return dataclasses.replace(out.certification, attempts=attempts)
    if isinstance(backend, str) and out.attempts and out.attempts[-1].error is not None:
        raise out.attempts[-1].error    # one back-end asked for: its refusal is the answer
    return Certification(certified=False, value=a.value, results=(a,), rtol=rtol,
                         reasons=["no back-end could check the result: " + "; ".join(attempts)], attempts=attempts)
