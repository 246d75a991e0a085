"""What every importer yields: memory items of one exported store, and the safe reading of export files."""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import MemauditError
from ..formats.translate import show as _show

__all__ = ["StoreError", "MemoryItem", "Export", "DEFAULT_MAX_BYTES", "VIEWS", "parse_time",
           "time_key", "expect", "where", "claim_unique", "PRODUCTS", "ranked_newest_first", "with_rank"]

#: files larger than this many bytes are refused (override with ``max_bytes`` / ``--max-bytes``)
DEFAULT_MAX_BYTES = 64 * 1024 * 1024

#: what an export file shows of the store -> what it means for the audit
VIEWS = {"full": "the whole served store: scored",
         "rebuilt": "the store rebuilt from its history rows: scored (as the history tells it)",
         "partial": "part of the store (search results, one item, an add() return, one page, a by-tag resource): "
                    "not scored, leaks still found"}

#: the products with an importer
PRODUCTS = ("mem0", "letta", "amem")



class StoreError(MemauditError, ValueError):
    """An exported store cannot be read: the message names the file, the item and the field."""


@dataclass(frozen=True)
class MemoryItem:
    """One memory held by an exported store.

    Attributes
    ----------
    id : str
        The product's own id (unique within one export).
    text : str
        The memory as the product would inject it.
    time : str or None
        ISO-8601 time; ends in ``Z`` when the offset was known (normalised to UTC), no offset
        when the export gave local time without a zone; None when unknown or unparseable.
    time_raw : Any
        The timestamp exactly as exported (string, number or None).
    rank : int
        Position in the product's own order (0 = first injected / most salient).
    source : str
        Where in the export the memory sits, e.g. ``memory``, ``block:human``, ``message:user``,
        ``archival``, ``note``.
    provenance : dict
        JSON-ready details: file, the item's position in the file, product-specific fields.
    """

    id: str
    text: str
    time: str | None
    time_raw: Any
    rank: int
    source: str
    provenance: dict = field(default_factory=dict)


@dataclass
class Export:
    """One imported store: its items in the product's order, plus what the importer noticed.

    Attributes
    ----------
    product : str
        ``mem0``, ``letta`` or ``amem``.
    path : str
        The export file.
    shape : str
        Which documented shape the file had (e.g. ``mem0 get_all {"results": [...]}``).
    items : list of MemoryItem
        Sorted by ``rank``.
    order : str
        How the product's own order was derived (one sentence, for reports).
    retained : list of dict
        Text the product no longer serves but still keeps (Mem0 history of deleted memories, Letta
        evicted messages): ``{"id", "text", "where"}``; scanned for leaks, never scored.
    warnings : list of str
        Things the user should know (truncated pages, dangling links, deleted notes, ...).
    view : str
        What the file shows of the store (a key of :data:`VIEWS`): ``full`` (every served memory),
        ``rebuilt`` (the store replayed from history rows) or ``partial`` (search results, one item,
        an add() return, one page, a by-tag resource): a partial view cannot score the store, but
        the leaks it shows are real.
    """

    product: str
    path: str
    shape: str
    items: list[MemoryItem]
    order: str
    retained: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    view: str = "full"

    def __post_init__(self):
        if self.view not in VIEWS:
            raise ValueError(f"Export.view must be one of {', '.join(VIEWS)}; got {self.view!r}")

    @property
    def scores_store(self) -> bool:
        """Whether the file shows the whole served store, so its ratios score the store."""
        return self.view != "partial"

    def by_id(self) -> dict[str, MemoryItem]:
        return {item.id: item for item in self.items}


# -- checking fields ---------------------------------------------------------------

_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list (JSON array)",
               dict: "an object (JSON {...})", type(None): "null"}


def claim_unique(seen: dict, field: str, value, at: str, place: str) -> None:
    """Record that ``value`` of ``field`` was seen at ``place``; a second sighting is a StoreError
    at ``at`` that names the first place.

    Examples
    --------
    >>> seen = {}
    >>> claim_unique(seen, "id", "a", "f.json: item [0]", "item [0]")
    >>> claim_unique(seen, "id", "a", "f.json: item [1]", "item [1]")
    Traceback (most recent call last):
    ...
    memaudit.stores.export.StoreError: f.json: item [1]: id must be unique; 'a' is also item [0]
    """
    if value in seen:
        raise StoreError(f"{at}: {field} must be unique; {value!r} is also {seen[value]}")
    seen[value] = place


