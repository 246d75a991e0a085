"""The MEMAUDIT paper report's outputs: the plain-text tables beside the published figures, the two
figures (matplotlib) and the per-seed rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .paper_protocol import BACKEND, BASE_METHODS, DISTRIBUTIONS, FRACS, NO_TOMBSTONE, PAPER
from .paper_run import PaperReport

__all__ = ["format_paper", "figure_ratio_vs_budget", "figure_stress", "plot_paper", "write_rows"]


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
