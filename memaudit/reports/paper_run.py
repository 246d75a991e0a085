"""Running the MEMAUDIT paper's experiments: the base sweep, the stress heat-map and the certification audit
(:func:`run_paper`), into a :class:`PaperReport` of every measured number."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .enumeration import Enumeration, enumerate_stores
from .paper_protocol import (BACKEND, BASE_METHODS, DISTRIBUTIONS, DROPPED, FRACS, NO_TOMBSTONE, PAPER, STRESS_METHODS,
                             PaperReportError, bootstrap_ci, invalidation_covered, paper_budgets)

__all__ = ["PaperReport", "run_paper", "paper_json", "default_jobs"]


@dataclass
class _Compiled:
    distribution: str
    seed: int
    package: object
    problem: object
    validity: np.ndarray
    total_cost: float
    enumeration: Enumeration
    no_tombstone: np.ndarray   # mask of the stores without tombstone and compound_update candidates

    def ablated_problem(self):
        """The package without tombstone and compound_update candidates, compiled (for ``certify``)."""
        from ..generators.ablate import ablate
        from ..package import compile_package

        return compile_package(ablate(self.package, DROPPED))


def _compile(distribution: str, seed: int) -> _Compiled:
    from ..generators.paper import paper_package, total_candidate_cost
    from ..package import compile_package

    pkg = paper_package(distribution, seed)
    problem = compile_package(pkg).problem
    validity = np.array([u.kind == "validity" for u in pkg.units], dtype=bool)
    enum = enumerate_stores(problem)
    dropped = [i for i, c in enumerate(pkg.candidates) if c.kind in DROPPED]
    return _Compiled(distribution, seed, pkg, problem, validity, total_candidate_cost(pkg), enum,
                     enum.without(dropped))


def _certified_opt(problem, budget: float):
    """bnb's optimum and HiGHS's, and their :class:`memaudit_solvers.certify.Certification`."""
    from memaudit_solvers.certify import compare_results
    from memaudit_solvers.registry import get_method

    a = get_method("bnb")(problem, budget)
    b = get_method(BACKEND)(problem, budget)
    return a, b, compare_results(problem, budget, a, b)



@dataclass
class PaperReport:
    """Every measured number of the paper's experiments (see :func:`run_paper`)."""

    n_seeds: int
    audit_seeds: int
    budgets: list
    mean_total_cost: float
    base_rows: list = field(default_factory=list)
    stress_rows: list = field(default_factory=list)
    audit_rows: list = field(default_factory=list)
    seconds: dict = field(default_factory=dict)
    audit_budgets: list = field(default_factory=list)
    audit_mean_total_cost: float = 0.0
    audit_solves: int = 0
    certified_all: bool = False

    # -- aggregates -----------------------------------------------------
    def base(self) -> dict:
        """``{"<B>": {"<method>": mean ratio}}`` over the base seeds (methods and ``no_tombstone``)."""
        out = {}
        for b in self.budgets:
            rows = [r for r in self.base_rows if r["budget"] == b]
            out[str(b)] = {m: float(np.mean([r["ratio"][m] for r in rows])) for m in (*BASE_METHODS, NO_TOMBSTONE)}
        return out

    def base_intervals(self) -> dict:
        """``{"<B>": {"<method>": (low, high)}}``: bootstrap 95 % intervals of the mean ratio over seeds."""
        return {str(b): {m: bootstrap_ci([r["ratio"][m] for r in self.base_rows if r["budget"] == b])
                         for m in (*BASE_METHODS, NO_TOMBSTONE)} for b in self.budgets}

    def invalidation(self) -> dict:
        """``{"<B>": {"<method>": mean invalidation units covered}}`` (``OPT`` included)."""
        out = {}
        for b in self.budgets:
            rows = [r for r in self.base_rows if r["budget"] == b]
            out[str(b)] = {m: float(np.mean([r["invalidation"][m] for r in rows]))
                           for m in ("OPT", *BASE_METHODS, NO_TOMBSTONE)}
        return out

    def stress(self) -> dict:
        """``{"<distribution>": {"<method>": mean ratio}}`` at the stress budget."""
        out = {}
        for d in DISTRIBUTIONS:
            rows = [r for r in self.stress_rows if r["distribution"] == d]
            out[d] = {m: float(np.mean([r["ratio"][m] for r in rows])) for m in (*STRESS_METHODS, NO_TOMBSTONE)}
        return out

    def audit(self) -> dict:
        """``{"rows": n, "agree": n, "max_abs_diff": x}`` of bnb against HiGHS."""
        diffs = [r["abs_diff"] for r in self.audit_rows]
        return {"rows": len(self.audit_rows), "agree": sum(1 for r in self.audit_rows if r["agree"]),
                "max_abs_diff": float(max(diffs)) if diffs else 0.0}


