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
from memaudit_solvers.registry import CERTIFIERS

from pydantic import ValidationError

from . import __version__
from .errors import CertificateError
from .fileio import atomic_write
from .formats.certificate import CERTIFICATE_FORMAT, Certificate
from .formats.reader import read_json
from .formats.translate import json_kind, show, validation_message
from .package import compile_package, load_package, loaded_sha256, package_sha256, stream_cost
from .solve import SolveReport, declined_message, method_time_limit, resolve_backend, run_solver

__all__ = ["CERTIFICATE_FORMAT", "build_certificate", "write_certificate", "write_json", "load_certificate",
           "verify_certificate", "VerifyReport", "Check", "jsonable", "solver_versions"]


def jsonable(v):
    """Plain JSON data from results and stats: numpy scalars/arrays unwrapped, non-finite floats as strings."""
    t = type(v)
    if t is str or t is int or t is bool or v is None:      # the common leaves (ids, counts) first: a store lists thousands
        return v
    if t is list and all(type(x) is str for x in v):
        return list(v)
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
    """Names and versions of the installed MILP back-ends and of the certifiers (recorded in certificates
    and manifests); a certifier is memaudit's own code."""
    try:
        from memaudit_solvers.milp import backend_versions
    except ImportError:  # pragma: no cover - memaudit_solvers.milp always ships it today
        return {}
    return {**backend_versions(), **{name: f"memaudit {__version__} (exact arithmetic)" for name in CERTIFIERS}}


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
        "package": {"path": path, "id": report.package.id,
                    "sha256": loaded_sha256(report.package, path) or package_sha256(path),
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
        "certification": report.certification_log(),
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

def _check_shape(cert, source: str) -> Certificate:
    if not isinstance(cert, dict):
        raise CertificateError(f"{source}: a certificate must be a JSON object at the top level; "
                               f"got {json_kind(cert)}")
    if cert.get("format") != CERTIFICATE_FORMAT:
        raise CertificateError(f"{source}: format must be {CERTIFICATE_FORMAT!r}, the only certificate format "
                               f"this memaudit reads; got {show(cert.get('format'))}")
    try:
        return Certificate.model_validate(cert)
    except ValidationError as exc:
        raise CertificateError(validation_message(exc, cert, Certificate, source, "the certificate")) from None


def load_certificate(path) -> dict:
    """Read a certificate file and check its format and shape (not its claims: see :func:`verify_certificate`).

    The file is read once through :func:`memaudit.formats.read_json` (size limit, duplicate keys and
    NaN literals refused, ...) and checked against :class:`memaudit.formats.certificate.Certificate`.

    Raises
    ------
    CertificateError
        One line naming the file, the field, the rule and the value received.
    """
    data = read_json(path, what="certificate", error=CertificateError).data
    _check_shape(data, os.fspath(path))
    return data


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


def _recorded_problems(cert: Certificate, compiled, budget: float, rtol: float) -> list[str]:
    """Why ``certified: true`` is not supported by the certificate's own records (empty when it is):
    status, reasons, the method's and the back-end's results (both proved optimal, values agreeing
    with opt, each store feasible and re-evaluating to its recorded value)."""
    problems = []
    if cert.status != "certified":
        problems.append(f"status is {show(cert.status)}, not 'certified'")
    if cert.reasons:
        problems.append(f"reasons are recorded ({show(cert.reasons[0])}...)")
    if cert.rtol is not None and cert.rtol > CERT_RTOL:
        problems.append(f"rtol {cert.rtol:g} is looser than memaudit's {CERT_RTOL:g}")
    if not cert.method or not cert.backend or cert.method == cert.backend:
        problems.append(f"method {show(cert.method)} and backend {show(cert.backend)} must be two different "
                        "solvers")
    by_method = {r.method: r for r in cert.results}
    known = set(compiled.candidate_ids)
    for name in dict.fromkeys(n for n in (cert.method, cert.backend) if n):
        r = by_method.get(name)
        if r is None:
            problems.append(f"no recorded result of {show(name)}")
            continue
        if r.status != "optimal":
            problems.append(f"{name} recorded status {show(r.status)}, not optimal")
        if not _close(r.value, cert.opt, rtol):
            problems.append(f"{name} recorded value {r.value:.10g}, not opt {cert.opt:.10g}")
        bad = [c for c in r.chosen if c not in known]
        if bad or len(set(r.chosen)) != len(r.chosen):
            problems.append(f"{name}'s recorded store " + (f"names {show(bad[0])}, not a candidate" if bad
                                                            else "lists a candidate twice"))
            continue
        if name == cert.method and sorted(r.chosen) != sorted(cert.store):
            problems.append(f"the store is not the store {name} recorded")
        idx = compiled.indices(r.chosen)
        if not is_feasible(compiled.problem, idx, budget):
            problems.append(f"{name}'s recorded store is infeasible: {infeasibility(compiled.problem, idx, budget)}")
        value = evaluate(compiled.problem, idx)
        if not _close(value, r.value, rtol):
            problems.append(f"{name}'s recorded store evaluates to {value:.10g}, not its recorded {r.value:.10g}")
    return problems


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
        model = Certificate.model_validate(cert)
    else:
        model = _check_shape(cert, "<certificate>")
    path = os.fspath(package_path)
    backend = resolve_backend(backend)
    time_limit = method_time_limit(time_limit)
    rtol = CERT_RTOL
    report = VerifyReport(path, backend)

    pkg = load_package(path)
    sha = loaded_sha256(pkg)
    recorded_sha = cert["package"]["sha256"]
    report.add("package sha256", sha == recorded_sha,
               f"file {sha[:16]}... matches the certificate" if sha == recorded_sha else
               f"file has sha256 {sha}, the certificate records {show(recorded_sha)}: the package changed "
               "after certification (or is another package)")
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
    if claimed:
        problems = _recorded_problems(model, compiled, budget, rtol)
        report.add("recorded results", not problems,
                   "; ".join(problems) if problems else
                   f"{model.method} and {model.backend} both recorded proved optimal at {opt:.10g}, "
                   "each store re-evaluates to its value")

    if backend is None:
        report.add("optimum", None, "skipped on request (back-end 'none')")
        return report
    settings = {} if time_limit is None else {"time_limit": time_limit}
    hint = None
    if backend in CERTIFIERS:              # a certifier re-proves the recorded store (checked above)
        if why:
            report.add("optimum", False, f"{backend} proves a given store optimal, and the recorded store is "
                                         "infeasible")
            return report
        hint = idx
    try:
        result = run_solver(backend, problem, budget, settings, hint=hint)
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
