"""``memaudit report paper``: the MEMAUDIT paper's own experiments, each figure beside the published one.

The paper (arXiv 2605.02199) reports, on its MemAudit-Small packages (:mod:`memaudit.generators.paper`):

* **base**: seeds 0 .. n-1 at the budgets the paper's rule gives for f = 0.02, 0.05, 0.10, 0.20
  (B = 2, 4, 8, 16 over 500 seeds): the mean ratio to the certified OPT of ``density``, ``gvt``,
  our ``density-global`` and ``gvt-geometric``, ``greedy``, and OPT without tombstone and
  compound_update candidates (``no_tombstone``); the mean invalidation units covered
  (``sum over validity units of min(1, coverage)``) per method; bootstrap 95 % intervals
  of each mean over seeds;
* **stress_b6**: the same ratios at B = 6 for base, update_chain and temporal_interval;
* **audit**: bnb against an independent MILP (HiGHS) on audit-seeds x f x the three
  distributions, with B from the same rule over the three (rows, agreements, largest difference).

Every OPT is certified: bnb and HiGHS must both prove it and agree (:func:`memaudit_solvers.certify.compare_results`);
a row that does not certify raises :class:`PaperReportError`.  Budgets follow the paper's rule
(:func:`paper_budgets`): ``B = max(1, round(f x M))`` with M the mean total candidate cost over the
run's seeds and distributions (not the stream cost).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import MemauditError

__all__ = ["PAPER", "BASE_METHODS", "STRESS_METHODS", "DISTRIBUTIONS", "FRACS", "PaperReport", "PaperReportError",
           "paper_budgets", "stream_budgets", "invalidation_covered", "bootstrap_ci", "run_paper", "format_paper",
           "plot_paper", "figure_ratio_vs_budget", "figure_stress", "paper_json", "enumerate_stores", "Enumeration",
           "write_rows", "default_jobs"]

#: the budget fractions of the base sweep and the audit
FRACS = (0.02, 0.05, 0.10, 0.20)

#: the methods of the base table, beside OPT without tombstones
BASE_METHODS = ("density", "gvt", "density-global", "gvt-geometric", "greedy")

#: the methods of the stress heat-map (the paper's two, and the global-sort density beside them)
STRESS_METHODS = ("gvt", "density", "density-global")

#: the paper's three distributions
DISTRIBUTIONS = ("base", "update_chain", "temporal_interval")

#: the key of OPT without tombstone and compound_update candidates
NO_TOMBSTONE = "no_tombstone"

#: the paper's published figures (arXiv 2605.02199, as its public artifact produces them), in the --json shape
PAPER = {
    "base": {"2": {"density": 0.264, NO_TOMBSTONE: 0.523}, "4": {NO_TOMBSTONE: 0.654},
             "8": {"density": 0.361, NO_TOMBSTONE: 0.689}, "16": {NO_TOMBSTONE: 0.815}},
    "invalidation": {"density": {"2": 0.0, "4": 0.0, "8": 0.0},
                     "gvt": {"2": 2.0, "4": 2.0, "8": 2.0, "16": 2.0}},
    "stress_b6": {"base": {"density": 0.398, NO_TOMBSTONE: 0.650, "gvt": 1.0},
                  "update_chain": {"density": 0.730, NO_TOMBSTONE: 0.513, "gvt": 1.0},
                  "temporal_interval": {"density": 0.662, NO_TOMBSTONE: 0.700, "gvt": 1.0}},
    "audit": {"rows": 1200, "agree": 1200, "max_abs_diff": 0.0},
    "base_mean_total_cost": 81.534,
}

#: the candidate kinds the no-tombstone OPT drops
DROPPED = ("tombstone", "compound_update")

#: the certifying back-end
BACKEND = "milp-highs"


class PaperReportError(MemauditError, ValueError):
    """A paper experiment cannot run as asked (bad sizes), or an OPT did not certify."""


def paper_budgets(mean_total_cost: float, fracs=FRACS) -> list[int]:
    """The paper's budget rule: ``B = max(1, round(f x M))`` for each fraction f.

    ``M`` is the mean, over the run's seeds and distributions, of each package's total
    candidate cost.  Python's ``round`` (half to even), as the paper's artifact uses.

    Examples
    --------
    >>> paper_budgets(81.534)
    [2, 4, 8, 16]
    >>> paper_budgets(81.534, [0.01, 0.5])
    [1, 41]
    """
    return [max(1, int(round(float(f) * float(mean_total_cost)))) for f in fracs]


def stream_budgets(stream_costs, fracs=FRACS) -> list[list[float]]:
    """Our rule beside it: each package's own ``f x stream cost`` (one list per fraction)."""
    return [[float(f) * float(c) for c in stream_costs] for f in fracs]


