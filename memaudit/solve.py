"""Solve a package with one method, certify it with an independent back-end, and describe the store."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

from memaudit_solvers import BackendUnavailable, Declined, Problem, ProblemError, Result, SolverError
from memaudit_solvers.certify import CERT_RTOL, Certification, compare_results, run_rescaled
from memaudit_solvers.objective import is_feasible
from memaudit_solvers.registry import (BACKENDS, PROGRESS_METHODS, TIME_LIMIT, check_settings, get_method, method_names,
                                       method_owner, method_settings, stamp_result)

from .errors import MemauditError, MethodError
from .package import CANDIDATE_KINDS, Compiled, Package, compile_package
from .store_view import fully_covered, store_rows, uncovered_units  # noqa: F401  (re-exported)

__all__ = ["SolveReport", "solve_package", "store_rows", "uncovered_units", "resolve_method",
           "resolve_backend", "BACKEND_ALIASES", "BackendUnavailableError", "BackendDeclinedError",
           "method_time_limit", "takes_time_limit", "run_solver", "declined_message", "checked_settings"]

#: short names accepted for the certifying back-ends (``none`` = do not certify)
BACKEND_ALIASES = {"highs": "milp-highs", "cbc": "milp-cbc", "cpsat": "cpsat", "scip": "milp-scip", "none": None}

#: ``backend="auto"`` takes the first of these that differs from the method
AUTO_BACKENDS = ("milp-highs", "milp-cbc", "cpsat")


class BackendUnavailableError(MemauditError, ImportError):
    """An optional solver back-end is not installed; the message says what to ``pip install``."""


class BackendDeclinedError(MemauditError, ValueError):
    """A back-end cannot state this package exactly (e.g. CP-SAT and non-integer data)."""


def _warm_up() -> float:
    """Import the libraries the methods load lazily (scipy's LP for bnb), so no method's time
    includes a one-off import; returns the seconds it took."""
    start = time.perf_counter()
    import scipy.optimize  # noqa: F401  (bnb's LP relaxation)
    return time.perf_counter() - start


def _valid_backends() -> str:
    return ", ".join(sorted(set(BACKEND_ALIASES) | set(BACKENDS)))


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
    prefix, sep, kind = full.partition(":")
    if sep and prefix == "kind" and kind not in CANDIDATE_KINDS:
        raise MethodError(f"unknown candidate kind {kind!r} in method {name!r}; kinds: {', '.join(CANDIDATE_KINDS)}")
    return full


def resolve_backend(name: str | None, method: str | None = None) -> str | None:
    """The certifying back-end for ``name``: a MILP method name, or None for ``none`` / None.

    ``auto`` is the first of :data:`AUTO_BACKENDS` that differs from ``method``.

    Examples
    --------
    >>> resolve_backend("highs"), resolve_backend("milp-cbc"), resolve_backend("none")
    ('milp-highs', 'milp-cbc', None)
    >>> resolve_backend("auto", "bnb"), resolve_backend("auto", "milp-highs")
    ('milp-highs', 'milp-cbc')
    >>> resolve_backend("gurobi")
    Traceback (most recent call last):
    ...
    memaudit.errors.MethodError: unknown back-end 'gurobi'; valid back-ends: cbc, cpsat, highs, milp-cbc, milp-highs, milp-scip, none, scip, auto
    """
    if name is None:
        return None
    if name == "auto":
        return next(b for b in AUTO_BACKENDS if b != method)
    if isinstance(name, str) and name in BACKEND_ALIASES:
        return BACKEND_ALIASES[name]
    if isinstance(name, str) and name in BACKENDS:
        return name
    raise MethodError(f"unknown back-end {name!r}; valid back-ends: {_valid_backends()}, auto")


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


def declined_message(name: str, exc: Exception) -> str:
    others = ", ".join(n for n in sorted(BACKENDS) if n != name)
    return f"{name} declined this package: {exc}; try another back-end ({others})"


def run_solver(name: str, problem: Problem, budget: float, settings: dict, progress: Callable | None = None) -> Result:
    """Run a registered method with its settings checked against its declarations; a missing back-end,
    numbers no solver can state and settings the method rejects become one-line errors (a back-end
    that declines still raises ``Declined``).  ``progress`` reaches the methods that report it."""
    checked = checked_settings(name, settings)
    hook = {"progress": progress} if progress is not None and name in PROGRESS_METHODS else {}
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
    backend_failures : tuple of str
        Back-ends that failed on this package (a solver failure, not bad input), in the order
        tried; the next certifying back-end then ran in their place.
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
    backend_failures: tuple = ()

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
                  settings: dict | None = None) -> SolveReport:
    """Compile ``pkg``, solve it with ``method`` and, independently, with the certifying ``backend``.

    Parameters
    ----------
    pkg : Package
    budget : float
        The resolved budget B (see :func:`memaudit.package.resolve_budget`).
    method : str
        A registered method (default ``bnb``).
    backend : str or None
        ``auto`` (default: ``milp-highs``, or ``milp-cbc`` when the method is ``milp-highs``),
        ``milp-highs``, ``milp-cbc``, ``cpsat``, their short names ``highs`` / ``cbc``, or
        None / ``none`` to skip certification.
    time_limit : float or None
        Seconds, given to the method and to the back-end separately.
    backend_time_limit : float or None
        Seconds for the back-end when it should differ from ``time_limit`` (default: the same).
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
        The method or the back-end is not installed (checked before solving; says what to install).
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
    auto = backend == "auto"
    backend = resolve_backend(backend, name)
    note = (f"certifying back-end {backend}: the method is {AUTO_BACKENDS[0]}"
            if auto and backend != AUTO_BACKENDS[0] else "")
    time_limit = method_time_limit(time_limit, method_owner(name))
    backend_time_limit = (time_limit if backend_time_limit is None
                          else method_time_limit(backend_time_limit, f"back-end {backend!r}"))
    if backend == name:
        raise MethodError(f"the certifying back-end must differ from the method; both are {name!r}: "
                          "choose another --backend or --backend none")
    say = progress or (lambda line: None)
    settings = {**checked_settings(name, dict(settings or {})), **_settings(name, time_limit)}
    backend_settings = _settings(backend, backend_time_limit) if backend is not None else {}
    _warm_up()
    if backend is not None:
        _probe_backend(backend)
    compiled = compile_package(pkg)
    problem = compiled.problem
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
    # a back-end that fails on valid data is a solver failure: say so and try the next one
    failures: list[str] = []
    for candidate in [backend] + [b for b in sorted(BACKENDS) if b not in (backend, name)]:
        say(f"certifying with {candidate}...")
        try:
            backend_result = _run_backend(candidate, problem, budget, backend_settings if candidate == backend
                                          else _settings(candidate, backend_time_limit))
        except Declined as exc:
            if candidate != backend:
                failures.append(declined_message(candidate, exc))
                continue
            return SolveReport(pkg, compiled, float(budget), name, result, backend,
                               declined=declined_message(backend, exc), **common)
        except BackendUnavailable as exc:
            failures.append(f"{candidate} is not installed ({exc})")
            continue
        except SolverError as exc:
            failures.append(f"{candidate} failed on this package (a solver failure, not bad input): {exc}")
            continue
        cert = compare_results(problem, budget, result, backend_result, rtol=rtol)
        return SolveReport(pkg, compiled, float(budget), name, result, candidate, backend_result, cert,
                           backend_failures=tuple(failures), **common)
    return SolveReport(pkg, compiled, float(budget), name, result, backend, backend_failures=tuple(failures),
                       **common)


def _run_backend(name: str, problem: Problem, budget: float, settings: dict) -> Result:
    """Run a certifying back-end; its SolverError and a missing install propagate as they are."""
    return stamp_result(name, run_rescaled(get_method(name), problem, budget, **settings), settings)
