"""One small fixture per rule of the vendor audits: shapes, views, expiry, system events, archives, limits."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from memaudit.cli import main
from memaudit.stores import StoreError, load_any, load_mem0
from memaudit.stores.export import parse_time

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "stores"
LEDGERLINE = ROOT / "packages_data" / "natural" / "ledgerline.json"
FAKE_JUDGE = ROOT / "tests" / "stores_fake_judge.py"
PHONE = "+44 7700 900461"


def write(tmp_path, name, doc):
    p = tmp_path / name
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    return p


# -- OpenMemory files: JSON Lines, gzip, the backup zip, the list page ---------------------------

def _backup():
    return json.loads((FIX / "mem0_openmemory_backup.json").read_text(encoding="utf-8"))


def _jsonl(doc) -> bytes:
    rows = [{k: m[k] for k in ("id", "content", "metadata", "created_at", "updated_at", "state")} | {"app": "cursor"}
            for m in doc["memories"]]
    return "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")


def test_openmemory_jsonl_gzip_and_zip_read_alike(tmp_path):
    doc = _backup()
    (tmp_path / "memories.jsonl").write_bytes(_jsonl(doc))
    (tmp_path / "memories.jsonl.gz").write_bytes(gzip.compress(_jsonl(doc)))
    with zipfile.ZipFile(tmp_path / "memories_export_dana.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("memories.json", json.dumps(doc))
        zf.writestr("memories.jsonl.gz", gzip.compress(_jsonl(doc)))
    for name, shape in (("memories.jsonl", "memories.jsonl [JSON Lines]"),
                        ("memories.jsonl.gz", "memories.jsonl [gzip, JSON Lines]"),
                        ("memories_export_dana.zip", "backup (memories.json) [zip member 'memories.json']")):
        e = load_any(tmp_path / name)
        assert e.product == "mem0" and e.shape.endswith(shape), e.shape
        # om-1 and om-4 are active; om-2 (deleted, the phone) and om-3 (archived) are kept, not served
        assert [i.id for i in e.items] == ["om-1", "om-4"] and sorted(r["id"] for r in e.retained) == ["om-2", "om-3"]


def test_zip_and_gzip_bombs_are_refused_on_the_unpacked_bytes(tmp_path):
    zeros = b'{"memories": [' + b" " * 2_000_000 + b"]}"
    (tmp_path / "bomb.json.gz").write_bytes(gzip.compress(zeros))
    with zipfile.ZipFile(tmp_path / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("memories.json", zeros)
    assert os.path.getsize(tmp_path / "bomb.zip") < 100_000
    with pytest.raises(StoreError, match=r"bomb.json.gz: unpacks to more than 500000 bytes") as err:
        load_any(tmp_path / "bomb.json.gz", max_bytes=500_000)
    assert "\n" not in str(err.value)
    with pytest.raises(StoreError, match=r"member 'memories.json' declares 2000016 unpacked bytes"):
        load_any(tmp_path / "bomb.zip", max_bytes=500_000)
    result = CliRunner().invoke(main, ["audit", str(LEDGERLINE), str(tmp_path / "bomb.zip"), "--max-bytes", "500000"])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "zip bomb" in result.stderr


def test_zip_member_whose_header_lies_is_still_bounded(tmp_path):
    # a member that declares 10 bytes but unpacks to 2 MB: the read stops one byte past the limit
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("memories.json", b"[" + b" " * 2_000_000 + b"]")
    raw = bytearray(buf.getvalue())
    for sig, off in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # uncompressed size in local and central headers
        at = raw.find(sig)
        raw[at + off:at + off + 4] = (10).to_bytes(4, "little")
    (tmp_path / "liar.zip").write_bytes(bytes(raw))
    with pytest.raises(StoreError, match="liar.zip"):
        load_any(tmp_path / "liar.zip", product="mem0", max_bytes=1_000_000)


def test_openmemory_list_page(tmp_path):
    page = {"items": [{"id": "a", "content": "Prod runs in eu-central-1", "created_at": 1781510400, "state": "active",
                       "app_name": "cursor", "categories": ["work"]},
                      {"id": "b", "content": "Tabs, not spaces", "created_at": 1776862020, "state": "paused"}],
            "total": 2, "page": 1, "size": 50, "pages": 1}
    e = load_any(write(tmp_path, "page.json", page))
    assert (e.product, e.view, [i.id for i in e.items], [r["id"] for r in e.retained]) == ("mem0", "full", ["a"], ["b"])
    assert e.items[0].time == "2026-06-15T08:00:00Z"
    page.update(total=120, pages=3)
    e = load_any(write(tmp_path, "page1.json", page))
    assert e.view == "partial" and "page 1 of 3" in e.shape


# -- Mem0 shapes and views ---------------------------------------------------------------------

def test_mem0_history_map_and_single_item_and_search(tmp_path):
    hist = {"m1": [{"id": "h1", "memory_id": "m1", "event": "ADD", "new_memory": "Tests use Jest"},
                   {"id": "h2", "memory_id": "m1", "event": "DELETE", "old_memory": "Tests use Jest"}],
            "m2": [{"id": "h3", "event": "ADD", "new_memory": "Tabs, not spaces"}]}
    e = load_any(write(tmp_path, "h.json", hist))
    assert e.view == "rebuilt" and [i.id for i in e.items] == ["m2"] and "map" in e.shape
    hist["m2"][0]["memory_id"] = "m9"
    with pytest.raises(StoreError, match=r"item 'm2'\[0\]: memory_id is 'm9', but the row sits under memory"):
        load_any(write(tmp_path, "h2.json", hist))
    one = load_any(write(tmp_path, "one.json", {"id": "x", "memory": "Tabs", "score": None}))
    assert (one.product, one.view, len(one.items)) == ("mem0", "partial", 1) and "get()" in one.shape
    hits = load_any(write(tmp_path, "s.json", {"results": [{"id": "p", "memory": "b", "score": 0.2},
                                                           {"id": "q", "memory": "a", "score": 0.9}]}))
    assert hits.view == "partial" and "search()" in hits.shape
    assert [i.id for i in hits.items] == ["p", "q"]  # the product's own ranking is kept, not re-sorted by time


def test_mem0_add_return_is_what_one_call_changed(tmp_path):
    ret = {"results": [{"id": "a", "memory": "Prod runs in eu-central-1", "event": "UPDATE",
                        "previous_memory": "Prod runs in eu-west-2"},
                       {"id": "b", "memory": f"Phone {PHONE}", "event": "DELETE"},
                       {"id": "c", "memory": "Tabs, not spaces", "event": "ADD"}]}
    e = load_any(write(tmp_path, "add.json", ret))
    assert e.view == "partial" and "add() return" in e.shape and [i.id for i in e.items] == ["a", "c"]
    assert {r["where"] for r in e.retained} == {"add() UPDATE previous_memory", "add() DELETE event (deleted by this call)"}
    assert any("only what one add() call changed" in w for w in e.warnings)


def test_qdrant_points_envelope_and_entities(tmp_path):
    doc = {"result": {"points": [
        {"id": 7, "payload": {"data": "Prod runs in eu-central-1", "created_at": "2026-06-15T10:12:00+00:00"}},
        {"id": "e1", "payload": {"data": "Priya", "entity_type": "person", "linked_memory_ids": ["7"]}}],
        "next_page_offset": None}}
    e = load_any(write(tmp_path, "q.json", doc))
    assert [i.id for i in e.items] == ["7"] and any("entities" in w for w in e.warnings)
    with pytest.raises(StoreError, match=r"item \[0\] \(id 'x'\): payload.data \(the memory text\)"):
        load_any(write(tmp_path, "q2.json", [{"id": "x", "payload": {"text": "no data key"}}]), product="mem0")


def test_expiry_top_level_and_in_metadata_against_the_recorded_export_time(tmp_path):
    doc = {"version": 1, "kind": "mem0_oss_qdrant_export", "exported_at": "2026-07-01T00:00:00Z", "records": [
        {"id": "a", "memory": "Priya is on call", "metadata": {"expiration_date": "2026-06-30"},
         "created_at": "2026-04-22T13:06:00+00:00"},
        {"id": "b", "memory": "Marco is on call", "expiration_date": "2026-12-31",
         "created_at": "2026-09-07T07:54:00+00:00"}]}
    p = write(tmp_path, "mig.json", doc)
    e = load_mem0(p)
    assert [i.id for i in e.items] == ["b"] and "before the export time the file records" in e.retained[0]["where"]
    assert not e.warnings  # b expires after the recorded export time: served, nothing uncertain
    assert [i.id for i in load_mem0(p, as_of="2026-06-01").items] == ["b", "a"]  # --as-of wins over the file
    del doc["exported_at"]
    doc["records"][1]["expiration_date"] = "2027-01-01"
    e = load_mem0(write(tmp_path, "mig2.json", doc))  # no export time: at least the newest time in the file
    assert [i.id for i in e.items] == ["b"] and any("--as-of" in w for w in e.warnings)
    with pytest.raises(StoreError, match="--as-of must be a date"):
        load_mem0(p, as_of="next week")


@pytest.mark.parametrize("raw", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_timestamps_out_of_range_in_utc_are_unknown_times_not_tracebacks(tmp_path, raw):
    assert parse_time(raw) is None
    e = load_any(write(tmp_path, "m.json", {"results": [{"id": "a", "memory": "x", "created_at": raw}]}))
    assert e.items[0].time is None and any("unparseable timestamp" in w for w in e.warnings)
    e = load_any(write(tmp_path, "n.json", {"status": "success", "notes": {"n": {"id": "n", "content": "x",
                                                                                   "timestamp": raw}}}))
    assert e.items[0].time is None


def test_detection_names_the_shape_it_saw(tmp_path):
    with pytest.raises(StoreError, match=r"cannot tell which product wrote this export \(a JSON object with keys "
                                         r"\['foo'\]\); pass --product"):
        load_any(write(tmp_path, "x.json", {"foo": 1}))
    with pytest.raises(StoreError, match=r"not a Mem0 export: .* got keys \['foo'\]"):
        load_any(write(tmp_path, "y.json", {"foo": 1}), product="mem0")


# -- A-Mem views -------------------------------------------------------------------------------

def test_amem_by_tag_is_a_partial_view(tmp_path):
    doc = {"tag": "on-call", "count": 1, "memories": [{"id": "n1", "content": "Priya is on call", "keywords": [],
                                                       "tags": ["on-call"], "context": "General",
                                                       "timestamp": "202604221306"}]}
    e = load_any(write(tmp_path, "t.json", doc))
    assert (e.product, e.view) == ("amem", "partial") and "memory://by-tag/on-call" in e.shape


# -- Letta system events and tool returns --------------------------------------------------------

def _agent(messages):
    return {"agents": [{"id": "agent-0", "block_ids": ["b"], "in_context_message_ids": [m["id"] for m in messages],
                        "messages": messages}],
            "blocks": [{"id": "b", "label": "human", "value": "Dana: backend lead."}]}


def _msg(i, role, text, **extra):
    return {"id": f"message-{i}", "role": role, "content": [{"type": "text", "text": text}],
            "created_at": f"2026-12-01T11:41:{i:02d}", **extra}


def test_letta_events_by_structure_and_tool_returns(tmp_path):
    env = lambda status, message: json.dumps({"status": status, "message": message, "time": "now"})  # noqa: E731
    msgs = [_msg(0, "user", json.dumps({"type": "login", "last_login": "Never", "time": "now"})),
            _msg(1, "user", json.dumps({"type": "heartbeat", "reason": "continue", "time": "now"})),
            _msg(2, "user", json.dumps({"type": "user_message", "message": f"My mobile is {PHONE}", "time": "now"})),
            _msg(3, "user", json.dumps({"type": "system_alert", "message": "Summary: Priya is on call.", "time": "x"})),
            _msg(4, "tool", env("OK", f"Dana: backend lead.\nMobile: {PHONE}"), name="memory_insert"),
            _msg(5, "tool", env("OK", "Sent message successfully."), name="send_message"),
            _msg(6, "tool", env("OK", "None"), name="archival_memory_insert"),
            _msg(7, "tool", env("Failed", "old_string `x` did not appear"), name="memory_replace"),
            _msg(8, "user", "{not json, just braces}")]
    e = load_any(write(tmp_path, "a.af", _agent(msgs)))
    by = {i.id: i for i in e.items}
    assert set(by) == {"b:line1", "message-2", "message-3", "message-4", "message-7", "message-8"}
    assert by["message-2"].text == f"My mobile is {PHONE}" and by["message-2"].source == "message:user"
    assert by["message-3"].source == "message:summary"
    assert by["message-4"].source == "message:tool:memory_insert" and PHONE in by["message-4"].text
    assert by["message-7"].text.startswith("[Failed] ")
    assert any("3 user-role messages are system events (heartbeat 1, login 1, system_alert 1)" in w
               for w in e.warnings)
    result = CliRunner().invoke(main, ["audit", str(LEDGERLINE), "--letta", str(tmp_path / "a.af"), "--budget-frac",
                                       "1", "--backend", "none", "--json"])
    assert result.exit_code == 0, result.output
    assert sorted(leak["memory"] for leak in json.loads(result.stdout)["leaks"]) == ["message-2", "message-4"]


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the peak RSS from /proc")
@pytest.mark.parametrize("n, cap_kb", [(20_000, 400_000), pytest.param(100_000, 800_000, marks=pytest.mark.slow)])
def test_letta_importer_memory_is_near_linear(tmp_path, n, cap_kb):
    # 100k messages (~23 MB, as in the fuzzing report): the importer's peak RSS stays far below a quadratic blow-up
    msgs = [_msg(i % 60, "user" if i % 2 == 0 else "assistant", f"Turn {i}: prod deploys to eu-central-1 now.")
            | {"id": f"message-{i}"} for i in range(n)]
    p = write(tmp_path, "big.af", _agent(msgs))
    assert os.path.getsize(p) > 150 * n
    code = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        def peak_rss_kb():  # VmHWM is this process's own peak (ru_maxrss keeps the forking parent's across exec)
            with open("/proc/self/status") as fh:
                return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
        from memaudit.stores import load_any
        e = load_any({str(p)!r})
        print(len(e.items), peak_rss_kb())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-500:]
    items, rss_kb = map(int, done.stdout.split())
    assert items == n + 1 and rss_kb < cap_kb, rss_kb


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the peak RSS from /proc")
def test_audit_of_many_messages_sharing_a_unit_has_bounded_memory(tmp_path):
    # 20k in-context messages that all cover deploy_region.current: the decomposition of the union package once
    # built a groups x groups matrix (3.4 GB at 10k); with a 3 GiB address-space cap the audit must still finish
    msgs = [_msg(i % 60, "user", f"Turn {i}: prod deploys to eu-central-1 now.") | {"id": f"message-{i}"}
            for i in range(20_000)]
    p = write(tmp_path, "many.af", _agent(msgs))
    code = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        def peak_rss_kb():  # VmHWM is this process's own peak (ru_maxrss keeps the forking parent's across exec)
            with open("/proc/self/status") as fh:
                return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
        from memaudit.cli import main
        sys.argv = ["memaudit", "audit", {str(LEDGERLINE)!r}, {str(p)!r}, "--budget-frac", "0.5", "--backend", "none"]
        try:
            main()
        except SystemExit as exc:
            print("exit", exc.code, peak_rss_kb())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("exit 0 "), done.stdout[-300:] + done.stderr[-500:]
    assert int(last.split()[2]) < 1_500_000


# -- the audit command line ----------------------------------------------------------------------

def test_audit_takes_export_and_product_and_keeps_the_aliases(tmp_path):
    runner = CliRunner()
    base = ["audit", str(LEDGERLINE)]
    a = runner.invoke(main, base + [str(FIX / "mem0_sample_a.json"), "--product", "mem0", "--budget-frac", "1",
                                    "--backend", "none", "--json"])
    b = runner.invoke(main, base + ["--mem0", str(FIX / "mem0_sample_a.json"), "--budget-frac", "1", "--backend",
                                    "none", "--json"])
    assert a.exit_code == b.exit_code == 0 and json.loads(a.stdout)["ratios"] == json.loads(b.stdout)["ratios"]
    c = runner.invoke(main, base + ["--mem0", str(FIX / "mem0_sample_a.json"), "--product", "letta"])
    assert c.exit_code == 2 and "--product letta contradicts --mem0" in c.output
    d = runner.invoke(main, base + [str(FIX / "mem0_sample_a.json"), "--letta", str(FIX / "letta_sample_a.af")])
    assert d.exit_code == 2 and "give exactly one export" in d.output


def test_one_out_of_range_judge_answer_fails_that_memory_only(tmp_path):
    rules = write(tmp_path, "rules.json", [{"contains": "eu-central-1", "units": {"deploy_region.current": 1}},
                                           {"contains": "Money class", "units": {"money.rule": 7}}])
    judge = " ".join([sys.executable, str(FAKE_JUDGE), str(rules)])
    out = tmp_path / "adj.csv"
    result = CliRunner().invoke(main, ["adjudicate", str(LEDGERLINE), str(FIX / "mem0_sample_a.json"), "-o", str(out),
                                       "--judge-cmd", judge, "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert "the judge's answer was unusable for 1 memory" in result.stderr
    assert "the coverage of 'money.rule' must be a number in [0, 1]; got 7" in result.stderr
    lines = out.read_text().splitlines()
    money = "05c5044b-ba72-409c-8bff-5742a8251cb3"  # the sample's Money-class memory
    assert not any(line.startswith(money) for line in lines) and len(lines) > 10


def test_more_shapes_the_products_write(tmp_path):
    # mem0 0.1.x with version="v1.0": search() and add() return bare lists
    hits = load_any(write(tmp_path, "s.json", [{"id": "a", "memory": "Tabs", "score": 0.4}]))
    assert hits.view == "partial" and "search() bare list" in hits.shape
    add = load_any(write(tmp_path, "a.json", [{"id": "a", "memory": "Tabs", "event": "ADD"}]))
    assert add.view == "partial" and "add() return, bare list" in add.shape
    # qdrant-client scroll() returns (records, next_page_offset)
    rec = {"id": "r1", "payload": {"data": "Prod runs in eu-central-1"}, "vector": None}
    full = load_any(write(tmp_path, "q.json", [[rec], None]))
    part = load_any(write(tmp_path, "q2.json", [[rec], "r2"]))
    assert (full.product, full.view, part.view) == ("mem0", "full", "partial")
    # Letta blocks.list(): the core memory lines
    blocks = load_any(write(tmp_path, "b.json", [{"id": "block-1", "label": "human", "value": "Dana\nLead"}]))
    assert blocks.product == "letta" and [i.id for i in blocks.items] == ["block-1:line1", "block-1:line2"]
    # A-Mem memory://stats holds counts, not memories: a one-line refusal naming it
    with pytest.raises(StoreError, match="memory://stats resource: counts and a tag distribution, no memories"):
        load_any(write(tmp_path, "st.json", {"total_memories": 3, "evolution_count": 0, "tag_distribution": {}}))
