"""Mem0 importer: get_all / search / get / add() dumps, raw Qdrant records, migration exports, history rows, OpenMemory files."""

from __future__ import annotations

import datetime as dt
import os

from .export import (DEFAULT_MAX_BYTES, Export, MemoryItem, StoreError, claim_unique, expect, parse_time,
                     ranked_newest_first, time_key, where, with_rank)
from .models import Mem0HistoryRow, Mem0Item, OpenMemoryLine, OpenMemoryMemory, QdrantRecord, check_row
from .openmemory import ORDER as _ORDER
from .openmemory import from_openmemory as _from_openmemory
from .openmemory import from_openmemory_page as _from_openmemory_page
from .reading import JsonLines, read_document

__all__ = ["load_mem0", "mem0_from_data", "parse_as_of"]

_SEARCH_ORDER = "search() order: most similar first (the product's own ranking for that query)"
#: replay order of one memory's history rows when their times cannot order them: a memory is added before it is
#: updated and updated before it is deleted
_EVENT_RANK = {"ADD": 0, "UPDATE": 1, "NONE": 1, "DELETE": 2}


def load_mem0(path, *, max_bytes: int | None = DEFAULT_MAX_BYTES, as_of: str | None = None) -> Export:
    """Read a Mem0 export file (JSON, JSON Lines, gzip or the OpenMemory backup zip).

    Full stores: ``get_all`` as a bare list (``version="v1.0"``, old platform), ``{"results":
    [...]}`` (``relations`` ignored) or the last page of the paginated envelope; raw Qdrant
    ``scroll`` records (``{id, payload: {data, ...}}``); the OSS-to-platform migration file
    (``{"kind": "mem0_oss_qdrant_export", "records": [...]}``); the OpenMemory backup
    (``memories.json``, ``memories.jsonl``, ``.jsonl.gz`` or the backup ``.zip``), whose active
    memories are served and whose paused, archived and deleted ones are *retained*; the
    OpenMemory list-API page when it is the only page.  Rebuilt stores: ``history()`` rows (a
    list, or ``{memory_id: [rows]}``), replayed per memory (ADD, then UPDATEs in time order,
    then DELETE: a deleted memory never comes back, even when its rows have no times); the texts
    they replaced or deleted are *retained*.  Partial views: ``search()`` results (items with
    ``score``), one ``get()`` item, an ``add()`` return (items with ``event``), a page that is not
    the last.

    Expired memories (``expiration_date`` at the top level or in ``metadata``, before the export
    date) are not served but retained.  The export date is ``as_of`` when given, else the time
    the file records (``exported_at``, ``export_meta.generated_at``), else at least the newest
    time in the file (a memory expiring after that is served, with a warning).

    Raises
    ------
    StoreError
        Naming the file, the item and the field; a shape that is no Mem0 export names the keys seen.
    """
    path = os.fspath(path)
    doc = read_document(path, max_bytes=max_bytes, product="Mem0")
    return mem0_from_data(doc.data, path, as_of=as_of, container=doc.container)


def parse_as_of(as_of) -> dt.date | None:
    """The export date given as ``--as-of`` (``YYYY-MM-DD`` or an ISO time), None when not given.

    Examples
    --------
    >>> parse_as_of("2026-09-15"), parse_as_of("2026-09-15T23:30:00-02:00")
    (datetime.date(2026, 9, 15), datetime.date(2026, 9, 16))
    >>> parse_as_of("soon")
    Traceback (most recent call last):
    ...
    memaudit.stores.export.StoreError: --as-of must be a date (YYYY-MM-DD) or an ISO-8601 time; got 'soon'
    """
    if as_of is None:
        return None
    t = parse_time(as_of) if isinstance(as_of, str) and len(as_of.strip()) != 12 else None
    if t is None:
        raise StoreError(f"--as-of must be a date (YYYY-MM-DD) or an ISO-8601 time; got {as_of!r}")
    return dt.date.fromisoformat(t[:10])


def _suffix(container: str) -> str:
    return f" [{container}]" if container else ""


