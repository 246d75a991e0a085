"""memaudit diagnose on LoCoMo conversations: the adapter (memaudit.locomo.diagnose), its item map and the CLI.

Fast tests run on the made-up conversation of memaudit.locomo.demo; the real conversations are read from
/work/shared/data/locomo/ at test time and skipped when absent (no LoCoMo text is committed).
"""

from __future__ import annotations

import json
import os
import time

import pytest
from click.testing import CliRunner

from memaudit.cli import main
from memaudit.diagnose.errors import DiagnoseError
from memaudit.diagnose.run import ATTRIBUTIONS, diagnose
from memaudit.harness.policies import StoredItem
from memaudit.harness.trial import Plant
from memaudit.locomo.demo import demo_conversation
from memaudit.locomo.diagnose import DIAGNOSE_POLICIES, KINDS, demo_compiled, item_map, parse_policies
from memaudit.package import stream_cost
from memaudit_solvers.objective import evaluate

REAL = "/work/shared/data/locomo"
TRANSCRIPT = ["full-transcript", "last-exchanges", "bm25-transcript", "fresh"]
NOTES = ["bm25-notes:kind=observation", "notes:kind=summary", "notes:kind=observation"]


@pytest.fixture(scope="module")
def compiled():
    return demo_compiled()


@pytest.fixture(scope="module")
def doc(compiled):
    return diagnose(compiled, parse_policies(list(DIAGNOSE_POLICIES)), budget_frac=1.0,
                    plant=Plant("locomo", {"path": "demo"}, compiled.scenario))


@pytest.fixture(scope="module")
def doc_small(compiled):
    return diagnose(compiled, parse_policies(list(DIAGNOSE_POLICIES)), budget_frac=0.3)


def pol(doc, name):
    return next(p for p in doc["policies"] if p["policy"] == name)


def rows(doc, name):
    return [r for r in doc["rows"] if r["policy"] == name]


def stores(doc, name):
    return [s for s in doc["stores"] if s["policy"] == name]


@pytest.fixture
def demo_file(tmp_path):
    path = tmp_path / "demo.json"
    path.write_text(json.dumps(demo_conversation()), encoding="utf-8")
    return path


# -- the compiled scenario and the item map --------------------------------------------

def test_one_checkpoint_holding_the_whole_conversation(compiled):
    sc = compiled.scenario
    (s, cp), = compiled.checkpoints.items()
    assert s == sc.n_sessions == 3
    assert cp.experience_ids == [e.id for e in cp.package.experiences]
    # every probe's units are the package query's, one per evidence turn; an abstention probe needs none
    for p in sc.probes:
        q = next(q for q in cp.package.queries if q.id == p.id)
        assert cp.probe_units[p.id] == tuple(q.requires)
        assert len(cp.probe_units[p.id]) == (0 if p.abstain else len(p.evidence))


def test_item_map_is_total_over_every_item_a_policy_can_hold(compiled):
    sc = compiled.scenario
    cp = next(iter(compiled.checkpoints.values()))
    imap = cp.item_map()
    cands = {c.id: c for c in cp.package.candidates}
    # every possible item has a key: each turn, each observation's anchor exchange, each session's summary
    assert {n for (k, n) in imap if k == "turn"} == set(range(len(sc.exchanges)))
    assert sum(k == "summary" for (k, _) in imap) == sum(n.kind == "summary" for n in sc.notes)
    anchors = {n.covers[-1] for n in sc.notes if n.kind == "observation"}
    assert {cands[c].experience for (k, _), c in imap.items() if k == "observation"} == anchors
    for (kind, n), cid in imap.items():
        assert cands[cid].kind == {"turn": "raw", "observation": "fact", "summary": "summary"}[kind]
        if kind != "summary":
            assert cands[cid].experience == sc.exchanges[n].id
    # and every item every policy stores or injects maps through it
    for policy in parse_policies(TRANSCRIPT + NOTES):
        memory = policy.build(sc, len)
        items = list(memory.items(3))
        for p in sc.probes:
            items += memory.inject_items(3, p.literal)
        for it in items:
            assert (it.kind, it.position) in imap
            assert cp.candidate_of(it, policy=policy.name) == imap[(it.kind, it.position)]


