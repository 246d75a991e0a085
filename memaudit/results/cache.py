"""Solve once, reuse after: the results store in front of :func:`memaudit.solve.solve_package`.

A stored solve is reused only when its key matches (package content sha256, budget, method,
back-end, settings, memaudit version, source fingerprint, back-end versions) *and* it re-checks:
both stored stores are mapped back onto the package, re-evaluated by the one evaluate function,
found feasible, and certified again by :func:`memaudit_solvers.certify.compare_results`.  Only the
optimality proofs themselves are taken from the store.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import sys
import traceback

from memaudit_solvers.certify import CERT_RTOL, compare_results
from memaudit_solvers.objective import evaluate, infeasibility, total_cost
from memaudit_solvers.result import Result, relative_gap

from .. import __version__
from ..errors import MemauditError
from ..formats.reader import paused_gc
from ..package import Package, compile_package, package_to_dict, stream_cost
from ..certification import backend_key, key_backends
from ..solve import SolveReport, method_time_limit, resolve_method, solve_package
from .store import code_version, open_store, row_key

__all__ = ["cached_solve", "ResultsCache", "MemoryStore", "package_digest", "versions_of", "solve_key", "score_key",
           "solve_row", "report_from_row", "error_row"]


def package_digest(pkg: Package) -> str:
    """sha256 of the package's canonical JSON (sorted keys, no whitespace).

    Two files that differ only in layout share their results; any change of content does not.
    """
    with paused_gc():   # an acyclic tree of a million containers at 100,000 experiences: half the time went to the collector
        text = json.dumps(package_to_dict(pkg), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)  # JSON-mode data already: no need for canonical_json's unwrapping
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=1)
def _installed_versions() -> tuple:
    from memaudit_solvers.milp import backend_versions

    return tuple(sorted(backend_versions().items()))


def versions_of(*names) -> dict:
    """``{name: version}`` of the MILP back-ends among ``names`` (the others need none).

    Read from the package metadata once per process (installing another back-end version means
    a new process).
    """
    versions = dict(_installed_versions())
    return {n: versions[n] for n in names if n in versions}


def _family(pkg: Package, path=None):
    """The package's family: its generator, else the folder its file is in (a hand-built package of a set)."""
    gen = pkg.meta.get("generator") if isinstance(pkg.meta, dict) else None
    if gen:
        return str(gen)
    if path is not None:
        from pathlib import Path

        return Path(path).resolve().parent.name or None
    return None


def _frac(pkg: Package, budget: float):
    total = stream_cost(pkg)
    return budget / total if total else None


def solve_key(sha: str, budget: float, method: str, backend, settings: dict) -> tuple[str, dict]:
    """``(key, identity)`` of a solve: the identity columns every row under that key carries."""
    ident = dict(kind="solve", package_sha256=sha, budget=float(budget), method=method, backend=backend,
                 settings=settings, memaudit_version=__version__, code_version=code_version(),
                 backend_versions=versions_of(method, *key_backends(backend, method)))
    return row_key(**ident), ident


def score_key(sha: str, budget: float, method: str, settings: dict) -> tuple[str, dict]:
    """``(key, identity)`` of a method's score (its settings: those given over the declared defaults)."""
    ident = dict(kind="score", package_sha256=sha, budget=float(budget), method=method, backend=None,
                 settings=settings, memaudit_version=__version__, code_version=code_version(),
                 backend_versions=versions_of(method))
    return row_key(**ident), ident


def _result_dict(result: Result, compiled) -> dict:
    d = result.to_dict()
    d["chosen"] = compiled.ids(result.chosen)
    return d


