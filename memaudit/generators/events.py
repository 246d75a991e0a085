"""The hidden event graph behind every generated package, and its rendering to a MEMAUDIT package.

An :class:`EventGraph` holds *slots* (an entity's attribute, a detail, a procedure) and a stream of
*events* in time order.  A value slot has a timeline: ``set`` (first value), ``update`` (a new
value replaces the old one), ``restate`` (the current value said again), ``delete`` (the user
asks to forget it).  ``detail`` and ``procedure`` events state a one-off piece of knowledge;
``chatter`` events are distractors that say nothing a query needs.  Each event becomes one
experience; :func:`render_package` derives its candidates, the evidence units and their
coverage from the graph, and turns the family's query specs into queries and unit weights.

The rendering (candidates, units, coverage, times) is in :mod:`memaudit.generators.render`; its
:func:`render_package` and :func:`default_minutes` are importable from here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import MemauditError

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


#: what :mod:`memaudit.generators.render` (which builds on this module) offers from here as well
_RENDERING = ("render_package", "default_minutes")


def __getattr__(name: str):
    if name in _RENDERING:
        from . import render

        return getattr(render, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
