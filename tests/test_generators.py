"""Package generators: validity, the correctness rules of the issue, reproducibility, the CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from memaudit.cli import main
from memaudit.costs import cost_of
from memaudit.generators import GENERATOR_VERSION, generate, write_package
from memaudit.generators.events import Event, EventGraph, GeneratorError, QuerySpec, Slot, render_package
from memaudit.generators.natural import NaturalParams, bench_timelines, natural_graph
from memaudit.generators.synthetic import params_for, synthetic_graph
from memaudit.package import load_package, package_from_dict, package_to_dict

ROOT = Path(__file__).resolve().parents[1]

CASES = ([("small", s, {}) for s in range(12)] + [("validity", s, {}) for s in range(8)]
         + [("natural", s, {"filler": False}) for s in range(2)] + [("natural", 0, {})]
         + [("small", 5, {"cost_model": "tokens"}), ("validity", 5, {"cost_model": "chars", "chatter": 0}),
            ("small", 9, {"max_updates": 4, "deletion_updates": 2, "deletions": 4}),
            ("small", 4, {"deletions": 0}), ("small", 90, {}), ("small", 6, {"events_per_day": 300, "chatter": 320})])
IDS = [f"{f}-{s}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for f, s, kw in CASES]


@pytest.fixture(scope="module", params=CASES, ids=IDS)
def pkg(request):
    family, seed, kw = request.param
    return generate(family, seed, **kw)


def test_generated_package_validates_and_records_provenance(pkg):
    again = package_from_dict(package_to_dict(pkg))
    assert again == pkg
    assert pkg.meta["generator_version"] == GENERATOR_VERSION
    assert pkg.meta["generator"] in ("small", "validity", "natural")
    assert isinstance(pkg.meta["seed"], int) and isinstance(pkg.meta["params"], dict)


def test_every_unit_is_coverable_and_required(pkg):
    covered = {u for c in pkg.candidates for u, a in c.coverage.items() if a > 0}
    required = Counter(u for q in pkg.queries for u in q.requires)
    for unit in pkg.units:
        assert unit.id in covered, f"{unit.id} is covered by no candidate"
        assert unit.weight == required[unit.id], f"{unit.id}: weight {unit.weight}, required {required[unit.id]}x"
    # and each unit's full value is reachable: its coverage can sum to >= 1 across the groups
    best = Counter()
    by_group: dict = {}
    for c in pkg.candidates:
        for u, a in c.coverage.items():
            by_group[(c.experience, u)] = max(by_group.get((c.experience, u), 0.0), a)
    for (_, u), a in by_group.items():
        best[u] += a
    assert all(best[u.id] >= 1.0 for u in pkg.units)


def test_no_empty_group_and_strictly_increasing_times(pkg):
    groups = Counter(c.experience for c in pkg.candidates)
    assert all(groups[e.id] >= 1 for e in pkg.experiences)
    times = [e.time for e in pkg.experiences]
    assert all(a < b for a, b in zip(times, times[1:]))
    sessions = [e.session for e in pkg.experiences]
    assert sessions == sorted(sessions)


def test_tombstones_cover_only_validity_units(pkg):
    kinds = {u.id: u.kind for u in pkg.units}
    tombstones = [c for c in pkg.candidates if c.kind == "tombstone"]
    for c in tombstones:
        assert all(kinds[u] == "validity" for u in c.coverage), c


def test_costs_are_the_cost_model_on_the_text(pkg):
    for c in pkg.candidates:
        assert c.cost == cost_of(c.text, pkg.cost_model) > 0
    raw = {c.experience: c for c in pkg.candidates if c.kind == "raw"}
    for c in pkg.candidates:
        if c.kind == "compound_update":
            upd = next(x for x in pkg.candidates if x.experience == c.experience and x.kind == "update")
            assert upd.cost < c.cost < raw[c.experience].cost, (upd.text, c.text, raw[c.experience].text)
        if c.kind == "raw":
            assert c.text.endswith(next(e.text for e in pkg.experiences if e.id == c.experience))


def _graph(family, seed, kw):
    if family == "natural":
        graph, queries, _ = natural_graph(NaturalParams(**kw), seed)
    else:
        graph, queries = synthetic_graph(params_for(family, **kw), seed)
    return graph, queries


@pytest.mark.parametrize("family,seed,kw", CASES, ids=IDS)
def test_deleted_values_are_never_required(family, seed, kw):
    graph, _ = _graph(family, seed, kw)
    pkg = generate(family, seed, **kw)
    deleted = {k: [v for v, _, _ in tl.values] for k, tl in graph.timelines.items() if tl.deleted is not None}
    if family != "natural" and kw.get("deletions", 1) == 0:
        assert not deleted and not any(q.answer.startswith("not kept") for q in pkg.queries)
    elif family != "natural":
        assert deleted
    for q in pkg.queries:
        for uid in q.requires:
            for key in deleted:
                if uid.startswith(key + "."):
                    assert uid == f"{key}.deleted", uid
    for key, values in deleted.items():
        probes = [q for q in pkg.queries if q.requires == [f"{key}.deleted"]]
        assert probes and all(q.answer.startswith("not kept") for q in probes)
        for v in values:
            assert not any(v in (q.answer or "") or v in q.text for q in pkg.queries), v
            assert not any(v in u.text or v in u.aliases for u in pkg.units), v
        # the statements of a deleted value cover nothing
        for _, _, index in graph.timelines[key].values:
            eid = pkg.experiences[index].id
            assert all(not c.coverage for c in pkg.candidates if c.experience == eid)


@pytest.mark.parametrize("family,kw", [("small", {}), ("validity", {}), ("natural", {}),
                                       ("natural", {"filler": False})])
def test_byte_for_byte_reproducible(tmp_path, family, kw):
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    write_package(generate(family, 11, **kw), a)
    write_package(generate(family, 11, **kw), b)
    write_package(generate(family, 12, **kw), c)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    assert load_package(a) == generate(family, 11, **kw)


def test_reproducible_across_processes_and_cli(tmp_path):
    """A fresh interpreter (new hash seed) writes the same bytes through the CLI."""
    out = tmp_path / "cli.json"
    env_runs = []
    for hashseed in ("1", "2"):
        subprocess.run([sys.executable, "-m", "memaudit.cli", "generate", "validity", "--seed", "4", "-o", str(out)],
                       check=True, capture_output=True, env={"PYTHONHASHSEED": hashseed, "PATH": ""}, cwd=ROOT)
        env_runs.append(out.read_bytes())
    lib = tmp_path / "lib.json"
    write_package(generate("validity", 4), lib)
    assert env_runs[0] == env_runs[1] == lib.read_bytes()


def test_small_and_validity_differ_in_structure():
    smalls = [generate("small", s) for s in range(10)]
    validities = [generate("validity", s) for s in range(10)]

    def share(pkgs, kind):
        total = sum(u.weight for p in pkgs for u in p.units)
        return sum(u.weight for p in pkgs for u in p.units if u.kind == kind) / total

    assert share(validities, "validity") + share(validities, "interval") > 0.6
    assert share(smalls, "validity") + share(smalls, "interval") < share(validities, "validity")
    assert max(len(p.experiences) for p in smalls) < min(len(p.experiences) for p in validities)
    assert all(sum(c.kind == "tombstone" for c in p.candidates) >= 10 for p in validities)


def test_natural_follows_the_seed_schedule():
    pkg = generate("natural", 42)
    assert len(pkg.experiences) == 30 * 12
    assert {e.session for e in pkg.experiences} == set(range(1, 31))
    facts = bench_timelines()
    assert len(facts) == 15
    assert sum(any(op == "update" for _, op, _, _ in tl) for _, _, _, tl in facts) == 8
    assert sum(any(op == "delete" for _, op, _, _ in tl) for _, _, _, tl in facts) == 2
    kinds = Counter(c.kind for c in pkg.candidates)
    assert kinds["update"] == 9 and kinds["compound_update"] == 9  # on-call changes twice
    assert kinds["tombstone"] == 9 + 2
    # 40 probes: every fact stated so far, at the end of days 10, 20 and 30
    assert len(pkg.queries) == 40
    abstain = [q for q in pkg.queries if q.requires[0].endswith(".deleted")]
    # phone at days 10 / 20 / 30, e-mail at days 20 / 30: the seed's 3 deletion probes plus the two it
    # scored while the value was still live
    assert len(abstain) == 5
    # the day-14 region move: raw, update and compound_update cover the old region's invalidation
    region_move = next(e for e in pkg.experiences if "eu-central-1" in e.text)
    assert region_move.session == 14
    cover = {c.kind: set(c.coverage) for c in pkg.candidates if c.experience == region_move.id}
    assert cover["tombstone"] == {"deploy_region.v0.invalid"}
    assert {"deploy_region.current", "deploy_region.v0.invalid"} <= cover["update"]
    assert "deploy_region.v0.interval" in cover["compound_update"]
    # on day 20 the on-call engineer was Marco (days 16-27): an interval query
    q = next(q for q in pkg.queries if q.text.startswith("On day 20: who is the on-call"))
    assert q.answer == "Marco" and q.requires == ["on_call.v1.interval"]
    q30 = next(q for q in pkg.queries if q.text == "Who is the on-call engineer?")
    assert q30.answer == "Priya" and q30.requires == ["on_call.current", "on_call.v1.invalid"]


def test_natural_filler_weight_is_close_to_the_seed():
    from memaudit.package import stream_cost
    pkg = generate("natural", 42)
    raw_total = sum(c.cost for c in pkg.candidates if c.kind == "raw")
    assert raw_total == stream_cost(pkg)
    assert 70_000 < raw_total < 100_000  # the seed's day-30 transcript: 86,058 tokens
    facts_only = generate("natural", 42, filler=False)
    assert len(facts_only.experiences) == 26 and len(facts_only.queries) == 40


@pytest.mark.parametrize("family,params,match", [
    ("small", {"entities": 0}, "generator 'small': setting 'entities' must be an integer in [1, 8]; got 0"),
    ("small", {"max_updates": 12}, "setting 'max_updates' must be an integer in [0, 9]; got 12"),
    ("small", {"min_updates": 3, "max_updates": 1}, "generator 'small': setting 'min_updates' must be <= max_updates (1); got 3"),
    ("validity", {"restate_prob": 1.5}, "setting 'restate_prob' must be a number in [0, 1]; got 1.5"),
    ("small", {"cost_model": "lines"}, "setting 'cost_model' must be one of words, chars, bytes, tokens, byte-overhead"),
    ("small", {"procedures": 4}, "generator 'small': setting 'procedures' must be <= entities (3): at most one per entity; got 4"),
    ("small", {"colour": 1}, "setting 'colour' must be one of the declared settings"),
    ("natural", {"filler_lines": -1}, "setting 'filler_lines' must be an integer in [0, 1000]; got -1"),
    ("natural", {"exchanges_per_session": 0}, "setting 'exchanges_per_session' must be an integer in [1, 200]"),
    ("natural", {"entities": 2}, "generator 'natural': setting 'entities' must be one of the declared settings"),
    ("huge", {}, "unknown generator family 'huge'"),
])
def test_bad_parameters_raise_named_errors(family, params, match):
    with pytest.raises(GeneratorError, match=match.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")
                       .replace(")", r"\)")):
        generate(family, 1, **params)


def test_event_graph_rejects_inconsistent_timelines():
    g = EventGraph()
    g.add_slot(Slot("a.x", "a x", "value", "What is a x?"))
    with pytest.raises(GeneratorError, match="update of slot 'a.x' before any set"):
        g.add(Event(1, "update", "t", "a.x", "v"))
    g.add(Event(1, "set", "t", "a.x", "v"))
    with pytest.raises(GeneratorError, match="to its current value 'v'; use restate"):
        g.add(Event(2, "update", "t", "a.x", "v"))
    with pytest.raises(GeneratorError, match="restate of 'a.x' must repeat its current value"):
        g.add(Event(2, "restate", "t", "a.x", "w"))
    with pytest.raises(GeneratorError, match="events must come in day order"):
        g.add(Event(0, "restate", "t", "a.x", "v"))
    with pytest.raises(GeneratorError, match="unknown slot 'b'"):
        g.add(Event(2, "set", "t", "b", "v"))
    g.add(Event(3, "delete", "t", "a.x", None))
    with pytest.raises(GeneratorError, match="was deleted on day 3"):
        g.add(Event(4, "update", "t", "a.x", "w"))
    with pytest.raises(GeneratorError, match="requires 'a.x.current', which the event graph does not define"):
        render_package(g, [QuerySpec("q", "a", ("a.x.current",))], package_id="t", cost_model="words", meta={})


# -- CLI -------------------------------------------------------------------------------------

def test_cli_generate_writes_the_library_bytes(tmp_path):
    runner = CliRunner()
    out = tmp_path / "s.json"
    r = runner.invoke(main, ["generate", "small", "--seed", "3", "--entities", "2", "--chatter", "0", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "wrote" in r.stderr and "package small-s3" in r.stderr
    lib = tmp_path / "lib.json"
    write_package(generate("small", 3, entities=2, chatter=0), lib)
    assert out.read_bytes() == lib.read_bytes()
    r = runner.invoke(main, ["generate", "natural", "--no-filler", "--seed", "2", "--id", "nat"])
    assert r.exit_code == 0
    data = json.loads(r.stdout)
    assert data["id"] == "nat" and len(data["experiences"]) == 26


def test_cli_generate_bad_parameter_is_one_line_error():
    r = CliRunner().invoke(main, ["generate", "validity", "--max-updates", "20"])
    assert r.exit_code == 1
    assert r.stderr.strip() == "error: generator 'validity': setting 'max_updates' must be an integer in [0, 9]; got 20"
    assert r.stdout == ""


@pytest.mark.parametrize("epd", [288, 289, 500, 1000])
def test_events_per_day_up_to_its_limit_render(epd):
    """Up to 1000 experiences a day fit before 09:00 of the next day (the limit is checked)."""
    pkg = generate("small", 3, events_per_day=epd, chatter=1200)
    times = [e.time for e in pkg.experiences]
    assert all(a < b for a, b in zip(times, times[1:]))
    day1 = [e for e in pkg.experiences if e.session == 1]
    assert len(day1) == epd
    assert day1[0].time == "2026-03-02T09:00:00Z" and day1[-1].time < "2026-03-03T09:00:00Z"
    day2 = [e for e in pkg.experiences if e.session == 2]
    assert day2[0].time == "2026-03-03T09:00:00Z"
    with pytest.raises(GeneratorError, match=r"setting 'events_per_day' must be an integer in \[1, 1000\]"):
        generate("small", 3, events_per_day=1001)


def test_events_up_to_288_a_day_stay_five_minutes_apart():
    pkg = generate("small", 3, events_per_day=288, chatter=300)
    day1 = [e.time for e in pkg.experiences if e.session == 1]
    assert day1[1] == "2026-03-02T09:05:00Z" and day1[-1] == "2026-03-03T08:55:00Z"


def test_render_package_refuses_a_day_with_more_events_than_minutes():
    g = EventGraph()
    for _ in range(1441):
        g.add(Event(1, "chatter", "hello there"))
    with pytest.raises(GeneratorError, match="day 1 has 1441 events; at most 1440 fit in a day"):
        render_package(g, [], package_id="t", cost_model="words", meta={})


@pytest.mark.parametrize("seed", [90, 145, 206, 226, 326, 447])
def test_two_incidents_on_one_service_and_day_get_distinct_questions(seed):
    pkg = generate("small", seed)
    texts = [q.text for q in pkg.queries]
    assert len(set(texts)) == len(texts), texts
    details = [u for u in pkg.units if u.kind == "detail"]
    assert len({u.text.split(":")[0] for u in details}) == len(details)
    notes = [e.text for e in pkg.experiences if e.text.startswith("Postmortem note")]
    assert len(set(notes)) == len(notes) == 2
    for q in pkg.queries:
        if q.text.startswith("What caused"):
            # the question's answer is stated by exactly one experience, which the question identifies
            (unit,) = q.requires
            stated = [e for e in pkg.experiences if e.text.startswith("Postmortem") and q.answer in e.text]
            assert len(stated) == 1


@pytest.mark.parametrize("family", ["small", "validity", "natural"])
def test_empty_package_id_is_refused(family):
    with pytest.raises(GeneratorError, match="package id must not be empty"):
        generate(family, 1, package_id="")
    r = CliRunner().invoke(main, ["generate", family, "--id", " "])
    assert r.exit_code == 1 and r.stderr.startswith("error: package id must not be empty"), r.stderr


# -- every generator writes a budget when asked ----------------------------------------------------

@pytest.mark.parametrize("family, kw", [("small", {}), ("validity", {"entities": 2}), ("natural", {"filler": False}),
                                        ("paper-small", {}), ("paper-update-chain", {}),
                                        ("paper-temporal-interval", {})])
def test_every_family_writes_the_budget_it_is_given(family, kw):
    from memaudit.generators import GENERATORS
    from memaudit.package import stream_cost
    assert family in GENERATORS
    assert generate(family, 1, **kw).budget is None
    assert generate(family, 1, budget=7, **kw).budget == 7.0
    frac = generate(family, 1, budget_frac=0.3, **kw)
    assert frac.budget == pytest.approx(0.3 * stream_cost(frac)) and frac.meta["budget_frac"] == 0.3


def test_budget_and_fraction_together_or_negative_are_refused():
    from memaudit.errors import BudgetError
    with pytest.raises(BudgetError, match="not both"):
        generate("small", 0, budget=3, budget_frac=0.1)
    with pytest.raises(BudgetError, match=">= 0"):
        generate("small", 0, budget=-3)


@pytest.mark.parametrize("family", ["small", "validity", "natural", "paper-small", "paper-update-chain",
                                    "paper-temporal-interval", "density-trap"])
def test_cli_generate_takes_budget_options(tmp_path, family):
    out = tmp_path / "p.json"
    r = CliRunner().invoke(main, ["generate", family, "--budget", "12", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert load_package(out).budget == 12.0
    both = CliRunner().invoke(main, ["generate", family, "--budget", "1", "--budget-frac", "0.1"])
    assert both.exit_code == 2 and "mutually exclusive" in both.output


def test_natural_reads_the_bench_scenario_file():
    # one scenario, two views: every fact of the harness bench's file, with its days, values,
    # statements and literal probe, is a slot of the natural package
    from memaudit.harness.bench import bench_distractors, bench_file

    sc = bench_file()
    pkg = generate("natural", 42)
    facts = {key: (question, timeline) for key, _, question, timeline in bench_timelines()}
    assert list(facts) == [f.key for f in sc.facts]
    for f in sc.facts:
        question, timeline = facts[f.key]
        assert question == next(p.literal for p in sc.probes if p.fact == f.key)
        stated = [(d, v, t) for d, op, v, t in timeline if op != "delete"]
        assert stated == [(v.session, v.value, v.text) for v in f.versions]
        texts = {e.text for e in pkg.experiences}
        for v in f.versions:
            assert any(t.startswith(f"user: {v.text}\n") for t in texts)
    chatter = [e.text for e in pkg.experiences if "Here is the relevant code" in e.text]
    assert chatter and all(any(t.startswith(f"user: {q}\n") for q in bench_distractors()) for t in chatter)


@pytest.mark.parametrize("params,match", [
    (dict(entities=0), "SyntheticParams: setting 'entities' must be an integer in [1, 8]; got 0"),
    (dict(min_updates=4, max_updates=2), "SyntheticParams: setting 'min_updates' must be <= max_updates (2); got 4"),
    (dict(entities=2, procedures=3), "SyntheticParams: setting 'procedures' must be <= entities (2)"),
    (dict(restate_prob=float("nan")), "SyntheticParams: setting 'restate_prob' must be a number in [0, 1]; got nan"),
    (dict(cost_model="lines"), "SyntheticParams: setting 'cost_model' must be one of words"),
])
def test_synthetic_params_check_speaks_the_declarations(params, match):
    """The library's own parameter object refuses with the registry's declarations, not a second copy."""
    from memaudit.generators.synthetic import SyntheticParams
    with pytest.raises(GeneratorError, match=re.escape(match)):
        SyntheticParams(**params).check()


def test_natural_params_check_speaks_the_declarations():
    from memaudit.generators.natural import NaturalParams
    with pytest.raises(GeneratorError, match=re.escape("NaturalParams: setting 'filler_lines' must be an integer "
                                                       "in [0, 1000]; got -1")):
        NaturalParams(filler_lines=-1).check()
