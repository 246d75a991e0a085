"""LoCoMo import on small fixtures we write ourselves, in both file shapes: one test per quirk, the
refusals, the date rule, the packages' invariants, the scenario and the command."""

from __future__ import annotations

import copy
import json
from datetime import date

import pytest
from click.testing import CliRunner

from memaudit.cli import main
from memaudit.harness.scenario import scenario_from_dict, scenario_to_dict
from memaudit.locomo.build import Settings, build_package, build_packages, carries_answer
from memaudit.locomo.dates import answer_interval, carries_date
from memaudit.locomo.importer import import_locomo
from memaudit.locomo.reader import LocomoError, conversations_from_data, read_locomo
from memaudit.locomo.scenario import build_scenario
from memaudit.package import package_from_dict, package_to_dict, stream_cost


def _turn(s, i, speaker, text, **extra):
    return {"speaker": speaker, "dia_id": f"D{s}:{i}", "text": text, **extra}


def release() -> dict:
    """Two sessions, five turns; a clean QA set (every quirk is added by the test that needs it)."""
    return {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [_turn(1, 1, "Ann", "I went to a pottery class yesterday."),
                      _turn(1, 2, "Bob", "Nice! I adopted a dog named Rex.",
                            img_url=["http://x/y.jpg"], blip_caption="a photo of a brown dog", query="dog park"),
                      _turn(1, 3, "Ann", "Rex is a lovely name.")],
        "session_2_date_time": "10:00 am on 20 May, 2023",
        "session_2": [_turn(2, 1, "Bob", "Rex learned to sit last week."),
                      _turn(2, 2, "Ann", "I started yoga and running.")],
        "session_1_observation": {"Ann": [["Ann went to a pottery class on 7 May 2023.", "D1:1"]],
                                  "Bob": [["Bob adopted a dog named Rex.", "D1:2"]]},
        "session_2_observation": {"Bob": [["Bob's dog learned to sit.", "D2:1"]],
                                  "Ann": [["Ann does yoga and running.", "D2:2"]]},
        "session_1_summary": "Ann and Bob talked on 8 May 2023 about pottery and Bob's new dog Rex.",
        "session_2_summary": "Bob said Rex learned to sit; Ann started yoga.",
        "events_session_1": {"Ann": ["pottery"], "Bob": [], "date": "8 May, 2023"},
        "qa": [
            {"question": "When did Ann go to pottery class?", "answer": "7 May 2023", "evidence": ["D1:1"],
             "category": 2},
            {"question": "What is Bob's dog called?", "answer": "Rex", "evidence": ["D1:2", "D1:3"], "category": 1},
            {"question": "What sports does Ann do?", "answer": "yoga, running", "evidence": ["D2:2"], "category": 1},
            {"question": "What did Bob's cat learn?", "adversarial_answer": "to sit", "evidence": ["D2:1"],
             "category": 5},
        ],
    }


def as_list(conv: dict, sample_id: str = "conv-7") -> list:
    """The same conversation in the Mem0 repository's list shape."""
    c = copy.deepcopy(conv)
    pick = lambda suffix: {k: c.pop(k) for k in [k for k in c if k.endswith(suffix)]}  # noqa: E731
    observation, summary = pick("_observation"), pick("_summary")
    events = {k: c.pop(k) for k in [k for k in c if k.startswith("events_session_")]}
    qa = c.pop("qa")
    return [{"qa": qa, "conversation": c, "event_summary": events, "observation": observation,
             "session_summary": summary, "sample_id": sample_id}]


def read(data, name="7.json"):
    return conversations_from_data(data, path=name)[1][0]


def both_shapes(data):
    return [read(data), read(as_list(data))]


# -- shapes and refusals -----------------------------------------------------------------

def test_both_shapes_are_detected_and_give_identical_packages_apart_from_the_source():
    shape_a, (a,) = conversations_from_data(release(), path="d/7.json")
    shape_b, (b,) = conversations_from_data(as_list(release()), path="d/list.json")
    assert (shape_a, shape_b) == ("release", "list") and a.id == b.id == "conv-7"
    for rule in ("link", "answer"):
        pa, pb = (package_to_dict(build_package(c, rule=rule)) for c in (a, b))
        assert pa["meta"].pop("source") == {"file": "7.json", "sha256": "", "shape": "release"}
        assert pb["meta"].pop("source")["shape"] == "list"
        assert pa == pb
    sa, sb = (scenario_to_dict(build_scenario(c)) for c in (a, b))
    sa["meta"].pop("source"), sb["meta"].pop("source")
    assert sa == sb


