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
bound, its prices) is handed over, so the certificate stays independent; only the time changes.  The
lattice certificate (:mod:`memaudit_solvers.lattice`; first at scale, second otherwise) needs that store: it
proves it optimal or says it cannot (without it, ``--no-warm-start``, it declines and the MILPs run).
"""

from __future__ import annotations

from typing import Callable

from memaudit_solvers import Problem, Result, SolverError
from memaudit_solvers.fallthrough import (FALL_THROUGH, TIME_BOX_CAP, TIME_BOX_FACTOR, TIME_BOX_FLOOR, Attempt, Outcome,
                                          Overran, certify_result, default_time_box, run_backend)
from memaudit_solvers.milp import installed_backends
from memaudit_solvers.milp.model import SCALE_COLUMNS
from memaudit_solvers.registry import BACKENDS, CERTIFIERS, get_method

from .errors import MethodError

__all__ = ["Attempt", "Outcome", "auto_order", "backend_order", "backend_key", "key_backends", "resolve_backend",
           "default_time_box", "certify_store", "declined_message", "attempt_text", "BACKEND_ALIASES",
           "TIME_BOX_FLOOR", "TIME_BOX_FACTOR", "TIME_BOX_CAP", "AUTO_ORDER", "LATTICE_FIRST", "FALL_THROUGH"]

#: short names accepted for the certifying back-ends (``none`` = do not certify)
BACKEND_ALIASES = {"highs": "milp-highs", "cbc": "milp-cbc", "cpsat": "cpsat", "scip": "milp-scip", "lattice": "lattice",
                   "none": None}

#: the order ``auto`` tries the certifying back-ends in (docs/backends.md has the measurements); a package
#: of :data:`LATTICE_FIRST` candidates and units or more tries the lattice certificate first
AUTO_ORDER = ("milp-highs", "lattice", "milp-scip", "milp-cbc", "cpsat")

#: from this many candidates and units on (HiGHS's own threshold of a model *at scale*,
#: ``memaudit_solvers.milp.model.SCALE_COLUMNS``), ``auto`` tries the lattice certificate before HiGHS:
#: there the MILPs' branch-and-bound can stall for minutes on a knapsack gap of less than one grid step
#: that the lattice closes in under a second (``random_problem(10000, seed)`` at 5 %: HiGHS 7-60+ s,
#: the lattice 0.2-0.4 s; docs/backends.md).  Below it HiGHS, an independent MILP, comes first.
LATTICE_FIRST = SCALE_COLUMNS

#: every certifying back-end: the MILPs and the certifiers (those need no package beyond memaudit's own)
_CERTIFYING = {**BACKENDS, **CERTIFIERS}

def auto_order(method: str, problem: Problem | None = None) -> list[str]:
    """The back-ends ``auto`` tries, in order: :data:`AUTO_ORDER` without the method itself, the lattice
    certificate first for a ``problem`` of :data:`LATTICE_FIRST` candidates and units or more.

    Examples
    --------
    >>> auto_order("bnb")
    ['milp-highs', 'lattice', 'milp-scip', 'milp-cbc', 'cpsat']
    >>> auto_order("milp-highs")
    ['lattice', 'milp-scip', 'milp-cbc', 'cpsat']
    >>> from memaudit_solvers.random_problems import random_problem
    >>> auto_order("bnb", random_problem(10000, 0))[:2]
    ['lattice', 'milp-highs']
    """
    order = [b for b in AUTO_ORDER if b != method]
    if problem is not None and problem.n_candidates + problem.n_units >= LATTICE_FIRST and "lattice" in order:
        order.remove("lattice")
        order.insert(0, "lattice")
    return order


def resolve_backend(name: str | None, method: str | None = None) -> str | None:
    """The certifying back-end for ``name``: a MILP method or certifier name, or None for ``none`` / None.

    ``auto`` is the first of :func:`auto_order` and a list ``scip,highs`` its first (the others
    follow it when it times out, declines or fails: :func:`backend_order`).

    Examples
    --------
    >>> resolve_backend("highs"), resolve_backend("milp-cbc"), resolve_backend("none")
    ('milp-highs', 'milp-cbc', None)
    >>> resolve_backend("auto", "bnb"), resolve_backend("auto", "milp-highs")
    ('milp-highs', 'lattice')
    >>> resolve_backend("gurobi")
    Traceback (most recent call last):
    ...
    memaudit.errors.MethodError: unknown back-end 'gurobi'; valid back-ends: cbc, cpsat, highs, lattice, milp-cbc, milp-highs, milp-scip, none, scip, auto
    """
    if name is None:
        return None
    if name == "auto" or (isinstance(name, str) and "," in name):
        order = backend_order(name, method)
        return order[0] if order else None
    if isinstance(name, str) and name in BACKEND_ALIASES:
        return BACKEND_ALIASES[name]
    if isinstance(name, str) and name in _CERTIFYING:
        return name
    raise MethodError(f"unknown back-end {name!r}; valid back-ends: {_valid_backends()}, auto")


def _valid_backends() -> str:
    return ", ".join(sorted(set(BACKEND_ALIASES) | set(_CERTIFYING)))


def backend_order(name, method: str | None = None, problem: Problem | None = None) -> list[str] | None:
    """The back-ends tried in turn, each in a time box, for ``name``; None for one named back-end.

    ``auto`` is :func:`auto_order` (for ``problem``, when given) without the back-ends that are not
    installed; a comma-separated list (``scip,highs``) is that order.

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
        installed = {**installed_backends(), **CERTIFIERS}
        return [b for b in auto_order(method or "", problem) if b in installed]
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


