"""The findings report: baselines against certified OPT, validity share, ablation; the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from memaudit.cli import main
from memaudit.findings import FindingsError, compute_findings, format_findings, validity_share
from memaudit.generators.datasets import ManifestError, load_manifest
from memaudit.package import compile_package, load_package
from memaudit_solvers import evaluate, is_feasible
from memaudit_solvers.problem import Problem

DATA = Path(__file__).resolve().parents[1] / "packages_data"
METHODS = ("density", "greedy", "gvt", "fifo", "kind:update")


@pytest.fixture(scope="module")
def natural():
    return compute_findings(("natural",), methods=METHODS + ("no-such-method",))


def test_every_ratio_is_at_most_one_and_opt_rows_are_the_certified_store(natural):
    manifest = load_manifest(DATA / "natural")
    n = len(manifest["packages"]) * len(manifest["budget_fracs"])
    assert natural.unavailable == ["no-such-method"]
    assert natural.methods == list(METHODS)
    assert len(natural.rows) == n * (1 + len(METHODS))
    opts = {(p["id"], r["budget_frac"]): r["opt"] for p in manifest["packages"] for r in p["results"]}
    problems = {p["id"]: compile_package(load_package(DATA / "natural" / p["file"])) for p in manifest["packages"]}
    for r in natural.rows:
        assert 0 <= r["ratio"] <= 1 + 1e-9, r  # OPT is certified: no method beats it
        assert r["opt"] == opts[(r["package"], r["budget_frac"])]
        # the row's store, evaluated here from the package, gives its value and ratio
        compiled = problems[r["package"]]
        chosen = compiled.indices(r["store"])
        assert is_feasible(compiled.problem, chosen, r["budget"])
        assert evaluate(compiled.problem, chosen) == pytest.approx(r["value"], rel=1e-9, abs=1e-12)
        assert r["ratio"] == pytest.approx(evaluate(compiled.problem, chosen) / r["opt"], rel=1e-9)
    opt_rows = [r for r in natural.rows if r["method"] == "OPT"]
    assert len(opt_rows) == n and all(r["ratio"] == 1.0 for r in opt_rows)


def test_summary_aggregates_the_rows(natural):
    for s in natural.summary():
        rs = [r for r in natural.rows if (r["set"], r["budget_frac"], r["method"]) == (s["set"], s["budget_frac"],
                                                                                        s["method"])]
        assert s["n"] == len(rs)
        assert s["mean"] == pytest.approx(np.mean([r["ratio"] for r in rs]))
        assert s["min"] == min(r["ratio"] for r in rs)


def test_ablation_rows_come_from_the_manifest(natural):
    manifest = load_manifest(DATA / "natural")
    expected = [(p["id"], ab["budget_frac"], ab["opt"] / r["opt"])
                for p in manifest["packages"] for r, ab in zip(p["results"], p["ablation"]["results"])]
    got = [(r["package"], r["budget_frac"], r["ratio"]) for r in natural.ablation_rows]
    assert [g[:2] for g in got] == [e[:2] for e in expected]
    assert [g[2] for g in got] == pytest.approx([e[2] for e in expected])
    assert all(0 <= g[2] <= 1 + 1e-9 for g in got)


def test_resolve_agrees_with_the_manifest(natural):
    again = compute_findings(("natural",), methods=("gvt",), resolve=True)
    ours = {(r["package"], r["budget_frac"]): r["opt"] for r in natural.rows if r["method"] == "OPT"}
    for r in again.rows:
        assert r["opt"] == pytest.approx(ours[(r["package"], r["budget_frac"])], rel=1e-6)
    assert [r["ratio"] for r in again.ablation_rows] == pytest.approx([r["ratio"] for r in natural.ablation_rows])


def test_validity_share_on_a_tiny_problem():
    # units: 0 current (w 2), 1 validity (w 1), 2 validity (w 3); candidate 1 covers unit 1 half
    p = Problem.build([1, 1, 1], [0, 1, 2], [[1, 0, 0], [0, 0.5, 0], [0, 0, 1]], [2.0, 1.0, 3.0])
    kinds = ["current", "validity", "validity"]
    assert validity_share(p, [0], kinds) == 0.0
    assert validity_share(p, [1], kinds) == pytest.approx(0.5 / 4)
    assert validity_share(p, [1, 2], kinds) == pytest.approx(3.5 / 4)
    assert validity_share(p, [0], ["current"] * 3) is None


def test_format_has_both_parts_and_the_paper_column(natural):
    text = format_findings(natural)
    assert "(a) ratio to certified OPT" in text and "(b) OPT without tombstone and compound_update" in text
    assert "26.4-36.1 % of OPT" in text and "52.3-81.5 % of full OPT" in text and "memaudit report paper" in text
    assert "not registered, not run: no-such-method" in text


def test_changed_package_is_refused(tmp_path):
    shutil.copytree(DATA / "natural", tmp_path / "natural")
    path = tmp_path / "natural" / "natural-facts-s42.json"
    path.write_bytes(path.read_bytes().replace(b'"weight": 1.0', b'"weight": 2.0', 1))
    with pytest.raises(FindingsError, match="natural-facts-s42.json: missing or changed since its manifest"):
        compute_findings(("natural",), root=tmp_path, methods=("gvt",))
    with pytest.raises(FindingsError, match="no such file"):
        compute_findings(("small",), root=tmp_path, methods=("gvt",))


def test_cli_report_findings(tmp_path):
    out = tmp_path / "rows.csv"
    r = CliRunner().invoke(main, ["report", "findings", "--set", "natural", "--methods", "density,gvt", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "ours beside the paper" in r.stdout and "density, tight budget (0.1), natural" in r.stdout
    lines = out.read_text().splitlines()
    assert lines[0].startswith("set,package,generator,budget_frac")
    assert len(lines) == 1 + 3 * 3 * len(load_manifest(DATA / "natural")["packages"])
    r = CliRunner().invoke(main, ["report", "findings", "--set", "natural", "--methods", "gvt", "--json"])
    doc = json.loads(r.stdout)
    assert {s["method"] for s in doc["summary"]} == {"OPT", "gvt"}
    r = CliRunner().invoke(main, ["report", "findings", "--set", "nope", "--root", str(tmp_path)])
    assert r.exit_code == 1 and r.stderr.startswith("error: ") and "manifest.json: no such file" in r.stderr


# -- the manifest's numbers are checked, not trusted --------------------------------------------

FACTS = "natural-facts-s42.json"


def _one_package_set(tmp_path, edit=None):
    """A set ``natural`` under tmp_path holding only natural-facts-s42 and its manifest entry, edited."""
    manifest = json.loads((DATA / "natural" / "manifest.json").read_text())
    manifest["packages"] = [p for p in manifest["packages"] if p["file"] == FACTS]
    (tmp_path / "natural").mkdir()
    shutil.copy(DATA / "natural" / FACTS, tmp_path / "natural" / FACTS)
    if edit is not None:
        edit(manifest)
    (tmp_path / "natural" / "manifest.json").write_text(json.dumps(manifest))
    return tmp_path


def test_untouched_one_package_set_passes(tmp_path):
    found = compute_findings(("natural",), root=_one_package_set(tmp_path), methods=("gvt",))
    assert {r["package"] for r in found.rows} == {"natural-facts-s42"}


def _set(field, value, where="results", i=1):
    def edit(m):
        rows = m["packages"][0]["ablation"]["results"] if where == "ablation" else m["packages"][0]["results"]
        rows[i][field] = value(rows[i]) if callable(value) else value
    return edit


@pytest.mark.parametrize("edit,match", [
    (_set("opt", lambda r: r["opt"] / 4), r"results\[1\] \(budget fraction 0.25\): the recorded store is worth "
                                          r"[\d.]+, not the recorded OPT [\d.]+"),
    (_set("opt", lambda r: r["opt"] * 1.5), "not the recorded OPT"),
    (_set("store", ["e01.raw", "e01.fact"]), r"results\[1\] \(budget fraction 0.25\): the recorded store is not "
                                            "feasible at budget"),
    (_set("store", ["nope.raw"]), r"results\[1\] \(budget fraction 0.25\): .*nope.raw"),
    (_set("budget", lambda r: r["budget"] * 2), r"results\[1\]: budget [\d.]+ is not 0.25 of the stream cost"),
    (_set("opt", lambda r: r["opt"] * 2, where="ablation"),
     r"ablation.results\[1\] \(budget fraction 0.25\): the recorded store is worth"),
])
def test_manifest_numbers_that_do_not_hold_are_refused(tmp_path, edit, match):
    root = _one_package_set(tmp_path, edit)
    with pytest.raises(FindingsError, match=match) as info:
        compute_findings(("natural",), root=root, methods=("gvt",))
    assert "natural-facts-s42.json" in str(info.value) and "\n" not in str(info.value)


def test_a_method_beating_the_recorded_opt_is_refused(tmp_path):
    """A consistent but suboptimal store recorded as OPT: every check on it passes, but gvt beats it."""
    pkg = load_package(DATA / "natural" / FACTS)
    compiled = compile_package(pkg)
    cheap = next(i for i, c in enumerate(pkg.candidates) if c.kind == "fact" and c.coverage)

    def edit(m):
        r = m["packages"][0]["results"][2]
        r["store"] = [pkg.candidates[cheap].id]
        r["opt"] = evaluate(compiled.problem, [cheap])

    root = _one_package_set(tmp_path, edit)
    with pytest.raises(FindingsError, match=r"natural-facts-s42.json at budget fraction 0.5: gvt reaches [\d.]+, "
                                            r"above the recorded OPT [\d.]+ \(ratio [\d.]+\)"):
        compute_findings(("natural",), root=root, methods=("gvt",))


@pytest.mark.parametrize("manifest,match", [
    ({"format": "memaudit-manifest/1", "packages": []}, "budget_fracs must be a non-empty list of numbers in"),
    ({"format": "memaudit-manifest/1", "budget_fracs": [0.1, "x"], "packages": []}, "budget_fracs must be"),
    ({"format": "memaudit-manifest/1", "budget_fracs": [0.1, 1.5], "packages": []}, "budget_fracs must be"),
])
def test_malformed_manifest_is_a_one_line_error(tmp_path, manifest, match):
    (tmp_path / "natural").mkdir()
    (tmp_path / "natural" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ManifestError, match=match):
        load_manifest(tmp_path / "natural")
    r = CliRunner().invoke(main, ["report", "findings", "--set", "natural", "--root", str(tmp_path)])
    assert r.exit_code == 1 and r.stderr.startswith("error: ") and match.split(" ")[0] in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("edit,match", [
    (lambda p: p["results"].pop(), r"packages\[0\] \('natural-facts-s42.json'\): results are at budget fractions "
                                   r"\[0.1, 0.25\], not the manifest's budget_fracs \[0.1, 0.25, 0.5\]"),
    (lambda p: p["ablation"]["results"].pop(), r"ablation.results are at budget fractions \[0.1, 0.25\]"),
    (lambda p: p["ablation"].pop("dropped_kinds"), r"ablation has no 'dropped_kinds'"),
    (lambda p: p["results"][0].update(opt="51"), r"results\[0\].opt must be a finite number >= 0; got '51'"),
    (lambda p: p["results"][0].update(store="e01.raw"), r"results\[0\].store must be a list of candidate ids"),
    (lambda p: p.update(results={}), r"results must be a list"),
])
def test_malformed_manifest_entries_are_named(tmp_path, edit, match):
    root = _one_package_set(tmp_path, lambda m: edit(m["packages"][0]))
    with pytest.raises(ManifestError, match=match):
        load_manifest(root / "natural")


def test_gvt_line_is_the_plain_mean_over_every_run(natural):
    text = format_findings(natural)
    runs = [r["ratio"] for r in natural.rows if r["method"] == "gvt"]
    line = next(ln for ln in text.splitlines() if "GVT, every package and budget" in ln)
    assert f"mean {100 * np.mean(runs):.1f}%" in line and f"n {len(runs)}" in line
