"""Disturb: conditions and memory policies that build what the probe session sees.

A policy is a named factory whose keyword arguments are its settings.  ``policy.build(scenario,
count)`` returns a memory with two methods: ``inject(session, question)``, the lines put in front
of the reader at the end of ``session``, and ``stored(session)``, every line the policy keeps; and
their structured forms ``inject_items`` and ``items``, each line a :class:`StoredItem` (a turn, a
fact line, a profile entry, a bi-temporal record or a summary, with the exchange it came from).
The memory-eval-harness chapter's five conditions (``fresh``, ``replay-full``, ``replay-capped``, ``compacted``, ``store``),
the 30-session memory bench's ten policies, Generative-Agents retrieval and a bi-temporal store are all built here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable

from memaudit_solvers.settings import Setting, parse_spec, setting_error, validate_settings

from .errors import HarnessError
from .memories import (ITEM_KINDS, BM25Index, StoredItem, _BiTemporal, _BM25, _FactLog, _Fresh, _GenerativeAgents,
                       _Profile, _SessionBuffer, _Transcript, render_exchange)
from .memories import _Memory  # noqa: F401  (re-exported: diagnose and locomo subclass it)

__all__ = ["Policy", "StoredItem", "ITEM_KINDS", "POLICIES", "LAB_POLICIES", "BENCH_POLICIES", "EXTRA_POLICIES", "POLICY_LABELS",
           "POLICY_SETTINGS", "policy_label", "parse_policy", "render_exchange", "BM25Index"]


@dataclass(frozen=True)
class Policy:
    """A disturb part: ``name`` (a key of :data:`POLICIES`), its ``settings`` and its builder."""

    name: str
    settings: dict
    build: Callable = field(repr=False, compare=False)

    def spec(self) -> dict:
        return {"name": self.name, "settings": dict(self.settings)}


# -- factories (keyword arguments = settings) --------------------------------------------

def _refuse(policy, name, rule, value):
    return HarnessError(str(setting_error(f"policy '{policy}'", name, rule, value)))


def _check_int(name, value, lo, policy):
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise _refuse(policy, name, f"an integer >= {lo}", value)
    return value


def _check_bool(name, value, policy):
    if not isinstance(value, bool):
        raise _refuse(policy, name, "true or false", value)
    return value


def _check_num(name, value, policy, lo=None, hi=None):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or (lo is not None and value < lo) or (hi is not None and value > hi):
        rng = f" in [{lo:g}, {hi:g}]" if lo is not None and hi is not None else ""
        raise _refuse(policy, name, f"a finite number{rng}", value)
    return float(value)


def fresh() -> Policy:
    """The memory-eval-harness chapter's fresh window: nothing carried over (the floor)."""
    return Policy("fresh", {}, lambda sc, count: _Fresh(sc, count))


def session_buffer(*, stamp: bool = True) -> Policy:
    """The current session's exchanges only (short-term memory)."""
    _check_bool("stamp", stamp, "session-buffer")
    return Policy("session-buffer", {"stamp": stamp}, lambda sc, count: _SessionBuffer(sc, count, stamp))


def transcript(*, stamp: bool = True, cap_tokens: int | None = None, name: str = "full-transcript") -> Policy:
    """Every exchange of every session so far; with ``cap_tokens``, whole sessions are evicted
    oldest first until the replay fits the cap (in the trial's token counter)."""
    _check_bool("stamp", stamp, name)
    if cap_tokens is not None:
        _check_int("cap_tokens", cap_tokens, 0, name)
    return Policy(name, {"stamp": stamp, "cap_tokens": cap_tokens},
                  lambda sc, count: _Transcript(sc, count, stamp, cap_tokens=cap_tokens))


def replay_full(*, stamp: bool = False) -> Policy:
    """The memory-eval-harness chapter's full replay: the whole transcript, old versions included (no day stamps)."""
    return transcript(stamp=stamp, name="replay-full")


def replay_capped(*, cap_tokens: int = 50, stamp: bool = False) -> Policy:
    """The memory-eval-harness chapter's capped replay: a window cap evicts whole sessions, oldest first.

    The memory-eval-harness chapter says only that the cap evicted session 1; in its lab any cap from 35 to 97 len/4
    tokens does exactly that (session 2 alone is 35, both sessions 98).  The default is 50."""
    return transcript(stamp=stamp, cap_tokens=cap_tokens, name="replay-capped")


