"""Tests of memaudit.formats (the one reader and the translator) and memaudit.fileio (atomic writes, the input guard).

The pathological inputs of the reliability review run in a fresh Python process each, whose own peak
RSS (``ru_maxrss``) and wall time are measured and capped, so the caps are measured, not guessed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from memaudit import fileio
from memaudit.errors import InputError, MemauditError, PackageError
from memaudit.fileio import TEMP_SUFFIX, atomic_write, guard_inputs
from memaudit.formats import (MAX_ALIAS_NODES, MAX_DEPTH, MAX_INT_DIGITS, NonFinite, escape_control, parse_json,
                              parse_yaml, read_bytes, read_document, read_json, read_yaml)
from memaudit.formats import reader as reader_module

ROOT = Path(__file__).resolve().parents[1]


def _write(tmp_path, content, name="doc.json"):
    p = tmp_path / name
    (p.write_bytes if isinstance(content, bytes) else p.write_text)(content)
    return p


# -- JSON rules ---------------------------------------------------------------------

def test_read_json_returns_data_raw_bytes_and_their_sha256(tmp_path):
    raw = b'\xef\xbb\xbf{"a": [1, 2.5, "x"]}'  # with a UTF-8 byte-order mark
    doc = read_json(_write(tmp_path, raw))
    data, got_raw, sha = doc
    assert data == {"a": [1, 2.5, "x"]} and got_raw == raw and sha == hashlib.sha256(raw).hexdigest()


def test_duplicate_keys_are_refused(tmp_path):
    with pytest.raises(InputError, match=r"doc\.json: not valid JSON: key 'opt' appears twice in one JSON object"):
        read_json(_write(tmp_path, '{"opt": 99, "opt": 10}'))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_are_refused_with_their_path(tmp_path, literal):
    p = _write(tmp_path, '{"meta": {"xs": [1, %s]}}' % literal)
    shown = "Infinity" if literal == "1e999" else literal
    with pytest.raises(InputError, match=rf"meta\['xs'\]\[1\] must be a finite number; got {shown}$"):
        read_json(p)


def test_nonfinite_mark_leaves_the_literal_to_the_model():
    data = parse_json(b'{"x": NaN}', nonfinite="mark")
    assert isinstance(data["x"], NonFinite) and repr(data["x"]) == "NaN"


@pytest.mark.parametrize("content, match", [
    ("", "the file is empty"),
    ("{not json", "not valid JSON: Expecting property name"),
    (b"\xff\xfe{}", "not UTF-8 text: byte 0xff at offset 0"),
])
def test_malformed_json_is_one_line(tmp_path, content, match):
    with pytest.raises(InputError, match=match):
        read_json(_write(tmp_path, content))


def test_nesting_beyond_the_depth_limit(tmp_path):
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert read_json(_write(tmp_path, ok, "ok.json")).data is not None
    deep = '{"meta": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}"
    with pytest.raises(InputError, match=rf"meta(\[0\])+\[\.\.\.\] is nested more than {MAX_DEPTH} lists / "
                                         "objects deep"):
        read_json(_write(tmp_path, deep))


def test_huge_integers_are_one_line(tmp_path):
    with pytest.raises(InputError, match=rf"an integer of 5,000 digits \(111111111111\.\.\.\), more than the "
                                         rf"{MAX_INT_DIGITS}"):
        read_json(_write(tmp_path, '{"budget": %s}' % ("1" * 5000)))
    # 400 digits are read (the models refuse them as numbers no solver can state)
    assert read_json(_write(tmp_path, '{"budget": %s}' % ("9" * 400), "b.json")).data["budget"] == int("9" * 400)


@pytest.mark.parametrize("digits, refused", [(MAX_INT_DIGITS, False), (MAX_INT_DIGITS + 1, True), (4301, True)])
def test_the_integer_limit_is_exact_at_its_edge(digits, refused):
    # a run of more than MAX_INT_DIGITS digits switches on the per-integer check; at the limit Python's int() reads it
    doc = b'{"budget": -%s}' % (b"7" * digits)
    if refused:
        with pytest.raises(InputError, match=rf"an integer of {digits:,} digits \(-77777777777\.\.\.\), more than"):
            parse_json(doc)
    else:
        assert parse_json(doc)["budget"] == -int("7" * digits)


def test_a_long_digit_run_in_a_string_is_only_text():
    data = parse_json(b'{"text": "%s", "n": 12}' % (b"5" * 5000))
    assert data == {"text": "5" * 5000, "n": 12} and type(data["n"]) is int


def test_the_first_key_seen_twice_is_named():
    with pytest.raises(InputError, match=r"key 'b' appears twice in one JSON object \(the object with id 'x'\)"):
        parse_json(b'{"id": "x", "a": 1, "b": 2, "b": 3, "a": 4}')


def test_parsing_leaves_the_garbage_collector_as_it_was():
    import gc

    assert gc.isenabled()
    parse_json(b'{"a": [1, 2]}')
    with pytest.raises(InputError):
        parse_json(b'{"a": 1, "a": 2}')
    assert gc.isenabled()
    gc.disable()
    try:
        parse_json(b'{"a": [1, 2]}')
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_size_limit(tmp_path):
    p = _write(tmp_path, json.dumps({"text": "x" * 5000}))
    with pytest.raises(InputError, match=r"doc\.json: 5\d{3} bytes, larger than the 4096 bytes memaudit reads"):
        read_json(p, max_bytes=4096)
    assert read_json(p, max_bytes=8192).data["text"] == "x" * 5000


def test_too_many_values(tmp_path):
    p = _write(tmp_path, "[" + ",".join(["1.5"] * 1001) + "]")
    with pytest.raises(InputError, match=r"holds about 1,001 values \(commas\), more than the 1,000"):
        parse_json(p.read_bytes(), max_values=1000)
    assert len(read_json(p, max_values=2000).data) == 1001


def test_too_many_containers(tmp_path):
    p = _write(tmp_path, "[" + ",".join(["[]"] * 1001) + "]")
    with pytest.raises(InputError, match=r"holds about 1,002 lists / objects, more than the 1,000"):
        read_json(p, max_containers=1000)


def test_error_class_and_what_name_the_document(tmp_path):
    with pytest.raises(PackageError, match=r"is a directory, not a package file"):
        read_json(tmp_path, what="package", error=PackageError)
    with pytest.raises(PackageError, match=r"nope\.json: no such file"):
        read_json(tmp_path / "nope.json", what="package", error=PackageError)


# -- file types: never hang, never read without end ------------------------------------

def test_character_devices_are_refused_before_reading():
    started = time.perf_counter()
    with pytest.raises(InputError, match=r"/dev/zero: is a character device, not a package file"):
        read_json("/dev/zero", what="package")
    assert time.perf_counter() - started < 1.0


def test_named_pipe_with_no_writer_gives_up(tmp_path, monkeypatch):
    monkeypatch.setattr(reader_module, "PIPE_IDLE_SECONDS", 0.3)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    started = time.perf_counter()
    with pytest.raises(InputError, match=r"fifo\.json: a pipe that stayed silent for 0\.3 s \(no writer sent"):
        read_json(fifo)
    assert time.perf_counter() - started < 2.0


def test_named_pipe_with_a_writer_is_read_once(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    raw = json.dumps({"a": list(range(50_000))}).encode()  # more than a pipe buffer

    def writer():
        with open(fifo, "wb") as fh:
            fh.write(raw)

    t = threading.Thread(target=writer)
    t.start()
    doc = read_json(fifo)
    t.join(5)
    assert doc.data["a"][-1] == 49_999 and doc.sha256 == hashlib.sha256(raw).hexdigest()


def test_anonymous_pipe_like_process_substitution():
    r, w = os.pipe()
    raw = b'{"x": 1}'
    os.write(w, raw)
    os.close(w)
    try:
        doc = read_json(f"/dev/fd/{r}")
    finally:
        os.close(r)
    assert doc.data == {"x": 1} and doc.sha256 == hashlib.sha256(raw).hexdigest()


def test_endless_pipe_stops_at_the_size_limit():
    proc = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    try:
        with pytest.raises(InputError, match=r"a pipe that sent more than the 1 MiB memaudit reads"):
            read_bytes(f"/dev/fd/{proc.stdout.fileno()}", max_bytes=2**20)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


# -- YAML ---------------------------------------------------------------------------------

def test_yaml_safe_and_duplicate_keys(tmp_path):
    assert read_yaml(_write(tmp_path, "a: 1\nb: [x, y]\n", "d.yaml")).data == {"a": 1, "b": ["x", "y"]}
    with pytest.raises(InputError, match=r"not valid YAML: .*key 'a' appears twice"):
        read_yaml(_write(tmp_path, "a: 1\na: 2\n", "dup.yaml"))
    with pytest.raises(InputError, match="not valid YAML"):
        read_yaml(_write(tmp_path, "x: !!python/object/apply:os.system ['true']\n", "evil.yaml"))


def _laughs(levels: int, width: int = 9) -> str:
    lines = ['a0: &a0 "lol"']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "meta:\n" + textwrap.indent("\n".join(lines), "  ") + "\n"


def test_yaml_billion_laughs_is_refused(tmp_path):
    with pytest.raises(InputError, match=rf"its aliases expand it by [\d,]+ nodes, more than the "
                                         rf"{MAX_ALIAS_NODES:,}"):
        parse_yaml(_laughs(9).encode(), "laughs.yaml")
    # a few aliases that add little are fine
    assert parse_yaml(_laughs(2, 3).encode())["meta"]["a2"] == [["lol"] * 3] * 3


def test_yaml_recursive_alias_is_refused():
    with pytest.raises(InputError, match="an alias refers to a node that contains it"):
        parse_yaml(b"a: &x [1, *x]\n")


def test_read_document_by_extension(tmp_path):
    assert read_document(_write(tmp_path, "a: 1\n", "s.yml")).data == {"a": 1}
    assert read_document(_write(tmp_path, '{"a": 1}', "s.json")).data == {"a": 1}


# -- resource caps, measured in a fresh process -------------------------------------------

_PROBE = """
import importlib, json, sys, time
from memaudit.errors import MemauditError

