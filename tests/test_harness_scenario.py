"""The scenario file format: loading JSON and YAML, and a clear error for each rule (naming the item at fault)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from memaudit.harness.errors import HarnessError, ScenarioError
from memaudit.harness.policies import parse_policy
from memaudit.harness.scenario import load_scenario, scenario_from_dict, scenario_to_dict
from memaudit.harness.trial import classify

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "packages_data" / "scenarios" / "example.yaml"

BASE = {
    "format": "memaudit-scenario/1", "id": "t", "n_sessions": 4,
    "facts": [
        {"key": "region", "type": "decision", "salience": 2, "versions": [
            {"session": 1, "value": "eu-west-2", "text": "We deploy to eu-west-2."},
            {"session": 3, "value": "eu-central-1", "text": "We moved to eu-central-1."}]},
        {"key": "phone", "type": "detail", "versions": [
            {"session": 1, "value": "555 0101", "text": "My phone is 555 0101."}],
         "delete": {"session": 2, "text": "Forget my phone number."}},
    ],
    "sessions": [{"session": 1, "exchanges": [{"user": "hi", "assistant": "hello"}]}],
    "probes": [{"id": "p1", "session": 4, "fact": "region", "literal": "Which region?", "paraphrase": "Where?"},
               {"id": "p2", "fact": "phone", "literal": "My phone?"},
               {"id": "p3", "fact": None, "literal": "Which database?"}],
}


def test_example_file_loads_and_round_trips():
    sc = load_scenario(EXAMPLE)
    assert sc.id == "example-team" and len(sc.facts) == 4 and len(sc.probes) == 5
    assert scenario_from_dict(scenario_to_dict(sc)) == sc
    # the update sits at position 1 of session 4, between the two filler exchanges
    s4 = [e for e in sc.exchanges if e.session == 4]
    assert [e.fact for e in s4] == [None, "deploy_region", None]


def test_json_file(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps(BASE))
    before = p.read_bytes()
    sc = load_scenario(p)
    assert p.read_bytes() == before
    assert [(e.session, e.user) for e in sc.exchanges][:2] == [(1, "hi"), (1, "We deploy to eu-west-2.")]
    assert sc.exchanges[1].assistant == "Noted: eu-west-2."


def _bad(mutate):
    d = copy.deepcopy(BASE)
    mutate(d)
    return d


BAD = [
    (lambda d: d.update(format="x"), "format must be one of 'memaudit-scenario/1', 'memaudit-scenario/2'"),
    (lambda d: d.update(n_sessions=0), "n_sessions must be an integer in 1..100000"),
    (lambda d: d.update(colour=1), "unknown field(s) 'colour'"),
    (lambda d: d["facts"][0].update(type="opinion"), "fact 'region': type must be one of"),
    (lambda d: d["facts"][0]["versions"][1].update(value="eu-north-1"),
     "fact 'region' version 2: value 'eu-north-1' does not occur"),
    (lambda d: d["facts"][0]["versions"][1].update(session=1), "fact 'region' version 2: session 1 must come after"),
    (lambda d: d["facts"][0]["versions"][1].update(session=9), "fact 'region' version 2: session must be an integer "
                                                               "in 1..4"),
    (lambda d: d["facts"][0].update(versions=[]), "fact 'region': versions must be a non-empty list"),
    (lambda d: d["facts"][1]["delete"].update(session=1), "fact 'phone' delete request: session 1 must come after"),
    (lambda d: d["facts"][1]["delete"].update(text="Forget 555 0101 please"), "must not restate what it deletes"),
    (lambda d: d["facts"].append(copy.deepcopy(d["facts"][0])), "fact 'region' is defined twice"),
    (lambda d: d["facts"][0].pop("key"), "facts[0] has no 'key' field"),
    (lambda d: d["probes"][0].update(fact="regoin"), "probe 'p1': fact 'regoin' is not a fact key"),
    (lambda d: d["probes"][0].update(session=0), "probe 'p1': session must be an integer in 1..4"),
    (lambda d: d["probes"][0].update(literal=""), "probe 'p1': literal must be a non-empty string"),
    (lambda d: d["probes"].append(dict(d["probes"][0])), "probe 'p1' is defined twice"),
    (lambda d: d["facts"][0]["versions"][0].update(session=2) or d["probes"][0].update(session=1),
     "probe 'p1': asks at session 1 about fact 'region', which is first stated in session 2"),
    (lambda d: d.update(probes=[]), "probes must be a non-empty list"),
    (lambda d: d["sessions"].append({"session": 1, "exchanges": []}), "session 1 is listed twice"),
    (lambda d: d["sessions"][0]["exchanges"].append({"assistant": "x"}), "session 1 exchange 1 has no 'user'"),
]


@pytest.mark.parametrize("mutate,match", BAD)
def test_bad_scenarios_name_the_item(mutate, match):
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(_bad(mutate))
    assert match in str(info.value)
    assert isinstance(info.value, ValueError)


def test_file_errors_name_the_file(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("facts: [\n")
    with pytest.raises(ScenarioError, match=r"bad.yaml: not valid YAML"):
        load_scenario(p)
    q = tmp_path / "bad.json"
    q.write_text(json.dumps(_bad(lambda d: d["probes"][1].update(fact="nope"))))
    with pytest.raises(ScenarioError, match=r"bad.json: probe 'p2': fact 'nope'"):
        load_scenario(q)
    with pytest.raises(ScenarioError, match="is a directory"):
        load_scenario(tmp_path)
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.json")


def test_outcomes_follow_seed_001():
    sc = scenario_from_dict(BASE)
    region, phone = sc.fact("region"), sc.fact("phone")
    assert classify(region, 4, "eu-central-1") == "current"
    assert classify(region, 4, "eu-west-2 then eu-central-1") == "conflict"
    assert classify(region, 4, "eu-west-2") == "stale"
    assert classify(region, 2, "eu-west-2") == "current"  # not yet superseded on day 2
    assert classify(region, 4, "eu-west-22") == "missing"  # whole tokens only
    assert classify(phone, 1, "555 0101") == "current"
    assert classify(phone, 2, "call 555 0101") == "leaked"
    assert classify(phone, 2, "nothing") == "clean"


def test_policies_see_only_the_past():
    sc = scenario_from_dict(BASE)
    prof = parse_policy("profile").build(sc, len)
    assert prof.inject(1, "q") == ["[day 1] We deploy to eu-west-2.", "[day 1] My phone is 555 0101."]
    assert prof.inject(4, "q") == ["[day 3] We moved to eu-central-1."]
    log = parse_policy("fact-log").build(sc, len)
    assert log.inject(2, "q")[-1] == "[day 2] Forget my phone number."
    buf = parse_policy("last-exchanges:n=1").build(sc, len)
    assert buf.inject(3, "q") == ["[day 3] user: We moved to eu-central-1. / assistant: Noted: eu-central-1."]


@pytest.mark.parametrize("spec,match", [
    ("nope", "unknown policy 'nope'; valid policies: fresh"),
    ("last-exchanges:n=-1", "setting n must be an integer >= 0"),
    ("last-exchanges:m=3", "valid settings: n, stamp"),
    ("last-exchanges:n", "must be written key=value"),
    ("profile+bm25-redacted:redact_deleted=false", "fixed by the policy name"),
    ("ga-paper:weights=1/2", "three numbers"),
    ("ga-code:decay=2", "setting decay must be a finite number in [0, 1]"),
])
def test_bad_policy_specs(spec, match):
    with pytest.raises(HarnessError, match=match.replace("[", r"\[").replace("]", r"\]")):
        parse_policy(spec)


# -- review fixes ------------------------------------------------------------------------

@pytest.mark.parametrize("fact", [["region"], {"k": "region"}, 3, True])
def test_probe_fact_must_be_a_string_or_null(fact):
    with pytest.raises(ScenarioError, match=r"probe 'p1': fact must be a fact key \(a string\) or null"):
        scenario_from_dict(_bad(lambda d: d["probes"][0].update(fact=fact)))


def test_yaml_probe_fact_list_names_the_probe(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("format: memaudit-scenario/1\nid: t\nn_sessions: 2\nfacts:\n  - key: a\n    type: detail\n"
                 "    versions:\n      - {session: 1, value: x1, text: 'it is x1'}\n"
                 "probes:\n  - {id: p, fact: [a], literal: 'what?'}\n")
    with pytest.raises(ScenarioError, match=r"s.yaml: probe 'p': fact must be a fact key"):
        load_scenario(p)


def test_yaml_mixed_key_types(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("format: memaudit-scenario/1\nid: t\nn_sessions: 2\nfacts:\n  - key: a\n    type: detail\n"
                 "    1: x\n    zz: y\n    versions:\n      - {session: 1, value: x1, text: 'it is x1'}\n"
                 "probes:\n  - {id: p, fact: a, literal: 'what?'}\n")
    with pytest.raises(ScenarioError, match=r"fact 'a' has unknown field\(s\) '1', 'zz'"):
        load_scenario(p)


def test_too_many_sessions_is_refused_quickly():
    import time

    t0 = time.monotonic()
    with pytest.raises(ScenarioError, match=r"n_sessions must be an integer in 1\.\.100000"):
        scenario_from_dict(_bad(lambda d: d.update(n_sessions=100_000_000)))
    assert time.monotonic() - t0 < 1


def test_many_sessions_hash_quickly():
    import time

    def many(d):
        d.update(n_sessions=100_000)
        d["sessions"] = [{"session": s, "exchanges": [{"user": f"question {s}"}]} for s in range(1, 2001)]

    sc = scenario_from_dict(_bad(many))
    t0 = time.monotonic()
    sc.sha256()
    assert time.monotonic() - t0 < 2


def test_yaml_duplicate_keys_are_refused(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("format: memaudit-scenario/1\nid: t\nn_sessions: 2\nfacts:\n  - key: a\n    type: detail\n"
                 "    type: decision\n    versions:\n      - {session: 1, value: x1, text: 'it is x1'}\n"
                 "probes:\n  - {id: p, fact: a, literal: 'what?'}\n")
    with pytest.raises(ScenarioError, match=r"s.yaml: not valid YAML: .*key 'type' appears twice.*line 7"):
        load_scenario(p)


def test_json_duplicate_keys_are_refused(tmp_path):
    p = tmp_path / "s.json"
    text = json.dumps(BASE).replace('"n_sessions": 4', '"n_sessions": 4, "n_sessions": 3')
    p.write_text(text)
    with pytest.raises(ScenarioError, match=r"s.json: not valid JSON: key 'n_sessions' appears twice"):
        load_scenario(p)


def test_duplicate_policy_settings_are_refused():
    with pytest.raises(HarnessError, match="setting 'stamp' is given twice"):
        parse_policy("profile:stamp=true,stamp=false")