def solve_row(report: SolveReport, key: str, ident: dict, *, package_path=None, budget_frac=None,
              extra: dict | None = None) -> dict:
    """The store row of a :class:`SolveReport` (with its certificate when the package file is known)."""
    compiled = report.compiled
    cert = None
    if package_path is not None:
        from ..certificate import build_certificate

        cert = build_certificate(report, package_path, budget_frac=budget_frac)
    reusable = report.certified or (report.backend is None and report.result.status == "optimal")
    result = report.result
    return {"key": key, **ident, "package_id": report.package.id,
            "package_family": _family(report.package, package_path),
            "budget_frac": budget_frac if budget_frac is not None else _frac(report.package, report.budget),
            "status": report.status, "certified": report.certified, "reusable": reusable,
            "value": report.value, "opt": report.value if reusable else None, "ratio": 1.0 if reusable else None,
            "bound": result.bound, "gap": result.gap, "cost": result.cost,
            "wall_time": sum(r.wall_time for r in report.results),
            "store": compiled.ids(result.chosen), "certificate": cert,
            "payload": {"results": [_result_dict(r, compiled) for r in report.results], "declined": report.declined,
                        "reasons": report.reasons, **(extra or {})}}


def error_row(key: str, ident: dict, pkg_id: str, family, budget_frac, exc_text: str, extra=None) -> dict:
    """A failed cell: status ``error``, never certified, never reused (the next run tries again)."""
    return {"key": key, **ident, "package_id": pkg_id, "package_family": family, "budget_frac": budget_frac,
            "status": "error", "certified": False, "reusable": False, "error": exc_text, "payload": dict(extra or {})}


def _number(v) -> float:
    return math.inf if v == "inf" else float(v)


def _rebuild(d: dict, compiled, budget: float) -> Result:
    idx = compiled.indices(d["chosen"])
    idx.sort()
    value = evaluate(compiled.problem, idx)
    if not math.isclose(value, float(d["value"]), rel_tol=1e-9, abs_tol=1e-12):
        raise ValueError(f"stored {d['method']} store evaluates to {value!r}, the row says {d['value']!r}")
    bound = max(_number(d["bound"]), value)
    return Result(method=d["method"], settings=dict(d["settings"]), budget=float(budget), chosen=idx, value=value,
                  cost=total_cost(compiled.problem, idx), status=d["status"], bound=bound,
                  gap=relative_gap(value, bound), wall_time=float(d["wall_time"]), stats=dict(d["stats"]),
                  message=d["message"])


def report_from_row(pkg: Package, row: dict, *, compiled=None, rtol: float = CERT_RTOL) -> SolveReport | None:
    """The :class:`SolveReport` a stored solve row describes, re-checked; None when it does not check out.

    Checks: the row is reusable; its stores map onto ``pkg``, are feasible and re-evaluate to the
    stored values; with a back-end, :func:`compare_results` certifies them again; without one, the
    method's status is ``optimal``.
    """
    if not row or not row.get("reusable") or row.get("status") == "error":
        return None
    compiled = compiled or compile_package(pkg)
    budget = float(row["budget"])
    try:
        results = [_rebuild(d, compiled, budget) for d in row["payload"]["results"]]
    except (KeyError, TypeError, ValueError, MemauditError):
        return None
    if any(infeasibility(compiled.problem, r.chosen, budget) for r in results):
        return None
    method, backend = row["method"], row["backend"]
    if not results or results[0].method != method:
        return None
    if backend is None:
        if results[0].status != "optimal" or len(results) != 1:
            return None
        return SolveReport(pkg, compiled, budget, method, results[0])
    # "auto" or a list certifies with whichever back-end of its order answered first
    if len(results) != 2 or results[1].method not in key_backends(backend, method):
        return None
    cert = compare_results(compiled.problem, budget, results[0], results[1], rtol=rtol)
    if not cert.certified:
        return None
    return SolveReport(pkg, compiled, budget, method, results[0], results[1].method, results[1], cert,
                       auto="," in backend or backend == "auto")


