"""A-Mem importer: MCP note responses, ChromaDB ``get`` dumps and plain lists of notes (pickles are refused)."""

from __future__ import annotations

import json
import os
import sys

from .export import DEFAULT_MAX_BYTES, Export, MemoryItem, StoreError, claim_unique, parse_time, time_key, where
from .models import AMemSearchResult, check_row
from .reading import read_document

__all__ = ["load_amem", "amem_from_data", "is_search_output"]

_ORDER = ("most retrieved first (retrieval_count, A-Mem's own usage signal), then newest timestamp; notes without "
          "a count come last")
_LIST_FIELDS = ("keywords", "tags", "links", "evolution_history")


def load_amem(path, *, max_bytes: int | None = DEFAULT_MAX_BYTES) -> Export:
    """Read an A-Mem export.

    Accepted shapes: the MCP ``read_memory_note`` response (``{"note": {...}}`` or the bulk
    ``{"notes": {id: note | null}}``), the ``memory://all`` resource (``{"memories": [...]}``, whose
    content is cut at 200 characters: warned), a ChromaDB ``collection.get()`` dump (``ids`` /
    ``metadatas`` / ``documents``, all-string metadata with JSON-in-string lists), a plain list of
    note dicts, and an object mapping ids to note dicts.  Pickle files are refused with a message on
    how to convert them; they are never unpickled.

    An item's text is the note as A-Mem serves it: ``content``, then its ``context``, ``keywords``
    and ``tags`` when they are not the defaults.  Links to ids that are not in the export
    (deleted notes) are reported as dangling.
    """
    path = os.fspath(path)
    return amem_from_data(read_document(path, max_bytes=max_bytes, product="A-Mem").data, path)


def amem_from_data(data, path: str = "<amem>") -> Export:
    """The :class:`Export` of already-parsed A-Mem JSON (see :func:`load_amem`)."""
    warnings: list[str] = []
    deleted: list[str] = []
    view = "full"
    if isinstance(data, dict) and isinstance(data.get("notes"), dict):
        shape = "a-mem MCP read_memory_note bulk response"
        notes = []
        for nid, note in data["notes"].items():
            if note is None:
                deleted.append(nid)
            else:
                notes.append((nid, note))
    elif isinstance(data, dict) and isinstance(data.get("note"), dict):
        shape = "a-mem MCP read_memory_note response (a partial view: one note)"
        view = "partial"
        notes = [(data["note"].get("id", 0), data["note"])]
    elif isinstance(data, dict) and isinstance(data.get("memories"), list) and "tag" in data:
        shape = f"a-mem MCP memory://by-tag/{data.get('tag')} resource (a partial view: the notes of one tag)"
        view = "partial"
        notes = list(enumerate(data["memories"]))
        warnings.append(f"{path}: memory://by-tag lists only the notes of one tag and cuts content at 200 characters; "
                        "audit memory://all or read_memory_note for the store")
    elif isinstance(data, dict) and isinstance(data.get("memories"), list):
        shape = "a-mem MCP memory://all resource"
        notes = list(enumerate(data["memories"]))
        warnings.append(f"{path}: memory://all cuts every note's content at 200 characters and leaves out links; "
                        "read the notes with read_memory_note for a full audit")
    elif is_search_output(data):
        return _search_results(data, path)
    elif isinstance(data, dict) and "tag_distribution" in data and "total_memories" in data:
        raise StoreError(f"{path}: this is the A-Mem memory://stats resource: counts and a tag distribution, no "
                         "memories; audit memory://all or a read_memory_note dump instead")
    elif isinstance(data, dict) and isinstance(data.get("ids"), list) and "metadatas" in data:
        shape = "a-mem ChromaDB collection.get() dump"
        notes = _chroma_notes(data, path)
    elif isinstance(data, list):
        shape = "a-mem list of notes"
        notes = list(enumerate(data))
    elif isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
        shape = "a-mem {id: note} map"
        notes = list(data.items())
    else:
        got = f"keys {sorted(data)[:8]}" if isinstance(data, dict) else type(data).__name__
        raise StoreError(f"{path}: not an A-Mem export: expected MCP notes, a ChromaDB get() dump (ids, metadatas) "
                         f"or a list of notes; got {got}")
    items = []
    seen: dict[str, str] = {}
    links: list[tuple[str, object]] = []
    for key, note in notes:
        at = where(path, key, note)
        if not isinstance(note, dict):
            raise StoreError(f"{at}: a note must be an object (JSON {{...}}); got {type(note).__name__}")
        nid = note.get("id", key)
        if not isinstance(nid, (str, int)) or isinstance(nid, bool):
            raise StoreError(f"{at}: id must be a string; got {nid!r}")
        nid = str(nid)
        claim_unique(seen, "id", nid, at, where(path, key))
        content = note.get("content")
        if isinstance(content, (int, float)) and not isinstance(content, bool):
            content = str(content)  # a-mem read-back turns all-digit strings into numbers
        if not isinstance(content, str):
            raise StoreError(f"{at}: content must be a string; got {json.dumps(content)[:60]}")
        fields = {k: _as_list(note.get(k), at, k) for k in _LIST_FIELDS}
        context = note.get("context")
        if context is not None and not isinstance(context, (str, int, float)):
            raise StoreError(f"{at}: context must be a string; got {json.dumps(context)[:60]}")
        count = note.get("retrieval_count")
        if isinstance(count, str) and count.strip().lstrip("-").isdigit():
            try:
                count = int(count)
            except ValueError:  # more digits than Python converts
                raise StoreError(f"{at}: retrieval_count must be an integer of at most "
                                 f"{sys.get_int_max_str_digits()} digits; got a string of {len(count.strip())} "
                                 "characters") from None
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise StoreError(f"{at}: retrieval_count must be an integer; got {count!r}")
        raw_time = note.get("timestamp")
        time = parse_time(raw_time)
        if raw_time is not None and time is None:
            warnings.append(f"{at}: timestamp {raw_time!r} is not a time memaudit can read; time unknown")
        if not content.strip():
            warnings.append(f"{at}: empty content, skipped")
            continue
        text = _note_text(content, None if context is None else str(context), fields["keywords"], fields["tags"])
        for link in fields["links"]:
            links.append((nid, link))
        items.append(MemoryItem(id=nid, text=text, time=time, time_raw=raw_time, rank=0, source="note",
                                provenance={"file": path, "content": content, "retrieval_count": count,
                                            "links": fields["links"], "category": note.get("category")}))
    ids = {it.id for it in items}
    dangling = [(src, link) for src, link in links if str(link) not in ids]
    if dangling:
        warnings.append(f"{path}: {len(dangling)} link(s) name no note of the export (deleted notes or index-style "
                        f"links), e.g. {dangling[0][0]} -> {dangling[0][1]!r}; left unresolved")
    if deleted:
        warnings.append(f"{path}: {len(deleted)} requested note id(s) came back null (deleted): {', '.join(deleted)}")
    order = sorted(range(len(items)), key=lambda k: (
        items[k].provenance["retrieval_count"] is None, -(items[k].provenance["retrieval_count"] or 0),
        _desc(items[k].time), k))
    ranked = [MemoryItem(items[k].id, items[k].text, items[k].time, items[k].time_raw, r, items[k].source,
                         items[k].provenance) for r, k in enumerate(order)]
    return Export("amem", path, shape, ranked, _ORDER, warnings=warnings, view=view)


