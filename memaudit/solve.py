"""Solve a package with one method, certify it with an independent back-end, and describe the store."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

from memaudit_solvers import BackendUnavailable, Declined, Problem, ProblemError, Result, SolverError
from memaudit_solvers.certify import CERT_RTOL, Certification, run_rescaled
from memaudit_solvers.objective import is_feasible
from memaudit_solvers.registry import (BACKENDS, CERTIFIERS, HINTED, PROGRESS_METHODS, TIME_LIMIT, check_settings, get_method, method_names,
                                       method_owner, method_settings, stamp_result)

from .certification import (AUTO_ORDER, BACKEND_ALIASES, backend_order, certify_store, declined_message, default_time_box,
                            resolve_backend)
from .errors import MemauditError, MethodError
from .package import CANDIDATE_KINDS, Compiled, Package, compile_package
from .store_view import fully_covered, store_rows, uncovered_units  # noqa: F401  (re-exported)

__all__ = ["SolveReport", "solve_package", "store_rows", "uncovered_units", "resolve_method",
           "resolve_backend", "BACKEND_ALIASES", "BackendUnavailableError", "BackendDeclinedError",
           "method_time_limit", "takes_time_limit", "run_solver", "declined_message", "checked_settings"]


class BackendUnavailableError(MemauditError, ImportError):
    """An optional solver back-end is not installed; the message says what to ``pip install``."""


class BackendDeclinedError(MemauditError, ValueError):
    """A back-end cannot state this package exactly (e.g. CP-SAT and non-integer data)."""


def _warm_up() -> float:
    """Import the library the methods load lazily (highspy: bnb's node LP, and the first certifying
    back-end of ``auto``), so no method's time includes a one-off import; returns the seconds it took.
    Nothing on the solve path uses scipy.optimize any more, so it is not loaded."""
    start = time.perf_counter()
    try:
        import highspy  # noqa: F401
    except ImportError:   # a broken install: whatever needs it raises its own error where it is used
        pass
    return time.perf_counter() - start


def resolve_method(name: str) -> str:
    """The registered method name for ``name`` (``highs`` / ``cbc`` are accepted for the MILPs).

    Examples
    --------
    >>> resolve_method("bnb"), resolve_method("highs")
    ('bnb', 'milp-highs')
    >>> resolve_method("simplex")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    memaudit.errors.MethodError: unknown method 'simplex'; valid methods: bnb, brute, ..., kind:<k>
    """
    if not isinstance(name, str):
        raise MethodError(f"a method name must be a string; got {name!r}; valid methods: {method_names()}")
    full = BACKEND_ALIASES.get(name, name)
    try:
        get_method(full)
    except ValueError as exc:
        raise MethodError(str(exc).replace(repr(full), repr(name), 1)) from None
    if full in CERTIFIERS:
        raise MethodError(f"{name!r} is a certifier: it proves a given store optimal and chooses none itself; "
                          f"use it as --backend {name} (valid methods: {method_names()})")
    prefix, sep, kind = full.partition(":")
    if sep and prefix == "kind" and kind not in CANDIDATE_KINDS:
        raise MethodError(f"unknown candidate kind {kind!r} in method {name!r}; kinds: {', '.join(CANDIDATE_KINDS)}")
    return full


def method_time_limit(time_limit, owner: str = "solve") -> float | None:
    """Validate a time limit in seconds with the declared ``time_limit`` setting (None or infinity: no limit).

    Examples
    --------
    >>> method_time_limit(5), method_time_limit(float("inf"))
    (5.0, None)
    >>> method_time_limit(float("nan"))
    Traceback (most recent call last):
    ...
    memaudit.errors.MethodError: solve: setting 'time_limit' must be none or a number > 0; got nan
    """
    try:
        value = TIME_LIMIT.check(owner, time_limit)
    except ValueError as exc:
        raise MethodError(str(exc)) from None
    return None if value is None or math.isinf(value) else value


def takes_time_limit(name: str) -> bool:
    """True when the registered method ``name`` declares a ``time_limit`` setting."""
    return any(s.name == "time_limit" for s in method_settings(resolve_method(name)))


def _search_progress(say: Callable[[str], None]) -> Callable:
    """A method's ``progress`` callable that prints one line per report (bnb reports about once a
    second: nodes, incumbent, bound, gap, elapsed)."""
    def report(p) -> None:
        gap = f"{100 * p.gap:.3g}%" if math.isfinite(p.gap) else "inf"
        say(f"  {p.elapsed:6.1f} s  nodes {p.nodes}  incumbent {p.incumbent:.10g}  bound {p.bound:.10g}  gap {gap}")
    return report


def _settings(name: str, time_limit: float | None) -> dict:
    return {} if time_limit is None else checked_settings(name, {"time_limit": time_limit})


def checked_settings(name: str, settings: dict) -> dict:
    """``settings`` checked against what method ``name`` declares; a MethodError in the one template."""
    try:
        return check_settings(name, settings)
    except ValueError as exc:
        raise MethodError(str(exc)) from None


def run_solver(name: str, problem: Problem, budget: float, settings: dict, progress: Callable | None = None,
               hint=None) -> Result:
    """Run a registered method with its settings checked against its declarations; a missing back-end,
    numbers no solver can state and settings the method rejects become one-line errors (a back-end
    that declines still raises ``Declined``).  ``progress`` reaches the methods that report it, ``hint``
    (a store) those that take one (:data:`~memaudit_solvers.registry.HINTED`)."""
    checked = checked_settings(name, settings)
    hook = {"progress": progress} if progress is not None and name in PROGRESS_METHODS else {}
    if hint is not None and name in HINTED:
        hook["hint"] = hint
    try:
        return stamp_result(name, run_rescaled(get_method(name), problem, budget, **checked, **hook), checked)
    except BackendUnavailable as exc:
        raise BackendUnavailableError(str(exc)) from exc
    except (ProblemError, SolverError) as exc:
        # numbers the loader accepts but no solver can state (e.g. weights near 1e308)
        raise MemauditError(f"{name} cannot solve this package: {exc}") from exc
    except Declined:
        raise
    except (ValueError, TypeError) as exc:
        # a rule the method checks beyond its declarations
        raise MethodError(f"{method_owner(name)}: {exc}") from exc


def _probe_backend(name: str) -> None:
    """Fail fast when ``name`` is not installed: solve a one-candidate problem with it."""
    tiny = Problem.build([1.0], [0], [[1.0]], [1.0])
    run_solver(name, tiny, 1.0, {})


@dataclass(frozen=True, eq=False)
class SolveReport:
    """Everything :func:`solve_package` computed: inputs, both results and their comparison.

    Attributes
    ----------
    package : Package
    compiled : Compiled
    budget : float
    method : str
        Registered name of the method that chose the store.
    result : Result
        The method's result; its store is *the* store of the report.
    backend : str or None
        The certifying back-end, None when certification was skipped.
    backend_result : Result or None
        None when the back-end was skipped or declined.
    certification : Certification or None
        ``compare_results`` of both results; None when there is no back-end result.
    declined : str
        Why the back-end declined the package ("" when it did not).
    backend_note : str
        How the back-end was chosen when ``backend="auto"`` picked another than the default
        ("" otherwise).
    startup_time : float
        Seconds spent before any method ran (imports, compiling the package, probing the
        back-end); not part of any method's ``wall_time``.
    attempts : tuple of Attempt
        Every certifying back-end run, in order (:class:`memaudit.certification.Attempt`): which
        timed out after how long, declined, failed or is not installed, and which one counted.
    time_box : float or None
        Seconds each back-end had in ``auto`` (None for an explicit back-end: its time limit).
    auto : bool
        The back-end was chosen by ``auto`` (the order of :data:`memaudit.certification.AUTO_ORDER`).
    warm_start : bool
        The back-ends were given the method's store as a MIP start.
    """

    package: Package
    compiled: Compiled
    budget: float
    method: str
    result: Result
    backend: str | None = None
    backend_result: Result | None = None
    certification: Certification | None = None
    declined: str = ""
    backend_note: str = ""
    startup_time: float = 0.0
    attempts: tuple = ()
    time_box: float | None = None
    auto: bool = False
    warm_start: bool = False

    @property
    def backend_failures(self) -> tuple:
        """One line per back-end attempt that did not count (timed out, declined, failed, not
        installed), in the order tried; the next back-end then ran in its place."""
        return tuple(a.line() for a in self.attempts if not a.counted and not (self.declined and a.detail == self.declined))

    @property
    def warm_started(self) -> dict | None:
        """``{"from": method, "n_chosen", "value"}`` when the counted back-end started from the
        method's store, else None."""
        b = self.backend_result
        if b is None or "warm_start" not in b.stats:
            return None
        return {"from": self.method, **b.stats["warm_start"]}

    def certification_log(self) -> dict:
        """How the store was certified, for ``--json`` and the certificate: the mode (``auto`` or
        the named back-end), the time box, the warm start and every attempt."""
        return {"mode": "auto" if self.auto else "explicit", "time_box": self.time_box,
                "certified_by": self.backend_result.method if self.certified and self.backend_result else None,
                "warm_start": self.warm_started, "attempts": [a.to_dict() for a in self.attempts]}

    @property
    def certified(self) -> bool:
        return self.certification is not None and self.certification.certified

    @property
    def status(self) -> str:
        """``certified``; ``optimal (not certified)`` when the method proved optimality and no
        back-end was asked for; otherwise ``not certified``."""
        if self.certified:
            return "certified"
        if self.backend is None and self.result.status == "optimal":
            return "optimal (not certified)"
        return "not certified"

    @property
    def value(self) -> float:
        """F of the store (recomputed by evaluate inside the method's Result)."""
        return self.result.value

    @property
    def reasons(self) -> list[str]:
        """Why the store is not certified (empty when it is)."""
        if self.certified:
            return []
        if self.backend is None:
            return ["no certifying back-end was run (back-end 'none')"]
        if self.declined:
            return [*self.backend_failures, self.declined]
        if self.certification is None:
            return list(self.backend_failures)
        return [*self.backend_failures, *self.certification.reasons]

    @property
    def results(self) -> list[Result]:
        return [self.result] + ([self.backend_result] if self.backend_result is not None else [])

    @property
    def backend_proved(self) -> bool:
        """True when the back-end proved an optimum that the method did not reach: the method
        stopped short (time-out) or is a heuristic, and the back-end's store is feasible, proven
        optimal and worth more.  The store is still not certified (one proof only)."""
        b = self.backend_result
        return (not self.certified and b is not None and b.status == "optimal"
                and self.result.status != "optimal" and b.value > self.result.value
                and is_feasible(self.compiled.problem, b.chosen, self.budget))

    @property
    def best_result(self) -> Result:
        """The result whose store a reader should see: the back-end's when :attr:`backend_proved`,
        else the method's."""
        return self.backend_result if self.backend_proved else self.result