@pytest.mark.parametrize("data,match", [
    ({"speaker_a": "A"}, r"x\.json: not a LoCoMo file: .*no key 'session_1'"),
    ([{"sample_id": "c"}], r"x\.json: not a LoCoMo file: .*item \[0\] has no key 'conversation'"),
    ([], r"not a LoCoMo file: .*it is empty"),
    ("text", r"not a LoCoMo file: .*holds str"),
])
def test_a_file_of_another_shape_is_refused_naming_the_file_and_key(data, match):
    with pytest.raises(LocomoError, match=match):
        conversations_from_data(data, path="x.json")


def test_sessions_not_numbered_one_to_n_are_refused_in_both_shapes():
    d = release()
    d["session_3"], d["session_3_date_time"] = d.pop("session_2"), d.pop("session_2_date_time")
    for s in d["session_3"]:
        s["dia_id"] = s["dia_id"].replace("D2:", "D3:")
    for data in (d, as_list(d)):
        with pytest.raises(LocomoError, match=r"x\.json.*sessions must be numbered 1\.\.n; key 'session_2' is missing"):
            conversations_from_data(data, path="x.json")


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d.update(session_1_date_time="sometime in May"), r"session_1_date_time must be a session date"),
    (lambda d: d["session_1"][0].update(dia_id="D2:1"), r"session_1\[0\]\.dia_id must be 'D1:<index>'"),
    (lambda d: d["qa"][0].update(category=7), r"qa\[0\]\.category must be an integer 1-5; got 7"),
    (lambda d: d["qa"][0].pop("answer"), r"qa\[0\] \(category 2\) has no key 'answer'"),
    (lambda d: d.pop("qa"), r"has no key 'qa'"),
    (lambda d: d["session_1_observation"]["Ann"][0].append("x"), r"must be a pair \[fact text, dia_id\]"),
])
def test_malformed_conversations_get_one_line_errors(mutate, match):
    d = release()
    mutate(d)
    with pytest.raises(LocomoError, match=match) as info:
        conversations_from_data(d, path="x.json")
    assert "\n" not in str(info.value)


def test_read_locomo_reads_files_only_and_names_bad_files(tmp_path):
    p = tmp_path / "7.json"
    p.write_text(json.dumps(release()), encoding="utf-8")
    before = p.read_bytes()
    shape, (conv,) = read_locomo(p)
    assert shape == "release" and len(conv.source["sha256"]) == 64 and p.read_bytes() == before
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(LocomoError, match=r"bad\.json: not valid JSON"):
        read_locomo(tmp_path / "bad.json")
    with pytest.raises(LocomoError, match=r"nope\.json: no such file"):
        read_locomo(tmp_path / "nope.json")


# -- one test per quirk (each in both shapes) ---------------------------------------------

def _qa(d, evidence, answer="Rex", category=1):
    d["qa"].append({"question": "Q?", "answer": answer, "evidence": evidence, "category": category})
    return f"q{len(d['qa']):03d}"


def test_evidence_string_with_several_ids_is_split():
    d = release()
    qid = _qa(d, ["D1:2; D2:1"])
    qid2 = _qa(d, ["D1:3 D2:2"])
    for conv in both_shapes(d):
        q = {x.id: x for x in conv.qa}
        assert q[qid].evidence == ("D1:2", "D2:1") and q[qid2].evidence == ("D1:3", "D2:2")
        assert conv.repairs["evidence_split"] == [f"{qid}: 'D1:2; D2:1'", f"{qid2}: 'D1:3 D2:2'"]


