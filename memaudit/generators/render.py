"""Rendering an :class:`~memaudit.generators.events.EventGraph` to a MEMAUDIT package (:func:`render_package`).

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

from ..costs import cost_of
from ..package import Package, package_from_dict
from .events import EventGraph, GeneratorError, QuerySpec, current_unit, deleted_unit, interval_unit, invalid_unit

__all__ = ["render_package", "default_minutes"]


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
