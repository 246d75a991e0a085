"""The 30-session memory bench: the counts fixed by the fact schedule, the BM25 pattern, the scenario's build."""

from __future__ import annotations

import os

import pytest

from memaudit.harness.bench import bench_scenario, combined_table, run_bench, stdlib_files
from memaudit.harness.errors import HarnessError
from memaudit.harness.policies import BENCH_POLICIES, EXTRA_POLICIES, parse_policy
from memaudit.harness.trial import probe_kind


@pytest.fixture(scope="module")
def doc():
    return run_bench(BENCH_POLICIES + EXTRA_POLICIES)


def summary(doc, policy, form):
    t = next(t for t in doc["trials"] if t["disturb"]["name"] == policy)
    return t["summary"][form]


def counts(s):
    return s["current"], s["conflict"], s["stale"], s["missing"], s["leaked"], s["clean"]


def test_probe_counts(doc):
    for t in doc["trials"]:
        for form in ("literal", "paraphrase"):
            s = t["summary"][form]
            assert (s["n_probes"], s["n_live"], s["n_deleted"], s["n_absent"]) == (40, 37, 3, 0)


@pytest.mark.parametrize("form", ["literal", "paraphrase"])
def test_counts_fixed_by_the_schedule_match_seed_001(doc, form):
    assert counts(summary(doc, "full-transcript", form)) == (25, 12, 0, 0, 3, 0)
    assert counts(summary(doc, "fact-log", form)) == (25, 12, 0, 0, 3, 0)
    assert counts(summary(doc, "profile", form)) == (37, 0, 0, 0, 0, 3)
    s = summary(doc, "session-buffer", form)
    assert (s["current"], s["conflict"], s["stale"], s["leaked"]) == (1, 0, 0, 0)


def test_session_buffer_recalls_the_release_branch_on_its_own_day(doc):
    t = next(t for t in doc["trials"] if t["disturb"]["name"] == "session-buffer")
    assert {r["probe"] for r in t["rows"] if r["outcome"] == "current"} == {"release_branch@10"}


def test_bm25_paraphrase_recall_collapses(doc):
    lit, para = summary(doc, "bm25-transcript", "literal"), summary(doc, "bm25-transcript", "paraphrase")
    assert lit["current"] + lit["conflict"] >= 30
    assert para["current"] + para["conflict"] <= 8
    flog = summary(doc, "bm25-fact-log", "paraphrase")
    assert flog["current"] + flog["conflict"] <= 8
    assert flog["mean_tokens_injected"] < summary(doc, "bm25-fact-log", "literal")["mean_tokens_injected"]


def test_common_hybrid_brings_conflicts_back_on_literal_probes(doc):
    assert summary(doc, "profile", "literal")["conflict"] == 0
    hybrid = summary(doc, "profile+bm25", "literal")
    assert hybrid["conflict"] >= 6 and hybrid["leaked"] > 0
    redacted = summary(doc, "profile+bm25-redacted", "literal")
    assert redacted["conflict"] == hybrid["conflict"] and redacted["leaked"] == 0


@pytest.mark.parametrize("form", ["literal", "paraphrase"])
def test_facts_not_indexed_is_clean(doc, form):
    assert counts(summary(doc, "profile+bm25-unindexed", form)) == (37, 0, 0, 0, 0, 3)


def test_bitemporal_current_view_is_clean_and_keeps_history(doc):
    for form in ("literal", "paraphrase"):
        assert counts(summary(doc, "bitemporal", form)) == (37, 0, 0, 0, 0, 3)
        # with history injected, every changed fact shows both values; deletes stay erased
        assert counts(summary(doc, "bitemporal-history", form)) == (25, 12, 0, 0, 0, 3)
    tb = {t["disturb"]["name"]: t["stored_tokens"] for t in doc["trials"]}
    assert tb["bitemporal"] > tb["profile"]


def test_combined_table(doc):
    rows = {r["policy"]: r for r in combined_table(doc)}
    assert (rows["full-transcript"]["current"], rows["full-transcript"]["conflict"]) == (50, 24)
    assert rows["full-transcript"]["leaked"] == 6 and rows["full-transcript"]["n_deleted"] == 6
    assert rows["profile"]["current"] == 74 and rows["profile"]["n_live"] == 74
    assert rows["session-buffer"]["stale_or_missing"] == 72


def test_tokens_are_o200k_and_ordered(doc):
    assert doc["score"]["settings"]["tokens"] == "o200k_base"
    mean = {t["disturb"]["name"]: t["summary"]["literal"]["mean_tokens_injected"] for t in doc["trials"]}
    stored = {t["disturb"]["name"]: t["stored_tokens"] for t in doc["trials"]}
    assert mean["profile"] < mean["fact-log"] < mean["session-buffer"] < mean["full-transcript"]
    assert stored["full-transcript"] > 50_000  # ~30 lines of real code per filler reply
    assert stored["profile+bm25"] > stored["full-transcript"] > stored["profile+bm25-unindexed"]


def test_generative_agents_settings_recorded(doc):
    ga = {t["disturb"]["name"]: t["disturb"]["settings"] for t in doc["trials"]}
    assert ga["ga-paper"]["weights"] == {"recency": 1.0, "importance": 1.0, "relevance": 1.0}
    assert (ga["ga-paper"]["decay"], ga["ga-paper"]["recency"]) == (0.995, "hours")
    # retrieve.py: gw = [0.5, 3, 2] multiplies recency, relevance, importance in that order
    assert ga["ga-code"]["weights"] == {"recency": 0.5, "importance": 2.0, "relevance": 3.0}
    assert (ga["ga-code"]["decay"], ga["ga-code"]["recency"]) == (0.99, "rank")


