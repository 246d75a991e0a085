"""The hidden event graph behind every generated package, and its rendering to a MEMAUDIT package.

An :class:`EventGraph` holds *slots* (an entity's attribute, a detail, a procedure) and a stream of
*events* in time order.  A value slot has a timeline: ``set`` (first value), ``update`` (a new
value replaces the old one), ``restate`` (the current value said again), ``delete`` (the user
asks to forget it).  ``detail`` and ``procedure`` events state a one-off piece of knowledge;
``chatter`` events are distractors that say nothing a query needs.  Each event becomes one
experience; :func:`render_package` derives its candidates, the evidence units and their
coverage from the graph, and turns the family's query specs into queries and unit weights.

Candidates of one experience (the texts are what would be stored; costs come from the
package's cost model applied to them):

=================  ==================================================  ===========================
kind               text                                                covers
=================  ==================================================  ===========================
raw                ``[day d] <the statement>``                         everything the statement
                                                                       says (below)
fact               ``<name>: <value>``                                 the value it states
update             ``<name>: <new> (was <old>)``                       new value + invalidation
tombstone          ``<name>: <old> no longer valid``                   only the invalidation
compound_update    ``[day d] <name>: <new>; <old> held from day t``    new value + invalidation +
                   ``to day d``                                        the old value's interval
=================  ==================================================  ===========================

Units (``kind``): ``current`` (the value at the end of the stream: covered by every candidate
that asserts that value), ``validity`` (``<old>`` is no longer the value, or the value was
deleted on request), ``interval`` (value v_i held from day t_i to day t_{i+1}: half from a dated
statement of v_i, half from a dated statement that replaced it, whole from the compound_update
that replaced it), ``detail`` and ``procedure``.  Only units that some query requires are kept;
a unit's weight is the total weight of the queries that require it.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field

from ..costs import cost_of
from ..errors import MemauditError
from ..package import Package, package_from_dict

__all__ = ["GeneratorError", "Slot", "Event", "QuerySpec", "Timeline", "EventGraph", "render_package",
           "default_minutes", "package_id_or", "OPS", "VALUE_OPS", "current_unit", "invalid_unit", "interval_unit", "deleted_unit",
           "detail_unit", "procedure_unit"]

#: every event operation
OPS = ("set", "update", "restate", "delete", "detail", "procedure", "chatter")

#: operations on a value slot's timeline
VALUE_OPS = ("set", "update", "restate", "delete")


class GeneratorError(MemauditError, ValueError):
    """Bad generator parameters or an inconsistent event graph; the message names the parameter."""


@dataclass(frozen=True)
class Slot:
    """Something the user states: an entity's attribute (``value``), a ``detail`` or a ``procedure``.

    Attributes
    ----------
    key : str
        Prefix of the slot's unit ids, e.g. ``billing-api.region``.
    name : str
        Short name used in stored texts (``billing-api region``).
    kind : str
        ``value``, ``detail`` or ``procedure``.
    question : str
        The query asking for the slot's current value (or the detail / procedure).
    """

    key: str
    name: str
    kind: str
    question: str


@dataclass(frozen=True)
class Event:
    """One item of the stream: ``op`` on ``slot`` with ``value`` on ``day``; ``text`` is what was said."""

    day: int
    op: str
    text: str
    slot: str | None = None
    value: str | None = None


@dataclass(frozen=True)
class QuerySpec:
    """A query at the end of the stream; ``requires`` holds unit ids (see :class:`Timeline`)."""

    text: str
    answer: str
    requires: tuple[str, ...]
    weight: float = 1.0


@dataclass
class Timeline:
    """The values a value slot took: ``values[i] = (value, day, event index)`` in stream order."""

    values: list[tuple[str, int, int]] = field(default_factory=list)
    restates: list[tuple[str, int, int]] = field(default_factory=list)
    deleted: tuple[int, int] | None = None  # (day, event index)

    @property
    def final(self) -> str | None:
        """The value at the end of the stream (None when deleted or never set)."""
        if self.deleted is not None or not self.values:
            return None
        return self.values[-1][0]

    def value_on(self, day: int) -> int | None:
        """Index i of the value held on ``day`` (the last value set on or before it), or None."""
        held = None
        for i, (_, d, _) in enumerate(self.values):
            if d <= day:
                held = i
        return held


def package_id_or(package_id: str | None, default: str) -> str:
    """``package_id``, or ``default`` when it is None; an empty (or blank) id is refused.

    >>> package_id_or(None, "small-s1"), package_id_or("mine", "small-s1")
    ('small-s1', 'mine')
    >>> package_id_or(" ", "small-s1")
    Traceback (most recent call last):
    ...
    memaudit.generators.events.GeneratorError: package id must not be empty; got ' ' (leave --id out for the default)
    """
    if package_id is None:
        return default
    if not isinstance(package_id, str) or not package_id.strip():
        raise GeneratorError(f"package id must not be empty; got {package_id!r} (leave --id out for the default)")
    return package_id


def invalid_unit(key: str, i: int) -> str:
    """Id of the validity unit "value i of slot ``key`` is no longer valid"."""
    return f"{key}.v{i}.invalid"


def interval_unit(key: str, i: int) -> str:
    """Id of the interval unit "slot ``key`` held value i from its day to the day it was replaced"."""
    return f"{key}.v{i}.interval"


def current_unit(key: str) -> str:
    return f"{key}.current"


def deleted_unit(key: str) -> str:
    return f"{key}.deleted"


def detail_unit(key: str) -> str:
    return f"{key}.detail"


def procedure_unit(key: str) -> str:
    return f"{key}.procedure"


class EventGraph:
    """Slots plus the event stream; checks the timelines as events are added.

    Examples
    --------
    >>> g = EventGraph()
    >>> g.add_slot(Slot("api.region", "api region", "value", "Where does api run?"))
    >>> g.add(Event(1, "set", "api runs in eu-west-2.", "api.region", "eu-west-2"))
    >>> g.add(Event(3, "update", "api moved to eu-central-1.", "api.region", "eu-central-1"))
    >>> g.timelines["api.region"].final, g.timelines["api.region"].value_on(2)
    ('eu-central-1', 0)
    """

    def __init__(self):
        self.slots: dict[str, Slot] = {}
        self.events: list[Event] = []
        self.timelines: dict[str, Timeline] = {}

    def add_slot(self, slot: Slot) -> None:
        if slot.key in self.slots:
            raise GeneratorError(f"slot {slot.key!r} is defined twice")
        if slot.kind not in ("value", "detail", "procedure"):
            raise GeneratorError(f"slot {slot.key!r}: kind must be value, detail or procedure; got {slot.kind!r}")
        self.slots[slot.key] = slot
        self.timelines[slot.key] = Timeline()

    def add(self, event: Event) -> None:
        if event.op not in OPS:
            raise GeneratorError(f"event op must be one of {', '.join(OPS)}; got {event.op!r}")
        if self.events and event.day < self.events[-1].day:
            raise GeneratorError(f"events must come in day order; day {event.day} after day {self.events[-1].day}")
        index = len(self.events)
        if event.op != "chatter":
            if event.slot not in self.slots:
                raise GeneratorError(f"event {index} ({event.op}) names an unknown slot {event.slot!r}")
            slot, tl = self.slots[event.slot], self.timelines[event.slot]
            want = {"detail": "detail", "procedure": "procedure"}.get(event.op, "value")
            if slot.kind != want:
                raise GeneratorError(f"event {index}: op {event.op!r} needs a {want} slot; {slot.key!r} is a {slot.kind}")
            if tl.deleted is not None:
                raise GeneratorError(f"event {index}: slot {slot.key!r} was deleted on day {tl.deleted[0]}")
            if event.op in ("set", "detail", "procedure"):
                if tl.values:
                    raise GeneratorError(f"event {index}: slot {slot.key!r} is already set; use update")
                tl.values.append((event.value, event.day, index))
            elif event.op == "update":
                if not tl.values:
                    raise GeneratorError(f"event {index}: update of slot {slot.key!r} before any set")
                if event.value == tl.values[-1][0]:
                    raise GeneratorError(f"event {index}: update of {slot.key!r} to its current value "
                                         f"{event.value!r}; use restate")
                tl.values.append((event.value, event.day, index))
            elif event.op == "restate":
                if not tl.values or tl.values[-1][0] != event.value:
                    raise GeneratorError(f"event {index}: restate of {slot.key!r} must repeat its current value")
                tl.restates.append((event.value, event.day, index))
            elif event.op == "delete":
                if not tl.values:
                    raise GeneratorError(f"event {index}: delete of slot {slot.key!r} before any set")
                tl.deleted = (event.day, index)
        self.events.append(event)


# -- rendering ---------------------------------------------------------------------

def _coverage_of_events(graph: EventGraph) -> tuple[list[dict[str, dict[str, float]]], dict[str, dict]]:
    """Per event: {candidate kind: {unit id: coverage}}, and every potential unit: id -> {kind, text, aliases}."""
    n = len(graph.events)
    cov: list[dict[str, dict[str, float]]] = [{} for _ in range(n)]
    units: dict[str, dict] = {}

    def add(index, kind, unit, a):
        row = cov[index].setdefault(kind, {})
        row[unit] = max(row.get(unit, 0.0), a)

    for key, tl in graph.timelines.items():
        slot = graph.slots[key]
        if not tl.values:
            continue
        if slot.kind in ("detail", "procedure"):
            value, day, index = tl.values[0]
            uid = f"{key}.{slot.kind}"
            units[uid] = {"kind": slot.kind, "text": f"{slot.name}: {value}", "aliases": [value]}
            add(index, "raw", uid, 1.0)
            add(index, "fact", uid, 1.0)
            continue
        if tl.deleted is not None:
            # a deleted slot keeps no unit that holds its values: only the deletion itself
            day, index = tl.deleted
            uid = deleted_unit(key)
            units[uid] = {"kind": "validity", "aliases": [],
                          "text": f"the {slot.name} was deleted at the user's request on day {day}: "
                                  "answer that it is not kept"}
            add(index, "raw", uid, 1.0)
            add(index, "tombstone", uid, 1.0)
            continue
        final = tl.final
        cur = current_unit(key)
        units[cur] = {"kind": "current", "text": f"the {slot.name} is {final}", "aliases": [final]}
        stated = list(tl.values) + list(tl.restates)
        for value, _, index in stated:
            if value == final:
                is_transition = graph.events[index].op == "update"
                kinds = ("raw", "fact", "update", "compound_update") if is_transition else ("raw", "fact")
                for k in kinds:
                    add(index, k, cur, 1.0)
        for i, (value, day, index) in enumerate(tl.values[:-1]):
            new_value, end_day, end_index = tl.values[i + 1]
            inv = invalid_unit(key, i)
            units[inv] = {"kind": "validity", "aliases": [value],
                          "text": f"{value} is no longer the {slot.name} (replaced by {new_value} on day {end_day})"}
            for k in ("raw", "update", "tombstone", "compound_update"):
                add(end_index, k, inv, 1.0)
            itv = interval_unit(key, i)
            units[itv] = {"kind": "interval", "aliases": [value],
                          "text": f"the {slot.name} was {value} from day {day} to day {end_day}"}
            # dated statements: raw spans and compound updates carry their day
            add(index, "raw", itv, 0.5)
            if graph.events[index].op == "update":
                add(index, "compound_update", itv, 0.5)
            add(end_index, "raw", itv, 0.5)
            add(end_index, "compound_update", itv, 1.0)
    return cov, units


def _candidate_texts(graph: EventGraph, index: int) -> dict[str, str]:
    """The stored text of every candidate of event ``index``, by kind (in report order)."""
    e = graph.events[index]
    texts = {"raw": f"[day {e.day}] {e.text}"}
    if e.op == "chatter":
        return texts
    slot = graph.slots[e.slot]
    tl = graph.timelines[e.slot]
    if e.op in ("set", "restate", "detail", "procedure"):
        texts["fact"] = f"{slot.name}: {e.value}"
    elif e.op == "update":
        pos = next(i for i, (_, _, ix) in enumerate(tl.values) if ix == index)
        old, old_day, _ = tl.values[pos - 1]
        texts["fact"] = f"{slot.name}: {e.value}"
        texts["update"] = f"{slot.name}: {e.value} (was {old})"
        texts["tombstone"] = f"{slot.name}: {old} no longer valid"
        texts["compound_update"] = f"[day {e.day}] {slot.name}: {e.value}; {old} held from day {old_day} to day {e.day}"
    elif e.op == "delete":
        texts["tombstone"] = f"{slot.name}: deleted at the user's request"
    return texts


def _timestamp(start: _dt.date, day: int, minute: int) -> str:
    t = _dt.datetime(start.year, start.month, start.day, 9, 0, tzinfo=_dt.timezone.utc)
    t += _dt.timedelta(days=day - 1, minutes=minute)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


#: minutes from 09:00 of one day to 09:00 of the next
_DAY_MINUTES = 24 * 60


def default_minutes(days: list[int]) -> list[int]:
    """Minute after 09:00 of each event of a stream whose events fall on ``days`` (in order).

    Events of a day are 5 minutes apart; a day with more than 288 events (which would run past
    09:00 of the next day) spaces them ``1439 // (n - 1)`` minutes apart instead, so its last
    event still comes before the next day's first.

    Raises
    ------
    GeneratorError
        A day has more than 1440 events (one a minute is the closest spacing).

    Examples
    --------
    >>> default_minutes([1, 1, 1, 2])
    [0, 5, 10, 0]
    >>> default_minutes([1] * 300)[-2:]
    [1192, 1196]
    """
    per_day: dict[int, int] = {}
    for d in days:
        per_day[d] = per_day.get(d, 0) + 1
    step = {}
    for d, n in per_day.items():
        if n > _DAY_MINUTES:
            raise GeneratorError(f"day {d} has {n} events; at most {_DAY_MINUTES} fit in a day (one a minute)")
        step[d] = 5 if 5 * (n - 1) < _DAY_MINUTES else (_DAY_MINUTES - 1) // (n - 1)
    out, last_day, m = [], None, 0
    for d in days:
        m = m + step[d] if d == last_day else 0
        last_day = d
        out.append(m)
    return out


def render_package(graph: EventGraph, queries: list[QuerySpec], *, package_id: str, cost_model: str,
                   meta: dict, start: _dt.date = _dt.date(2026, 3, 2), minutes: list[int] | None = None) -> Package:
    """Render the graph as a validated :class:`~memaudit.package.Package`.

    Parameters
    ----------
    graph : EventGraph
    queries : list of QuerySpec
        Their ``requires`` name units of the graph (see the ``*_unit`` helpers of this module).
    package_id, cost_model : str
    meta : dict
        Stored as the package's ``meta`` (generator, version, parameters, seed).
    start : date
        Day 1 of the stream.
    minutes : list of int, optional
        Minute (after 09:00 of its day) of each event; default: :func:`default_minutes` (5 minutes
        apart, closer on a day with more than 288 events).  Times must come out strictly increasing.

    Raises
    ------
    GeneratorError
        A query requires a unit the graph does not define, or times are not strictly increasing.
    """
    if not graph.events:
        raise GeneratorError("the event graph has no events")
    cov, potential = _coverage_of_events(graph)
    weights: dict[str, float] = {}
    for q in queries:
        if not q.requires:
            raise GeneratorError(f"query {q.text!r} requires no unit")
        for uid in q.requires:
            if uid not in potential:
                raise GeneratorError(f"query {q.text!r} requires {uid!r}, which the event graph does not define")
            weights[uid] = weights.get(uid, 0.0) + q.weight
    if minutes is None:
        minutes = default_minutes([e.day for e in graph.events])
    width = len(str(len(graph.events)))
    experiences, candidates = [], []
    previous = None
    for index, e in enumerate(graph.events):
        eid = f"e{index + 1:0{width}d}"
        time = _timestamp(start, e.day, minutes[index])
        if previous is not None and time <= previous:
            raise GeneratorError(f"experience {eid}: time {time} is not after the previous one ({previous})")
        previous = time
        experiences.append({"id": eid, "time": time, "session": e.day, "text": e.text})
        for kind, text in _candidate_texts(graph, index).items():
            coverage = {u: a for u, a in cov[index].get(kind, {}).items() if u in weights}
            candidates.append({"id": f"{eid}.{kind}", "experience": eid, "kind": kind, "text": text,
                               "cost": cost_of(text, cost_model), "coverage": coverage})
    # units in the order their first covering candidate appears
    order: list[str] = []
    seen = set()
    for c in candidates:
        for u in c["coverage"]:
            if u not in seen:
                seen.add(u)
                order.append(u)
    units = [{"id": u, "kind": potential[u]["kind"], "weight": weights[u], "text": potential[u]["text"],
              "aliases": potential[u]["aliases"]} for u in order]
    qs = [{"id": f"q{i + 1:0{len(str(len(queries)))}d}", "text": q.text, "answer": q.answer,
           "requires": list(q.requires), "weight": q.weight} for i, q in enumerate(queries)]
    data = {"format": "memaudit-package/1", "id": package_id, "cost_model": cost_model, "cost_source": "text",
            "experiences": experiences, "units": units, "candidates": candidates, "queries": qs, "meta": meta}
    return package_from_dict(data, source=f"generated package {package_id!r}")
