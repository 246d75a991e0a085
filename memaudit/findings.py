"""The MEMAUDIT paper's findings, measured on our own shipped package sets: baselines against certified OPT, and the ablation.

(a) For every set, budget and method: the ratio of the method's value to the certified OPT
recorded in the set's manifest (mean, min, n over the packages) and the share of the
validity units' weight the store preserves.  (b) OPT without tombstone and compound_update
candidates as a fraction of the full OPT, per budget.  Both beside the paper's figures
(arXiv 2605.02199: density-only 26-36 % of OPT on tight budgets, GVT near optimal, ablation 52-81 %),
which it measured on its own MemAudit-Small packages: ``memaudit report paper``
(:mod:`memaudit.reports.paper`) reruns that protocol exactly.  Here both density variants run:
``density`` (the paper's stream-order pass) and ``density-global`` (a global sort by value per
cost), so a reader sees where the trap needs stream order and where it needs only a cheap fact
that is denser than the update carrying the validity state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .data import data_root
from .errors import MemauditError

__all__ = ["DEFAULT_METHODS", "PAPER", "Findings", "compute_findings", "format_findings", "default_root",
           "validity_share", "FindingsError"]

#: the methods compared with OPT: offline baselines, then online writers
DEFAULT_METHODS = ("density", "density-global", "greedy", "gvt", "gvt-geometric", "random", "fifo", "recency",
                   "kind:raw", "kind:fact", "kind:update", "kind:compound_update")

#: the paper's figures (the MEMAUDIT paper, arXiv 2605.02199, on its MemAudit-Small packages at B = 2-16)
PAPER = {
    "density_tight": "26.4-36.1 % of OPT at B = 2-8 on MemAudit-Small (covers no invalidation unit)",
    "gvt": "near optimal (covers every invalidation unit OPT covers)",
    "ablation": "52.3-81.5 % of full OPT at B = 2-16",
}

#: the budget fraction called "tight"
TIGHT = 0.1

#: unit kinds counted as validity state
VALIDITY_KINDS = ("validity",)


class FindingsError(MemauditError, ValueError):
    """A findings input is missing or does not match its manifest."""


def default_root() -> Path:
    """The shipped sets: ``packages_data/`` of a checkout, or the installed ``memaudit_data``."""
    return data_root()


def validity_share(problem, chosen, unit_kinds) -> float | None:
    """Weighted share of the validity units' value a store preserves (None when there is none).

    ``sum_r w_r h_r(s_r) / sum_r w_r h_r(inf)`` over the units whose kind is ``validity``.
    """
    from memaudit_solvers.coverage import Coverage
    from memaudit_solvers.objective import h_inf

    mask = np.isin(np.asarray(unit_kinds), VALIDITY_KINDS)
    if not mask.any():
        return None
    got = Coverage(problem, chosen).unit_values[mask].sum()
    full = (problem.weights * h_inf(problem))[mask].sum()
    return float(got / full)


@dataclass
class Findings:
    """Every measured row and the aggregates.

    Attributes
    ----------
    rows : list of dict
        One per (set, package, budget_frac, method): ``value``, ``ratio`` (value / OPT), ``store``
        (the chosen candidate ids), ``validity_share``.  ``method`` ``OPT`` is the certified store itself.
    ablation_rows : list of dict
        One per (set, package, budget_frac): ``opt``, ``ablated_opt``, ``ratio``.
    unavailable : list of str
        Requested methods that are not registered (reported, not run).
    """

    rows: list = field(default_factory=list)
    ablation_rows: list = field(default_factory=list)
    unavailable: list = field(default_factory=list)
    sets: list = field(default_factory=list)
    budget_fracs: list = field(default_factory=list)
    methods: list = field(default_factory=list)

    def summary(self) -> list[dict]:
        """Mean / min ratio, n and mean validity share per (set, budget_frac, method)."""
        out = []
        for s in self.sets:
            for f in self.budget_fracs:
                for m in ["OPT", *self.methods]:
                    rs = [r for r in self.rows if r["set"] == s and r["budget_frac"] == f and r["method"] == m]
                    if not rs:
                        continue
                    ratios = [r["ratio"] for r in rs]
                    shares = [r["validity_share"] for r in rs if r["validity_share"] is not None]
                    out.append({"set": s, "budget_frac": f, "method": m, "n": len(rs),
                                "mean": float(np.mean(ratios)), "min": float(np.min(ratios)),
                                "validity_share": float(np.mean(shares)) if shares else None,
                                "n_with_validity": len(shares)})
        return out

    def ablation_summary(self) -> list[dict]:
        out = []
        for s in [*self.sets, "all"]:
            for f in self.budget_fracs:
                rs = [r["ratio"] for r in self.ablation_rows
                      if (s == "all" or r["set"] == s) and r["budget_frac"] == f]
                if rs:
                    out.append({"set": s, "budget_frac": f, "n": len(rs), "mean": float(np.mean(rs)),
                                "min": float(np.min(rs)), "max": float(np.max(rs))})
        return out


def compute_findings(sets=("small", "validity", "natural"), *, root=None, methods=DEFAULT_METHODS,
                     resolve: bool = False, progress=None) -> Findings:
    """Run every method on every package of ``sets`` at the manifest's budgets.

    Parameters
    ----------
    sets : sequence of str
        Set directories under ``root`` (each with a ``manifest.json``).
    root : path, optional
        Default :func:`default_root`.
    methods : sequence of str
        Registered method names (``kind:<k>`` included); unknown ones are listed in
        ``Findings.unavailable`` and skipped.
    resolve : bool
        Recompute OPT (bnb, proven optimal) and the ablated OPT instead of reading the
        certified values from the manifests.

    Raises
    ------
    FindingsError
        A set has no manifest or a malformed one; a package file's sha256 differs from its
        manifest entry; a recorded budget is not its fraction of the stream cost; a recorded
        store (full or ablated) is infeasible or not worth the recorded OPT; or a method (or the
        ablated OPT) reaches more than the recorded OPT (by a relative 1e-6), so that OPT is not optimal.
    """
    from memaudit_solvers.registry import get_method

    from .generators.ablate import ablate
    from .generators.datasets import ManifestError, load_manifest
    from memaudit_solvers import evaluate

    from .package import compile_package, load_package, package_sha256, resolve_budget
    from .solve import solve_package

    root = Path(root) if root is not None else default_root()
    available = sorted(d.name for d in root.iterdir() if (d / "manifest.json").is_file()) if root.is_dir() else []
    unknown = [name for name in sets if name not in available]
    if unknown:
        raise FindingsError(f"{root / unknown[0] / 'manifest.json'}: no such file, so {unknown[0]!r} is not a "
                            f"package set there; valid sets: "
                            f"{', '.join(available) or 'none (no directory there has a manifest.json)'}")
    say = progress or (lambda line: None)
    found = Findings(sets=list(sets))
    runnable = []
    for m in methods:
        try:
            get_method(m)
        except ValueError:
            found.unavailable.append(m)
            continue
        runnable.append(m)
    found.methods = runnable
    fracs: list = []
    for s in sets:
        try:
            manifest = load_manifest(root / s)
        except ManifestError as exc:
            raise FindingsError(str(exc)) from None
        fracs.extend(f for f in manifest["budget_fracs"] if f not in fracs)
        say(f"{s}: {len(manifest['packages'])} packages")
        for entry in manifest["packages"]:
            path = root / s / entry["file"]
            if not path.exists() or package_sha256(path) != entry["sha256"]:
                raise FindingsError(f"{path}: missing or changed since its manifest was written; rerun "
                                    "scripts/build_packages_data.py")
            pkg = load_package(path)
            compiled = compile_package(pkg)
            problem = compiled.problem
            kinds = [u.kind for u in pkg.units]
            try:
                ablated_pkg = ablate(pkg, entry["ablation"]["dropped_kinds"])
            except MemauditError as exc:
                raise FindingsError(f"{path}: its manifest's ablation cannot be applied: {exc}") from None
            ablated = compile_package(ablated_pkg)
            for j, (r, ab) in enumerate(zip(entry["results"], entry["ablation"]["results"])):
                budget, frac = r["budget"], r["budget_frac"]
                expected = resolve_budget(pkg, budget_frac=frac)
                if not math.isclose(budget, expected, rel_tol=1e-9, abs_tol=1e-9):
                    raise FindingsError(f"{path} results[{j}]: budget {budget:.10g} is not {frac:g} of the stream "
                                        f"cost ({expected:.10g}){_REBUILD}")
                opt_store = _checked_store(path, f"results[{j}]", compiled, r, budget)
                _checked_store(path, f"ablation.results[{j}]", ablated, ab, budget)
                if resolve:
                    opt = solve_package(pkg, budget=budget, backend=None).value
                    ablated_opt = solve_package(ablated_pkg, budget=budget, backend=None).value
                else:
                    opt, ablated_opt = r["opt"], ab["opt"]
                base = {"set": s, "package": entry["id"], "generator": entry["generator"], "budget_frac": frac,
                        "budget": budget, "opt": opt}
                opt_value = evaluate(problem, opt_store)  # the recorded OPT (checked), or the re-solved one
                found.rows.append({**base, "method": "OPT", "value": opt_value,
                                   "ratio": opt_value / opt if opt > 0 else 1.0, "store": list(r["store"]),
                                   "validity_share": validity_share(problem, opt_store, kinds)})
                for m in runnable:
                    res = get_method(m)(problem, budget)
                    ratio = res.value / opt if opt > 0 else 1.0
                    _check_ratio(path, frac, m, res.value, opt)
                    found.rows.append({**base, "method": m, "value": res.value, "ratio": ratio,
                                       "store": compiled.ids(res.chosen),
                                       "validity_share": validity_share(problem, res.chosen, kinds)})
                _check_ratio(path, frac, "the ablated OPT", ablated_opt, opt)
                found.ablation_rows.append({**base, "ablated_opt": ablated_opt,
                                            "ratio": ablated_opt / opt if opt > 0 else 1.0})
    found.budget_fracs = sorted(fracs)
    return found


_REBUILD = "; rebuild the manifest with scripts/build_packages_data.py --force"

#: relative tolerance of the checks of a manifest's numbers
_RTOL = 1e-6


def _checked_store(path, where: str, compiled, result: dict, budget: float):
    """The indices of ``result["store"]``, after checking it is feasible and worth ``result["opt"]``."""
    from memaudit_solvers import evaluate, is_feasible

    from .errors import PackageError

    frac = result["budget_frac"]
    try:
        chosen = compiled.indices(result["store"])
    except PackageError as exc:
        raise FindingsError(f"{path} {where} (budget fraction {frac:g}): the recorded store: {exc}{_REBUILD}") from None
    if not is_feasible(compiled.problem, chosen, budget):
        raise FindingsError(f"{path} {where} (budget fraction {frac:g}): the recorded store is not feasible at "
                            f"budget {budget:.10g} (two candidates of one experience, or over the budget){_REBUILD}")
    value = evaluate(compiled.problem, chosen)
    if not math.isclose(value, result["opt"], rel_tol=_RTOL, abs_tol=1e-9):
        raise FindingsError(f"{path} {where} (budget fraction {frac:g}): the recorded store is worth {value:.10g}, "
                            f"not the recorded OPT {result['opt']:.10g}{_REBUILD}")
    return chosen


def _check_ratio(path, frac: float, what: str, value: float, opt: float) -> None:
    """Refuse a value above the recorded OPT: that OPT cannot be optimal."""
    if value > opt * (1 + _RTOL) + 1e-9:
        ratio = value / opt if opt > 0 else math.inf
        raise FindingsError(f"{path} at budget fraction {frac:g}: {what} reaches {value:.10g}, above the recorded "
                            f"OPT {opt:.10g} (ratio {ratio:.6f}); the manifest's OPT is not optimal{_REBUILD}")


def _p(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def format_findings(found: Findings) -> str:
    """The findings as plain-text tables, then ours beside the paper's figures."""
    from .clitools import table_lines

    lines = ["(a) ratio to certified OPT per set, budget (fraction of the stream cost) and method;",
         "    'validity' = mean share of the validity units' weight the store preserves", ""]
    summary = found.summary()
    rows = [(r["set"], f"{r['budget_frac']:g}", r["method"], r["n"], _p(r["mean"]), _p(r["min"]),
             _p(r["validity_share"])) for r in summary]
    lines += table_lines(("set", "budget", "method", "n", "mean", "min", "validity"), rows,
                         ("<", ">", "<", ">", ">", ">", ">"))
    if found.unavailable:
        lines.append(f"  not registered, not run: {', '.join(found.unavailable)}")
    lines += ["", "(b) OPT without tombstone and compound_update candidates, as a share of full OPT", ""]
    ab = found.ablation_summary()
    lines += table_lines(("set", "budget", "n", "mean", "min", "max"),
                         [(r["set"], f"{r['budget_frac']:g}", r["n"], _p(r["mean"]), _p(r["min"]), _p(r["max"]))
                          for r in ab], ("<", ">", ">", ">", ">", ">"))
    lines += ["", "ours beside the paper", ""]
    cmp = []
    for method in ("density", "density-global"):
        for s in found.sets:
            d = next((r for r in summary if r["set"] == s and r["budget_frac"] == TIGHT and r["method"] == method),
                     None)
            if d:
                cmp.append((f"{method}, tight budget ({TIGHT:g}), {s}", f"mean {_p(d['mean'])}, min {_p(d['min'])}",
                            PAPER["density_tight"]))
    for method, label in (("gvt", "GVT"), ("gvt-geometric", "GVT, geometric schedule")):
        g = [r["ratio"] for r in found.rows if r["method"] == method]
        if g:
            cmp.append((f"{label}, every package and budget",
                        f"mean {_p(float(np.mean(g)))}, min {_p(min(g))}, n {len(g)}", PAPER["gvt"]))
    for r in ab:
        if r["set"] == "all":
            cmp.append((f"ablation, budget {r['budget_frac']:g}, all sets",
                        f"mean {_p(r['mean'])}, range {_p(r['min'])}-{_p(r['max'])}", PAPER["ablation"]))
    lines += table_lines(("finding", "ours", "paper"), cmp, ("<", "<", "<"))
    lines += ["", "  The paper measured its figures on its own MemAudit-Small packages; `memaudit report paper` reruns "
              "that protocol exactly."]
    return "\n".join(lines)