def _desc(time: str | None):
    return (time is None, -(time_key(time) or 0))


def _as_list(v, at: str, key: str) -> list:
    """A list field, decoding the JSON-in-string form of ChromaDB metadata."""
    if v is None:
        return []
    if isinstance(v, str):
        s = v.strip()
        if not s:
            return []
        try:
            v = json.loads(s)
        except ValueError:
            raise StoreError(f"{at}: {key} must be a list or a JSON list inside a string; got {s[:60]!r}") \
                from None
    if not isinstance(v, list):
        raise StoreError(f"{at}: {key} must be a list; got {json.dumps(v)[:60]}")
    return v


def _note_text(content: str, context: str | None, keywords: list, tags: list) -> str:
    parts = [content.strip()]
    if context and context.strip() and context.strip() != "General":
        parts.append(f"context: {context.strip()}")
    if keywords:
        parts.append("keywords: " + ", ".join(str(k) for k in keywords))
    if tags:
        parts.append("tags: " + ", ".join(str(t) for t in tags))
    return "\n".join(parts)


def _chroma_notes(data: dict, path: str) -> list:
    ids = data["ids"]
    metas = data.get("metadatas")
    docs = data.get("documents")
    top = f"{path}: top level"
    if not isinstance(metas, list) or len(metas) != len(ids):
        raise StoreError(f"{top}: metadatas must be a list with one entry per id ({len(ids)}); got "
                         f"{type(metas).__name__ if not isinstance(metas, list) else len(metas)}")
    if docs is not None and (not isinstance(docs, list) or len(docs) != len(ids)):
        raise StoreError(f"{top}: documents must be null or a list with one entry per id ({len(ids)})")
    notes = []
    for i, (nid, meta) in enumerate(zip(ids, metas)):
        at = f"{path}: item [{i}] (id {nid!r})"
        if not isinstance(nid, str):
            raise StoreError(f"{path}: ids[{i}] must be a string; got {nid!r}")
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise StoreError(f"{at}: metadatas[{i}] must be an object; got {type(meta).__name__}")
        note = dict(meta)
        note["id"] = nid
        if "content" not in note:
            doc = docs[i] if docs is not None else None
            if not isinstance(doc, str):
                raise StoreError(f"{at}: has no metadata 'content' and no document text")
            note["content"] = doc  # agiresearch stores the plain content as the document
        notes.append((i, note))
    return notes


def is_search_output(data) -> bool:
    """Whether ``data`` is an A-Mem MCP search-tool output: ``{"results": [{id, context, keywords, tags, score}]}``
    (no ``memory`` text, which would make it Mem0's)."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return False
    rows = [r for r in data["results"] if isinstance(r, dict)]
    return bool(rows) and all("memory" not in r and ("keywords" in r or "context" in r) for r in rows)


def _search_results(data: dict, path: str) -> Export:
    """A search-tool output: a partial view whose items are each result's context, keywords and tags
    (and content when the tool returned it): text the product still serves for the query."""
    items, warnings = [], []
    seen: dict[str, str] = {}
    for i, row in enumerate(data["results"]):
        at = where(path, i, row)
        res = check_row(AMemSearchResult, row, at)
        claim_unique(seen, "id", res.id, at, f"item [{i}]")
        keywords, tags = _as_list(res.keywords, at, "keywords"), _as_list(res.tags, at, "tags")
        content = row.get("content") if isinstance(row.get("content"), str) else ""
        context = None if res.context is None else str(res.context)
        text = _note_text(content, context, keywords, tags).strip()
        if not text:
            warnings.append(f"{at}: the result holds no text, skipped")
            continue
        items.append(MemoryItem(id=res.id, text=text, time=None, time_raw=None, rank=len(items), source="search result",
                                provenance={"file": path, "index": i, "score": res.score}))
    warnings.append(f"{path}: a search-tool output is a partial view (the notes nearest one query, without their "
                    "content); audit read_memory_note or memory://all for the store")
    return Export("amem", path, "a-mem MCP search tool output (a partial view: results of one query)", items,
                  "search order (Chroma distance, nearest first)", warnings=warnings, view="partial")
