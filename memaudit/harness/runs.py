"""Run documents (``memaudit-harness-run/1``): their vocabulary, CSV tables, writing, reading and comparing.

A run document is what :func:`memaudit.harness.trial.run` returns; ``diff_runs`` compares two runs
probe by probe (the memory-eval-harness chapter's before / after recipe).
"""

from __future__ import annotations

import json
import os

from .errors import HarnessError

__all__ = ["RUN_FORMAT", "OUTCOMES", "PROBE_FORMS", "write_run", "load_run", "diff_runs", "rows_csv", "summary_csv"]

#: the ``format`` value of a run document
RUN_FORMAT = "memaudit-harness-run/1"

#: every outcome, by probe kind: live facts, deleted facts, never-planted facts
OUTCOMES = ("current", "conflict", "stale", "missing", "leaked", "clean", "abstained", "answered", "unscored")

#: the probe forms
PROBE_FORMS = ("literal", "paraphrase")

_ROW_FIELDS = ("policy", "probe", "session", "fact", "fact_type", "kind", "form", "question", "outcome",
               "tokens_injected", "abstained", "cached", "answer", "category", "evidence_recall")
_SUMMARY_FIELDS = ("policy", "form", "n_probes", "n_live", "n_deleted", "n_absent", *OUTCOMES,
                   "mean_tokens_injected", "n_evidence", "evidence_recall", "evidence_hit", "stored_tokens")


def rows_csv(doc: dict) -> str:
    """Every probe row of a run as CSV text."""
    from ..report import csv_text

    return csv_text([{**r, "policy": t["disturb"]["name"]} for t in doc["trials"] for r in t["rows"]], _ROW_FIELDS)


def summary_csv(doc: dict) -> str:
    """One line per (policy, form) of a run as CSV text."""
    from ..report import csv_text

    return csv_text([{"policy": t["disturb"]["name"], "form": form, "stored_tokens": t["stored_tokens"],
                      **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in s.items()}}
                     for t in doc["trials"] for form, s in t["summary"].items()], _SUMMARY_FIELDS)


def write_run(doc: dict, out_dir) -> list[str]:
    """Write ``run.json``, ``summary.csv`` and ``rows.csv`` into ``out_dir`` (created if needed), atomically."""
    from ..fileio import write_files

    return write_files(out_dir, {"run.json": json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                                 "summary.csv": summary_csv(doc), "rows.csv": rows_csv(doc)}, error=HarnessError)


def load_run(path) -> dict:
    """Read a run document: a ``run.json`` file, or a ``--out`` directory that holds one."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, "run.json")
    from pydantic import ValidationError

    from ..formats import read_json, validation_message
    from ..formats.documents import RunDocument

    if not os.path.exists(path):
        raise HarnessError(f"{path}: no such run file (give a run.json or the --out directory of a run)")
    doc = read_json(path, what="run document", error=HarnessError).data
    if not isinstance(doc, dict) or doc.get("format") != RUN_FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise HarnessError(f"{path}: format must be {RUN_FORMAT!r}; got {got!r}")
    try:
        RunDocument.model_validate(doc)
    except ValidationError as exc:
        raise HarnessError(validation_message(exc, doc, RunDocument, path, "the run")) from None
    trials = doc["trials"]
    names = set()
    for i, t in enumerate(trials):
        _check_trial(t, f"{path}: trials[{i}]")
        name = t["disturb"]["name"]
        if name in names:
            raise HarnessError(f"{path}: policy {name!r} appears twice in trials; a run holds one trial per policy")
        names.add(name)
    return doc


def _check_trial(t, w: str) -> None:
    """One row per (probe, form) in a trial (the types are checked by RunDocument)."""
    seen = set()
    for j, r in enumerate(t["rows"]):
        key = (r["probe"], r["form"])
        if key in seen:
            raise HarnessError(f"{w}.rows[{j}]: probe {key[0]!r} ({key[1]}) appears twice")
        seen.add(key)


def diff_runs(a: dict, b: dict) -> dict:
    """Compare run ``b`` (after) with run ``a`` (before) probe by probe.

    Trials are paired by policy name; when each run has exactly one trial they are paired whatever
    their names (the change may be the policy).  Returns the parts whose name or settings differ,
    the paired policies with their summary deltas, and every (policy, probe, form) whose outcome
    changed.

    Raises
    ------
    HarnessError
        When no trial pairs up, or a pair was not asked the same probes (the memory-eval-harness chapter's recipe
        holds the probe set constant).
    """
    parts = [k for k in ("plant", "probe", "score") if a.get(k) != b.get(k)]
    ta = {t["disturb"]["name"]: t for t in a["trials"]}
    tb = {t["disturb"]["name"]: t for t in b["trials"]}
    if len(ta) == 1 and len(tb) == 1:
        pairs = [(next(iter(ta.values())), next(iter(tb.values())))]
    else:
        common = [n for n in ta if n in tb]
        if not common:
            raise HarnessError(f"the two runs share no policy (before: {', '.join(ta)}; after: {', '.join(tb)})")
        pairs = [(ta[n], tb[n]) for n in common]
    out_pairs, changed = [], []
    for x, y in pairs:
        if x["disturb"] != y["disturb"] and "disturb" not in parts:
            parts.append("disturb")
        kx = {(r["probe"], r["form"]): r for r in x["rows"]}
        ky = {(r["probe"], r["form"]): r for r in y["rows"]}
        if set(kx) != set(ky):
            only_a = sorted(f"{p} ({f})" for p, f in set(kx) - set(ky))
            only_b = sorted(f"{p} ({f})" for p, f in set(ky) - set(kx))
            raise HarnessError(f"policy {x['disturb']['name']} / {y['disturb']['name']}: the runs asked different "
                               f"probes (only before: {', '.join(only_a[:5]) or '-'}; only after: "
                               f"{', '.join(only_b[:5]) or '-'}); hold the probe set constant")
        delta = {}
        for form, sx in x["summary"].items():
            sy = y["summary"].get(form, {})
            delta[form] = {k: sy.get(k, 0) - v for k, v in sx.items() if isinstance(v, (int, float))}
        out_pairs.append({"before": x["disturb"], "after": y["disturb"], "delta": delta,
                          "summary_before": x["summary"], "summary_after": y["summary"],
                          "stored_tokens": [x.get("stored_tokens"), y.get("stored_tokens")]})
        for key, r in kx.items():
            s = ky[key]
            if r["outcome"] != s["outcome"]:
                changed.append({"policy": y["disturb"]["name"], "probe": key[0], "form": key[1],
                                "before": r["outcome"], "after": s["outcome"]})
    return {"changed_parts": parts, "pairs": out_pairs, "changed_probes": changed}
