"""Certifying back-ends tried in turn: time boxes, a time all attempts share, a retry of the closest
time-out, and a record of every attempt.

:func:`certify_result` runs the certifying back-ends on a method's result, one after another, until one
proves an optimum; every run (or why a back-end did not run) is an :class:`Attempt`.  How one attempt
runs is passed in (``runner``): in-process by default (:func:`run_backend`); a caller that must hold a
time box against a back-end that does not check its time limit in every step runs it in a child process
it can stop, and raises :class:`Overran` when it had to.  Both :func:`memaudit_solvers.certify.certify`
and the command line's ``solve`` go through this one loop.

Every back-end may be warm-started from the method's store (a MIP start or solution hint): it checks
that store in its own model and starts from it, but proves its own bound.  Nothing the method proved
(its bound, its prices) is handed over, so the two proofs stay independent; only the time changes.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from .certify import CERT_RTOL, Certification, compare_results, refutation, run_rescaled
from .milp import BACKENDS, installed_backends
from .problem import Problem
from .registry import HINTED, get_method, method_settings, stamp_result
from .result import BackendUnavailable, Declined, Result, SolverError

__all__ = ["Attempt", "Outcome", "Overran", "Runner", "Explain", "certify_result", "run_backend", "explain_attempt",
           "default_time_box", "FALL_THROUGH", "OUTCOMES", "TIME_BOX_FLOOR", "TIME_BOX_FACTOR", "TIME_BOX_CAP"]

#: the outcomes of one attempt (see :class:`Attempt`)
OUTCOMES = ("proved", "timeout", "overran", "not proven", "declined", "failed", "unavailable")

#: the outcomes after which the next back-end of a list runs: every outcome but a proof
FALL_THROUGH = frozenset({"timeout", "not proven", "declined", "failed", "unavailable"})

#: the time box of one back-end in ``solve --backend auto``: at least this many seconds ...
TIME_BOX_FLOOR = 10.0
#: ... and at least this many times the method's own time ...
TIME_BOX_FACTOR = 5.0
#: ... but at most this many seconds (a method stopped by its own time limit says little about the back-end)
TIME_BOX_CAP = 60.0

#: how one attempt runs: ``runner(name, problem, budget, time_limit, hint) -> Result``; it raises
#: Declined, SolverError, BackendUnavailable or :class:`Overran` (docs/backends.md has the measurements)
Runner = Callable[[str, Problem, float, Optional[float], Optional[np.ndarray]], Result]
#: the text of an attempt that ended without a result: ``explain(name, outcome, exception) -> str``
Explain = Callable[[str, str, BaseException], str]


def default_time_box(method_seconds: float) -> float:
    """The time box of one back-end in ``auto``:
    ``min(TIME_BOX_CAP, max(TIME_BOX_FLOOR, TIME_BOX_FACTOR * method_seconds))``.

    Examples
    --------
    >>> default_time_box(0.2), default_time_box(4.0), default_time_box(60.0)
    (10.0, 20.0, 60.0)
    """
    return min(TIME_BOX_CAP, max(TIME_BOX_FLOOR, TIME_BOX_FACTOR * float(method_seconds)))


class Overran(Exception):
    """A back-end ran past its time box by more than the runner's grace and was stopped (no result)."""


@dataclass(frozen=True)
class Attempt:
    """One certifying back-end's run (or why it did not run).

    ``outcome``: ``proved`` (it proved an optimum: the comparison decides), ``timeout`` (its time
    limit stopped it), ``overran`` (it did not stop at its time box and was stopped: no result),
    ``not proven`` (it stopped without a proof for another reason), ``declined``, ``failed`` (a
    solver failure on valid data, or a proof the method's store refutes: :func:`~memaudit_solvers.certify.refutation`) or ``unavailable`` (not installed).  ``detail`` is the store and
    bound of a run without a proof, or the caller's text for one without a result; ``error`` the
    exception of a run without a result.
    """

    backend: str
    outcome: str
    seconds: float
    time_limit: float | None
    detail: str = ""
    retry: bool = False
    counted: bool = False    # its result is the one the comparison with the method's used
    error: BaseException | None = field(default=None, compare=False, repr=False)

    def line(self) -> str:
        """One line for a report, e.g. ``milp-highs timed out after 10.0 s (time box 10 s): ...``."""
        if self.outcome in ("timeout", "not proven"):
            limit = "" if self.time_limit is None else f" ({'time left' if self.retry else 'time box'} " \
                                                       f"{self.time_limit:.3g} s)"
            verb = "timed out" if self.outcome == "timeout" else "stopped without a proof"
            return f"{self.backend} {verb} after {self.seconds:.3g} s{limit}: {self.detail}"
        return self.detail

    def to_dict(self) -> dict:
        return {"backend": self.backend, "outcome": self.outcome, "seconds": self.seconds,
                "time_limit": self.time_limit, "retry": self.retry, "counted": self.counted,
                "detail": self.line()}


