"""Tests of memaudit.package: every loader rule, save / load round trip, budgets, compilation."""

import copy
import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from memaudit.errors import BudgetError, MemauditError, PackageError
from memaudit.package import (FORMAT, Candidate, Compiled, Experience, HBreakpoints, HCap, Package, Query, Unit, candidate_costs, compile_package,
                              load_package, package_from_dict, package_json_schema, package_sha256,
                              resolve_budget, save_package, stream_cost, summarize)
from memaudit_solvers import evaluate

OLD_NS = 1_000_000_000 * 10**9  # 2001-09-09: any write during a load would move the mtime


def tiny():
    """A valid package.  Costs by hand under "words": e01.raw 4 (given), e02.raw 6, e02.update 5.

    "We deploy to eu-west-2."                   -> We / deploy / to / eu-west-2.                       = 4
    "Actually we moved prod to eu-central-1."   -> Actually / we / moved / prod / to / eu-central-1.   = 6
    "prod region: eu-central-1 (was eu-west-2)" -> prod / region: / eu-central-1 / (was / eu-west-2)   = 5
    """
    return {
        "format": "memaudit-package/1",
        "id": "tiny",
        "cost_model": "words",
        "budget": 6,
        "experiences": [
            {"id": "e01", "time": "2026-03-02T10:00:00Z", "session": 1, "text": "We deploy to eu-west-2."},
            {"id": "e02", "time": "2026-03-09T10:00:00Z", "session": 2,
             "text": "Actually we moved prod to eu-central-1."},
        ],
        "units": [
            {"id": "region.old", "kind": "validity", "weight": 1.0, "text": "eu-west-2 is no longer the region"},
            {"id": "region.current", "kind": "current", "weight": 2.0, "text": "region is eu-central-1",
             "h": {"cap": 2}, "aliases": ["eu-central-1", "Frankfurt"]},
            {"id": "detail", "kind": "detail", "weight": 0.5, "h": {"breakpoints": [[1, 1], [3, 2]]}},
        ],
        "candidates": [
            {"id": "e01.raw", "experience": "e01", "kind": "raw", "text": "We deploy to eu-west-2.", "cost": 4,
             "coverage": {"region.old": 1.0}},
            {"id": "e02.raw", "experience": "e02", "kind": "raw", "text": "Actually we moved prod to eu-central-1.",
             "coverage": {"region.current": 1.0, "region.old": 0.5}},
            {"id": "e02.update", "experience": "e02", "kind": "update",
             "text": "prod region: eu-central-1 (was eu-west-2)",
             "coverage": {"region.current": 1.0, "region.old": 1.0}},
        ],
        "queries": [{"id": "q01", "text": "Where does prod live?", "answer": "eu-central-1",
                     "requires": ["region.current"], "weight": 1.0}],
        "meta": {"generator": "test", "seed": 42, "note": None},
    }


def write(tmp_path, content, name="pkg.json"):
    """Write a dict (as JSON), str or bytes to tmp_path/name with an old mtime."""
    path = tmp_path / name
    if isinstance(content, dict) or isinstance(content, list):
        content = json.dumps(content)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    os.utime(path, ns=(OLD_NS, OLD_NS))
    return path


def assert_rejected(tmp_path, content, match, error=PackageError):
    """Loading ``content`` fails with ``match``; the message is one line naming the file; the file is untouched."""
    path = write(tmp_path, content)
    before = path.read_bytes(), path.stat().st_mtime_ns
    with pytest.raises(error, match=match) as info:
        load_package(path)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: ")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg.json"]
    return msg


def edited(fn):
    data = tiny()
    fn(data)
    return data


def with_literal(data_fn, literal):
    """JSON text of tiny() edited by data_fn, with the string "__X__" replaced by a raw JSON literal."""
    return json.dumps(edited(data_fn)).replace('"__X__"', literal)


# -- malformed files ----------------------------------------------------------

def test_not_json(tmp_path):
    assert_rejected(tmp_path, '{"format": "memaudit-package/1",\n  "id": }', r"not valid JSON: .* line 2 column 9")


def test_empty_file(tmp_path):
    assert_rejected(tmp_path, b"", "file is empty")


def test_not_utf8(tmp_path):
    raw = json.dumps(tiny()).encode("utf-8").replace(b"We deploy", b"We d\xe9ploy")
    assert_rejected(tmp_path, raw, r"not UTF-8 text: byte 0xe9 at offset \d+")


