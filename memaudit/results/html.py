"""``memaudit report html``: the results store as one self-contained HTML page (inline PNG figures, sortable tables)."""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import math

from .. import __version__
from .api import frame, kinds_table, ratio_intervals, scores, validity_table
from .store import open_store

__all__ = ["build_html", "write_html"]

_CSS = """
body{font-family:system-ui,-apple-system,"DejaVu Sans",sans-serif;margin:2rem auto;max-width:1100px;color:#1b1b1b;
line-height:1.4;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.25rem;margin-top:2.2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6rem 0 1rem;font-size:.86rem}
th,td{border:1px solid #d6d6d6;padding:.2rem .5rem;text-align:right;white-space:nowrap}
td.t,th.t{text-align:left}th{background:#f3f3f3;cursor:pointer;user-select:none}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
code{background:#f5f5f5;padding:.1rem .3rem;border-radius:3px;font-size:.82rem}
figure{margin:1rem 0}figcaption{font-size:.85rem;color:#444}img{max-width:100%}
.muted{color:#666;font-size:.85rem}.bad{color:#a40000}
"""

# click a header to sort by it (numbers by value, text by text); #sort=TABLE:COLUMN:asc|desc sorts on load
_JS = """
(function(){
  function cellValue(row, i){var c=row.cells[i];var v=c.getAttribute('data-v');return v===null?c.textContent:v;}
  function sortTable(table, i, dir){
    var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
    var numeric=rows.every(function(r){var v=cellValue(r,i);return v===''||!isNaN(parseFloat(v));});
    rows.sort(function(a,b){var x=cellValue(a,i),y=cellValue(b,i);
      var d=numeric?((parseFloat(x)||0)-(parseFloat(y)||0)):x.localeCompare(y);return dir==='asc'?d:-d;});
    rows.forEach(function(r){body.appendChild(r);});
    Array.prototype.forEach.call(table.tHead.rows[0].cells,function(h,j){
      if(j===i){h.setAttribute('aria-sort',dir==='asc'?'ascending':'descending');}else{h.removeAttribute('aria-sort');}});
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'),function(table){
    Array.prototype.forEach.call(table.tHead.rows[0].cells,function(h,i){
      h.addEventListener('click',function(){
        sortTable(table,i,h.getAttribute('aria-sort')==='ascending'?'desc':'asc');});});});
  var m=/^#sort=([^:]+):(\\d+):(asc|desc)$/.exec(window.location.hash);
  if(m){var t=document.getElementById(m[1]);if(t){sortTable(t,parseInt(m[2],10),m[3]);}}
  document.body.setAttribute('data-ready','1');
})();
"""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _fmt(v, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        return f"{v:.{digits}f}" if digits is not None else f"{v:.10g}"
    return str(v)


def _table(tid: str, headers, rows, text_cols=()) -> str:
    """A sortable table; each row is a list of (shown text, sort value) or plain values."""
    out = [f'<table class="sortable" id="{_e(tid)}"><thead><tr>']
    for i, h in enumerate(headers):
        out.append(f'<th class="{"t" if i in text_cols else ""}">{_e(h)}</th>')
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>")
        for i, cell in enumerate(row):
            shown, v = cell if isinstance(cell, tuple) else (cell, None)
            attr = "" if v is None else f' data-v="{_e(v)}"'
            out.append(f'<td class="{"t" if i in text_cols else ""}"{attr}>{_e(shown)}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _num(v, digits=3):
    """(shown, sort value) of a number."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ("-", "")
    return (_fmt(float(v), digits), repr(float(v)))


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(src: str, caption: str, commands) -> str:
    cmds = "".join(f"<br><code>{_e(c)}</code>" for c in commands)
    return (f'<figure><img alt="{_e(caption)}" src="{src}"><figcaption>{_e(caption)}. Reproduce with:{cmds}'
            "</figcaption></figure>")


def _commands(df, db_path) -> list[str]:
    made = []
    if "command" in df.columns:
        made = [c for c in dict.fromkeys(df["command"].dropna()) if c][:3]
    return [*made, f"memaudit report html --db {db_path}"]


def _ratio_plot(iv, family: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.4, 4.2))
    for method, g in iv.groupby("method", sort=True):
        g = g.sort_values("budget_frac")
        line, = ax.plot(g["budget_frac"], g["mean"], marker="o", label=method)
        ax.fill_between(g["budget_frac"], g["lo"], g["hi"], alpha=0.15, color=line.get_color())
    ax.set_xlabel("budget (fraction of the stream cost)")
    ax.set_ylabel("ratio to certified OPT")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"{family}: mean ratio to OPT (band: 95% bootstrap interval of the mean)", fontsize="medium")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), title="method")
    fig.tight_layout()
    return _png(fig)


def _kinds_plot(kt):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.2, 3.8))
    bottom = None
    for kind in kt.columns:
        vals = kt[kind].to_numpy()
        ax.bar(kt.index.astype(str), vals, bottom=bottom, label=kind)
        bottom = vals if bottom is None else bottom + vals
    ax.set_ylabel("stored candidates per store (mean)")
    ax.set_title("kinds each method keeps")
    ax.tick_params(axis="x", rotation=30)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), title="kind")
    fig.tight_layout()
    return _png(fig)


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in (d or {}).items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        elif isinstance(v, (list, tuple)):
            out[f"{prefix}{k}"] = ", ".join(map(str, v))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _record_section(df, kind: str, title: str, what: str) -> str:
    rows = df[df["kind"] == kind]
    if not len(rows):
        return ""
    flat = [_flat(p if isinstance(p, dict) else {}) for p in rows["payload"]]
    keys = list(dict.fromkeys(k for f in flat for k in f if k != "command"))
    headers = ["package", what, "status", *keys]
    body = []
    for (_, r), f in zip(rows.iterrows(), flat):
        pid = r["package_id"]
        cells = [pid if isinstance(pid, str) and pid else r["package_sha256"][:12], r["method"], r["status"]]
        for k in keys:
            v = f.get(k)
            cells.append(_num(v) if isinstance(v, float) else ("-" if v is None else str(v)))
        body.append(cells)
    return (f'<section id="sec-{kind}"><h2>{_e(title)}</h2>'
            + _table(f"t-{kind}", headers, body, text_cols=(0, 1, 2)) + "</section>")


def build_html(db=None, *, title: str = "memaudit results") -> str:
    """The report page for the store at ``db`` (sections only for the kinds of rows present)."""
    store = open_store(db)
    try:
        df = frame(store.rows())
        db_path = str(store.path)
    finally:
        if store is not db:
            store.close()
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    parts = [f"<h1>{_e(title)}</h1>",
             f'<p class="muted">store <code>{_e(db_path)}</code>; {len(df)} rows; written by memaudit '
             f"{_e(__version__)} at {_e(now)}</p>"]
    if not len(df):
        parts.append("<p>The store is empty: run <code>memaudit sweep</code> or <code>memaudit compare</code> "
                     "first.</p>")
    counts = df.groupby("kind").size().to_dict() if len(df) else {}
    if counts:
        parts.append("<p>" + ", ".join(f"{_e(k)}: {n}" for k, n in sorted(counts.items())) + "</p>")

    sc = scores(df) if len(df) else df
    if len(sc):
        iv = ratio_intervals(df)
        parts.append('<section id="sec-ratio"><h2>Ratio to certified OPT by budget</h2>'
                     "<p>Mean over the packages of each family; interval = 95 % bootstrap interval of the mean "
                     "(2000 resamples); only scores against a certified OPT count.</p>")
        for family, g in iv.groupby("package_family", sort=True):
            parts.append(_figure(_ratio_plot(g, family), f"ratio to OPT against budget, {family}",
                                 _commands(sc[sc["package_family"].fillna("-") == family], db_path)))
        body = [[r["package_family"], r["method"], _num(r["budget_frac"], 2), r["n"], _num(r["mean"]),
                 _num(r["lo"]), _num(r["hi"]), _num(r["min"]), _num(r["max"])] for _, r in iv.iterrows()]
        parts.append(_table("t-ratio", ["family", "method", "budget", "n", "mean", "95% lo", "95% hi", "min",
                                        "max"], body, text_cols=(0, 1)))
        parts.append("</section>")

        kt = kinds_table(df)
        if len(kt.columns):
            parts.append('<section id="sec-kinds"><h2>Kinds each method keeps</h2>')
            parts.append(_figure(_kinds_plot(kt), "mean stored candidates of each kind per method",
                                 _commands(sc, db_path)))
            body = [[m, *[_num(v, 2) for v in row]] for m, row in zip(kt.index, kt.to_numpy())]
            parts.append(_table("t-kinds", ["method", *kt.columns], body, text_cols=(0,)))
            parts.append("</section>")

        vt = validity_table(df)
        if len(vt):
            parts.append('<section id="sec-validity"><h2>Validity units kept</h2><p>Validity units fully '
                         "covered by the store, as a share of those present, summed over the packages.</p>")
            body = [[m, *[_num(v) for v in row]] for m, row in zip(vt.index, vt.to_numpy())]
            parts.append(_table("t-validity", ["method", *[f"{f:g}" for f in vt.columns]], body, text_cols=(0,)))
            parts.append("</section>")

    solves = df[(df["kind"] == "solve") & (df["status"] != "error")] if len(df) else df
    if len(solves):
        body = []
        for _, r in solves.iterrows():
            times = {d["method"]: d["wall_time"] for d in (r["payload"] or {}).get("results", [])}
            body.append([r["package_id"], r["package_family"] or "-", _num(r["budget_frac"], 2),
                         _num(r["budget"], None), _num(r["value"], None), r["method"], r["backend"] or "-",
                         r["status"], *[_num(times.get(n), 4) for n in (r["method"], r["backend"])]])
        parts.append('<section id="sec-opt"><h2>Certified optima</h2>'
                     + _table("t-opt", ["package", "family", "budget frac", "budget", "OPT", "method", "back-end",
                                        "status", "method s", "back-end s"], body, text_cols=(0, 1, 5, 6, 7))
                     + "</section>")

    failed = df[df["status"] == "error"] if len(df) else df
    if len(failed):
        body = [[r["package_id"], _num(r["budget_frac"], 2), r["kind"], r["method"], r["error"] or "-"]
                for _, r in failed.iterrows()]
        parts.append('<section id="sec-failed"><h2 class="bad">Failed cells</h2><p>None of these is reported '
                     "as a result; the next sweep retries them.</p>"
                     + _table("t-failed", ["package", "budget frac", "kind", "method", "error"], body,
                              text_cols=(0, 2, 3, 4)) + "</section>")

    if len(df):
        parts.append(_record_section(df, "audit", "Audit verdicts per product", "product"))
        parts.append(_record_section(df, "harness", "Harness outcome mix per policy", "policy"))
        parts.append(_record_section(df, "diagnose", "Diagnose attribution per policy", "policy"))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n" + "\n".join(p for p in parts if p)
            + f"\n<script>{_JS}</script></body></html>\n")


def write_html(db, path, *, title: str = "memaudit results") -> None:
    """Write :func:`build_html` to ``path`` atomically."""
    from ..fileio import atomic_write

    atomic_write(path, build_html(db, title=title).encode("utf-8"))