@dataclass(frozen=True)
class Outcome:
    """What :func:`certify_result` found: the back-end whose result counts, and every attempt.

    ``declined`` is the text of the back-end whose refusal ended the loop ("" otherwise).
    """

    backend: str | None
    backend_result: Result | None
    certification: Certification | None
    attempts: tuple
    declined: str = ""


def run_backend(name: str, problem: Problem, budget: float, time_limit: float | None = None, hint=None, *,
                method=None) -> Result:
    """Run the exact method ``name`` (``method``: its function, default the registered one) through
    :func:`~memaudit_solvers.certify.run_rescaled`, with ``time_limit`` when it declares one and the
    ``hint`` when it takes one (a MILP back-end or a certifier: :data:`~memaudit_solvers.registry.HINTED`);
    ``Result.method`` and every declared setting are stamped."""
    declared = {s.name for s in method_settings(name)}
    settings = {} if time_limit is None or "time_limit" not in declared else {"time_limit": time_limit}
    extra = {} if hint is None or name not in HINTED else {"hint": hint}
    fn = get_method(name) if method is None else method
    return stamp_result(name, run_rescaled(fn, problem, budget, **settings, **extra), settings)


def explain_attempt(name: str, outcome: str, exc: BaseException) -> str:
    """The library's text of an attempt without a result, e.g. ``milp-cbc failed: <why>``.

    Examples
    --------
    >>> explain_attempt("cpsat", "declined", Declined("the data are not integers"))
    'cpsat declined: the data are not integers'
    """
    if outcome == "overran":
        return str(exc)
    if outcome == "unavailable":
        return f"{name} is not installed ({exc})"
    return f"{name} {outcome}: {exc}"


def _gap(r: Result) -> float:
    return r.gap if math.isfinite(r.gap) else math.inf


def _short(r: Result) -> str:
    gap = f"{100 * r.gap:.3g} %" if math.isfinite(r.gap) else "inf"
    return f"store {r.value:.10g}, bound {r.bound:.10g} (gap {gap})"


