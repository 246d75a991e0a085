"""The memories the harness policies build: what a policy stores and what it injects before a probe.

Each memory implements ``items(session)`` (every line it keeps, as :class:`StoredItem`) and
``inject_items(session, question)`` (the lines put in front of the reader); :mod:`.policies`
names and configures them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .scenario import Exchange, Scenario

__all__ = ["StoredItem", "ITEM_KINDS", "render_exchange", "BM25Index"]


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
