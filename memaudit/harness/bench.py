"""The 30-session memory bench: one developer, 30 working days of 12 exchanges, 15 facts (8 updated, 2 deleted
on request), distractor questions, filler replies of real standard-library source, probes at days
10, 20 and 30 in literal and paraphrase form, and ten memory policies."""

from __future__ import annotations

import functools
import hashlib
import os
import random
import sys
import sysconfig

from ..data import data_path
from .errors import HarnessError
from .match import contains_value
from .policies import BENCH_POLICIES, parse_policy, policy_label
from .readers import classifier_reader
from .scenario import MAX_SESSIONS, Scenario, load_scenario, scenario_from_dict
from .trial import Plant, ProbeSet, Score, run

__all__ = ["BENCH_SCENARIO_PATH", "bench_file", "bench_facts", "bench_distractors", "bench_scenario", "run_bench", "per_form_lines", "combined_lines",
           "combined_table", "stdlib_files"]

#: the scenario file of the 30-session memory bench (facts, probes, distractors), read here and by
#: the ``natural`` generator (:mod:`memaudit.generators.natural`)
BENCH_SCENARIO_PATH = data_path("scenarios", "memory-bench.yaml")


@functools.cache
def bench_file() -> Scenario:
    """The bench's scenario file as loaded by :func:`~memaudit.harness.scenario.load_scenario`
    (statements only; the bench adds filler and placement)."""
    return load_scenario(BENCH_SCENARIO_PATH)


def bench_facts() -> list[tuple]:
    """The bench's facts from its scenario file, in file order: ``(key, type, salience, [(day, value,
    statement)], (day, request) or None, literal probe, paraphrase probe)``."""
    sc = bench_file()
    questions: dict[str, tuple[str, str | None]] = {}
    for p in sc.probes:
        q = (p.literal, p.paraphrase)
        if questions.setdefault(p.fact, q) != q:
            raise HarnessError(f"{BENCH_SCENARIO_PATH}: probe {p.id!r} asks about {p.fact!r} in other words than "
                               "the fact's first probe; the bench asks one literal and one paraphrase per fact")
    out = []
    for f in sc.facts:
        if f.key not in questions:
            raise HarnessError(f"{BENCH_SCENARIO_PATH}: fact {f.key!r} has no probe")
        delete = (f.delete.session, f.delete.text) if f.delete is not None else None
        out.append((f.key, f.type, f.salience, [(v.session, v.value, v.text) for v in f.versions], delete,
                    *questions[f.key]))
    return out


def bench_distractors() -> list[str]:
    """The distractor questions of the bench's filler exchanges (``meta.distractors`` of its file)."""
    d = bench_file().meta.get("distractors")
    if not isinstance(d, list) or not d or not all(isinstance(q, str) and q.strip() for q in d):
        raise HarnessError(f"{BENCH_SCENARIO_PATH}: meta.distractors must be a non-empty list of questions; got {d!r}")
    return list(d)


_FILLER_LINES = 30

#: the most exchanges per bench session (each filler exchange carries ~30 lines of source)
MAX_EXCHANGES_PER_SESSION = 1000


@functools.cache
def stdlib_files() -> tuple[str, ...]:
    """The top-level ``.py`` modules of the running interpreter's standard library, sorted by name."""
    root = sysconfig.get_paths()["stdlib"]
    try:
        names = sorted(n for n in os.listdir(root) if n.endswith(".py"))
    except OSError as exc:
        raise HarnessError(f"cannot list the standard library at {root}: {exc.strerror or exc}") from None
    if not names:
        raise HarnessError(f"no .py file in the standard library folder {root}")
    return tuple(os.path.join(root, n) for n in names)


@functools.lru_cache(maxsize=None)
def _file_lines(path: str) -> tuple[str, ...]:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return tuple(line.rstrip() for line in fh)


