"""memaudit.commands: the one runner of reader, judge and adjudication commands."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from memaudit.commands import CommandError, cache_path, check_run_settings, run_command, split_command


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_timeout_kills_the_child_of_a_shell_wrapper(tmp_path):
    # the adjudication judge used to leave this child running after its time-out
    pid_file = tmp_path / "pid"
    argv = ["sh", "-c", f"sleep 47 & echo $! > {pid_file}; wait"]
    t0 = time.monotonic()
    with pytest.raises(CommandError, match=r"failed for m1 after 1 attempt\(s\): timed out after 0.5 s"):
        run_command(argv, "prompt", timeout=0.5, retries=0, item="m1")
    assert time.monotonic() - t0 < 10
    pid = int(pid_file.read_text())
    for _ in range(100):
        if not _alive(pid):
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        pytest.fail(f"the wrapper's child {pid} (sleep 47) outlived the time-out")


def test_cache_layout_is_shared_and_failures_are_not_cached(tmp_path):
    log = tmp_path / "log"
    argv = [sys.executable, "-c", f"import sys; open({str(log)!r}, 'a').write('x'); print(sys.stdin.read().upper())"]
    out, cached = run_command(argv, "hello", cache_dir=tmp_path / "c")
    assert (out, cached) == ("HELLO", False)
    entry = cache_path(tmp_path / "c", argv, "hello")
    assert json.loads(open(entry, encoding="utf-8").read())["output"] == "HELLO"
    assert os.path.basename(os.path.dirname(entry)) == os.path.basename(entry)[:2]
    assert run_command(argv, "hello", cache_dir=tmp_path / "c") == ("HELLO", True)
    assert log.read_text() == "x"  # asked once

    def refuse(text):
        raise CommandError("unusable")

    with pytest.raises(CommandError, match="unusable"):
        run_command(argv, "other", cache_dir=tmp_path / "c", check=refuse)
    assert not os.path.exists(cache_path(tmp_path / "c", argv, "other"))


def test_retries_then_one_line_error(tmp_path):
    argv = [sys.executable, "-c", "import sys; print('busy', file=sys.stderr); sys.exit(4)"]
    t0 = time.monotonic()
    with pytest.raises(CommandError, match=r"after 3 attempt\(s\): exit status 4: busy"):
        run_command(argv, "p", retries=2, backoff=0.05)
    assert time.monotonic() - t0 >= 0.15  # waited 0.05 then 0.1


def test_non_utf8_answer_and_unstartable_programs(tmp_path):
    argv = [sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'\\xff{}')"]
    with pytest.raises(CommandError, match=r"answered bytes that are not UTF-8 \(byte 0xff at offset 0\)"):
        run_command(argv, "p", retries=0)
    with pytest.raises(CommandError, match="program 'no-such-program-xyz' not found"):
        run_command(["no-such-program-xyz"], "p")
    with pytest.raises(CommandError, match="cannot be parsed"):
        split_command("echo 'oops", "the judge command")
    with pytest.raises(CommandError, match="timeout must be a finite number"):
        check_run_settings("the judge command", float("nan"), 1, 1.0)
