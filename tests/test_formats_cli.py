"""The format layer seen from the command line: inputs never overwritten, read once, outputs safe, text escaped."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from memaudit.cli import EXIT_BAD_INPUT, EXIT_OK, main

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "packages_data" / "examples" / "quickstart.json"
SCENARIO = ROOT / "packages_data" / "scenarios" / "example.yaml"


@pytest.fixture
def runner():
    return CliRunner()


def run(runner, *args):
    return runner.invoke(main, [str(a) for a in args])


def one_line_error(result, match):
    assert result.exit_code == EXIT_BAD_INPUT, (result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and match in lines[0], result.stderr


@pytest.fixture
def pkg_path(tmp_path):
    p = tmp_path / "quickstart.json"
    shutil.copyfile(QUICKSTART, p)
    return p


def test_harness_run_never_writes_over_its_scenario(runner, tmp_path):
    out = tmp_path / "dir"
    out.mkdir()
    scenario = out / "run.json"
    scenario.write_text(json.dumps(yaml.safe_load(SCENARIO.read_text())))
    before = scenario.read_bytes()
    res = run(runner, "harness", "run", scenario, "--policy", "profile", "--out", out)
    one_line_error(res, "run.json: refusing to write over the scenario this command reads")
    assert scenario.read_bytes() == before
    assert [p.name for p in out.iterdir()] == ["run.json"]


def test_solve_output_onto_a_hard_link_of_the_package_is_refused(runner, pkg_path, tmp_path):
    link = tmp_path / "same-inode.json"
    os.link(pkg_path, link)
    before = pkg_path.read_bytes()
    one_line_error(run(runner, "solve", pkg_path, "--budget", "20", "-o", link), "refusing to write")
    assert pkg_path.read_bytes() == before


def test_solve_from_a_pipe_records_the_sha256_of_the_bytes_it_solved(runner, pkg_path, tmp_path):
    raw = pkg_path.read_bytes()
    r, w = os.pipe()

    def feed():
        with os.fdopen(w, "wb") as fh:
            fh.write(raw)

    t = threading.Thread(target=feed)
    t.start()
    try:
        res = run(runner, "solve", f"/dev/fd/{r}", "--budget", "20", "-o", tmp_path / "cert.json")
    finally:
        t.join(5)
        os.close(r)
    assert res.exit_code == EXIT_OK, res.output
    cert = json.loads((tmp_path / "cert.json").read_text())
    assert cert["package"]["sha256"] == hashlib.sha256(raw).hexdigest() != hashlib.sha256(b"").hexdigest()
    res = run(runner, "verify", pkg_path, tmp_path / "cert.json", "--backend", "none")
    assert res.exit_code == EXIT_OK, res.output


def test_solve_output_through_a_symlink_and_never_onto_a_pipe(runner, pkg_path, tmp_path):
    real = tmp_path / "certs" / "real.json"
    real.parent.mkdir()
    link = tmp_path / "cert.json"
    link.symlink_to(real)
    assert run(runner, "solve", pkg_path, "--budget", "20", "-o", link).exit_code == EXIT_OK
    assert link.is_symlink() and json.loads(real.read_text())["opt"] == 8.5
    fifo = tmp_path / "cert.fifo"
    os.mkfifo(fifo)
    started = time.perf_counter()
    one_line_error(run(runner, "solve", pkg_path, "--budget", "20", "-o", fifo), "is a named pipe, not a regular file")
    assert time.perf_counter() - started < 60 and fifo.exists() and not fifo.is_file()


def test_verify_refuses_a_certificate_with_duplicate_keys(runner, pkg_path, tmp_path):
    cert = tmp_path / "cert.json"
    assert run(runner, "solve", pkg_path, "--budget", "20", "-o", cert).exit_code == EXIT_OK
    text = cert.read_text().replace('"opt": 8.5,', '"opt": 99, "opt": 8.5,')
    cert.write_text(text)
    one_line_error(run(runner, "verify", pkg_path, cert), "key 'opt' appears twice in one JSON object")


def test_control_characters_from_the_input_are_escaped(runner, pkg_path, tmp_path):
    data = json.loads(pkg_path.read_text())
    data["id"] = "evil\x1b[2J\rerror: forged"
    pkg_path.write_text(json.dumps(data))
    for args in (("inspect", pkg_path), ("validate", pkg_path), ("solve", pkg_path, "--budget", "20")):
        res = run(runner, *args)
        assert "\x1b" not in res.output and "\r" not in res.output, args
    assert "evil\\x1b[2J\\rerror: forged" in run(runner, "inspect", pkg_path).output
    data["units"][0]["weight"] = "bad\x1b[31m"
    pkg_path.write_text(json.dumps(data))
    res = run(runner, "validate", pkg_path)
    assert res.exit_code == EXIT_BAD_INPUT and "\x1b" not in res.stderr and "\\x1b[31m" in res.stderr


def test_schema_formats(runner):
    titles = {}
    for fmt in ("package", "certificate", "manifest", "scenario", "run"):
        res = run(runner, "schema", "--format", fmt)
        assert res.exit_code == EXIT_OK, res.output
        titles[fmt] = json.loads(res.stdout)["title"]
    assert titles == {"package": "Package", "certificate": "Certificate", "manifest": "Manifest",
                      "scenario": "ScenarioFile", "run": "RunDocument"}
