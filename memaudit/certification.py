"""Certifying a method's store: which back-ends run, in what order, for how long, warm-started how.

``solve --backend auto`` (the default) tries the certifying back-ends of :func:`auto_order` one after
another, each in a *time box* (:func:`default_time_box`: the larger of ``TIME_BOX_FLOOR`` seconds and
``TIME_BOX_FACTOR`` times the method's own time, at most ``TIME_BOX_CAP``), so that one back-end stalling on a package another
proves in seconds never holds the answer up: on a time-out, a decline, a failure or a missing install
the next one runs.  Every attempt is recorded (:class:`Attempt`) and reported.  When every boxed attempt
timed out and the overall back-end time limit is not spent, the back-end whose time-out left the
smallest gap runs once more with the time that is left.  An explicit back-end keeps its meaning: that
one back-end with its time limit as given (a failure still falls through, as before).

Every back-end is warm-started from the method's store (a MIP start or solution hint): it checks that
store in its own model and starts from it, but proves its own bound.  Nothing the method proved (its
bound, its prices) is handed over, so the certificate stays independent; only the time changes.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Callable

from memaudit_solvers import BackendUnavailable, Declined, Problem, Result, SolverError
from memaudit_solvers.certify import Certification, compare_results, run_rescaled
from memaudit_solvers.milp import installed_backends
from memaudit_solvers.registry import BACKENDS, get_method, stamp_result

from .errors import MethodError

__all__ = ["Attempt", "Outcome", "auto_order", "backend_order", "backend_key", "key_backends", "resolve_backend",
           "default_time_box", "certify_store", "declined_message", "BACKEND_ALIASES", "TIME_BOX_FLOOR",
           "TIME_BOX_FACTOR", "TIME_BOX_CAP", "AUTO_ORDER"]

#: short names accepted for the certifying back-ends (``none`` = do not certify)
BACKEND_ALIASES = {"highs": "milp-highs", "cbc": "milp-cbc", "cpsat": "cpsat", "scip": "milp-scip", "none": None}

#: the order ``auto`` tries the certifying back-ends in (docs/backends.md has the measurements)
AUTO_ORDER = ("milp-highs", "milp-scip", "milp-cbc", "cpsat")

#: the time box of one back-end in ``auto``: at least this many seconds ...
TIME_BOX_FLOOR = 10.0
#: ... and at least this many times the method's own time ...
TIME_BOX_FACTOR = 5.0
#: ... but at most this many seconds (a method stopped by its own time limit says little about the back-end)
TIME_BOX_CAP = 60.0


def default_time_box(method_seconds: float) -> float:
    """The time box of one back-end in ``auto``:
    ``min(TIME_BOX_CAP, max(TIME_BOX_FLOOR, TIME_BOX_FACTOR * method_seconds))``.

    Examples
    --------
    >>> default_time_box(0.2), default_time_box(4.0), default_time_box(60.0)
    (10.0, 20.0, 60.0)
    """
    return min(TIME_BOX_CAP, max(TIME_BOX_FLOOR, TIME_BOX_FACTOR * float(method_seconds)))


def auto_order(method: str) -> list[str]:
    """The back-ends ``auto`` tries, in order: :data:`AUTO_ORDER` without the method itself.

    Examples
    --------
    >>> auto_order("bnb"), auto_order("milp-highs")
    (['milp-highs', 'milp-scip', 'milp-cbc', 'cpsat'], ['milp-scip', 'milp-cbc', 'cpsat'])
    """
    return [b for b in AUTO_ORDER if b != method]


def resolve_backend(name: str | None, method: str | None = None) -> str | None:
    """The certifying back-end for ``name``: a MILP method name, or None for ``none`` / None.

    ``auto`` is the first of :func:`auto_order` and a list ``scip,highs`` its first (the others
    follow it when it times out, declines or fails: :func:`backend_order`).

    Examples
    --------
    >>> resolve_backend("highs"), resolve_backend("milp-cbc"), resolve_backend("none")
    ('milp-highs', 'milp-cbc', None)
    >>> resolve_backend("auto", "bnb"), resolve_backend("auto", "milp-highs")
    ('milp-highs', 'milp-scip')
    >>> resolve_backend("gurobi")
    Traceback (most recent call last):
    ...
    memaudit.errors.MethodError: unknown back-end 'gurobi'; valid back-ends: cbc, cpsat, highs, milp-cbc, milp-highs, milp-scip, none, scip, auto
    """
    if name is None:
        return None
    if name == "auto" or (isinstance(name, str) and "," in name):
        order = backend_order(name, method)
        return order[0] if order else None
    if isinstance(name, str) and name in BACKEND_ALIASES:
        return BACKEND_ALIASES[name]
    if isinstance(name, str) and name in BACKENDS:
        return name
    raise MethodError(f"unknown back-end {name!r}; valid back-ends: {_valid_backends()}, auto")


def _valid_backends() -> str:
    return ", ".join(sorted(set(BACKEND_ALIASES) | set(BACKENDS)))


def backend_order(name, method: str | None = None) -> list[str] | None:
    """The back-ends tried in turn, each in a time box, for ``name``; None for one named back-end.

    ``auto`` is :func:`auto_order` without the back-ends that are not installed; a comma-separated
    list (``scip,highs``) is that order.

    Examples
    --------
    >>> backend_order("cpsat,highs", "bnb"), backend_order("highs", "bnb")
    (['cpsat', 'milp-highs'], None)
    >>> backend_order("cbc,highs", "milp-highs")
    Traceback (most recent call last):
    ...
    memaudit.errors.MethodError: the certifying back-ends must differ from the method; 'cbc,highs' names 'milp-highs'
    """
    if name == "auto":
        installed = installed_backends()
        return [b for b in auto_order(method or "") if b in installed]
    if not (isinstance(name, str) and "," in name):
        return None
    order = []
    for part in name.split(","):
        full = resolve_backend(part.strip())
        if full is None:
            raise MethodError(f"a list of back-ends cannot contain 'none'; got {name!r}")
        if full == method:
            raise MethodError(f"the certifying back-ends must differ from the method; {name!r} names {method!r}")
        if full not in order:
            order.append(full)
    return order


def backend_key(name, method: str) -> str | None:
    """How the results store names a solve's back-end request: ``auto``, a list as resolved names
    (``milp-scip,milp-highs``), or the one back-end (None for none)."""
    if name == "auto":
        return "auto"
    order = backend_order(name, method)
    return ",".join(order) if order is not None else resolve_backend(name, method)


def key_backends(key: str | None, method: str) -> list[str]:
    """The back-ends whose result a stored solve under ``key`` may hold."""
    if key is None:
        return []
    if key == "auto":
        return auto_order(method)
    return key.split(",")


@dataclass(frozen=True)
class Attempt:
    """One certifying back-end's run (or why it did not run).

    ``outcome``: ``proved`` (it proved an optimum: the comparison decides), ``timeout`` (its time
    limit stopped it), ``overran`` (it did not stop at its time box and was stopped: no result),
    ``not proven`` (it stopped without a proof for another reason), ``declined``, ``failed`` (a
    solver failure on valid data) or ``unavailable`` (not installed).
    """

    backend: str
    outcome: str
    seconds: float
    time_limit: float | None
    detail: str = ""
    retry: bool = False
    counted: bool = False    # its result is the one the report compares with the method's

    def line(self) -> str:
        """One line for the report, e.g. ``milp-highs timed out after 10.0 s (time box 10 s): ...``."""
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
    """What :func:`certify_store` found: the back-end whose result counts, and every attempt."""

    backend: str | None
    backend_result: Result | None
    certification: Certification | None
    attempts: tuple
    declined: str = ""


def declined_message(name: str, exc: Exception) -> str:
    others = ", ".join(n for n in sorted(BACKENDS) if n != name)
    return f"{name} declined this package: {exc}; try another back-end ({others})"


def _run(name: str, problem: Problem, budget: float, time_limit: float | None, hint) -> Result:
    settings = {} if time_limit is None else {"time_limit": time_limit}
    extra = {} if hint is None else {"hint": hint}
    return stamp_result(name, run_rescaled(get_method(name), problem, budget, **settings, **extra), settings)


class _Overran(Exception):
    """A back-end ran past its time box by more than the grace and was stopped."""


#: seconds a boxed back-end may run past its box before it is stopped: HiGHS's presolve ran 168 s past
#: a 150 s limit at 30,000 experiences, SCIP's symmetry detection 145 s past 60 s at 10,000
def _grace(box: float) -> float:
    return max(5.0, 0.5 * box)


def _child(conn, name, problem, budget, limit, hint) -> None:   # pragma: no cover - runs in the child
    import memaudit_solvers.milp.highs as highs

    highs._HIGHS_SCHEDULER_THREADS[0] = None     # the parent's HiGHS thread pool did not survive the fork
    try:
        conn.send(("ok", _run(name, problem, budget, limit, hint)))
    except BaseException as exc:     # every failure goes back to the parent, which re-raises it
        conn.send(("error", exc))
    finally:
        conn.close()


def _run_boxed(name: str, problem: Problem, budget: float, limit: float, hint) -> Result:
    """:func:`_run` in a forked child that is stopped when it overruns ``limit`` by more than the grace
    (some back-ends do not check their time limit in every step); in-process where fork is missing or
    this process is itself a daemon (a multiprocessing pool or Dask worker may not start children)."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods() or multiprocessing.current_process().daemon:
        return _run(name, problem, budget, limit, hint)   # a daemonic process (a pool worker) may not have children
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, name, problem, budget, limit, hint), daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(limit + _grace(limit)):
            raise _Overran(f"{name} did not stop at its time limit of {limit:.3g} s and was stopped "
                           f"{_grace(limit):.3g} s later")
        kind, payload = receive.recv()
    except EOFError:
        raise SolverError(f"{name} ended without an answer (exit code {child.exitcode})") from None
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
    if kind == "error":
        raise payload
    return payload