def invalidation_covered(problem, chosen, validity_mask) -> float:
    """Invalidation units covered: ``sum over validity units of min(1, coverage)`` (the paper's measure).

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([1, 1], [0, 1], [[0.5, 1], [1, 0]], [1.0, 1.0])
    >>> invalidation_covered(p, [0], np.array([True, False])), invalidation_covered(p, [0, 1], np.array([True, True]))
    (0.5, 2.0)
    """
    idx = np.asarray(chosen, dtype=np.int64)
    dense = problem.cached("dense_coverage", lambda: problem.coverage.toarray())
    sums = dense[idx].sum(axis=0)
    return float(np.minimum(1.0, sums[validity_mask]).sum())


def bootstrap_ci(values, *, n_resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Bootstrap 95 % percentile interval of the mean of ``values`` (scipy.stats.bootstrap, seeded).

    A constant sample gives the degenerate interval ``(v, v)``.

    Examples
    --------
    >>> bootstrap_ci([1.0, 1.0, 1.0])
    (1.0, 1.0)
    >>> lo, hi = bootstrap_ci([0.0, 1.0] * 50)
    >>> 0.39 < lo < 0.5 < hi < 0.61
    True
    """
    from scipy.stats import bootstrap

    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return (math.nan, math.nan)
    if np.all(x == x[0]):
        return (float(x[0]), float(x[0]))
    res = bootstrap((x,), np.mean, n_resamples=n_resamples, confidence_level=0.95, method="percentile",
                    random_state=np.random.default_rng(seed), vectorized=True)
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


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


#: refuse to enumerate more stores than this
MAX_STORES = 200_000


@dataclass
class Enumeration:
    """Every store of a small problem (one candidate or none per group), with its cost and value.

    Store ``j`` picks option ``np.unravel_index(j, sizes)[g]`` of group g: 0 for none, ``k`` for
    the group's k-th candidate (``options[g][k]``).
    """

    problem: object
    options: list
    sizes: tuple
    costs: np.ndarray
    values: np.ndarray

    def store(self, j: int) -> list[int]:
        """The candidate indices of store ``j``."""
        picks = np.unravel_index(int(j), self.sizes)
        return sorted(int(self.options[g][k]) for g, k in enumerate(picks) if k > 0)

    def without(self, candidates) -> np.ndarray:
        """Mask of the stores that use none of ``candidates`` (indices)."""
        bad = set(int(u) for u in candidates)
        mask = np.ones(1, dtype=bool)
        for opts in self.options:
            ok = np.array([k == 0 or int(u) not in bad for k, u in enumerate(opts)], dtype=bool)
            mask = (mask[:, None] & ok[None]).reshape(-1)
        return mask

    def best(self, budget: float, allowed=None) -> tuple[list[int], float]:
        """An optimal store at ``budget`` (largest value, then lowest cost, then first) and its value.

        ``allowed`` (mask over the stores, see :meth:`without`) restricts the search.  The value
        returned is :func:`memaudit_solvers.objective.evaluate` of that store, checked against the
        enumeration's own sum.
        """
        from memaudit_solvers.objective import budget_slack, evaluate

        fits = self.costs <= budget + budget_slack(budget)
        ok = np.flatnonzero(fits if allowed is None else fits & allowed)
        top = np.max(self.values[ok])
        tied = ok[self.values[ok] >= top - 1e-12]
        j = int(tied[np.argmin(self.costs[tied])])
        store = self.store(j)
        value = evaluate(self.problem, store)
        if abs(value - float(self.values[j])) > 1e-9 * max(1.0, abs(value)):  # pragma: no cover - a bug
            raise PaperReportError(f"enumeration value {self.values[j]} differs from evaluate {value}")
        return store, value


def enumerate_stores(problem, *, max_stores: int = MAX_STORES) -> Enumeration:
    """Enumerate every store of ``problem`` at once (numpy), for exact OPTs at many budgets.

    Stores are built group by group (each group: none, or one of its candidates), carrying
    their coverage sums and costs.  The objective of every store is ``sum_r w_r h_r(s_r)`` with
    h stated as in :func:`memaudit_solvers.objective.h_values`; :meth:`Enumeration.best` re-evaluates the
    store it returns with :func:`memaudit_solvers.objective.evaluate`.

    Raises
    ------
    PaperReportError
        When the problem has more than ``max_stores`` stores.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> e = enumerate_stores(Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0]))
    >>> e.sizes, e.best(4)
    ((3, 2), ([1, 2], 2.5))
    """
    members = problem.group_members()
    n = 1
    for m in members:
        n *= m.size + 1
    if n > max_stores:
        raise PaperReportError(f"enumeration would visit {n} stores (more than {max_stores}); use bnb")
    dense = problem.coverage.toarray()
    sums = np.zeros((1, problem.n_units))
    costs = np.zeros(1)
    options = []
    for m in members:
        options.append(np.concatenate([[-1], m]).astype(np.int64))
        opt_sums = np.vstack([np.zeros((1, problem.n_units)), dense[m]])          # (k, U)
        opt_costs = np.concatenate([[0.0], problem.costs[m]])
        sums = (sums[:, None, :] + opt_sums[None]).reshape(-1, problem.n_units)
        costs = (costs[:, None] + opt_costs[None]).reshape(-1)
    # h_r(s) = min_k (slope_rk s + intercept_rk), as memaudit_solvers.objective.h_values states it, for all stores at once
    h = sums * problem.h_slopes[:, 0] + problem.h_intercepts[:, 0]
    for p in range(1, problem.h_slopes.shape[1]):
        np.minimum(h, sums * problem.h_slopes[:, p] + problem.h_intercepts[:, p], out=h)
    return Enumeration(problem, options, tuple(o.size for o in options), costs, h @ problem.weights)


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


def _f(x, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _diff(ours, paper, digits: int = 3) -> str:
    return "" if paper is None or ours is None else f"{ours - paper:+.{digits}f}"


def format_paper(report: PaperReport) -> str:
    """The report as plain-text tables: each of our numbers, the paper's, and the difference."""
    from ..clitools import table_lines

    base, ci, inval = report.base(), report.base_intervals(), report.invalidation()
    lines = [f"MEMAUDIT paper (arXiv 2605.02199), base (MemAudit-Small): {report.n_seeds} seeds; budgets by the "
             f"paper's rule B = max(1, round(f x {report.mean_total_cost:.3f})) for f = "
             + ", ".join(f"{f:g}" for f in FRACS[:len(report.budgets)]) + f": B = {report.budgets}",
             "ratio to the exact OPT, mean over seeds [bootstrap 95 % interval]; OPT by exhaustive enumeration of "
             "every store" + (f", each also certified by bnb and {BACKEND}" if report.certified_all else
                              f" (the audit below checks bnb and {BACKEND} against it)"), ""]
    rows = []
    for b in report.budgets:
        key = str(b)
        for m in (*BASE_METHODS, NO_TOMBSTONE):
            ours = base[key][m]
            paper = PAPER["base"].get(key, {}).get(m)
            lo, hi = ci[key][m]
            rows.append((key, m, _f(ours), f"[{_f(lo)}, {_f(hi)}]", _f(paper) if paper is not None else "",
                         _diff(ours, paper)))
    lines += table_lines(("B", "method", "ours", "95 % interval", "paper", "diff"), rows,
                         (">", "<", ">", "<", ">", ">"))
    lines += ["", "mean invalidation units covered (of 2; sum of min(1, coverage) over validity units)", ""]
    rows = []
    for b in report.budgets:
        key = str(b)
        for m in ("OPT", *BASE_METHODS, NO_TOMBSTONE):
            ours = inval[key][m]
            paper = PAPER["invalidation"].get(m, {}).get(key)
            rows.append((key, m, _f(ours, 2), _f(paper, 2) if paper is not None else "", _diff(ours, paper, 2)))
    lines += table_lines(("B", "method", "ours", "paper", "diff"), rows, (">", "<", ">", ">", ">"))
    stress = report.stress()
    lines += ["", "stress heat-map at B = 6: ratio to the exact OPT "
              f"(base: mean over {report.n_seeds} seeds; update_chain and temporal_interval are deterministic)", ""]
    rows = []
    for d in DISTRIBUTIONS:
        for m in ("gvt", "density", NO_TOMBSTONE, "density-global"):
            ours = stress[d][m]
            paper = PAPER["stress_b6"][d].get(m)
            rows.append((d, m, _f(ours), _f(paper) if paper is not None else "", _diff(ours, paper)))
    lines += table_lines(("distribution", "method", "ours", "paper", "diff"), rows, ("<", "<", ">", ">", ">"))
    if report.audit_rows:
        a, p = report.audit(), PAPER["audit"]
        lines += ["", f"certification audit: bnb against {BACKEND}, {report.audit_seeds} seeds x budgets "
                  f"{report.audit_budgets} (f = {', '.join(f'{f:g}' for f in FRACS)} of the mean total candidate cost "
                  f"{report.audit_mean_total_cost:.3f} over the three distributions) x {len(DISTRIBUTIONS)} distributions", ""]
        lines += table_lines(("", "ours", "paper"), [("rows", a["rows"], p["rows"]), ("agree", a["agree"], p["agree"]),
                                                     ("max |bnb - MILP|", f"{a['max_abs_diff']:.3g}",
                                                      f"{p['max_abs_diff']:.3g}")], ("<", ">", ">"))
        n_enum = sum(1 for r in report.audit_rows if r["enumeration_agrees"])
        lines.append(f"  ({report.audit_solves} distinct solves: the two stress packages do not depend on the seed; "
                     f"exhaustive enumeration agrees with bnb on {n_enum} of {a['rows']} rows)")
        bad = [r for r in report.audit_rows if not r["agree"] or not r["enumeration_agrees"]]
        for r in bad[:5]:
            lines.append(f"  disagreement: {r['distribution']} seed {r['seed']} B {r['budget']}: "
                         + "; ".join(r["reasons"]))
    s = report.seconds
    lines += ["", "time: " + ", ".join(f"{k} {v:.1f} s" for k, v in s.items())]
    return "\n".join(lines)


