"""The one error translator: a pydantic ValidationError of any document model becomes one line.

The grammar of every message: ``<source>: <where> <rule>; got <value>`` where ``<where>`` is the
JSON path with the ids of list items read from the data (``candidates[3] ('e02.fact').cost``).
"""

from __future__ import annotations

import difflib
import json
import math
import types
import typing
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from .reader import NonFinite

__all__ = ["show", "more", "json_kind", "where", "describe", "validation_message", "escape_control"]

_TYPE_RULES = {
    "missing": "is required",
    "string_type": "must be a string",
    "string_too_short": "must be a non-empty string",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list (JSON array)",
    "dict_type": "must be an object (JSON {...})",
    "model_type": "must be an object (JSON {...})",
    "model_attributes_type": "must be an object (JSON {...})",
    "too_short": "must not be empty",
}

_CONTROL = {i: f"\\x{i:02x}" for i in [*range(0x20), 0x7f, *range(0x80, 0xa0)]}
_CONTROL.update({0x09: "\\t", 0x0a: "\\n", 0x0d: "\\r", 0x1b: "\\x1b", 0x2028: "\\u2028", 0x2029: "\\u2029"})


def escape_control(text: str) -> str:
    """``text`` with every control character (C0, DEL, C1, line / paragraph separators) written as an
    escape, so text read from an input cannot move the cursor, clear a terminal or start a new line.

    Examples
    --------
    >>> escape_control("ok\\x1b[2J\\nerror: forged")
    'ok\\\\x1b[2J\\\\nerror: forged'
    """
    return text.translate(_CONTROL)


def show(v) -> str:
    """A short rendering of a received value for a message (at most 80 characters, control characters escaped)."""
    if isinstance(v, NonFinite):
        s = v.name
    elif isinstance(v, bool) or v is None:
        s = json.dumps(v)
    elif isinstance(v, float):
        s = ("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")) if not math.isfinite(v) else (
            str(int(v)) if v.is_integer() and abs(v) < 1e16 else repr(v))
    elif isinstance(v, int):
        s = str(v) if v.bit_length() < 200 else f"an integer of {len(str(abs(v)))} digits"
    elif isinstance(v, str):
        s = repr(v)
    else:
        try:
            s = json.dumps(v, ensure_ascii=False, default=repr)
        except (TypeError, ValueError, RecursionError):
            s = repr(type(v).__name__)
    s = escape_control(s)
    return s if len(s) <= 80 else s[:77] + "..."


def more(n: int) -> str:
    return "" if n <= 0 else f" (and {n} more problem{'s' if n > 1 else ''})"


def json_kind(v) -> str:
    if isinstance(v, list):
        return "a JSON array"
    if isinstance(v, str):
        return "a JSON string"
    if isinstance(v, bool):
        return "a JSON boolean"
    if v is None:
        return "null"
    if isinstance(v, (int, float, NonFinite)):
        return "a JSON number"
    return f"a {type(v).__name__}"


def _unwrap(tp):
    """The model / list / dict type inside Optional[...] and Annotated[...]."""
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return Any
            tp = args[0]
        else:
            return tp


def _step(tp, part):
    """The type of ``part`` (a field name, list index or mapping key) inside ``tp``; Any when unknown."""
    tp = _unwrap(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
        f = tp.model_fields.get(part)
        return f.annotation if f is not None else Any
    origin = get_origin(tp)
    if origin is list and isinstance(part, int):
        args = get_args(tp)
        return args[0] if args else Any
    if origin is dict:
        args = get_args(tp)
        return args[1] if len(args) == 2 else Any
    return Any


def _is_mapping(tp) -> bool:
    return get_origin(_unwrap(tp)) is dict


def where(loc, data, model: type[BaseModel]) -> str:
    """``candidates[3] ('e02.fact').cost`` from a pydantic loc, with ids read from the raw data."""
    out, node, tp = "", data, model
    for part in loc:
        if part == "[key]":
            continue
        mapping = _is_mapping(tp)
        if isinstance(part, int) and not mapping:
            out += f"[{part}]"
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("id"), str):
                out += f" ({node['id']!r})"
        else:
            out += f"[{part!r}]" if mapping else (f".{part}" if out else str(part))
            node = node.get(part) if isinstance(node, dict) else None
        tp = _step(tp, part)
    return escape_control(out)


def _model_at(loc, model):
    tp = model
    for part in loc:
        tp = _step(tp, part)
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def describe(err: dict, data, model: type[BaseModel], owner: str = "the document") -> str:
    """One pydantic error (from ``ValidationError.errors()``) as ``<where> <rule>; got <value>``."""
    loc, kind = tuple(err["loc"]), err["type"]
    if kind == "extra_forbidden":
        parent, key = loc[:-1], loc[-1]
        place = where(parent, data, model) or owner
        inner = _model_at(parent, model)
        hint = ""
        if inner is not None:
            fields = list(inner.model_fields)
            close = difflib.get_close_matches(str(key), fields, n=1, cutoff=0.6)
            hint = (f" (did you mean {close[0]!r}?)" if close else "") + "; allowed fields: " + ", ".join(fields)
        return f"{place} has an unknown field {escape_control(repr(key))}{hint}"
    if not loc:
        return escape_control(err["msg"].removeprefix("Value error, "))
    place = where(loc, data, model)
    if kind == "missing":
        return f"{place} is required"
    if kind == "value_error":
        rule = err["msg"].removeprefix("Value error, ")
    elif kind == "literal_error":
        rule = f"must be one of {err.get('ctx', {}).get('expected', '')}"
    else:
        rule = _TYPE_RULES.get(kind)
        if rule is None:
            m = err["msg"]
            rule = (m[:1].lower() + m[1:]).replace("input should", "should")
    return f"{place} {rule}; got {show(err.get('input'))}"


def validation_message(exc: ValidationError, data, model: type[BaseModel], source: str,
                       owner: str = "the document") -> str:
    """``<source>: <the first problem> (and N more problems)``."""
    errors = exc.errors(include_url=False)
    return f"{source}: {describe(errors[0], data, model, owner)}{more(len(errors) - 1)}"