def declined_message(name: str, exc: BaseException) -> str:
    others = ", ".join(n for n in sorted(_CERTIFYING) if n != name)
    return f"{name} declined this package: {exc}; try another back-end ({others})"


def attempt_text(name: str, outcome: str, exc: BaseException) -> str:
    """The report's text of an attempt without a result (the ``explain`` of
    :func:`memaudit_solvers.fallthrough.certify_result`)."""
    if outcome == "declined":
        return declined_message(name, exc)
    if outcome == "unavailable":
        return f"{name} is not installed ({exc})"
    if outcome == "failed":
        return f"{name} failed on this package (a solver failure, not bad input): {exc}"
    return str(exc)


def _run(name: str, problem: Problem, budget: float, time_limit: float | None, hint) -> Result:
    return run_backend(name, problem, budget, time_limit, hint, method=get_method(name))


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


def _run_boxed(name: str, problem: Problem, budget: float, limit: float | None, hint) -> Result:
    """:func:`_run` in a forked child that is stopped when it overruns ``limit`` by more than the grace
    (some back-ends do not check their time limit in every step): :class:`Overran`.  In-process with no
    limit, where fork is missing or this process is itself a daemon (a multiprocessing pool or Dask
    worker may not start children)."""
    import multiprocessing

    if (limit is None or "fork" not in multiprocessing.get_all_start_methods()
            or multiprocessing.current_process().daemon):
        return _run(name, problem, budget, limit, hint)
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, name, problem, budget, limit, hint), daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(limit + _grace(limit)):
            raise Overran(f"{name} did not stop at its time limit of {limit:.3g} s and was stopped "
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


def certify_store(problem: Problem, budget: float, result: Result, backends: list[str], *,
                  time_box: float | None, time_limit: float | None, fall_through: frozenset = FALL_THROUGH,
                  first_decline_final: bool = False, retry: bool = False, warm_start: bool = True, rtol: float,
                  boxed: bool = False, say: Callable[[str], None] = lambda line: None) -> Outcome:
    """:func:`memaudit_solvers.fallthrough.certify_result` (the one fall-through loop, whose parameters these
    are) with the report's texts (:func:`attempt_text`) and, when ``boxed``, each attempt in a forked
    child that is stopped when it overruns its time limit by more than the grace (outcome ``overran``):
    for ``auto``, whose boxes must hold."""
    return certify_result(problem, budget, result, backends, runner=_run_boxed if boxed else _run,
                          time_box=time_box, time_limit=time_limit, fall_through=fall_through,
                          first_decline_final=first_decline_final, retry=retry, warm_start=warm_start, rtol=rtol,
                          explain=attempt_text, say=say)
