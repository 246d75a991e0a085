"""Text read from an export (memory ids, memory texts) is printed with its control characters escaped."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memaudit.cli import main

ROOT = Path(__file__).resolve().parents[1]
LEDGERLINE = ROOT / "packages_data" / "natural" / "ledgerline.json"
PHONE = "+44 7700 900461"
EVIL_ID = "message-2\x1b[2J\rerror: forged id"
EVIL_TEXT = f"My mobile is {PHONE}\x1b[31m\nerror: forged text\x9b2J"


def _letta(tmp_path):
    msgs = [{"id": EVIL_ID, "role": "user", "content": [{"type": "text", "text": EVIL_TEXT}],
             "created_at": "2026-12-01T11:41:02"}]
    doc = {"agents": [{"id": "agent-0", "block_ids": ["b"], "in_context_message_ids": [EVIL_ID], "messages": msgs}],
           "blocks": [{"id": "b", "label": "human\x1b]0;title\x07", "value": "Dana: backend lead."}]}
    p = tmp_path / "evil.af"
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def _check(result):
    out = result.stdout + result.stderr
    for ch in ("\x1b", "\r", "\x9b", "\x07"):
        assert ch not in out, (ch, out)
    assert not any(line.startswith("error:") for line in out.splitlines()), out
    return out


def test_audit_prints_export_ids_and_texts_escaped(tmp_path):
    p = _letta(tmp_path)
    result = CliRunner().invoke(main, ["audit", str(LEDGERLINE), "--letta", str(p), "--budget-frac", "1",
                                       "--backend", "none"])
    assert result.exit_code == 0, result.output
    out = _check(result)
    assert "message-2\\x1b[2J\\rerror: forged id" in out            # the leak names the memory, escaped


def test_union_and_adjudicate_print_escaped(tmp_path):
    p = _letta(tmp_path)
    # the output names hold escapes too: they are printed back ("written to ...")
    for args in (["union", str(LEDGERLINE), str(p), "-o", str(tmp_path / "u\x1b[2J\rerror: x.json")],
                 ["adjudicate", str(LEDGERLINE), str(p), "-o", str(tmp_path / "adj\x1b[2J\rerror: x.csv")]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert "\\x1b[2J\\rerror: x." in _check(result)


def test_an_export_error_naming_a_hostile_value_is_one_escaped_line(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"results": [{"id": "a", "memory": 5, "metadata": {}},
                                         {"id": "x\x1b[2J\nerror: forged", "memory": 3}]}), encoding="utf-8")
    p2 = tmp_path / "bad2.json"
    p2.write_text(json.dumps({"results": [{"id": "a\x1b[2J\rerror: forged", "memory": ["x"]}]}), encoding="utf-8")
    for path in (p, p2):
        result = CliRunner().invoke(main, ["audit", str(LEDGERLINE), str(path), "--product", "mem0"])
        assert result.exit_code == 1
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
        assert "\x1b" not in result.stderr and "\r" not in result.stderr