def _ratios(problem, budget, opt_value, validity, methods):
    from memaudit_solvers.registry import get_method

    ratio, inval = {}, {}
    for m in methods:
        res = get_method(m)(problem, budget)
        ratio[m] = res.value / opt_value if opt_value > 0 else 1.0
        inval[m] = invalidation_covered(problem, res.chosen, validity)
    return ratio, inval


def _solve_row(c: _Compiled, budget: int, methods, *, certify: bool) -> dict:
    """One (package, budget) row: exact OPT and no-tombstone OPT by enumeration, every method's ratio.

    With ``certify`` bnb and HiGHS must also both prove each OPT and agree with the enumeration.
    """
    full, value = c.enumeration.best(budget)
    ab_store, ab_value = c.enumeration.best(budget, c.no_tombstone)
    if certify:
        for problem, want, what in ((c.problem, value, ""), (c.ablated_problem(), ab_value, " without tombstones")):
            a, b, cert = _certified_opt(problem, budget)
            if not cert.certified or abs(cert.value - want) > 1e-6 * max(1.0, want):
                raise PaperReportError(f"{c.distribution} seed {c.seed} at budget {budget}{what}: OPT not certified "
                                       f"(enumeration {want:.10g}): " + "; ".join(cert.reasons or ["values differ"]))
    ratio, inval = _ratios(c.problem, budget, value, c.validity, methods)
    ratio[NO_TOMBSTONE] = ab_value / value if value > 0 else 1.0
    inval[NO_TOMBSTONE] = invalidation_covered(c.problem, ab_store, c.validity)
    inval["OPT"] = invalidation_covered(c.problem, full, c.validity)
    return {"distribution": c.distribution, "seed": c.seed, "budget": budget, "opt": value,
            "no_tombstone_opt": ab_value, "ratio": ratio, "invalidation": inval}


def _check_count(name: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise PaperReportError(f"{name} must be an integer >= 1; got {n!r}")
    return n


def _base_chunk(args) -> tuple[list, list]:
    """Base and stress rows for some seeds (run in a worker process when ``jobs > 1``)."""
    seeds, budgets, stress_budget, certify = args
    base, stress = [], []
    for s in seeds:
        c = _compile("base", s)
        base.extend(_solve_row(c, b, BASE_METHODS, certify=certify) for b in budgets)
        stress.append(_solve_row(c, stress_budget, STRESS_METHODS, certify=certify))
    return base, stress


def _audit_row(d, s, f, b, a, h, cert, enum_value) -> dict:
    reasons = list(cert.reasons)
    if abs(enum_value - a.value) > 1e-6 * max(1.0, enum_value):
        reasons.append(f"exhaustive enumeration gives {enum_value:.10g}, bnb {a.value:.10g}")
    return {"distribution": d, "seed": s, "budget_frac": float(f), "budget": b, "bnb": a.value, BACKEND: h.value,
            "enumeration": enum_value, "agree": cert.certified, "enumeration_agrees": len(reasons) == len(cert.reasons),
            "abs_diff": abs(a.value - h.value), "reasons": reasons}


def _audit_chunk(args) -> list:
    """Audit rows of the base distribution for some seeds (bnb, HiGHS and the enumeration)."""
    seeds, fracs, budgets = args
    rows = []
    for s in seeds:
        c = _compile("base", s)
        for f, b in zip(fracs, budgets):
            rows.append(_audit_row("base", s, f, b, *_certified_opt(c.problem, b), c.enumeration.best(b)[1]))
    return rows


def _map(fn, chunks, jobs: int):
    """``[fn(c) for c in chunks]``, in ``jobs`` forked worker processes when jobs > 1."""
    import multiprocessing as mp

    if jobs <= 1 or len(chunks) <= 1 or "fork" not in mp.get_all_start_methods():
        return [fn(c) for c in chunks]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("fork")) as ex:
        return list(ex.map(fn, chunks))


def _chunks(items, n: int) -> list:
    n = max(1, min(n, len(items)))
    return [items[k::n] for k in range(n)]


def default_jobs() -> int:
    """Worker processes for :func:`run_paper`: the CPUs this process may use, at most 4."""
    import os

    try:
        return max(1, min(4, len(os.sched_getaffinity(0))))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, min(4, os.cpu_count() or 1))