def _gap(r: Result) -> float:
    return r.gap if math.isfinite(r.gap) else math.inf


def _short(r: Result) -> str:
    gap = f"{100 * r.gap:.3g} %" if math.isfinite(r.gap) else "inf"
    return f"store {r.value:.10g}, bound {r.bound:.10g} (gap {gap})"


def certify_store(problem: Problem, budget: float, result: Result, backends: list[str], *,
                  time_box: float | None, time_limit: float | None, fall_through: frozenset,
                  first_decline_final: bool = False, retry: bool = False, warm_start: bool = True, rtol: float,
                  boxed: bool = False,
                  say: Callable[[str], None] = lambda line: None) -> Outcome:
    """Run the certifying ``backends`` in order on the method's ``result`` until one proves an optimum.

    Parameters
    ----------
    backends : list of str
        Back-end names in the order tried.
    time_box : float or None
        Longest time of one attempt (None: no box).
    time_limit : float or None
        Time all attempts share (None: no overall limit).
    fall_through : frozenset
        The outcomes after which the next back-end runs (``timeout``, ``not proven``,
        ``declined``, ``failed``, ``unavailable``); on any other the result of that back-end stands.
    first_decline_final : bool
        When the first back-end declines, stop there (the report says why) whatever ``fall_through`` says.
    retry : bool
        When every attempt timed out and ``time_limit`` is not spent: run the back-end whose
        time-out left the smallest gap (else the first that overran) once more with the time left.
    warm_start : bool
        Hand the method's store to each back-end as a MIP start (``hint``).
    boxed : bool
        Run each back-end in a forked child that is stopped when it overruns its time limit by
        more than the grace (outcome ``overran``); for ``auto``, whose boxes must hold.
    """
    started = time.perf_counter()
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
        """``(outcome, result, declined text)`` of one run; appends its Attempt."""
        say(f"certifying with {name}..." + (" again" if again else "")
            + ("" if limit is None else f" (up to {limit:.3g} s)"))
        t = time.perf_counter()
        if name in BACKENDS and name not in installed:
            attempts.append(Attempt(name, "unavailable", 0.0, limit, f"{name} is not installed"))
            return "unavailable", None, ""
        try:
            run = _run_boxed if limit is not None and boxed else _run
            r = run(name, problem, budget, limit, hint if name in BACKENDS else None)
        except Declined as exc:
            text = declined_message(name, exc)
            attempts.append(Attempt(name, "declined", time.perf_counter() - t, limit, text))
            return "declined", None, text
        except BackendUnavailable as exc:
            attempts.append(Attempt(name, "unavailable", time.perf_counter() - t, limit,
                                    f"{name} is not installed ({exc})"))
            return "unavailable", None, ""
        except SolverError as exc:
            attempts.append(Attempt(name, "failed", time.perf_counter() - t, limit,
                                    f"{name} failed on this package (a solver failure, not bad input): {exc}"))
            return "failed", None, ""
        except _Overran as exc:
            attempts.append(Attempt(name, "overran", time.perf_counter() - t, limit, str(exc)))
            return "timeout", None, ""
        seconds = time.perf_counter() - t
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
            return done(*last) if r is not None else Outcome(name, None, None, tuple(attempts))
    rest = left()
    overran = [a.backend for a in attempts if a.outcome == "overran"]
    if retry and (timed_out or overran) and (rest is None or rest > 1.0) and time_box is not None:
        name = min(timed_out, key=lambda t: _gap(t[1]))[0] if timed_out else overran[0]
        _, r, _ = attempt(name, rest, again=True)
        if r is not None:
            return done(name, r, len(attempts) - 1)
    if timed_out:   # nobody proved anything: show the time-out that came closest
        return done(*min(timed_out, key=lambda t: _gap(t[1])))
    if last is not None:
        return done(*last)
    return Outcome(backends[0] if backends else None, None, None, tuple(attempts))
