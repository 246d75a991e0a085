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
from memaudit.generators.datasets import load_manifest
from solvers.problem import Problem

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
    for r in natural.rows:
        assert 0 <= r["ratio"] <= 1 + 1e-9, r  # OPT is certified: no method beats it
        assert r["value"] == pytest.approx(r["ratio"] * r["opt"])
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
    assert "26-36 % of OPT on tight budgets" in text and "52-81 % of full OPT" in text
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
