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

from .errors import HarnessError
from .scenario import Exchange, Scenario

__all__ = ["Policy", "StoredItem", "ITEM_KINDS", "POLICIES", "LAB_POLICIES", "BENCH_POLICIES", "EXTRA_POLICIES", "POLICY_LABELS",
           "policy_label", "parse_policy", "render_exchange", "BM25Index"]


@dataclass(frozen=True)
class Policy:
    """A disturb part: ``name`` (a key of :data:`POLICIES`), its ``settings`` and its builder."""

    name: str
    settings: dict
    build: Callable = field(repr=False, compare=False)

    def spec(self) -> dict:
        return {"name": self.name, "settings": dict(self.settings)}


# -- rendering -------------------------------------------------------------------------

def render_exchange(e: Exchange, stamp: bool) -> str:
    """One exchange as a context line.

    Examples
    --------
    >>> e = Exchange(8, 0, "Services run on Node 20.", "Noted: Node 20.", "node", "state", 0)
    >>> render_exchange(e, True)
    '[day 8] user: Services run on Node 20. / assistant: Noted: Node 20.'
    >>> render_exchange(Exchange(1, 0, "the CI budget is 15 minutes per run"), False)
    'the CI budget is 15 minutes per run'
    """
    body = f"user: {e.user} / assistant: {e.assistant}" if e.assistant else e.user
    return f"[{e.stamp}] {body}" if stamp else body


def _statement(e: Exchange, stamp: bool) -> str:
    return f"[{e.stamp}] {e.user}" if stamp else e.user


# -- lexical retrieval -----------------------------------------------------------------

class BM25Index:
    """BM25 (bm25s, Lucene variant, k1 = 1.5, b = 0.75) over ``docs``: bm25s's tokenizer, English
    stopwords removed, no stemming.  Only documents with a score > 0 are ever returned."""

    SETTINGS = {"library": "bm25s", "method": "lucene", "k1": 1.5, "b": 0.75, "stopwords": "en", "stemmer": None}

    def __init__(self, docs: list[str]):
        import bm25s

        self._bm25s = bm25s
        self.n_docs = len(docs)
        self._retriever = None
        if docs:
            tokens = bm25s.tokenize(docs, stopwords="en", stemmer=None, show_progress=False)
            if tokens.vocab:
                self._retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
                self._retriever.index(tokens, show_progress=False)

    def scores(self, query: str):
        """BM25 score of every document for ``query`` (numpy array, shape (n_docs,))."""
        import numpy as np

        if self._retriever is None:
            return np.zeros(self.n_docs)
        q = self._bm25s.tokenize([query], stopwords="en", stemmer=None, return_ids=False, show_progress=False)[0]
        q = [t for t in q if t in self._retriever.vocab_dict]
        if not q:
            return np.zeros(self.n_docs)
        return np.asarray(self._retriever.get_scores(q), dtype=float)

    def top(self, query: str, k: int) -> list[int]:
        """Indices of the ``k`` best documents with a score > 0, best first, ties to the earliest."""
        import numpy as np

        s = self.scores(query)
        order = np.argsort(-s, kind="stable")
        return [int(i) for i in order[:k] if s[i] > 0]


# -- the memories ----------------------------------------------------------------------

#: what a stored line is: a transcript ``turn`` (one exchange), a ``fact_line`` (a fact-bearing
#: user statement, delete requests too), a ``profile_entry`` (a fact key's latest statement), a
#: bi-temporal ``record`` (a statement with its validity interval) or a ``summary``
ITEM_KINDS = ("turn", "fact_line", "profile_entry", "record", "summary")


@dataclass(frozen=True)
class StoredItem:
    """One line a memory holds: its ``kind`` (:data:`ITEM_KINDS`), the stream ``position`` of the
    exchange it came from (an index into ``scenario.exchanges``) and its ``text`` as the policy
    renders it.  ``memaudit.diagnose`` maps each item to a package candidate; ``ref`` names that
    candidate directly when the item is one (a store written from a package, e.g. OPT's)."""

    kind: str
    position: int
    text: str
    ref: str | None = None