def last_exchanges(*, n: int = 20, stamp: bool = True) -> Policy:
    """A sliding window of the last ``n`` exchanges, across session boundaries."""
    _check_int("n", n, 0, "last-exchanges")
    _check_bool("stamp", stamp, "last-exchanges")
    return Policy("last-exchanges", {"n": n, "stamp": stamp},
                  lambda sc, count: _Transcript(sc, count, stamp, last_n=n))


def fact_log(*, stamp: bool = True) -> Policy:
    """Append-only fact log: every user statement that carries a fact (delete requests too), all injected."""
    _check_bool("stamp", stamp, "fact-log")
    return Policy("fact-log", {"stamp": stamp}, lambda sc, count: _FactLog(sc, count, stamp))


def profile(*, stamp: bool = True, min_salience: int = 0, name: str = "profile") -> Policy:
    """One line per fact key, overwritten on change, removed on a delete request, all injected
    (a perfect extractor).  Facts with salience below ``min_salience`` are not kept."""
    _check_bool("stamp", stamp, name)
    _check_int("min_salience", min_salience, 0, name)
    return Policy(name, {"stamp": stamp, "min_salience": min_salience},
                  lambda sc, count: _Profile(sc, count, stamp, min_salience))


def compacted(*, min_salience: int = 2, stamp: bool = False) -> Policy:
    """The memory-eval-harness chapter's compaction: a summary that keeps the latest version of each fact with
    salience >= ``min_salience`` and nothing else."""
    return profile(stamp=stamp, min_salience=min_salience, name="compacted")


def store(*, stamp: bool = False) -> Policy:
    """The memory-eval-harness chapter's memory store: every fact kept, contradictions updated in place."""
    return profile(stamp=stamp, name="store")


def bm25(*, source: str = "transcript", k: int = 5, stamp: bool = True) -> Policy:
    """BM25 top-``k`` over the transcript (one chunk per exchange) or over the fact log."""
    name = "bm25-transcript" if source == "transcript" else "bm25-fact-log"
    if source not in ("transcript", "fact-log"):
        raise _refuse("bm25", "source", "one of transcript, fact-log", source)
    _check_int("k", k, 0, name)
    _check_bool("stamp", stamp, name)
    return Policy(name, {"source": source, "k": k, "stamp": stamp, "bm25": BM25Index.SETTINGS},
                  lambda sc, count: _BM25(sc, count, source, k, stamp))


def bm25_transcript(*, k: int = 5, stamp: bool = True) -> Policy:
    """BM25 top-k over the transcript, each exchange one chunk."""
    return bm25(source="transcript", k=k, stamp=stamp)


def bm25_fact_log(*, k: int = 5, stamp: bool = True) -> Policy:
    """BM25 top-k over the fact log."""
    return bm25(source="fact-log", k=k, stamp=stamp)


def profile_bm25(*, k: int = 3, index: str = "transcript", redact_deleted: bool = False,
                 stamp: bool = True) -> Policy:
    """The profile plus BM25 top-``k`` over the transcript (``index='transcript'``, the common
    hybrid), optionally with deleted facts' statements redacted, or over the exchanges the
    profile did not extract (``index='unextracted'``: every fact lives in one store)."""
    if index not in ("transcript", "unextracted"):
        raise _refuse("profile+bm25", "index", "one of transcript, unextracted", index)
    name = "profile+bm25-unindexed" if index == "unextracted" else (
        "profile+bm25-redacted" if redact_deleted else "profile+bm25")
    _check_int("k", k, 0, name)
    _check_bool("redact_deleted", redact_deleted, name)
    _check_bool("stamp", stamp, name)
    return Policy(name, {"k": k, "index": index, "redact_deleted": redact_deleted, "stamp": stamp,
                         "bm25": BM25Index.SETTINGS},
                  lambda sc, count: _BM25(sc, count, index, k, stamp, profile=True, redact_deleted=redact_deleted))