def test_utf8_bom_accepted(tmp_path):
    path = write(tmp_path, b"\xef\xbb\xbf" + json.dumps(tiny()).encode())
    assert load_package(path).id == "tiny"


@pytest.mark.parametrize("content, kind", [("[]", "a JSON array"), ('"hello"', "a JSON string"),
                                           ("42", "a JSON number"), ("null", "null")])
def test_wrong_top_level_shape(tmp_path, content, kind):
    assert_rejected(tmp_path, content, rf"a package must be a JSON object .* at the top level; got {kind}$")


def test_wrong_shape_of_a_list(tmp_path):
    data = edited(lambda d: d.update(candidates={"e01.raw": {}}))
    assert_rejected(tmp_path, data, r"candidates must be a list \(JSON array\); got \{")


def test_item_not_an_object(tmp_path):
    data = edited(lambda d: d["units"].append("region.new"))
    assert_rejected(tmp_path, data, r"units\[3\] must be an object .*; got 'region.new'")


def test_duplicate_json_key(tmp_path):
    text = json.dumps(tiny()).replace('"cost": 4,', '"cost": 4, "cost": 5,')
    assert_rejected(tmp_path, text, r"key 'cost' appears twice in one JSON object \(the object with id 'e01.raw'\)")


def test_missing_file(tmp_path):
    with pytest.raises(PackageError, match=r"nope\.json: no such file"):
        load_package(tmp_path / "nope.json")
    assert list(tmp_path.iterdir()) == []


def test_directory_is_not_a_package(tmp_path):
    with pytest.raises(PackageError, match="is a directory"):
        load_package(tmp_path)


# -- format, ids, references --------------------------------------------------

def test_unknown_format_version(tmp_path):
    data = edited(lambda d: d.update(format="memaudit-package/2", surprise=1))
    assert_rejected(tmp_path, data, r"format must be 'memaudit-package/1', the only .*; got 'memaudit-package/2'$")


def test_missing_format(tmp_path):
    assert_rejected(tmp_path, edited(lambda d: d.pop("format")), "format is required; expected 'memaudit-package/1'")


@pytest.mark.parametrize("field, dup", [("experiences", 0), ("units", 1), ("candidates", 1)])
def test_duplicate_ids(tmp_path, field, dup):
    def dup_last(d):
        d[field][-1]["id"] = d[field][dup]["id"]
    data = edited(dup_last)
    n = len(data[field]) - 1
    ident = data[field][dup]["id"]
    assert_rejected(tmp_path, data, rf"{field}\[{n}\]\.id must be unique among the {field}; got '{ident}', "
                                    rf"already the id of {field}\[{dup}\]")


def test_duplicate_query_ids(tmp_path):
    data = edited(lambda d: d["queries"].append(dict(d["queries"][0])))
    assert_rejected(tmp_path, data, r"queries\[1\]\.id must be unique among the queries; got 'q01'")


def test_candidate_of_missing_experience(tmp_path):
    data = edited(lambda d: d["candidates"][2].update(experience="e99"))
    assert_rejected(tmp_path, data, r"candidates\[2\] \('e02\.update'\)\.experience must name an experience "
                                    r"of this package; got 'e99'")


def test_coverage_of_unknown_unit(tmp_path):
    data = edited(lambda d: d["candidates"][1]["coverage"].update({"region.typo": 1.0}))
    assert_rejected(tmp_path, data, r"candidates\[1\] \('e02\.raw'\)\.coverage key must name a unit of this "
                                    r"package; got 'region\.typo'")


def test_query_requires_unknown_unit(tmp_path):
    data = edited(lambda d: d["queries"][0]["requires"].append("region.future"))
    assert_rejected(tmp_path, data, r"queries\[0\] \('q01'\)\.requires\[1\] must name a unit of this package; "
                                    r"got 'region\.future'")


def test_empty_id(tmp_path):
    data = edited(lambda d: d["units"][0].update(id=""))
    assert_rejected(tmp_path, data, r"units\[0\] \(''\)\.id must be a non-empty string; got ''")


# -- numbers --------------------------------------------------------------------

def _set_cost(value):
    return lambda d: d["candidates"][1].update(cost=value)


@pytest.mark.parametrize("literal, shown", [("-1", "-1"), ("0", "0"), ("0.0", "0"), ("NaN", "NaN"),
                                            ("Infinity", "Infinity"), ("-Infinity", "-Infinity"),
                                            ("1e999", "Infinity"), ('"6"', "'6'"), ("true", "true")])