def certify_result(problem: Problem, budget: float, result: Result, backends: Sequence[str], *,
                   runner: Runner = run_backend, time_box: float | None = None, time_limit: float | None = None,
                   fall_through: frozenset = FALL_THROUGH, first_decline_final: bool = False, retry: bool = False,
                   warm_start: bool = True, rtol: float = CERT_RTOL, explain: Explain = explain_attempt,
                   say: Callable[[str], None] | None = None) -> Outcome:
    """Run the certifying ``backends`` in order on the method's ``result`` until one proves an optimum.

    Parameters
    ----------
    backends : sequence of str
        Exact method names in the order tried.
    runner : callable
        How one attempt runs (:data:`Runner`); default :func:`run_backend`, in this process.  A back-end
        that is not installed always runs in this process (it raises ``BackendUnavailable`` at once).
    time_box : float or None
        Longest time of one attempt (None: no box).
    time_limit : float or None
        Time all attempts share (None: no overall limit).
    fall_through : frozenset
        The outcomes after which the next back-end runs (``timeout``, ``not proven``, ``declined``,
        ``failed``, ``unavailable``; ``overran`` goes with ``timeout``); on any other the result of that
        back-end stands.  When no back-end proves anything, the time-out that left the smallest gap counts
        (else the last result).
    first_decline_final : bool
        When the first back-end declines, stop there whatever ``fall_through`` says.
    retry : bool
        When every attempt timed out, a time box was set and ``time_limit`` is not spent: run the
        back-end whose time-out left the smallest gap (else the first that overran) once more with the
        time left.
    warm_start : bool
        Hand the method's store to each back-end as a MIP start (``hint``).
    explain : callable
        The text of an attempt without a result (:data:`Explain`), default :func:`explain_attempt`.
    say : callable, optional
        Called with ``certifying with NAME... (up to S s)`` before each attempt.

    Examples
    --------
    >>> from memaudit_solvers.bnb import branch_and_bound
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> out = certify_result(p, 4, branch_and_bound(p, 4), ["cpsat", "brute"])
    >>> out.backend, out.certification.certified, [a.outcome for a in out.attempts]
    ('cpsat', True, ['proved'])
    """
    started = time.perf_counter()
    tell = say or (lambda line: None)
    installed = installed_backends()
    hint = result.chosen if warm_start else None
    attempts: list[Attempt] = []
    last: tuple[str, Result, int] | None = None
    timed_out: list[tuple[str, Result, int]] = []

    def left() -> float | None:
        return None if time_limit is None else time_limit - (time.perf_counter() - started)

    def limit_now(box: float | None) -> float | None:
        rest = left()
        if rest is None:
            return box
        return rest if box is None else min(box, rest)

    def attempt(name: str, limit: float | None, again: bool = False) -> tuple[str, Result | None, str]:
        """``(outcome, result, text of a decline)`` of one run; appends its Attempt."""
        tell(f"certifying with {name}..." + (" again" if again else "")
             + ("" if limit is None else f" (up to {limit:.3g} s)"))
        t = time.perf_counter()
        run = run_backend if name in BACKENDS and name not in installed else runner
        try:
            r = run(name, problem, budget, limit, hint)
        except (Declined, BackendUnavailable, SolverError, Overran) as exc:
            outcome = ("declined" if isinstance(exc, Declined) else "unavailable"
                       if isinstance(exc, BackendUnavailable) else "overran" if isinstance(exc, Overran) else "failed")
            text = explain(name, outcome, exc)
            attempts.append(Attempt(name, outcome, time.perf_counter() - t, limit, text, again, error=exc))
            return ("timeout" if outcome == "overran" else outcome), None, text
        seconds = time.perf_counter() - t
        wrong = refutation(problem, budget, r, result, rtol=rtol) if r.status == "optimal" else ""
        if wrong:   # a proof the method's store contradicts: a back-end failure, the next one runs
            refuted = SolverError(wrong)
            attempts.append(Attempt(name, "failed", seconds, limit, explain(name, "failed", refuted), again,
                                    error=refuted))
            return "failed", r, ""
        outcome = "proved" if r.status == "optimal" else ("timeout" if r.status == "timeout" else "not proven")
        attempts.append(Attempt(name, outcome, seconds, limit, "" if outcome == "proved" else _short(r), again))
        return outcome, r, ""

    def done(name: str, r: Result, index: int) -> Outcome:
        cert = compare_results(problem, budget, result, r, rtol=rtol)
        attempts[index] = dataclasses.replace(attempts[index], counted=True)
        return Outcome(name, r, cert, tuple(attempts))

    for i, name in enumerate(backends):
        rest = left()
        if rest is not None and rest <= 0:
            break
        outcome, r, declined = attempt(name, limit_now(time_box))
        if outcome == "declined" and ((i == 0 and first_decline_final) or "declined" not in fall_through):
            return Outcome(name, None, None, tuple(attempts), declined=declined)
        if r is not None:
            last = (name, r, len(attempts) - 1)
            if outcome == "timeout":
                timed_out.append(last)
        if outcome == "proved" or outcome not in fall_through:
            return done(*last) if r is not None and last is not None else Outcome(name, None, None, tuple(attempts))
    rest = left()
    overran = [a.backend for a in attempts if a.outcome == "overran"]
    if retry and (timed_out or overran) and (rest is None or rest > 1.0) and time_box is not None:
        name = min(timed_out, key=lambda t: _gap(t[1]))[0] if timed_out else overran[0]
        _, r, _ = attempt(name, rest, again=True)
        if r is not None:
            return done(name, r, len(attempts) - 1)
    if timed_out:   # nobody proved anything: the time-out that came closest counts
        return done(*min(timed_out, key=lambda t: _gap(t[1])))
    if last is not None:
        return done(*last)
    return Outcome(backends[0] if backends else None, None, None, tuple(attempts))