def generative_agents(*, variant: str = "paper", k: int = 5, fact_importance: float = 8,
                      other_importance: float = 2, hours_per_exchange: float = 0.5,
                      day_start_hour: float = 9, probe_hour: float = 18, stamp: bool = True,
                      weights=None, decay=None, recency=None) -> Policy:
    """Generative-Agents retrieval (recency x importance x relevance) over the transcript.

    ``variant='paper'``: equal weights, recency 0.995 ** hours since the memory was written
    (exchange i of session d is written at hour 24 (d - 1) + day_start_hour + i hours_per_exchange;
    the probe runs at hour probe_hour of its session).  ``variant='code'``: the released code
    (joonspk-research/generative_agents, ``retrieve.py``: ``gw = [0.5, 3, 2]`` multiplies recency,
    relevance and importance in that order): weights recency 0.5, relevance 3, importance 2, and
    recency ``0.99 ** rank`` over the memories sorted by last access oldest first, so rank 1 (the
    largest term) is the oldest memory; nothing is re-accessed here, so last access = creation.
    The agent-memory essay reads the vector as making importance six times recency; the code weights relevance.
    ``recency='rank-newest'`` ranks the newest memory first instead.  Relevance is the BM25 score (no embeddings here); importance is
    scripted instead of model-rated: ``fact_importance`` for exchanges that state or delete a fact,
    ``other_importance`` for filler.  ``weights``, ``decay`` and ``recency`` override the variant.
    """
    name = f"ga-{variant}"
    # weights in the order (recency, importance, relevance)
    presets = {"paper": ((1.0, 1.0, 1.0), 0.995, "hours"), "code": ((0.5, 2.0, 3.0), 0.99, "rank")}
    if variant not in presets:
        raise _refuse("ga", "variant", "one of paper, code", variant)
    w0, d0, r0 = presets[variant]
    weights = w0 if weights is None else weights
    if not isinstance(weights, (list, tuple)) or len(weights) != 3:
        raise _refuse(name, "weights", "three numbers (recency, importance, relevance)", weights)
    weights = tuple(_check_num("weights", w, name, 0, 1e9) for w in weights)
    decay = _check_num("decay", d0 if decay is None else decay, name, 0, 1)
    recency = r0 if recency is None else recency
    if recency not in ("hours", "rank", "rank-newest"):
        raise _refuse(name, "recency", "one of hours, rank, rank-newest", recency)
    _check_int("k", k, 0, name)
    fi = _check_num("fact_importance", fact_importance, name, 1, 10)
    oi = _check_num("other_importance", other_importance, name, 1, 10)
    hpe = _check_num("hours_per_exchange", hours_per_exchange, name, 0, 24)
    dsh = _check_num("day_start_hour", day_start_hour, name, 0, 24)
    ph = _check_num("probe_hour", probe_hour, name, 0, 24)
    _check_bool("stamp", stamp, name)
    settings = {"variant": variant, "weights": {"recency": weights[0], "importance": weights[1],
                                                "relevance": weights[2]},
                "decay": decay, "recency": recency, "k": k, "fact_importance": fi, "other_importance": oi,
                "hours_per_exchange": hpe, "day_start_hour": dsh, "probe_hour": ph, "stamp": stamp,
                "relevance": "bm25 (min-max normalised)", "bm25": BM25Index.SETTINGS}
    return Policy(name, settings, lambda sc, count: _GenerativeAgents(sc, count, weights, decay, recency, k, fi, oi,
                                                                       hpe, dsh, ph, stamp))


def bitemporal(*, history: bool = False, stamp: bool = True) -> Policy:
    """A bi-temporal store: every stated value kept with its validity interval (superseded
    records closed, not deleted; a delete request erases the fact).  Injects the currently valid
    records, or with ``history=True`` every record with its interval."""
    _check_bool("history", history, "bitemporal")
    _check_bool("stamp", stamp, "bitemporal")
    name = "bitemporal-history" if history else "bitemporal"
    return Policy(name, {"history": history, "stamp": stamp}, lambda sc, count: _BiTemporal(sc, count, history, stamp))


# -- the registry: each policy declared once with its settings --------------------------------

def _stamp(default: bool) -> Setting:
    return Setting("stamp", bool, default, "Prefix each line with its day ([day 3]).")


def _k(default: int) -> Setting:
    return Setting("k", int, default, "How many lines retrieval returns.", low=0)


def _salience(default: int) -> Setting:
    return Setting("min_salience", int, default, "Keep only facts with salience >= this.", low=0)


