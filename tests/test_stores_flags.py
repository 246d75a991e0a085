"""The importer flags of ``union`` / ``audit`` / ``adjudicate`` come from the importers' declarations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memaudit.cli import main
from memaudit.stores import IMPORTER_SETTINGS, load_any

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "stores"
LEDGERLINE = ROOT / "packages_data" / "natural" / "ledgerline.json"
LETTA = FIX / "letta_sample_a.af"


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("command", ["union", "audit", "adjudicate"])
def test_every_declared_importer_setting_has_a_flag(command):
    text = _run(command, "--help").output
    names = {s.name for declared in IMPORTER_SETTINGS.values() for s in declared}
    assert names == {"max_bytes", "as_of", "include_messages"}
    for name in names:
        assert "--" + name.replace("_", "-") in text
    assert "--no-messages" in text


def _union_items(tmp_path, *flags) -> int:
    out = tmp_path / "u.json"
    r = _run("union", LEDGERLINE, LETTA, "-o", out, *flags)
    assert r.exit_code == 0, r.output
    return sum(c["kind"] == "external" for c in json.loads(out.read_text())["candidates"])


def test_no_messages_is_include_messages_false(tmp_path):
    with_messages = _union_items(tmp_path)
    blocks = len(load_any(LETTA, "letta", include_messages=False).items)
    assert with_messages == len(load_any(LETTA, "letta").items) > blocks
    assert _union_items(tmp_path, "--no-messages") == blocks
    assert _union_items(tmp_path, "--include-messages", "false") == blocks
    r = _run("union", LEDGERLINE, LETTA, "-o", tmp_path / "x.json", "--no-messages", "--include-messages", "true")
    assert r.exit_code == 2 and "--no-messages contradicts --include-messages true" in r.output


def test_max_bytes_zero_and_none_lift_the_limit(tmp_path):
    size = LETTA.stat().st_size
    r = _run("union", LEDGERLINE, LETTA, "-o", tmp_path / "x.json", "--max-bytes", size // 2)
    assert r.exit_code == 1 and "raise the limit with --max-bytes N" in r.output
    assert not (tmp_path / "x.json").exists()
    for value in ("0", "none", str(size)):
        assert _union_items(tmp_path, "--max-bytes", value) > 0
    assert len(load_any(LETTA, "letta", max_bytes=0).items) == len(load_any(LETTA, "letta").items)


@pytest.mark.parametrize("value, rule", [("-1", "none or an integer >= 0"), ("1.5", "none or an integer >= 0"),
                                         ("lots", "none or an integer >= 0")])
def test_bad_max_bytes_is_a_usage_error_in_the_one_template(tmp_path, value, rule):
    r = _run("audit", LEDGERLINE, LETTA, "--max-bytes", value)
    assert r.exit_code == 2
    assert f"option '--max-bytes': setting 'max_bytes' must be {rule}; got" in r.output


def test_a_bad_max_bytes_is_refused_before_reading_without_naming_a_product():
    from memaudit.stores import StoreError
    with pytest.raises(StoreError, match=r"^importer: setting 'max_bytes' must be none or an integer >= 0; got -1$"):
        load_any(LETTA, max_bytes=-1)
    with pytest.raises(StoreError, match=r"^importer 'letta': setting 'max_bytes'"):
        load_any(LETTA, "letta", max_bytes=-1)
