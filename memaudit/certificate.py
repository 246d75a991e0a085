"""Certificates (``memaudit-certificate/1``): write one from a solve, read one, and verify one without trusting it."""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from dataclasses import dataclass, field

import numpy as np

from memaudit_solvers import Declined, evaluate, is_feasible
from memaudit_solvers.certify import CERT_RTOL
from memaudit_solvers.objective import infeasibility, total_cost

from . import __version__
from .errors import CertificateError
from .fileio import atomic_write
from .package import compile_package, load_package, package_sha256, stream_cost
from .solve import SolveReport, declined_message, method_time_limit, resolve_backend, run_solver

__all__ = ["CERTIFICATE_FORMAT", "build_certificate", "write_certificate", "write_json", "load_certificate",
           "verify_certificate", "VerifyReport", "Check", "jsonable", "solver_versions"]

#: the certificate format version this module writes and reads
CERTIFICATE_FORMAT = "memaudit-certificate/1"


def jsonable(v):
    """Plain JSON data from results and stats: numpy scalars/arrays unwrapped, non-finite floats as strings."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return [jsonable(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if v is None or isinstance(v, (str, bool, int, float)):
        return v
    return repr(v)


def _gap_settings(result) -> dict:
    return {k: result.stats[k] for k in ("gap_rel", "gap_abs", "grid_step") if k in result.stats}


def _result_entry(result, compiled) -> dict:
    d = result.to_dict()
    return jsonable({
        "method": d["method"], "settings": d["settings"], "status": d["status"], "value": d["value"],
        "cost": d["cost"], "bound": d["bound"], "gap": d["gap"], "wall_time": d["wall_time"],
        "chosen": compiled.ids(result.chosen), "gap_settings": _gap_settings(result), "stats": d["stats"],
        "message": d["message"],
    })


def solver_versions() -> dict:
    """Names and versions of the installed MILP back-ends (recorded in certificates and manifests)."""
    try:
        from memaudit_solvers.milp import backend_versions
    except ImportError:  # pragma: no cover - memaudit_solvers.milp always ships it today
        return {}
    return backend_versions()


def build_certificate(report: SolveReport, package_path, budget_frac: float | None = None) -> dict:
    """The ``memaudit-certificate/1`` dict of a solve.

    ``opt`` is the value of the method's store (recomputed by evaluate); ``store`` its candidate
    ids.  A report that is not certified still gives a certificate, with ``certified: false``
    and the reasons, so ``memaudit verify`` can say so.
    """
    path = os.fspath(package_path)
    compiled = report.compiled
    versions = solver_versions()
    backends = {}
    for r in report.results:
        if r.method in versions:
            backends[r.method] = {"version": versions[r.method], "gap_settings": _gap_settings(r)}
    if report.backend is not None and report.backend not in backends:
        backends[report.backend] = {"version": versions.get(report.backend, "unknown"), "gap_settings": {},
                                    "declined": report.declined}
    cert = {
        "format": CERTIFICATE_FORMAT,
        "memaudit_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "package": {"path": path, "id": report.package.id, "sha256": package_sha256(path),
                    "cost_model": report.package.cost_model},
        "budget": report.budget,
    }
    if budget_frac is not None:
        cert["budget_frac"] = float(budget_frac)
    cert.update({
        "rtol": (report.certification.rtol if report.certification is not None else CERT_RTOL),
        "opt": report.value,
        "store": compiled.ids(report.result.chosen),
        "certified": report.certified,
        "status": report.status,
        "reasons": report.reasons,
        "method": report.method,
        "backend": report.backend,
        "results": [_result_entry(r, compiled) for r in report.results],
        "backends": backends,
    })
    return jsonable(cert)


def write_json(data, path) -> None:
    """Write ``data`` as JSON (indent 2, trailing newline) atomically (see :func:`memaudit.fileio.atomic_write`)."""
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    atomic_write(path, text.encode("utf-8"))


def write_certificate(cert: dict, path) -> None:
    """Write a certificate atomically (see :func:`write_json`)."""
    write_json(cert, path)


# -- reading ------------------------------------------------------------------

def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _check_shape(cert, source: str) -> None:
    def bad(field_, rule, got):
        shown = json.dumps(got) if not isinstance(got, str) else repr(got)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        raise CertificateError(f"{source}: {field_} {rule}; got {shown}")

    if not isinstance(cert, dict):
        raise CertificateError(f"{source}: a certificate must be a JSON object at the top level; "
                               f"got {type(cert).__name__}")
    if cert.get("format") != CERTIFICATE_FORMAT:
        bad("format", f"must be {CERTIFICATE_FORMAT!r}, the only certificate format this memaudit reads",
            cert.get("format"))
    for key in ("package", "budget", "opt", "store", "certified", "results"):
        if key not in cert:
            raise CertificateError(f"{source}: {key} is required in a {CERTIFICATE_FORMAT} certificate")
    pkg = cert["package"]
    if not isinstance(pkg, dict):
        bad("package", "must be an object with id and sha256", pkg)
    for key in ("id", "sha256"):
        if not isinstance(pkg.get(key), str) or not pkg.get(key):
            bad(f"package.{key}", "must be a non-empty string", pkg.get(key))
    if not _number(cert["budget"]) or cert["budget"] < 0:
        bad("budget", "must be a finite number >= 0", cert["budget"])
    if "budget_frac" in cert and (not _number(cert["budget_frac"]) or cert["budget_frac"] < 0):
        bad("budget_frac", "must be a finite number >= 0", cert["budget_frac"])
    if not _number(cert["opt"]):
        bad("opt", "must be a finite number", cert["opt"])
    if not isinstance(cert["store"], list) or not all(isinstance(x, str) for x in cert["store"]):
        bad("store", "must be a list of candidate ids (strings)", cert["store"])
    if "reasons" in cert and (not isinstance(cert["reasons"], list)
                              or not all(isinstance(x, str) for x in cert["reasons"])):
        bad("reasons", "must be a list of strings", cert["reasons"])
    if not isinstance(cert["certified"], bool):
        bad("certified", "must be true or false", cert["certified"])
    if "rtol" in cert and (not _number(cert["rtol"]) or cert["rtol"] <= 0):
        bad("rtol", "must be a finite number > 0", cert["rtol"])
    if not isinstance(cert["results"], list):
        bad("results", "must be a list", cert["results"])


def load_certificate(path) -> dict:
    """Read a certificate file and check its format and shape (not its claims: see :func:`verify_certificate`).

    Raises
    ------
    CertificateError
        One line naming the file and the problem.
    """
    source = os.fspath(path)
    try:
        with open(source, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise CertificateError(f"{source}: no such file") from None
    except OSError as exc:
        raise CertificateError(f"{source}: cannot read the file: {exc.strerror or exc}") from None
    try:
        cert = json.loads(raw.decode("utf-8-sig"), parse_constant=lambda c: c)
    except UnicodeDecodeError:
        raise CertificateError(f"{source}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise CertificateError(f"{source}: not valid JSON: {exc.msg} at line {exc.lineno} "
                               f"column {exc.colno}") from None
    except RecursionError:
        raise CertificateError(f"{source}: JSON nested too deeply to be a certificate") from None
    _check_shape(cert, source)
    return cert


# -- verifying ------------------------------------------------------------------

@dataclass(frozen=True)
class Check:
    """One verification check: ``outcome`` is ``pass``, ``fail`` or ``skip``."""

    name: str
    outcome: str
    detail: str


@dataclass
class VerifyReport:
    """The checks :func:`verify_certificate` ran, in order."""

    package_path: str
    backend: str | None
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when no check failed and nothing was skipped for lack of an earlier check
        (a re-solve skipped on request, ``--backend none``, does not fail)."""
        return all(c.outcome == "pass" or (c.outcome == "skip" and c.name == "optimum")
                   for c in self.checks)

    @property
    def verdict(self) -> str:
        if not self.passed:
            failed = [c.name for c in self.checks if c.outcome == "fail"]
            return "FAILED: " + ", ".join(failed) if failed else "FAILED"
        if self.backend is None:
            return "verified (store and value; the optimum was not re-solved: back-end 'none')"
        return f"verified: {self.backend} re-proved OPT"

    def add(self, name: str, ok: bool | None, detail: str) -> bool:
        self.checks.append(Check(name, "skip" if ok is None else ("pass" if ok else "fail"), detail))
        return bool(ok)

    def to_dict(self) -> dict:
        return {"package": self.package_path, "backend": self.backend, "passed": self.passed,
                "verdict": self.verdict,
                "checks": [{"name": c.name, "outcome": c.outcome, "detail": c.detail} for c in self.checks]}