def _hour(name: str, default: float, text: str) -> Setting:
    return Setting(name, float, default, text, low=0, high=24)


_CAP = "Evict whole sessions, oldest first, until the replay fits this many tokens."
_GA = (_k(5),
       Setting("fact_importance", float, 8, "Scripted importance of an exchange that states or deletes a fact.",
               low=1, high=10),
       Setting("other_importance", float, 2, "Scripted importance of filler.", low=1, high=10),
       _hour("hours_per_exchange", 0.5, "Hours between two exchanges of a session."),
       _hour("day_start_hour", 9, "Hour of a session's first exchange."),
       _hour("probe_hour", 18, "Hour of the probe in its session."), _stamp(True),
       Setting("weights", tuple, None, "Weights of recency, importance, relevance (none: the variant's).",
               low=0, high=1e9, length=3, optional=True),
       Setting("decay", float, None, "Recency decay per hour or rank (none: the variant's).", low=0, high=1,
               optional=True),
       Setting("recency", str, None, "Recency by hours, by rank (oldest first) or rank-newest (none: the variant's).",
               choices=("hours", "rank", "rank-newest"), optional=True))

#: policy name -> (factory, fixed keyword arguments, *declared settings); ``parse_policy`` adds the user's settings
POLICIES: dict[str, tuple] = {
    "fresh": (fresh, {}),
    "replay-full": (replay_full, {}, _stamp(False)),
    "replay-capped": (replay_capped, {}, Setting("cap_tokens", int, 50, _CAP, low=0), _stamp(False)),
    "compacted": (compacted, {}, _salience(2), _stamp(False)),
    "store": (store, {}, _stamp(False)),
    "session-buffer": (session_buffer, {}, _stamp(True)),
    "full-transcript": (transcript, {}, _stamp(True), Setting("cap_tokens", int, None, _CAP, low=0, optional=True)),
    "last-exchanges": (last_exchanges, {}, Setting("n", int, 20, "How many exchanges the window keeps.", low=0),
                       _stamp(True)),
    "fact-log": (fact_log, {}, _stamp(True)),
    "profile": (profile, {}, _stamp(True), _salience(0)),
    "bm25-transcript": (bm25_transcript, {}, _k(5), _stamp(True)),
    "bm25-fact-log": (bm25_fact_log, {}, _k(5), _stamp(True)),
    "profile+bm25": (profile_bm25, {}, _k(3), Setting("index", str, "transcript", "What BM25 indexes: the "
                     "transcript, or the exchanges the profile did not extract.", choices=("transcript", "unextracted")),
                     Setting("redact_deleted", bool, False, "Redact the statements of deleted facts."), _stamp(True)),
    "profile+bm25-redacted": (profile_bm25, {"redact_deleted": True}, _k(3), _stamp(True)),
    "profile+bm25-unindexed": (profile_bm25, {"index": "unextracted"}, _k(3), _stamp(True)),
    "ga-paper": (generative_agents, {"variant": "paper"}, *_GA),
    "ga-code": (generative_agents, {"variant": "code"}, *_GA),
    "bitemporal": (bitemporal, {}, Setting("history", bool, False, "Inject every record with its interval."),
                   _stamp(True)),
    "bitemporal-history": (bitemporal, {"history": True}, _stamp(True)),
}

#: every policy's declared settings, by name
POLICY_SETTINGS: dict[str, tuple[Setting, ...]] = {name: tuple(row[2:]) for name, row in POLICIES.items()}


#: the memory-eval-harness chapter's five conditions, in its table order
LAB_POLICIES = ("fresh", "replay-full", "replay-capped", "compacted", "store")

#: the 30-session memory bench's ten policies, in its table order
BENCH_POLICIES = ("session-buffer", "full-transcript", "last-exchanges", "fact-log", "profile", "bm25-transcript",
                  "bm25-fact-log", "profile+bm25", "profile+bm25-redacted", "profile+bm25-unindexed")

#: the policies memaudit adds beyond the two sources' own
EXTRA_POLICIES = ("ga-paper", "ga-code", "bitemporal", "bitemporal-history")

