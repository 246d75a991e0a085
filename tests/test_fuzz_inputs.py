"""Structure-aware fuzzing of every input memaudit reads: packages, certificates, scenarios, vendor exports.

Each example takes a valid document, applies a few mutations at random places of its tree (drop a key,
add an unknown one, put a hostile value: wrong type, huge or tiny number, 400-digit integer, control
characters, deep nesting, a NaN literal, a duplicated key, a cut-off file), writes it to a file and
loads it.  The properties: the loader returns a document or raises a one-line ``MemauditError``, never
anything else; the input file is never modified; and a certificate that ``verify`` passes really
states the optimum of its package (checked against brute force).

Brief by default (a few dozen examples per document); ``MEMAUDIT_FUZZ_EXAMPLES=2000`` (``make fuzz``)
runs a long campaign.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import shutil
import tempfile
import time
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memaudit.certificate import build_certificate, load_certificate, verify_certificate
from memaudit.errors import MemauditError
from memaudit.formats.scenario import ScenarioFile
from memaudit.harness.scenario import load_scenario
from memaudit.package import compile_package, load_package, summarize
from memaudit.solve import solve_package
from memaudit_solvers import evaluate, is_feasible
from memaudit_solvers.registry import get_method

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "packages_data" / "examples" / "quickstart.json"
SCENARIO = ROOT / "packages_data" / "scenarios" / "example.yaml"

N_EXAMPLES = int(os.environ.get("MEMAUDIT_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=N_EXAMPLES, deadline=None, derandomize="MEMAUDIT_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: the longest any single load may take (the documents here are a few KB)
MAX_SECONDS = 5.0

HOSTILE = st.one_of(
    st.sampled_from([None, True, False, 0, -1, 1, 2**63, -(2**63), 10**400, 1e308, -1e308, 5e-324, 1e-15, 0.1,
                     "", " ", "x", "\x1b[2J\rerror: forged", "e01", "min1", [], {}, [[]], {"": None},
                     [[[[[[[[[[[[1]]]]]]]]]]]], {"cap": -1}, {"breakpoints": [[0, 0]]}, ["a", "a"],
                     "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "202612011141", "2026-02-30"]),
    st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
    st.lists(st.integers(-3, 3), max_size=4), st.dictionaries(st.text(max_size=4), st.integers(), max_size=3),
)


def _paths(doc, prefix=()):
    """Every path of the tree (the root included) as a tuple of keys / indices."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(_paths(v, prefix + (i,)))
    return out


def _parent(doc, path):
    node = doc
    for part in path[:-1]:
        node = node[part]
    return node


@st.composite
def mutated(draw, base: dict):
    """A deep copy of ``base`` with 1-4 structural mutations."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _parent(doc, path), path[-1]
        op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "add-key", "duplicate", "wrap"]))
        # HOSTILE's lists and dicts are shared constants: copy them, or a later mutation edits the constant
        # (across examples) or makes the document contain itself
        if op == "replace":
            parent[key] = copy.deepcopy(draw(HOSTILE))
        elif op == "delete":
            del parent[key]
        elif op == "add-key" and isinstance(parent, dict):
            name = draw(st.sampled_from(["surprise", "id", "weight", "cost", "h", "meta"]))
            parent[name] = copy.deepcopy(draw(HOSTILE))
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif op == "wrap":
            parent[key] = [parent[key]]
    return doc


@st.composite
def serialized(draw, base: dict):
    """JSON text of a mutant, sometimes with a text-level mutation JSON libraries never write."""
    text = json.dumps(draw(mutated(base)), indent=1)
    op = draw(st.sampled_from(["none", "none", "nan", "dup-key", "truncate", "bom", "deep"]))
    if op == "nan":
        text = text.replace(": 1.0", ": NaN", 1).replace(": 1,", ": -Infinity,", 1)
    elif op == "dup-key":
        text = text.replace('"id": ', '"id": "dup", "id": ', 1)
    elif op == "truncate":
        text = text[: draw(st.integers(0, max(0, len(text) - 1)))]
    elif op == "bom":
        text = "\ufeff" + text
    elif op == "deep":
        n = draw(st.sampled_from([50, 101, 5000]))
        text = text.replace('"meta": {', '"meta": {"deep": ' + "[" * n + "]" * n + ", ", 1)
    return text


def _write_and_load(text: str, name: str, load):
    """Write ``text``, load it; return (loaded or None, error message or None) after the safety checks."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_text(text, encoding="utf-8")
        before = path.read_bytes()
        started = time.perf_counter()
        try:
            out, err = load(path), None
        except MemauditError as exc:
            out, err = None, str(exc)
            assert "\n" not in err and err, err
        assert time.perf_counter() - started < MAX_SECONDS
        assert path.read_bytes() == before
        assert sorted(os.listdir(d)) == [name]
        return out, err


# -- packages ---------------------------------------------------------------------------------

PACKAGE = json.loads(QUICKSTART.read_text(encoding="utf-8"))


def _load_and_compile(path):
    pkg = load_package(path)
    compiled = compile_package(pkg)
    summarize(pkg)
    return pkg, compiled


@FUZZ
@given(serialized(PACKAGE))
def test_package_mutants_load_or_fail_in_one_line(text):
    loaded, err = _write_and_load(text, "pkg.json", _load_and_compile)
    if loaded is not None:
        pkg, compiled = loaded
        assert compiled.problem.n_candidates == len(pkg.candidates)
        assert all(math.isfinite(x) for x in compiled.problem.costs)


# -- certificates ----------------------------------------------------------------------------

