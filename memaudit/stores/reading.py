"""The one place stores/ reads export files: plain JSON, JSON Lines, gzip and zip, with size limits on the unpacked bytes.

Every importer gets its parsed data from :func:`read_document`; nothing else in ``stores/``
opens an export file (adjudication files come through :func:`read_json_file`).  Pickles are
refused, never unpickled.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import sys
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

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
    limit = _limit_text(max_bytes, product)
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if max_bytes is not None and size > max_bytes:
                raise StoreError(f"{path}: the file is {size} bytes, {limit}")
            # never trust the size alone (0 for pipes and devices): read at most one byte past the limit
            raw = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
            if max_bytes is not None and len(raw) > max_bytes:
                raise StoreError(f"{path}: the file holds more than {max_bytes} bytes, {limit}")
    except FileNotFoundError:
        raise StoreError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise StoreError(f"{path}: is a directory, not an export file") from None
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the file: {exc.strerror or exc}") from None
    return raw


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
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise StoreError(f"{path}: not UTF-8 text: byte 0x{raw[exc.start]:02x} at offset {exc.start} (line {line}) "
                         f"cannot be decoded ({exc.reason}); export the store as UTF-8 JSON") from None
    where = path if not container else f"{path} ({container})"
    if name.lower().endswith(_JSONL_SUFFIXES) or _is_json_lines(text):
        data = _json_lines(text, where)
        container = ", ".join(c for c in (container, "JSON Lines") if c)
    else:
        data = _loads(text, where)
        if isinstance(data, str):
            stripped = data.strip()
            if stripped[:1] in ("{", "["):
                data = _loads(stripped, where + " (the JSON string inside the file)")
    if _ESCAPED_SURROGATE.search(text):
        _refuse_lone_surrogates(data, where)
    return Document(data, container)


def read_json_file(path, *, max_bytes: int | None = DEFAULT_MAX_BYTES, product: str = "export"):
    """The parsed data of :func:`read_document` (for files whose container does not matter)."""
    return read_document(path, max_bytes=max_bytes, product=product).data


def _is_json_lines(text: str) -> bool:
    """Two or more lines that each start a JSON object, and the whole is not one JSON value."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2 or not all(ln.lstrip().startswith("{") and ln.rstrip().endswith("}") for ln in lines[:2]):
        return False
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


def _json_lines(text: str, where: str) -> JsonLines:
    rows = JsonLines()
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        rows.append(_loads(line, f"{where}: line {n}"))
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


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
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


def _loads(text: str, source: str):
    if not text.strip():
        raise StoreError(f"{source}: the file is empty; expected a JSON export")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        hint = " (the file looks truncated)" if exc.pos >= len(text.rstrip()) - 1 else ""
        raise StoreError(f"{source}: not valid JSON{hint}: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # an integer literal longer than Python's int conversion limit
        raise StoreError(f"{source}: not valid JSON: a number has more than {sys.get_int_max_str_digits()} digits "
                         f"({exc})") from None
    except RecursionError:
        raise StoreError(f"{source}: JSON nested too deeply to be an export") from None