def test_notes_items_say_what_the_harness_injects(compiled):
    sc = compiled.scenario
    for policy in parse_policies(NOTES):
        memory = policy.build(sc, len)
        assert "\n".join(memory.stored(3)) == "\n".join(it.text for it in memory.items(3))
        for p in sc.probes:
            assert memory.inject(3, p.literal) == [it.text for it in memory.inject_items(3, p.literal)]
    # two observations of one turn are one item, as they are one fact candidate
    obs = parse_policies(["notes:kind=observation"])[0].build(sc, len)
    n_obs = sum(n.kind == "observation" for n in sc.notes)
    assert len(obs.items(3)) == len({n.covers[-1] for n in sc.notes if n.kind == "observation"}) < n_obs + 1


def test_an_item_the_package_lacks_is_refused_by_name():
    no_summaries = demo_compiled(kinds=("fact",))
    with pytest.raises(DiagnoseError, match=r"policy 'notes': stored item 'summary' of exchange \d+"):
        diagnose(no_summaries, parse_policies(["notes:kind=summary"]))
    raw_only = demo_compiled(kinds=())
    assert {c.kind for c in next(iter(raw_only.checkpoints.values())).package.candidates} == {"raw"}
    with pytest.raises(DiagnoseError, match="unknown candidate kind 'update' for a LoCoMo package"):
        demo_compiled(kinds=("update",))


# -- write time, read time, attribution --------------------------------------------------

def test_attribution_counts_sum_to_the_probes(doc, doc_small, compiled):
    # LoCoMo's probes have a literal form only: one row per probe
    n = sum(p.question(f) is not None for p in compiled.scenario.probes for f in ("literal", "paraphrase"))
    assert n == len(compiled.scenario.probes) == 8
    for d in (doc, doc_small):
        for p in d["policies"]:
            assert set(p["attribution"]) == set(ATTRIBUTIONS)
            assert sum(p["attribution"].values()) == p["n_probes"] == len(rows(d, p["policy"])) == n


def test_full_transcript_at_the_whole_stream_has_ratio_one_and_no_write_failure(doc, compiled):
    cp = next(iter(compiled.checkpoints.values()))
    (s,) = stores(doc, "full-transcript")
    assert s["budget"] == stream_cost(cp.package) >= s["store_cost"]
    assert s["write_ratio"] == 1.0 and not s["over_budget"]
    assert pol(doc, "full-transcript")["attribution"]["write"] == 0
    assert all(r["evidence_kept"] == 1 and r["evidence_injected"] == 1
               for r in rows(doc, "full-transcript") if r["evidence"])


def test_fresh_fails_only_at_write_time(doc):
    a = pol(doc, "fresh")["attribution"]
    answerable = [r for r in rows(doc, "fresh") if r["evidence"]]
    assert (a["write"], a["retrieval"], a["reader"]) == (len(answerable), 0, 0)
    assert a["ok"] == len(rows(doc, "fresh")) - len(answerable)  # the abstention probes: nothing to say
    assert stores(doc, "fresh")[0]["write_ratio"] == 0


def test_opt_is_ratio_one_and_write_ratios_are_the_stores_values(doc_small, compiled):
    cp = next(iter(compiled.checkpoints.values()))
    (o,) = stores(doc_small, "opt")
    assert o["write_ratio"] == 1.0 and pol(doc_small, "opt")["attribution"]["write"] == 0
    # the observations-only store, scored independently: its fact candidates' value over OPT's
    from memaudit.package import compile_package

    comp = compile_package(cp.package)
    facts = [c.id for c in cp.package.candidates if c.kind == "fact"]
    (s,) = stores(doc_small, "notes[kind=observation,stamp=True]")
    value = evaluate(comp.problem, comp.indices(facts))
    assert s["value"] == pytest.approx(value)
    assert s["write_ratio"] == (0.0 if s["over_budget"] else pytest.approx(value / o["opt"]))


def test_attribution_follows_its_definitions(doc_small):
    for r in doc_small["rows"]:
        if r["outcome"] in ("current", "abstained"):
            assert r["attribution"] == "ok"
        elif r["evidence_kept"] is not None and r["evidence_kept"] < 1:
            assert r["attribution"] == "write"
        elif r["evidence_injected"] is not None and r["evidence_injected"] < 1:
            assert r["attribution"] == "retrieval"
        else:  # evidence injected: a wrong answer is the reader's (LoCoMo's values are stated by reference)
            assert r["attribution"] == "reader"


