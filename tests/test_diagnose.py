"""memaudit diagnose: the compiled packages and their item map, write-time ratios, attribution."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from memaudit.cli import main
from memaudit.diagnose.compile import compile_scenario
from memaudit.diagnose.errors import DiagnoseError
from memaudit.diagnose.run import ATTRIBUTIONS, cut_in_order, diagnose, parse_diagnose_policy
from memaudit.harness.bench import bench_scenario
from memaudit.harness.policies import POLICIES, Policy, StoredItem, _Memory, parse_policy
from memaudit.harness.readers import classifier_reader
from memaudit.harness.scenario import scenario_from_dict
from memaudit.package import candidate_costs, compile_package
from memaudit_solvers.objective import evaluate

POLS = ["fresh", "full-transcript", "fact-log", "profile", "profile+bm25", "bm25-transcript", "opt"]


@pytest.fixture(scope="module")
def small():
    return compile_scenario(bench_scenario(n_sessions=20, exchanges_per_session=3))


@pytest.fixture(scope="module")
def doc(small):
    return diagnose(small, POLS)


def pol(doc, name):
    return next(p for p in doc["policies"] if p["policy"] == name)


def stores(doc, name):
    return [s for s in doc["stores"] if s["policy"] == name]


def rows(doc, name):
    return [r for r in doc["rows"] if r["policy"] == name]


# -- the compiled packages and the item map ------------------------------------------

def test_one_package_per_checkpoint_with_the_checkpoint_stream(small):
    sc = small.scenario
    assert list(small.checkpoints) == [10, 20]
    for s, cp in small.checkpoints.items():
        exchanges = [e for e in sc.exchanges if e.session <= s]
        assert len(cp.package.experiences) == len(exchanges) == len(cp.experience_ids)
        probes = [p for p in sc.probes if p.session == s]
        assert len(cp.package.queries) == len(probes)
        assert {u for p in probes for u in cp.probe_units[p.id]} == {u.id for u in cp.package.units}


def test_item_map_is_total_over_every_policy(small):
    sc = small.scenario
    for s, cp in small.checkpoints.items():
        imap = cp.item_map()
        cands = {c.id: c for c in cp.package.candidates}
        for n, e in enumerate(e for e in sc.exchanges if e.session <= s):
            assert cands[imap[("turn", n)]].text.endswith(f"user: {e.user} / assistant: {e.assistant}")
            for kind in ("fact_line", "profile_entry", "record"):
                assert ((kind, n) in imap) == (e.fact is not None)
            if e.fact is not None:  # the statement covers what the whole turn covers
                assert cands[imap[("fact_line", n)]].coverage == cands[imap[("turn", n)]].coverage
        for name in POLICIES:
            memory = parse_policy(name).build(sc, len)
            for it in memory.items(s):
                cid = cp.candidate_of(it, policy=name)
                assert cands[cid].experience == cp.experience_ids[it.position]
                assert (cid, it.kind) == (imap[(it.kind, it.position)], it.kind)


class _Summary(_Memory):
    def items(self, session):
        return [StoredItem("summary", 0, "a summary of the first day")]

    def inject_items(self, session, question):
        return self.items(session)


def test_an_item_without_a_candidate_is_refused_by_name(small):
    odd = Policy("summariser", {}, lambda sc, count: _Summary(sc, count))
    with pytest.raises(DiagnoseError, match=r"policy 'summariser': stored item 'summary' of exchange 0 "
                                            r"\('a summary of the first day'\) maps to no candidate"):
        diagnose(small, [odd])


def test_extra_kinds_and_bad_kinds():
    sc = bench_scenario(n_sessions=20, exchanges_per_session=2)
    kinds = {c.kind for c in compile_scenario(sc, kinds=("fact", "update", "tombstone")).at(20).package.candidates}
    assert kinds == {"raw", "fact", "update", "tombstone"}
    assert {c.kind for c in compile_scenario(sc, kinds=()).at(20).package.candidates} == {"raw"}
    with pytest.raises(DiagnoseError, match="unknown candidate kind 'summary'"):
        compile_scenario(sc, kinds=("summary",))


# -- write time -----------------------------------------------------------------------

def test_full_transcript_at_the_whole_stream_has_ratio_one_and_no_write_failure(doc):
    for s in stores(doc, "full-transcript"):
        assert s["budget"] == s["store_cost"]  # the transcript is the stream
        assert s["write_ratio"] == 1.0 and not s["over_budget"]
    assert pol(doc, "full-transcript")["attribution"]["write"] == 0
    assert all(r["evidence_kept"] == 1 and r["evidence_injected"] == 1 for r in rows(doc, "full-transcript"))


def test_fresh_fails_only_at_write_time(doc):
    a = pol(doc, "fresh")["attribution"]
    live = sum(r["kind"] == "live" for r in rows(doc, "fresh"))
    assert (a["write"], a["retrieval"], a["reader"]) == (live, 0, 0)
    assert a["ok"] == sum(r["kind"] == "deleted" for r in rows(doc, "fresh"))  # nothing to leak
    assert all(s["write_ratio"] == 0 for s in stores(doc, "fresh"))


def test_opt_policy_has_ratio_one_and_opt_holds_its_own_evidence(doc):
    assert all(s["write_ratio"] == 1.0 for s in stores(doc, "opt"))
    assert all(r["opt_holds"] for r in rows(doc, "opt"))
    assert pol(doc, "opt")["attribution"]["write"] == 0


class _Replay(_Memory):
    """Stores given candidates as the plain items a harness policy would hold (no ``ref``)."""

    def __init__(self, sc, count, items):
        super().__init__(sc, count)
        self._items = items

    def items(self, session):
        return self._items[session]

    def inject_items(self, session, question):
        return self._items[session]


def test_a_policy_whose_store_is_exactly_opts_has_ratio_one():
    sc = bench_scenario(n_sessions=20, exchanges_per_session=3)
    compiled = compile_scenario(sc, kinds=())  # raw turns and statements only: items a policy can hold
    first = diagnose(compiled, ["opt"], budget_frac=0.02)
    items = {}
    for c in first["checkpoints"]:
        cp = compiled.at(c["session"])
        pos = {eid: n for n, eid in enumerate(cp.experience_ids)}
        cands = {x.id: x for x in cp.package.candidates}
        items[c["session"]] = [StoredItem("turn" if cid.endswith(".raw") else "fact_line",
                                          pos[cands[cid].experience], cands[cid].text) for cid in c["opt_store"]]
        assert c["opt"] > 0 and c["budget"] < 0.05 * c["stream_cost"]
    copy = Policy("copy-of-opt", {}, lambda s, count: _Replay(s, count, items))
    again = diagnose(compiled, [copy, "full-transcript"], budget_frac=0.02)
    for s in stores(again, "copy-of-opt"):
        assert s["write_ratio"] == 1.0 and s["value"] == s["opt"] and not s["over_budget"]
    for s in stores(again, "full-transcript"):  # far over the budget: 0 as a whole, its prefix when cut
        assert s["over_budget"] and s["write_ratio"] == 0.0 and "exceeds the budget" in s["why_not_feasible"]
        assert 0 <= s["write_ratio_cut"] < 1


def test_cut_in_order_takes_a_prefix_that_fits(small):
    cp = small.at(20)
    problem = compile_package(cp.package).problem
    costs = candidate_costs(cp.package)
    budget = 0.3 * cp.stream_cost
    taken = cut_in_order(problem, list(range(len(cp.package.candidates))), budget)
    # the same rule by hand: candidates in package order, one per experience, stop at the first misfit
    used, total, want = set(), 0.0, []
    for i, c in enumerate(cp.package.candidates):
        if c.experience in used:
            continue
        if total + costs[c.id] > budget:
            break
        want.append(i)
        used.add(c.experience)
        total += costs[c.id]
    assert taken == want and 0 < len(taken) < len(cp.package.experiences)


def test_hybrid_holds_a_statement_twice_so_its_whole_store_scores_zero(doc):
    for s in stores(doc, "profile+bm25"):
        assert s["over_budget"] and s["write_ratio"] == 0.0 and s["write_ratio_cut"] == 1.0
        assert "experience(s) stored twice, e.g. e" in s["why_not_feasible"]


def test_opt_value_is_the_brute_force_optimum():
    sc = _tiny()
    compiled = compile_scenario(sc)
    cp = compiled.at(2)
    problem = compile_package(cp.package).problem
    for frac in (0.2, 0.5, 1.0):
        d = diagnose(compiled, ["fresh"], budget_frac=frac, forms=("literal",))
        budget = d["checkpoints"][0]["budget"]
        groups = [np.flatnonzero(problem.groups == g).tolist() + [None] for g in range(problem.n_groups)]
        best = 0.0
        for pick in itertools.product(*groups):
            chosen = [i for i in pick if i is not None]
            if problem.costs[chosen].sum() <= budget + 1e-9:
                best = max(best, evaluate(problem, chosen))
        assert d["checkpoints"][0]["opt"] == pytest.approx(best)
        assert d["checkpoints"][0]["opt_status"] == "certified"


# -- attribution ----------------------------------------------------------------------

def test_attribution_counts_sum_to_the_probes(doc):
    for p in doc["policies"]:
        mine = rows(doc, p["policy"])
        assert p["n_probes"] == len(mine) == 2 * len(doc["rows"]) // (2 * len(doc["policies"]))
        assert sum(p["attribution"].values()) == len(mine)
        assert p["attribution"] == {a: sum(r["attribution"] == a for r in mine) for a in ATTRIBUTIONS}


def test_attribution_follows_its_definitions(doc):
    for r in doc["rows"]:
        right = r["outcome"] in {"live": ("current",), "deleted": ("clean",)}[r["kind"]]
        if right:
            assert r["attribution"] == "ok"
        elif r["evidence_kept"] < 1:
            assert r["attribution"] == "write"
        elif r["evidence_injected"] < 1 or r["injected_outcome"] not in ("current", "clean"):
            assert r["attribution"] == "retrieval"
        else:
            assert r["attribution"] == "reader"


def _tiny():
    return scenario_from_dict({
        "format": "memaudit-scenario/1", "id": "tiny", "n_sessions": 2,
        "facts": [
            {"key": "db", "type": "decision", "versions": [
                {"session": 1, "value": "Postgres 15", "text": "We use Postgres 15."},
                {"session": 2, "value": "Postgres 17", "text": "We moved the database to Postgres 17."}]},
            {"key": "phone", "type": "detail", "versions": [
                {"session": 1, "value": "+44 7700 900123", "text": "My phone number is +44 7700 900123."}],
             "delete": {"session": 2, "text": "Please forget my phone number."}}],
        "sessions": [{"session": 1, "exchanges": [{"user": "How do I tag a release?", "assistant": "git tag v1"}]},
                     {"session": 2, "exchanges": [{"user": "Why is CI slow?", "assistant": "Cache the layers."}]}],
        "probes": [{"id": "db", "fact": "db", "literal": "Which database do we use?",
                    "paraphrase": "What relational store runs in production?"},
                   {"id": "phone", "fact": "phone", "literal": "What is my phone number?"}]})


def test_attribution_on_a_scenario_small_enough_to_read():
    d = diagnose(compile_scenario(_tiny()), ["fresh", "fact-log", "profile", "full-transcript"])
    got = {(r["policy"], r["probe"], r["form"]): (r["outcome"], r["injected_outcome"], r["attribution"])
           for r in d["rows"]}
    # nothing stored: the live fact fails at write time, the deleted one cannot leak
    assert got[("fresh", "db", "literal")] == ("missing", "missing", "write")
    assert got[("fresh", "phone", "literal")] == ("clean", "clean", "ok")
    # the fact log holds the evidence, but injects the old statement beside the new one; the reader
    # takes the earlier of two equally good lines: the stale value
    assert got[("fact-log", "db", "literal")] == ("stale", "conflict", "retrieval")
    # the log still holds the phone number and injects it: stored evidence (the request), unclean injection
    assert got[("fact-log", "phone", "literal")] == ("leaked", "leaked", "retrieval")
    # the profile injects only the current statement; the paraphrase shares no word with it
    assert got[("profile", "db", "literal")] == ("current", "current", "ok")
    assert got[("profile", "db", "paraphrase")] == ("missing", "current", "reader")
    assert got[("profile", "phone", "literal")] == ("clean", "clean", "ok")
    s = {x["policy"]: x for x in d["stores"]}
    assert s["fact-log"]["leaks_held"] == ["phone"] and s["profile"]["leaks_held"] == []
    # the profile drops the delete request, so the package's deletion unit is not kept
    assert s["profile"]["units_kept"] == ["db.current", "db.v0.invalid"]
    assert s["full-transcript"]["write_ratio"] == 1.0


def test_classifier_reader_leaves_no_reader_failure(small):
    d = diagnose(small, ["profile", "bm25-transcript"], reader=classifier_reader())
    assert all(p["attribution"]["reader"] == 0 for p in d["policies"])
    assert all(r["outcome"] == r["injected_outcome"] for r in d["rows"])


def test_opt_with_bm25_injects_part_of_the_store(small):
    d = diagnose(small, ["opt:retriever=bm25,k=2"], forms=("literal",))
    assert d["policies"][0]["disturb"]["settings"]["k"] == 2
    assert all(r["n_injected"] <= 2 for r in d["rows"])
    assert d["policies"][0]["label"] == "OPT store, BM25 top-2"


@pytest.mark.parametrize("spec, message", [
    ("opt:retriever=dense", "policy 'opt': setting 'retriever' must be one of all, bm25; got 'dense'"),
    ("opt:retriever=3", "policy 'opt': setting 'retriever' must be one of all, bm25; got '3'"),
    ("opt:k=3", "policy 'opt': setting 'k' must be given with retriever=bm25; got 3"),
    ("opt:retriever=all,k=3", "policy 'opt': setting 'k' must be given with retriever=bm25; got 3"),
    ("opt:retriever=bm25,k=-1", "policy 'opt': setting 'k' must be an integer >= 0; got '-1'"),
    ("opt:retriever=bm25,k=abc", "policy 'opt': setting 'k' must be an integer >= 0; got 'abc'"),
    ("opt:retriever=bm25,k=2.5", "policy 'opt': setting 'k' must be an integer >= 0; got '2.5'"),
    ("opt:retriever=bm25,k=nan", "policy 'opt': setting 'k' must be an integer >= 0; got 'nan'"),
    ("opt:retriever=bm25,k=none", "policy 'opt': setting 'k' must be an integer >= 0; got 'none'"),
    ("opt:depth=2", "policy 'opt': setting 'depth' must be one of the declared settings (retriever, k); got 2"),
    ("opt:retriever=all,retriever=all", "policy 'opt': setting 'retriever' must be given once; got 'all'"),
    ("opt:bm25", "policy 'opt': setting 'bm25' must be written key=value; got 'bm25'"),
])
def test_bad_opt_settings(spec, message):
    with pytest.raises(DiagnoseError, match="^" + re.escape(message) + "$"):
        parse_diagnose_policy(spec)


def test_opt_settings_follow_their_declarations():
    from memaudit.diagnose.run import OPT_SETTINGS, OptSpec

    assert parse_diagnose_policy("opt") == OptSpec() == OptSpec(*(s.default for s in OPT_SETTINGS))
    assert parse_diagnose_policy(" opt:retriever=bm25 ") == OptSpec("bm25", 5)
    assert parse_diagnose_policy("opt:k=0,retriever=bm25") == OptSpec("bm25", 0)
    assert [s.name for s in OPT_SETTINGS] == ["retriever", "k"]


def test_a_policy_named_twice_is_refused(small):
    with pytest.raises(DiagnoseError, match="policy 'opt' is given twice"):
        diagnose(small, ["opt", "opt:retriever=all"])
    with pytest.raises(DiagnoseError, match=r"policy 'opt\+bm25\[k=3\]' is given twice"):
        diagnose(small, ["opt:retriever=bm25,k=3", "opt:k=3,retriever=bm25"])


def test_the_opt_store_under_two_retrievers_sits_in_one_run(small):
    doc = diagnose(small, ["opt", "opt:retriever=bm25", "opt:retriever=bm25,k=2"])
    assert [p["policy"] for p in doc["policies"]] == ["opt", "opt+bm25", "opt+bm25[k=2]"]
    for name in ("opt", "opt+bm25", "opt+bm25[k=2]"):
        assert all(s["write_ratio"] == 1.0 for s in stores(doc, name))
        assert pol(doc, name)["attribution"]["write"] == 0


# -- the command ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory):
    from memaudit.harness.scenario import scenario_to_dict

    path = tmp_path_factory.mktemp("sc") / "tiny.json"
    path.write_text(json.dumps(scenario_to_dict(_tiny())))
    return path


def test_cli_json_document(tiny_file):
    r = CliRunner().invoke(main, ["diagnose", str(tiny_file), "--policy", "fresh", "--policy", "profile",
                                  "--policy", "opt", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["format"] == "memaudit-diagnose/1"
    assert [p["policy"] for p in d["policies"]] == ["fresh", "profile", "opt"]
    for p in d["policies"]:
        assert set(p["attribution"]) == set(ATTRIBUTIONS) and p["n_probes"] == 3
        assert 0 <= p["write_ratio"] <= 1
    assert {r["policy"] for r in d["rows"]} == {"fresh", "profile", "opt"} and len(d["stores"]) == 3


def test_cli_table_out_and_plot(tiny_file, tmp_path):
    out, plot = tmp_path / "run", tmp_path / "p.png"
    r = CliRunner().invoke(main, ["diagnose", str(tiny_file), "--policy", "fact-log", "--policy", "opt",
                                  "--budget-frac", "0.5", "--out", str(out), "--plot", str(plot)])
    assert r.exit_code == 0, r.output
    assert "write/OPT" in r.stdout and "OPT store, all injected" in r.stdout and "certified" in r.stdout
    assert sorted(p.name for p in out.iterdir()) == ["rows.csv", "run.json", "stores.csv", "summary.csv"]
    assert json.loads((out / "run.json").read_text())["budget"]["budget_frac"] == 0.5
    assert (out / "summary.csv").read_text().splitlines()[0].startswith("policy,label,write_ratio")
    assert len((out / "rows.csv").read_text().splitlines()) == 1 + 2 * 3
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, message", [
    (["--policy", "bm25"], "unknown policy 'bm25'"),
    (["--policy", "opt", "--budget", "10", "--budget-frac", "0.5"], "either --budget or --budget-frac"),
    (["--policy", "opt", "--budget-frac", "-1"], "budget fraction"),
    (["--policy", "opt", "--kinds", "summary"], "unknown candidate kind 'summary'"),
    (["--policy", "opt:k=2"], "error: policy 'opt': setting 'k' must be given with retriever=bm25; got 2"),
    (["--policy", "opt:retriever=bm25,k=x"], "error: policy 'opt': setting 'k' must be an integer >= 0; got 'x'"),
    (["--policy", "opt:retriever=dense"], "error: policy 'opt': setting 'retriever' must be one of all, bm25; got "),
    (["--policy", "opt:depth=2"], "error: policy 'opt': setting 'depth' must be one of the declared settings"),
    (["--policy", "opt", "--budget", "0"], "OPT of checkpoint 2 ('tiny@2') is 0 at budget 0"),
])
def test_cli_errors_are_one_line(tiny_file, args, message):
    r = CliRunner().invoke(main, ["diagnose", str(tiny_file), *args])
    assert r.exit_code == 1
    assert message in r.output and r.output.startswith("error: ") and r.output.count("\n") == 1


def test_cli_refuses_an_out_that_is_a_file(tiny_file, tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    r = CliRunner().invoke(main, ["diagnose", str(tiny_file), "--policy", "fresh", "--out", str(f)])
    assert r.exit_code == 1 and "--out must be a directory" in r.output
    assert f.read_text() == "x"


def test_cli_names_a_missing_scenario(tmp_path):
    r = CliRunner().invoke(main, ["diagnose", str(tmp_path / "none.yaml"), "--policy", "fresh"])
    assert r.exit_code == 1 and "none.yaml: cannot read" in r.output


def test_packages_built_elsewhere_plug_in_through_an_explicit_map():
    # the hook for importers that write a package and a scenario from one conversation
    from memaudit.diagnose.compile import from_packages

    sc = _tiny()
    ours = compile_scenario(sc)
    cp = ours.at(2)
    wrapped = from_packages(sc, {2: cp.package}, probe_units=dict(cp.probe_units), item_map={2: cp.item_map()},
                            experience_ids={2: cp.experience_ids})
    pols = ["fresh", "fact-log", "profile", "opt"]
    a, b = diagnose(ours, pols), diagnose(wrapped, pols)
    assert a["rows"] == b["rows"] and a["stores"] == b["stores"]
    with pytest.raises(DiagnoseError, match="probe 'db' asks at session 2, which has no package"):
        from_packages(sc, {}, probe_units={}, item_map={}, experience_ids={})
    with pytest.raises(DiagnoseError, match="'db.nope' is not a unit"):
        from_packages(sc, {2: cp.package}, probe_units={"db": ("db.nope",)}, item_map={2: {}},
                      experience_ids={2: cp.experience_ids})
    with pytest.raises(DiagnoseError, match="sends 'turn' of exchange 0 to 'e9.raw', not a candidate"):
        from_packages(sc, {2: cp.package}, probe_units={}, item_map={2: {("turn", 0): "e9.raw"}},
                      experience_ids={2: cp.experience_ids})
    partial = from_packages(sc, {2: cp.package}, probe_units=dict(cp.probe_units),
                            item_map={2: {k: v for k, v in cp.item_map().items() if k[0] == "turn"}},
                            experience_ids={2: cp.experience_ids})
    with pytest.raises(DiagnoseError, match="policy 'fact-log': stored item 'fact_line'"):
        diagnose(partial, ["fact-log"])


def test_cli_hooks_for_scenarios_compiled_elsewhere(monkeypatch, tmp_path):
    import sys
    import types

    from memaudit.diagnose import cli as dcli

    seen = {}

    def diagnose_compiled(path, kinds=()):
        seen["path"], seen["kinds"] = path, kinds
        return compile_scenario(_tiny())

    mod = types.ModuleType("fake_importer")
    mod.diagnose_compiled = diagnose_compiled
    monkeypatch.setitem(sys.modules, "fake_importer", mod)
    monkeypatch.setitem(dcli.HOOKS, "fake", ("fake_importer", "diagnose_compiled"))
    monkeypatch.setitem(dcli.HOOKS, "gone", ("fake_importer", "no_such_hook"))
    r = CliRunner().invoke(main, ["diagnose", "fake:conv-26.json", "--policy", "profile", "--json"])
    assert r.exit_code == 0, r.output
    assert seen == {"path": "conv-26.json", "kinds": None}  # the hook picks its default kinds
    assert json.loads(r.stdout)["plant"]["name"] == "fake"
    r = CliRunner().invoke(main, ["diagnose", "gone:conv.json", "--policy", "profile"])
    assert r.exit_code == 1 and "fake_importer offers no no_such_hook(path, kinds)" in r.output


def test_a_reader_command_moves_failures_to_the_reader(tiny_file):
    # a command that always states the old value: evidence injected cleanly by the profile, answer wrong
    import shlex
    import sys
    from pathlib import Path

    fake = Path(__file__).resolve().parent / "harness_fake_cli.py"
    cmd = shlex.join([sys.executable, str(fake), "reader", "--say", "We use Postgres 15."])
    r = CliRunner().invoke(main, ["diagnose", str(tiny_file), "--policy", "profile", "--forms", "literal",
                                  "--reader-cmd", cmd, "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["probe"]["reader"]["name"] == "command"
    row = next(x for x in d["rows"] if x["probe"] == "db")
    assert (row["outcome"], row["injected_outcome"], row["attribution"]) == ("stale", "current", "reader")
    assert row["answer"] == "We use Postgres 15."


def test_the_settings_listing_shows_opt_from_its_declarations():
    from memaudit.diagnose.run import OPT_SETTINGS
    from memaudit_solvers.settings import describe

    out = CliRunner().invoke(main, ["settings", "policies"]).output
    assert "  opt (diagnose)\n" in out
    for s in OPT_SETTINGS:
        assert f"    {s.name}: {describe(s)}\n" in out