def test_misspelt_evidence_ids_are_normalised():
    d = release()
    qid = _qa(d, ["D:1:2", "D2:01"])
    for conv in both_shapes(d):
        assert {x.id: x for x in conv.qa}[qid].evidence == ("D1:2", "D2:1")
        assert conv.repair_counts()["evidence_respelt"] == {"count": 2, "ids": [f"{qid}: D:1:2 -> D1:2",
                                                                                 f"{qid}: D2:01 -> D2:1"]}


def test_evidence_ids_that_name_no_turn_are_dropped_and_a_question_left_without_evidence_gets_no_units():
    d = release()
    qid = _qa(d, ["D9:9"])
    for conv in both_shapes(d):
        assert conv.repairs["evidence_unknown_dropped"] == [f"{qid}: D9:9"]
        assert conv.repairs["question_without_evidence"] == [qid]
        pkg = build_package(conv)
        assert not any(u.id.startswith(qid) for u in pkg.units)
        assert {q.id: q for q in pkg.queries}[qid].requires == []


def test_question_with_no_evidence_at_all_is_logged():
    d = release()
    qid = _qa(d, [])
    for conv in both_shapes(d):
        assert conv.repairs["question_without_evidence"] == [qid]


def test_an_id_listed_twice_is_kept_once():
    d = release()
    qid = _qa(d, ["D1:2", "D1:2"])
    for conv in both_shapes(d):
        assert {x.id: x for x in conv.qa}[qid].evidence == ("D1:2",)
        assert conv.repairs["evidence_duplicate_dropped"] == [f"{qid}: D1:2"]
        pkg = build_package(conv)
        assert {u.id: u.weight for u in pkg.units}[f"{qid}@D1:2"] == 1.0


def test_exact_duplicate_qa_items_are_dropped():
    d = release()
    d["qa"].append(copy.deepcopy(d["qa"][1]))
    for conv in both_shapes(d):
        assert [q.id for q in conv.qa] == ["q001", "q002", "q003", "q004"]
        assert conv.repairs["qa_duplicate_dropped"] == ["q005 (= q002)"]


def test_integer_answers_become_strings():
    d = release()
    qid = _qa(d, ["D1:1"], answer=2022, category=2)
    for conv in both_shapes(d):
        assert {x.id: x for x in conv.qa}[qid].answer == "2022"
        assert conv.repairs["answer_not_string"] == [f"{qid}: answer 2022"]


def test_date_keys_with_no_session_are_ignored_and_logged():
    d = release()
    d["session_3_date_time"] = "1:00 pm on 1 June, 2023"
    for conv in both_shapes(d):
        assert len(conv.sessions) == 2
        assert conv.repairs["key_without_session"] == ["session_3_date_time"]


def test_observation_ids_given_as_a_list_or_a_comma_string_are_parsed_and_placed_at_the_last_turn():
    d = release()
    d["session_1_observation"]["Bob"].append(["Bob's dog Rex got a name.", ["D1:3", "D1:2"]])
    d["session_2_observation"]["Ann"].append(["Ann is active.", "D2:2, D2:1"])
    for conv in both_shapes(d):
        assert conv.repair_counts()["observation_links_parsed"]["count"] == 2
        obs = {o.text: o for s in conv.sessions for o in s.observations}
        assert obs["Bob's dog Rex got a name."].turns == ("D1:2", "D1:3")  # stream order
        assert obs["Ann is active."].turns == ("D2:1", "D2:2")
        pkg = build_package(conv, Settings(facts="separate"))
        placed = {c.text: c.experience for c in pkg.candidates if c.kind == "fact"}
        assert placed["Bob's dog Rex got a name."] == "D1:3" and placed["Ann is active."] == "D2:2"


def test_observations_filed_under_the_other_speaker_are_attributed_to_the_turns_speaker():
    d = release()
    d["session_1_observation"]["Ann"].append(["Bob has a dog.", "D1:2"])
    for conv in both_shapes(d):
        o = next(o for o in conv.sessions[0].observations if o.text == "Bob has a dog.")
        assert o.speaker == "Bob"
        assert conv.repairs["observation_other_speaker"] == [f"{o.id}: filed under Ann, said by Bob"]


def test_observation_ids_that_name_no_turn_are_dropped():
    d = release()
    d["session_1_observation"]["Ann"].append(["Lost.", "D7:7"])
    for conv in both_shapes(d):
        assert all(o.text != "Lost." for s in conv.sessions for o in s.observations)
        assert len(conv.repairs["observation_unknown_dropped"]) == 1


