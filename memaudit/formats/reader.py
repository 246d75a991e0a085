"""The one reader of memaudit documents: bounded bytes in, plain JSON data out, every failure one line.

YAML is read by :mod:`memaudit.formats.yamlfile` under the same limits."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import math
import os
import re
import select
import stat
from typing import Any, NamedTuple

from ..errors import InputError
from ..fileio import note_input

__all__ = ["Document", "NonFinite", "read_bytes", "read_json", "parse_json", "json_path", "paused_gc", "MAX_BYTES", "MAX_DEPTH",
           "MAX_CONTAINERS", "MAX_VALUES", "MAX_INT_DIGITS", "MAX_YAML_BYTES", "MAX_ALIAS_NODES", "PIPE_IDLE_SECONDS"]

#: largest input read, in bytes (64 MiB); a reader may pass its own ``max_bytes``
MAX_BYTES = 64 * 2**20
#: deepest nesting of lists / objects accepted (the top-level value is depth 1)
MAX_DEPTH = 100
#: most lists + objects in one document (each costs ~100 bytes of memory once parsed)
MAX_CONTAINERS = 2_000_000
#: most values (about: commas + 1) in one JSON document (each parsed number costs about 32 bytes)
MAX_VALUES = 8_000_000
#: most digits of one integer literal
MAX_INT_DIGITS = 1000
#: largest YAML input read, in bytes (8 MiB: the YAML parser is pure Python, about 1 MiB/s)
MAX_YAML_BYTES = 8 * 2**20
#: most nodes YAML aliases may add to a document when expanded (billion-laughs guard)
MAX_ALIAS_NODES = 100_000
#: longest wait, in seconds, for the next bytes from a pipe (a named pipe with no writer sends none)
PIPE_IDLE_SECONDS = 30.0


class Document(NamedTuple):
    """What a reader returns: the parsed ``data``, the ``raw`` bytes it was parsed from and their ``sha256`` (hex)."""

    data: Any
    raw: bytes
    sha256: str


class NonFinite:
    """What a JSON ``NaN`` / ``Infinity`` / ``-Infinity`` literal parses to with ``nonfinite="mark"``: not a
    number, so the model field it lands in rejects it with that field's path in the message."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


