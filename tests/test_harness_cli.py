"""memaudit harness lab / bench / run / diff through click's CliRunner."""

from __future__ import annotations

import copy
import csv
import json
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memaudit.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "packages_data" / "scenarios" / "example.yaml"
FAKE = Path(__file__).resolve().parent / "harness_fake_cli.py"


def fake(mode):
    return shlex.join([sys.executable, str(FAKE), mode])


@pytest.fixture
def runner():
    return CliRunner()


def invoke(runner, *args):
    return runner.invoke(main, ["harness", *map(str, args)])


def one_line_error(result, match):
    assert result.exit_code == 1, (result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and match in lines[0], result.stderr
    assert "Traceback" not in result.output


def test_lab_prints_seed_000_scorecard(runner, tmp_path):
    res = invoke(runner, "lab", "--out", tmp_path / "lab")
    assert res.exit_code == 0, res.output
    assert "compacted            3/5      0      1/1      47" in res.output
    assert "  procedure   0/1  LOST" in res.output
    doc = json.loads((tmp_path / "lab" / "run.json").read_text())
    assert doc["format"] == "memaudit-harness-run/1"
    rows = list(csv.DictReader(open(tmp_path / "lab" / "summary.csv")))
    assert [r["policy"] for r in rows] == ["fresh", "replay-full", "replay-capped", "compacted", "store"]


def test_lab_json(runner):
    res = invoke(runner, "lab", "--json", "--policy", "store")
    doc = json.loads(res.output)
    assert doc["trials"][0]["summary"]["literal"]["current"] == 5


def test_bench_small(runner):
    res = invoke(runner, "bench", "--sessions", "12", "--exchanges", "4", "--policy", "profile",
                 "--policy", "full-transcript")
    assert res.exit_code == 0, res.output
    assert "profile, upsert + delete, all injected" in res.output
    assert "current only" in res.output  # the combined table


def test_bench_with_command_reader(runner, tmp_path):
    res = invoke(runner, "bench", "--sessions", "10", "--exchanges", "2", "--policy", "profile", "--forms", "literal",
                 "--reader-cmd", fake("reader"), "--judge-cmd", fake("judge"), "--backoff", "0",
                 "--cache-dir", tmp_path / "cache")
    assert res.exit_code == 0, res.output
    assert "answers:" in res.output and any((tmp_path / "cache").iterdir())


def test_run_and_diff(runner, tmp_path):
    a = invoke(runner, "run", EXAMPLE, "--policy", "full-transcript", "--out", tmp_path / "a")
    b = invoke(runner, "run", EXAMPLE, "--policy", "profile", "--out", tmp_path / "b")
    assert a.exit_code == 0 and b.exit_code == 0, (a.output, b.output)
    assert "full-transcript  literal" in a.output
    d = invoke(runner, "diff", tmp_path / "a", tmp_path / "b" / "run.json")
    assert d.exit_code == 0, d.output
    assert "changed parts: disturb" in d.output
    assert "region (literal): conflict -> current" in d.output
    assert "phone (literal): leaked -> clean" in d.output
    dj = json.loads(invoke(runner, "diff", tmp_path / "a", tmp_path / "b", "--json").output)
    assert dj["changed_parts"] == ["disturb"]
    assert {(c["probe"], c["form"]) for c in dj["changed_probes"]} >= {("region", "literal"), ("phone", "literal")}


def test_diff_of_identical_runs(runner, tmp_path):
    for name in ("a", "b"):
        invoke(runner, "run", EXAMPLE, "--policy", "profile", "--out", tmp_path / name)
    d = invoke(runner, "diff", tmp_path / "a", tmp_path / "b")
    assert "changed parts: none" in d.output and "probes whose outcome changed: 0" in d.output


def test_diff_refuses_different_probe_sets(runner, tmp_path):
    invoke(runner, "run", EXAMPLE, "--policy", "profile", "--out", tmp_path / "a")
    invoke(runner, "run", EXAMPLE, "--policy", "profile", "--forms", "literal", "--out", tmp_path / "b")
    one_line_error(invoke(runner, "diff", tmp_path / "a", tmp_path / "b"), "the runs asked different probes")


def test_run_with_mechanical_reader(runner):
    res = invoke(runner, "run", EXAMPLE, "--policy", "store", "--reader", "mechanical", "--match", "substring",
                 "--tokens", "len/4", "--json")
    doc = json.loads(res.output)
    assert doc["probe"]["reader"]["name"] == "mechanical"
    assert doc["score"]["settings"] == {"match": "substring", "tokens": "len/4"}


@pytest.mark.parametrize("args,match", [
    (["run", "missing.yaml", "--policy", "profile"], "missing.yaml: cannot read"),
    (["run", EXAMPLE, "--policy", "nope"], "unknown policy 'nope'"),
    (["run", EXAMPLE, "--policy", "profile", "--reader", "command"], "--reader command needs --reader-cmd"),
    (["run", EXAMPLE, "--policy", "profile", "--reader", "mechanical", "--reader-cmd", "llm"],
     "--reader-cmd goes with --reader command"),
    (["run", EXAMPLE, "--policy", "profile", "--reader-cmd", fake("reader"), "--judge-cmd", fake("reader")],
     "is the reader command"),
    (["run", EXAMPLE, "--policy", "profile", "--judge-cmd", fake("judge")], "the classifier reader gives none"),
    (["diff", "nowhere", "nowhere"], "no such run file"),
])
def test_bad_input_is_one_line(runner, args, match):
    one_line_error(invoke(runner, *args), match)


def test_bad_scenario_file_names_the_probe(runner, tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(EXAMPLE.read_text().replace("fact: ci_budget", "fact: ci_budgte"))
    one_line_error(invoke(runner, "run", p, "--policy", "profile"), "probe 'ci': fact 'ci_budgte' is not a fact key")


def test_out_is_a_file(runner, tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    one_line_error(invoke(runner, "run", EXAMPLE, "--policy", "profile", "--out", f), "must be a directory")


def test_not_a_run_file(runner, tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"format": "memaudit-package/1"}')
    one_line_error(invoke(runner, "diff", p, p), "format must be 'memaudit-harness-run/1'")


# -- review fixes ------------------------------------------------------------------------

@pytest.mark.parametrize("extra,match", [
    (["--timeout", "inf"], "reader 'command': setting 'timeout' must be a number in (0, 86400]; got inf"),
    (["--backoff", "nan"], "reader 'command': setting 'backoff' must be a number in [0, 86400]; got nan"),
    (["--backoff", "inf"], "reader 'command': setting 'backoff' must be a number in [0, 86400]; got inf"),
])
def test_non_finite_reader_settings_are_one_line(runner, extra, match):
    one_line_error(invoke(runner, "run", EXAMPLE, "--policy", "profile", "--reader-cmd", fake("reader"), *extra), match)


def test_reader_that_cannot_be_run_is_one_line(runner, tmp_path):
    p = tmp_path / "notexec.txt"
    p.write_text("not a program\n")
    p.chmod(0o755)
    one_line_error(invoke(runner, "run", EXAMPLE, "--policy", "profile", "--reader-cmd", p, "--retries", "0"),
                   "cannot be run")


def test_uncreatable_cache_dir_is_one_line(runner, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    one_line_error(invoke(runner, "run", EXAMPLE, "--policy", "profile", "--reader-cmd", fake("reader"),
                          "--cache-dir", f / "sub"), "cannot write the cache entry")


def test_duplicate_policy_names_are_refused(runner):
    one_line_error(invoke(runner, "run", EXAMPLE, "--policy", "profile", "--policy", "profile:min_salience=2"),
                   "policy 'profile' is given twice")
    one_line_error(invoke(runner, "run", EXAMPLE, "--policy", "profile+bm25:redact_deleted=true",
                          "--policy", "profile+bm25-redacted"), "policy 'profile+bm25-redacted' is given twice")


def test_bench_extra_does_not_repeat_a_named_policy(runner):
    res = invoke(runner, "bench", "--sessions", "10", "--exchanges", "2", "--forms", "literal", "--policy", "ga-paper",
                 "--policy", "bitemporal:history=true", "--extra", "--json")
    assert res.exit_code == 0, res.output
    names = [t["disturb"]["name"] for t in json.loads(res.output)["trials"]]
    assert names == ["ga-paper", "bitemporal-history", "ga-code", "bitemporal"]


def _edited_run(runner, tmp_path, edit):
    invoke(runner, "run", EXAMPLE, "--policy", "profile", "--out", tmp_path / "a")
    doc = json.loads((tmp_path / "a" / "run.json").read_text())
    edit(doc)
    p = tmp_path / "edited.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("edit,match", [
    (lambda d: d["trials"][0].update(summary=[]), "trials[0].summary must be an object"),
    (lambda d: d["trials"][0]["summary"].update(literal=[1]), "trials[0].summary['literal'] must be an object"),
    (lambda d: d["trials"][0]["rows"][0].update(probe=["x"]), "trials[0].rows[0].probe must be a string"),
    (lambda d: d["trials"][0]["rows"][0].update(tokens_injected="9"), "trials[0].rows[0].tokens_injected must be a"),
    (lambda d: d["trials"][0]["disturb"].update(name=["profile"]), "trials[0].disturb.name must be a string"),
    (lambda d: d["trials"].append(copy.deepcopy(d["trials"][0])), "policy 'profile' appears twice"),
])
def test_hand_edited_run_files_are_one_line(runner, tmp_path, edit, match):
    p = _edited_run(runner, tmp_path, edit)
    one_line_error(invoke(runner, "diff", tmp_path / "a", p), match)


def test_labels_show_non_default_settings(runner):
    res = invoke(runner, "bench", "--sessions", "10", "--exchanges", "2", "--forms", "literal",
                 "--policy", "bm25-transcript:k=3", "--policy", "profile:min_salience=2", "--policy", "last-exchanges:n=8")
    assert res.exit_code == 0, res.output
    assert "BM25 top-3 over transcript" in res.output and "top-5" not in res.output
    assert "profile, upsert + delete, all injected (min_salience=2)" in res.output
    assert "last 8 exchanges across sessions" in res.output


def test_run_table_has_unscored_column(runner):
    res = invoke(runner, "run", EXAMPLE, "--policy", "profile")
    assert res.exit_code == 0, res.output
    header = res.output.splitlines()[2]
    assert "unscored" in header.split()


def test_lab_table_fits_long_labels(runner):
    res = invoke(runner, "lab", "--policy", "store", "--policy", "profile+bm25-unindexed")
    assert res.exit_code == 0, res.output
    rows = [line for line in res.output.splitlines() if line.startswith(("condition", "memory store", "profile +"))]
    assert len(rows) == 3
    # every row's numbers line up under the header's
    assert len({len(r) for r in rows}) == 1, rows