def test_a_clean_conversation_needs_no_repair():
    for conv in both_shapes(release()):
        assert conv.repairs == {}


# -- the package ------------------------------------------------------------------------

def test_experiences_candidates_and_units_follow_the_conversation():
    conv = read(release())
    pkg = build_package(conv, rule="link")
    assert [e.id for e in pkg.experiences] == ["S1.date", "D1:1", "D1:2", "D1:3", "S1.summary",
                                               "S2.date", "D2:1", "D2:2", "S2.summary"]
    ex = {e.id: e for e in pkg.experiences}
    assert ex["D1:1"].time == "2023-05-08T13:56:00" and ex["D2:1"].session == 2
    cand = {c.id: c for c in pkg.candidates}
    # image caption shown, never the image query
    assert cand["D1:2.raw"].text == "Bob: Nice! I adopted a dog named Rex. [shares a photo of a brown dog]"
    assert "dog park" not in json.dumps(package_to_dict(pkg))
    assert cand["S1.summary"].kind == "summary" and cand["D1:1.fact"].kind == "fact"
    # one unit per (question, evidence turn), weight 1 / |evidence|; category 5 has none
    assert {u.id: u.weight for u in pkg.units} == {"q001@D1:1": 1.0, "q002@D1:2": 0.5, "q002@D1:3": 0.5,
                                                   "q003@D2:2": 1.0}
    assert {q.id: q.requires for q in pkg.queries}["q004"] == []
    assert "answer" not in package_to_dict(pkg)["queries"][3]
    # raw covers its own units by annotation
    assert cand["D1:3.raw"].coverage == {"q002@D1:3": 1.0}
    assert cand["S1.date"].coverage == {}
    assert pkg.cost_model == "tokens" and pkg.budget == float(int(0.1 * stream_cost(pkg)))
    assert pkg.meta["counts"]["answerable_with_evidence"] == 3


def test_link_and_answer_rules():
    conv = read(release())
    link, answer = (build_package(conv, rule=r) for r in ("link", "answer"))
    lc = {c.id: c.coverage for c in link.candidates}
    ac = {c.id: c.coverage for c in answer.candidates}
    assert lc["D1:2.fact"] == {"q002@D1:2": 1.0} and ac["D1:2.fact"] == {"q002@D1:2": 1.0}  # "Rex" is in it
    assert lc["D1:1.fact"] == {"q001@D1:1": 1.0}
    assert ac["D1:1.fact"] == {"q001@D1:1": 1.0}  # the date is written out
    assert lc["D2:1.fact"] == {} and lc["D2:2.fact"] == {"q003@D2:2": 1.0}
    assert ac["D2:2.fact"] == {"q003@D2:2": 1.0}  # both parts of "yoga, running"
    # a summary covers its session's units under link, only those whose answer it carries under answer
    assert lc["S1.summary"] == {"q001@D1:1": 1.0, "q002@D1:2": 1.0, "q002@D1:3": 1.0}
    assert ac["S1.summary"] == {"q002@D1:2": 1.0, "q002@D1:3": 1.0}
    assert ac["S2.summary"] == {}
    # answer is never more than link
    for cid, cov in ac.items():
        assert set(cov) <= set(lc[cid])


def test_the_answer_rule_uses_the_session_date_for_relative_dates():
    d = release()
    d["session_1_observation"]["Ann"][0][0] = "Ann went to a pottery class yesterday."
    pkg = build_package(read(d), rule="answer")
    assert {c.id: c.coverage for c in pkg.candidates}["D1:1.fact"] == {"q001@D1:1": 1.0}
    d["session_1_date_time"] = "1:56 pm on 9 May, 2023"  # now "yesterday" is 8 May
    pkg = build_package(read(d), rule="answer")
    assert {c.id: c.coverage for c in pkg.candidates}["D1:1.fact"] == {}


