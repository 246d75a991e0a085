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
    ("last-exchanges:n=-1", "policy 'last-exchanges': setting 'n' must be an integer >= 0; got '-1'"),
    ("last-exchanges:m=3", "setting 'm' must be one of the declared settings .n, stamp.; got 3"),
    ("last-exchanges:n", "must be written key=value"),
    ("profile+bm25-redacted:redact_deleted=false", "fixed by the policy name"),
    ("ga-paper:weights=1/2", "three numbers"),
    ("ga-code:decay=2", "setting 'decay' must be none or a number in [0, 1]; got '2'"),
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
    with pytest.raises(HarnessError, match="setting 'stamp' must be given once"):
        parse_policy("profile:stamp=true,stamp=false")


# -- memaudit-scenario/2 -----------------------------------------------------------------------

V2 = {
    "format": "memaudit-scenario/2", "id": "v2", "n_sessions": 2, "replies": False,
    "sessions": [
        {"session": 1, "date": "2023-05-08T13:56:00", "exchanges": [
            {"id": "D1:1", "user": "Ann: I went to a pottery class yesterday."},
            {"id": "D1:2", "user": "Bob: My dog Rex and my cat Tom are fine."}]},
        {"session": 2, "date": "2023-05-20", "exchanges": [
            {"id": "D2:1", "user": "Bob: Rex learned to sit."},
            {"id": "D2:2", "user": "Ann: Nice."}]},
    ],
    "facts": [
        # a value that is not a literal substring of its exchange
        {"key": "pottery", "type": "detail", "versions": [{"session": 1, "value": "7 May 2023", "exchange": "D1:1"}]},
        # two facts stated by one exchange
        {"key": "dog", "type": "detail", "versions": [{"session": 1, "value": "Rex", "exchange": "D1:2"}]},
        {"key": "cat", "type": "detail", "versions": [{"session": 1, "value": "Tom", "exchange": "D1:2"}]},
    ],
    "probes": [
        {"id": "q1", "fact": "pottery", "literal": "When was the pottery class?", "evidence": ["D1:1"], "category": 2},
        {"id": "q2", "fact": "dog", "literal": "What is the dog called?", "evidence": ["D1:2", "D2:1"],
         "category": 1},
        {"id": "q3", "fact": None, "literal": "What is the parrot called?", "abstain": True, "category": 5},
        {"id": "q4", "session": 1, "fact": "cat", "literal": "The cat's name?", "evidence": ["D1:2"]},
    ],
    "notes": [
        {"id": "o1", "session": 2, "kind": "observation", "text": "Bob's dog Rex can sit.", "covers": ["D2:1"]},
        {"id": "s1", "session": 1, "kind": "summary", "text": "Ann and Bob talked about pottery and pets.",
         "covers": ["D1:1", "D1:2"]},
    ],
}


def test_v2_scenario_holds_dates_ids_references_evidence_and_notes():
    sc = scenario_from_dict(copy.deepcopy(V2))
    assert sc.format == "memaudit-scenario/2" and len(sc.exchanges) == 4  # references add no exchange
    assert [e.id for e in sc.exchanges] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    assert sc.exchanges[0].stamp == "8 May 2023, 13:56" and sc.exchanges[2].stamp == "20 May 2023"
    assert sc.fact("pottery").versions[0].text == "Ann: I went to a pottery class yesterday."
    assert sc.fact("cat").versions[0].exchange == sc.fact("dog").versions[0].exchange == "D1:2"
    p = {x.id: x for x in sc.probes}
    assert p["q2"].evidence == ("D1:2", "D2:1") and p["q2"].category == 1 and p["q3"].abstain
    assert [n.kind for n in sc.notes] == ["observation", "summary"] and sc.notes[1].covers == ("D1:1", "D1:2")
    again = scenario_from_dict(json.loads(json.dumps(scenario_to_dict(sc))))
    assert again == sc and again.sha256() == sc.sha256() and again.notes == sc.notes


def test_stamped_lines_show_the_calendar_date():
    sc = scenario_from_dict(copy.deepcopy(V2))
    mem = parse_policy("full-transcript").build(sc, len)
    assert mem.inject(2, "?")[0] == "[8 May 2023, 13:56] Ann: I went to a pottery class yesterday."
    old = load_scenario(EXAMPLE)  # no dates: the stamp stays "day N"
    assert parse_policy("full-transcript").build(old, len).inject(1, "?")[0].startswith("[day 1] ")


def test_version_1_files_load_and_are_written_back_as_version_1():
    sc = load_scenario(EXAMPLE)
    d = scenario_to_dict(sc)
    assert sc.format == d["format"] == "memaudit-scenario/1" and "notes" not in d
    assert all("date" not in s for s in d["sessions"])
    assert all(set(p) <= {"id", "session", "fact", "literal", "paraphrase"} for p in d["probes"])


def _v2(mutate):
    d = copy.deepcopy(V2)
    mutate(d)
    return d