class _Memory:
    """Base: a policy's memory over one scenario; caches per-session work.

    ``items(session)`` is every item the policy keeps at the end of ``session`` (its store), in
    the policy's own order; ``inject_items(session, question)`` the items put in front of the
    reader.  ``stored`` and ``inject`` are their texts.
    """

    def __init__(self, scenario: Scenario, count):
        self.scenario = scenario
        self.count = count
        self._cache: dict = {}

    def _cached(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    def _until(self, session) -> list[tuple[int, Exchange]]:
        """(stream position, exchange) of every exchange of sessions 1..``session``."""
        return [(n, e) for n, e in enumerate(self.scenario.exchanges) if e.session <= session]

    def items(self, session: int) -> list[StoredItem]:  # pragma: no cover - abstract
        raise NotImplementedError

    def inject_items(self, session: int, question: str) -> list[StoredItem]:  # pragma: no cover - abstract
        raise NotImplementedError

    def inject(self, session: int, question: str) -> list[str]:
        return [it.text for it in self.inject_items(session, question)]

    def stored(self, session: int) -> list[str]:
        return [it.text for it in self.items(session)]


def _turn(n: int, e: Exchange, stamp: bool) -> StoredItem:
    return StoredItem("turn", n, render_exchange(e, stamp))


def _fact_line(n: int, e: Exchange, stamp: bool, kind: str = "fact_line") -> StoredItem:
    return StoredItem(kind, n, _statement(e, stamp))


class _Fresh(_Memory):
    def inject_items(self, session, question):
        return []

    def items(self, session):
        return []


class _SessionBuffer(_Memory):
    def __init__(self, scenario, count, stamp):
        super().__init__(scenario, count)
        self.stamp = stamp

    def inject_items(self, session, question):
        return self.items(session)

    def items(self, session):
        return self._cached(session, lambda: [_turn(n, e, self.stamp) for n, e in enumerate(self.scenario.exchanges)
                                              if e.session == session])


class _Transcript(_Memory):
    def __init__(self, scenario, count, stamp, cap_tokens=None, last_n=None):
        super().__init__(scenario, count)
        self.stamp, self.cap_tokens, self.last_n = stamp, cap_tokens, last_n

    def items(self, session):
        return self._cached(("all", session), lambda: [_turn(n, e, self.stamp) for n, e in self._until(session)])

    def _window(self, session):
        exchanges = self._until(session)
        if self.last_n is not None:
            exchanges = exchanges[len(exchanges) - self.last_n:] if self.last_n else []
        if self.cap_tokens is not None:
            # evict whole sessions, oldest first, until the replay fits the cap
            while exchanges and self.count("\n".join(render_exchange(e, self.stamp) for _, e in exchanges)) \
                    > self.cap_tokens:
                first = exchanges[0][1].session
                exchanges = [(n, e) for n, e in exchanges if e.session != first]
        return [_turn(n, e, self.stamp) for n, e in exchanges]

    def inject_items(self, session, question):
        return self._cached(("window", session), lambda: self._window(session))


class _FactLog(_Memory):
    def __init__(self, scenario, count, stamp):
        super().__init__(scenario, count)
        self.stamp = stamp

    def items(self, session):
        return self._cached(session, lambda: [_fact_line(n, e, self.stamp) for n, e in self._until(session)
                                              if e.fact is not None])

    def inject_items(self, session, question):
        return self.items(session)


def _profile_items(scenario: Scenario, session: int, stamp: bool, min_salience: int) -> list[StoredItem]:
    """One entry per fact key: the latest statement, in the order of the latest statements; a
    delete request removes the key.  Facts below ``min_salience`` are not kept."""
    by_key: dict[str, StoredItem] = {}
    for n, e in enumerate(scenario.exchanges):
        if e.session > session:
            break
        if e.fact is None or scenario.fact(e.fact).salience < min_salience:
            continue
        by_key.pop(e.fact, None)
        if e.event == "state":
            by_key[e.fact] = _fact_line(n, e, stamp, "profile_entry")
    return list(by_key.values())


class _Profile(_Memory):
    def __init__(self, scenario, count, stamp, min_salience):
        super().__init__(scenario, count)
        self.stamp, self.min_salience = stamp, min_salience

    def items(self, session):
        return self._cached(session, lambda: _profile_items(self.scenario, session, self.stamp, self.min_salience))

    def inject_items(self, session, question):
        return self.items(session)


class _BM25(_Memory):
    """Top-k retrieval over the transcript (one chunk per exchange) or the fact log, optionally
    after a profile (``profile=True``); ``index`` picks the retrievable exchanges."""

    def __init__(self, scenario, count, source, k, stamp, profile=False, redact_deleted=False):
        super().__init__(scenario, count)
        self.source, self.k, self.stamp = source, k, stamp
        self.profile, self.redact_deleted = profile, redact_deleted

    def _docs(self, session):
        def build():
            sc = self.scenario
            out = []
            for n, e in self._until(session):
                if self.source == "fact-log":
                    if e.fact is not None:
                        out.append(_fact_line(n, e, self.stamp))
                    continue
                if self.source == "unextracted" and e.fact is not None:
                    continue
                if (self.redact_deleted and e.fact is not None and e.event == "state"
                        and sc.fact(e.fact).deleted_by(session)):
                    continue
                out.append(_turn(n, e, self.stamp))
            return out, BM25Index([it.text for it in out])
        return self._cached(("docs", session), build)

    def _profile(self, session):
        return _profile_items(self.scenario, session, self.stamp, 0) if self.profile else []

    def items(self, session):
        return self._profile(session) + self._docs(session)[0]

    def inject_items(self, session, question):
        docs, index = self._docs(session)
        return self._profile(session) + [docs[i] for i in index.top(question, self.k)]


class _GenerativeAgents(_Memory):
    """Park et al.'s retrieval over the transcript: score = w_rec * recency + w_imp * importance
    + w_rel * relevance, each min-max normalised to [0, 1] over the memories, top k."""

    def __init__(self, scenario, count, weights, decay, recency, k, fact_importance, other_importance,
                 hours_per_exchange, day_start_hour, probe_hour, stamp):
        super().__init__(scenario, count)
        self.weights, self.decay, self.recency, self.k = weights, decay, recency, k
        self.fact_importance, self.other_importance = fact_importance, other_importance
        self.hours_per_exchange, self.day_start_hour, self.probe_hour = hours_per_exchange, day_start_hour, probe_hour
        self.stamp = stamp

    def _docs(self, session):
        def build():
            until = self._until(session)
            ex = [e for _, e in until]
            docs = [_turn(n, e, self.stamp) for n, e in until]
            return ex, docs, BM25Index([it.text for it in docs])
        return self._cached(("docs", session), build)

    def items(self, session):
        return self._docs(session)[1]

    @staticmethod
    def _minmax(x):
        lo, hi = float(x.min()), float(x.max())
        return (x - lo) / (hi - lo) if hi > lo else x * 0.0

    def inject_items(self, session, question):
        import numpy as np

        ex, docs, index = self._docs(session)
        if not ex:
            return []
        if self.recency == "hours":
            now = 24.0 * (session - 1) + self.probe_hour
            hours = np.array([max(0.0, now - (24.0 * (e.session - 1) + self.day_start_hour
                                              + self.hours_per_exchange * e.index)) for e in ex])
            rec = self.decay ** hours
        elif self.recency == "rank":  # as the released code does: rank 1 = the OLDEST (least recently
            ranks = np.arange(1, len(ex) + 1, dtype=float)  # accessed) memory, so it gets the largest term
            rec = self.decay ** ranks
        else:  # "rank-newest": rank 1 = the newest memory (what the paper's recency intends)
            ranks = np.arange(len(ex), 0, -1, dtype=float)
            rec = self.decay ** ranks
        imp = np.array([self.fact_importance if e.fact is not None else self.other_importance for e in ex], float)
        rel = index.scores(question)
        w_rec, w_imp, w_rel = self.weights
        score = w_rec * self._minmax(rec) + w_imp * self._minmax(imp) + w_rel * self._minmax(rel)
        order = np.argsort(-score, kind="stable")[: self.k]
        return [docs[int(i)] for i in order]


class _BiTemporal(_Memory):
    """Each stated value is a record valid from its session until the next version's session;
    superseded records are closed, not deleted.  A delete request erases the fact's records."""

    def __init__(self, scenario, count, history, stamp):
        super().__init__(scenario, count)
        self.history, self.stamp = history, stamp

    def _records(self, session):
        def build():
            recs = []  # (stream position of the statement, text, valid_from, valid_to)
            pos = self.scenario.statement_positions()
            for f in self.scenario.facts:
                if f.deleted_by(session):
                    continue
                live = f.live_versions(session)
                for j, v in enumerate(live):
                    until = live[j + 1].session if j + 1 < len(live) else None
                    recs.append((pos[(f.key, j)], v.text, v.session, until))
            recs.sort()
            return recs
        return self._cached(session, build)

    def _line(self, text, start, until):
        if not self.stamp:
            return text
        if until is None:
            return f"[valid from day {start}] {text}"
        return f"[valid day {start} to day {until}] {text}"

    def items(self, session):
        return [StoredItem("record", n, self._line(t, a, b)) for n, t, a, b in self._records(session)]

    def inject_items(self, session, question):
        return [StoredItem("record", n, self._line(t, a, b)) for n, t, a, b in self._records(session)
                if self.history or b is None]


# -- factories (keyword arguments = settings) --------------------------------------------

def _check_int(name, value, lo, policy):
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise HarnessError(f"policy '{policy}': setting {name} must be an integer >= {lo}; got {value!r}")
    return value


def _check_bool(name, value, policy):
    if not isinstance(value, bool):
        raise HarnessError(f"policy '{policy}': setting {name} must be true or false; got {value!r}")
    return value


def _check_num(name, value, policy, lo=None, hi=None):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or (lo is not None and value < lo) or (hi is not None and value > hi):
        rng = f" in [{lo}, {hi}]" if lo is not None and hi is not None else ""
        raise HarnessError(f"policy '{policy}': setting {name} must be a finite number{rng}; got {value!r}")
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
        raise HarnessError(f"policy 'bm25': setting source must be 'transcript' or 'fact-log'; got {source!r}")
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
        raise HarnessError(f"policy 'profile+bm25': setting index must be 'transcript' or 'unextracted'; "
                           f"got {index!r}")
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
        raise HarnessError(f"policy 'ga': setting variant must be 'paper' or 'code'; got {variant!r}")
    w0, d0, r0 = presets[variant]
    weights = w0 if weights is None else weights
    if not isinstance(weights, (list, tuple)) or len(weights) != 3:
        raise HarnessError(f"policy '{name}': setting weights must be three numbers (recency, importance, "
                           f"relevance); got {weights!r}")
    weights = tuple(_check_num("weights", w, name, 0, 1e9) for w in weights)
    decay = _check_num("decay", d0 if decay is None else decay, name, 0, 1)
    recency = r0 if recency is None else recency
    if recency not in ("hours", "rank", "rank-newest"):
        raise HarnessError(f"policy '{name}': setting recency must be 'hours', 'rank' or 'rank-newest'; "
                           f"got {recency!r}")
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


#: policy name -> (factory, fixed keyword arguments); ``parse_policy`` adds the user's settings
POLICIES: dict[str, tuple[Callable[..., Policy], dict]] = {
    "fresh": (fresh, {}),
    "replay-full": (replay_full, {}),
    "replay-capped": (replay_capped, {}),
    "compacted": (compacted, {}),
    "store": (store, {}),
    "session-buffer": (session_buffer, {}),
    "full-transcript": (transcript, {}),
    "last-exchanges": (last_exchanges, {}),
    "fact-log": (fact_log, {}),
    "profile": (profile, {}),
    "bm25-transcript": (bm25_transcript, {}),
    "bm25-fact-log": (bm25_fact_log, {}),
    "profile+bm25": (profile_bm25, {}),
    "profile+bm25-redacted": (profile_bm25, {"redact_deleted": True}),
    "profile+bm25-unindexed": (profile_bm25, {"index": "unextracted"}),
    "ga-paper": (generative_agents, {"variant": "paper"}),
    "ga-code": (generative_agents, {"variant": "code"}),
    "bitemporal": (bitemporal, {}),
    "bitemporal-history": (bitemporal, {"history": True}),
}

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


def _parse_value(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    if "/" in text:
        return [_parse_value(t) for t in text.split("/")]
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_policy(spec: str) -> Policy:
    """Build a policy from ``NAME`` or ``NAME:key=value,key=value`` (lists as ``a/b/c``).

    Examples
    --------
    >>> parse_policy("last-exchanges:n=8").spec()
    {'name': 'last-exchanges', 'settings': {'n': 8, 'stamp': True}}
    >>> parse_policy("ga-code").settings["weights"]
    {'recency': 0.5, 'importance': 2.0, 'relevance': 3.0}
    >>> parse_policy("bm25")
    Traceback (most recent call last):
    ...
    memaudit.harness.errors.HarnessError: unknown policy 'bm25'; valid policies: fresh, replay-full, replay-capped, compacted, store, session-buffer, full-transcript, last-exchanges, fact-log, profile, bm25-transcript, bm25-fact-log, profile+bm25, profile+bm25-redacted, profile+bm25-unindexed, ga-paper, ga-code, bitemporal, bitemporal-history
    """
    if not isinstance(spec, str):
        raise HarnessError(f"a policy must be given as a string NAME[:key=value,...]; got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    if name not in POLICIES:
        raise HarnessError(f"unknown policy {name!r}; valid policies: {', '.join(POLICIES)}")
    factory, fixed = POLICIES[name]
    kwargs = dict(fixed)
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise HarnessError(f"policy '{name}': setting {item!r} must be written key=value")
        if key in fixed or key == "name":
            raise HarnessError(f"policy '{name}': setting {key!r} is fixed by the policy name")
        if key in kwargs and key not in fixed:
            raise HarnessError(f"policy '{name}': setting {key!r} is given twice")
        kwargs[key] = _parse_value(value)
    try:
        return factory(**kwargs)
    except TypeError as exc:
        import inspect

        params = [p for p in inspect.signature(factory).parameters if p not in fixed and p != "name"]
        raise HarnessError(f"policy '{name}': bad setting ({exc}); valid settings: "
                           f"{', '.join(params) or '(none)'}") from None
