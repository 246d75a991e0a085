"""The importers on the export files the products' own code wrote (/work/shared/formats/real/, read at test time).

The expected numbers below come from reading each file and its README by hand (which memories the
store serves, which it only keeps, where the phone number +44 7700 900461 that Dana asked to
forget still sits), not from running the importers.  The files are not shipped: every test skips
cleanly when the folder is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memaudit.cli import main
from memaudit.package import load_package
from memaudit.stores import load_any
from memaudit.text import mentions

REAL = Path("/work/shared/formats/real")
ROOT = Path(__file__).resolve().parents[1]
LEDGERLINE = ROOT / "packages_data" / "natural" / "ledgerline.json"
PHONE = ["+44 7700 900461", "07700 900461", "447700900461"]

pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="the real export files are not on this machine")

#: file -> (product, view, served, retained, served memories holding the phone, retained texts holding it)
EXPECTED = {
    # a-mem 0.2.6: 12 live notes; the phone note's content was rewritten by update_memory_note, but its
    # keywords and context still hold the number, so every view that carries them leaks it once
    "amem_chroma_get.json": ("amem", "full", 12, 0, 1, 0),
    "amem_lib_vars_notes_list.json": ("amem", "full", 12, 0, 1, 0),
    "amem_mcp_read_memory_note_bulk.json": ("amem", "full", 12, 0, 1, 0),  # 13 ids asked, one deleted (null)
    "amem_mcp_resource_all.json": ("amem", "full", 12, 0, 1, 0),
    "amem_mcp_search_memories.json": ("amem", "partial", 5, 0, 1, 0),  # 5 results; the phone in context/keywords
    # letta 0.16.8 memgpt_v2_agent: 10 block lines (human 1, persona 1, project 8) + 14 user turns + 31 assistant
    # messages + 14 memory-tool returns (8 insert, 6 replace; send_message receipts and "None" returns carry
    # nothing); 16 heartbeats and 1 login are system events. The phone: the user's turn, the memory_insert
    # arguments, the tool return showing the human block with it, the memory_replace that removed it
    "letta_export_file.af": ("letta", "full", 69, 0, 4, 0),
    "letta_passages.json": ("letta", "full", 2, 0, 0, 0),
    # letta_v1_agent: same blocks, 14 user turns, 30 assistant messages, 14 memory-tool returns, no heartbeats
    "letta_v1agent_export_file.af": ("letta", "full", 68, 0, 4, 0),
    # OpenMemory: 14 memories, 11 active; paused (Jest), archived (Priya), deleted (the phone) are kept
    "mem0_openmemory_memories.json": ("mem0", "full", 11, 3, 0, 1),
    "mem0_openmemory_memories.jsonl": ("mem0", "full", 11, 3, 0, 1),
    # mem0 0.1.118 v1.1 history: 12 memories, the phone DELETEd (its DELETE row has no times and comes first
    # in the file); 3 UPDATE old texts + 1 DELETE old text kept in history.db
    "mem0v01_v11_history_all.json": ("mem0", "rebuilt", 11, 4, 0, 1),
    "mem0v10_get_all.json": ("mem0", "full", 11, 0, 0, 0),
    "mem0v10_history_all.json": ("mem0", "rebuilt", 11, 4, 0, 1),
    # mem0 2.2.1 inferred (ADD-only): the forget request became a new memory beside the phone memory
    "mem0v2_inferred_get_all.json": ("mem0", "full", 15, 0, 1, 0),
    "mem0v2_inferred_history_all.json": ("mem0", "rebuilt", 15, 0, 1, 0),
    # mem0 2.2.1 verbatim: 17 memories added, the phone deleted, the Priya memory expired on 2026-06-30
    # (before the newest time the files record, 2026-09-14)
    "mem0v2_raw_qdrant_scroll_ledgerline_verbatim.json": ("mem0", "full", 15, 1, 0, 0),
    "mem0v2_verbatim_get_all.json": ("mem0", "full", 15, 0, 0, 0),
    "mem0v2_verbatim_get_all_show_expired.json": ("mem0", "full", 15, 1, 0, 0),
    "mem0v2_verbatim_get_one.json": ("mem0", "partial", 1, 0, 0, 0),
    # history rows carry no expiration_date: the expired Priya memory still counts as served here
    "mem0v2_verbatim_history_all.json": ("mem0", "rebuilt", 16, 2, 0, 1),
    "mem0v2_verbatim_search_phone.json": ("mem0", "partial", 3, 0, 0, 0),
}


def test_every_real_file_is_covered():
    present = {p.name for p in REAL.iterdir() if p.name != "README.md"}
    assert present == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_file_read_as_what_it_is(name):
    product, view, served, retained, leaks, retained_leaks = EXPECTED[name]
    e = load_any(REAL / name)  # the product is detected from the content
    assert (e.product, e.view, len(e.items), len(e.retained)) == (product, view, served, retained), e.shape
    assert sum(mentions(i.text, PHONE) for i in e.items) == leaks
    assert sum(mentions(r["text"], PHONE) for r in e.retained) == retained_leaks
    assert len({i.id for i in e.items}) == len(e.items)


def test_letta_system_events_are_not_memories():
    e = load_any(REAL / "letta_export_file.af")
    users = [i for i in e.items if i.source == "message:user"]
    assert len(users) == 14 and not any(i.text.lstrip().startswith("{") for i in users)
    assert any("17 user-role messages are system events (heartbeat 16, login 1)" in w for w in e.warnings)
    tool = [i for i in e.items if i.source.startswith("message:tool:")]
    assert {i.source for i in tool} == {"message:tool:memory_insert", "message:tool:memory_replace"}
    assert len(tool) == 14
    # the tool return after the phone's memory_insert shows the whole human block with the number
    assert any(i.id == "message-42" and mentions(i.text, PHONE) for i in tool)


def test_mem0_0_1_history_does_not_bring_the_deleted_phone_back():
    e = load_any(REAL / "mem0v01_v11_history_all.json")
    assert "f69e9517-df7d-49ff-a5f2-7c2bc6b94dda" not in e.by_id()
    assert [r["where"] for r in e.retained if mentions(r["text"], PHONE)] == [
        "history (DELETE old_memory: deleted, text kept in history.db)"]


def test_expiry_is_judged_against_the_export_date():
    f = REAL / "mem0v2_verbatim_get_all_show_expired.json"
    priya = "3c9d46e3-0f36-4154-a3d5-80e4ba0f635e"
    assert priya not in load_any(f).by_id()
    assert priya in load_any(f, as_of="2026-06-30").by_id()  # the expiry day itself still serves it
    assert priya not in load_any(f, as_of="2026-07-01").by_id()


def test_amem_search_output_is_not_mem0_and_leaks_the_phone():
    e = load_any(REAL / "amem_mcp_search_memories.json")
    assert e.product == "amem" and "search" in e.shape
    phone_note = e.by_id()["b3a26d99-267f-4963-9495-1c95cf670a7c"]
    assert mentions(phone_note.text, PHONE) and phone_note.source == "search result"


def _audit(*args):
    result = CliRunner().invoke(main, ["audit", str(LEDGERLINE), *map(str, args), "--json", "--backend", "none"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_audit_of_a_partial_view_reports_leaks_not_ratios():
    doc = _audit(REAL / "amem_mcp_search_memories.json")
    assert (doc["view"], doc["scored"], doc["ratios"], doc["opt"]) == ("partial", False, None, None)
    assert [leak["memory"] for leak in doc["leaks"]] == ["b3a26d99-267f-4963-9495-1c95cf670a7c"]
    assert doc["verdict"].startswith("a partial view")


def test_audit_of_the_rebuilt_0_1_store_finds_no_served_leak():
    doc = _audit(REAL / "mem0v01_v11_history_all.json", "--product", "mem0", "--budget-frac", "1")
    assert doc["scored"] and doc["n_items"] == 11 and doc["leaks"] == []
    assert len(doc["retained_leaks"]) == 1
    pkg = load_package(LEDGERLINE)
    assert 0 <= doc["ratios"]["salience_pruned"] <= doc["ratios"]["upper_pruned"] <= 1 and doc["opt"] > 0
    assert doc["package"] == pkg.id