#: the names the sources' tables use
POLICY_LABELS = {
    "fresh": "fresh window", "replay-full": "replay, full", "replay-capped": "replay, capped",
    "compacted": "compacted", "store": "memory store",
    "session-buffer": "session buffer only", "full-transcript": "full transcript, every session",
    "last-exchanges": "last 20 exchanges across sessions", "fact-log": "fact log, append-only, all injected",
    "profile": "profile, upsert + delete, all injected", "bm25-transcript": "BM25 top-5 over transcript",
    "bm25-fact-log": "BM25 top-5 over fact log", "profile+bm25": "profile + BM25 top-3 over transcript",
    "profile+bm25-redacted": "profile + BM25 top-3, deletes redacted",
    "profile+bm25-unindexed": "profile + BM25 top-3, facts not indexed",
    "ga-paper": "Generative Agents, paper weights", "ga-code": "Generative Agents, released-code weights",
    "bitemporal": "bi-temporal store, current view", "bitemporal-history": "bi-temporal store, with history",
}


def _setting_text(v) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if v is None:
        return "none"
    if isinstance(v, dict):
        return "/".join(_setting_text(x) for x in v.values())
    if isinstance(v, (list, tuple)):
        return "/".join(_setting_text(x) for x in v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def policy_label(name: str, settings: dict) -> str:
    """The table label of a policy: the sources' name (:data:`POLICY_LABELS`), with any setting that
    differs from the policy's default shown (``k`` and ``n`` in the words, others in brackets).

    Examples
    --------
    >>> policy_label("bm25-transcript", parse_policy("bm25-transcript:k=3").settings)
    'BM25 top-3 over transcript'
    >>> policy_label("profile", parse_policy("profile:stamp=false").settings)
    'profile, upsert + delete, all injected (stamp=false)'
    """
    label = POLICY_LABELS.get(name, name)
    try:
        default = parse_policy(name).settings
    except HarnessError:
        return label
    diff = {k: v for k, v in settings.items() if default.get(k) != v}
    if "k" in diff and re.search(r"\btop-\d+\b", label):
        label = re.sub(r"\btop-\d+\b", f"top-{diff.pop('k')}", label)
    if "n" in diff and name == "last-exchanges":
        label = re.sub(r"\blast \d+\b", f"last {diff.pop('n')}", label)
    if diff:
        label += " (" + ", ".join(f"{k}={_setting_text(v)}" for k, v in diff.items()) + ")"
    return label


def parse_policy(spec: str) -> Policy:
    """Build a policy from ``NAME`` or ``NAME:key=value,key=value`` (lists as ``a/b/c``), each
    setting read and checked by its declaration (:data:`POLICY_SETTINGS`).

    Examples
    --------
    >>> parse_policy("last-exchanges:n=8").spec()
    {'name': 'last-exchanges', 'settings': {'n': 8, 'stamp': True}}
    >>> parse_policy("ga-code").settings["weights"]
    {'recency': 0.5, 'importance': 2.0, 'relevance': 3.0}
    >>> parse_policy("last-exchanges:n=-1")
    Traceback (most recent call last):
    ...
    memaudit.harness.errors.HarnessError: policy 'last-exchanges': setting 'n' must be an integer >= 0; got '-1'
    >>> parse_policy("bm25")
    Traceback (most recent call last):
    ...
    memaudit.harness.errors.HarnessError: unknown policy 'bm25'; valid policies: fresh, replay-full, replay-capped, compacted, store, session-buffer, full-transcript, last-exchanges, fact-log, profile, bm25-transcript, bm25-fact-log, profile+bm25, profile+bm25-redacted, profile+bm25-unindexed, ga-paper, ga-code, bitemporal, bitemporal-history
    """
    if not isinstance(spec, str):
        raise HarnessError(f"a policy must be given as a string NAME[:key=value,...]; got {spec!r}")
    name = spec.strip().partition(":")[0]
    if name not in POLICIES:
        raise HarnessError(f"unknown policy {name!r}; valid policies: {', '.join(POLICIES)}")
    factory, fixed = POLICIES[name][:2]
    owner = f"policy {name!r}"
    try:
        _, given = parse_spec(spec, lambda n: owner, POLICY_SETTINGS.get)
        for key in given:
            if key in fixed:
                raise setting_error(owner, key, "left out (fixed by the policy name)", given[key])
        given = validate_settings(owner, POLICY_SETTINGS[name], given)
    except ValueError as exc:
        raise HarnessError(str(exc)) from None
    return factory(**fixed, **given)
