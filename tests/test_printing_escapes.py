"""The diagnose, locomo and results printers escape the control characters of text read from an input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from memaudit.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_diagnose import _tiny  # noqa: E402

EVIL = "tiny\x1b[2J\rerror: forged"


def test_diagnose_prints_the_scenario_id_escaped(tmp_path):
    from memaudit.harness.scenario import scenario_to_dict

    doc = scenario_to_dict(_tiny())
    doc["id"] = EVIL
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(doc))
    r = CliRunner().invoke(main, ["diagnose", str(path), "--policy", "fresh"])
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.output and "\r" not in r.output
    assert not any(line.startswith("error:") for line in r.output.splitlines())
    assert "scenario tiny\\x1b[2J\\rerror: forged:" in r.output
