"""Mem0 importer: ``get_all`` dumps (bare list, ``{"results": [...]}``, paginated), migration exports and ``history()`` rows."""

from __future__ import annotations

import os

from .export import (DEFAULT_MAX_BYTES, Export, MemoryItem, StoreError, claim_unique, expect, parse_time,
                     read_json_file, time_key, where)

__all__ = ["load_mem0", "mem0_from_data"]

_ORDER = ("newest first by updated_at (created_at when updated_at is null); Mem0 keeps no salience score and "
          "get_all returns vector-store id order")
_EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")


def load_mem0(path, *, max_bytes: int | None = DEFAULT_MAX_BYTES) -> Export:
    """Read a Mem0 export file.

    Accepted shapes: a bare list of memory items (``version="v1.0"``, old platform), ``{"results":
    [...]}`` (optionally with ``relations``, ignored), the paginated platform envelope
    ``{"count", "next", "previous", "results"}``, the OSS-to-platform migration file
    ``{"kind": "mem0_oss_qdrant_export", "records": [...]}``, and a list of ``history()`` rows
    (``memory_id``, ``event`` ADD / UPDATE / DELETE, ``old_memory``, ``new_memory``), from which
    the store is rebuilt (the last text of every memory not deleted) and deleted texts are kept
    as *retained*, and the OpenMemory backup ``memories.json`` (``{"memories": [{"id", "content",
    "state", ...}], ...}``), whose ``active`` memories are the store and whose paused, archived and
    deleted ones (exported too) are *retained*.

    Raises
    ------
    StoreError
        Naming the file, the item and the field.
    """
    path = os.fspath(path)
    return mem0_from_data(read_json_file(path, max_bytes=max_bytes, product="Mem0"), path)


def mem0_from_data(data, path: str = "<mem0>") -> Export:
    """The :class:`Export` of already-parsed Mem0 JSON (see :func:`load_mem0`)."""
    warnings: list[str] = []
    if isinstance(data, list):
        if data and all(isinstance(r, dict) and "event" in r and "memory_id" in r for r in data):
            return _from_history(data, path)
        rows, shape = data, "mem0 get_all bare list (v1.0 format / old platform)"
    elif isinstance(data, dict):
        if data.get("kind") == "mem0_oss_qdrant_export":
            rows = expect(data, "records", list, f"{path}: top level", required=True)
            shape = "mem0 OSS-to-platform migration export (records)"
        elif "results" in data:
            rows = expect(data, "results", list, f"{path}: top level", required=True)
            paginated = any(k in data for k in ("count", "next", "previous"))
            shape = 'mem0 platform paginated {"count", "next", "results"}' if paginated else 'mem0 get_all {"results": [...]}'
            if paginated:
                count = data.get("count")
                if data.get("next") is not None or (isinstance(count, int) and count > len(rows)):
                    warnings.append(f"{path}: this is one page ({len(rows)} of {count} memories; next = "
                                    f"{data.get('next')!r}); fetch every page and concatenate the results to audit "
                                    "the whole store")
        elif isinstance(data.get("memories"), list):
            return _from_openmemory(data, path)
        else:
            raise StoreError(f"{path}: not a Mem0 export: a JSON object needs 'results' (get_all), 'records' "
                             f"(migration export) or 'memories' (OpenMemory backup); got keys {sorted(data)[:8]}")
    else:
        raise StoreError(f"{path}: not a Mem0 export: expected a JSON list or object at the top level; "
                         f"got {type(data).__name__}")
    if len(rows) in (20, 100):
        warnings.append(f"{path}: exactly {len(rows)} memories, the default get_all limit (top_k=20 in 2.x, limit=100 "
                        "in 1.x): the dump may be truncated")
    items = []
    seen: dict[str, str] = {}
    for i, row in enumerate(rows):
        at = where(path, i, row)
        if not isinstance(row, dict):
            raise StoreError(f"{at}: a memory item must be an object (JSON {{...}}); got {type(row).__name__}")
        mid = expect(row, "id", str, at, required=True)
        claim_unique(seen, "id", mid, at, f"item [{i}]")
        text = expect(row, "memory", str, at, required="source_payload" not in row)
        if text is None:  # migration records keep the text in the raw payload as 'data'
            payload = expect(row, "source_payload", dict, at)
            text = expect(payload, "data", str, at + ".source_payload", required=True)
        created = expect(row, "created_at", (str, type(None)), at)
        updated = expect(row, "updated_at", (str, type(None)), at)
        expect(row, "hash", (str, type(None)), at)
        expect(row, "metadata", (dict, type(None)), at)
        expect(row, "expiration_date", (str, type(None)), at)
        if not text.strip():
            warnings.append(f"{at}: empty memory text, skipped")
            continue
        raw_time = updated if updated is not None else created
        time = parse_time(raw_time)
        if raw_time is not None and time is None:
            warnings.append(f"{at}: unparseable timestamp {raw_time!r}; time unknown")
        prov = {"file": path, "index": i}
        for key in ("user_id", "agent_id", "run_id", "session_id", "app_id", "actor_id", "role", "attributed_to",
                    "expiration_date", "hash", "created_at", "updated_at", "replaced_by"):
            if row.get(key) is not None:
                prov[key] = row[key]
        items.append(MemoryItem(id=mid, text=text, time=time, time_raw=raw_time, rank=0, source="memory",
                                provenance=prov))
    return Export("mem0", path, shape, _ranked(items), _ORDER, warnings=warnings)


