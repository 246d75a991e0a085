"""Seed 001's bench: one developer, 30 working days of 12 exchanges, 15 facts (8 updated, 2 deleted
on request), distractor questions, filler replies of real standard-library source, probes at days
10, 20 and 30 in literal and paraphrase form, and ten memory policies."""

from __future__ import annotations

import functools
import hashlib
import os
import random
import sys
import sysconfig

from .errors import HarnessError
from .match import contains_value
from .policies import BENCH_POLICIES, parse_policy, policy_label
from .readers import classifier_reader
from .scenario import MAX_SESSIONS, Scenario, scenario_from_dict
from .trial import Plant, ProbeSet, Score, run

__all__ = ["BENCH_FACTS", "DISTRACTORS", "bench_scenario", "run_bench", "per_form_lines", "combined_lines",
           "combined_table", "stdlib_files"]

# key, type, salience, [(day, value, statement)], delete (day, request) or None, literal probe, paraphrase probe
BENCH_FACTS = [
    ("deploy_region", "decision", 2,
     [(1, "eu-west-2", "We deploy everything to eu-west-2."),
      (14, "eu-central-1", "We moved production to eu-central-1.")], None,
     "Which region do we deploy to?", "Where does prod live these days?"),
    ("postgres_version", "decision", 2,
     [(2, "Postgres 15", "Our database is Postgres 15."),
      (19, "Postgres 17", "We upgraded the database to Postgres 17.")], None,
     "Which Postgres version is our database on?", "What are we running for the relational store?"),
    ("test_runner", "preference", 2,
     [(3, "Jest", "We run the tests with Jest."),
      (11, "Vitest", "We switched the test runner to Vitest.")], None,
     "Which test runner do we use?", "What executes our specs?"),
    ("indentation", "preference", 2,
     [(4, "tabs", "Always indent with tabs, not spaces.")], None,
     "How do we indent code?", "What whitespace should the formatter emit at line starts?"),
    ("money", "procedure", 2,
     [(5, "Money class", "Use the Money class for amounts, never a double.")], None,
     "Which class do we use for amounts?", "How should prices be represented in code?"),
    ("on_call", "identity", 2,
     [(6, "Priya", "Priya is the on-call engineer this rotation."),
      (16, "Marco", "Marco is on call now."),
      (27, "Priya", "Priya is back on call.")], None,
     "Who is the on-call engineer?", "Whom do I page if something breaks tonight?"),
    ("ticket_prefix", "detail", 1,
     [(7, "PAYX", "Ticket ids start with the prefix PAYX.")], None,
     "What prefix do ticket ids start with?", "How are issues labelled in the tracker?"),
    ("node_version", "decision", 2,
     [(8, "Node 20", "Services run on Node 20."),
      (22, "Node 24", "Every service runs on Node 24 now.")], None,
     "Which Node version do services run on?", "What JavaScript runtime release is in production?"),
    ("phone", "detail", 1,
     [(9, "+44 7700 900123", "My phone number is +44 7700 900123.")], (20, "Please forget my phone number."),
     "What is my phone number?", "How can someone reach me by mobile?"),
    ("release_branch", "procedure", 2,
     [(10, "release/2026.3", "The release branch is release/2026.3."),
      (24, "release/2026.4", "Cut releases from release/2026.4 from now on.")], None,
     "What is the release branch?", "Where should I cut the next tag from?"),
    ("migration_reviewer", "identity", 1,
     [(12, "Dana", "Dana reviews every database migration.")], None,
     "Who reviews every database migration?", "Whose approval does a schema change need?"),
    ("time_zone", "identity", 2,
     [(13, "Lisbon", "My time zone is Lisbon."),
      (25, "Berlin", "I relocated; my time zone is Berlin now.")], None,
     "What is my time zone?", "Which city's clock should meetings follow for me?"),
    ("checkout_flag", "detail", 2,
     [(15, "new_checkout=false", "Keep new_checkout=false in production."),
      (23, "new_checkout=true", "Set new_checkout=true in production.")], None,
     "Is the new_checkout flag on in production?", "Are customers seeing the redesigned payment flow yet?"),
    ("personal_email", "detail", 1,
     [(17, "k.dev@example.com", "My personal email is k.dev@example.com.")],
     (26, "Please forget my personal email address."),
     "What is my personal email?", "Where should private messages to me go?"),
    ("commit_style", "procedure", 1,
     [(18, "Conventional Commits", "Commit messages follow Conventional Commits.")], None,
     "What convention do commit messages follow?", "How should I word the summary line when I save work to git?"),
]

#: ordinary questions; several deliberately share words with the facts (deploy, phone, database, node, ...)
DISTRACTORS = [
    "Why does the deploy pipeline take so long?",
    "How do I set up phone verification?",
    "How do I write a migration that adds a column safely?",
    "How do I paginate a large result set?",
    "Why is the production build bigger than the dev build?",
    "How do I profile a slow query?",
    "Why is this test flaky on the runner?",
    "How do I cache the node modules between builds?",
    "What should go into the release notes?",
    "How do I convert a timestamp to the user's time zone?",
    "How do I validate an email address field?",
    "Which index would speed up this database query?",
    "How do I reduce alert noise for whoever is on call?",
    "Why does the checkout page re-render twice?",
    "How do I roll back a bad deploy?",
    "What is a clean way to retry a failed HTTP call?",
    "How do I mock the clock in a unit test?",
    "Why does the build run out of memory?",
    "How do I add structured logging to a service?",
    "How should I name a feature flag?",
    "How do I run only the failing tests again?",
    "Why is the version check failing in CI?",
    "How do I stream a large file without loading it all?",
    "What is the safest way to parse user input?",
    "How do I debug a deadlock between two workers?",
    "How do I format money amounts for display?",
    "How do I write a good commit message body?",
    "Why does this regular expression run so slowly?",
    "How do I split a big pull request?",
    "How do I upgrade a dependency without breaking things?",
    "Where should configuration for each region live?",
    "How do I make a background job idempotent?",
    "How do I review a schema change for locking problems?",
    "How do I tag a release build?",
    "Why do services run out of file handles?",
    "How do I share a fixture between test files?",
]

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
    """Seed 001's scenario, built with the scenario file format.

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
    for key, typ, sal, versions, delete, _, _ in BENCH_FACTS:
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
    for q in DISTRACTORS:
        if any(contains_value(q, v) for v in values):  # pragma: no cover - guards the word lists above
            raise AssertionError(f"distractor {q!r} states a fact value")
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
            q = DISTRACTORS[rng.randrange(len(DISTRACTORS))]
            code, where = _filler(rng, values)
            rows.append({"user": q, "assistant": "Here is the relevant code:\n" + code})
            sources.append(where)
        if rows:
            sessions.append({"session": day, "exchanges": rows})
    probes = []
    for day in days:
        for key, _, _, versions, _, literal, paraphrase in BENCH_FACTS:
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
    """Run seed 001's bench (default: its ten policies, the context classifier, o200k_base tokens)."""
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
    """Seed 001's first table: one line per policy and probe form."""
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
    """Seed 001's second table: both probe forms combined, per policy."""
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
    """Seed 001's second table as text lines (two token figures: literal / paraphrase)."""
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