def _filler(rng: random.Random, values: list[str]) -> tuple[str, str]:
    """~30 consecutive lines of one standard-library module, chosen by ``rng``; a snippet that
    happens to contain a fact value, or is mostly blank, is drawn again."""
    files = stdlib_files()
    for _ in range(1000):
        path = files[rng.randrange(len(files))]
        lines = _file_lines(path)
        if len(lines) < _FILLER_LINES + 10:
            continue
        start = rng.randrange(len(lines) - _FILLER_LINES)
        snippet = lines[start:start + _FILLER_LINES]
        if sum(1 for s in snippet if s.strip()) < _FILLER_LINES // 2:
            continue
        text = "\n".join(snippet)
        if any(contains_value(text, v) for v in values):
            continue
        return text, f"{os.path.basename(path)}:{start + 1}"
    raise HarnessError("could not draw filler from the standard library (every snippet was rejected)")


def bench_scenario(*, n_sessions: int = 30, exchanges_per_session: int = 12, seed: int = 42,
                   probe_days=(10, 20, 30)) -> Scenario:
    """The 30-session memory bench's scenario, built with the scenario file format.

    Each day has ``exchanges_per_session`` exchanges: the fact events of that day (a statement,
    an update or a delete request, at positions drawn by the seed) and distractor questions
    answered with ``Here is the relevant code:`` and ~30 lines of a standard-library module drawn
    by the seed.  Versions, deletes and probe days after ``n_sessions`` are dropped.  At the end
    of each probe day every fact stated so far is probed, in literal and paraphrase form.
    """
    for name, v, hi in (("n_sessions", n_sessions, MAX_SESSIONS),
                        ("exchanges_per_session", exchanges_per_session, MAX_EXCHANGES_PER_SESSION)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
            raise HarnessError(f"bench: {name} must be an integer in 1..{hi}; got {v!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise HarnessError(f"bench: seed must be an integer; got {seed!r}")
    days = sorted({d for d in probe_days if 1 <= d <= n_sessions})
    rng = random.Random(seed)
    events: dict[int, list[tuple[str, str, int]]] = {}  # day -> [(key, kind, index)]
    facts = []
    values = []
    bench = bench_facts()
    distractors = bench_distractors()
    for key, typ, sal, versions, delete, _, _ in bench:
        vs = [v for v in versions if v[0] <= n_sessions]
        if not vs:
            continue
        values += [v[1] for v in vs]
        fact = {"key": key, "type": typ, "salience": sal,
                "versions": [{"session": d, "value": val, "text": text} for d, val, text in vs]}
        for j, (d, _, _) in enumerate(vs):
            events.setdefault(d, []).append((key, "state", j))
        if delete is not None and delete[0] <= n_sessions:
            fact["delete"] = {"session": delete[0], "text": delete[1]}
            events.setdefault(delete[0], []).append((key, "delete", -1))
        facts.append(fact)
    for q in distractors:
        if any(contains_value(q, v) for v in values):
            raise HarnessError(f"{BENCH_SCENARIO_PATH}: distractor {q!r} states a fact value")
    by_key = {f["key"]: f for f in facts}
    sessions = []
    sources = []
    for day in range(1, n_sessions + 1):
        todays = events.get(day, [])
        if len(todays) > exchanges_per_session:
            raise HarnessError(f"bench: day {day} has {len(todays)} fact events but only {exchanges_per_session} "
                               "exchanges per session")
        positions = sorted(rng.sample(range(exchanges_per_session), len(todays)))
        for (key, kind, j), pos in zip(todays, positions):
            target = by_key[key]["delete"] if kind == "delete" else by_key[key]["versions"][j]
            target["position"] = pos
        rows = []
        for _ in range(exchanges_per_session - len(todays)):
            q = distractors[rng.randrange(len(distractors))]
            code, where = _filler(rng, values)
            rows.append({"user": q, "assistant": "Here is the relevant code:\n" + code})
            sources.append(where)
        if rows:
            sessions.append({"session": day, "exchanges": rows})
    probes = []
    for day in days:
        for key, _, _, versions, _, literal, paraphrase in bench:
            if key in by_key and by_key[key]["versions"][0]["session"] <= day:
                probes.append({"id": f"{key}@{day}", "session": day, "fact": key, "literal": literal,
                               "paraphrase": paraphrase})
    if not probes:
        raise HarnessError(f"bench: no probe: no probe day in {list(probe_days)} falls on or after a fact statement "
                           f"within {n_sessions} sessions")
    filler_sha = hashlib.sha256("\n".join(sources).encode("utf-8")).hexdigest()
    data = {"format": "memaudit-scenario/1", "id": f"seed001-bench-s{seed}-n{n_sessions}x{exchanges_per_session}",
            "n_sessions": n_sessions, "facts": facts, "sessions": sessions, "probes": probes,
            "meta": {"source": "seed 001 (AI agent memory, measured)", "seed": seed,
                     "python": sys.version.split()[0], "stdlib": sysconfig.get_paths()["stdlib"],
                     "filler_sources_sha256": filler_sha}}
    return scenario_from_dict(data)


def run_bench(policies=BENCH_POLICIES, *, n_sessions: int = 30, exchanges_per_session: int = 12, seed: int = 42,
              forms=("literal", "paraphrase"), reader=None, judge=None, match: str = "tokens",
              tokens: str = "o200k_base", progress=None) -> dict:
    """Run the 30-session memory bench (default: its ten policies, the context classifier, o200k_base tokens)."""
    settings = {"n_sessions": n_sessions, "exchanges_per_session": exchanges_per_session, "seed": seed}
    plant = Plant("seed001-bench", settings, bench_scenario(**settings))
    probe = ProbeSet(reader or classifier_reader(), forms=tuple(forms), judge=judge)
    pols = [parse_policy(p) if isinstance(p, str) else p for p in policies]
    return run(plant, pols, probe, Score(match=match, tokens=tokens), progress=progress)


def _label(t: dict) -> str:
    return policy_label(t["disturb"]["name"], t["disturb"].get("settings", {}))


def _label_width(doc: dict) -> int:
    return max([44] + [len(_label(t)) + 2 for t in doc["trials"]])


def per_form_lines(doc: dict) -> list[str]:
    """The 30-session memory bench's first table: one line per policy and probe form."""
    w = _label_width(doc)
    lines = [f"{'policy':<{w}}{'probe':<11}{'current':>8}{'conflict':>9}{'stale':>6}{'missing':>8} |"
             f"{'leaked':>7}{'clean':>6} |{'mean injected':>14}{'stored@end':>11}"]
    for t in doc["trials"]:
        forms = [f for f in t["summary"] if f != "combined"]
        for i, form in enumerate(forms):
            s = t["summary"][form]
            stored = str(t["stored_tokens"]) if i == 0 else ""
            lines.append(f"{_label(t):<{w}}{form:<11}{s['current']:>8}{s['conflict']:>9}{s['stale']:>6}"
                         f"{s['missing']:>8} |{s['leaked']:>7}{s['clean']:>6} |"
                         f"{round(s['mean_tokens_injected']):>14}{stored:>11}")
    return lines


def combined_table(doc: dict) -> list[dict]:
    """The 30-session memory bench's second table: both probe forms combined, per policy."""
    out = []
    for t in doc["trials"]:
        forms = [f for f in t["summary"] if f != "combined"]
        s = t["summary"].get("combined", t["summary"][forms[0]])
        means = [round(t["summary"][f]["mean_tokens_injected"]) for f in forms]
        out.append({"policy": t["disturb"]["name"], "label": _label(t), "current": s["current"],
                    "conflict": s["conflict"], "stale_or_missing": s["stale"] + s["missing"],
                    "leaked": s["leaked"], "n_deleted": s["n_deleted"], "n_live": s["n_live"],
                    "mean_tokens": means})
    return out


def combined_lines(doc: dict) -> list[str]:
    """The 30-session memory bench's second table as text lines (two token figures: literal / paraphrase)."""
    w = _label_width(doc)
    lines = [f"{'policy':<{w}}{'current only':>13}{'conflict':>9}{'stale or missing':>17}"
             f"{'deleted leaked':>15}{'mean tokens injected':>22}"]
    for r in combined_table(doc):
        toks = " / ".join(f"{m:,}" for m in r["mean_tokens"]) if len(set(r["mean_tokens"])) > 1 \
            else f"{r['mean_tokens'][0]:,}"
        leaked = f"{r['leaked']} of {r['n_deleted']}"
        lines.append(f"{r['label']:<{w}}{r['current']:>13}{r['conflict']:>9}{r['stale_or_missing']:>17}"
                     f"{leaked:>15}{toks:>22}")
    return lines