def test_bad_cost(tmp_path, literal, shown):
    text = with_literal(_set_cost("__X__"), literal)
    msg = assert_rejected(tmp_path, text, r"candidates\[1\] \('e02\.raw'\)\.cost must be a finite number > 0; got ")
    assert msg.endswith(f"; got {shown}")


@pytest.mark.parametrize("literal, shown", [("-0.5", "-0.5"), ("NaN", "NaN"), ("Infinity", "Infinity")])
def test_bad_coverage(tmp_path, literal, shown):
    text = with_literal(lambda d: d["candidates"][0]["coverage"].update({"region.old": "__X__"}), literal)
    assert_rejected(tmp_path, text, r"candidates\[0\] \('e01\.raw'\)\.coverage\['region\.old'\] must be a "
                                    rf"finite number >= 0; got {shown}$")


def test_zero_coverage_is_allowed(tmp_path):
    path = write(tmp_path, edited(lambda d: d["candidates"][0]["coverage"].update({"detail": 0})))
    assert load_package(path).candidates[0].coverage["detail"] == 0.0


@pytest.mark.parametrize("weight", [0, -2])
def test_non_positive_unit_weight(tmp_path, weight):
    data = edited(lambda d: d["units"][1].update(weight=weight))
    assert_rejected(tmp_path, data, rf"units\[1\] \('region\.current'\)\.weight must be a finite number > 0; "
                                    rf"got {weight}$")


def test_non_positive_query_weight(tmp_path):
    data = edited(lambda d: d["queries"][0].update(weight=0))
    assert_rejected(tmp_path, data, r"queries\[0\] \('q01'\)\.weight must be a finite number > 0; got 0$")


@pytest.mark.parametrize("literal, shown", [("-1", "-1"), ("NaN", "NaN"), ("1e999", "Infinity")])
def test_bad_budget(tmp_path, literal, shown):
    text = with_literal(lambda d: d.update(budget="__X__"), literal)
    assert_rejected(tmp_path, text, rf"budget must be a finite number >= 0; got {shown}$")


def test_zero_budget_and_no_budget_are_allowed(tmp_path):
    assert load_package(write(tmp_path, edited(lambda d: d.update(budget=0)), "a.json")).budget == 0.0
    assert load_package(write(tmp_path, edited(lambda d: d.pop("budget")), "b.json")).budget is None


def test_nan_in_meta(tmp_path):
    text = with_literal(lambda d: d["meta"].update(stats={"xs": [1, "__X__"]}), "NaN")
    assert_rejected(tmp_path, text, r"meta\['stats'\]\['xs'\]\[1\] must be a finite number; got NaN$")


def test_session_must_be_an_integer(tmp_path):
    data = edited(lambda d: d["experiences"][0].update(session="1"))
    assert_rejected(tmp_path, data, r"experiences\[0\] \('e01'\)\.session must be an integer; got '1'$")


# -- h ----------------------------------------------------------------------------

@pytest.mark.parametrize("h, match", [
    ({"breakpoints": [[1, 0.5], [2, 1.5]]}, r"must be concave; its slope rises from 0.5 to 1.0"),
    ({"breakpoints": [[1, 1], [2, 0.5]]}, r"must be non-decreasing; it falls from 1.0 to 0.5"),
    ({"breakpoints": [[1, -1]]}, r"must be non-decreasing"),
    ({"breakpoints": [[0, 1]]}, r"strictly increasing z > 0"),
    ({"breakpoints": [[2, 1], [1, 0.5]]}, r"strictly increasing z > 0"),
    ({"breakpoints": []}, r"non-empty list of \[z, h\(z\)\] pairs"),
    ({"breakpoints": [[1, 1, 1]]}, r"pair \[z, h\(z\)\] of finite numbers"),
    ({"cap": 0}, r"cap must be a finite number > 0"),
    ({"cap": -1}, r"cap must be a finite number > 0"),
    ({"cap": 1, "breakpoints": [[1, 1]]}, r'must be "min1", \{"cap": c\}'),
    ("min2", r'must be "min1", \{"cap": c\}'),
])
def test_bad_h(tmp_path, h, match):
    data = edited(lambda d: d["units"][2].update(h=h))
    msg = assert_rejected(tmp_path, data, r"units\[2\] \('detail'\)\.h " + ".*" + match)
    assert "; got " in msg