def test_settings_session_date_and_facts():
    conv = read(release())
    pkg = build_package(conv, Settings(session_date="candidate", facts="separate", summaries=False))
    ids = [e.id for e in pkg.experiences]
    assert "S1.date" not in ids and "S1.summary" not in ids
    cand = {c.id: c for c in pkg.candidates}
    assert cand["D1:1.raw"].text == "[1:56 pm on 8 May, 2023] Ann: I went to a pottery class yesterday."
    assert "D1:1.fact1" in cand
    assert pkg.meta["settings"] == {"cost_model": "tokens", "session_date": "candidate", "facts": "separate",
                                    "summaries": False, "budget_frac": 0.1}
    d = release()
    d["session_1_observation"]["Ann"].append(["Ann likes clay.", "D1:1"])
    combined = {c.id: c for c in build_package(read(d)).candidates}
    assert combined["D1:1.fact"].text == "Ann went to a pottery class on 7 May 2023. Ann likes clay."
    separate = {c.id for c in build_package(read(d), Settings(facts="separate")).candidates}
    assert {"D1:1.fact1", "D1:1.fact2"} <= separate
    with pytest.raises(LocomoError, match="setting facts must be one of combined, separate; got 'x'"):
        Settings(facts="x")
    with pytest.raises(LocomoError, match=r"setting budget_frac must be a fraction in \(0, 1\]; got 0"):
        Settings(budget_frac=0)


def test_packages_are_rebuilt_identically_and_validate():
    a = build_packages(read(release()))
    b = build_packages(read(release()))
    for rule in a:
        da = package_to_dict(a[rule])
        assert da == package_to_dict(b[rule])
        package_from_dict(json.loads(json.dumps(da)))


def test_adjudication_rule_reads_the_vendor_audits_rows(tmp_path):
    p = tmp_path / "adj.csv"
    p.write_text("memory,unit,coverage\nconv-7/D2:1.fact,q003@D2:2,1\nconv-7/S1.summary,,0\n", encoding="utf-8")
    (tmp_path / "7.json").write_text(json.dumps(release()), encoding="utf-8")
    res = import_locomo([tmp_path / "7.json"], None, adjudication=p, certify=False)
    pkg = res.packages["conv-7"]["adjudication"]
    cov = {c.id: c.coverage for c in pkg.candidates}
    assert cov["D2:1.fact"] == {"q003@D2:2": 1.0} and cov["S1.summary"] == {} and cov["D1:2.fact"] == {}
    assert cov["D1:2.raw"] == {"q002@D1:2": 1.0}
    assert pkg.meta["adjudication"] == {"file": "adj.csv", "candidates_decided": 2}
    p.write_text("memory,unit,coverage\nconv-7/D1:2.raw,q002@D1:2,1\n", encoding="utf-8")
    with pytest.raises(LocomoError, match=r"adj\.csv: row 1: field 'memory' names no memory .*raw turns"):
        import_locomo([tmp_path / "7.json"], None, adjudication=p, certify=False)
    p.write_text("memory,unit,coverage\nD1:2.fact,q999@D1:2,1\n", encoding="utf-8")
    with pytest.raises(LocomoError, match=r"field 'unit' names no unit"):
        import_locomo([tmp_path / "7.json"], None, adjudication=p, certify=False)


# -- the date rule ----------------------------------------------------------------------

@pytest.mark.parametrize("text,answer,said,expected", [
    ("I went yesterday.", "7 May 2023", date(2023, 5, 8), True),
    ("I went yesterday.", "May 2023", date(2023, 5, 8), True),
    ("I went yesterday.", "7 May 2023", date(2023, 5, 10), False),
    ("We did it last year.", "2022", date(2023, 1, 3), True),
    ("Last week was a blast.", "The week before 9 June 2023", date(2023, 6, 9), True),
    ("Last weekend we hiked.", "The weekend before 17 July 2023", date(2023, 7, 17), True),
    ("Two weekends ago we hiked.", "two weekends before 17 July 2023", date(2023, 7, 17), True),
    ("Last Friday I ran.", "The Friday before 15 July 2023", date(2023, 7, 15), True),
    ("On Friday I ran.", "The Friday before 15 July 2023", date(2023, 7, 15), False),
    ("It opens tomorrow.", "21 October 2023", date(2023, 10, 20), True),
    ("Back on 13 August we met.", "13 August", date(2023, 9, 1), True),
    ("I moved in 2016.", "Since 2016", date(2023, 1, 1), False),  # not a date answer: the value matcher decides
    ("A week ago.", "The week before 9 June 2023", date(2023, 6, 9), True),
])
def test_carries_date(text, answer, said, expected):
    assert carries_date(text, answer, said) is expected


