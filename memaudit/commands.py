"""The one runner of user-given commands (harness readers and judges, the adjudication judge): cached, retried, group-killed.

A command is any program that reads one prompt on standard input and prints its answer
(``claude -p``, ``llm -m MODEL``, ``ollama run MODEL``).  :func:`run_command` runs it without a
shell, in its own process group (a time-out kills the whole group, the children of a wrapper
script too), retries failures with exponential back-off, and caches answers on disk.

The cache layout is shared by every caller, so one ``--cache-dir`` serves ``memaudit adjudicate``
and ``memaudit harness run`` alike: ``DIR/<k[:2]>/<k>.json`` where ``k`` is the SHA-256 of the
JSON array ``[argv, prompt]``; the entry is ``{"command": argv, "prompt_sha256", "output"}``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import time
from typing import Callable

from .errors import MemauditError

__all__ = ["CommandError", "DEFAULT_TIMEOUT", "DEFAULT_RETRIES", "DEFAULT_BACKOFF", "MAX_SECONDS", "split_command",
           "check_run_settings", "check_program", "cache_path", "run_command"]

#: seconds one run may take before its process group is killed
DEFAULT_TIMEOUT = 120.0
#: extra attempts after a failed run (non-zero exit, time-out, empty output)
DEFAULT_RETRIES = 2
#: seconds before the first retry; doubled before each further one
DEFAULT_BACKOFF = 1.0
#: longest time-out and back-off accepted (a day): beyond that a finite number still overflows sleep()
MAX_SECONDS = 86400.0


class CommandError(MemauditError, ValueError):
    """A command cannot be parsed or run, or still fails after its retries; names the command and the item."""


def split_command(cmd, what: str, *, error: type[Exception] = CommandError) -> list[str]:
    """A command string split like a POSIX shell would (no shell is run); a list is taken as argv.

    Examples
    --------
    >>> split_command("llm -m 'gpt 4'", "the judge command")
    ['llm', '-m', 'gpt 4']
    >>> split_command("", "the judge command")
    Traceback (most recent call last):
    ...
    memaudit.commands.CommandError: the judge command is empty; give a command such as "claude -p"
    """
    if isinstance(cmd, (list, tuple)):
        argv = [str(a) for a in cmd]
    else:
        try:
            argv = shlex.split(cmd or "")
        except ValueError as exc:
            raise error(f"{what} {cmd!r} cannot be parsed: {exc}") from None
    if not argv:
        raise error(f"{what} is empty; give a command such as \"claude -p\"")
    return argv


def check_run_settings(what: str, timeout, retries, backoff, *, error: type[Exception] = CommandError) -> None:
    """Refuse a time-out outside (0, a day], negative or non-integer retries, a back-off outside [0, a day]."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) \
            or not 0 < timeout <= MAX_SECONDS:
        raise error(f"{what}: timeout must be a finite number of seconds in (0, {MAX_SECONDS:g}]; got {timeout!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise error(f"{what}: retries must be an integer >= 0; got {retries!r}")
    if isinstance(backoff, bool) or not isinstance(backoff, (int, float)) or not math.isfinite(backoff) \
            or not 0 <= backoff <= MAX_SECONDS:
        raise error(f"{what}: backoff must be a finite number of seconds in [0, {MAX_SECONDS:g}]; got {backoff!r}")


def cache_path(cache_dir, argv: list[str], prompt: str) -> str:
    """Where the answer of ``argv`` to ``prompt`` is cached under ``cache_dir``.

    Examples
    --------
    >>> p = cache_path("c", ["llm"], "hi")
    >>> p.startswith("c/") and p.endswith(".json") and p.split("/")[1] == p.split("/")[2][:2]
    True
    """
    key = hashlib.sha256(json.dumps([list(argv), prompt], ensure_ascii=False).encode("utf-8")).hexdigest()
    return os.path.join(os.fspath(cache_dir), key[:2], key + ".json")


def _read_cache(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            out = json.load(fh)["output"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent or damaged: asked again and rewritten
    return out if isinstance(out, str) else None


def _write_cache(path: str, argv: list[str], prompt: str, out: str, what: str, error) -> None:
    from .fileio import atomic_write

    label = f"{what} {shlex.join(argv)!r}"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as exc:
        raise error(f"{label}: cannot write the cache entry {path}: {exc.strerror or exc}") from None
    doc = {"command": list(argv), "prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(), "output": out}
    try:
        atomic_write(path, json.dumps(doc, ensure_ascii=False).encode("utf-8"), error=error)
    except error as exc:
        raise error(f"{label}: cannot write the cache entry ({exc})") from None


def check_program(argv: list[str], what: str = "command", *, error: type[Exception] = CommandError) -> None:
    """Raise ``error`` with :func:`run_command`'s own words when ``argv[0]`` cannot be started (not
    found, not executable), before anything is created on disk for the run."""
    prog = argv[0]
    found = prog if os.sep in prog else shutil.which(prog, mode=os.F_OK)
    label = f"{what} {shlex.join(argv)!r}"
    if not found or not os.path.exists(found):
        raise error(f"{label}: program {prog!r} not found")
    if os.path.isdir(found) or not os.access(found, os.X_OK):
        raise error(f"{label}: program {prog!r} is not executable")


def run_command(argv: list[str], prompt: str, *, timeout: float = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES,
                backoff: float = DEFAULT_BACKOFF, cache_dir=None, what: str = "command", item: str = "",
                check: Callable[[str], object] | None = None,
                error: type[Exception] = CommandError) -> tuple[str, bool]:
    """Send ``prompt`` to the command ``argv`` on standard input; return (stripped output, cached).

    A run that exits non-zero, times out or prints nothing is retried ``retries`` times, waiting
    ``backoff``, then ``2 * backoff``, ``4 * backoff``, ... seconds before each retry.  The command
    runs in its own process group; on a time-out (or Ctrl-C) the whole group is killed.  With
    ``cache_dir``, a good output is cached (see the module docstring) and a rerun asks nothing
    twice.  ``check``, when given, is called on a fresh output before it is cached: whatever it
    raises propagates and nothing is cached, so an unusable answer is asked again next time.

    Raises
    ------
    error (CommandError unless the caller names its own class)
        The command cannot be started, still fails after the retries, or its output cannot be
        cached; the message names the command, the ``item`` and the last failure.
    """
    path = cache_path(cache_dir, argv, prompt) if cache_dir else None
    if path:
        hit = _read_cache(path)
        if hit is not None:
            return hit, True
    label = f"{what} {shlex.join(argv)!r}"
    last = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(min(MAX_SECONDS, backoff * 2.0 ** min(attempt - 1, 60)))
        try:
            returncode, stdout, stderr = _run_once(argv, prompt, timeout)
        except FileNotFoundError:
            raise error(f"{label}: program {argv[0]!r} not found") from None
        except PermissionError:
            raise error(f"{label}: program {argv[0]!r} is not executable") from None
        except OSError as exc:
            raise error(f"{label}: program {argv[0]!r} cannot be run: {exc.strerror or exc}") from None
        except subprocess.TimeoutExpired:
            last = f"timed out after {timeout:g} s"
            continue
        if returncode != 0:
            err = stderr.decode("utf-8", errors="replace").strip().splitlines()
            last = f"exit status {returncode}" + (f": {err[-1]}" if err else "")
            continue
        try:
            out = stdout.decode("utf-8").strip()
        except UnicodeDecodeError as exc:  # not retried: the same program prints the same bytes
            raise error(f"{label}{_for(item)} answered bytes that are not UTF-8 (byte 0x{stdout[exc.start]:02x} at "
                        f"offset {exc.start}); make it print UTF-8 text") from None
        if not out:
            last = "empty output"
            continue
        if check is not None:
            check(out)
        if path:
            _write_cache(path, argv, prompt, out, what, error)
        return out, False
    raise error(f"{label} failed{_for(item)} after {retries + 1} attempt(s): {last}")


def _for(item: str) -> str:
    return f" for {item}" if item else ""


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and everything in its process group (it was started as a group leader)."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - not POSIX
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _run_once(argv: list[str], prompt: str, timeout: float) -> tuple[int, bytes, bytes]:
    """One run of ``argv`` in a new session (so a time-out kills its children too): exit status, stdout, stderr."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(prompt.encode("utf-8"), timeout=timeout)
    except BaseException:  # a time-out, or Ctrl-C: leave no process behind
        _kill_group(proc)
        try:
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a descendant left the group and holds the pipes
            for fh in (proc.stdout, proc.stderr):
                fh.close()
            proc.wait()
        raise
    return proc.returncode, stdout, stderr
