"""Tables and figures of results: CSV text, pandas frames and the ratio-to-OPT plot.

The command modules only parse and print; what turns rows into a file lives here.
"""

from __future__ import annotations

import csv
import io

from .fileio import atomic_write

__all__ = ["csv_text", "rows_frame", "same_series", "plot_ratios"]

#: markers cycled over the lines of a plot, so series stay apart in grey print too
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h")


def csv_text(rows: list[dict], fields=None) -> str:
    """Flat rows (dicts with the same keys) as CSV text with a header line.

    With ``fields`` the columns are those, in that order (the header is written even for no rows,
    other keys are left out, a missing one is empty); without, the first row's keys.

    Examples
    --------
    >>> print(csv_text([{"method": "gvt", "ratio": 0.5}, {"method": "density", "ratio": 0.25}]), end="")
    method,ratio
    gvt,0.5
    density,0.25
    >>> print(csv_text([{"method": "gvt", "ratio": 0.5}], fields=("ratio", "n")), end="")
    ratio,n
    0.5,
    """
    if not rows and fields is None:
        return ""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if fields is None else list(fields), lineterminator="\n",
                            extrasaction="raise" if fields is None else "ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def rows_frame(rows: list[dict]):
    """Flat rows as a pandas DataFrame (one row per dict, the keys as columns)."""
    import pandas as pd
    return pd.DataFrame.from_records(rows)


def same_series(series: dict[str, list[tuple[float, float]]]) -> list[list[str]]:
    """Names whose series are identical, grouped in first-seen order (a group of one when unique).

    Examples
    --------
    >>> same_series({"fifo": [(0.1, 0.2)], "gvt": [(0.1, 0.9)], "kind:raw": [(0.1, 0.2)]})
    [['fifo', 'kind:raw'], ['gvt']]
    """
    groups: dict[tuple, list[str]] = {}
    for name, pts in series.items():
        groups.setdefault(tuple((round(x, 12), round(y, 12)) for x, y in pts), []).append(name)
    return list(groups.values())


def plot_ratios(rows: list[dict], path: str, title: str) -> None:
    """Ratio to OPT against the budget fraction, one line per method, written atomically to ``path``.

    Methods whose lines coincide are drawn once and labelled together (``fifo = kind:raw``);
    the legend sits beside the axes, never on the data.  The format follows the file's suffix
    (PNG by default).
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = {}
    for m in dict.fromkeys(r["method"] for r in rows):
        if m == "OPT":
            continue
        pts = [(r["budget_frac"], r["ratio"]) for r in rows if r["method"] == m and r["ratio"] is not None]
        if pts:
            series[m] = pts
    fig, ax = plt.subplots(figsize=(7.6, 4.2))
    for i, names in enumerate(same_series(series)):
        ax.plot(*zip(*series[names[0]]), marker=_MARKERS[i % len(_MARKERS)], linestyle="-" if i < 10 else "--",
                label=" = ".join(names))
    ax.set_xlabel("budget (fraction of the stream cost)")
    ax.set_ylabel("ratio to OPT")
    ax.set_ylim(0, 1.05)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format=path.rsplit(".", 1)[-1].lower() if "." in path else "png")
    plt.close(fig)
    atomic_write(path, buf.getvalue())