def _ranked(items: list[MemoryItem]) -> list[MemoryItem]:
    """Newest first; unknown times last; ties keep export order."""
    order = sorted(range(len(items)), key=lambda k: (items[k].time is None, -(time_key(items[k].time) or 0), k))
    return [_with_rank(items[k], r) for r, k in enumerate(order)]


def _with_rank(item: MemoryItem, rank: int) -> MemoryItem:
    return MemoryItem(item.id, item.text, item.time, item.time_raw, rank, item.source, item.provenance)


def _from_history(rows: list, path: str) -> Export:
    """Rebuild the store from ``history()`` rows: the last text of each memory unless deleted.

    Rows are replayed in time order (``updated_at``, else ``created_at``; ties keep file order),
    or in file order, with a warning, when some row has no readable time.
    """
    state: dict[str, dict] = {}
    retained: list[dict] = []
    warnings: list[str] = []
    times = []
    for i, row in enumerate(rows):
        at = where(path, i, row)
        created = expect(row, "created_at", (str, type(None)), at)
        updated = expect(row, "updated_at", (str, type(None)), at)
        times.append(time_key(parse_time(updated if updated is not None else created)))
    order = list(range(len(rows)))
    if all(t is not None for t in times):
        order.sort(key=lambda k: times[k])
    else:
        warnings.append(f"{path}: {sum(t is None for t in times)} history row(s) have no readable time; the rows "
                        "are replayed in file order")
    for i in order:
        row = rows[i]
        at = where(path, i, row)
        rid = expect(row, "id", (str, int), at)
        mid = expect(row, "memory_id", str, at, required=True)
        event = expect(row, "event", str, at, required=True)
        if event not in _EVENTS:
            raise StoreError(f"{at}: field 'event' must be one of {', '.join(_EVENTS)}; got {event!r}")
        old = expect(row, "old_memory", (str, type(None)), at)
        new = expect(row, "new_memory", (str, type(None)), at)
        created = expect(row, "created_at", (str, type(None)), at)
        updated = expect(row, "updated_at", (str, type(None)), at)
        raw_time = updated if updated is not None else created
        if event in ("ADD", "UPDATE"):
            if new is None:
                raise StoreError(f"{at}: field 'new_memory' must be a string on an {event} row; got null")
            if event == "UPDATE" and old:
                retained.append({"id": f"{mid}@{rid if rid is not None else i}", "text": old,
                                 "where": "history (UPDATE old_memory)"})
            state[mid] = {"text": new, "raw_time": raw_time, "index": i, "event": event}
        elif event == "DELETE":
            if old:
                retained.append({"id": f"{mid}@{rid if rid is not None else i}", "text": old,
                                 "where": "history (DELETE old_memory: deleted, text kept in history.db)"})
            state.pop(mid, None)
    items = []
    for mid, s in state.items():
        time = parse_time(s["raw_time"])
        items.append(MemoryItem(id=mid, text=s["text"], time=time, time_raw=s["raw_time"], rank=0, source="memory",
                                provenance={"file": path, "index": s["index"], "event": s["event"]}))
    items = [it for it in items if it.text.strip()]
    if not items:
        warnings.append(f"{path}: the history leaves no memory in the store (every memory was deleted)")
    return Export("mem0", path, "mem0 history() rows (store rebuilt from ADD / UPDATE / DELETE)", _ranked(items),
                  _ORDER, retained=retained, warnings=warnings)


def _from_openmemory(data: dict, path: str) -> Export:
    """OpenMemory ``memories.json``: active memories are served; paused / archived / deleted ones are retained."""
    items, retained, warnings = [], [], []
    seen: dict[str, str] = {}
    for i, row in enumerate(data["memories"]):
        at = where(path, i, row)
        if not isinstance(row, dict):
            raise StoreError(f"{at}: a memory must be an object (JSON {{...}}); got {type(row).__name__}")
        mid = expect(row, "id", str, at, required=True)
        claim_unique(seen, "id", mid, at, f"item [{i}]")
        text = expect(row, "content", str, at, required=True)
        state = expect(row, "state", (str, type(None)), at) or "active"
        raw_time = expect(row, "updated_at", (str, type(None)), at) or expect(row, "created_at", (str, type(None)), at)
        if state != "active":
            retained.append({"id": mid, "text": text, "where": f"OpenMemory backup, state {state!r}"})
            continue
        if text.strip():
            items.append(MemoryItem(id=mid, text=text, time=parse_time(raw_time), time_raw=raw_time, rank=0,
                                    source="memory", provenance={"file": path, "index": i, "state": state,
                                                                 "app_id": row.get("app_id")}))
    if retained:
        warnings.append(f"{path}: {len(retained)} memories are paused, archived or deleted: not served, but kept in "
                        "the backup (scanned for leaks)")
    return Export("mem0", path, "mem0 OpenMemory backup (memories.json)", _ranked(items), _ORDER,
                  retained=retained, warnings=warnings)
