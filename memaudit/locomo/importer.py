"""``memaudit import locomo``: read LoCoMo files, build packages and scenarios, certify, write them with a log."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace

from .. import __version__
from ..fileio import write_files
from ..package import Package, package_to_dict, stream_cost
from . import IMPORTER_VERSION
from .build import Adjudication, Settings, build_package
from .reader import REPAIRS, Conversation, LocomoError, read_locomo
from .scenario import scenario_dict

__all__ = ["MANIFEST_FORMAT", "CERTIFY_FRACS", "ImportResult", "read_adjudication_file", "adjudication_rows",
           "import_locomo", "certify_package", "json_bytes"]

#: the manifest this importer writes
MANIFEST_FORMAT = "memaudit-locomo-manifest/1"

#: budgets of the certified optima in the manifest, as fractions of the stream cost
CERTIFY_FRACS = (0.05, 0.10, 0.25)


def json_bytes(data) -> bytes:
    """The bytes of every file the importer writes: JSON, indent 2, UTF-8, trailing newline."""
    return (json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


@dataclass
class ImportResult:
    """What one import built: conversations, ``packages[conversation id][rule]``, scenario dicts,
    the log lines, the manifest (without certification: the files and their sha256, no results) and
    the files written (with ``out``)."""

    conversations: list[Conversation]
    packages: dict[str, dict[str, Package]]
    scenarios: dict[str, dict]
    log: list[str]
    manifest: dict | None = None
    files: list[str] = field(default_factory=list)


def read_adjudication_file(path, conversations: list[Conversation], settings: Settings) -> dict[str, Adjudication]:
    """Read an adjudication file (the vendor audit's rows ``memory, unit, coverage``, CSV or JSON) for
    the model-written candidates: ``memory`` is ``<conversation id>/<candidate id>`` (or just the
    candidate id when the import holds one conversation), ``unit`` a unit of that conversation.

    Returns ``{conversation id: Adjudication}``.  A candidate the file does not name covers nothing.
    """
    from ..stores.adjudication import read_adjudication
    from ..stores.export import StoreError

    path = os.fspath(path)
    memories: dict[str, tuple[str, str]] = {}
    units_of: dict[str, set] = {}
    for conv in conversations:
        pkg = build_package(conv, settings, "link")
        units_of[conv.id] = {u.id for u in pkg.units}
        for c in pkg.candidates:
            if c.kind != "raw":
                memories[f"{conv.id}/{c.id}"] = (conv.id, c.id)
                if len(conversations) == 1:
                    memories[c.id] = (conv.id, c.id)
    all_units = [SimpleNamespace(id=u) for u in sorted(set().union(*units_of.values()))]
    fake_pkg = SimpleNamespace(id="LoCoMo import", units=all_units, experiences=[])
    fake_export = SimpleNamespace(path="(the fact and summary candidates of the LoCoMo packages, named "
                                       "<conversation id>/<candidate id>; raw turns are covered by annotation)",
                                  by_id=lambda: memories)
    try:
        rows = read_adjudication(path, fake_pkg, fake_export)
    except StoreError as exc:
        raise LocomoError(str(exc)) from None
    by_conv: dict[str, dict] = {c.id: {} for c in conversations}
    decided: dict[str, set] = {c.id: set() for c in conversations}
    for r in rows:
        if r.experience is not None:
            raise LocomoError(f"{path}: memory {r.memory!r}: the 'experience' column is not used for LoCoMo "
                              "candidates (each already sits at its turn); leave it empty")
        cid, cand = memories[r.memory]
        decided[cid].add(cand)
        if r.unit is None:
            continue
        if r.unit not in units_of[cid]:
            raise LocomoError(f"{path}: memory {r.memory!r} names unit {r.unit!r}, which is not a unit of "
                              f"conversation {cid!r}")
        if (cand, r.unit) in by_conv[cid]:
            raise LocomoError(f"{path}: candidate {cand!r} of {cid!r} and unit {r.unit!r} have two rows")
        by_conv[cid][(cand, r.unit)] = r.coverage
    return {cid: Adjudication(os.path.basename(path), rows_, frozenset(decided[cid]))
            for cid, rows_ in by_conv.items()}


def certify_package(pkg: Package, fracs=CERTIFY_FRACS, *, backend: str = "milp-highs") -> list[dict]:
    """Certified OPT of ``pkg`` at each budget fraction, with the share of evidence kept and the kinds stored.

    Raises
    ------
    memaudit.generators.datasets.ManifestError
        When an optimum is not certified.
    """
    from ..generators.datasets import certify_at

    kinds = {c.id: c.kind for c in pkg.candidates}
    total = sum(u.weight for u in pkg.units)
    out = []
    for f in fracs:
        r = certify_at(pkg, f, backend=backend)
        out.append({"budget_frac": f, "budget": r["budget"], "opt": r["opt"], "opt_share": r["opt"] / total,
                    "certified": r["certified"],
                    "kinds_stored": dict(sorted(Counter(kinds[c] for c in r["store"]).items())),
                    "store": r["store"],
                    "methods": {m: {"status": v["status"], "value": v["value"]} for m, v in r["methods"].items()},
                    "seconds": {m: v["wall_time"] for m, v in r["methods"].items()}})
    return out


def _same_content(a: Conversation, b: Conversation) -> bool:
    return (a.speakers, a.sessions, a.qa, a.repairs) == (b.speakers, b.sessions, b.qa, b.repairs)


def _log_conversation(conv: Conversation, shape: str, path: str) -> list[str]:
    lines = [f"{path}: {shape} shape: conversation {conv.id} ({conv.speakers[0]} and {conv.speakers[1]}): "
             f"{len(conv.sessions)} sessions, {sum(len(s.turns) for s in conv.sessions)} turns, {len(conv.qa)} QA, "
             f"{sum(len(s.observations) for s in conv.sessions)} observations, "
             f"{sum(1 for s in conv.sessions if s.summary is not None)} summaries"]
    for name, ids in conv.repair_counts().items():
        lines.append(f"  repair {name} ({ids['count']}): {REPAIRS[name]}: " + "; ".join(ids["ids"]))
    if not conv.repairs:
        lines.append("  no repair needed")
    return lines


def import_locomo(paths, out=None, *, settings: Settings = Settings(), rules=("link", "answer"),
                  adjudication=None, certify: bool = True, backend: str = "milp-highs", say=None) -> ImportResult:
    """Import LoCoMo files: packages per coverage rule, scenarios, the log and (``certify``) the manifest.

    Everything is built (and certified) in memory first; only then, when ``out`` is given, are the
    files written there, each atomically: ``locomo-<conv>-<rule>.json`` (packages),
    ``locomo-<conv>.scenario.json``, ``import-log.txt`` and ``manifest.json`` (with
    ``certify=False`` it lists the files with ``"certified": false`` and no results, so a manifest
    of an earlier run is never left beside packages it does not describe).  Inputs are only read.

    Raises
    ------
    LocomoError
        A file that is not LoCoMo, a conversation that breaks a rule, two conversations with one id.
    """
    say = say or (lambda line: None)
    paths = [os.fspath(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]
    if not paths:
        raise LocomoError("no LoCoMo file given")
    rules = tuple(dict.fromkeys(rules))
    if not rules and adjudication is None:
        raise LocomoError("no coverage rule given: name at least one of link, answer (or give --adjudication FILE)")
    if adjudication is not None and "adjudication" not in rules:
        rules += ("adjudication",)
    if "adjudication" in rules and adjudication is None:
        raise LocomoError("the adjudication rule needs an adjudication file (--adjudication FILE)")
    log = [f"memaudit {__version__}, LoCoMo importer version {IMPORTER_VERSION}; settings "
           + json.dumps(settings.to_dict(), sort_keys=True) + f"; coverage rules {', '.join(rules)}"]
    conversations: list[Conversation] = []
    seen: dict[str, tuple[str, Conversation]] = {}
    for path in paths:
        shape, convs = read_locomo(path)
        for conv in convs:
            if conv.id in seen:
                first_path, first = seen[conv.id]
                if _same_content(conv, first):  # e.g. 26.json and the Mem0 list holding conv-26
                    line = (f"{os.path.basename(path)}: {shape} shape: conversation {conv.id} is the same as in "
                            f"{os.path.basename(first_path)} (apart from the source): skipped")
                    log.append(line)
                    say(line)
                    continue
                raise LocomoError(f"{path}: conversation {conv.id!r} was already read from {first_path}, with "
                                  "different content; give each conversation once")
            seen[conv.id] = (path, conv)
            conversations.append(conv)
            for line in _log_conversation(conv, shape, os.path.basename(path)):
                log.append(line)
                say(line)
    adjudications = read_adjudication_file(adjudication, conversations, settings) if adjudication else {}
    packages, scenarios = {}, {}
    for conv in conversations:
        packages[conv.id] = {r: build_package(conv, settings, r, adjudications.get(conv.id)) for r in rules}
        scenarios[conv.id] = scenario_dict(conv)
    result = ImportResult(conversations, packages, scenarios, log)
    entries = []
    for conv in conversations:
        pk = packages[conv.id]
        if certify:
            say(f"certifying {conv.id} under {', '.join(pk)} at {', '.join(f'{f:g}' for f in CERTIFY_FRACS)} "
                "of the stream cost...")
        started = time.perf_counter()
        entry = {"conversation": conv.id, "scenario": f"locomo-{conv.id}.scenario.json",
                 "answerable_with_evidence": sum(1 for q in conv.qa if q.answerable), "packages": {}}
        for rule, pkg in pk.items():
            results = certify_package(pkg, backend=backend) if certify else []
            for r in results:
                r.pop("seconds")  # times vary run to run: the manifest stays byte-identical
            entry["packages"][rule] = {"file": f"{pkg.id}.json", "id": pkg.id,
                                       "sha256": hashlib.sha256(json_bytes(package_to_dict(pkg))).hexdigest(),
                                       "stream_cost": stream_cost(pkg), "budget": pkg.budget, "results": results}
        if certify:
            say(f"  {conv.id}: certified in {time.perf_counter() - started:.2f} s; OPT share of evidence "
                + "; ".join(f"{rule} " + "/".join(f"{r['opt_share']:.3f}" for r in e["results"])
                            for rule, e in entry["packages"].items()))
        entries.append(entry)
    from ..certificate import solver_versions

    sources = sorted({json.dumps(c.source, sort_keys=True) for c in conversations})
    result.manifest = {"format": MANIFEST_FORMAT, "memaudit_version": __version__,
                       "importer_version": IMPORTER_VERSION, "certified": certify, "method": "bnb",
                       "backend": backend if certify else None,
                       "backend_versions": solver_versions() if certify else {},
                       "budget_fracs": list(CERTIFY_FRACS) if certify else [],
                       "settings": settings.to_dict(), "rules": list(rules),
                       "sources": [json.loads(x) for x in sources], "conversations": entries}
    if out is not None:
        result.files = _write(result, os.fspath(out), paths)
    return result


def _write(result: ImportResult, out: str, inputs: list[str]) -> list[str]:
    files: dict[str, bytes] = {}
    for cid, pk in result.packages.items():
        for pkg in pk.values():
            files[f"{pkg.id}.json"] = json_bytes(package_to_dict(pkg))
        files[f"locomo-{cid}.scenario.json"] = json_bytes(result.scenarios[cid])
    files["import-log.txt"] = ("\n".join(result.log) + "\n").encode("utf-8")
    files["manifest.json"] = json_bytes(result.manifest)
    real_inputs = {os.path.realpath(p) for p in inputs}
    for name in files:
        path = os.path.join(out, name)
        if os.path.realpath(path) in real_inputs:
            raise LocomoError(f"{path}: refusing to write over an input file; choose another -o directory")
    return write_files(out, files, error=LocomoError, flag="-o")


def adjudication_rows(packages, *, judge_cmd: str | None = None, cache_dir=".memaudit-judge-cache",
                      timeout: float = 300.0, progress=None) -> list:
    """Rows of an adjudication file for the fact and summary candidates of imported LoCoMo packages.

    Without ``judge_cmd`` the rows are each package's own coverage (e.g. the ``answer`` rule's: a
    starting point to review by hand); with it, every candidate is put to the judge command (the
    vendor audit's prompt and cache, :func:`memaudit.stores.adjudication.judge_rows`).  A candidate
    that covers nothing gets one row with an empty unit, so the file decides it too.  ``memory``
    is ``<conversation id>/<candidate id>``.
    """
    from ..stores.adjudication import judge_rows
    from ..stores.export import StoreError
    from ..stores.matcher import CoverageRow

    rows = []
    for pkg in packages:
        conv = pkg.meta.get("conversation") if pkg.meta.get("importer") == "memaudit.locomo" else None
        if not isinstance(conv, str):
            raise LocomoError(f"package {pkg.id!r} was not written by memaudit import locomo (its meta has no "
                              "importer 'memaudit.locomo' and conversation)")
        model_written = [c for c in pkg.candidates if c.kind != "raw"]
        if judge_cmd is None:
            for c in model_written:
                cov = [(u, a) for u, a in c.coverage.items() if a > 0]
                rows += [CoverageRow(f"{conv}/{c.id}", u, a, pkg.meta["coverage_rule"]) for u, a in cov] or \
                    [CoverageRow(f"{conv}/{c.id}", None, 0.0, pkg.meta["coverage_rule"])]
            continue
        export = SimpleNamespace(items=[SimpleNamespace(id=f"{conv}/{c.id}", text=c.text) for c in model_written])
        try:
            run = judge_rows(pkg, export, judge_cmd, cache_dir=cache_dir, timeout=timeout, progress=progress)
        except StoreError as exc:
            raise LocomoError(str(exc)) from None
        rows += run.rows
        for failed in run.failed:  # an unusable answer leaves that candidate out of the file, as the audit does
            if progress is not None:
                progress(f"warning: the judge's answer for {failed['memory']} was unusable ({failed['reason']}); "
                         "it has no row in the file")
    return rows
