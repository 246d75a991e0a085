"""Command readers and judges through the scripted fake CLI (tests/harness_fake_cli.py): no network."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from memaudit.harness.errors import HarnessError, ReaderError
from memaudit.harness.lab import lab_scenario
from memaudit.harness.policies import parse_policy
from memaudit.harness.readers import command_reader, is_abstention, judge_command, run_command
from memaudit.harness.trial import Plant, ProbeSet, Score, run

FAKE = Path(__file__).resolve().parent / "harness_fake_cli.py"


def fake(mode, *extra):
    return shlex.join([sys.executable, str(FAKE), mode, *map(str, extra)])


def lab_run(reader, judge=None, policies=("replay-full", "store")):
    plant = Plant("seed000-lab", {}, lab_scenario())
    return run(plant, [parse_policy(p) for p in policies], ProbeSet(reader, forms=("literal",), judge=judge),
               Score(match="substring", tokens="len/4"))


def outcomes(doc, policy):
    t = next(t for t in doc["trials"] if t["disturb"]["name"] == policy)
    return {r["probe"]: r["outcome"] for r in t["rows"]}


def test_command_reader_answers_like_the_mechanical_reader():
    doc = lab_run(command_reader(fake("reader"), backoff=0))
    assert outcomes(doc, "replay-full")["python_installer"] == "stale"
    assert outcomes(doc, "store") == {"handle": "current", "deploy_target": "current", "python_installer": "current",
                                      "ci_budget": "current", "release_procedure": "current", "database": "abstained"}


def test_judge_grades_with_the_rubric(tmp_path):
    log = tmp_path / "calls.log"
    doc = lab_run(command_reader(fake("reader"), backoff=0), judge_command(fake("judge", "--log", log), backoff=0))
    assert outcomes(doc, "replay-full")["python_installer"] == "stale"  # the judge said STALE
    assert outcomes(doc, "replay-full")["database"] == "abstained"
    assert outcomes(doc, "store")["ci_budget"] == "current"
    assert doc["probe"]["judge"]["settings"]["same_as_reader"] is False
    # 5 answered probes x 2 policies; the two "I don't know." answers about the never-planted
    # database are abstentions and are not sent to the judge
    assert log.read_text().count("judge") == 10


def test_same_judge_refused_unless_allowed():
    r = command_reader(fake("reader"))
    with pytest.raises(HarnessError, match="is the reader command"):
        judge_command(fake("reader"), reader=r)
    j = judge_command(fake("reader"), reader=r, allow_same_judge=True)
    assert j.settings["same_as_reader"] is True


def test_cache_keyed_by_prompt_and_command(tmp_path):
    log = tmp_path / "calls.log"
    cmd = fake("reader", "--log", log)
    for _ in range(2):
        doc = lab_run(command_reader(cmd, cache_dir=str(tmp_path / "cache"), backoff=0), policies=("store",))
    assert log.read_text().count("reader") == 6  # the second run was served from the cache
    t = doc["trials"][0]
    assert all(r["cached"] for r in t["rows"])
    # another command (a different flag) is another cache key
    lab_run(command_reader(cmd + " --sleep 0", cache_dir=str(tmp_path / "cache"), backoff=0), policies=("store",))
    assert log.read_text().count("reader") == 12


def test_retries_then_success(tmp_path):
    argv = [sys.executable, str(FAKE), "reader", "--fail-first", "2", "--state", str(tmp_path / "n")]
    prompt = "Memory:\nthe CI budget is 15 minutes\n\nQuestion: what is the CI budget?\n"
    out, cached = run_command(argv, prompt, retries=2, backoff=0)
    assert out == "the CI budget is 15 minutes" and not cached


def test_retries_exhausted_names_command_and_failure(tmp_path):
    argv = [sys.executable, str(FAKE), "reader", "--fail-first", "5", "--state", str(tmp_path / "n")]
    with pytest.raises(ReaderError, match=r"failed for probe 'x' after 2 attempt\(s\): exit status 3: boom"):
        run_command(argv, "Memory:\na\n\nQuestion: b\n", retries=1, backoff=0, item="probe 'x'")


def test_timeout():
    argv = [sys.executable, str(FAKE), "reader", "--sleep", "5"]
    with pytest.raises(ReaderError, match="timed out after 0.5 s"):
        run_command(argv, "Memory:\na\n\nQuestion: b\n", timeout=0.5, retries=0, backoff=0)


def test_missing_program():
    with pytest.raises(ReaderError, match="not found"):
        run_command(["memaudit-no-such-program-xyz"], "hi", retries=3, backoff=0)


def test_unusable_verdict():
    r = command_reader(fake("reader"), backoff=0)
    j = judge_command(fake("judge", "--garbage"), backoff=0, retries=0)
    with pytest.raises(ReaderError, match="unusable verdict"):
        lab_run(r, j, policies=("store",))


def test_judge_needs_an_answering_reader():
    from memaudit.harness.readers import classifier_reader

    with pytest.raises(HarnessError, match="classifier reader"):
        ProbeSet(classifier_reader(), judge=judge_command(fake("judge")))


@pytest.mark.parametrize("kwargs,match", [({"timeout": 0}, "timeout"), ({"retries": -1}, "retries"),
                                          ({"backoff": -1}, "backoff")])
def test_bad_command_settings(kwargs, match):
    with pytest.raises(HarnessError, match=match):
        command_reader("llm", **kwargs)


@pytest.mark.parametrize("cmd", ["", "   ", "'unclosed"])
def test_bad_command_strings(cmd):
    with pytest.raises(HarnessError, match="reader command"):
        command_reader(cmd)


def test_abstention_phrases():
    assert is_abstention("I do not know that.") and is_abstention("There is no record of it.")
    assert is_abstention("")
    assert not is_abstention("The deploy target is Cloudflare Pages.")


# -- review fixes ------------------------------------------------------------------------

OK_SCENARIO = {
    "format": "memaudit-scenario/1", "id": "t", "n_sessions": 4,
    "facts": [
        {"key": "region", "type": "decision", "versions": [
            {"session": 1, "value": "eu-west-2", "text": "We deploy to eu-west-2."},
            {"session": 3, "value": "eu-central-1", "text": "We moved to eu-central-1."}]},
        {"key": "phone", "type": "detail", "versions": [
            {"session": 1, "value": "555 0101", "text": "My phone is 555 0101."}],
         "delete": {"session": 2, "text": "Forget my phone number."}}],
    "probes": [{"id": "p1", "fact": "region", "literal": "Which region?"},
               {"id": "p2", "fact": "phone", "literal": "My phone?"},
               {"id": "p3", "fact": None, "literal": "Which database?"}],
}


def scenario_run(reader, judge=None):
    from memaudit.harness.scenario import scenario_from_dict

    plant = Plant("t", {}, scenario_from_dict(OK_SCENARIO))
    doc = run(plant, [parse_policy("profile")], ProbeSet(reader, forms=("literal",), judge=judge), Score())
    return {r["probe"]: r for r in doc["trials"][0]["rows"]}


def test_hedged_answer_that_leaks_is_scored_on_its_values():
    said = "I don't know exactly, but it is eu-central-1 and your number is 555 0101"
    rows = scenario_run(command_reader(fake("reader", "--say", said), backoff=0))
    assert rows["p1"]["outcome"] == "current" and rows["p1"]["answer"] == said
    assert rows["p2"]["outcome"] == "leaked"
    assert rows["p3"]["outcome"] == "answered"  # a hedge followed by a claim is an answer


def test_hedged_answer_goes_to_the_judge_plain_abstention_does_not(tmp_path):
    log = tmp_path / "calls.log"
    said = "I don't know exactly, but it is eu-central-1"
    rows = scenario_run(command_reader(fake("reader", "--say", said), backoff=0),
                        judge_command(fake("judge", "--log", log), backoff=0))
    assert rows["p1"]["outcome"] == "current" and log.read_text().count("judge") == 3
    log.write_text("")
    rows = scenario_run(command_reader(fake("reader", "--say", "I don't know."), backoff=0),
                        judge_command(fake("judge", "--log", log), backoff=0))
    assert [rows[p]["outcome"] for p in ("p1", "p2", "p3")] == ["missing", "clean", "abstained"]
    assert log.read_text() == ""  # abstentions that state no value are not sent to the judge


def test_curly_apostrophe_abstains():
    assert is_abstention("I don\u2019t know.") and is_abstention("I can\u2019t tell from memory.")
    rows = scenario_run(command_reader(fake("reader", "--say", "I don\u2019t know."), backoff=0))
    assert rows["p3"]["outcome"] == "abstained" and rows["p3"]["abstained"]


@pytest.mark.parametrize("text,expected", [
    ("I don't know.", True), ("I don't know. The memory does not say.", True), ("No record of that.", True),
    ("I don't know exactly, but it is eu-central-1", False), ("It is eu-central-1; I don't know more.", False),
    ("Probably eu-west-2, though I can't tell for sure", False),
])
def test_abstention_must_be_the_whole_answer(text, expected):
    assert is_abstention(text) is expected


@pytest.mark.parametrize("kwargs,match", [({"timeout": float("inf")}, "timeout"), ({"timeout": float("nan")}, "timeout"),
                                          ({"backoff": float("inf")}, "backoff"),
                                          ({"backoff": float("nan")}, "backoff")])
def test_non_finite_command_settings(kwargs, match):
    with pytest.raises(HarnessError, match=match):
        command_reader("llm", **kwargs)
    with pytest.raises(HarnessError, match=match):
        judge_command("llm", **kwargs)


def test_program_that_cannot_be_executed(tmp_path):
    p = tmp_path / "notexec.txt"
    p.write_text("just some text\n")
    p.chmod(0o755)  # executable bit, but no interpreter line: exec format error
    with pytest.raises(ReaderError, match="cannot be run"):
        run_command([str(p)], "hi", retries=0, backoff=0)


def test_uncreatable_cache_dir(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    argv = [sys.executable, str(FAKE), "reader", "--say", "eu-west-2"]
    with pytest.raises(ReaderError, match="cannot write the cache"):
        run_command(argv, "hi", retries=0, backoff=0, cache_dir=str(f / "sub"))


def test_timeout_kills_the_whole_process_group(tmp_path):
    import os
    import time

    pid_file = tmp_path / "pid"
    argv = [sys.executable, str(FAKE), "reader", "--spawn-sleep", "30", "--pid-file", str(pid_file), "--sleep", "30"]
    t0 = time.monotonic()
    with pytest.raises(ReaderError, match="timed out"):
        run_command(argv, "Memory:\na\n\nQuestion: b\n", timeout=1, retries=0, backoff=0)
    assert time.monotonic() - t0 < 10  # the grandchild holding the pipe did not keep us waiting
    pid = int(pid_file.read_text())
    for _ in range(100):  # the grandchild was killed too (dead, or a zombie waiting to be reaped)
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            break
        if state in ("Z", "X"):
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        pytest.fail(f"grandchild {pid} still alive")
