"""The scenario model: typed facts with versions and delete requests, exchanges, probes and notes, and
their written form (:func:`scenario_to_dict`, what :meth:`Scenario.sha256` hashes).

The file format and its checks are described in :mod:`memaudit.harness.scenario`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["SCENARIO_FORMAT", "SCENARIO_FORMATS", "FACT_TYPES", "NOTE_KINDS", "MAX_SESSIONS", "Version",
           "DeleteRequest", "Fact", "Exchange", "Probe", "Note", "Scenario", "scenario_to_dict", "format_date"]

#: the newest ``format`` value of a scenario file (what a scenario using a version-2 feature is written as)
SCENARIO_FORMAT = "memaudit-scenario/2"

#: every ``format`` value a scenario file may have (all are read)
SCENARIO_FORMATS = ("memaudit-scenario/1", "memaudit-scenario/2")

#: the kinds of model-written notes a version-2 scenario may carry
NOTE_KINDS = ("observation", "summary")

#: the fact types of the memory-eval-harness chapter; a scenario may use only these
FACT_TYPES = ("identity", "preference", "decision", "detail", "procedure")

#: the largest ``n_sessions`` a scenario may declare (every session is walked when the stream is built)
MAX_SESSIONS = 100_000


@dataclass(frozen=True)
class Version:
    """One stated value of a fact: said by the user in ``session`` with the words ``text``.

    ``exchange`` (version 2): the id of a filler exchange of that session that states the value;
    ``text`` is then that exchange's user text and need not contain the value literally.
    """

    session: int
    value: str
    text: str
    position: int | None = field(default=None, compare=False)
    exchange: str | None = None


@dataclass(frozen=True)
class DeleteRequest:
    """The user asks, in ``session``, to forget a fact (``text`` is the request, without the value)."""

    session: int
    text: str
    position: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Fact:
    """A typed fact: its versions in time order and an optional delete request after the last one."""

    key: str
    type: str
    salience: int
    versions: tuple[Version, ...]
    delete: DeleteRequest | None = None

    def live_versions(self, session: int) -> list[Version]:
        """The versions stated by the end of ``session``, oldest first."""
        return [v for v in self.versions if v.session <= session]

    def deleted_by(self, session: int) -> bool:
        """True when the delete request was made by the end of ``session``."""
        return self.delete is not None and self.delete.session <= session

    @property
    def first_session(self) -> int:
        return self.versions[0].session


@dataclass(frozen=True)
class Exchange:
    """One user message and the assistant's reply.

    ``fact`` names the fact the user message states (``event`` ``"state"``) or asks to forget
    (``event`` ``"delete"``); both are None for filler.  ``index`` is the position in its session.
    """

    session: int
    index: int
    user: str
    assistant: str = ""
    fact: str | None = None
    event: str | None = None
    version: int | None = None
    id: str | None = None
    date: str | None = None

    @property
    def stamp(self) -> str:
        """What a stamped context line starts with: the session's calendar date (version 2), else ``day N``.

        Examples
        --------
        >>> Exchange(8, 0, "hi").stamp, Exchange(1, 0, "hi", date="2023-05-08T13:56:00").stamp
        ('day 8', '8 May 2023, 13:56')
        """
        return f"day {self.session}" if self.date is None else format_date(self.date)


@dataclass(frozen=True)
class Probe:
    """A question asked at the end of ``session`` about ``fact`` (None: a fact never planted)."""

    id: str
    session: int
    fact: str | None
    literal: str
    paraphrase: str | None = None
    evidence: tuple[str, ...] = ()
    category: int | str | None = None
    abstain: bool = False

    def question(self, form: str) -> str | None:
        return self.literal if form == "literal" else self.paraphrase


@dataclass(frozen=True)
class Note:
    """A model-written note of a session (version 2): an observation or a summary, with the ids of
    the exchanges it was drawn from (``covers``)."""

    id: str
    session: int
    kind: str
    text: str
    covers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    """What is planted: facts, the exchange stream (stream order) and the probes."""

    id: str
    n_sessions: int
    facts: tuple[Fact, ...]
    exchanges: tuple[Exchange, ...]
    probes: tuple[Probe, ...]
    meta: dict = field(default_factory=dict, compare=False)
    replies: bool = True
    dates: tuple[tuple[int, str], ...] = ()
    notes: tuple[Note, ...] = ()

    @property
    def format(self) -> str:
        """``memaudit-scenario/2`` when the scenario uses a version-2 feature, else ``memaudit-scenario/1``."""
        v2 = (self.dates or self.notes or any(e.id is not None for e in self.exchanges)
              or any(v.exchange is not None for f in self.facts for v in f.versions)
              or any(p.evidence or p.category is not None or p.abstain for p in self.probes))
        return SCENARIO_FORMATS[1] if v2 else SCENARIO_FORMATS[0]

    def exchange(self, exchange_id: str) -> Exchange:
        """The exchange with id ``exchange_id`` (version 2)."""
        cached = self.__dict__.get("_by_id")
        if cached is None:
            cached = {e.id: e for e in self.exchanges if e.id is not None}
            object.__setattr__(self, "_by_id", cached)
        return cached[exchange_id]

    def fact(self, key: str) -> Fact:
        return self._facts_by_key[key]

    @property
    def _facts_by_key(self) -> dict[str, Fact]:
        cached = self.__dict__.get("_by_key")
        if cached is None:
            cached = {f.key: f for f in self.facts}
            object.__setattr__(self, "_by_key", cached)
        return cached

    def stamp(self, session: int) -> str:
        """The stamp of a line of ``session``: its calendar date (version 2), else ``day N``."""
        dates = self.__dict__.get("_dates")
        if dates is None:
            dates = dict(self.dates)
            object.__setattr__(self, "_dates", dates)
        return format_date(dates[session]) if session in dates else f"day {session}"

    def notes_covering(self, exchange_id: str) -> list[Note]:
        """The notes drawn from exchange ``exchange_id`` (version 2), in file order."""
        cached = self.__dict__.get("_covering")
        if cached is None:
            cached = {}
            for n in self.notes:
                for x in n.covers:
                    cached.setdefault(x, []).append(n)
            object.__setattr__(self, "_covering", cached)
        return cached.get(exchange_id, [])

    def statement_positions(self) -> dict[tuple[str, int], int]:
        """``{(fact key, version index): position in the exchange stream}`` of every stated version
        (a version stated by reference sits at its exchange)."""
        pos = {(e.fact, e.version): n for n, e in enumerate(self.exchanges) if e.event == "state"}
        at = {e.id: n for n, e in enumerate(self.exchanges) if e.id is not None}
        pos.update({(f.key, j): at[v.exchange] for f in self.facts for j, v in enumerate(f.versions)
                    if v.exchange is not None})
        return pos

    def exchanges_until(self, session: int) -> list[Exchange]:
        """Every exchange of sessions 1..``session``, in stream order."""
        return [e for e in self.exchanges if e.session <= session]

    def sha256(self) -> str:
        """sha256 of the canonical JSON form (what a run records to be replayable)."""
        data = json.dumps(scenario_to_dict(self), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(data.encode("utf-8")).hexdigest()


# -- dates and the written form -------------------------------------------------------

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def format_date(iso: str) -> str:
    """A session date for a context line: ``2023-05-08`` -> ``8 May 2023``, with ``, 13:56`` when a time is given.

    Examples
    --------
    >>> format_date("2023-05-08"), format_date("2023-05-08T13:56:00")
    ('8 May 2023', '8 May 2023, 13:56')
    """
    d = datetime.fromisoformat(iso)
    day = f"{d.day} {_MONTHS[d.month - 1]} {d.year}"
    return day if len(iso) <= 10 else f"{day}, {d:%H:%M}"


def scenario_to_dict(scenario: Scenario) -> dict:
    """The scenario as plain data in the file format (filler exchanges grouped by session)."""
    facts = []
    for f in scenario.facts:
        d = {"key": f.key, "type": f.type, "salience": f.salience,
             "versions": [{"session": v.session, "value": v.value, "text": v.text} if v.exchange is None else
                          {"session": v.session, "value": v.value, "exchange": v.exchange} for v in f.versions]}
        if f.delete is not None:
            d["delete"] = {"session": f.delete.session, "text": f.delete.text}
        facts.append(d)
    # record where each statement landed, so the dict rebuilds the same stream
    pos = {(e.fact, e.event, e.version): e.index for e in scenario.exchanges if e.fact is not None}
    for f, d in zip(scenario.facts, facts):
        for j, v in enumerate(d["versions"]):
            if "exchange" not in v:
                v["position"] = pos[(f.key, "state", j)]
        if "delete" in d:
            d["delete"]["position"] = pos[(f.key, "delete", None)]
    dates = dict(scenario.dates)
    by_session: dict[int, list[dict]] = {s: [] for s in dates}
    for e in scenario.exchanges:  # stream order is session order
        if e.fact is None:
            row = {"user": e.user, "assistant": e.assistant}
            if e.id is not None:
                row["id"] = e.id
            by_session.setdefault(e.session, []).append(row)
    sessions = []
    for s in sorted(by_session):
        entry = {"session": s}
        if s in dates:
            entry["date"] = dates[s]
        entry["exchanges"] = by_session[s]
        sessions.append(entry)
    probes = []
    for p in scenario.probes:
        d = {"id": p.id, "session": p.session, "fact": p.fact, "literal": p.literal}
        if p.paraphrase is not None:
            d["paraphrase"] = p.paraphrase
        if p.evidence:
            d["evidence"] = list(p.evidence)
        if p.category is not None:
            d["category"] = p.category
        if p.abstain:
            d["abstain"] = True
        probes.append(d)
    out = {"format": scenario.format, "id": scenario.id, "n_sessions": scenario.n_sessions,
           "replies": scenario.replies, "facts": facts,
           "sessions": sessions, "probes": probes, "meta": dict(scenario.meta)}
    if scenario.notes:
        out["notes"] = [{"id": n.id, "session": n.session, "kind": n.kind, "text": n.text, "covers": list(n.covers)}
                        for n in scenario.notes]
    return out