def mem0_from_data(data, path: str = "<mem0>", *, as_of=None, container: str = "") -> Export:
    """The :class:`Export` of already-parsed Mem0 JSON (see :func:`load_mem0`)."""
    as_of_date = parse_as_of(as_of) if not isinstance(as_of, dt.date) else as_of
    sfx = _suffix(container)
    if isinstance(data, list) and len(data) == 2 and isinstance(data[0], list) and \
            (data[1] is None or isinstance(data[1], (str, int))) and data[0] and \
            all(isinstance(r, dict) and "payload" in r for r in data[0]):
        # qdrant-client's scroll() returns (records, next_page_offset); json.dump writes it as a pair
        out = _from_qdrant(data[0], path, "mem0 raw Qdrant scroll (records, next offset)" + sfx, as_of_date)
        if data[1] is not None:
            out.view = "partial"
            out.warnings.append(f"{path}: the scroll has a next page (offset {data[1]!r}): a partial view; scroll to "
                                "the end to audit the whole collection")
        return out
    if isinstance(data, list):
        dicts = [r for r in data if isinstance(r, dict)]
        if data and len(dicts) == len(data) and all("memory_id" in r and "event" in r for r in data):
            return _from_history(data, path, "mem0 history() rows" + sfx)
        if data and len(dicts) == len(data) and all("payload" in r for r in data):
            return _from_qdrant(data, path, "mem0 raw Qdrant scroll records" + sfx, as_of_date)
        if isinstance(data, JsonLines) or (dicts and all("content" in r and "memory" not in r for r in dicts)):
            return _from_openmemory(data, path, "mem0 OpenMemory memories.jsonl" + sfx, OpenMemoryLine)
        if dicts and any("score" in r for r in dicts):
            return _from_items(data, path, "mem0 search() bare list (v1.0 format; a partial view: the memories most "
                               "similar to one query)" + sfx, as_of_date, view="partial", order=_SEARCH_ORDER)
        if dicts and any("event" in r for r in dicts):
            return _from_add(data, path, "mem0 add() return, bare list (v1.0 format; the changes one add() call "
                             "made, not the store)" + sfx)
        return _from_items(data, path, "mem0 get_all bare list (v1.0 format / old platform)" + sfx, as_of_date)
    if not isinstance(data, dict):
        raise StoreError(f"{path}: not a Mem0 export: expected a JSON list or object at the top level; "
                         f"got {type(data).__name__}")
    if data.get("kind") == "mem0_oss_qdrant_export":
        rows = expect(data, "records", list, f"{path}: top level", required=True)
        return _from_items(rows, path, "mem0 OSS-to-platform migration export (records)" + sfx, as_of_date,
                           recorded=data.get("exported_at"))
    if isinstance(data.get("memories"), list):
        return _from_openmemory(data["memories"], path, "mem0 OpenMemory backup (memories.json)" + sfx,
                                OpenMemoryMemory)
    if isinstance(data.get("items"), list) and any(k in data for k in ("total", "pages", "page")):
        return _from_openmemory_page(data, path, "mem0 OpenMemory list-API page (GET /api/v1/memories/)" + sfx)
    points = data.get("points")
    if points is None and isinstance(data.get("result"), dict):
        points = data["result"].get("points")
    if isinstance(points, list):
        return _from_qdrant(points, path, "mem0 raw Qdrant scroll points" + sfx, as_of_date)
    if "results" in data:
        rows = expect(data, "results", list, f"{path}: top level", required=True)
        dicts = [r for r in rows if isinstance(r, dict)]
        if dicts and any("score" in r for r in dicts):
            return _from_items(rows, path, "mem0 search() results (a partial view: the memories most similar to one "
                               "query, not get_all)" + sfx, as_of_date, view="partial", order=_SEARCH_ORDER)
        if dicts and any("event" in r for r in dicts):
            return _from_add(rows, path, "mem0 add() return (the changes one add() call made, not the store)" + sfx)
        if any(k in data for k in ("count", "next", "previous")):
            count = data.get("count")
            if data.get("next") is not None or (isinstance(count, int) and count > len(rows)):
                out = _from_items(rows, path, 'mem0 platform paginated {"count", "next", "results"} (one page: a '
                                  'partial view)' + sfx, as_of_date, view="partial")
                out.warnings.append(f"{path}: this is one page ({len(rows)} of {count} memories; next = "
                                    f"{data.get('next')!r}); fetch every page and concatenate the results to audit "
                                    "the whole store")
                return out
            return _from_items(rows, path, 'mem0 platform paginated {"count", "next", "results"} (the only page)' + sfx,
                               as_of_date)
        return _from_items(rows, path, 'mem0 get_all {"results": [...]}' + sfx, as_of_date)
    if isinstance(data.get("memory"), str) and "id" in data:
        return _from_items([data], path, "mem0 get() single item (a partial view: one memory)" + sfx, as_of_date,
                           view="partial")
    if data and all(isinstance(v, list) for v in data.values()) and \
            all(isinstance(r, dict) and "event" in r for v in data.values() for r in v) and \
            any(data.values()):
        rows = []
        for mid, hist in data.items():
            for j, r in enumerate(hist):
                if "memory_id" in r and r["memory_id"] != mid:
                    raise StoreError(f"{path}: item {mid!r}[{j}]: memory_id is {r['memory_id']!r}, but the row "
                                     f"sits under memory {mid!r}")
                rows.append({**r, "memory_id": mid})
        return _from_history(rows, path, "mem0 {memory_id: history() rows} map" + sfx)
    raise StoreError(f"{path}: not a Mem0 export: a JSON object needs 'results' (get_all / search / add), 'records' "
                     f"(migration export), 'memories' (OpenMemory backup), 'items' (OpenMemory list page), 'points' "
                     f"(Qdrant scroll), 'id' and 'memory' (get), or history rows per memory id; got keys "
                     f"{sorted(data)[:8]}")


