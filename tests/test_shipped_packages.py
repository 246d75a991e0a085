"""The shipped package sets: manifests match the files, and every package reaches its recorded OPT."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memaudit.generators import GENERATOR_VERSION, generate
from memaudit.generators.ablate import ablate
from memaudit.generators.datasets import (ABLATION_KINDS, BUDGET_FRACS, SETS, ManifestError, load_manifest,
                                          set_specs)
from memaudit.package import compile_package, load_package, package_sha256, package_to_dict, resolve_budget, stream_cost
from memaudit.solve import solve_package
from solvers import evaluate, is_feasible

DATA = Path(__file__).resolve().parents[1] / "packages_data"
RTOL = 1e-6

#: a package is re-solved by default when its recorded bnb time at every budget is below this
QUICK_SECONDS = 1.0


def _entries():
    out = []
    for name in SETS:
        for p in load_manifest(DATA / name)["packages"]:
            out.append((name, p))
    return out


ENTRIES = _entries()
IDS = [f"{name}/{p['file']}" for name, p in ENTRIES]


def _quick(entry) -> bool:
    return all(r["methods"]["bnb"]["wall_time"] < QUICK_SECONDS for r in entry["results"])


@pytest.mark.parametrize("name", SETS)
def test_manifest_lists_exactly_the_files(name):
    directory = DATA / name
    manifest = load_manifest(directory)
    assert manifest["set"] == name
    assert manifest["budget_fracs"] == list(BUDGET_FRACS)
    files = sorted(p.name for p in directory.glob("*.json") if p.name != "manifest.json")
    listed = [p["file"] for p in manifest["packages"]]
    assert sorted(listed) == files, "rerun scripts/build_packages_data.py"
    assert len(set(listed)) == len(listed)
    generated = [p for p in manifest["packages"] if p["generator"] != "hand-built"]
    assert [(p["generator"], p["seed"]) for p in generated] == [(f, s) for f, s, _ in set_specs(name)]


def test_set_sizes():
    sizes = {name: len(load_manifest(DATA / name)["packages"]) for name in SETS}
    assert sizes["small"] == 30 and sizes["validity"] == 20 and sizes["natural"] >= 2


@pytest.mark.parametrize("name,entry", ENTRIES, ids=IDS)
def test_manifest_entry_matches_its_file(name, entry):
    path = DATA / name / entry["file"]
    assert package_sha256(path) == entry["sha256"], f"{path} changed: rerun scripts/build_packages_data.py"
    pkg = load_package(path)
    assert pkg.id == entry["id"]
    assert (entry["n_experiences"], entry["n_candidates"], entry["n_units"], entry["n_queries"]) == (
        len(pkg.experiences), len(pkg.candidates), len(pkg.units), len(pkg.queries))
    assert entry["stream_cost"] == stream_cost(pkg)
    assert [r["budget_frac"] for r in entry["results"]] == list(BUDGET_FRACS)
    for r in entry["results"]:
        assert r["certified"] is True
        assert r["budget"] == resolve_budget(pkg, budget_frac=r["budget_frac"])
        assert set(r["methods"]) == {"bnb", "milp-highs"}
        assert all(m["status"] == "optimal" for m in r["methods"].values())
    assert entry["ablation"]["dropped_kinds"] == list(ABLATION_KINDS)
    if entry["generator"] == "hand-built":
        assert entry["seed"] is None and entry["params"] is None
        return
    # shipped generated files never change unless the generator version does
    assert entry["generator_version"] == GENERATOR_VERSION
    again = generate(entry["generator"], entry["seed"], **entry["params"])
    text = json.dumps(package_to_dict(again), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    assert path.read_bytes() == text.encode("utf-8")
    assert pkg.meta["params"] == entry["params"]


def _check_store(pkg, result):
    compiled = compile_package(pkg)
    chosen = compiled.indices(result["store"])
    assert is_feasible(compiled.problem, chosen, result["budget"])
    assert evaluate(compiled.problem, chosen) == pytest.approx(result["opt"], rel=RTOL)


def _resolve(name, entry, backend):
    pkg = load_package(DATA / name / entry["file"])
    for r in entry["results"]:
        _check_store(pkg, r)
        report = solve_package(pkg, budget=r["budget"], method="bnb", backend=backend)
        assert report.result.status == "optimal"
        assert report.value == pytest.approx(r["opt"], rel=RTOL, abs=1e-9), (entry["file"], r["budget_frac"])
        if backend is not None:
            assert report.certified, report.reasons
    return pkg


QUICK = [(n, e) for n, e in ENTRIES if _quick(e)]


@pytest.mark.parametrize("name,entry", QUICK, ids=[f"{n}/{e['file']}" for n, e in QUICK])
def test_quick_package_reaches_recorded_opt(name, entry):
    _resolve(name, entry, backend=None)


@pytest.mark.slow
@pytest.mark.parametrize("name,entry", ENTRIES, ids=IDS)
def test_every_package_and_its_ablation_reach_recorded_opt_certified(name, entry):
    pkg = _resolve(name, entry, backend="milp-highs")
    ablated = ablate(pkg, entry["ablation"]["dropped_kinds"])
    for full, r in zip(entry["results"], entry["ablation"]["results"]):
        _check_store(ablated, r)
        report = solve_package(ablated, budget=r["budget"], method="bnb", backend="milp-highs")
        assert report.certified and report.value == pytest.approx(r["opt"], rel=RTOL, abs=1e-9)
        assert r["opt"] <= full["opt"] + 1e-9
        assert r["ratio_to_full_opt"] == pytest.approx(r["opt"] / full["opt"])


def test_load_manifest_errors(tmp_path):
    with pytest.raises(ManifestError, match="manifest.json: no such file; build it with scripts/build_packages_data"):
        load_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text('{"format": "memaudit-manifest/1", "budget_fracs": [0.1], '
                                            '"packages": [{"file": "a.json"}]}')
    with pytest.raises(ManifestError, match=r"packages\[0\] has no 'id'"):
        load_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text('{"format": "other"}')
    with pytest.raises(ManifestError, match="format must be 'memaudit-manifest/1'; got 'other'"):
        load_manifest(tmp_path)
