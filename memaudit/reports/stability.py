"""The MEMAUDIT paper's stability knobs (its Tables 6-7): a relaxed partition and the byte-overhead cost model.

* **Relaxed partition** ``|X ∩ G_i| <= k``: :func:`relax_partition` turns a package into an
  equivalent one-per-experience package whose options for experience i are its candidate subsets
  of size 1 .. k (cost and coverage summed), so every solver and the certificate apply unchanged:
  a store of the new package is a store of the old one with at most k candidates per experience,
  of the same cost and value (coverage adds up before h, exactly as in F).
* **Byte-overhead costs** ``c(u) = max(1, 8 + ceil(utf8_bytes(u) / 24))``: :func:`recost` re-costs a
  package's candidates from their texts under another cost model.

:func:`stability_rows` solves each package (bnb, certified by HiGHS) under k = 1 and 2 and under
its own cost model and byte-overhead, at the same fraction of the stream cost.
"""

from __future__ import annotations

import itertools
import math

from ..errors import MemauditError

__all__ = ["relax_partition", "recost", "stability_rows", "format_stability", "StabilityError", "MAX_OPTIONS"]

#: refuse a relaxation that would give one experience more options than this
MAX_OPTIONS = 5000


class StabilityError(MemauditError, ValueError):
    """A stability transformation cannot be applied (too many options, costs not from text)."""


def relax_partition(pkg, k: int):
    """``pkg`` with at most ``k`` candidates per experience, stated as one option per experience.

    Each experience's candidates become its subsets of size 1 .. k: id ``a+b``, cost the sum of
    the members' costs, coverage the sum of their coverages, text the members' texts, and kind the
    kind of the costliest member (a label only: no objective reads it).  ``cost_source`` becomes
    ``given``.  ``k = 1`` returns an equivalent package with given costs.

    Examples
    --------
    >>> from memaudit.generators.paper import paper_update_chain
    >>> pkg = relax_partition(paper_update_chain(), 2)
    >>> len(pkg.candidates), [c.id for c in pkg.candidates][:4]
    (51, ['v0.raw', 'v0.fact', 'v0.summary', 'v0.raw+v0.fact'])
    """
    from ..package import candidate_costs, package_from_dict, package_to_dict

    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise StabilityError(f"the per-experience limit k must be an integer >= 1; got {k!r}")
    costs = candidate_costs(pkg)
    data = package_to_dict(pkg)
    by_exp: dict[str, list] = {}
    for c in data["candidates"]:
        by_exp.setdefault(c["experience"], []).append(c)
    out = []
    for e in data["experiences"]:
        members = by_exp.get(e["id"], [])
        n_opts = sum(math.comb(len(members), j) for j in range(1, min(k, len(members)) + 1))
        if n_opts > MAX_OPTIONS:
            raise StabilityError(f"package {pkg.id!r}: experience {e['id']!r} would get {n_opts} options under "
                                 f"k = {k} (more than {MAX_OPTIONS})")
        for size in range(1, min(k, len(members)) + 1):
            for subset in itertools.combinations(members, size):
                coverage: dict[str, float] = {}
                for c in subset:
                    for u, a in c["coverage"].items():
                        coverage[u] = coverage.get(u, 0.0) + a
                costliest = max(subset, key=lambda c: costs[c["id"]])
                out.append({"id": "+".join(c["id"] for c in subset), "experience": e["id"],
                            "kind": costliest["kind"], "text": " / ".join(c.get("text", "") for c in subset),
                            "cost": float(sum(costs[c["id"]] for c in subset)), "coverage": coverage})
    data["candidates"] = out
    data["cost_source"] = "given"
    data["id"] = f"{pkg.id}-k{k}"
    data["meta"] = {**data.get("meta", {}), "relaxed_partition": {"k": k, "source": pkg.id}}
    return package_from_dict(data, source=f"<{pkg.id} with at most {k} per experience>")