# -- items, expiry ---------------------------------------------------------------

def _expiry(row: dict, payload: dict | None, at: str):
    exp = row.get("expiration_date")
    meta = row.get("metadata")
    if exp is None and isinstance(meta, dict):
        exp = meta.get("expiration_date")
    if exp is None and isinstance(payload, dict):
        exp = payload.get("expiration_date")
    if exp is not None and not isinstance(exp, str):
        raise StoreError(f"{at}: expiration_date must be a date string (YYYY-MM-DD) or null; got {exp!r}")
    return exp


def _date_of(raw) -> dt.date | None:
    t = parse_time(raw) if isinstance(raw, str) else None
    return dt.date.fromisoformat(t[:10]) if t else None


class _Clock:
    """The export date expiry is judged against, and how it is known."""

    def __init__(self, as_of: dt.date | None, recorded, times: list[str | None]):
        self.date, self.basis = None, ""
        if as_of is not None:
            self.date, self.basis = as_of, f"--as-of {as_of.isoformat()}"
        elif _date_of(recorded) is not None:
            self.date, self.basis = _date_of(recorded), f"the export time the file records ({recorded})"
        else:
            known = [t for t in times if t is not None]
            if known:
                newest = max(known, key=time_key)
                self.date, self.basis = dt.date.fromisoformat(newest[:10]), f"the newest time in the file ({newest})"
        self.lower_bound = self.basis.startswith("the newest")


def _apply_expiry(items: list[MemoryItem], expiries: dict[str, str], clock: _Clock, path: str,
                  retained: list[dict], warnings: list[str]) -> list[MemoryItem]:
    served = []
    for item in items:
        exp = expiries.get(item.id)
        if exp is None:
            served.append(item)
            continue
        day = _date_of(exp)
        if day is None:
            warnings.append(f"{path}: memory {item.id!r}: expiration_date {exp!r} is not a date; counted as served")
            served.append(item)
        elif clock.date is not None and day < clock.date:
            retained.append({"id": item.id, "text": item.text,
                             "where": f"expired (expiration_date {exp}, before {clock.basis}): not served"})
        else:
            if clock.date is None or clock.lower_bound:
                warnings.append(f"{path}: memory {item.id!r} expires on {exp}, which the file cannot place before the "
                                "export; counted as served (pass --as-of DATE to judge expiry at the export date)")
            served.append(item)
    return served