def test_h_forms_are_kept(tmp_path):
    pkg = load_package(write(tmp_path, tiny()))
    assert [u.h for u in pkg.units] == ["min1", HCap(cap=2.0), HBreakpoints(breakpoints=[(1.0, 1.0), (3.0, 2.0)])]


# -- empty things -------------------------------------------------------------------

@pytest.mark.parametrize("field, noun", [("experiences", "experience"), ("units", "unit"),
                                         ("candidates", "candidate")])
def test_empty_package(tmp_path, field, noun):
    data = edited(lambda d: d.update({field: []}))
    assert_rejected(tmp_path, data, rf"{field} must not be empty: a package needs at least one {noun}; got \[\]")


def test_completely_empty_package(tmp_path):
    data = {"format": FORMAT, "id": "empty", "cost_model": "words", "experiences": [], "units": [],
            "candidates": []}
    assert_rejected(tmp_path, data, r"experiences must not be empty.* \(and 2 more problems\)$")


def test_experience_without_candidates(tmp_path):
    data = edited(lambda d: d["experiences"].append({"id": "e03", "text": "Nothing to see."}))
    assert_rejected(tmp_path, data, r"experiences\[2\] \('e03'\) must have at least one candidate "
                                    r"\(its group is empty\)")


# -- costs against the cost model -------------------------------------------------

def test_given_cost_disagreeing_with_text(tmp_path):
    data = edited(lambda d: d["candidates"][0].update(cost=5))
    assert_rejected(tmp_path, data, r"candidates\[0\] \('e01\.raw'\)\.cost must equal the cost of its text under "
                                    r"cost_model 'words' \(4 words\); got 5\. .*\"cost_source\": \"given\"")


def test_given_cost_accepted_with_cost_source_given(tmp_path):
    def given(d):
        d["cost_source"] = "given"
        for c, cost in zip(d["candidates"], [5, 7, 3.5]):
            c["cost"] = cost
    pkg = load_package(write(tmp_path, edited(given)))
    assert candidate_costs(pkg) == {"e01.raw": 5.0, "e02.raw": 7.0, "e02.update": 3.5}


def test_cost_source_given_needs_every_cost(tmp_path):
    data = edited(lambda d: d.update(cost_source="given"))
    assert_rejected(tmp_path, data, r"candidates\[1\] \('e02\.raw'\)\.cost is required because the package says "
                                    r"\"cost_source\": \"given\"")


def test_cost_not_computable_from_empty_text(tmp_path):
    data = edited(lambda d: d["candidates"][1].update(text="  "))
    assert_rejected(tmp_path, data, r"candidates\[1\] \('e02\.raw'\)\.cost is not given and its text costs 0 words")


def test_unknown_cost_model(tmp_path):
    data = edited(lambda d: d.update(cost_model="lines"))
    assert_rejected(tmp_path, data, r"cost_model must be one of 'words', 'chars', 'bytes', 'tokens' or 'byte-overhead'; got 'lines'$")


def test_unknown_cost_source(tmp_path):
    data = edited(lambda d: d.update(cost_source="guess"))
    assert_rejected(tmp_path, data, r"cost_source must be one of 'text' or 'given'; got 'guess'$")


def test_unknown_candidate_kind(tmp_path):
    data = edited(lambda d: d["candidates"][0].update(kind="note"))
    assert_rejected(tmp_path, data, r"candidates\[0\] \('e01\.raw'\)\.kind must be one of 'raw', .*'external'; "
                                    r"got 'note'$")


def test_tokens_cost_model(tmp_path):
    data = edited(lambda d: d.update(cost_model="tokens"))
    data["candidates"][0].pop("cost")
    data["candidates"][0]["text"] = "hello world"
    pkg = load_package(write(tmp_path, data))
    assert candidate_costs(pkg)["e01.raw"] == 2.0


# -- misspelt and missing keys ------------------------------------------------------------

def test_misspelt_candidate_key(tmp_path):
    data = edited(lambda d: d["candidates"][0].update(coverge=d["candidates"][0].pop("coverage")))
    assert_rejected(tmp_path, data, r"candidates\[0\] \('e01\.raw'\) has an unknown field 'coverge' "
                                    r"\(did you mean 'coverage'\?\); allowed fields: id, experience, kind")