def test_generative_agents_weights_change_what_is_retrieved():
    sc = bench_scenario(n_sessions=12, exchanges_per_session=6)
    recent = parse_policy("ga-paper:weights=1/0/0,k=3").build(sc, len)
    lines = recent.inject(12, "Which region do we deploy to?")
    assert all(line.startswith("[day 12]") for line in lines)  # recency only: the newest exchanges
    relevant = parse_policy("ga-paper:weights=0/0/1,k=1").build(sc, len)
    assert "eu-west-2" in relevant.inject(12, "Which region do we deploy to?")[0]


def test_released_code_recency_rank_favours_the_oldest_memory():
    # retrieve.py sorts by last access ascending and gives decay ** 1 to the first (oldest) node
    sc = bench_scenario(n_sessions=12, exchanges_per_session=6)
    code = parse_policy("ga-code:weights=1/0/0,k=3").build(sc, len)
    assert all(line.startswith("[day 1]") for line in code.inject(12, "Which region do we deploy to?"))
    newest = parse_policy("ga-code:weights=1/0/0,k=3,recency=rank-newest").build(sc, len)
    assert all(line.startswith("[day 12]") for line in newest.inject(12, "Which region do we deploy to?"))


def test_scenario_is_deterministic_and_seeded():
    a, b = bench_scenario(), bench_scenario()
    assert a == b and a.sha256() == b.sha256()
    c = bench_scenario(seed=7)
    assert c.sha256() != a.sha256()
    assert [(f.key, [v.session for v in f.versions]) for f in c.facts] == \
        [(f.key, [v.session for v in f.versions]) for f in a.facts]


def test_scenario_shape():
    sc = bench_scenario()
    assert len(sc.exchanges) == 360 and len(sc.facts) == 15
    assert sum(1 for f in sc.facts if len(f.versions) > 1) == 8
    assert sum(1 for f in sc.facts if f.delete is not None) == 2
    assert {p.session for p in sc.probes} == {10, 20, 30}
    kinds = [probe_kind(sc, p) for p in sc.probes]
    assert (kinds.count("live"), kinds.count("deleted")) == (37, 3)
    for day in (10, 20, 30):  # no never-changing fact is stated on a probe day
        assert all(len(f.versions) > 1 or f.delete or f.first_session != day for f in sc.facts)


def test_filler_is_real_stdlib_source():
    sc = bench_scenario(n_sessions=10, exchanges_per_session=2)
    filler = [e for e in sc.exchanges if e.fact is None]
    assert filler
    files = {os.path.basename(p): p for p in stdlib_files()}
    for e in filler[:5]:
        code = e.assistant.split("\n", 1)[1].splitlines()
        assert len(code) == 30
        assert any("\n".join(code) in "\n".join(line.rstrip() for line in open(p, encoding="utf-8",
                                                                                 errors="replace"))
                   for p in files.values())


def test_short_bench_drops_late_events():
    sc = bench_scenario(n_sessions=12, exchanges_per_session=3)
    assert {p.session for p in sc.probes} == {10}
    assert all(v.session <= 12 for f in sc.facts for v in f.versions)


@pytest.mark.parametrize("kwargs,match", [
    ({"n_sessions": 0}, r"n_sessions must be an integer in 1\.\.100000"),
    ({"n_sessions": 100_000_000}, r"n_sessions must be an integer in 1\.\.100000"),
    ({"exchanges_per_session": 10**9}, r"exchanges_per_session must be an integer in 1\.\.1000"),
    ({"exchanges_per_session": True}, "exchanges_per_session must be an integer"),
    ({"n_sessions": 5}, "no probe"),
])
def test_bad_bench_settings(kwargs, match):
    with pytest.raises(HarnessError, match=match):
        bench_scenario(**kwargs)


def test_bench_reads_its_scenario_file():
    # one scenario file holds the bench's facts, probes and distractors (the natural generator reads it too)
    from memaudit.harness.bench import BENCH_SCENARIO_PATH, bench_distractors, bench_file
    from memaudit.harness.scenario import load_scenario

    assert BENCH_SCENARIO_PATH.name == "memory-bench.yaml"
    file_sc = load_scenario(BENCH_SCENARIO_PATH)
    sc = bench_scenario()
    assert sc.facts == file_sc.facts == bench_file().facts
    assert [(p.id, p.session, p.fact, p.literal, p.paraphrase) for p in sc.probes] == \
        [(p.id, p.session, p.fact, p.literal, p.paraphrase) for p in file_sc.probes]
    filler = {e.user for e in sc.exchanges if e.fact is None}
    assert filler <= set(bench_distractors()) and len(filler) > 20


def test_the_bench_file_runs_on_its_own_with_the_counts_its_schedule_fixes():
    from memaudit.harness.bench import BENCH_SCENARIO_PATH
    from memaudit.harness.readers import classifier_reader
    from memaudit.harness.scenario import load_scenario
    from memaudit.harness.trial import Plant, ProbeSet, Score, run

    sc = load_scenario(BENCH_SCENARIO_PATH)
    doc = run(Plant("file", {}, sc), [parse_policy("fact-log"), parse_policy("profile")],
              ProbeSet(classifier_reader()), Score())
    assert counts(summary(doc, "fact-log", "literal")) == (25, 12, 0, 0, 3, 0)
    assert counts(summary(doc, "profile", "paraphrase")) == (37, 0, 0, 0, 0, 3)
