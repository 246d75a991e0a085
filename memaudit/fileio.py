"""Writing files safely: atomically, never half-written, never over an input of the running command.

Every writer goes through :func:`atomic_write`:

- the data goes to a temporary file in the target's folder, named ``.<name>.<pid>.<random>.memaudit-tmp``,
  which is fsynced and then renamed over the target in one step; a temporary file left behind by a
  killed write (its process is gone) is removed by the next write to the same target;
- a target that is a symbolic link is written *through*: the file the link points to is replaced
  and the link stays;
- a target that exists and is not a regular file (a named pipe, a device, a directory, a socket) is
  refused with a one-line error, never replaced by a regular file;
- inside :func:`guard_inputs` (the CLI opens one around every command), a target that is a file the
  command has read (every :mod:`memaudit.formats` reader notes what it reads) is refused.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import stat
import tempfile

from .errors import MemauditError

__all__ = ["atomic_write", "write_files", "check_output", "guard_inputs", "note_input", "check_not_input",
           "TEMP_SUFFIX"]

#: how every temporary file of :func:`atomic_write` ends
TEMP_SUFFIX = ".memaudit-tmp"

_inputs: contextvars.ContextVar[dict | None] = contextvars.ContextVar("memaudit_inputs", default=None)


@contextlib.contextmanager
def guard_inputs():
    """Within this block, :func:`atomic_write` refuses to replace any file :func:`note_input` recorded."""
    token = _inputs.set({})
    try:
        yield
    finally:
        _inputs.reset(token)


def note_input(st: os.stat_result, source: str, what: str) -> None:
    """Record that the running command read ``source`` (its ``fstat``) as its ``what``."""
    seen = _inputs.get()
    if seen is not None and stat.S_ISREG(st.st_mode):
        seen.setdefault((st.st_dev, st.st_ino), (source, what))


def check_not_input(path, error=MemauditError) -> None:
    """Raise ``error`` when ``path`` (following links) is a file the running command has read."""
    seen = _inputs.get()
    if not seen:
        return
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except OSError:
        return
    hit = seen.get((st.st_dev, st.st_ino))
    if hit is not None:
        source, what = hit
        same = "" if os.path.abspath(source) == os.path.abspath(path) else f" ({source})"
        raise error(f"{path}: refusing to write over the {what}{same} this command reads; "
                    "no command writes over its inputs: choose another output path")


def _default_file_mode() -> int:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o644


_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _temp_prefix(target: str) -> str:
    return f".{os.path.basename(target)[:100]}."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def _clean_stale_temps(directory: str, prefix: str) -> None:
    """Remove ``<prefix><pid>.<random>.memaudit-tmp`` files of processes that no longer run."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)\.[^.]+" + re.escape(TEMP_SUFFIX) + "$")
    try:
        names = [n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith(TEMP_SUFFIX)]
    except OSError:
        return
    for name in names:
        m = pattern.match(name)
        if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))


def check_output(path, error=MemauditError) -> int:
    """Refuse ``path`` as an output (not a regular file, or one of the command's inputs) and return
    the permission bits the written file gets.  :func:`atomic_write` calls it; a command calls it
    early too, so a bad ``-o`` fails before any work is done."""
    path = os.fspath(path)
    target = os.path.realpath(path) if os.path.islink(path) else path
    try:
        st = os.stat(target)
    except FileNotFoundError:
        mode = _default_file_mode()
    except OSError as exc:
        raise error(f"{path}: cannot write: {exc.strerror or exc}") from None
    else:
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{path}: is {_kind(st.st_mode)}, not a regular file; memaudit writes its outputs "
                        "atomically to regular files only: choose a file path")
        mode = st.st_mode & 0o7777
    check_not_input(path, error)
    return mode


def atomic_write(path, data: bytes | str, error=MemauditError) -> None:
    """Write ``data`` (str is UTF-8 encoded) to ``path`` atomically; see the module docstring for the rules.

    An existing file keeps its permission bits; a failure raises ``error`` naming the path
    and leaves no temporary file behind.
    """
    path = os.fspath(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    mode = check_output(path, error)
    target = os.path.realpath(path) if os.path.islink(path) else path
    directory = os.path.dirname(os.path.abspath(target))
    prefix = _temp_prefix(target)
    _clean_stale_temps(directory, prefix)
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f"{prefix}{os.getpid()}.", suffix=TEMP_SUFFIX)
    except OSError as exc:
        raise error(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise error(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise


def write_files(out_dir, files: dict[str, bytes | str], *, error=MemauditError, flag: str = "--out") -> list[str]:
    """Write every ``{name: data}`` of ``files`` into the directory ``out_dir`` (created if needed), each
    file with :func:`atomic_write`; the paths written, in order.  A file at ``out_dir`` is refused,
    naming the option ``flag`` that gave it."""
    out_dir = os.fspath(out_dir)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise error(f"{out_dir}: {flag} must be a directory; a file of that name exists")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise error(f"{out_dir}: cannot create the output directory: {exc.strerror or exc}") from None
    paths = []
    for name, data in files.items():
        path = os.path.join(out_dir, name)
        atomic_write(path, data, error=error)
        paths.append(path)
    return paths