def run_paper(*, n_seeds: int = 500, audit_seeds: int = 100, fracs=FRACS, stress_budget: int = 6,
              audit: bool = True, certify: bool = False, jobs: int = 1, progress=None) -> PaperReport:
    """Run the paper's experiments (base sweep, stress heat-map, certification audit).

    Parameters
    ----------
    n_seeds : int
        Base seeds 0 .. n_seeds-1 (the paper: 500); the stress heat-map's base uses the same seeds.
    audit_seeds : int
        Seeds of the audit (the paper: 100), per distribution and fraction.
    fracs : sequence of float
        Budget fractions for the paper's rule (the paper: 0.02, 0.05, 0.10, 0.20).
    stress_budget : int
        Budget of the heat-map (the paper: 6).
    audit : bool
        Run the certification audit.
    certify : bool
        Also certify every base and stress OPT with bnb and HiGHS (slow: minutes), besides the
        exhaustive enumeration that computes it.
    jobs : int
        Worker processes (forked; the rows do not depend on it).

    Raises
    ------
    PaperReportError
        Bad sizes, or an OPT that bnb and HiGHS do not certify.
    """
    from ..generators.paper import paper_small, total_candidate_cost

    _check_count("n_seeds", n_seeds)
    _check_count("audit_seeds", audit_seeds)
    _check_count("jobs", jobs)
    say = progress or (lambda line: None)
    seconds = {}
    started = time.perf_counter()
    costs = {s: total_candidate_cost(paper_small(s)) for s in range(max(n_seeds, audit_seeds if audit else 0))}
    mean_cost = float(np.mean([costs[s] for s in range(n_seeds)]))
    budgets = paper_budgets(mean_cost, fracs)
    report = PaperReport(n_seeds=n_seeds, audit_seeds=audit_seeds, budgets=budgets, mean_total_cost=mean_cost,
                         certified_all=certify)
    say(f"base: {n_seeds} seeds, mean total candidate cost {mean_cost:.3f}, budgets {budgets}; "
        f"stress at B = {stress_budget}; {jobs} job(s)")
    for base_rows, stress_rows in _map(_base_chunk, [(c, budgets, stress_budget, certify)
                                                     for c in _chunks(list(range(n_seeds)), jobs)], jobs):
        report.base_rows.extend(base_rows)
        report.stress_rows.extend(stress_rows)
    report.base_rows.sort(key=lambda r: (r["seed"], r["budget"]))
    report.stress_rows.sort(key=lambda r: r["seed"])
    fixed = {d: _compile(d, 0) for d in ("update_chain", "temporal_interval")}
    for d, c in fixed.items():
        report.stress_rows.append(_solve_row(c, stress_budget, STRESS_METHODS, certify=certify))
    seconds["base and stress"] = time.perf_counter() - started

    if audit:
        t = time.perf_counter()
        audit_mean = float(np.mean([costs[s] for s in range(audit_seeds)]
                                   + [fixed[d].total_cost for d in fixed for _ in range(audit_seeds)]))
        report.audit_budgets = paper_budgets(audit_mean, fracs)
        report.audit_mean_total_cost = audit_mean
        say(f"audit: {audit_seeds} seeds x {len(fracs)} budgets {report.audit_budgets} x {len(DISTRIBUTIONS)} "
            f"distributions, bnb against {BACKEND}")
        for rows in _map(_audit_chunk, [(c, tuple(fracs), tuple(report.audit_budgets))
                                        for c in _chunks(list(range(audit_seeds)), jobs)], jobs):
            report.audit_rows.extend(rows)
        report.audit_rows.sort(key=lambda r: (r["seed"], r["budget"]))
        # the two stress packages do not depend on the seed: each is solved once per budget, its row counted per seed
        for d, c in fixed.items():
            solved = [(f, b, *_certified_opt(c.problem, b), c.enumeration.best(b)[1])
                      for f, b in zip(fracs, report.audit_budgets)]
            for s in range(audit_seeds):
                report.audit_rows.extend(_audit_row(d, s, *row) for row in solved)
        report.audit_solves = audit_seeds * len(fracs) + len(fixed) * len(fracs)
        seconds["audit"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - started
    report.seconds = seconds
    return report


def paper_json(report: PaperReport) -> dict:
    """The one ``--json`` document: ``base``, ``stress_b6``, ``audit`` and the published ``paper`` figures."""
    return {"base": report.base(), f"stress_b{6}": report.stress(), "audit": report.audit(),
            "paper": {k: PAPER[k] for k in ("base", "stress_b6", "audit")}}