class MemoryStore:
    """The part of :class:`~memaudit.results.store.Store` a cache needs, in memory (a sweep's worker:
    it gets the rows it may reuse and hands back what it wrote)."""

    def __init__(self, rows=None):
        self._rows = {r["key"]: r for r in (rows or [])}
        self.written: list[dict] = []

    def get(self, key):
        return self._rows.get(key)

    def put(self, rows, replace: bool = False):
        rows = list(rows)
        for r in rows:
            if replace or not (self._rows.get(r["key"]) or {}).get("reusable"):
                self._rows[r["key"]] = r
        self.written.extend(rows)
        return len(rows)


class ResultsCache:
    """A results store in front of :func:`solve_package`, for ``cache=`` parameters.

    Parameters
    ----------
    db : path or Store or MemoryStore, optional
        Default: :func:`memaudit.results.store.default_db_path`.
    use_cache : bool
        False re-solves every time (the new row replaces the stored one); results are still written.
    package_path : path, optional
        The file of the package being solved: its certificate is stored with the row.
    command : str, optional
        The command line that produced the rows (shown in reports).

    Attributes
    ----------
    reused : list of dict
        ``{"package", "budget", "method", "backend"}`` of each solve taken from the store.
    """

    def __init__(self, db=None, *, use_cache: bool = True, package_path=None, command: str | None = None,
                 family: str | None = None):
        self.store = db if isinstance(db, MemoryStore) else open_store(db)
        self.use_cache = use_cache
        self.package_path = package_path
        self.command = command if command is not None else " ".join(["memaudit", *sys.argv[1:]])
        self.family = family
        self.reused: list[dict] = []
        self._digests: dict[int, tuple[Package, str]] = {}
        self._reports: dict[str, tuple] = {}

    def digest(self, pkg: Package) -> str:
        hit = self._digests.get(id(pkg))
        if hit is None or hit[0] is not pkg:
            hit = (pkg, package_digest(pkg))
            self._digests[id(pkg)] = hit
        return hit[1]

    def solve_package(self, pkg: Package, *, budget: float, method: str = "bnb", backend="milp-highs",
                      time_limit=None, backend_time_limit=None, rtol: float = CERT_RTOL, progress=None,
                      budget_frac=None, settings=None, time_box=None, warm_start: bool = True) -> SolveReport:
        """:func:`memaudit.solve.solve_package`, through the store (same arguments, same report)."""
        report, _ = self.solve(pkg, budget=budget, method=method, backend=backend, time_limit=time_limit,
                               backend_time_limit=backend_time_limit, rtol=rtol, progress=progress,
                               budget_frac=budget_frac, settings=settings, time_box=time_box,
                               warm_start=warm_start)
        return report

    def solve(self, pkg: Package, *, budget: float, method: str = "bnb", backend="milp-highs", time_limit=None,
              backend_time_limit=None, rtol: float = CERT_RTOL, progress=None,
              budget_frac=None, settings=None, time_box=None, warm_start: bool = True) -> tuple[SolveReport, bool]:
        """``(report, reused)``: the stored certified solve when one checks out, else a fresh one (stored).

        The key names the back-end as requested: ``auto`` (whichever of its order certified) is
        another key than a named back-end.  Neither the time box nor the warm start is in it: only
        certified rows are reused, and what they certify does not depend on either.
        """
        name = resolve_method(method)
        requested, backend = backend, backend_key(backend, name)
        time_limit = method_time_limit(time_limit)
        backend_time_limit = time_limit if backend_time_limit is None else method_time_limit(backend_time_limit)
        method_settings = dict(settings or {})
        settings = {"time_limit": time_limit, "rtol": float(rtol)}
        if backend_time_limit != time_limit:
            settings["backend_time_limit"] = backend_time_limit
        if method_settings:
            settings["method_settings"] = method_settings
        key, ident = solve_key(self.digest(pkg), budget, name, backend, settings)
        seen = self._reports.get(key)
        if seen is not None and seen[0] is pkg:  # solved or re-checked earlier through this cache
            return seen[1], seen[2]
        if self.use_cache:
            report = report_from_row(pkg, self.store.get(key), rtol=rtol)
            if report is not None:
                self.reused.append({"package": pkg.id, "budget": float(budget), "method": name, "backend": backend})
                self._reports[key] = (pkg, report, True)
                return report, True
        report = solve_package(pkg, budget=budget, method=name, backend=requested, time_limit=time_limit,
                               backend_time_limit=backend_time_limit, rtol=rtol, progress=progress,
                               settings=method_settings, time_box=time_box, warm_start=warm_start)
        row = solve_row(report, key, ident, package_path=self.package_path, budget_frac=budget_frac,
                        extra={"command": self.command})
        if self.family:
            row["package_family"] = self.family
        self.store.put([row], replace=True)
        self._reports[key] = (pkg, report, False)
        return report, False

    def record_scores(self, pkg: Package, rep, settings: dict | None = None) -> None:
        """Write each method's score of a :class:`memaudit.baselines.BaselineReport` to the store.

        ``settings`` is ``{method: settings as requested}`` (the key).  Rows have status ``scored``;
        one is reusable when OPT was certified and the method ran without a time limit (every
        method is deterministic for its settings, seeds included).
        """
        settings = settings or {}
        sha = self.digest(pkg)
        rows = []
        for s in rep.scores:
            key, ident = score_key(sha, rep.budget, s.method, dict(settings.get(s.method, {})))
            rows.append({"key": key, **ident, "package_id": pkg.id,
                         "package_family": self.family or _family(pkg, self.package_path),
                         "budget_frac": rep.budget_frac, "status": "scored", "certified": False,
                         "reusable": bool(rep.opt_certified) and "time_limit" not in ident["settings"],
                         "value": s.value, "opt": rep.opt, "ratio": s.ratio, "cost": s.cost,
                         "wall_time": s.wall_time, "store": list(s.chosen),
                         "payload": {"settings_used": s.settings, "opt_certified": bool(rep.opt_certified),
                                     "opt_status": rep.opt_status, "units_covered": s.units_covered,
                                     "units_total": s.units_total, "validity_covered": s.validity_covered,
                                     "validity_total": s.validity_total, "kinds": dict(s.kinds),
                                     "command": self.command}})
        self.store.put(rows, replace=True)