# -- the CLI -------------------------------------------------------------------------------

def test_cli_table_on_a_locomo_file(demo_file):
    r = CliRunner().invoke(main, ["diagnose", f"locomo:{demo_file}", "--budget-frac", "0.3"])
    assert r.exit_code == 0, r.output
    for label in ("full transcript", "BM25", "notes[kind=summary", "OPT store"):
        assert label in r.output, label
    r = CliRunner().invoke(main, ["diagnose", f"locomo:{demo_file}", "--policy", "notes:kind=summary",
                                  "--policy", "opt", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert [p["policy"] for p in d["policies"]] == ["notes", "opt"]
    assert d["plant"]["name"] == "locomo" and d["kinds"][2:] == list(KINDS)
    assert d["checkpoints"][0]["package_id"] == "locomo-demo-link"
    r = CliRunner().invoke(main, ["diagnose", f"locomo:{demo_file}@answer", "--policy", "notes:kind=summary",
                                  "--policy", "opt", "--json"])
    assert r.exit_code == 0, r.output
    a = json.loads(r.stdout)
    assert a["checkpoints"][0]["package_id"] == "locomo-demo-answer"
    # the answer rule credits a summary only when it carries the answer: never more kept than under link
    assert a["policies"][0]["evidence_kept"] <= d["policies"][0]["evidence_kept"]


@pytest.mark.parametrize("args, message", [
    (["locomo:/no/such.json"], "/no/such.json: no such file"),
    (["locomo:"], "give the path of a LoCoMo file"),
    (["locomo:{f}", "--kinds", "update"], "unknown candidate kind 'update'"),
    (["locomo:{f}#conv-9"], "no conversation 'conv-9'"),
    (["locomo:{f}", "--policy", "notes:kind=nope"], "setting kind must be one of"),
])
def test_cli_errors_are_one_line(demo_file, args, message):
    args = [a.replace("{f}", str(demo_file)) for a in args]
    before = demo_file.read_bytes()
    r = CliRunner().invoke(main, ["diagnose", *args])
    assert r.exit_code == 1 and message in r.output, r.output
    assert r.output.count("\n") == 1 and r.output.startswith("error: ")
    assert demo_file.read_bytes() == before


def test_cli_picks_one_conversation_of_a_list_file(tmp_path):
    from memaudit.locomo.demo import demo_conversation as demo

    sample = {"sample_id": "conv-7", "qa": demo()["qa"], "conversation": {
        k: v for k, v in demo().items() if k.startswith(("speaker", "session_")) and "observation" not in k
        and "summary" not in k}}
    path = tmp_path / "two.json"
    path.write_text(json.dumps([sample, {**sample, "sample_id": "conv-8"}]), encoding="utf-8")
    r = CliRunner().invoke(main, ["diagnose", f"locomo:{path}", "--policy", "fresh"])
    assert r.exit_code == 1 and "holds 2 conversations; pick one" in r.output, r.output
    r = CliRunner().invoke(main, ["diagnose", f"locomo:{path}#conv-8", "--policy", "full-transcript",
                                  "--kinds", "none", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["checkpoints"][0]["package_id"] == "locomo-conv-8-link"


# -- the real conversations (read at test time; skipped when absent) ---------------------

@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(f"{REAL}/26.json"), reason="LoCoMo conversation 26 not present")
def test_real_conversation_26():
    from memaudit.locomo.diagnose import diagnose_compiled

    compiled = diagnose_compiled(f"{REAL}/26.json")
    cp = next(iter(compiled.checkpoints.values()))
    t0 = time.perf_counter()
    d = diagnose(compiled, parse_policies(["full-transcript", "fresh", "notes:kind=observation", "opt"]),
                 budget_frac=1.0, forms=("literal",))
    assert time.perf_counter() - t0 < 600
    n = len(compiled.scenario.probes)
    for p in d["policies"]:
        assert sum(p["attribution"].values()) == p["n_probes"] == n
    assert pol(d, "full-transcript")["write_ratio"] == 1.0 and pol(d, "full-transcript")["attribution"]["write"] == 0
    a = pol(d, "fresh")["attribution"]
    assert a["retrieval"] == a["reader"] == 0
    for it in cp.item_map():
        assert cp.candidate_of(StoredItem(it[0], it[1], "")) == cp.item_map()[it]
