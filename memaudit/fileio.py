"""Writing files safely: atomically, never half-written."""

from __future__ import annotations

import os
import tempfile

from .errors import MemauditError

__all__ = ["atomic_write"]


def _default_file_mode() -> int:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o644


def atomic_write(path, data: bytes, error=MemauditError) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, fsync, ``os.replace``.

    An existing file keeps its permission bits; a failure raises ``error`` naming the path
    and leaves no temporary file behind.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = _default_file_mode()
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as exc:
        raise error(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise error(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise
