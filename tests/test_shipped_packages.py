"""The shipped package sets: manifests match the files, and every package reaches its recorded OPT."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memaudit.generators import DEFAULT_BUDGET_FRAC, GENERATOR_VERSION, generate
from memaudit.generators.ablate import ablate
from memaudit.generators.datasets import (ABLATION_KINDS, BUDGET_FRACS, SETS, ManifestError, load_manifest,
                                          set_specs)
from memaudit.package import compile_package, load_package, package_sha256, package_to_dict, resolve_budget, stream_cost
from memaudit.solve import solve_package
from memaudit_solvers import evaluate, is_feasible

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
    again = generate(entry["generator"], entry["seed"], budget_frac=DEFAULT_BUDGET_FRAC, **entry["params"])
    text = json.dumps(package_to_dict(again), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    assert path.read_bytes() == text.encode("utf-8")
    assert pkg.meta["params"] == entry["params"]


# -- every shipped package carries its default budget, and `memaudit solve PACKAGE` certifies with no flag --

SHIPPED = [(DATA / name / e["file"], e) for name, e in ENTRIES] + [(DATA / "examples" / "quickstart.json", None)]


def test_every_shipped_package_has_the_documented_default_budget():
    assert len(SHIPPED) >= 54
    for path, _ in SHIPPED:
        pkg = load_package(path)
        assert pkg.budget is not None, f"{path} has no budget"
        assert pkg.budget == pytest.approx(DEFAULT_BUDGET_FRAC * stream_cost(pkg), rel=1e-12), path
    for name in SETS:
        assert load_manifest(DATA / name)["default_budget_frac"] == DEFAULT_BUDGET_FRAC


def _solve_without_flags(path):
    from click.testing import CliRunner

    from memaudit.cli import main
    r = CliRunner().invoke(main, ["solve", str(path)])
    assert r.exit_code == 0, (path, r.output)
    assert "status: certified" in r.output, (path, r.output)


def _quick_default(entry) -> bool:
    return entry is None or all(r["methods"]["bnb"]["wall_time"] < 0.2 for r in entry["results"]
                                if r["budget_frac"] == DEFAULT_BUDGET_FRAC)


QUICK_DEFAULT = [(p, e) for p, e in SHIPPED if _quick_default(e)]


@pytest.mark.parametrize("path,entry", QUICK_DEFAULT, ids=[p.name for p, _ in QUICK_DEFAULT])
def test_solve_with_no_flags_certifies_a_quick_shipped_package(path, entry):
    _solve_without_flags(path)


@pytest.mark.slow
@pytest.mark.parametrize("path,entry", SHIPPED, ids=[p.name for p, _ in SHIPPED])
def test_solve_with_no_flags_certifies_every_shipped_package(path, entry):
    _solve_without_flags(path)


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


# -- build_set: shipped files change only with the generator version --------------------------

def _snapshot(directory):
    return {p.name: p.read_bytes() for p in sorted(Path(directory).glob("*.json"))}


@pytest.fixture
def tiny_set(tmp_path, monkeypatch):
    """``build_set("small")`` on two small packages under tmp_path; returns (root, specs list to edit)."""
    from memaudit.generators import datasets

    specs = [("small", 0, {}), ("small", 1, {})]    # default parameters: the ids are small-s0, small-s1
    monkeypatch.setattr(datasets, "set_specs", lambda name: list(specs))
    datasets.build_set("small", tmp_path)
    return tmp_path, specs


def test_build_set_refuses_to_rewrite_a_file_under_the_same_generator_version(tiny_set):
    from memaudit.generators.datasets import build_set

    root, _ = tiny_set
    path = root / "small" / "small-s1.json"
    path.write_bytes(path.read_bytes().replace(b'"text": "', b'"text": " ', 1))  # a hand edit
    before = _snapshot(root / "small")
    with pytest.raises(ManifestError, match=r"small-s1.json: the generator now writes other bytes for it under the "
                                            rf"same generator version '{GENERATOR_VERSION}'; bump memaudit.generators.GENERATOR_VERSION"):
        build_set("small", root)
    assert _snapshot(root / "small") == before
    build_set("small", root, allow_rewrite=True)
    after = load_manifest(root / "small")
    assert package_sha256(path) == next(p["sha256"] for p in after["packages"] if p["file"] == path.name)
    assert path.read_bytes() == (json.dumps(package_to_dict(generate("small", 1, budget_frac=DEFAULT_BUDGET_FRAC)),
                                            indent=2,
                                            ensure_ascii=False) + "\n").encode()


def test_build_set_rewrites_files_when_the_generator_version_changes(tiny_set, monkeypatch):
    import memaudit.generators as generators
    from memaudit.generators.datasets import build_set

    root, _ = tiny_set
    before = _snapshot(root / "small")
    assert build_set("small", root)["packages"] == load_manifest(root / "small")["packages"]
    assert _snapshot(root / "small") == before  # nothing changed: nothing rewritten, entries reused
    new = GENERATOR_VERSION + "-next"
    monkeypatch.setattr(generators, "GENERATOR_VERSION", new)
    manifest = build_set("small", root)
    assert manifest["generator_version"] == new
    assert all(p["generator_version"] == new for p in manifest["packages"])
    assert load_package(root / "small" / "small-s0.json").meta["generator_version"] == new


def test_build_set_writes_nothing_when_a_certification_fails(tiny_set, monkeypatch):
    import memaudit.generators as generators
    from memaudit.generators import datasets

    root, _ = tiny_set
    before = _snapshot(root / "small")
    monkeypatch.setattr(generators, "GENERATOR_VERSION", GENERATOR_VERSION + "-next")
    real = datasets.certify_at

    def certify_at(pkg, frac, **kw):
        if pkg.id == "small-s1":
            raise ManifestError(f"package {pkg.id!r}: not certified")
        return real(pkg, frac, **kw)

    monkeypatch.setattr(datasets, "certify_at", certify_at)
    with pytest.raises(ManifestError, match="'small-s1': not certified"):
        datasets.build_set("small", root)
    assert _snapshot(root / "small") == before  # neither small-s0.json nor the manifest was rewritten


def test_build_set_refuses_a_leftover_generated_file(tiny_set):
    from memaudit.generators.datasets import build_set

    root, specs = tiny_set
    specs.pop()
    before = _snapshot(root / "small")
    with pytest.raises(ManifestError, match=r"small-s1.json: a generated package \(small, seed 1\) that set 'small' "
                                            r"no longer lists; delete it"):
        build_set("small", root)
    assert _snapshot(root / "small") == before


def test_build_set_recertifies_every_entry_when_versions_change(tiny_set, monkeypatch):
    import memaudit.certificate as certificate
    from memaudit.generators.datasets import build_set

    root, _ = tiny_set
    lines = []
    build_set("small", root, say=lines.append)
    assert not any(line.startswith("certifying") for line in lines)
    monkeypatch.setattr(certificate, "solver_versions", lambda: {"milp-highs": "highspy 0.0"})
    lines.clear()
    manifest = build_set("small", root, say=lines.append)
    assert sum(line.startswith("certifying") for line in lines) == 2
    assert manifest["backend_versions"] == {"milp-highs": "highspy 0.0"}


def test_build_script_passes_allow_rewrite(monkeypatch, capsys):
    import importlib.util

    from memaudit.generators import datasets

    spec = importlib.util.spec_from_file_location("build_packages_data", DATA.parent / "scripts" /
                                                  "build_packages_data.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    calls = []
    monkeypatch.setattr(datasets, "build_set", lambda name, root, **kw: calls.append((name, kw)) or {"packages": []})
    assert script.main(["--sets", "small", "--allow-rewrite"]) == 0
    assert calls == [("small", {"force": False, "allow_rewrite": True, "say": print})]

    def refuse(name, root, **kw):
        raise ManifestError("x.json: the generator now writes other bytes")

    monkeypatch.setattr(datasets, "build_set", refuse)
    assert script.main(["--sets", "small"]) == 1
    assert capsys.readouterr().err == "error: x.json: the generator now writes other bytes\n"