def cached_solve(pkg: Package, *, budget: float, method: str = "bnb", backend="milp-highs", time_limit=None,
                 db=None, use_cache: bool = True, package_path=None, budget_frac=None,
                 rtol: float = CERT_RTOL, progress=None) -> tuple[SolveReport, bool]:
    """Solve and certify ``pkg`` through the results store: ``(report, reused)``.

    A stored certified solve is reused (``reused`` True) only when its key matches and it
    re-checks (see the module docstring); anything else is solved afresh with
    :func:`memaudit.solve.solve_package` and written to the store.  ``use_cache=False``
    always re-solves.

    Examples
    --------
    >>> import os, tempfile
    >>> from memaudit.package import load_package
    >>> pkg = load_package("packages_data/examples/quickstart.json")
    >>> db = os.path.join(tempfile.mkdtemp(), "r.sqlite")
    >>> first, reused = cached_solve(pkg, budget=30, db=db)
    >>> again, reused_again = cached_solve(pkg, budget=30, db=db)
    >>> reused, reused_again, again.status, again.value == first.value
    (False, True, 'certified', True)
    """
    cache = ResultsCache(db, use_cache=use_cache, package_path=package_path)
    try:
        return cache.solve(pkg, budget=budget, method=method, backend=backend, time_limit=time_limit, rtol=rtol,
                           progress=progress, budget_frac=budget_frac)
    finally:
        if not isinstance(cache.store, MemoryStore):
            cache.store.close()


def format_exception(exc: BaseException) -> str:
    """``Type: message`` plus the innermost frame, on one line."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}{where}"
