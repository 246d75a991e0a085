"""Plots of a diagnose document: stacked attribution bars per policy; write ratio against the read outcome."""

from __future__ import annotations

import io

from .errors import DiagnoseError
from .run import ATTRIBUTIONS

__all__ = ["plot_diagnose", "save_plot"]

_COLOURS = {"write": "#c0392b", "retrieval": "#e67e22", "reader": "#8e44ad", "ok": "#27ae60"}


def plot_diagnose(doc: dict):
    """A matplotlib figure with two panels.

    Left: one stacked bar per policy, its probes split into write / retrieval / reader / ok.
    Right: one point per (policy, checkpoint): x the store's write ratio to OPT (the store cut to
    the budget in its own order), y the share of that checkpoint's probes answered right.
    """
    import matplotlib.pyplot as plt

    pols = doc["policies"]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 0.45 * len(pols) + 2.5), gridspec_kw={"width_ratios": [3, 2]})
    labels = [p["label"] for p in pols]
    left = [0] * len(pols)
    for a in ATTRIBUTIONS:
        vals = [p["attribution"][a] for p in pols]
        ax.barh(labels, vals, left=left, color=_COLOURS[a], label=a)
        left = [x + v for x, v in zip(left, vals)]
    ax.invert_yaxis()
    ax.set_xlabel("probes (both forms)")
    ax.set_title("where each probe failed")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=len(ATTRIBUTIONS), fontsize=8,
              frameon=False)  # below the axes, never on the bars
    ok = {}
    for r in doc["rows"]:
        n, k = ok.get((r["policy"], r["session"]), (0, 0))
        ok[(r["policy"], r["session"])] = (n + 1, k + (r["attribution"] == "ok"))
    cmap = plt.get_cmap("tab20")
    for n, p in enumerate(pols):
        pts = [(s["write_ratio_cut"], ok[(p["policy"], s["session"])][1] / ok[(p["policy"], s["session"])][0])
               for s in doc["stores"] if s["policy"] == p["policy"] and (p["policy"], s["session"]) in ok]
        bx.scatter([x for x, _ in pts], [y for _, y in pts], label=p["policy"], s=30, alpha=0.8, color=cmap(n % 20))
    bx.set_xlim(-0.05, 1.05)
    bx.set_ylim(-0.05, 1.05)
    bx.set_xlabel("write ratio to OPT (store cut to B)")
    bx.set_ylabel("share of probes answered right")
    bx.set_title("write ratio against answers, per checkpoint")
    bx.legend(fontsize=7, loc="upper left", ncol=2)
    fig.tight_layout()
    return fig


def save_plot(doc: dict, path) -> str:
    """Render :func:`plot_diagnose` to ``path`` (PNG, or the format its suffix names), atomically."""
    import os

    import matplotlib.pyplot as plt

    from ..fileio import atomic_write

    path = os.fspath(path)
    fmt = os.path.splitext(path)[1].lstrip(".").lower() or "png"
    fig = plot_diagnose(doc)
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format=fmt, dpi=110)
    except ValueError as exc:
        raise DiagnoseError(f"{path}: cannot save a plot in format {fmt!r}: {exc}") from None
    finally:
        plt.close(fig)
    atomic_write(path, buf.getvalue(), error=DiagnoseError)
    return path