def test_answer_intervals():
    assert answer_interval("The week of 23 August 2023")[0] == (date(2023, 8, 21), date(2023, 8, 27))
    assert answer_interval(" 23 July, 2023")[0] == (date(2023, 7, 23), date(2023, 7, 23))
    assert answer_interval("January, 2023")[0] == (date(2023, 1, 1), date(2023, 1, 31))
    assert answer_interval("4 years") is None and answer_interval("30 February 2023") is None
    assert carries_answer("Rex learned to sit.", "10 years ago", date(2023, 1, 1)) is False
    assert carries_answer("It was 10 years ago.", "10 years ago", date(2023, 1, 1)) is True


# -- the scenario -----------------------------------------------------------------------

def test_scenario_holds_dates_evidence_categories_and_notes():
    sc = build_scenario(read(release()))
    assert sc.format == "memaudit-scenario/2" and sc.dates[0] == (1, "2023-05-08T13:56:00")
    assert [e.id for e in sc.exchanges] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert sc.exchanges[0].stamp == "8 May 2023, 13:56"
    probes = {p.id: p for p in sc.probes}
    assert probes["q002"].evidence == ("D1:2", "D1:3") and probes["q002"].category == 1
    assert probes["q004"].abstain and probes["q004"].fact is None
    fact = sc.fact("q001")
    assert fact.versions[0].value == "7 May 2023" and fact.versions[0].exchange == "D1:1"
    assert {n.kind for n in sc.notes} == {"observation", "summary"}
    again = scenario_from_dict(json.loads(json.dumps(scenario_to_dict(sc))))
    assert again == sc and again.sha256() == sc.sha256()


# -- the command ------------------------------------------------------------------------

def test_import_command_writes_everything_and_rebuilds_byte_for_byte(tmp_path):
    src = tmp_path / "7.json"
    src.write_text(json.dumps(release()), encoding="utf-8")
    lst = tmp_path / "list.json"
    lst.write_text(json.dumps(as_list(release())), encoding="utf-8")
    runner = CliRunner()
    outs = []
    for k, f in enumerate((src, src, lst)):
        out = tmp_path / f"out{k}"
        r = runner.invoke(main, ["import", "locomo", str(f), "-o", str(out)])
        assert r.exit_code == 0, r.output
        assert "release shape" in r.output or "list shape" in r.output
        outs.append(out)
    names = sorted(p.name for p in outs[0].iterdir())
    assert names == ["import-log.txt", "locomo-conv-7-answer.json", "locomo-conv-7-link.json",
                     "locomo-conv-7.scenario.json", "manifest.json"]
    for name in names:
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    man = json.loads((outs[0] / "manifest.json").read_text())
    entry = man["conversations"][0]
    assert man["budget_fracs"] == [0.05, 0.1, 0.25] and set(entry["packages"]) == {"link", "answer"}
    import hashlib
    for rule, p in entry["packages"].items():
        assert p["sha256"] == hashlib.sha256((outs[0] / p["file"]).read_bytes()).hexdigest()
        for r in p["results"]:
            assert r["certified"] and sum(r["kinds_stored"].values()) == len(r["store"])
        opts = [r["opt"] for r in p["results"]]
        assert opts == sorted(opts)
    a = json.loads((outs[0] / "locomo-conv-7-link.json").read_text())
    b = json.loads((outs[2] / "locomo-conv-7-link.json").read_text())
    a["meta"].pop("source"), b["meta"].pop("source")
    assert a == b
    assert src.read_text() == json.dumps(release())


