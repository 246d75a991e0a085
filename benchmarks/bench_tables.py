"""The markdown tables of benchmarks/bench_exact.py: cells, ratios bnb / fastest MILP, the per-family summary."""

from __future__ import annotations

import math
import statistics

from memaudit_solvers.milp import BACKENDS

MILP_NAMES = tuple(BACKENDS)
LABELS = {0.10: "tight", 0.25: "medium", 0.50: "loose"}


def budget_label(frac: float) -> str:
    for f, name in LABELS.items():
        if abs(frac - f) < 1e-12:
            return f"{name} ({frac:.0%})"
    return f"{frac:.0%}"


def fmt_seconds(x: float) -> str:
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def fmt_ratio(r: float) -> str:
    """A time ratio with two decimals, or two significant digits below 0.1 (0.0047, not 0.00).

    >>> fmt_ratio(1.456), fmt_ratio(0.14), fmt_ratio(0.00468)
    ('1.46', '0.14', '0.0047')
    """
    return f"{r:.2f}" if r >= 0.1 else f"{r:.2g}"


def cell_text(runs: list[dict]) -> tuple[str, float | None]:
    """The table entry for one method in one cell, and its median seconds (None when not comparable)."""
    if not runs:
        return "–", None
    for status in ("skipped", "declined"):
        if all(r["status"] == status for r in runs):
            return status, None
    if all(r["status"] == "killed" for r in runs):
        return f"stopped after {fmt_seconds(max(r['seconds'] for r in runs))} s", None
    errors = sum(r["status"] == "error" for r in runs)
    if errors:
        return f"error ({errors}/{len(runs)})", None
    med = statistics.median(r["seconds"] for r in runs)
    stars = "*" * sum(r["status"] != "optimal" for r in runs)
    return fmt_seconds(med) + stars, med


def cell_ratio(cell: dict, against) -> tuple[float, str] | None:
    """bnb's median seconds over the fastest median of the methods ``against`` in one cell, and that method."""
    meds = {m: cell_text(cell["by_method"].get(m, []))[1] for m in ["bnb", *against]}
    others = {m: meds[m] for m in against if meds[m] is not None}
    if meds["bnb"] is None or not others:
        return None
    best = min(others, key=others.__getitem__)
    return (meds["bnb"] / others[best] if others[best] > 0 else math.inf), best


def summary_table(family_cells: dict, methods) -> list[str]:
    """One row per family: bnb / fastest MILP (and / HiGHS) as median and worst cell, and the time-outs."""
    milps = [m for m in methods if m in MILP_NAMES]
    if "bnb" not in methods or not milps:
        return []
    vs_highs = "milp-highs" in milps and len(milps) > 1
    head = ["family", "cells", "bnb <= fastest MILP", "median bnb / fastest MILP", "worst cell"]
    if vs_highs:
        head += ["median bnb / HiGHS", "worst bnb / HiGHS"]
    head += [f"{m} time-outs" for m in methods]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for family, cells in family_cells.items():
        got = [(r, c) for c in cells if (r := cell_ratio(c, milps)) is not None]
        if not got:
            continue
        ratios = [r for (r, _), _ in got]
        (worst, best), wc = max(got, key=lambda t: t[0][0])
        row = [f"`{family}`", str(len(got)), f"{sum(r <= 1.0 for r in ratios)}/{len(got)}",
               f"{statistics.median(ratios):.2f}",
               f"{worst:.2f} (n={wc['n']} {budget_label(wc['frac'])}, vs {best})"]
        if vs_highs:
            hr = [(r[0], c) for c in cells if (r := cell_ratio(c, ["milp-highs"])) is not None]
            hw, hc = max(hr, key=lambda t: t[0])
            row += [f"{statistics.median(r for r, _ in hr):.2f}", f"{hw:.2f} (n={hc['n']} {budget_label(hc['frac'])})"]
        for m in methods:
            every = [r for c in cells for r in c["by_method"].get(m, [])]
            runs = [r for r in every if r["status"] not in ("skipped", "declined", "error")]
            n_skipped = sum(r["status"] == "skipped" for r in every)
            row.append(f"{sum(r['status'] != 'optimal' for r in runs)}/{len(runs)}"
                       + (f" (+{n_skipped} skipped)" if n_skipped else ""))
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "Ratios are of median seconds per cell (a time-out counts as its time limit); worst cell = the "
              "largest ratio; time-outs = runs not proven optimal within the limit, over all seeds; skipped = "
              "runs not made because the method timed out at a smaller size with the same budget (such a "
              "method is left out of the fastest-MILP comparison where it was skipped)."]
    return lines


def grid_table(cells, methods, args, ratios_out: list | None = None) -> list[str]:
    milps = [m for m in methods if m in MILP_NAMES]
    head = ["n", "candidates", "units", "budget"] + [f"{m} (s)" for m in methods]
    show_ratio = "bnb" in methods and milps
    if show_ratio:
        head.append("bnb / fastest MILP")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ratios = []
    for c in cells:
        label = budget_label(c["frac"]) + (" **DISAGREE**" if c["n_disagree"] else "")
        row = [str(c["n"]), f"{c['n_candidates']:.0f}", f"{c['n_units']:.0f}", label]
        meds = {}
        for m in methods:
            text, med = cell_text(c["by_method"][m])
            row.append(text)
            meds[m] = med
        if show_ratio:
            got = cell_ratio(c, milps)
            if got is not None:
                ratio, best = got
                ratios.append((ratio, c))
                row.append(f"{fmt_ratio(ratio)} (vs {best})")
            else:
                row.append("–")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append(f"Median wall seconds over {len(args.seeds_list)} seed(s) per cell (seeds "
                 f"{', '.join(map(str, args.seeds_list))}), time limit {args.time_limit:g} s per solve, one solve "
                 "at a time, single-threaded back-ends. `*` = one run that did not prove optimality "
                 "(time-out; its time counts in the median). Ratio < 1 means bnb is faster than the fastest "
                 "MILP back-end in that cell.")
    if "milp-cbc" in methods and args.cbc_max_n is not None and any(c["n"] > args.cbc_max_n for c in cells):
        lines.append(f"`skipped`: CBC not run for n > {args.cbc_max_n} (`--cbc-max-n`), to keep the run short.")
    skipped = sorted({(m, r["message"], c["frac"]) for c in cells for m in methods for r in c["by_method"][m]
                      if r["status"] == "skipped" and r.get("message", "").startswith("timed out")})
    if skipped:
        lines.append("`skipped`: not run on the larger sizes after timing out on at least half the runs of a cell "
                     "with the same budget (`--no-skip` runs everything): "
                     + "; ".join(f"{m} {msg} {budget_label(f)}" for m, msg, f in skipped) + ".")
    declined = sorted({m for c in cells for m in methods for r in c["by_method"][m] if r["status"] == "declined"})
    if declined:
        lines.append("`declined`: the back-end cannot state these problems exactly (" + ", ".join(declined) + ").")
    if ratios:
        faster = sum(r <= 1.0 for r, _ in ratios)
        five = sum(r <= 0.2 for r, _ in ratios)
        worst, wc = max(ratios, key=lambda t: t[0])
        lines.append(f"bnb median <= fastest MILP median in {faster}/{len(ratios)} cells; >= 5x faster in "
                     f"{five}/{len(ratios)}; median ratio {statistics.median(r for r, _ in ratios):.2f}; worst "
                     f"{worst:.2f} at n={wc['n']} {budget_label(wc['frac'])}.")
    if ratios_out is not None:
        ratios_out.extend(ratios)
    return lines
