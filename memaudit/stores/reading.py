"""The containers of export files: plain JSON, JSON Lines, gzip and zip, with size limits on the unpacked bytes.

Every importer gets its parsed data from :func:`read_document`; nothing else in ``stores/``
opens an export file (adjudication files come through :func:`read_json_file`).  The bytes are read
and the JSON parsed by the one reader, :mod:`memaudit.formats` (through :mod:`memaudit.formats.exports`):
devices refused, pipes bounded, duplicate keys, NaN literals, deep nesting and huge integers refused.
What is left here is what only exports have: gzip and zip members (bounded unpacked size), JSON Lines,
a JSON string holding JSON, lone surrogates.  Pickles are refused, never unpickled.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

from ..formats.exports import parse_export_json, read_export_bytes
from .export import DEFAULT_MAX_BYTES, StoreError

__all__ = ["Document", "read_document", "read_json_file", "JsonLines"]

_PICKLE_SUFFIXES = (".pkl", ".pickle", ".pck", ".p")
_JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")
#: zip members read from an OpenMemory backup, best first (memories.json holds states and status history)
_ZIP_MEMBERS = ("memories.json", "memories.jsonl.gz", "memories.jsonl")


class JsonLines(list):
    """The objects of a JSON Lines file, one per non-empty line (a list, so importers read it as rows)."""


@dataclass(frozen=True)
class Document:
    """One parsed export file: ``data`` and the ``container`` it came in ("" for a plain JSON file,
    else e.g. ``gzip``, ``zip member 'memories.json'``, ``JSON Lines``)."""

    data: Any
    container: str = ""


def _limit_text(max_bytes, product: str) -> str:
    return (f"over the {max_bytes}-byte limit for {product} exports (a guard against loading huge dumps into "
            f"memory); raise it with --max-bytes N if this file is genuine")


def _read_bytes(path: str, max_bytes, product: str) -> bytes:
    return read_export_bytes(path, what=f"{product} export", max_bytes=max_bytes, error=StoreError,
                             hint=f" for {product} exports; raise the limit with --max-bytes N if this file is genuine")


def _bounded(stream, max_bytes, what: str, product: str) -> bytes:
    """Read ``stream`` to its end, refusing more than ``max_bytes`` unpacked bytes (headers can lie)."""
    try:
        data = stream.read() if max_bytes is None else stream.read(max_bytes + 1)
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
        raise StoreError(f"{what}: cannot unpack: {exc}") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise StoreError(f"{what}: unpacks to more than {max_bytes} bytes, {_limit_text(max_bytes, product)} "
                         "(a zip bomb is refused the same way)")
    return data


def _gunzip(raw: bytes, what: str, max_bytes, product: str) -> bytes:
    return _bounded(gzip.GzipFile(fileobj=io.BytesIO(raw)), max_bytes, what, product)


def _unzip(raw: bytes, path: str, max_bytes, product: str) -> tuple[bytes, str]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile as exc:
        raise StoreError(f"{path}: not a readable zip file: {exc}") from None
    with zf:
        names = zf.namelist()
        member = next((n for n in _ZIP_MEMBERS if n in names), None)
        if member is None:
            candidates = [n for n in names if n.lower().endswith((".json", ".jsonl", ".jsonl.gz"))]
            if len(candidates) != 1:
                raise StoreError(f"{path}: a zip export must hold memories.json (the OpenMemory backup) or exactly one "
                                 f"JSON file; it holds {names[:8]}")
            member = candidates[0]
        info = zf.getinfo(member)
        what = f"{path}: member {member!r}"
        if max_bytes is not None and info.file_size > max_bytes:
            raise StoreError(f"{what} declares {info.file_size} unpacked bytes, {_limit_text(max_bytes, product)} "
                             "(a zip bomb is refused the same way)")
        try:
            stream = zf.open(member)
        except (RuntimeError, NotImplementedError, zipfile.BadZipFile) as exc:  # encrypted, unknown method
            raise StoreError(f"{what}: cannot unpack: {exc}") from None
        with stream:
            data = _bounded(stream, max_bytes, what, product)
    if member.lower().endswith(".gz"):
        data = _gunzip(data, what, max_bytes, product)
    return data, member


def read_document(path, *, max_bytes: int | None = DEFAULT_MAX_BYTES, product: str = "export") -> Document:
    """Read one export file: JSON, JSON Lines (``.jsonl``), gzip (``.gz``) or a zip (the OpenMemory backup).

    The size limit applies to the file and again to the unpacked bytes of a gzip or zip member,
    so a small archive that unpacks to gigabytes is refused with one line.  A JSON value that is
    a string holding JSON (Letta's ``export_file()`` written with ``json.dump``) is decoded once
    more.  A UTF-8 byte-order mark is accepted.

    Raises
    ------
    StoreError
        Naming the file and what is wrong (size with the limit, byte offset, JSON position, line).
    """
    path = os.fspath(path)
    raw = _read_bytes(path, max_bytes, product)
    container, name = "", path
    if raw[:4] == b"PK\x03\x04":
        raw, member = _unzip(raw, path, max_bytes, product)
        container, name = f"zip member {member!r}", member
    elif raw[:2] == b"\x1f\x8b":
        raw = _gunzip(raw, path, max_bytes, product)
        container, name = "gzip", path[:-3] if path.lower().endswith(".gz") else path
    elif _looks_like_pickle(path, raw):
        raise StoreError(_PICKLE_HELP.format(path=path, name=os.path.basename(path)))
    where = path if not container else f"{path} ({container})"
    what = f"{product} export"
    if name.lower().endswith(_JSONL_SUFFIXES):
        data = _json_lines(raw, where, what, max_bytes)
        container = ", ".join(c for c in (container, "JSON Lines") if c)
    else:
        try:
            data = parse_export_json(raw, where, what=what, max_bytes=max_bytes, error=StoreError)
        except StoreError as exc:
            if not _looks_like_json_lines(raw):
                if _truncated(raw):
                    raise StoreError(str(exc).replace(": not valid JSON: ", ": not valid JSON (the file looks "
                                                      "truncated): ", 1)) from None
                raise
            data = _json_lines(raw, where, what, max_bytes)
            container = ", ".join(c for c in (container, "JSON Lines") if c)
        if isinstance(data, str):
            stripped = data.strip()
            if stripped[:1] in ("{", "["):
                data = parse_export_json(stripped.encode("utf-8", "surrogatepass"),
                                         where + " (the JSON string inside the file)", what=what,
                                         max_bytes=max_bytes, error=StoreError)
    if _ESCAPED_SURROGATE.search(raw):
        _refuse_lone_surrogates(data, where)
    return Document(data, container)


def read_json_file(path, *, max_bytes: int | None = DEFAULT_MAX_BYTES, product: str = "export"):
    """The parsed data of :func:`read_document` (for files whose container does not matter)."""
    return read_document(path, max_bytes=max_bytes, product=product).data


def _truncated(raw: bytes) -> bool:
    """Whether JSON the reader refused ends before its first syntax error (only called on that failure)."""
    try:
        json.loads(raw)
    except json.JSONDecodeError as exc:
        return exc.pos >= len(exc.doc.rstrip()) - 1
    except (ValueError, RecursionError):
        return False
    return False


def _looks_like_json_lines(raw: bytes) -> bool:
    """The first two non-empty lines each hold one JSON object (the whole, already, is not one JSON value)."""
    lines = []
    for line in raw.splitlines():
        if line.strip():
            lines.append(line.strip().removeprefix(b"\xef\xbb\xbf"))
            if len(lines) == 2:
                break
    return len(lines) == 2 and all(ln.startswith(b"{") and ln.endswith(b"}") for ln in lines)


def _json_lines(raw: bytes, where: str, what: str, max_bytes) -> JsonLines:
    rows = JsonLines()
    for n, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        rows.append(parse_export_json(line, f"{where}: line {n}", what=what, max_bytes=max_bytes, error=StoreError))
    if not rows:
        raise StoreError(f"{where}: the file is empty; expected one JSON object per line")
    return rows


def _looks_like_pickle(path: str, raw: bytes) -> bool:
    # protocol 2+ pickles start with the PROTO opcode 0x80 followed by the protocol number (2..5); protocol 0 / 1
    # pickles of a dict or list start with MARK "(", EMPTY_DICT "}", EMPTY_LIST "]" or GLOBAL "c" and end with
    # STOP "." -- no JSON text starts with those bytes
    if path.lower().endswith(_PICKLE_SUFFIXES) or (len(raw) >= 2 and raw[0] == 0x80 and 2 <= raw[1] <= 5):
        return True
    return raw[:1] in (b"(", b"}", b"]", b"c") and raw.rstrip()[-1:] == b"."


_PICKLE_HELP = ("{path}: this looks like a Python pickle (e.g. the A-Mem paper code's memory_cache_sample_*.pkl); "
                "memaudit never unpickles files, since loading a pickle runs arbitrary code. Convert it in the Python "
                "environment that wrote it, for example: python -c \"import json, pickle, sys; "
                "d = pickle.load(open(sys.argv[1], 'rb')); json.dump([vars(n) for n in d.values()], "
                "open(sys.argv[2], 'w'), default=str)\" {name} notes.json  and audit notes.json")


_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _refuse_lone_surrogates(data, path: str) -> None:
    """Raise when a string (or key) of ``data`` holds a lone UTF-16 surrogate (``\\ud800`` without its pair).

    JSON allows such escapes but no UTF-8 output can hold them, so they are refused where they are
    read, naming the place, instead of failing when the union package is written.
    """
    stack = [(data, "")]
    while stack:
        value, at = stack.pop()
        if isinstance(value, str):
            bad = _LONE_SURROGATE.search(value)
            if bad:
                if at.startswith(("a key", "a top-level key")):
                    where_ = at
                else:
                    where_ = f"field {at.lstrip('.')!r}" if at else "the top-level string"
                raise StoreError(f"{path}: {where_} holds \\u{ord(bad.group()):04x}, a lone UTF-16 surrogate "
                                 "(half of an escaped pair), which is not text; fix the export's escaping")
        elif isinstance(value, dict):
            for k, v in value.items():
                if _LONE_SURROGATE.search(k):
                    stack.append((k, f"a key of field {at.lstrip('.')!r}" if at else "a top-level key"))
                stack.append((v, f"{at}.{k}"))
        elif isinstance(value, list):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(value))