def figure_ratio_vs_budget(report: PaperReport):
    """Figure 1: mean ratio to OPT against the budget, bootstrap 95 % bands, the paper's figures as stars."""
    import matplotlib.pyplot as plt

    base, ci = report.base(), report.base_intervals()
    xs = report.budgets
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    markers = {"density": "o", "gvt": "s", "density-global": "v", "gvt-geometric": "D", "greedy": "^",
               NO_TOMBSTONE: "x"}
    styles = {"density-global": "--", "gvt-geometric": "--", "greedy": ":"}
    for m in (*BASE_METHODS, NO_TOMBSTONE):
        ys = [base[str(b)][m] for b in xs]
        lo = [ci[str(b)][m][0] for b in xs]
        hi = [ci[str(b)][m][1] for b in xs]
        line, = ax.plot(xs, ys, marker=markers[m], linestyle=styles.get(m, "-"),
                        label="OPT without tombstones" if m == NO_TOMBSTONE else m)
        ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.2)
    for key, v in PAPER["base"].items():
        for y in v.values():
            ax.plot([int(key)], [y], marker="*", color="black", markersize=10, linestyle="none")
    ax.plot([], [], marker="*", color="black", linestyle="none", label="the paper's figure")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(b) for b in xs])
    ax.set_xlabel("budget B")
    ax.set_ylabel("ratio to exact OPT")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"MemAudit-Small, {report.n_seeds} seeds (bands: bootstrap 95 %)")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    fig.tight_layout()
    return fig