def _close(a: float, b: float, rtol: float) -> bool:
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


def verify_certificate(package_path, cert, *, backend: str | None = "milp-highs",
                       time_limit: float | None = None) -> VerifyReport:
    """Re-check a certificate against its package, trusting nothing the certificate says.

    The package file is re-read and hashed; the store ids are mapped to candidates of the
    package; the store is checked for feasibility at the certificate's budget and re-evaluated;
    and the optimum is re-proved with ``backend`` (``none`` / None skips that).  Values are
    compared with memaudit's own tolerance ``CERT_RTOL`` (1e-6 relative), never the file's.

    Parameters
    ----------
    package_path : str or PathLike
    cert : dict or str or PathLike
        A certificate (as read by :func:`load_certificate`) or the path of one.

    Raises
    ------
    PackageError, CertificateError, MethodError, BackendUnavailableError
        Unreadable package or certificate, unknown or missing back-end.
    """
    if not isinstance(cert, dict):
        cert = load_certificate(cert)
    else:
        _check_shape(cert, "<certificate>")
    path = os.fspath(package_path)
    backend = resolve_backend(backend)
    time_limit = method_time_limit(time_limit)
    rtol = CERT_RTOL
    report = VerifyReport(path, backend)

    sha = package_sha256(path)
    recorded_sha = cert["package"]["sha256"]
    report.add("package sha256", sha == recorded_sha,
               f"file {sha[:16]}... matches the certificate" if sha == recorded_sha else
               f"file has sha256 {sha}, the certificate records {recorded_sha}: the package changed "
               "after certification (or is another package)")
    pkg = load_package(path)
    ok_id = pkg.id == cert["package"]["id"]
    report.add("package id", ok_id, f"{pkg.id!r}" if ok_id else
               f"package id is {pkg.id!r}, the certificate records {cert['package']['id']!r}")

    budget = float(cert["budget"])
    if "budget_frac" in cert:
        expected = float(cert["budget_frac"]) * stream_cost(pkg)
        report.add("budget", math.isfinite(expected) and _close(budget, expected, 1e-12),
                   f"{budget:g} = {cert['budget_frac']:g} x stream cost {stream_cost(pkg):g}"
                   if math.isfinite(expected) and _close(budget, expected, 1e-12) else
                   f"budget {budget:g} is not budget_frac {cert['budget_frac']:g} x stream cost "
                   f"{stream_cost(pkg):g} = {expected:g}")

    compiled = compile_package(pkg)
    problem = compiled.problem
    store = cert["store"]
    known = set(compiled.candidate_ids)
    unknown = [cid for cid in store if cid not in known]
    dupes = sorted({cid for cid in store if store.count(cid) > 1})
    if unknown or dupes:
        report.add("store ids", False, (f"not candidates of the package: {', '.join(map(repr, unknown))}"
                                        if unknown else f"listed twice: {', '.join(map(repr, dupes))}"))
        for name in ("feasible", "value", "optimum"):
            report.add(name, None, "skipped: the store ids do not check out")
        return report
    report.add("store ids", True, f"{len(store)} candidates of the package")
    idx = compiled.indices(store)

    why = infeasibility(problem, idx, budget)
    report.add("feasible", is_feasible(problem, idx, budget),
               f"cost {total_cost(problem, idx):g} <= budget {budget:g}, at most one candidate per experience"
               if not why else why)

    value = evaluate(problem, idx)
    opt = float(cert["opt"])
    report.add("value", _close(value, opt, rtol),
               f"the store evaluates to {value:.10g} = opt {opt:.10g}" if _close(value, opt, rtol) else
               f"the store evaluates to {value:.10g}, the certificate records opt {opt:.10g}")

    claimed = cert["certified"]
    report.add("claimed certified", claimed, "the certificate records certified: true" if claimed else
               "the certificate itself records that it is not certified: "
               + ("; ".join(map(str, cert.get("reasons") or [])) or "no reason given"))

    if backend is None:
        report.add("optimum", None, "skipped on request (back-end 'none')")
        return report
    settings = {} if time_limit is None else {"time_limit": time_limit}
    try:
        result = run_solver(backend, problem, budget, settings)
    except Declined as exc:
        report.add("optimum", False, declined_message(backend, exc))
        return report
    if result.status != "optimal":
        report.add("optimum", False, f"{backend} did not prove optimality (status {result.status}: "
                                     f"{result.message}); its best value {result.value:.10g}, "
                                     f"bound {result.bound:.10g}")
    else:
        ok = _close(result.value, opt, rtol)
        report.add("optimum", ok, f"{backend} proved OPT = {result.value:.10g} in {result.wall_time:.3g} s"
                   + ("" if ok else f", the certificate records {opt:.10g}"))
    return report