def test_misspelt_top_level_key(tmp_path):
    data = edited(lambda d: d.update(budjet=d.pop("budget")))
    assert_rejected(tmp_path, data, r"the package has an unknown field 'budjet' \(did you mean 'budget'\?\)")


def test_missing_required_key(tmp_path):
    data = edited(lambda d: d["units"][0].pop("weight"))
    assert_rejected(tmp_path, data, r"units\[0\] \('region\.old'\)\.weight is required$")


def test_several_problems_are_counted(tmp_path):
    def two(d):
        d["units"][0]["weight"] = -1
        d["candidates"][0]["cost"] = 0
    assert_rejected(tmp_path, edited(two), r"units\[0\] .* \(and 1 more problem\)$")


# -- valid packages ----------------------------------------------------------------

def test_round_trip(tmp_path):
    pkg = load_package(write(tmp_path, tiny()))
    out = tmp_path / "out" / "saved.json"
    out.parent.mkdir()
    save_package(pkg, out)
    text = out.read_text(encoding="utf-8")
    assert text.endswith("}\n") and text.startswith('{\n  "format": "memaudit-package/1",\n  "id": "tiny"')
    assert load_package(out) == pkg
    assert os.listdir(out.parent) == ["saved.json"]
    # saving again gives the same bytes, and keeps meta's null
    first = out.read_bytes()
    save_package(load_package(out), out)
    assert out.read_bytes() == first
    assert json.loads(first)["meta"] == {"generator": "test", "seed": 42, "note": None}


def test_save_keeps_unicode(tmp_path):
    data = edited(lambda d: d["experiences"][0].update(text="Wir ziehen nach München 🚀"))
    pkg = package_from_dict(data)
    save_package(pkg, tmp_path / "u.json")
    assert "München 🚀" in (tmp_path / "u.json").read_text(encoding="utf-8")


