"""The Mem0, Letta and A-Mem importers on the shipped samples and on one fixture per awkward case of FORMATS.md."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from memaudit.errors import MemauditError
from memaudit.stores import StoreError, load_amem, load_export, load_letta, load_mem0
from memaudit.stores.export import parse_time

FIX = Path(__file__).resolve().parent / "fixtures" / "stores"
PHONE = "+44 7700 900461"


def texts(export):
    return [item.text for item in export.items]


def holds(export, needle):
    return [item.id for item in export.items if needle in item.text]


# -- Mem0 ---------------------------------------------------------------------------

def test_mem0_sample_a_results_shape():
    e = load_mem0(FIX / "mem0_sample_a.json")
    assert e.shape == 'mem0 get_all {"results": [...]}'
    assert len(e.items) == 15 and len({i.id for i in e.items}) == 15
    # add-only coexistence: old and new values are both held
    assert holds(e, "eu-west-2") and holds(e, "eu-central-1") and holds(e, "Jest") and holds(e, "Vitest")
    assert holds(e, PHONE) == ["cbc49eaa-2760-4bf5-884f-0ec7cdcaae5d"]
    # id order in the file is not time order; the product order is newest first
    times = [i.time for i in e.items]
    assert times == sorted(times, reverse=True)
    assert [i.rank for i in e.items] == list(range(15))
    infer_false = next(i for i in e.items if i.id.startswith("0a522f61"))
    assert infer_false.provenance["actor_id"] == "dana" and infer_false.provenance["role"] == "user"
    expiring = next(i for i in e.items if i.id.startswith("f4282069"))
    assert expiring.provenance["expiration_date"] == "2026-09-21"
    updated = next(i for i in e.items if i.id.startswith("a30bbe8b"))
    assert updated.time == "2026-06-01T09:41:17.553020Z"  # updated_at, not created_at


def test_mem0_bare_list_pacific_times_null_updated_and_escapes():
    e = load_mem0(FIX / "mem0_sample_b.json")
    assert e.shape.startswith("mem0 get_all bare list")
    by_text = {i.text: i for i in e.items}
    # \u escapes decoded: emoji, arrow, umlaut, euro sign
    assert "Marco is on call now → page Marco first 📟" in by_text
    assert any("café" in t and "€" in t for t in by_text)
    # Pacific offsets on both sides of the DST change, normalised to UTC
    assert by_text["Priya is on call"].time == "2026-03-02T17:17:00Z"          # -08:00 (PST)
    assert by_text["Switched from Jest to Vitest"].time == "2026-08-03T11:27:45.336018Z"  # -07:00 (PDT)
    # null updated_at falls back to created_at; the raw value is kept
    assert by_text["Uses Jest for tests"].time_raw == "2026-03-02T09:16:02.904112-08:00"
    # run-scoped group-chat item keeps its scope; unknown fields are tolerated
    run = by_text["Marco is on call now → page Marco first 📟"]
    assert run.provenance["run_id"] == "standup-2026-09-07" and run.provenance["actor_id"] == "Jürgen"
    assert holds(e, PHONE)


def test_mem0_paginated_page_warns():
    e = load_mem0(FIX / "mem0_paginated.json")
    assert "paginated" in e.shape and len(e.items) == 3
    assert any("one page (3 of 5" in w for w in e.warnings)
    assert e.items[0].text == "Production moved from eu-west-2 to eu-central-1"
    assert e.items[2].provenance["replaced_by"].endswith("0003")


def test_mem0_history_rebuilds_store_and_keeps_deleted_text():
    e = load_mem0(FIX / "mem0_history.json")
    assert e.shape.startswith("mem0 history()")
    assert sorted(i.id for i in e.items) == ["m-money", "m-region"]
    assert e.by_id()["m-region"].text == "Deploys to eu-central-1 (moved from eu-west-2)"
    deleted = [r for r in e.retained if "DELETE" in r["where"]]
    assert deleted and PHONE in deleted[0]["text"]
    assert not holds(e, PHONE)


def test_mem0_history_rows_are_replayed_in_time_order(tmp_path):
    p = tmp_path / "h.json"
    p.write_text(json.dumps([
        {"id": "h2", "memory_id": "m1", "event": "UPDATE", "old_memory": "Tests use Jest",
         "new_memory": "Tests use Vitest", "created_at": "2026-01-01T09:00:00Z", "updated_at": "2026-03-01T09:00:00Z"},
        {"id": "h1", "memory_id": "m1", "event": "ADD", "new_memory": "Tests use Jest",
         "created_at": "2026-01-01T09:00:00Z", "updated_at": None},
        {"id": "h4", "memory_id": "m2", "event": "DELETE", "old_memory": "Phone +44 7700 900461",
         "created_at": "2026-02-02T10:00:00.500000Z", "updated_at": None},
        {"id": "h3", "memory_id": "m2", "event": "ADD", "new_memory": "Phone +44 7700 900461",
         "created_at": "2026-02-02T10:00:00Z", "updated_at": None},
    ]))
    e = load_mem0(p)
    assert texts(e) == ["Tests use Vitest"]
    assert not e.warnings


def test_mem0_history_without_readable_times_replays_by_event(tmp_path):
    # an ADD without a time still comes before the UPDATE of the same memory
    p = tmp_path / "h.json"
    p.write_text(json.dumps([{"id": "h1", "memory_id": "m1", "event": "ADD", "new_memory": "a"},
                             {"id": "h2", "memory_id": "m1", "event": "UPDATE", "old_memory": "a", "new_memory": "b",
                              "created_at": "2026-01-01T00:00:00Z"}]))
    e = load_mem0(p)
    assert texts(e) == ["b"] and e.view == "rebuilt"


def test_mem0_history_delete_without_times_before_its_add_stays_deleted(tmp_path):
    # mem0 0.1.118 writes DELETE rows with both times null, and get_history sorts them first
    p = tmp_path / "h.json"
    p.write_text(json.dumps([
        {"id": "d", "memory_id": "m2", "event": "DELETE", "old_memory": "Phone +44 7700 900461", "new_memory": None,
         "created_at": None, "updated_at": None, "is_deleted": True},
        {"id": "a", "memory_id": "m2", "event": "ADD", "old_memory": None, "new_memory": "Phone +44 7700 900461",
         "created_at": "2026-05-19T09:48:00-07:00", "updated_at": None, "is_deleted": False},
        {"id": "b", "memory_id": "m1", "event": "ADD", "new_memory": "Tabs, not spaces",
         "created_at": "2026-04-22T06:07:00-07:00", "updated_at": None}]))
    e = load_mem0(p)
    assert texts(e) == ["Tabs, not spaces"] and not holds(e, PHONE)
    assert [r["text"] for r in e.retained] == ["Phone +44 7700 900461"]


def test_mem0_history_updates_without_times_keep_file_order_with_a_warning(tmp_path):
    p = tmp_path / "h.json"
    p.write_text(json.dumps([{"id": "h1", "memory_id": "m1", "event": "ADD", "new_memory": "a"},
                             {"id": "h2", "memory_id": "m1", "event": "UPDATE", "old_memory": "a", "new_memory": "b"},
                             {"id": "h3", "memory_id": "m1", "event": "UPDATE", "old_memory": "b", "new_memory": "c"}]))
    e = load_mem0(p)
    assert texts(e) == ["c"] and any("in file order" in w for w in e.warnings)


def test_mem0_order_compares_times_not_characters(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"results": [
        {"id": "a", "memory": "whole second", "updated_at": "2026-01-01T10:00:00Z"},
        {"id": "b", "memory": "half a second later", "updated_at": "2026-01-01T10:00:00.500000Z"},
        {"id": "c", "memory": "an hour later in Berlin, earlier in UTC", "updated_at": "2026-01-01T10:30:00+01:00"},
    ]}))
    assert [i.id for i in load_mem0(p).items] == ["b", "a", "c"]


def test_mem0_history_bad_event(tmp_path):
    p = tmp_path / "h.json"
    p.write_text(json.dumps([{"id": "h1", "memory_id": "m1", "event": "MERGE", "new_memory": "x"}]))
    with pytest.raises(StoreError, match=r"item \[0\] \(id 'h1'\): event must be one of 'ADD', 'UPDATE'"):
        load_mem0(p)


def test_mem0_exactly_twenty_items_warns_truncation(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"results": [{"id": f"m{k}", "memory": f"fact {k}"} for k in range(20)]}))
    assert any("may be truncated" in w for w in load_mem0(p).warnings)


@pytest.mark.parametrize("payload, match", [
    ({"results": [{"id": "a1", "memory": "fine"}, {"id": "a2", "memory": 42}]},
     r"item \[1\] \(id 'a2'\): memory must be a string; got 42"),
    ({"results": [{"memory": "no id"}]}, r"item \[0\]: id is required"),
    ({"results": [{"id": "a", "memory": "x", "created_at": 5}]}, r"created_at must be a string or null; got 5"),
    ({"results": [{"id": "a", "memory": "x", "metadata": []}]}, r"metadata must be an object"),
    ({"results": [{"id": "a", "memory": "x"}, {"id": "a", "memory": "y"}]}, r": id must be unique"),
    ({"results": "nope"}, r"top level: results must be a list"),
    ({"things": []}, r"not a Mem0 export"),
    (["not an object"], r"item \[0\]: a memory item must be an object"),
])
def test_mem0_wrong_types_name_file_item_field(tmp_path, payload, match):
    p = tmp_path / "m.json"
    p.write_text(json.dumps(payload))
    with pytest.raises(StoreError, match=match) as info:
        load_mem0(p)
    assert str(p) in str(info.value)


def test_mem0_shipped_bad_fixture():
    with pytest.raises(StoreError, match=r"mem0_bad_type.json: item \[1\] \(id 'a2'\): memory must be a string"):
        load_mem0(FIX / "mem0_bad_type.json")


# -- files: truncated, non-UTF-8, too large, pickles ---------------------------------------

@pytest.mark.parametrize("loader, sample", [(load_mem0, "mem0_sample_a.json"), (load_letta, "letta_sample_a.af"),
                                            (load_amem, "amem_sample_a.json")])
def test_truncated_file(tmp_path, loader, sample):
    raw = (FIX / sample).read_bytes()
    p = tmp_path / sample
    p.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(StoreError, match=r"not valid JSON \(the file looks truncated\)") as info:
        loader(p)
    assert str(p) in str(info.value)


@pytest.mark.parametrize("loader", [load_mem0, load_letta, load_amem])
def test_non_utf8_bytes(tmp_path, loader):
    p = tmp_path / "latin1.json"
    p.write_bytes('{"results": [{"id": "a", "memory": "Zoë"}]}'.encode("latin-1"))
    with pytest.raises(StoreError, match=r"latin1.json: not UTF-8 text: byte 0xeb at offset 38 cannot be decoded"):
        loader(p)


def test_utf8_bom_accepted(tmp_path):
    p = tmp_path / "bom.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps({"results": [{"id": "a", "memory": "x"}]}).encode())
    assert texts(load_mem0(p)) == ["x"]


def test_size_limit_refuses_and_is_overridable(tmp_path):
    p = tmp_path / "big.json"
    p.write_text(json.dumps({"results": [{"id": "a", "memory": "x" * 500}]}))
    with pytest.raises(StoreError, match=r"larger than the 100 bytes memaudit reads for Mem0 exports; raise the limit with --max-bytes"):
        load_mem0(p, max_bytes=100)
    assert len(load_mem0(p, max_bytes=None).items) == 1


@pytest.mark.parametrize("name", ["memory_cache_sample_0.pkl", "notes.json"])
def test_pickle_refused_never_loaded(tmp_path, name, monkeypatch):
    p = tmp_path / name
    p.write_bytes(pickle.dumps({"n1": {"content": "x"}}, protocol=4))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("unpickled"))
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: pytest.fail("unpickled"))
    with pytest.raises(StoreError, match=r"looks like a Python pickle .* never unpickles .* json.dump"):
        load_amem(p)


@pytest.mark.parametrize("protocol", [0, 1])
@pytest.mark.parametrize("obj", [{"n1": {"content": "x"}}, [{"content": "x"}]])
def test_old_protocol_pickles_refused(tmp_path, protocol, obj):
    p = tmp_path / "notes.json"
    p.write_bytes(pickle.dumps(obj, protocol=protocol))
    with pytest.raises(StoreError, match=r"looks like a Python pickle"):
        load_amem(p)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_size_limit_holds_for_files_without_a_size():
    # /dev/zero reports size 0: the limit must still stop the read
    with pytest.raises(StoreError, match=r"/dev/zero: is a character device, not a Mem0 export file"):
        load_mem0("/dev/zero", max_bytes=1000)


@pytest.mark.parametrize("loader", [load_mem0, load_letta, load_amem])
def test_integer_too_long_for_python_is_one_error(tmp_path, loader):
    p = tmp_path / "huge.json"
    p.write_text('{"results": [{"id": "a", "memory": "x", "created_at": ' + "9" * 5000 + "}]}")
    with pytest.raises(StoreError, match=r"huge.json: not valid JSON: an integer of 5,000 digits \(9999.*\), more than the 1000 memaudit reads"):
        loader(p)


@pytest.mark.parametrize("loader, doc", [
    (load_mem0, {"results": [{"id": "a", "memory": "\ud800 eu-west-2"}]}),
    (load_letta, [{"id": "passage-1", "text": "ok", "tags": ["\udfff"]}]),
    (load_amem, {"notes": {"\udc00": None}}),
])
def test_lone_surrogates_are_refused_at_read_time(tmp_path, loader, doc):
    p = tmp_path / "sur.json"
    p.write_text(json.dumps(doc), encoding="ascii")  # json.dumps writes the surrogate as a \u escape
    with pytest.raises(StoreError, match=r"sur.json: (field|a key).*\\u[dD][89a-fA-F]\w\w, a lone UTF-16 surrogate"):
        loader(p)


def test_surrogate_pairs_are_fine(tmp_path):
    p = tmp_path / "pair.json"
    p.write_text(json.dumps({"results": [{"id": "a", "memory": "phone \U0001F4DE"}]}), encoding="ascii")
    assert texts(load_mem0(p)) == ["phone \U0001F4DE"]


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(StoreError, match="no such file"):
        load_mem0(tmp_path / "nope.json")
    with pytest.raises(StoreError, match="is a directory"):
        load_letta(tmp_path)


def test_store_error_is_a_memaudit_error():
    assert issubclass(StoreError, MemauditError) and issubclass(StoreError, ValueError)


# -- Letta ------------------------------------------------------------------------------

def test_letta_sample_a_current_agent_file():
    e = load_letta(FIX / "letta_sample_a.af")
    assert e.shape.startswith("letta agent file (current")
    blocks = [i for i in e.items if i.source.startswith("block:")]
    assert {i.source for i in blocks} == {"block:persona", "block:human", "block:ledgerline_project"}
    project = [i.text for i in blocks if i.source == "block:ledgerline_project"]
    assert project[0] == "Deploy region: eu-central-1 (moved from eu-west-2 on 2026-06-15)"
    # blocks come first in the product order, then messages newest first
    assert [i.rank for i in e.items] == list(range(len(e.items)))
    assert all(i.source.startswith("block:") for i in e.items[: len(blocks)])
    msgs = e.items[len(blocks):]
    assert [m.time for m in msgs] == sorted((m.time for m in msgs), reverse=True)
    # the phone number is gone from the blocks but survives in the in-context messages
    assert not any(PHONE in i.text for i in blocks)
    assert "message-2" in holds(e, PHONE) and "message-5" in holds(e, PHONE)
    # the system message (compiled snapshot) is not an item; the system_alert summary is, decoded
    assert "message-0" not in e.by_id()
    summary = e.by_id()["message-1"].text
    assert summary.startswith("Note: prior messages") and "Priya is the on-call engineer" in summary
    # tool-call arguments (a JSON string) are decoded
    assert "archival_memory_insert(content=Ledgerline PostgreSQL 15 -> 17" in e.by_id()["message-10"].text


def test_letta_core_only():
    e = load_letta(FIX / "letta_sample_a.af", include_messages=False)
    assert all(i.source.startswith("block:") for i in e.items) and not holds(e, PHONE)


def test_letta_legacy_v1():
    e = load_letta(FIX / "letta_sample_b.af")
    assert e.shape == "letta agent file (legacy v1, version '0.6.54')"
    # naive timestamps stay naive (no invented offset)
    assert e.by_id()["human:line2"].time == "2026-09-07T07:54:44"
    # the failed core_memory_replace left the phone number in the block
    assert "human:line2" in holds(e, PHONE)
    # raw UTF-8, superseded lines side by side, label with '/'
    assert "Name: Dana Kowalczyk (Zoë on Slack)" in texts(e)
    assert {"Tests: Jest", "Tests: Vitest", "On-call: Priya", "On-call: Marco"} <= set(texts(e))
    assert e.by_id()["ledgerline/project:line1"].source == "block:ledgerline/project"
    # JSON-wrapped user turns decoded; login / heartbeat turns dropped; out-of-order in-context indices
    assert "Bitte vergiss meine Telefonnummer — forget my phone number." in texts(e)
    assert not any("login" in t or "heartbeat" in t for t in texts(e))
    # a message outside the in-context indices is retained (recall memory), not served
    assert [r["id"] for r in e.retained] == ["message-2"]
    assert "We still use Jest, and Priya is on call." not in texts(e)


def test_letta_double_encoded_file():
    e = load_letta(FIX / "letta_double_encoded.af")
    assert e.shape.startswith("letta agent file (current")
    # blocks in the agent's block_ids order, empty lines skipped, '/' labels kept
    assert texts(e) == ["On-call: Marco", "Money class for amounts", "I am mini.", "Marco is on call now."]
    assert e.items[2].source == "block:system/persona"


def test_letta_archival_passages():
    e = load_letta(FIX / "letta_passages.json")
    assert e.shape == "letta archival passages (list)"
    assert [i.id for i in e.items] == ["passage-3", "passage-1"]
    assert all(i.source == "archival" for i in e.items)
    assert e.retained and PHONE in e.retained[0]["text"] and "soft-deleted" in e.retained[0]["where"]


def test_letta_archival_search_response(tmp_path):
    p = tmp_path / "search.json"
    p.write_text(json.dumps({"results": [{"id": "passage-9", "timestamp": "2026-09-07 08:10:14 AM UTC+0000",
                                          "content": "PG17 postmortem", "tags": []}], "count": 1}))
    e = load_letta(p)
    assert texts(e) == ["PG17 postmortem"] and e.items[0].time is None
    assert e.items[0].time_raw == "2026-09-07 08:10:14 AM UTC+0000"


@pytest.mark.parametrize("payload, match", [
    ({"agents": [], "blocks": [{"id": "block-0", "label": "human", "value": 7}]},
     r"item 'blocks\[0\]' \(id 'block-0'\): value must be a string; got 7"),
    ({"agents": [{"block_ids": [], "messages": [{"id": "m1", "role": "user", "content": 3}]}]},
     r"messages\[0\]' \(id 'm1'\): content must be a list of parts or a string"),
    ({"core_memory": [{"label": "human", "value": "x"}], "messages": [], "in_context_message_indices": [4]},
     r"in_context_message_indices\[0\] must be an index into messages"),
    ({"agents": "x"}, r"top level: agents must be a list"),
    ({"something": 1}, r"not a Letta export"),
    ([{"id": "passage-1", "text": None}], r"item \[0\] \(id 'passage-1'\): text must be a string; got null"),
])
def test_letta_wrong_types(tmp_path, payload, match):
    p = tmp_path / "a.af"
    p.write_text(json.dumps(payload))
    with pytest.raises(StoreError, match=match):
        load_letta(p)


@pytest.mark.parametrize("payload, match", [
    ([{"id": "p", "text": "Deploy eu-central-1"}, {"id": "p", "text": "Deploy eu-central-1 again"}],
     r"item \[1\] \(id 'p'\): id must be unique; 'p' is also item \[0\]"),
    ([{"id": "p", "text": "x", "is_deleted": True}, {"id": "p", "text": "y"}], r"'p' is also item \[0\]"),
    ({"agents": [{"messages": [{"id": "m", "role": "user", "content": "a"}, {"id": "m", "role": "user",
                                                                          "content": "b"}]}], "blocks": []},
     r"agents\[0\].messages\[1\]' \(id 'm'\): id must be unique; 'm' is also agents\[0\].messages\[0\]"),
    ({"agents": [{"id": "A", "messages": [{"id": "m", "role": "user", "content": "a"}]},
                 {"id": "A", "messages": [{"id": "m", "role": "user", "content": "b"}]}], "blocks": []},
     r"agents\[1\]' \(id 'A'\): id must be unique; 'A' is also agents\[0\]"),
    ({"agents": [{"block_ids": ["b"], "messages": [{"id": "b:line1", "role": "user", "content": "y"}]}],
      "blocks": [{"id": "b", "value": "x"}]},
     r"memory id 'b:line1' is used twice: .*line 1 of block 'b'.*messages\[0\]"),
    ({"agents": [], "blocks": [{"id": "b", "value": "x"}, {"id": "b", "value": "y"}]},
     r"blocks\[1\]' \(id 'b'\): id must be unique; 'b' is also blocks\[0\]"),
    ({"core_memory": [{"label": "human", "value": "x"}, {"label": "human", "value": "y"}]},
     r"core_memory\[1\]' \(label 'human'\): label must be unique; 'human' is also core_memory\[0\]"),
    ({"agents": [{"block_ids": [["b"]]}], "blocks": [{"id": "b", "value": "x"}]},
     r"agents\[0\]': block_ids\[0\] must be a string; got \[\"b\"\]"),
    ({"agents": [{"block_ids": [{}]}], "blocks": [{"id": "b", "value": "x"}]}, r"block_ids\[0\] must be a string"),
    ({"agents": [{"in_context_message_ids": [{"a": 1}], "messages": []}]},
     r"in_context_message_ids\[0\] must be a message id \(a string\)"),
])
def test_letta_duplicate_and_unhashable_ids_are_refused(tmp_path, payload, match):
    p = tmp_path / "dup.af"
    p.write_text(json.dumps(payload))
    with pytest.raises(StoreError, match=match) as info:
        load_letta(p)
    assert str(p) in str(info.value)


def test_letta_same_message_id_in_two_agents_gets_the_agent_prefix(tmp_path):
    p = tmp_path / "two.af"
    p.write_text(json.dumps({"agents": [{"id": "A", "messages": [{"id": "m", "role": "user", "content": "a"}]},
                                        {"id": "B", "messages": [{"id": "m", "role": "user", "content": "b"}]}],
                             "blocks": []}))
    assert sorted(item.id for item in load_letta(p).items) == ["A:m", "B:m"]


# -- A-Mem ------------------------------------------------------------------------------

def test_amem_sample_a_mcp_bulk():
    e = load_amem(FIX / "amem_sample_a.json")
    assert e.shape == "a-mem MCP read_memory_note bulk response"
    assert len(e.items) == 12
    # the deleted note comes back null and is still linked to: both reported
    assert any("came back null" in w and "ac0e36d5" in w for w in e.warnings)
    assert any("1 link(s) name no note" in w for w in e.warnings)
    # integer timestamps (Chroma-loaded) and the string one (cached) both parse
    assert e.by_id()["21bade02-6a6a-4768-b2ed-66ffdcc99396"].time == "2026-04-22T15:05:00"
    assert e.by_id()["e429392b-51a7-436e-8109-0aee5622276a"].time == "2026-09-12T21:02:00"
    # the phone note is kept next to the forget-request note
    assert holds(e, PHONE) == ["2e09e4b8-245e-4ebc-817a-f708207473b7"]
    # item text = content + context + keywords + tags; order = retrieval_count descending
    first = e.items[0]
    assert first.provenance["retrieval_count"] == 10 and "context: A formatting rule" in first.text
    counts = [i.provenance["retrieval_count"] for i in e.items]
    assert counts == sorted(counts, reverse=True)


def test_amem_huge_numbers_are_errors_or_unknown_times(tmp_path):
    p = tmp_path / "count.json"
    p.write_text(json.dumps([{"id": "n", "content": "x", "retrieval_count": "9" * 5000}]))
    with pytest.raises(StoreError, match=r"count.json: item \[0\] \(id 'n'\): retrieval_count must be an "
                                         r"integer of at most 4300 digits"):
        load_amem(p)
    p.write_text('[{"id": "n", "content": "x", "timestamp": ' + "9" * 400 + "}]")
    e = load_amem(p)
    assert e.items[0].time is None and any("is not a time memaudit can read" in w for w in e.warnings)
    assert parse_time(float("inf")) is None and parse_time(float("nan")) is None and parse_time(10 ** 400) is None


def test_amem_order_compares_times_not_characters(tmp_path):
    p = tmp_path / "n.json"
    p.write_text(json.dumps([{"id": "a", "content": "x", "timestamp": "2026-01-01T10:00:00"},
                             {"id": "b", "content": "y", "timestamp": "2026-01-01T10:00:00.500000"}]))
    assert [i.id for i in load_amem(p).items] == ["b", "a"]


def test_amem_chroma_dump_all_string_metadata():
    e = load_amem(FIX / "amem_sample_b.json")
    assert e.shape == "a-mem ChromaDB collection.get() dump"
    phone = e.by_id()["a3"]
    # JSON-in-string lists with \u escapes next to raw UTF-8 content
    assert phone.text.startswith("Zoë's phone is +44 7700 900461 ☎") and "keywords: Zoë, phone" in phone.text
    assert "tags: café" in phone.text
    # "General" context and empty keywords add nothing to the text
    assert e.by_id()["a4"].text == "Tests use Jest."
    # string retrieval counts are numbers again
    assert e.items[0].id == "a2" and e.items[0].provenance["retrieval_count"] == 3
    # free-form timestamps: parsed when they can be, kept raw otherwise
    assert e.by_id()["a1"].time == "2025-01-20T10:14:00" and e.by_id()["a2"].time == "2025-03-03T13:05:00"
    assert e.by_id()["a5"].time is None and e.by_id()["a5"].time_raw == "sometime in August"
    # index-style and dangling links are reported, exact ids resolve
    assert any("3 link(s) name no note" in w for w in e.warnings)


def test_amem_memory_all_warns_truncation():
    e = load_amem(FIX / "amem_memory_all.json")
    assert any("200 characters" in w for w in e.warnings)
    assert texts(e)[1] == "Money class for amounts"


def test_amem_plain_list_and_single_note(tmp_path):
    p = tmp_path / "l.json"
    p.write_text(json.dumps([{"id": "x1", "content": 12345, "tags": "[\"a\"]", "timestamp": "202601011200"}]))
    e = load_amem(p)
    assert e.items[0].text == "12345\ntags: a"  # an all-digit content read back as a number
    p.write_text(json.dumps({"status": "success", "note": {"id": "x2", "content": "Money class"}}))
    assert texts(load_amem(p)) == ["Money class"]


@pytest.mark.parametrize("payload, match", [
    ({"notes": {"n1": {"id": "n1", "content": ["x"]}}}, r"item 'n1' \(id 'n1'\): content must be a string"),
    ({"notes": {"n1": {"id": "n1", "content": "x", "links": "not json"}}},
     r"links must be a list or a JSON list inside a string"),
    ({"notes": {"n1": {"id": "n1", "content": "x", "retrieval_count": "many"}}},
     r"retrieval_count must be an integer"),
    ({"ids": ["a"], "metadatas": [], "documents": []}, r"metadatas must be a list with one entry per id"),
    ({"ids": ["a"], "metadatas": [{"tags": "[]"}], "documents": [None]}, r"has no metadata 'content'"),
    (7, r"not an A-Mem export"),
])
def test_amem_wrong_types(tmp_path, payload, match):
    p = tmp_path / "n.json"
    p.write_text(json.dumps(payload))
    with pytest.raises(StoreError, match=match):
        load_amem(p)


# -- shared -----------------------------------------------------------------------------

def test_load_export_dispatch_and_unknown_product():
    assert load_export("letta", FIX / "letta_sample_a.af").product == "letta"
    with pytest.raises(StoreError, match="unknown product 'zep'; valid products: mem0, letta, amem"):
        load_export("zep", FIX / "letta_sample_a.af")


def test_importers_never_modify_the_file(tmp_path):
    for name, loader in [("mem0_sample_a.json", load_mem0), ("letta_sample_a.af", load_letta),
                         ("amem_sample_a.json", load_amem)]:
        before = (FIX / name).read_bytes()
        loader(FIX / name)
        assert (FIX / name).read_bytes() == before


@pytest.mark.parametrize("raw, expected", [
    ("2026-09-07T00:55:12-07:00", "2026-09-07T07:55:12Z"),
    ("2026-01-22T02:06:34.048739+00:00", "2026-01-22T02:06:34.048739Z"),
    ("2025-04-01T03:47:27", "2025-04-01T03:47:27"),
    ("202604221505", "2026-04-22T15:05:00"),
    (202604221505, "2026-04-22T15:05:00"),
    ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00"),
    ("2025-01-20 10:14", "2025-01-20T10:14:00"),
    ("08:51:08 PM PDT-0700", None),
    ("", None),
    (None, None),
    (True, None),
])
def test_parse_time(raw, expected):
    assert parse_time(raw) == expected


def test_mem0_openmemory_backup_retains_deleted_and_archived():
    e = load_export("mem0", FIX / "mem0_openmemory_backup.json")
    assert e.shape == "mem0 OpenMemory backup (memories.json)"
    assert [i.id for i in e.items] == ["om-1", "om-4"]  # active only, newest first
    assert {r["id"]: r["where"] for r in e.retained} == {"om-2": "OpenMemory backup, state 'deleted'",
                                                         "om-3": "OpenMemory backup, state 'archived'"}
    assert not holds(e, PHONE) and PHONE in e.retained[0]["text"]


# -- the one reader: what memaudit.formats refuses, every importer refuses ------------------------

@pytest.mark.parametrize("loader", [load_mem0, load_letta, load_amem])
@pytest.mark.parametrize("text, match", [
    ('{"results": [{"id": "a", "memory": "x", "memory": "y"}]}', r"key 'memory' appears twice in one JSON object "
                                                                  r"\(the object with id 'a'\)"),
    ('{"results": [{"id": "a", "memory": "x", "score": NaN}]}', r"results\[0\]\['score'\] must be a finite number; "
                                                                r"got NaN"),
    ('{"results": ' + "[" * 150 + "]" * 150 + "}", r"nested more than 100 lists / objects deep"),
])
def test_every_importer_reads_through_the_one_reader(tmp_path, loader, text, match):
    p = tmp_path / "e.json"
    p.write_text(text)
    with pytest.raises(StoreError, match=match) as info:
        loader(p)
    assert str(info.value).startswith(f"{p}: ") and "\n" not in str(info.value)


def test_jsonl_lines_are_read_by_the_one_reader(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('{"id": "a", "content": "x"}\n{"id": "b", "content": "y", "id": "c"}\n')
    with pytest.raises(StoreError, match=r"m.jsonl: line 2: not valid JSON: key 'id' appears twice"):
        load_mem0(p)