def test_import_command_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"speaker_a": "x"}), encoding="utf-8")
    r = CliRunner().invoke(main, ["import", "locomo", str(bad), "-o", str(tmp_path / "o")])
    assert r.exit_code == 1 and r.output.count("\n") == 1
    assert r.output.startswith("error: ") and "bad.json" in r.output and "session_1" in r.output
    assert not (tmp_path / "o").exists()
    src = tmp_path / "7.json"
    src.write_text(json.dumps(release()), encoding="utf-8")
    lst = tmp_path / "list.json"
    lst.write_text(json.dumps(as_list(release())), encoding="utf-8")
    r = CliRunner().invoke(main, ["import", "locomo", str(src), str(lst), "--no-certify", "-o", str(tmp_path / "o")])
    assert r.exit_code == 0 and "conversation conv-7 is the same as in 7.json (apart from the source): skipped" \
        in r.output
    changed = release()
    changed["qa"][0]["answer"] = "8 May 2023"
    lst.write_text(json.dumps(as_list(changed)), encoding="utf-8")
    r = CliRunner().invoke(main, ["import", "locomo", str(src), str(lst), "--no-certify", "-o", str(tmp_path / "p")])
    assert r.exit_code == 1 and "conversation 'conv-7' was already read from" in r.output and "different" in r.output
    assert not (tmp_path / "p").exists()
    r = CliRunner().invoke(main, ["import", "locomo", str(src), "--rules", ",", "-o", str(tmp_path / "o")])
    assert r.exit_code == 1 and "no coverage rule given" in r.output
    r = CliRunner().invoke(main, ["import", "locomo", str(src), "--rules", "link,magic", "-o", str(tmp_path / "o")])
    assert r.exit_code == 1 and "unknown coverage rule 'magic'" in r.output


