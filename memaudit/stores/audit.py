"""Audit one exported store over OPT of its union package: selected-store, upper-pruned and salience-pruned ratios, leaks, stale values."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from memaudit_solvers import Declined, Problem
from memaudit_solvers.certify import compare_results
from memaudit_solvers.objective import COST_RTOL, evaluate, infeasibility, is_feasible, total_cost

from ..package import Package, resolve_budget
from ..solve import run_solver, solve_package
from .export import Export, StoreError
from .matcher import mentions, plain_mention
from .union import Union, build_union

__all__ = ["AuditReport", "audit_export", "store_audit_spec", "verdict_line"]

#: a ratio within this of another counts as equal for the verdict
_TIE = 1e-9


@dataclass
class AuditReport:
    """Everything :func:`audit_export` measured; ``to_dict`` gives the ``--json`` document.

    Ratios are F(store) / OPT(union, B), all in [0, 1].  ``selected`` is the whole export as the
    product would inject it (0 when it does not fit B: ``over_budget``); ``upper_pruned`` the best
    subset of the export within B (extraction quality); ``salience_pruned`` the export cut to B in
    the product's own order (selection quality).  A partial view (``view == "partial"``) cannot
    score the store: ``scored`` is False and the OPT, cost and ratio fields are None; its leaks,
    stale values and conflicts are still reported.
    """

    product: str
    export_path: str
    shape: str
    order: str
    package_id: str
    budget: float | None
    cost_model: str
    opt: float | None
    opt_status: str | None
    n_items: int
    store_cost: float | None
    store_value: float | None
    over_budget: bool | None
    selected: float | None
    upper_pruned: float | None
    upper_status: str | None
    upper_ids: list[str]
    salience_pruned: float | None
    salience_ids: list[str]
    leaks: list[dict]
    retained_leaks: list[dict]
    stale: list[dict]
    conflicts: list[dict]
    uncovered: list[str]
    adjudication: dict
    warnings: list[str] = field(default_factory=list)
    checked_leaks: bool = True
    view: str = "full"

    @property
    def scored(self) -> bool:
        """Whether the ratios score the store (False for a partial view)."""
        return self.view != "partial"

    @property
    def verdict(self) -> str:
        return verdict_line(self)

    def to_dict(self) -> dict:
        return {
            "product": self.product, "export": self.export_path, "shape": self.shape, "order": self.order,
            "package": self.package_id, "budget": self.budget, "cost_model": self.cost_model,
            "view": self.view, "scored": self.scored,
            "opt": self.opt, "opt_status": self.opt_status, "n_items": self.n_items,
            "store_cost": self.store_cost, "store_value": self.store_value, "over_budget": self.over_budget,
            "ratios": {"selected_store": self.selected, "upper_pruned": self.upper_pruned,
                       "salience_pruned": self.salience_pruned} if self.scored else None,
            "upper_pruned_status": self.upper_status,
            "upper_pruned_memories": self.upper_ids, "salience_pruned_memories": self.salience_ids,
            "leaks": self.leaks, "retained_leaks": self.retained_leaks, "leaks_checked": self.checked_leaks,
            "stale": self.stale, "conflicts": self.conflicts,
            "units_not_covered_by_export": self.uncovered, "adjudication": self.adjudication,
            "warnings": self.warnings, "verdict": self.verdict,
        }


def verdict_line(r: AuditReport) -> str:
    """A short plain-language verdict: which loss is bigger, extraction (1 - upper) or selection (upper - salience)."""
    parts = []
    if not r.scored:
        parts.append(f"a partial view ({r.shape}) cannot score the store: it shows {r.n_items} memor"
                     f"{'y' if r.n_items == 1 else 'ies'} of it, so no ratio is given; audit a full export "
                     "(get_all, the agent file, read_memory_note / memory://all) to score it")
        _findings(r, parts)
        return "; ".join(parts) + "."
    extraction_loss = 1.0 - r.upper_pruned
    selection_loss = r.upper_pruned - r.salience_pruned
    if extraction_loss <= 1e-6 and selection_loss <= 1e-6:
        parts.append("the export holds and, in its own order, selects everything OPT keeps at this budget")
    elif extraction_loss >= selection_loss - _TIE:
        parts.append(f"extraction is the bottleneck: even the best subset of the export within the budget reaches "
                     f"only {r.upper_pruned:.0%} of OPT (the exported memories miss evidence, or carry it at too "
                     "high a cost for this budget)")
    else:
        parts.append(f"selection is the bottleneck: the export holds enough (its best subset within the budget "
                     f"reaches {r.upper_pruned:.0%} of OPT), but cut to the budget in the product's own order it "
                     f"keeps {r.salience_pruned:.0%}")
    if r.over_budget:
        parts.append(f"the full store costs {r.store_cost:g} > budget {r.budget:g}, so as a full-store view it "
                     "scores 0")
    _findings(r, parts)
    return "; ".join(parts) + "."


def _findings(r: AuditReport, parts: list[str]) -> None:
    if r.leaks:
        attrs = sorted({leak["attribute"] for leak in r.leaks})
        parts.append(f"it still holds deleted values ({', '.join(attrs)}) in {len(r.leaks)} memor"
                     f"{'y' if len(r.leaks) == 1 else 'ies'}")
    if r.stale:
        parts.append(f"it holds superseded values without the current one ({', '.join(s['attribute'] for s in r.stale)})")


def store_audit_spec(pkg: Package) -> dict | None:
    """``pkg.meta["store_audit"]`` checked: which values were superseded and which deleted (None when absent).

    Shape: ``{"superseded": [{"attribute", "old_aliases", "current_unit", "validity_unit"}],
    "deleted": [{"attribute", "value_aliases", "validity_unit"}]}``.
    """
    spec = pkg.meta.get("store_audit")
    if spec is None:
        return None
    units = {u.id for u in pkg.units}
    at = f"package {pkg.id!r}: meta.store_audit"
    if not isinstance(spec, dict):
        raise StoreError(f"{at} must be an object with 'superseded' and 'deleted' lists")
    for key, aliases_key, refs in (("superseded", "old_aliases", ("current_unit", "validity_unit")),
                                   ("deleted", "value_aliases", ("validity_unit",))):
        entries = spec.get(key, [])
        if not isinstance(entries, list):
            raise StoreError(f"{at}.{key} must be a list; got {type(entries).__name__}")
        for i, e in enumerate(entries):
            where = f"{at}.{key}[{i}]"
            if not isinstance(e, dict) or not isinstance(e.get("attribute"), str):
                raise StoreError(f"{where} must be an object with a string 'attribute'")
            aliases = e.get(aliases_key)
            if not isinstance(aliases, list) or not aliases or not all(isinstance(a, str) and a.strip()
                                                                       for a in aliases):
                raise StoreError(f"{where}.{aliases_key} must be a non-empty list of strings; got {aliases!r}")
            for ref in refs:
                if ref in e and e[ref] not in units:
                    raise StoreError(f"{where}.{ref} must name a unit of the package; got {e[ref]!r}")
            if key == "superseded" and "current_unit" not in e:
                raise StoreError(f"{where}.current_unit is required")
    return spec


def _sub_problem(problem: Problem, idx: np.ndarray) -> Problem:
    """The problem restricted to candidates ``idx`` (same units, weights and h)."""
    groups = problem.groups[idx]
    _, remapped = np.unique(groups, return_inverse=True)
    return Problem.build(problem.costs[idx], remapped, problem.coverage[idx], problem.weights,
                         h_slopes=problem.h_slopes, h_intercepts=problem.h_intercepts)


def _best_subset(problem: Problem, idx: np.ndarray, budget: float, backend: str | None):
    """Exact best subset of candidates ``idx`` within ``budget``: bnb, certified by ``backend`` when given."""
    if idx.size == 0:
        return np.array([], dtype=np.int64), "optimal (empty export)"
    sub = _sub_problem(problem, idx)
    result = run_solver("bnb", sub, budget, {})
    status = result.status
    if backend is not None:
        try:
            other = run_solver(backend, sub, budget, {})
        except Declined as exc:
            status = f"{result.status} (not certified: {backend} declined: {exc})"
        else:
            cert = compare_results(sub, budget, result, other)
            status = "certified" if cert.certified else "not certified: " + "; ".join(cert.reasons)
    return idx[np.asarray(result.chosen, dtype=np.int64)], status


def audit_export(pkg: Package, export: Export, rows, *, budget=None, budget_frac=None, backend: str | None = "milp-highs",
                 sources: dict | None = None, progress=None) -> tuple[AuditReport, Union]:
    """Score ``export`` against OPT of its union with ``pkg`` at budget B.

    B is resolved on the *base* package (``budget_frac`` times its stream cost), so it does not
    depend on the export.  OPT(union, B) comes from :func:`memaudit.solve.solve_package` (bnb,
    certified by ``backend``); the upper-pruned subset is solved exactly the same way on the
    external candidates alone.  The salience-pruned store takes the memories in the product's
    own order while they fit (it stops at the first that does not fit, and skips a memory whose
    group is already used).

    Leaks and stale values use ``pkg.meta["store_audit"]`` (see :func:`store_audit_spec`): a
    *leak* is a memory that still holds a deleted value (any alias, anywhere in its text; memories
    the product retains but no longer serves are listed separately); a value is *stale* when some
    memory states a superseded value without an invalidation cue and no memory covers the current
    unit, and a *conflict* when the current unit is covered too.

    A partial view (``export.view == "partial"``: search results, one item, an add() return,
    one page, a by-tag resource) is not scored (no OPT is solved, the ratio fields are None):
    only its leaks, stale values, conflicts and uncovered units are reported, and it needs no
    budget.

    Raises
    ------
    StoreError
        OPT is 0 at this budget (nothing to score against).
    """
    if export.scores_store or budget is not None or budget_frac is not None or pkg.budget is not None:
        b = resolve_budget(pkg, budget=budget, budget_frac=budget_frac)
    else:
        b = None  # a partial view is not scored: it needs no budget
    union = build_union(pkg, export, rows, sources=sources)
    spec = store_audit_spec(pkg)
    covered = {r.unit for r in union.rows if r.unit is not None and r.coverage > 0}
    leaks, retained_leaks, stale, conflicts = _leaks_and_stale(spec, export, covered)
    uncovered = [u.id for u in pkg.units if u.id not in covered]
    warnings = list(export.warnings)
    if export.items and not covered:
        warnings.append(f"no exported memory matched any unit of package {pkg.id!r}: is this the package the "
                        "export was made for (its units, values and aliases)?")
    if spec is None:
        warnings.append(f"package {pkg.id!r} has no meta.store_audit: leaks and stale values were not checked")
    common = dict(product=export.product, export_path=export.path, shape=export.shape, order=export.order,
                  package_id=pkg.id, budget=b, cost_model=pkg.cost_model, n_items=len(export.items), leaks=leaks,
                  retained_leaks=retained_leaks, stale=stale, conflicts=conflicts, uncovered=uncovered,
                  adjudication=sources or {}, checked_leaks=spec is not None, view=export.view)
    if not export.scores_store:
        warnings.append(f"{export.path} is a partial view of the store ({export.shape}): no ratio scores the store "
                        "from it; the leaks and stale values it shows are real")
        return AuditReport(opt=None, opt_status=None, store_cost=None, store_value=None, over_budget=None,
                           selected=None, upper_pruned=None, upper_status=None, upper_ids=[], salience_pruned=None,
                           salience_ids=[], warnings=warnings, **common), union
    report = solve_package(union.package, budget=b, method="bnb", backend=backend, progress=progress)
    opt = report.value
    if opt <= 0:
        raise StoreError(f"OPT of the union of {pkg.id!r} and {export.path} is 0 at budget {b:g}: no store can "
                         "cover any unit, so there is nothing to score against; raise the budget")
    compiled = report.compiled
    problem = compiled.problem
    order = [union.candidate_of[item.id] for item in sorted(export.items, key=lambda it: it.rank)]
    ext = compiled.indices(order) if order else np.array([], dtype=np.int64)
    memory_of = {cid: mid for mid, cid in union.candidate_of.items()}

    store_cost = total_cost(problem, ext)
    store_value = evaluate(problem, ext)
    why_not = infeasibility(problem, ext, b)
    over_budget = store_cost > b + COST_RTOL * max(1.0, abs(b))
    selected = store_value / opt if not why_not else 0.0

    say = progress or (lambda line: None)
    say("solving the upper-pruned store (best subset of the export)...")
    upper_idx, upper_status = _best_subset(problem, ext, b, backend)
    upper_value = evaluate(problem, upper_idx)

    taken, used_groups = [], set()
    for i in ext.tolist():
        g = int(problem.groups[i])
        if g in used_groups:
            continue
        if not is_feasible(problem, taken + [i], b):
            break
        taken.append(i)
        used_groups.add(g)
    salience_value = evaluate(problem, taken)
    if why_not and not over_budget:
        warnings.append(f"the full store is not a feasible store ({why_not}): its selected-store ratio is 0")
    # F(subset of the union) <= OPT; only float noise may exceed 1
    selected, upper, salience = (1.0 if 1.0 < x <= 1.0 + 1e-9 else x
                                 for x in (selected, upper_value / opt, salience_value / opt))
    out = AuditReport(
        opt=opt, opt_status=report.status, store_cost=store_cost, store_value=store_value, over_budget=over_budget,
        selected=selected, upper_pruned=upper, upper_status=upper_status,
        upper_ids=[memory_of[c] for c in compiled.ids(upper_idx)], salience_pruned=salience,
        salience_ids=[memory_of[c] for c in compiled.ids(taken)], warnings=warnings, **common)
    return out, union


def _leaks_and_stale(spec, export: Export, covered: set) -> tuple[list, list, list, list]:
    """Leaks (served / retained memories holding a deleted value), stale values and conflicts."""
    leaks, retained_leaks, stale, conflicts = [], [], [], []
    if spec is None:
        return leaks, retained_leaks, stale, conflicts
    for entry in spec.get("deleted", []):
        for item in export.items:
            if mentions(item.text, entry["value_aliases"]):
                leaks.append({"attribute": entry["attribute"], "memory": item.id, "rank": item.rank,
                              "source": item.source, "text": item.text})
        for kept in export.retained:
            if mentions(kept["text"], entry["value_aliases"]):
                retained_leaks.append({"attribute": entry["attribute"], "memory": kept["id"],
                                       "where": kept["where"], "text": kept["text"]})
    for entry in spec.get("superseded", []):
        held = [item.id for item in export.items if plain_mention(item.text, entry["old_aliases"])]
        if not held:
            continue
        row = {"attribute": entry["attribute"], "memories": held, "current_unit": entry["current_unit"]}
        (conflicts if entry["current_unit"] in covered else stale).append(row)
    return leaks, retained_leaks, stale, conflicts