def _from_items(rows: list, path: str, shape: str, as_of: dt.date | None, *, recorded=None, view: str = "full",
                order: str = _ORDER) -> Export:
    warnings: list[str] = []
    if view == "full" and len(rows) in (20, 100):
        warnings.append(f"{path}: exactly {len(rows)} memories, the default get_all limit (top_k=20 in 2.x, limit=100 "
                        "in 1.x): the dump may be truncated")
    items, expiries, times = [], {}, []
    seen: dict[str, str] = {}
    for i, row in enumerate(rows):
        at = where(path, i, row)
        if not isinstance(row, dict):
            raise StoreError(f"{at}: a memory item must be an object (JSON {{...}}); got {type(row).__name__}")
        payload = None
        if "memory" not in row and "source_payload" in row:  # migration records keep the text in the raw payload
            payload = expect(row, "source_payload", dict, at)
            text = expect(payload, "data", str, at + ".source_payload", required=True)
            row = {**row, "memory": text}
        checked = check_row(Mem0Item, row, at)
        mid, text, created, updated = checked.id, checked.memory, checked.created_at, checked.updated_at
        claim_unique(seen, "id", mid, at, f"item [{i}]")
        exp = _expiry(row, payload, at)
        item = _item(mid, text, created, updated, i, row, path, warnings, at)
        times += [parse_time(created), parse_time(updated)]
        if item is not None:
            items.append(item)
            if exp is not None:
                expiries[mid] = exp
    retained: list[dict] = []
    items = _apply_expiry(items, expiries, _Clock(as_of, recorded, times), path, retained, warnings)
    ranked = ranked_newest_first(items) if order == _ORDER else [with_rank(it, r) for r, it in enumerate(items)]
    return Export("mem0", path, shape, ranked, order, retained=retained, warnings=warnings, view=view)


def _item(mid, text, created, updated, i, row, path, warnings, at, source: str = "memory") -> MemoryItem | None:
    if not text.strip():
        warnings.append(f"{at}: empty memory text, skipped")
        return None
    raw_time = updated if updated is not None else created
    time = parse_time(raw_time)
    if raw_time is not None and time is None:
        warnings.append(f"{at}: unparseable timestamp {raw_time!r}; time unknown")
    prov = {"file": path, "index": i}
    for key in ("user_id", "agent_id", "run_id", "session_id", "app_id", "actor_id", "role", "attributed_to",
                "expiration_date", "hash", "created_at", "updated_at", "replaced_by", "score", "event"):
        if row.get(key) is not None:
            prov[key] = row[key]
    return MemoryItem(id=mid, text=text, time=time, time_raw=raw_time, rank=0, source=source, provenance=prov)


def _from_qdrant(rows: list, path: str, shape: str, as_of: dt.date | None) -> Export:
    """Raw Qdrant records: the text is ``payload.data``; the entity side collection (``entity_type``) is skipped."""
    flat, skipped = [], 0
    for i, row in enumerate(rows):
        rec = check_row(QdrantRecord, row, where(path, i, row))
        payload = rec.payload
        if "entity_type" in payload and "linked_memory_ids" in payload:
            skipped += 1  # a 2.x entity of <collection>_entities, not a memory
            continue
        at = where(path, i, row)
        if not isinstance(payload.get("data"), str):
            raise StoreError(f"{at}: payload.data (the memory text) must be a string; got "
                             f"{type(payload.get('data')).__name__}")
        flat.append({**{k: v for k, v in payload.items() if k != "data"}, "id": str(rec.id), "memory": payload["data"],
                     "metadata": None})
    out = _from_items(flat, path, shape, as_of)
    if skipped:
        out.warnings.append(f"{path}: {skipped} record(s) are Mem0 entities (entity_type, linked_memory_ids), not "
                            "memories; skipped")
    return out


