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
    assert log.read_text().count("judge") == 12  # 6 probes x 2 policies


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