@functools.cache
def _certified():
    d = Path(tempfile.mkdtemp(prefix="memaudit-fuzz-"))
    path = d / "quickstart.json"
    shutil.copyfile(QUICKSTART, path)
    report = solve_package(load_package(path), budget=20.0, method="bnb", backend="highs")
    assert report.certified
    return path, build_certificate(report, path)


@functools.lru_cache(maxsize=64)
def _brute_opt(budget: float) -> float:
    compiled = compile_package(load_package(QUICKSTART))
    return get_method("brute")(compiled.problem, budget).value


def _verify(path_of_cert):
    pkg_path, _ = _certified()
    return verify_certificate(pkg_path, load_certificate(path_of_cert), backend="milp-highs")


@FUZZ
@given(st.data())
def test_certificate_mutants_never_verify_a_wrong_optimum(data):
    _, cert = _certified()
    text = data.draw(serialized(cert))
    report, err = _write_and_load(text, "cert.json", _verify)
    if report is not None and report.passed:
        doc = json.loads(text.lstrip("\ufeff"))
        compiled = compile_package(load_package(_certified()[0]))
        idx = compiled.indices(doc["store"])
        budget = float(doc["budget"])
        assert is_feasible(compiled.problem, idx, budget)
        assert math.isclose(evaluate(compiled.problem, idx), doc["opt"], rel_tol=1e-6, abs_tol=1e-9)
        assert math.isclose(_brute_opt(budget), doc["opt"], rel_tol=1e-6, abs_tol=1e-9)
        assert doc["certified"] is True and doc.get("status") == "certified"


# -- scenarios -------------------------------------------------------------------------------

SCENARIO_DOC = yaml.safe_load(SCENARIO.read_text(encoding="utf-8"))


def _scenario_and_model_agree(text, name):
    """A scenario the loader accepts also fits ScenarioFile (the model behind ``schema --format scenario``)."""
    scenario, _ = _write_and_load(text, name, load_scenario)
    if scenario is not None:
        data = yaml.safe_load(text) if name.endswith(".yaml") else json.loads(text.lstrip("\ufeff"))
        ScenarioFile.model_validate(data)


def test_scenario_model_states_the_loaders_constants():
    from typing import get_args

    from memaudit.harness.scenario import FACT_TYPES, MAX_SESSIONS

    assert get_args(ScenarioFile.model_fields["facts"].annotation.__args__[0].model_fields["type"].annotation) \
        == FACT_TYPES
    assert any(getattr(m, "le", None) == MAX_SESSIONS for m in ScenarioFile.model_fields["n_sessions"].metadata)
    ScenarioFile.model_validate(SCENARIO_DOC)


@FUZZ
@given(serialized(SCENARIO_DOC))
def test_scenario_mutants_as_json_load_or_fail_in_one_line(text):
    _scenario_and_model_agree(text, "scenario.json")


@FUZZ
@given(mutated(SCENARIO_DOC), st.sampled_from(["plain", "anchors", "deep", "dup"]))
def test_scenario_mutants_as_yaml_load_or_fail_in_one_line(doc, op):
    text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    if op == "anchors":
        text = "x: &a [1, 2, 3]\n" + text.replace("meta: {}", "meta: {y: *a, z: [*a, *a]}")
    elif op == "deep":
        text = text.replace("meta: {}", "meta: {d: " + "[" * 300 + "]" * 300 + "}")
    elif op == "dup":
        text = text + "id: again\n"
    _scenario_and_model_agree(text, "scenario.yaml")


# -- vendor export files (Mem0, Letta, A-Mem, OpenMemory) ------------------------------------

STORE_FIXTURES = ROOT / "tests" / "fixtures" / "stores"
#: (file name, product): one file of each shape the importers read
EXPORTS = [("mem0_sample_a.json", "mem0"), ("mem0_history.json", "mem0"), ("mem0_openmemory_backup.json", "mem0"),
           ("mem0_paginated.json", "mem0"), ("letta_sample_a.af", "letta"), ("letta_passages.json", "letta"),
           ("amem_sample_a.json", "amem"), ("amem_memory_all.json", "amem")]
EXPORT_DOCS = {name: json.loads((STORE_FIXTURES / name).read_text(encoding="utf-8")) for name, _ in EXPORTS}


def _load_export(product):
    from memaudit.stores import load_any

    def load(path):
        export = load_any(path, product)
        for item in export.items:                 # every item the importer yields is usable as it claims
            assert isinstance(item.id, str) and isinstance(item.text, str)
        return export
    return load


@FUZZ
@given(st.data())
def test_export_mutants_import_or_fail_in_one_line(data):
    name, product = data.draw(st.sampled_from(EXPORTS))
    text = data.draw(serialized(EXPORT_DOCS[name]))
    shape = data.draw(st.sampled_from(["plain", "plain", "as-string", "lines"]))
    if shape == "as-string":                       # Letta's export_file() written with json.dump: JSON in a string
        text = json.dumps(text)
    elif shape == "lines":                         # JSON Lines, as OpenMemory's memories.jsonl
        try:
            rows = json.loads(text.lstrip("\ufeff"))
        except ValueError:
            rows = None
        if isinstance(rows, dict):
            rows = next((v for v in rows.values() if isinstance(v, list)), None)
        if isinstance(rows, list):
            text = "\n".join(json.dumps(r) for r in rows)
    _write_and_load(text, "export.jsonl" if shape == "lines" else "export.json",
                    _load_export(data.draw(st.sampled_from([None, product]))))