def recost(pkg, cost_model: str):
    """``pkg`` with every candidate's cost counted from its text under ``cost_model``.

    Raises
    ------
    StabilityError
        When the package's costs are given (not counted from text): there is nothing to re-count.
    """
    from ..package import package_from_dict, package_to_dict

    if pkg.cost_source == "given":
        raise StabilityError(f"package {pkg.id!r} has given costs (cost_source 'given'), not costs counted from "
                             "its texts: it cannot be re-costed")
    data = package_to_dict(pkg)
    data["cost_model"] = cost_model
    for c in data["candidates"]:
        c.pop("cost", None)
    data.pop("budget", None)
    data["id"] = f"{pkg.id}-{cost_model}"
    return package_from_dict(data, source=f"<{pkg.id} in {cost_model}>")


def _opt(pkg, budget: float) -> float:
    from ..solve import solve_package

    report = solve_package(pkg, budget=budget, method="bnb", backend="milp-highs")
    if not report.certified:
        raise StabilityError(f"package {pkg.id!r} at budget {budget:g}: OPT not certified: "
                             + "; ".join(report.reasons))
    return float(report.value)


def stability_rows(packages, *, budget_frac=None) -> list[dict]:
    """Per package: certified OPT under k = 1 and k = 2, and under its cost model and byte-overhead.

    The budget is the package's own (or ``budget_frac`` of its stream cost); under byte-overhead
    it is the same fraction of the byte-overhead stream cost.  ``None`` marks what does not apply
    (byte-overhead for a package whose costs are given).
    """
    from ..package import resolve_budget, stream_cost

    rows = []
    for pkg in packages:
        budget = resolve_budget(pkg, budget_frac=budget_frac)
        frac = budget / stream_cost(pkg) if stream_cost(pkg) else 0.0
        k1 = _opt(pkg, budget)
        k2 = _opt(relax_partition(pkg, 2), budget)
        row = {"package": pkg.id, "cost_model": pkg.cost_model, "budget": budget, "budget_frac": frac,
               "opt_k1": k1, "opt_k2": k2, "ratio_k1_k2": k1 / k2 if k2 > 0 else None,
               "opt_byte_overhead": None, "byte_overhead_budget": None, "ratio_words_byte": None}
        if pkg.cost_source != "given" and pkg.cost_model != "byte-overhead":
            other = recost(pkg, "byte-overhead")
            b2 = frac * stream_cost(other)
            ob = _opt(other, b2)
            row.update(opt_byte_overhead=ob, byte_overhead_budget=b2, ratio_words_byte=ob / k1 if k1 > 0 else None)
        rows.append(row)
    return rows


def format_stability(rows) -> str:
    """The two stability tables as plain text."""
    from ..clitools import table_lines

    def f(x, d=4):
        return "n/a" if x is None else f"{x:.{d}g}"

    lines = ["relaxed partition: certified OPT with at most k candidates per experience (the paper's Table 6)", ""]
    lines += table_lines(("package", "budget", "OPT k=1", "OPT k=2", "k=1 / k=2"),
                         [(r["package"], f"{r['budget']:g}", f(r["opt_k1"], 6), f(r["opt_k2"], 6), f(r["ratio_k1_k2"]))
                          for r in rows], ("<", ">", ">", ">", ">"))
    lines += ["", "cost model: certified OPT under the package's own costs and byte-overhead costs "
              "max(1, 8 + ceil(bytes / 24)), at the same fraction of the stream cost (the paper's Table 7)", ""]
    lines += table_lines(("package", "cost model", "fraction", "OPT", "OPT byte-overhead", "byte / own"),
                         [(r["package"], r["cost_model"], f"{r['budget_frac']:.3g}", f(r["opt_k1"], 6),
                           f(r["opt_byte_overhead"], 6), f(r["ratio_words_byte"]))
                          for r in rows], ("<", "<", ">", ">", ">", ">"))
    if any(r["opt_byte_overhead"] is None for r in rows):
        lines.append("  n/a: the package's costs are given, not counted from its texts")
    return "\n".join(lines)
