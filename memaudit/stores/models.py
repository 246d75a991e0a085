"""Pydantic models of the export rows the products write, one group per product family, and one checker.

Each model states the fields memaudit reads (unknown fields are allowed and kept, since every
product version adds some) and names, in its docstring, the product versions whose own code was
run to write such rows (docs/audit.md lists products x versions x shapes).  :func:`check_row` validates one row and turns the first validation error into
the importers' one-line message: ``FILE: item [3] (id 'x'): memory must be a string; got 5``.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, ValidationError

from ..formats.exports import row_problem
from ..formats.translate import json_kind
from .export import StoreError

__all__ = ["Mem0Item", "Mem0HistoryRow", "QdrantRecord", "OpenMemoryMemory", "OpenMemoryLine", "OpenMemoryListItem",
           "LettaToolReturn", "AMemSearchResult", "check_row", "MODELS"]

_Time = Optional[Union[str, int, float]]


class _Row(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


# -- Mem0 ------------------------------------------------------------------------------

class Mem0Item(_Row):
    """One Mem0 memory as ``get_all``, ``search``, ``get`` and ``add`` return it.

    Written by mem0ai 2.2.1 (``{"results": [...]}``; ``search`` adds ``score``; ``get`` returns one
    item with ``score: null``; ``expiration_date`` since 2.0.10, top level), 1.0.11 and 0.1.118
    (``version="v1.0"``: a bare list).  ``add()`` returns items with ``event`` (ADD / UPDATE /
    DELETE / NONE) and, for UPDATE, ``previous_memory``.
    """

    id: str
    memory: str
    hash: Optional[str] = None
    metadata: Optional[dict] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    expiration_date: Optional[str] = None
    score: Optional[float] = None
    event: Optional[str] = None
    previous_memory: Optional[str] = None


class Mem0HistoryRow(_Row):
    """One row of Mem0 ``history(memory_id)`` (the SQLite ``history`` table).

    Written by mem0ai 2.2.1, 1.0.11 and 0.1.118: ten keys always (``id, memory_id, old_memory,
    new_memory, event, created_at, updated_at, is_deleted, actor_id, role``).  0.1.118 DELETE rows
    have both times null; a 2.x ``infer=True`` ADD row has ``updated_at`` null; an UPDATE row keeps
    the memory's original ``created_at`` (its own time is ``updated_at``).
    """

    id: Optional[Union[str, int]] = None
    memory_id: str
    event: Literal["ADD", "UPDATE", "DELETE", "NONE"]
    old_memory: Optional[str] = None
    new_memory: Optional[str] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    is_deleted: Optional[Union[bool, int]] = None


class QdrantRecord(_Row):
    """One raw Qdrant ``scroll`` record of a Mem0 collection: ``{id, payload, vector, shard_key, order_value}``.

    Written by qdrant-client 1.20.0 (local on-disk) under mem0ai 2.2.1; the memory text is
    ``payload.data``, the payload also holds ``hash, created_at, updated_at``, the session ids,
    the caller's metadata keys flattened and ``expiration_date`` when set.
    """

    id: Union[str, int]
    payload: dict
    vector: Any = None


class OpenMemoryMemory(_Row):
    """One memory of the OpenMemory backup's ``memories.json`` (``POST /api/v1/backup/export``).

    Written by the ``openmemory/api`` app of the mem0 repository on mem0ai 2.2.1: ``state`` is
    ``active``, ``paused``, ``archived`` or ``deleted`` (soft deletes are exported too), times are
    timezone-aware.
    """

    id: str
    content: str
    state: Optional[str] = "active"
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    archived_at: Optional[str] = None
    deleted_at: Optional[str] = None
    app_id: Optional[str] = None
    metadata: Optional[dict] = None


class OpenMemoryLine(OpenMemoryMemory):
    """One line of the OpenMemory backup's ``memories.jsonl(.gz)``: ``{id, content, metadata, created_at,
    updated_at, state, app, categories}`` (same app and version as :class:`OpenMemoryMemory`)."""

    app: Optional[str] = None
    categories: Optional[list] = None


class OpenMemoryListItem(_Row):
    """One item of the OpenMemory list API page (``GET /api/v1/memories/``: ``{"items", "total", "page",
    "size", "pages"}``); same app as :class:`OpenMemoryMemory`.  The API lists the memories the
    user sees (not deleted ones), one page at a time."""

    id: str
    content: str
    created_at: Optional[Union[str, int, float]] = None
    state: Optional[str] = "active"
    app_name: Optional[str] = None


# -- Letta -----------------------------------------------------------------------------

class LettaToolReturn(_Row):
    """The JSON text of a Letta tool-role message: ``{"status", "message", "time"}``.

    Written by the letta 0.16.8 server (``memgpt_v2_agent`` and ``letta_v1_agent``): the memory
    tools (``memory_insert``, ``memory_replace``, ...) return the whole block after the edit in
    ``message``; ``send_message`` returns a receipt, ``archival_memory_insert`` the string "None".
    """

    status: Optional[str] = None
    message: Optional[str] = None
    time: Optional[str] = None


# -- A-Mem -----------------------------------------------------------------------------

class AMemSearchResult(_Row):
    """One result of the A-Mem MCP search tools (``search_memories``: ``{"status", "count", "results"}``).

    Written by a-mem 0.2.6 (MCP server over stdio, chromadb 1.5.9): a partial view without the
    note's ``content``, but with its ``context``, ``keywords`` and ``tags`` (which may still hold
    values removed from the content) and a Chroma distance ``score`` (lower is closer).
    """

    id: str
    context: Optional[Union[str, int, float]] = None
    keywords: Optional[Union[list, str]] = None
    tags: Optional[Union[list, str]] = None
    score: Optional[float] = None


#: model name -> model, for the docs and the tests
MODELS = {m.__name__: m for m in (Mem0Item, Mem0HistoryRow, QdrantRecord, OpenMemoryMemory, OpenMemoryLine,
                                  OpenMemoryListItem, LettaToolReturn, AMemSearchResult)}

def check_row(model: type[BaseModel], row, at: str):
    """``row`` validated as ``model``; a bad row is a :class:`StoreError` naming ``at`` and the field, in the
    grammar of the one error translator (:func:`memaudit.formats.exports.row_problem`).

    Examples
    --------
    >>> check_row(Mem0HistoryRow, {"memory_id": "m", "event": "ADD", "new_memory": "x"}, "h.json: item [0]").event
    'ADD'
    >>> check_row(Mem0HistoryRow, {"memory_id": "m", "event": "MOVE"}, "h.json: item [1]")
    Traceback (most recent call last):
    ...
    memaudit.stores.export.StoreError: h.json: item [1]: event must be one of 'ADD', 'UPDATE', 'DELETE' or 'NONE'; got 'MOVE'
    >>> check_row(Mem0Item, {"id": "a", "memory": 5}, "m.json: item [0]")
    Traceback (most recent call last):
    ...
    memaudit.stores.export.StoreError: m.json: item [0]: memory must be a string; got 5
    """
    if not isinstance(row, dict):
        raise StoreError(f"{at}: must be an object (JSON {{...}}); got {json_kind(row)}")
    try:
        return model.model_validate(row)
    except ValidationError as exc:
        raise StoreError(f"{at}: {row_problem(exc, row, model)}") from None