def json_path(path: tuple) -> str:
    """``meta['stats']['xs'][1]`` from a tuple of keys and indices (the grammar of every message)."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f"[{part!r}]" if out else str(part))
    return out or "the top level"


# -- bytes ----------------------------------------------------------------------

def _size(n: int) -> str:
    return f"{n / 2**20:.3g} MiB" if n >= 2**20 else f"{n} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _read_to_end(fd: int, source: str, max_bytes: int, error, *, pipe: bool) -> bytes:
    """Read ``fd`` to its end, holding at most ``max_bytes``; a pipe is read without blocking forever:
    each chunk is waited for at most PIPE_IDLE_SECONDS."""
    poller = None
    if pipe:
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)
    chunks, total = [], 0
    while True:
        if poller is not None and not poller.poll(PIPE_IDLE_SECONDS * 1000):
            state = "no writer sent anything" if not total else f"the writer stopped after {total} bytes"
            raise error(f"{source}: a pipe that stayed silent for {PIPE_IDLE_SECONDS:g} s ({state}); "
                        "memaudit does not wait longer")
        try:
            chunk = os.read(fd, 1 << 20 if pipe else min(1 << 22, max_bytes + 1 - total))
        except BlockingIOError:  # a pipe polled ready with nothing to read yet
            continue
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            raise error(f"{source}: {'a pipe that sent more than' if pipe else 'larger than'} the "
                        f"{_size(max_bytes)} memaudit reads")


def read_bytes(path, *, what: str = "input", max_bytes: int = MAX_BYTES, error=InputError) -> bytes:
    """The bytes of ``path``, read once: a regular file or a pipe (``<(cmd)``, a named pipe), nothing else.

    The file type is checked before anything is read, so ``/dev/zero`` and other devices are refused
    at once, a pipe with no writer gives up after :data:`PIPE_IDLE_SECONDS`, and nothing larger than
    ``max_bytes`` is held.  The file is opened read-only and recorded as an input of the running
    command (see :func:`memaudit.fileio.guard_inputs`).

    Raises
    ------
    error
        One line naming the file and what is wrong with it.
    """
    source = os.fspath(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(source, flags)
    except FileNotFoundError:
        raise error(f"{source}: no such file") from None
    except IsADirectoryError:
        raise error(f"{source}: is a directory, not a {what} file") from None
    except OSError as exc:
        raise error(f"{source}: cannot read the file: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise error(f"{source}: is a directory, not a {what} file")
        if stat.S_ISREG(st.st_mode):
            if st.st_size > max_bytes:
                raise error(f"{source}: {_size(st.st_size)}, larger than the {_size(max_bytes)} memaudit reads")
            os.set_blocking(fd, True)
            raw = _read_to_end(fd, source, max_bytes, error, pipe=False)
        elif stat.S_ISFIFO(st.st_mode):
            raw = _read_to_end(fd, source, max_bytes, error, pipe=True)
        else:
            raise error(f"{source}: is {_kind(st.st_mode)}, not a {what} file (memaudit reads regular files "
                        "and pipes only)")
        note_input(st, source, what)
        return raw
    except OSError as exc:
        raise error(f"{source}: cannot read the file: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


def _text(raw: bytes, source: str, error) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{source}: not UTF-8 text: byte 0x{raw[exc.start]:02x} at offset {exc.start} "
                    f"cannot be decoded ({exc.reason}); save the file as UTF-8") from None


# -- the shape walk shared by JSON and YAML -------------------------------------

def _container_count(raw: bytes) -> int:
    return raw.count(b"[") + raw.count(b"{")


def _check_tree(data, source: str, error, *, max_depth: int, nonfinite: str) -> None:
    """Depth, huge integers and (with ``nonfinite="refuse"``) NaN / infinities, in one iterative walk."""
    stack = [(data, 1, ())]
    while stack:
        node, depth, path = stack.pop()
        if depth > max_depth:
            shown = json_path(path) if len(path) <= 6 else json_path(path[:4]) + "[...]"
            raise error(f"{source}: {shown} is nested more than {max_depth} lists / objects deep, "
                        f"beyond what memaudit reads")
        items = node.items() if type(node) is dict else enumerate(node)
        for key, v in items:
            t = type(v)
            if t is dict or t is list:
                stack.append((v, depth + 1, path + (key,)))
            elif t is int:
                if v.bit_length() > 3 * MAX_INT_DIGITS:
                    raise error(f"{source}: {json_path(path + (key,))} is an integer of more than "
                                f"{MAX_INT_DIGITS} digits, beyond what memaudit reads")
            elif nonfinite == "refuse" and (t is NonFinite or (t is float and not math.isfinite(v))):
                raise error(f"{source}: {json_path(path + (key,))} must be a finite number; got {show_number(v)}")


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_BIG_EXPONENT = re.compile(rb"[eE][+]?0*\d{3}")


_SINGLE_QUOTED = re.compile(rb"'[^']*'")


def _json_depth(raw: bytes, yaml: bool = False) -> int:
    """Deepest nesting of a valid JSON text, at C speed: strings removed, then a running sum over the brackets.

    With ``yaml``, single-quoted strings are removed too; the result is then an estimate of the flow nesting
    (a bracket inside a plain scalar counts), used only with a generous margin."""
    import numpy as np

    if not yaml:
        return _parsed_json_depth(raw)
    stripped = _SINGLE_QUOTED.sub(b"", _STRING.sub(b"", raw))
    brackets = stripped.translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    a = np.frombuffer(brackets, dtype=np.uint8)
    return int(np.cumsum(np.where((a == 0x5B) | (a == 0x7B), 1, -1).astype(np.int32)).max())


def _parsed_json_depth(raw: bytes) -> int:
    """:func:`_json_depth` of JSON text that parsed, in memory linear in the number of quotes and brackets:
    a quote after an odd run of backslashes is escaped, the others delimit strings, and a bracket with an
    odd number of delimiting quotes before it lies inside a string (a regex substitution over the text held
    a piece per string: +240 MiB on an 18 MiB export)."""
    import numpy as np

    a = np.frombuffer(raw, dtype=np.uint8)
    quotes = np.flatnonzero(a == 0x22)
    slashes = np.flatnonzero(a == 0x5C)
    if slashes.size:
        first = np.flatnonzero(np.diff(slashes, prepend=-2) != 1)      # where each run of backslashes starts
        last = np.append(first[1:], slashes.size) - 1
        escaped = slashes[last[(last - first) % 2 == 0]] + 1            # the byte after an odd run
        quotes = np.setdiff1d(quotes, escaped, assume_unique=True)
    opens = np.flatnonzero((a == 0x5B) | (a == 0x7B))
    closes = np.flatnonzero((a == 0x5D) | (a == 0x7D))
    opens = opens[np.searchsorted(quotes, opens) % 2 == 0]
    closes = closes[np.searchsorted(quotes, closes) % 2 == 0]
    if not opens.size:
        return 0
    order = np.argsort(np.concatenate([opens, closes]), kind="stable")
    steps = np.concatenate([np.ones(opens.size, np.int32), -np.ones(closes.size, np.int32)])[order]
    return int(np.cumsum(steps).max())


def _limits(raw: bytes, source: str, error, max_containers: int, max_values: int) -> None:
    n = _container_count(raw)
    if n > max_containers:
        raise error(f"{source}: holds about {n:,} lists / objects, more than the {max_containers:,} memaudit "
                    "reads in one document")
    n = raw.count(b",") + 1
    if n > max_values:
        raise error(f"{source}: holds about {n:,} values (commas), more than the {max_values:,} memaudit reads "
                    "in one document")


def _too_deep(source: str, max_depth: int, fmt: str) -> str:
    return (f"{source}: nested more than {max_depth} lists / {'mappings' if fmt == 'YAML' else 'objects'} deep, "
            "beyond what memaudit reads")


def _parse_failure(exc: BaseException, source: str, fmt: str, max_depth: int, error):
    """The one-line error (of class ``error``) of a JSON or YAML parser that failed: too deep for Python's
    recursion, or any other parser error as ``not valid <fmt>: <its message on one line>``."""
    if isinstance(exc, RecursionError):
        return error(_too_deep(source, max_depth, fmt))
    return error(f"{source}: not valid {fmt}: {' '.join(str(exc).split())}")


# -- JSON -------------------------------------------------------------------------

class _Refused(Exception):
    pass


def _object(pairs):
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    seen = set()
    key = next(k for k, _ in pairs if k in seen or seen.add(k))     # the first key seen twice
    ids = [v for k, v in pairs if k == "id" and isinstance(v, str)]
    where = f" (the object with id {ids[0]!r})" if ids else ""
    raise _Refused(f"key {key!r} appears twice in one JSON object{where}; JSON keys must be unique")


_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))


def _long_digit_run(raw: bytes) -> bool:
    """True when ``raw`` holds a run of more than MAX_INT_DIGITS digits (only then can an integer literal be too
    long, and only then is every one checked in Python): a byte translation and a substring search, at C speed."""
    return b"0" * (MAX_INT_DIGITS + 1) in raw.translate(_DIGITS_AS_ZERO)


@contextlib.contextmanager
def paused_gc():
    """The cyclic garbage collector off inside the block (and back on after, if it was on).

    Parsing and validating a document builds hundreds of thousands of containers and no cycles;
    the collector's passes over them were a third of a large package's load time."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _int(s: str) -> int:
    if len(s.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {len(s.lstrip('-')):,} digits ({s[:12]}...), more than the "
                       f"{MAX_INT_DIGITS} memaudit reads")
    return int(s)