V2_BAD = [
    (lambda d: d.update(format="memaudit-scenario/1"),
     "the scenario: field 'notes' needs format 'memaudit-scenario/2'"),
    (lambda d: (d.update(format="memaudit-scenario/1"), d.pop("notes")),
     "sessions[0]: field 'date' needs format 'memaudit-scenario/2'"),
    (lambda d: d["sessions"][0].update(date="8 May 2023"), "sessions[0]: date must be an ISO 8601 date"),
    (lambda d: d["sessions"][1]["exchanges"][0].update(id="D1:1"), "id 'D1:1' is already the id of an exchange"),
    (lambda d: d["facts"][0]["versions"][0].update(exchange="D9:9"), "exchange 'D9:9' is not the id of an exchange"),
    (lambda d: d["facts"][0]["versions"][0].update(session=2), "exchange 'D1:1' is in session 1, not in the "
                                                                "version's session 2"),
    (lambda d: d["facts"][0]["versions"][0].update(text="x"), "unknown field(s) 'text'"),
    (lambda d: d["probes"][0].update(evidence=["D7:1"]), "probe 'q1': evidence[0] must be the id of an exchange"),
    (lambda d: d["probes"][3].update(evidence=["D2:1"]), "evidence 'D2:1' is in session 2, after the probe's "
                                                          "session 1"),
    (lambda d: d["probes"][1].update(evidence=["D1:2", "D1:2"]), "evidence lists an exchange twice"),
    (lambda d: d["probes"][0].update(abstain=True), "abstain is true, so the probe must not name a fact"),
    (lambda d: d["probes"][0].update(category=[1]), "category must be an integer or a string"),
    (lambda d: d["notes"][0].update(kind="event"), "note 'o1': kind must be one of observation, summary"),
    (lambda d: d["notes"][1].update(covers=["D2:1"]), "note 's1': covers 'D2:1' of session 2, after the note's"),
    (lambda d: d["notes"].append(dict(d["notes"][0])), "note 'o1' is defined twice"),
]


@pytest.mark.parametrize("mutate,match", V2_BAD)
def test_bad_v2_scenarios_name_the_item(mutate, match):
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(_v2(mutate))
    assert match in str(info.value)


def test_v2_fields_in_a_version_1_file_are_refused():
    d = copy.deepcopy(BASE)
    d["probes"][0]["evidence"] = []
    with pytest.raises(ScenarioError, match="probe 'p1': field 'evidence' needs format 'memaudit-scenario/2'"):
        scenario_from_dict(d)
    d = copy.deepcopy(BASE)
    d["sessions"][0]["exchanges"][0]["id"] = "x"
    with pytest.raises(ScenarioError, match="session 1 exchange 0: field 'id' needs format 'memaudit-scenario/2'"):
        scenario_from_dict(d)


def test_evidence_recall_is_the_share_of_evidence_inside_the_injected_lines():
    from memaudit.harness.readers import classifier_reader
    from memaudit.harness.trial import Plant, ProbeSet, Score, evidence_recall, run
    from memaudit.locomo.policies import notes

    sc = scenario_from_dict(copy.deepcopy(V2))
    p = {x.id: x for x in sc.probes}
    # by hand: the last exchange of the stream is D2:2, the last two D2:1 and D2:2
    last1 = parse_policy("last-exchanges:n=1").build(sc, len)
    last2 = parse_policy("last-exchanges:n=2").build(sc, len)
    assert evidence_recall(sc, p["q2"], last1.inject(2, "?")) == 0.0
    assert evidence_recall(sc, p["q2"], last2.inject(2, "?")) == 0.5
    assert evidence_recall(sc, p["q1"], last2.inject(2, "?")) == 0.0
    assert evidence_recall(sc, p["q3"], last2.inject(2, "?")) is None
    # a note covering the evidence counts; a line that only starts like the exchange does not
    assert evidence_recall(sc, p["q2"], ["[20 May 2023] Bob's dog Rex can sit."]) == 0.5
    assert evidence_recall(sc, p["q2"], ["[8 May 2023, 13:56] Bob's dog Rex can sit."]) == 0.0  # another day
    assert evidence_recall(sc, p["q2"], ["[20 May 2023] Bob: My dog Rex and my cat Tom are fine."]) == 0.0
    assert evidence_recall(sc, p["q2"], ["Bob: My dog Rex and my cat Tom are fine. And more."]) == 0.0
    doc = run(Plant("v2", {}, sc), [parse_policy("fresh"), parse_policy("full-transcript"), notes(kind="all")],
              ProbeSet(classifier_reader(), forms=("literal",)), Score(tokens="len/4"))
    s = {t["disturb"]["name"]: t["summary"]["literal"] for t in doc["trials"]}
    assert s["full-transcript"]["n_evidence"] == 3 and s["full-transcript"]["evidence_recall"] == 1.0
    assert s["fresh"]["evidence_recall"] == 0.0 and s["fresh"]["evidence_hit"] == 0.0
    # notes: q1 (summary covers D1:1) 1, q2 (summary D1:2, observation D2:1) 1, q4 at session 1 (summary) 1
    assert s["notes"]["evidence_recall"] == 1.0
    rows = {r["probe"]: r for r in doc["trials"][1]["rows"]}
    assert rows["q1"]["category"] == 2 and rows["q1"]["evidence_recall"] == 1.0
    assert rows["q1"]["outcome"] == "missing"  # "7 May 2023" is not written in the transcript
    assert rows["q2"]["outcome"] == "current"
