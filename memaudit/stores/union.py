"""The union package: the package's candidates plus every exported memory as an ``external`` candidate."""

from __future__ import annotations

from dataclasses import dataclass

from ..costs import cost_of
from ..package import Package, package_from_dict, package_to_dict
from .export import Export, StoreError
from .matcher import CoverageRow

__all__ = ["Union", "build_union"]


@dataclass(frozen=True)
class Union:
    """A union package and how its external candidates map to the export.

    Attributes
    ----------
    package : Package
        An ordinary package: ``solve``, ``verify`` and ``validate`` accept it.
    candidate_of : dict
        Memory id -> external candidate id, in the product's order (rank).
    base : Package
        The package the union was built from.
    export : Export
    rows : list of CoverageRow
        The coverage rows used.
    """

    package: Package
    candidate_of: dict[str, str]
    base: Package
    export: Export
    rows: list[CoverageRow]


def _free_id(wanted: str, taken: set[str]) -> str:
    out, k = wanted, 2
    while out in taken:
        out, k = f"{wanted}~{k}", k + 1
    taken.add(out)
    return out


def build_union(pkg: Package, export: Export, rows: list[CoverageRow], *, sources: dict | None = None) -> Union:
    """Package candidates ∪ exported memories, each memory an ``external`` candidate.

    Each memory gets its own experience (its own group, with the memory's time and text) unless a
    row ties it to an experience of the package, in which case it joins that group.  Its coverage
    is the sum of its rows' coverage per unit.  Costs follow the package's cost model; with
    ``"cost_source": "given"`` the cost is computed from the text and written out.  The union's
    ``meta["union"]`` records the base package, the export, where the rows came from and, per
    external candidate, the memory id, its rank in the product's order and its source.

    Raises
    ------
    StoreError
        Two memories of the export share an id, or a row names a memory that is not in the export.
    """
    items = export.items
    by_id = export.by_id()
    if len(by_id) != len(items):
        dup = next(i.id for i in items if sum(j.id == i.id for j in items) > 1)
        raise StoreError(f"{export.path}: memory id {dup!r} is held by {sum(j.id == dup for j in items)} memories; "
                         "every memory of one export needs its own id")
    coverage: dict[str, dict[str, float]] = {item.id: {} for item in items}
    tie: dict[str, str] = {}
    for r in rows:
        if r.memory not in by_id:
            raise StoreError(f"coverage row for memory {r.memory!r} ({r.source}): no such memory in {export.path}")
        if r.unit is not None and r.coverage > 0:
            coverage[r.memory][r.unit] = coverage[r.memory].get(r.unit, 0.0) + r.coverage
        if r.experience is not None:
            tie[r.memory] = r.experience
    data = package_to_dict(pkg)
    taken_c = {c["id"] for c in data["candidates"]}
    taken_e = {e["id"] for e in data["experiences"]}
    candidate_of, external = {}, {}
    for item in sorted(items, key=lambda it: it.rank):
        cid = _free_id(f"{export.product}:{item.id}", taken_c)
        if item.id in tie:
            eid = tie[item.id]
        else:
            eid = _free_id(f"{export.product}:{item.id}", taken_e)
            data["experiences"].append({"id": eid, "time": item.time, "text": item.text})
        cand = {"id": cid, "experience": eid, "kind": "external", "text": item.text, "coverage": coverage[item.id]}
        if pkg.cost_source == "given":
            cand["cost"] = cost_of(item.text, pkg.cost_model)
        data["candidates"].append(cand)
        candidate_of[item.id] = cid
        external[cid] = {"memory": item.id, "rank": item.rank, "source": item.source, "time": item.time}
    data["id"] = f"{pkg.id}+{export.product}"
    data["meta"] = dict(data.get("meta", {}))
    data["meta"]["union"] = {"base_package": pkg.id, "product": export.product, "export": export.path,
                             "shape": export.shape, "n_external": len(items), "order": export.order,
                             "adjudication": sources or {}, "external": external}
    union = package_from_dict(data, source=f"union of {pkg.id} and {export.path}")
    return Union(union, candidate_of, pkg, export, rows)