def parse_json(raw: bytes, source: str = "<json>", *, what: str = "document", error=InputError,
               max_depth: int = MAX_DEPTH, max_containers: int = MAX_CONTAINERS, max_values: int = MAX_VALUES,
               nonfinite: str = "refuse"):
    """Parse JSON bytes under the reader's rules (BOM accepted; duplicate keys, NaN literals unless
    ``nonfinite="mark"``, deep nesting, huge integers and too many containers refused)."""
    text = _text(raw, source, error)
    if not text.strip():
        raise error(f"{source}: the file is empty; expected a JSON {what}")
    _limits(raw, source, error, max_containers, max_values)
    literals: list[NonFinite] = []

    def constant(name: str) -> NonFinite:
        literals.append(NonFinite(name))
        return literals[-1]

    hooks = {"parse_int": _int} if _long_digit_run(raw) else {}   # Python's own int() otherwise
    try:
        with paused_gc():
            data = json.loads(text, object_pairs_hook=_object, parse_constant=constant, **hooks)
    except _Refused as exc:
        raise error(f"{source}: not valid JSON: {exc}") from None
    except json.JSONDecodeError as exc:
        raise error(f"{source}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (RecursionError, ValueError) as exc:  # a ValueError: e.g. a float literal Python cannot convert
        raise _parse_failure(exc, source, "JSON", max_depth, error) from None
    # the walk (in Python) runs only when a cheap scan says there is something to find
    deep = isinstance(data, (dict, list)) and _json_depth(raw) > max_depth
    odd = nonfinite == "refuse" and (literals or _BIG_EXPONENT.search(raw))
    if deep or odd:
        if isinstance(data, (dict, list)):
            _check_tree(data, source, error, max_depth=max_depth, nonfinite=nonfinite)
        if nonfinite == "refuse" and isinstance(data, (NonFinite, float)):
            raise error(f"{source}: the top level must be a finite number; got {show_number(data)}")
    return data


def show_number(v) -> str:
    if isinstance(v, NonFinite):
        return v.name
    return repr(v) if math.isfinite(v) else ("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))


def read_json(path, *, what: str = "document", max_bytes: int = MAX_BYTES, error=InputError,
              max_depth: int = MAX_DEPTH, max_containers: int = MAX_CONTAINERS, max_values: int = MAX_VALUES,
              nonfinite: str = "refuse") -> Document:
    """Read ``path`` once and parse it as JSON: ``(data, raw_bytes, sha256)``.

    ``what`` names the document in messages ("package", "certificate", ...); ``error`` is the
    :class:`~memaudit.errors.MemauditError` subclass raised.  See :func:`read_bytes` and
    :func:`parse_json` for the rules.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False) as fh:
    ...     _ = fh.write(b'{"a": [1, 2]}')
    >>> data, raw, sha256 = read_json(fh.name, what="example")
    >>> data, raw, sha256 == hashlib.sha256(b'{"a": [1, 2]}').hexdigest()
    ({'a': [1, 2]}, b'{"a": [1, 2]}', True)
    >>> os.unlink(fh.name)
    """
    source = os.fspath(path)
    raw = read_bytes(source, what=what, max_bytes=max_bytes, error=error)
    data = parse_json(raw, source, what=what, error=error, max_depth=max_depth, max_containers=max_containers,
                      max_values=max_values, nonfinite=nonfinite)
    return Document(data, raw, hashlib.sha256(raw).hexdigest())
