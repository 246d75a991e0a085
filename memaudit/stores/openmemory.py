"""OpenMemory (the mem0 repository's app) files: the backup's memories.json / memories.jsonl(.gz) rows and the list-API page."""

from __future__ import annotations

import datetime as dt

from .export import Export, MemoryItem, claim_unique, parse_time, ranked_newest_first, where
from .models import OpenMemoryListItem, check_row

__all__ = ["ORDER", "from_openmemory", "from_openmemory_page"]

#: Mem0's own order (OpenMemory serves through Mem0)
ORDER = ("newest first by updated_at (created_at when updated_at is null); Mem0 keeps no salience score and "
         "get_all returns vector-store id order")


def from_openmemory(rows: list, path: str, shape: str, model) -> Export:
    """OpenMemory backup rows: active memories are served; paused / archived / deleted ones are retained."""
    items, retained, warnings = [], [], []
    seen: dict[str, str] = {}
    for i, raw in enumerate(rows):
        at = where(path, i, raw)
        row = check_row(model, raw, at)
        claim_unique(seen, "id", row.id, at, f"item [{i}]")
        state = row.state or "active"
        raw_time = row.updated_at or row.created_at
        if state != "active":
            retained.append({"id": row.id, "text": row.content, "where": f"OpenMemory backup, state {state!r}"})
            continue
        if row.content.strip():
            items.append(MemoryItem(id=row.id, text=row.content, time=parse_time(raw_time), time_raw=raw_time, rank=0,
                                    source="memory", provenance={"file": path, "index": i, "state": state,
                                                                 "app_id": row.app_id}))
    if retained:
        warnings.append(f"{path}: {len(retained)} memories are paused, archived or deleted: not served, but kept in "
                        "the backup (scanned for leaks)")
    return Export("mem0", path, shape, ranked_newest_first(items), ORDER, retained=retained, warnings=warnings)


def _epoch_or_iso(raw):
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and 0 <= raw < 10 ** 11:
        return dt.datetime.fromtimestamp(raw, dt.timezone.utc).isoformat()
    return raw


def from_openmemory_page(data: dict, path: str, shape: str) -> Export:
    rows = data["items"]
    items, retained, warnings = [], [], []
    seen: dict[str, str] = {}
    for i, raw in enumerate(rows):
        at = where(path, i, raw)
        row = check_row(OpenMemoryListItem, raw, at)
        claim_unique(seen, "id", row.id, at, f"item [{i}]")
        raw_time = _epoch_or_iso(row.created_at)
        if (row.state or "active") != "active":
            retained.append({"id": row.id, "text": row.content, "where": f"OpenMemory list page, state {row.state!r}"})
        elif row.content.strip():
            items.append(MemoryItem(id=row.id, text=row.content, time=parse_time(raw_time), time_raw=row.created_at,
                                    rank=0, source="memory", provenance={"file": path, "index": i,
                                                                         "app_name": row.app_name}))
    total, pages = data.get("total"), data.get("pages")
    partial = (isinstance(pages, int) and pages > 1) or (isinstance(total, int) and total > len(rows))
    if partial:
        shape += f" (page {data.get('page')!r} of {pages!r}: a partial view; fetch every page, or use the backup)"
    return Export("mem0", path, shape, ranked_newest_first(items), ORDER, retained=retained, warnings=warnings,
                  view="partial" if partial else "full")
