"""Vendor export files through the one reader: the limits of a large export, and rows checked by their models.

``memaudit.stores`` reads every export file (Mem0, Letta, A-Mem, OpenMemory) and every adjudication
file with :func:`read_export_bytes` and :func:`parse_export_json`, which are :func:`~memaudit.formats.read_bytes`
and :func:`~memaudit.formats.parse_json` with limits that grow with the export's ``max_bytes``; its
containers (gzip, zip, JSON Lines) stay in ``stores/reading.py``.  :func:`row_problem` is the error
translator's one line for a row that fails its pydantic model, with a union of types stated as one rule.
"""

from __future__ import annotations

import sys
from typing import get_args

from pydantic import BaseModel, ValidationError

from .reader import MAX_BYTES, MAX_CONTAINERS, MAX_VALUES, parse_json, read_bytes
from .translate import describe, show, where

__all__ = ["export_limits", "read_export_bytes", "parse_export_json", "row_problem"]

_TYPE_NAMES = {"string_type": "a string", "int_type": "an integer", "float_type": "a number",
               "bool_type": "a boolean", "dict_type": "an object (JSON {...})", "list_type": "a list (JSON array)",
               "model_type": "an object (JSON {...})", "int_parsing": "an integer", "float_parsing": "a number",
               "bool_parsing": "a boolean", "int_from_float": "an integer"}


def export_limits(max_bytes: int | None) -> dict:
    """The container and value limits of an export of at most ``max_bytes`` bytes: the reader's own
    (:data:`~memaudit.formats.MAX_CONTAINERS`, :data:`~memaudit.formats.MAX_VALUES` at 64 MiB), grown
    in proportion when a caller raises ``max_bytes`` (``--max-bytes``).

    Examples
    --------
    >>> export_limits(64 * 2**20) == {"max_containers": 2_000_000, "max_values": 8_000_000}
    True
    >>> export_limits(256 * 2**20)["max_values"]
    32000000
    """
    if max_bytes is None:
        return {"max_containers": sys.maxsize, "max_values": sys.maxsize}
    factor = max(1.0, max_bytes / MAX_BYTES)
    return {"max_containers": int(MAX_CONTAINERS * factor), "max_values": int(MAX_VALUES * factor)}


def read_export_bytes(path, *, what: str, max_bytes: int | None, error, hint: str = "") -> bytes:
    """The bytes of an export file, read once by :func:`~memaudit.formats.read_bytes` (devices refused,
    pipes bounded in time, at most ``max_bytes``; ``None`` means no size limit).  ``hint`` is added to
    the size-limit message (how to raise the limit)."""
    def make(message: str):
        return error(message + hint if hint and message.endswith("memaudit reads") else message)

    return read_bytes(path, what=what, max_bytes=sys.maxsize if max_bytes is None else max_bytes, error=make)


def parse_export_json(raw: bytes, source: str, *, what: str, max_bytes: int | None, error):
    """JSON bytes of an export parsed by :func:`~memaudit.formats.parse_json` under :func:`export_limits`
    (BOM accepted; duplicate keys, NaN literals, deep nesting and huge integers refused in one line)."""
    return parse_json(raw, source, what=what, error=error, **export_limits(max_bytes))


def row_problem(exc: ValidationError, row, model: type[BaseModel]) -> str:
    """``<where> <rule>; got <value>`` for the first field of ``row`` that ``model`` refuses.

    A field whose type is a union (``str | int | None``) gets one rule naming every allowed type
    (pydantic reports one error per member).

    Examples
    --------
    >>> class Row(BaseModel):
    ...     id: str
    ...     score: int | float | None = None
    >>> def problem(row):
    ...     try:
    ...         Row.model_validate(row)
    ...     except ValidationError as exc:
    ...         return row_problem(exc, row, Row)
    >>> problem({"id": 3})
    'id must be a string; got 3'
    >>> problem({"id": "a", "score": "high"})
    "score must be an integer or a number or null; got 'high'"
    >>> problem({})
    'id is required'
    """
    errors = exc.errors(include_url=False)
    first = errors[0]
    if not first["loc"]:
        return describe(first, row, model)
    field = first["loc"][0]
    mine = [e for e in errors if e["loc"][:1] == (field,)]
    info = model.model_fields.get(field) if isinstance(field, str) else None
    nullable = info is not None and type(None) in get_args(info.annotation)
    union = len(mine) > 1 and all(len(e["loc"]) == 2 and e["type"] in _TYPE_NAMES for e in mine)
    if union or (nullable and len(mine) == 1 and len(first["loc"]) == 1 and first["type"] in _TYPE_NAMES):
        names = list(dict.fromkeys(_TYPE_NAMES[e["type"]] for e in mine)) + (["null"] if nullable else [])
        value = row.get(field) if isinstance(row, dict) else None
        return f"{where((field,), row, model)} must be {' or '.join(names)}; got {show(value)}"
    return describe(first, row, model)