def figure_stress(report: PaperReport):
    """Figure 2: the B = 6 heat-map (gvt, density, OPT without tombstones x the three distributions)."""
    import matplotlib.pyplot as plt

    stress = report.stress()
    methods = ("gvt", "density", NO_TOMBSTONE)
    grid = np.array([[stress[d][m] for d in DISTRIBUTIONS] for m in methods])
    fig, ax = plt.subplots(figsize=(7, 3.4))
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(DISTRIBUTIONS)), DISTRIBUTIONS)
    ax.set_yticks(range(len(methods)), ["gvt", "density", "OPT w/o tombstones"])
    for i, m in enumerate(methods):
        for j, d in enumerate(DISTRIBUTIONS):
            paper = PAPER["stress_b6"][d].get(m)
            text = f"{grid[i, j]:.3f}" + (f"\n(paper {paper:.3f})" if paper is not None else "")
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="black" if grid[i, j] > 0.6 else "white")
    fig.colorbar(im, ax=ax, label="ratio to OPT")
    ax.set_title("stress heat-map at B = 6")
    fig.tight_layout()
    return fig


def plot_paper(report: PaperReport, directory) -> list[Path]:
    """Write the two figures as PNG (``ratio_vs_budget.png``, ``stress_heatmap_b6.png``) to ``directory``."""
    import io

    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from ..fileio import atomic_write

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, make in (("ratio_vs_budget.png", figure_ratio_vs_budget), ("stress_heatmap_b6.png", figure_stress)):
        fig = make(report)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=120)
        plt.close(fig)
        atomic_write(out / name, buf.getvalue())
        paths.append(out / name)
    return paths


def write_rows(report: PaperReport, path) -> None:
    """Every per-seed row (base, stress, audit) as one JSON document."""
    from ..fileio import atomic_write

    doc = {"base": report.base_rows, "stress": report.stress_rows, "audit": report.audit_rows}
    atomic_write(path, (json.dumps(doc, indent=1) + "\n").encode("utf-8"))
