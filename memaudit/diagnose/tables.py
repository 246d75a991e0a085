"""Tables and files of a diagnose document: the per-policy summary, CSV rows, the run directory."""

from __future__ import annotations

import json

from .errors import DiagnoseError
from .run import ATTRIBUTIONS

__all__ = ["summary_lines", "checkpoint_lines", "summary_csv", "rows_csv", "stores_csv", "write_diagnose"]


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def summary_lines(doc: dict) -> list[str]:
    """One line per policy: write ratio to OPT (whole store; cut to B in its own order), evidence
    kept / injected / held by OPT, the attribution counts, mean injected and stored tokens."""
    from ..clitools import table_lines

    rows = []
    for p in doc["policies"]:
        a = p["attribution"]
        n = p["n_with_evidence"]
        rows.append((p["label"], _pct(p["write_ratio"]), _pct(p["write_ratio_cut"]),
                     f"{p['evidence_kept']}/{n}", f"{p['evidence_injected']}/{n}", f"{p['opt_holds']}/{n}",
                     *(a[k] for k in ATTRIBUTIONS), p["n_probes"], f"{p['mean_tokens_injected']:,.0f}",
                     f"{p['store_cost']:,.0f}"))
    headers = ("policy", "write/OPT", "cut/OPT", "kept", "injected", "OPT holds", *ATTRIBUTIONS, "probes",
               "mean injected", "store@last")
    return table_lines(headers, rows, ("<",) + (">",) * (len(headers) - 1))


def checkpoint_lines(doc: dict) -> list[str]:
    """One line per checkpoint: its package, budget and certified OPT."""
    from ..clitools import table_lines

    rows = [(c["session"], c["package_id"], c["n_experiences"], c["n_units"], c["n_queries"],
             f"{c['stream_cost']:,.0f}", f"{c['budget']:,.0f}", f"{c['opt']:g}", c["opt_status"],
             len(c["opt_store"])) for c in doc["checkpoints"]]
    headers = ("checkpoint", "package", "experiences", "units", "queries", "stream cost", "budget B", "OPT",
               "status", "OPT store")
    return table_lines(headers, rows, (">", "<", ">", ">", ">", ">", ">", ">", "<", ">"))


def _csv(fields, rows) -> str:
    from ..report import csv_text

    return csv_text([{k: (round(v, 6) if isinstance(v, float) else ("/".join(map(str, v)) if isinstance(v, list) else v))
                      for k, v in r.items()} for r in rows], fields)


_SUMMARY = ("policy", "label", "write_ratio", "write_ratio_cut", "n_probes", *ATTRIBUTIONS, "n_with_evidence",
            "evidence_kept", "evidence_injected", "opt_holds", "mean_tokens_injected", "stored_tokens", "store_cost",
            "over_budget_at", "leaks_held")
_ROWS = ("policy", "probe", "session", "fact", "kind", "form", "evidence", "evidence_kept", "evidence_injected",
         "opt_holds", "tokens_injected", "n_injected", "injected_outcome", "outcome", "attribution", "answer")
_STORES = ("policy", "session", "n_items", "store_cost", "budget", "over_budget", "why_not_feasible", "value", "opt",
           "write_ratio", "write_ratio_cut", "n_items_cut", "stored_tokens", "n_units", "units_kept", "leaks_held")


def summary_csv(doc: dict) -> str:
    """One line per policy as CSV text (attribution counts as columns)."""
    return _csv(_SUMMARY, [{**p, **p["attribution"]} for p in doc["policies"]])


def rows_csv(doc: dict) -> str:
    """One line per (policy, probe, form) as CSV text."""
    return _csv(_ROWS, doc["rows"])


def stores_csv(doc: dict) -> str:
    """One line per (policy, checkpoint): the write-time store as CSV text."""
    return _csv(_STORES, doc["stores"])


def write_diagnose(doc: dict, out_dir) -> list[str]:
    """Write ``run.json``, ``summary.csv``, ``rows.csv`` and ``stores.csv`` into ``out_dir`` atomically."""
    from ..fileio import write_files

    return write_files(out_dir, {"run.json": json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                                 "summary.csv": summary_csv(doc), "rows.csv": rows_csv(doc),
                                 "stores.csv": stores_csv(doc)}, error=DiagnoseError)