def _from_add(rows: list, path: str, shape: str) -> Export:
    """An add() return: ADD / UPDATE / NONE events are memories the call left served; DELETE texts are retained."""
    items, retained, warnings = [], [], []
    seen: dict[str, str] = {}
    for i, row in enumerate(rows):
        at = where(path, i, row)
        if not isinstance(row, dict):
            raise StoreError(f"{at}: an add() result must be an object (JSON {{...}}); got {type(row).__name__}")
        mid = expect(row, "id", str, at, required=True)
        claim_unique(seen, "id", mid, at, f"item [{i}]")
        text = expect(row, "memory", str, at, required=True)
        event = expect(row, "event", (str, type(None)), at) or "ADD"
        if event not in _EVENT_RANK:
            raise StoreError(f"{at}: event must be one of {', '.join(_EVENT_RANK)}; got {event!r}")
        previous = expect(row, "previous_memory", (str, type(None)), at)
        if previous:
            retained.append({"id": f"{mid}@previous", "text": previous, "where": "add() UPDATE previous_memory"})
        if event == "DELETE":
            retained.append({"id": mid, "text": text, "where": "add() DELETE event (deleted by this call)"})
            continue
        item = _item(mid, text, row.get("created_at"), row.get("updated_at"), i, row, path, warnings, at)
        if item is not None:
            items.append(item)
    warnings.append(f"{path}: an add() return lists only what one add() call changed; audit a get_all dump for the "
                    "store")
    return Export("mem0", path, shape, [with_rank(it, r) for r, it in enumerate(items)],
                  "the order of the add() return", retained=retained, warnings=warnings, view="partial")


# -- history ---------------------------------------------------------------------

def _from_history(rows: list, path: str, shape: str) -> Export:
    """Rebuild the store from ``history()`` rows: the last text of each memory unless deleted.

    Each memory's rows are replayed in event order (ADD, then UPDATE / NONE, then DELETE: a
    memory is added once and a deleted id never returns), UPDATEs among themselves by their time
    (``updated_at``, else ``created_at``; rows without a time after the timed ones, in file order).
    """
    checked = [check_row(Mem0HistoryRow, row, where(path, i, row)) for i, row in enumerate(rows)]
    by_memory: dict[str, list[int]] = {}
    for i, row in enumerate(checked):
        by_memory.setdefault(row.memory_id, []).append(i)
    retained: list[dict] = []
    warnings: list[str] = []
    items: list[MemoryItem] = []
    untimed = 0
    for mid, idx in by_memory.items():
        def key(i):
            row = checked[i]
            t = time_key(parse_time(row.updated_at if row.updated_at is not None else row.created_at))
            return _EVENT_RANK[row.event], t is None, t or 0, i

        state = None
        ordered = sorted(idx, key=key)
        updates = [i for i in ordered if checked[i].event in ("UPDATE", "NONE")]
        if len(updates) > 1 and any(key(i)[1] for i in updates):
            untimed += 1
        for i in ordered:
            row = checked[i]
            at = where(path, i, rows[i])
            rid = row.id if row.id is not None else i
            if row.event in ("ADD", "UPDATE"):
                if row.new_memory is None:
                    raise StoreError(f"{at}: new_memory must be a string on an {row.event} row; got null")
                if row.event == "UPDATE" and row.old_memory:
                    retained.append({"id": f"{mid}@{rid}", "text": row.old_memory, "where": "history (UPDATE old_memory)"})
                raw_time = row.updated_at if row.updated_at is not None else row.created_at
                state = {"text": row.new_memory, "raw_time": raw_time, "index": i, "event": row.event}
            elif row.event == "DELETE":
                if row.old_memory:
                    retained.append({"id": f"{mid}@{rid}", "text": row.old_memory,
                                     "where": "history (DELETE old_memory: deleted, text kept in history.db)"})
                state = None
        if state is not None and state["text"].strip():
            items.append(MemoryItem(id=mid, text=state["text"], time=parse_time(state["raw_time"]),
                                    time_raw=state["raw_time"], rank=0, source="memory",
                                    provenance={"file": path, "index": state["index"], "event": state["event"]}))
    if untimed:
        warnings.append(f"{path}: {untimed} memor{'y has' if untimed == 1 else 'ies have'} several UPDATE rows without "
                        "a readable time; those are replayed in file order")
    if not items:
        warnings.append(f"{path}: the history leaves no memory in the store (every memory was deleted)")
    return Export("mem0", path, shape + " (store rebuilt from ADD / UPDATE / DELETE)", ranked_newest_first(items), _ORDER,
                  retained=retained, warnings=warnings, view="rebuilt")
