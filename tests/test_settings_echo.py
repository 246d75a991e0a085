"""Text the harness commands print from their inputs (scenario ids, policy and probe names read
from scenario and run files) has its control characters escaped, so an input cannot drive the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from memaudit.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "packages_data" / "scenarios" / "example.yaml"
ESC = "\x1b[31mred\x1b[2J"


def _invoke(*args):
    return CliRunner().invoke(main, ["harness", *map(str, args)])


def test_scenario_id_with_an_escape_is_printed_escaped(tmp_path):
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["id"] = "team" + ESC
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    res = _invoke("run", path, "--policy", "profile", "--out", tmp_path / "out")
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.stdout
    assert "scenario team\\x1b[31mred\\x1b[2J (" in res.stdout


def test_policy_and_probe_names_from_run_files_are_printed_escaped(tmp_path):
    for d in ("a", "b"):
        assert _invoke("run", EXAMPLE, "--policy", "profile", "--out", tmp_path / d).exit_code == 0
    run_b = tmp_path / "b" / "run.json"
    doc = json.loads(run_b.read_text(encoding="utf-8"))
    doc["trials"][0]["disturb"]["name"] = "profile" + ESC
    run_b.write_text(json.dumps(doc), encoding="utf-8")
    res = _invoke("diff", tmp_path / "a" / "run.json", run_b)
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output
    assert "profile -> profile\\x1b[31mred\\x1b[2J" in res.stdout