def test_recall_command(tmp_path):
    src = tmp_path / "7.json"
    src.write_text(json.dumps(release()), encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(main, ["import", "locomo", str(src), "--no-certify", "-o", str(tmp_path)]).exit_code == 0
    r = runner.invoke(main, ["locomo", "recall", str(tmp_path / "locomo-conv-7.scenario.json"),
                             "--policy", "fresh", "--policy", "full-transcript", "--policy", "notes:kind=all"])
    assert r.exit_code == 0, r.output
    rows = {line.split()[0]: line.split() for line in r.output.splitlines()[2:]}
    assert rows["fresh"][2] == "0.000" and rows["full-transcript"][2] == "1.000" and rows["notes"][2] == "1.000"


def test_every_harness_policy_runs_on_a_locomo_scenario():
    from memaudit.harness.policies import POLICIES, parse_policy
    from memaudit.locomo.demo import demo_conversation

    sc = build_scenario(read(demo_conversation(), "demo.json"))
    for name in POLICIES:
        memory = parse_policy(name).build(sc, len)
        assert isinstance(memory.inject(3, "What did Ben play?"), list) and isinstance(memory.stored(3), list)
    lines = parse_policy("full-transcript").build(sc, len).inject(3, "?")
    assert lines[0] == "[3 March 2024, 18:10] Ana: Hi Ben! I ran my first 10k race yesterday."


def test_recall_at_equal_injection_budgets(tmp_path):
    from memaudit.harness.match import count_len4
    from memaudit.locomo.demo import demo_conversation
    from memaudit.locomo.policies import policies_at_budget

    sc = build_scenario(read(demo_conversation(), "demo.json"))
    pols = policies_at_budget(sc, 60, count_len4)
    assert [p.name for p in pols] == ["replay-capped", "last-exchanges", "bm25-transcript", "bm25-notes"]
    from memaudit.harness.policies import parse_policy
    from memaudit.locomo.policies import evidence_recall_table
    (full,) = evidence_recall_table(sc, [parse_policy("full-transcript")], tokens="len/4")
    assert full["by_category"] == {"1": 1.0, "2": 1.0, "3": 1.0, "4": 1.0}  # the demo's answerable categories
    assert pols[0].settings["cap_tokens"] == 60 and pols[1].settings["n"] == pols[2].settings["k"] >= 1
    with pytest.raises(Exception, match="whole number of tokens >= 1"):
        policies_at_budget(sc, 0, count_len4)
    (tmp_path / "demo.json").write_text(json.dumps(demo_conversation()), encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(main, ["import", "locomo", str(tmp_path / "demo.json"), "--no-certify", "-o",
                                str(tmp_path)]).exit_code == 0
    r = runner.invoke(main, ["locomo", "recall", str(tmp_path / "locomo-demo.scenario.json"), "--budget-tokens", "60",
                             "--tokens", "len/4"])
    assert r.exit_code == 0, r.output
    assert [line.split()[1] for line in r.output.splitlines()[2:]] == [p.name for p in pols]
    r = runner.invoke(main, ["locomo", "recall", str(tmp_path / "locomo-demo.scenario.json"), "--budget-tokens", "60",
                             "--policy", "fresh"])
    assert r.exit_code == 1 and "either --policy or --budget-tokens" in r.output


def test_adjudicate_command_round_trips_a_rule_and_reads_a_judge(tmp_path):
    import shlex
    import sys
    from pathlib import Path

    from memaudit.locomo.demo import demo_conversation

    src = tmp_path / "demo.json"
    src.write_text(json.dumps(demo_conversation()), encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(main, ["import", "locomo", str(src), "--no-certify", "-o", str(tmp_path / "a")]).exit_code == 0
    # the answer rule's own coverage, written as an adjudication file, gives the answer package back
    r = runner.invoke(main, ["locomo", "adjudicate", str(tmp_path / "a" / "locomo-demo-answer.json"),
                             "-o", str(tmp_path / "adj.csv")])
    assert r.exit_code == 0, r.output
    res = import_locomo([src], None, rules=(), adjudication=tmp_path / "adj.csv", certify=False)
    adj, = res.packages["demo"].values()
    answer = json.loads((tmp_path / "a" / "locomo-demo-answer.json").read_text())
    assert {c.id: c.coverage for c in adj.candidates} == {c["id"]: c["coverage"] for c in answer["candidates"]}
    # a scripted judge (a different command from any reader)
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"contains": "minuet", "units": {"q007@D3:2": 1}}]), encoding="utf-8")
    judge = f"{shlex.quote(sys.executable)} {shlex.quote(str(Path(__file__).parent / 'stores_fake_judge.py'))} " \
            f"{shlex.quote(str(rules))}"
    r = runner.invoke(main, ["locomo", "adjudicate", str(tmp_path / "a" / "locomo-demo-link.json"), "-o",
                             str(tmp_path / "judge.json"), "--judge-cmd", judge, "--cache-dir", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    rows = json.loads((tmp_path / "judge.json").read_text())
    assert [x for x in rows if x["unit"]] == [{"memory": "demo/D3:4.fact", "unit": "q007@D3:2", "coverage": 1.0},
                                              {"memory": "demo/S3.summary", "unit": "q007@D3:2", "coverage": 1.0}]
    res = import_locomo([src], None, rules=(), adjudication=tmp_path / "judge.json", certify=False)
    cov = {c.id: c.coverage for c in res.packages["demo"]["adjudication"].candidates if c.kind != "raw"}
    assert cov["D3:4.fact"] == cov["S3.summary"] == {"q007@D3:2": 1.0} and sum(map(len, cov.values())) == 2
    r = runner.invoke(main, ["locomo", "adjudicate", str(src), "-o", str(tmp_path / "x.csv")])
    assert r.exit_code == 1 and r.output.startswith("error: ")


def test_observations_with_an_empty_text_are_dropped():
    d = release()
    d["session_1_observation"]["Ann"].append(["  ", "D1:1"])
    for conv in both_shapes(d):
        assert len(conv.sessions[0].observations) == 2
        assert conv.repairs["observation_empty_dropped"] == ["S1.o2"]


def test_without_certification_the_manifest_lists_the_files_without_results(tmp_path):
    src = tmp_path / "7.json"
    src.write_text(json.dumps(release()), encoding="utf-8")
    import_locomo([src], tmp_path / "o")  # an earlier, certified run
    res = import_locomo([src], tmp_path / "o", rules=("link",), certify=False)
    man = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert man == res.manifest and man["certified"] is False and man["budget_fracs"] == []
    entry = man["conversations"][0]["packages"]
    assert list(entry) == ["link"] and entry["link"]["results"] == []
    import hashlib
    assert entry["link"]["sha256"] == hashlib.sha256((tmp_path / "o" / entry["link"]["file"]).read_bytes()).hexdigest()