def solve_package(pkg: Package, *, budget: float, method: str = "bnb", backend: str | None = "auto",
                  time_limit: float | None = None, backend_time_limit: float | None = None,
                  rtol: float = CERT_RTOL, progress: Callable[[str], None] | None = None,
                  settings: dict | None = None, time_box: float | None = None,
                  warm_start: bool = True) -> SolveReport:
    """Compile ``pkg``, solve it with ``method`` and, independently, with the certifying ``backend``.

    Parameters
    ----------
    pkg : Package
    budget : float
        The resolved budget B (see :func:`memaudit.package.resolve_budget`).
    method : str
        A registered method (default ``bnb``).
    backend : str or None
        ``auto`` (default): the back-ends of :func:`memaudit.certification.auto_order` in turn, each
        in a time box, falling through to the next on a time-out, a decline, a failure or a missing
        install (every attempt is in ``SolveReport.attempts``); or one back-end, ``lattice``, ``milp-highs``,
        ``milp-scip``, ``cpsat``, ``milp-cbc`` or a short name (``highs``, ``scip``, ``cbc``), run
        with its time limit as given (falling through only past a solver failure); or None /
        ``none`` to skip certification.
    time_limit : float or None
        Seconds, given to the method and to the back-end separately.
    backend_time_limit : float or None
        Seconds for the back-end when it should differ from ``time_limit`` (default: the same);
        with ``auto`` the time all attempts share.
    time_box : float or None
        Seconds each back-end gets with ``auto`` (default
        :func:`memaudit.certification.default_time_box` of the method's time: the larger of 10 s and
        five times the method's time, at most 60 s).  When every attempt times out, the one that came closest runs
        again with what is left of ``backend_time_limit``.  Ignored for an explicit back-end.
    warm_start : bool
        Give each back-end the method's store as a MIP start (default True): it checks the store
        in its own model and proves its own bound; only its time changes.
    progress : callable, optional
        Called with a short line ("solving with bnb...") before each long step, and with the
        search's own progress lines (elapsed, nodes, incumbent, bound, gap) from methods that
        report it (bnb, about once a second).
    settings : dict, optional
        The method's other declared settings (e.g. ``{"node_lp": False}`` for bnb), checked against
        its declarations; ``time_limit`` is the argument above.

    Returns
    -------
    SolveReport

    Raises
    ------
    MethodError
        Unknown method or back-end (the message lists the valid names), the back-end equals the
        method, or a bad time limit.
    BackendUnavailableError
        The method or a named back-end is not installed (checked before solving; says what to
        install).  ``auto`` leaves the back-ends that are not installed out of its order; in a list a
        missing one is an ``unavailable`` attempt and the next one runs.
    BackendDeclinedError
        The *method* cannot state this package (a declining *back-end* is not an error: the
        report is then ``not certified`` and says why).

    Examples
    --------
    >>> from memaudit.package import package_from_dict
    >>> pkg = package_from_dict({"format": "memaudit-package/1", "id": "toy", "cost_model": "words",
    ...     "experiences": [{"id": "e1", "text": "We deploy to eu-west-2."}],
    ...     "units": [{"id": "region", "kind": "current", "weight": 2}],
    ...     "candidates": [{"id": "e1.raw", "experience": "e1", "kind": "raw", "text": "We deploy to eu-west-2.",
    ...                     "coverage": {"region": 1}},
    ...                    {"id": "e1.fact", "experience": "e1", "kind": "fact", "text": "region: eu-west-2",
    ...                     "coverage": {"region": 1}}]})
    >>> report = solve_package(pkg, budget=3)
    >>> report.status, report.value, [row["candidate"] for row in store_rows(report)]
    ('certified', 2.0, ['e1.fact'])
    """
    start = time.perf_counter()
    name = resolve_method(method)
    requested = backend
    order = backend_order(backend, name)    # None for one named back-end
    auto = order is not None
    if auto and not order:
        raise BackendUnavailableError("no certifying back-end is installed: pip install highspy")
    backend = order[0] if order else resolve_backend(backend, name)
    note = (f"certifying back-end {backend}: the method is {AUTO_ORDER[0]}"
            if auto and backend != AUTO_ORDER[0] and name == AUTO_ORDER[0] else "")
    time_limit = method_time_limit(time_limit, method_owner(name))
    backend_time_limit = (time_limit if backend_time_limit is None
                          else method_time_limit(backend_time_limit, f"back-end {backend!r}"))
    if backend == name:
        raise MethodError(f"the certifying back-end must differ from the method; both are {name!r}: "
                          "choose another --backend or --backend none")
    say = progress or (lambda line: None)
    settings = {**checked_settings(name, dict(settings or {})), **_settings(name, time_limit)}
    if time_box is not None and (isinstance(time_box, bool) or not isinstance(time_box, (int, float))
                                 or not time_box > 0 or math.isinf(time_box)):
        raise MethodError(f"solve: the time box must be a number of seconds > 0; got {time_box!r}")
    _warm_up()
    if backend is not None and not auto and backend not in CERTIFIERS:   # auto falls through past a missing or
        _probe_backend(backend)                                          # failing back-end; a certifier is ours
    compiled = compile_package(pkg)
    problem = compiled.problem
    if auto:
        order = backend_order(requested, name, problem)    # at scale the lattice certificate comes first
    common = dict(backend_note=note, startup_time=time.perf_counter() - start)
    if note:
        say(note)
    say(f"solving with {name}...")
    try:
        result = run_solver(name, problem, budget, settings,
                            progress=_search_progress(progress) if progress is not None else None)
    except Declined as exc:
        raise BackendDeclinedError(declined_message(name, exc)) from exc
    if backend is None:
        return SolveReport(pkg, compiled, float(budget), name, result, **common)
    if auto:
        box = time_box if time_box is not None else default_time_box(result.wall_time)
        out = certify_store(problem, budget, result, order, time_box=box, time_limit=backend_time_limit,
                            retry=True, warm_start=warm_start, rtol=rtol, say=say, boxed=True)
    else:
        box = None
        # a back-end that fails on valid data is a solver failure: say so and try the next one
        out = certify_store(problem, budget, result, [backend] + [b for b in sorted(BACKENDS) if b not in (backend, name)],
                            time_box=backend_time_limit, time_limit=None, fall_through=_EXPLICIT_FALL_THROUGH,
                            first_decline_final=True, warm_start=warm_start, rtol=rtol, say=say)
    return SolveReport(pkg, compiled, float(budget), name, result, out.backend, out.backend_result, out.certification,
                       declined=out.declined, attempts=out.attempts, time_box=box, auto=auto,
                       warm_start=warm_start, **common)


#: ``auto`` falls through on every outcome but a proof (the default of certify_store); an explicit
#: back-end only past a failure
_EXPLICIT_FALL_THROUGH = frozenset({"declined", "failed", "unavailable"})