def where(path: str, index, item=None, id_key: str = "id") -> str:
    """``file: item [3] (id '...')`` for messages.

    Examples
    --------
    >>> where("m.json", 3, {"id": "abc"})
    "m.json: item [3] (id 'abc')"
    """
    at = f"{path}: item [{index}]" if isinstance(index, int) else f"{path}: item {index!r}"
    if isinstance(item, dict) and isinstance(item.get(id_key), (str, int)) and not isinstance(item.get(id_key), bool):
        at += f" ({id_key} {item[id_key]!r})"
    return at


def expect(obj: dict, key: str, types, at: str, *, required: bool = False, default=None):
    """``obj[key]`` checked against ``types`` (a type or tuple; None allowed only if listed).

    Examples
    --------
    >>> expect({"memory": "x"}, "memory", str, "f: item [0]", required=True)
    'x'
    >>> expect({"memory": 5}, "memory", str, "f: item [0]")
    Traceback (most recent call last):
    ...
    memaudit.stores.export.StoreError: f: item [0]: memory must be a string; got 5
    """
    if key not in obj:
        if required:
            raise StoreError(f"{at}: {key} is required")
        return default
    v = obj[key]
    types = types if isinstance(types, tuple) else (types,)
    ok = isinstance(v, types) and not (isinstance(v, bool) and bool not in types)
    if not ok:
        names = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)
        raise StoreError(f"{at}: {key} must be {names}; got {_show(v)}")
    return v


# -- timestamps ----------------------------------------------------------------------

_COMPACT = re.compile(r"^\d{12}$")  # A-Mem YYYYMMDDHHMM, local time
_FREE_FORMATS = ("%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d", "%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y",
                 "%d %B %Y", "%B %d, %Y")


def parse_time(raw) -> str | None:
    """Normalise an exported timestamp; None when absent or unparseable (the raw value is kept elsewhere).

    Aware times become UTC (``...Z``); naive times keep their wall-clock value without an offset.

    Examples
    --------
    >>> parse_time("2024-11-27T16:53:43.276872-08:00")
    '2024-11-28T00:53:43.276872Z'
    >>> parse_time("2026-05-06T08:22:50Z"), parse_time(202604221505), parse_time("1:05 pm on 3 March, 2025")
    ('2026-05-06T08:22:50Z', '2026-04-22T15:05:00', '2025-03-03T13:05:00')
    >>> parse_time("last tuesday") is None, parse_time(None) is None, parse_time(10 ** 400) is None
    (True, True, True)
    >>> parse_time("0001-01-01T00:00:00+01:00") is None, parse_time("0001-01-01T00:00:00-01:00")
    (True, '0001-01-01T01:00:00Z')
    """
    if raw is None or isinstance(raw, bool):
        return None
    if isinstance(raw, float):
        if not math.isfinite(raw):
            return None
        raw = str(int(raw)) if raw.is_integer() else str(raw)
    elif isinstance(raw, int):
        if abs(raw) >= 10 ** 14:  # no time format has more than 12 digits; also avoids huge str() conversions
            return None
        raw = str(raw)
    if not isinstance(raw, str) or not raw.strip():
        return None
    s = raw.strip()
    if _COMPACT.match(s):
        try:
            return dt.datetime.strptime(s, "%Y%m%d%H%M").isoformat()
        except ValueError:
            return None
    try:
        t = dt.datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s)
    except ValueError:
        t = None
        for fmt in _FREE_FORMATS:
            try:
                t = dt.datetime.strptime(s, fmt)
                break
            except ValueError:
                continue
        if t is None:
            return None
    if t.tzinfo is not None:
        try:
            return t.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat() + "Z"
        except (OverflowError, ValueError):  # 0001-01-01T00:00:00+01:00 is before year 1 in UTC
            return None
    return t.isoformat()


_MICROSECOND = dt.timedelta(microseconds=1)


def time_key(time: str | None) -> int | None:
    """Microseconds since year 1 of a time from :func:`parse_time` (None for None), for sorting by time.

    Aware (``...Z``) and naive times compare by wall clock, as they are written.

    Examples
    --------
    >>> time_key("2026-01-01T10:00:00Z") < time_key("2026-01-01T10:00:00.5")
    True
    """
    if time is None:
        return None
    return (dt.datetime.fromisoformat(time.rstrip("Z")) - dt.datetime.min) // _MICROSECOND


def ranked_newest_first(items: list[MemoryItem]) -> list[MemoryItem]:
    """``items`` ranked newest first (times compared as times); unknown times last; ties keep their order."""
    order = sorted(range(len(items)), key=lambda k: (items[k].time is None, -(time_key(items[k].time) or 0), k))
    return [with_rank(items[k], r) for r, k in enumerate(order)]


def with_rank(item: MemoryItem, rank: int) -> MemoryItem:
    return MemoryItem(item.id, item.text, item.time, item.time_raw, rank, item.source, item.provenance)