def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(key))

for path, module, func in json.loads(sys.argv[1]):
    load = getattr(importlib.import_module(module), func)
    with open("/proc/self/clear_refs", "w") as fh:  # reset the peak (VmHWM) to the current RSS
        fh.write("5")
    before = status("VmRSS:")
    t = time.perf_counter()
    try:
        load(path)
        outcome = "accepted"
    except MemauditError as exc:
        outcome = "error: " + str(exc)
    print(json.dumps([outcome[:300], (status("VmHWM:") - before) // 1024, round(time.perf_counter() - t, 2)]))
"""


def _measure(cases):
    """[(outcome, peak RSS in MiB above the RSS just before the call, seconds)] of each (path, module, function),
    called one after the other in one fresh process."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps([[str(p), m, f] for p, m, f in cases])],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return [tuple(json.loads(line)) for line in proc.stdout.strip().splitlines()]


PACKAGE_LOADER = ("memaudit.package", "load_package")
SCENARIO_LOADER = ("memaudit.harness.scenario", "load_scenario")

#: (file name, content, loader, part of the one-line error) of each pathological input of the review
PATHOLOGICAL = [
    ("deep-100k.json", "[" * 100_000 + "]" * 100_000, PACKAGE_LOADER, "nested more than 100 lists / objects deep"),
    ("meta-500-deep.json", '{"format": "memaudit-package/1", "meta": ' + "[" * 500 + "]" * 500 + "}", PACKAGE_LOADER,
     "nested more than 100"),
    ("int-5000-digits.json", '{"budget": ' + "7" * 5000 + "}", PACKAGE_LOADER, "an integer of 5,000 digits"),
    ("laughs.yaml", _laughs(9), SCENARIO_LOADER, "aliases expand it"),
    ("deep.yaml", "[" * 1000 + "]" * 1000, SCENARIO_LOADER, "nested more than 100"),
    ("deep-block.yaml", "".join("  " * i + "- \n" for i in range(300)) + "  " * 300 + "- x\n", SCENARIO_LOADER,
     "nested more than 100"),
    ("zero", None, PACKAGE_LOADER, "is a character device"),
]
LARGE = [
    ("empty-lists-64MiB.json", "[" + "[]," * (64 * 2**20 // 3 - 2) + "[]]", PACKAGE_LOADER,
     "lists / objects, more than"),
    ("floats-63MiB.json", "[" + ",".join(["1.5"] * (63 * 2**20 // 4)) + "]", ("memaudit.formats", "read_json"),
     "values (commas), more than"),
]


def _check_caps(tmp_path, cases, max_mib):
    paths = []
    for name, content, (module, func), _ in cases:
        paths.append(("/dev/zero" if content is None else _write(tmp_path, content, name), module, func))
    for (name, _, _, match), (outcome, extra_mib, seconds) in zip(cases, _measure(paths)):
        assert outcome.startswith("error: ") and match in outcome, (name, outcome)
        assert extra_mib < max_mib, f"{name}: {extra_mib} MiB above the RSS before the call"
        assert seconds < 10, f"{name}: {seconds} s"


def test_pathological_inputs_are_refused_in_bounded_memory_and_time(tmp_path):
    _check_caps(tmp_path, PATHOLOGICAL, 50)


@pytest.mark.slow
def test_64_mib_inputs_are_refused_in_bounded_memory_and_time(tmp_path):
    # the file is held once as bytes and once as text (128 MiB); parsing must not multiply it
    _check_caps(tmp_path, LARGE, 200)


# -- escaping -------------------------------------------------------------------------------

def test_escape_control():
    assert escape_control("id\x1b[2J\r\nerror: x\x00\x7f\x9b\u2028ok") == \
        "id\\x1b[2J\\r\\nerror: x\\x00\\x7f\\x9b\\u2028ok"
    assert escape_control("plain ünïcode – fine") == "plain ünïcode – fine"


# -- atomic writes ------------------------------------------------------------------------

def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temp_files_are_recognisable_and_stale_ones_cleaned(tmp_path):
    target = tmp_path / "cert.json"
    stale = tmp_path / f".cert.json.{_dead_pid()}.abc123{TEMP_SUFFIX}"
    stale.write_text("half a certif")
    live = tmp_path / f".cert.json.{os.getppid()}.zzz999{TEMP_SUFFIX}"  # a running process: kept
    live.write_text("in progress")
    other = tmp_path / f".other.json.{_dead_pid()}.abc123{TEMP_SUFFIX}"  # another target: kept
    other.write_text("x")
    atomic_write(target, b"{}\n")
    assert target.read_bytes() == b"{}\n"
    assert not stale.exists() and live.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["cert.json", live.name, other.name])


def test_killed_write_leaves_a_recognisable_temp_that_the_next_write_removes(tmp_path):
    target = tmp_path / "out.json"
    code = ("import os, sys, tempfile; sys.path.insert(0, %r)\n"
            "from memaudit import fileio\n"
            "def boom(*a): os._exit(9)\n"
            "os.replace = boom\n"
            "fileio.atomic_write(%r, b'x' * 1000)\n") % (str(ROOT), str(target))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT)
    assert proc.returncode == 9
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".out.json.") and left[0].endswith(TEMP_SUFFIX)
    atomic_write(target, b"ok")
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_symlink_is_written_through(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    atomic_write(link, b"new")
    assert link.is_symlink() and real.read_text() == "new"


def test_named_pipe_and_devices_are_refused_as_outputs(tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    with pytest.raises(MemauditError, match=r"out\.fifo: is a named pipe, not a regular file"):
        atomic_write(fifo, b"x")
    with pytest.raises(MemauditError, match=r"/dev/null: is a character device, not a regular file"):
        atomic_write("/dev/null", b"x")
    with pytest.raises(MemauditError, match=r"is a directory, not a regular file"):
        atomic_write(tmp_path, b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.fifo"]


def test_the_guard_refuses_to_write_over_an_input(tmp_path):
    src = _write(tmp_path, '{"a": 1}', "in.json")
    link = tmp_path / "alias.json"
    link.symlink_to(src)
    with guard_inputs():
        read_json(src, what="scenario")
        with pytest.raises(MemauditError, match=r"refusing to write over the scenario .*this command reads"):
            atomic_write(src, b"{}")
        with pytest.raises(MemauditError, match=r"alias\.json: refusing to write over the scenario"):
            atomic_write(link, b"{}")
        atomic_write(tmp_path / "out.json", b"{}")
    assert src.read_text() == '{"a": 1}'
    atomic_write(src, b"{}")  # outside a command, a library caller may replace it
    assert src.read_text() == "{}"
    assert fileio._inputs.get() is None


# -- document models --------------------------------------------------------------------------

def test_store_audit_spec_model_reads_the_shipped_spec_and_names_bad_fields():
    from pydantic import ValidationError

    from memaudit.formats import validation_message
    from memaudit.formats.documents import StoreAuditSpec

    pkg = json.loads((ROOT / "packages_data" / "natural" / "ledgerline.json").read_text())
    spec = StoreAuditSpec.model_validate(pkg["meta"]["store_audit"])
    assert spec.superseded or spec.deleted
    bad = copy.deepcopy(pkg["meta"]["store_audit"])
    key = "deleted" if bad.get("deleted") else "superseded"
    bad[key][0]["value_aliases" if key == "deleted" else "old_aliases"] = []
    with pytest.raises(ValidationError) as info:
        StoreAuditSpec.model_validate(bad)
    msg = validation_message(info.value, bad, StoreAuditSpec, "ledgerline.json", "meta.store_audit")
    assert msg.startswith(f"ledgerline.json: {key}[0].") and "must be a non-empty list of strings; got []" in msg