def test_save_refuses_an_invalid_package_and_leaves_the_file(tmp_path):
    path = write(tmp_path, tiny())
    before = path.read_bytes()
    pkg = load_package(path)
    pkg.candidates[0].experience = "e99"  # mutated after validation
    with pytest.raises(PackageError, match="must name an experience"):
        save_package(pkg, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["pkg.json"]


def test_package_sha256(tmp_path):
    path = write(tmp_path, tiny())
    assert package_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(PackageError, match="no such file"):
        package_sha256(tmp_path / "missing.json")


def test_package_from_dict_names_its_source():
    with pytest.raises(PackageError, match=r"^<dict>: budget must be"):
        package_from_dict(edited(lambda d: d.update(budget=-3)))
    with pytest.raises(PackageError, match=r"^mine: a package must be a JSON object"):
        package_from_dict([tiny()], source="mine")


def test_package_from_dict_does_not_modify_its_input():
    data = tiny()
    snapshot = copy.deepcopy(data)
    package_from_dict(data)
    assert data == snapshot


def test_errors_are_value_errors():
    assert issubclass(PackageError, ValueError) and issubclass(PackageError, MemauditError)
    assert issubclass(BudgetError, ValueError) and issubclass(BudgetError, MemauditError)


def test_candidate_costs_and_stream_cost():
    pkg = package_from_dict(tiny())
    assert candidate_costs(pkg) == {"e01.raw": 4.0, "e02.raw": 6.0, "e02.update": 5.0}
    assert stream_cost(pkg) == 4.0 + 6.0


def test_resolve_budget():
    pkg = package_from_dict(tiny())
    assert resolve_budget(pkg) == 6.0
    assert resolve_budget(pkg, budget=3) == 3.0
    assert resolve_budget(pkg, budget=0) == 0.0
    assert resolve_budget(pkg, budget_frac=0.5) == 5.0
    assert resolve_budget(pkg, budget_frac=2) == 20.0
    with pytest.raises(BudgetError, match="not both"):
        resolve_budget(pkg, budget=3, budget_frac=0.5)
    for bad in (-1, float("nan"), float("inf"), "5", True):
        with pytest.raises(BudgetError, match=r"budget for package 'tiny' must be a finite number >= 0"):
            resolve_budget(pkg, budget=bad)
        with pytest.raises(BudgetError, match=r"budget fraction for package 'tiny' must be a finite number >= 0"):
            resolve_budget(pkg, budget_frac=bad)
    no_budget = package_from_dict(edited(lambda d: d.pop("budget")))
    with pytest.raises(BudgetError, match=r"package 'tiny' has no budget of its own: pass --budget B .* "
                                          r"or --budget-frac f \(a fraction of the stream cost 10\)"):
        resolve_budget(no_budget)


def test_compile_package():
    compiled = compile_package(package_from_dict(tiny()))
    p = compiled.problem
    assert isinstance(compiled, Compiled)
    assert compiled.candidate_ids == ["e01.raw", "e02.raw", "e02.update"]
    assert compiled.unit_ids == ["region.old", "region.current", "detail"]
    assert compiled.experience_ids == ["e01", "e02"]
    assert p.costs.tolist() == [4.0, 6.0, 5.0]
    assert p.groups.tolist() == [0, 1, 1] and p.n_groups == 2
    assert p.coverage.toarray().tolist() == [[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [1.0, 1.0, 0.0]]
    assert p.weights.tolist() == [1.0, 2.0, 0.5]
    # min1 -> min(z, 1); cap 2 -> min(z, 2); breakpoints (1,1),(3,2) -> min(z, z/2 + 1/2, 2); padded to 3 pieces
    assert p.h_slopes.tolist() == [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.5, 0.0]]
    assert p.h_intercepts.tolist() == [[0.0, 1.0, 1.0], [0.0, 2.0, 2.0], [0.0, 0.5, 2.0]]
    # {e01.raw, e02.update}: s = (2, 1, 0) -> 1*min(2,1) + 2*min(1,2) + 0 = 3
    assert evaluate(p, compiled.indices(["e01.raw", "e02.update"])) == 3.0
    # {e02.raw}: s = (0.5, 1, 0) -> 0.5 + 2 = 2.5
    assert evaluate(p, compiled.indices("e02.raw")) == 2.5


def test_compile_breakpoint_h_values():
    data = edited(lambda d: d["candidates"][1]["coverage"].update(detail=2.0))
    compiled = compile_package(package_from_dict(data))
    # detail gets s = 2: h(2) = 1.5 (on the segment from (1,1) to (3,2)), times weight 0.5
    assert evaluate(compiled.problem, [1]) == 0.5 + 2.0 + 0.5 * 1.5


def test_compiled_ids_and_indices():
    compiled = compile_package(package_from_dict(tiny()))
    assert compiled.ids([2, 0]) == ["e02.update", "e01.raw"]
    assert compiled.ids(np.array([False, True, True])) == ["e02.raw", "e02.update"]
    assert compiled.indices(["e02.update", "e01.raw"]).tolist() == [2, 0]
    assert compiled.indices([]).dtype == np.int64
    with pytest.raises(PackageError, match="unknown candidate id 'e03.raw'"):
        compiled.indices(["e01.raw", "e03.raw"])
    with pytest.raises(IndexError):
        compiled.ids([3])


def test_summarize():
    pkg = package_from_dict(tiny())
    s = summarize(pkg)
    assert s["n_experiences"] == 2 and s["n_candidates"] == 3 and s["n_units"] == 3 and s["n_queries"] == 1
    assert s["candidates_by_kind"] == {"raw": 2, "update": 1}
    assert s["units_by_kind"] == {"current": 1, "detail": 1, "validity": 1}
    assert s["stream_cost"] == 10.0
    assert s["cost_by_kind"] == {"raw": 10.0, "update": 5.0}
    assert (s["budget"], s["budget_frac"]) == (6.0, 0.6)
    assert summarize(pkg, budget=5)["budget_frac"] == 0.5
    no_budget = package_from_dict(edited(lambda d: d.pop("budget")))
    assert (summarize(no_budget)["budget"], summarize(no_budget)["budget_frac"]) == (None, None)
    json.dumps(s)


def test_json_schema():
    schema = package_json_schema()
    json.dumps(schema)
    assert set(schema["required"]) == {"format", "id", "cost_model", "experiences", "units", "candidates"}
    assert schema["additionalProperties"] is False
    assert schema["properties"]["format"]["const"] == FORMAT or schema["properties"]["format"]["enum"] == [FORMAT]


def test_models_can_be_built_in_python():
    pkg = Package(format=FORMAT, id="py", cost_model="chars",
                  experiences=[{"id": "e", "text": "abc"}], units=[{"id": "r", "kind": "current", "weight": 1}],
                  candidates=[{"id": "e.raw", "experience": "e", "kind": "raw", "text": "abc",
                               "coverage": {"r": 1}}])
    assert candidate_costs(pkg) == {"e.raw": 3.0}


def test_import_memaudit_does_not_import_solver_backends():
    code = ("import sys, memaudit, memaudit.package, memaudit.costs, memaudit.errors; "
            "bad = [m for m in ('pulp', 'ortools', 'highspy') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=os.path.dirname(os.path.dirname(__file__)))


# -- the largest number ---------------------------------------------------------------

@pytest.mark.parametrize("edit, where", [
    (lambda d: d["units"][0].update(weight=1.7e308), r"units\[0\] \('region\.old'\)\.weight"),
    (lambda d: d["candidates"][1].update(cost=1e101), r"candidates\[1\] \('e02\.raw'\)\.cost"),
    (lambda d: d["candidates"][0]["coverage"].update({"region.old": 1e300}), r"coverage\['region\.old'\]"),
    (lambda d: d["units"][1].update(h={"cap": 1e200}), r"units\[1\] \('region\.current'\)\.h"),
    (lambda d: d.update(budget=1e150), r"budget"),
])
def test_numbers_beyond_the_largest_are_refused_at_the_door(tmp_path, edit, where):
    """validate and solve agree: a number no solver can add up is bad input, not a solver failure."""
    data = edited(edit)
    if "cost" in json.dumps(data["candidates"][1]) and data["candidates"][1].get("cost") == 1e101:
        data["cost_source"] = "given"
        for c in data["candidates"]:
            c.setdefault("cost", 5)
    assert_rejected(tmp_path, data, rf"{where} .*must be at most 1e\+100 in magnitude")


@pytest.mark.parametrize("edit, where", [
    (lambda d: d["units"][0].update(weight=1e-310), r"units\[0\] \('region\.old'\)\.weight"),
    (lambda d: d["candidates"][0]["coverage"].update({"region.old": 1e-200}), r"coverage\['region\.old'\]"),
    (lambda d: d.update(budget=1e-150), r"budget"),
])
def test_numbers_below_the_smallest_are_refused_at_the_door(tmp_path, edit, where):
    """A non-zero number below 1e-100 (a subnormal weight overflowed bnb's value-per-cost and the MILPs'
    exact scaling) is bad input, not a solver failure; 0 stays valid."""
    assert_rejected(tmp_path, edited(edit), rf"{where} .*must be 0 or at least 1e-100 in magnitude")


def test_a_given_cost_below_the_smallest_is_refused(tmp_path):
    data = tiny()
    data["cost_source"] = "given"
    for c in data["candidates"]:
        c["cost"] = 5
    data["candidates"][1]["cost"] = 1e-300
    assert_rejected(tmp_path, data, r"candidates\[1\] \('e02\.raw'\)\.cost .*at least 1e-100")


def test_budget_flags_beyond_the_largest_number(tmp_path):
    pkg = package_from_dict(tiny())
    with pytest.raises(BudgetError, match=r"must be at most 1e\+100"):
        resolve_budget(pkg, budget=1e200)
    with pytest.raises(BudgetError, match=r"budget \(budget fraction times the stream cost\) .* at most 1e\+100"):
        resolve_budget(pkg, budget_frac=1e150)
    with pytest.raises(BudgetError, match=r"must be 0 or at least 1e-100"):
        resolve_budget(pkg, budget=1e-200)
    assert resolve_budget(pkg, budget=0) == 0


# -- every cross-reference problem at once, in order (the checks skip the per-record loop when nothing is wrong)

@pytest.mark.parametrize("cost_source", ["text", "given"])
def test_cross_reference_problems_are_all_found_in_order(cost_source):
    from memaudit.formats.package import _cross_reference_problems

    def broken(d):
        d["cost_source"] = cost_source
        if cost_source == "given":
            for c in d["candidates"][1:]:
                c["cost"] = 3
        d["candidates"][0]["cost"] = 9 if cost_source == "text" else 4      # disagrees with its text (4 words)
        d["candidates"][1]["experience"] = "e09"
        d["candidates"][2]["coverage"]["nowhere"] = 1.0
        d["candidates"][2]["experience"] = "e01"                              # e02 is left with no candidate
        d["units"].append(dict(d["units"][0]))                                # region.old twice
        d["queries"][0]["requires"].append("gone")
    d = edited(broken)
    records = {"experiences": Experience, "units": Unit, "candidates": Candidate, "queries": Query}
    pkg = Package.model_construct(**{k: v for k, v in d.items() if k not in records},
                                  **{k: [m.model_construct(**{"cost": None, **r} if m is Candidate else r) for r in d[k]]
                                     for k, m in records.items()})
    expected = [
        "units[3].id must be unique among the units; got 'region.old', already the id of units[0]",
        *(["candidates[0] ('e01.raw').cost must equal the cost of its text under cost_model 'words' (4 words); "
           'got 9. To keep given costs, set "cost_source": "given" at the top level of the package']
          if cost_source == "text" else []),
        "candidates[1] ('e02.raw').experience must name an experience of this package; got 'e09'",
        "candidates[2] ('e02.update').coverage key must name a unit of this package; got 'nowhere'",
        "experiences[1] ('e02') must have at least one candidate (its group is empty); got none",
        "queries[0] ('q01').requires[1] must name a unit of this package; got 'gone'",
    ]
    assert _cross_reference_problems(pkg) == expected


def _random_package(rng, n_exp: int, cost_source: str) -> dict:
    """Experiences with 1-3 candidates each, units with every kind of h, candidates listed out of stream order."""
    h_forms = ["min1", {"cap": 2.5}, {"breakpoints": [[1, 1], [3, 2]]}, {"breakpoints": [[0.5, 1], [1, 1.25], [4, 2]]}]
    units = [{"id": f"u{r}", "kind": "current", "weight": float(rng.integers(1, 5)),
              "h": h_forms[int(rng.integers(len(h_forms)))]} for r in range(max(2, n_exp // 2))]
    candidates = []
    for g in range(n_exp):
        for k in range(int(rng.integers(1, 4))):
            text = " ".join(["w"] * int(rng.integers(1, 7)))
            cov = {units[int(r)]["id"]: float(rng.choice([0.5, 1.0, 2.0]))
                   for r in rng.choice(len(units), size=int(rng.integers(0, 3)), replace=False)}
            c = {"id": f"e{g}.{k}", "experience": f"e{g}", "kind": "fact", "text": text, "coverage": cov}
            if cost_source == "given" or rng.random() < 0.3:
                c["cost"] = float(rng.integers(1, 9)) if cost_source == "given" else float(len(text.split()))
            candidates.append(c)
    order = rng.permutation(len(candidates))
    return {"format": FORMAT, "id": "rand", "cost_model": "words", "cost_source": cost_source,
            "experiences": [{"id": f"e{g}", "text": "x"} for g in range(n_exp)], "units": units,
            "candidates": [candidates[i] for i in order]}


@pytest.mark.parametrize("seed", range(6))
def test_compiled_arrays_match_the_package_record_by_record(seed):
    rng = np.random.default_rng(seed)
    data = _random_package(rng, 25, "given" if seed % 2 else "text")
    pkg = package_from_dict(data)
    comp = compile_package(pkg)
    p = comp.problem
    exp_index = {e["id"]: g for g, e in enumerate(data["experiences"])}
    unit_index = {u["id"]: r for r, u in enumerate(data["units"])}
    dense = p.coverage.toarray()
    largest = {}
    for i, c in enumerate(data["candidates"]):
        cost = c.get("cost", float(len(c["text"].split())))
        assert comp.candidate_ids[i] == c["id"] and p.costs[i] == cost and p.groups[i] == exp_index[c["experience"]]
        expected_row = np.zeros(len(data["units"]))
        for u, a in c["coverage"].items():
            expected_row[unit_index[u]] = a
        assert np.array_equal(dense[i], expected_row)
        largest[c["experience"]] = max(largest.get(c["experience"], 0.0), cost)
    assert stream_cost(pkg) == sum(largest.values()) == p.stream_cost()
    assert candidate_costs(pkg) == {c["id"]: c.get("cost", float(len(c["text"].split()))) for c in data["candidates"]}
    # every h against its definition, at points on and between the breakpoints
    zs = np.array([0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 9.0])
    for r, u in enumerate(data["units"]):
        got = np.min(p.h_slopes[r][:, None] * zs + p.h_intercepts[r][:, None], axis=0)
        if u["h"] == "min1" or "cap" in u["h"]:
            want = np.minimum(zs, 1.0 if u["h"] == "min1" else u["h"]["cap"])
        else:
            pts = [[0.0, 0.0]] + u["h"]["breakpoints"]
            want = np.interp(zs, [z for z, _ in pts], [v for _, v in pts])
        assert np.allclose(got, want, rtol=0, atol=1e-12), (u["h"], got, want)
