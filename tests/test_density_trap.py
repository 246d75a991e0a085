"""The density-trap family and the baseline / compare / generate density-trap commands."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from memaudit.baselines import compare, score_methods
from memaudit.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_USAGE, main
from memaudit.errors import MemauditError
from memaudit.generators.density_trap import density_trap
from memaudit.package import load_package
from memaudit_solvers.bruteforce import brute_force

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "packages_data" / "examples" / "quickstart.json"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


# -- the family ---------------------------------------------------------------------------

def test_density_ratio_falls_as_k_grows():
    ratios = []
    for k in (2, 3, 5, 10, 20, 40):
        rep = score_methods(density_trap(k), methods=["density"])
        assert rep.opt_certified
        ratios.append(rep.scores[0].ratio)
        assert rep.scores[0].ratio <= 1.2 / k          # "at most about 1/K"
        assert rep.scores[0].validity_covered == 0     # every validity unit is lost
    assert all(a > b for a, b in zip(ratios, ratios[1:])), ratios


@pytest.mark.parametrize("k, topics", [(2, 1), (4, 2), (7, 3), (3, 6)])
def test_opt_is_the_compound_updates_and_density_keeps_the_facts(k, topics):
    pkg = density_trap(k, topics=topics)
    rep = score_methods(pkg, methods=["density", "gvt", "gvt-upgrade"])
    by = {s.method: s for s in rep.scores}
    assert rep.opt_store.kinds == {"compound_update": topics}
    assert by["density"].kinds == {"fact": topics}
    assert by["density"].ratio == pytest.approx(pkg.meta["density_ratio_by_construction"], rel=1e-12)
    assert by["gvt-upgrade"].ratio == pytest.approx(1.0)
    if topics == 1:   # the best-single fallback rescues the one topic
        assert by["gvt"].ratio == pytest.approx(1.0)


def test_the_trap_holds_under_the_token_cost_model_and_against_brute_force():
    pkg = density_trap(6, topics=2, cost_model="tokens")
    rep = score_methods(pkg, methods=["density"])
    from memaudit.package import compile_package
    problem = compile_package(pkg).problem
    assert brute_force(problem, rep.budget).value == pytest.approx(rep.opt)
    assert rep.scores[0].kinds == {"fact": 2}
    assert rep.scores[0].ratio < 0.3


def test_generation_is_byte_for_byte_reproducible(tmp_path):
    digests = []
    for name in ("a.json", "b.json"):
        assert run("generate", "density-trap", "--k", 9, "--topics", 4, "-o", tmp_path / name).exit_code == EXIT_OK
        digests.append(hashlib.sha256((tmp_path / name).read_bytes()).hexdigest())
    assert digests[0] == digests[1]
    assert run("generate", "density-trap", "--k", 8, "--topics", 4, "-o", tmp_path / "c.json").exit_code == EXIT_OK
    assert hashlib.sha256((tmp_path / "c.json").read_bytes()).hexdigest() != digests[0]


@pytest.mark.parametrize("kw", [{"k": 1}, {"k": 2.5}, {"k": True}, {"k": 1001}, {"k": 3, "topics": 0},
                                {"k": 3, "topics": 7}])
def test_bad_parameters_are_refused(kw):
    with pytest.raises(MemauditError, match="density-trap"):
        density_trap(**kw)


# -- memaudit generate density-trap ---------------------------------------------------------

def test_generate_density_trap_writes_a_valid_package(tmp_path):
    out = tmp_path / "trap.json"
    r = run("generate", "density-trap", "--k", 8, "--topics", 2, "-o", out)
    assert r.exit_code == EXIT_OK, r.output
    assert f"density keeps {1 / (1 + 0.9 * 7):.3f} of OPT by construction" in r.output   # words: w = 0.9
    assert load_package(out).id == "density-trap-k8-m2"
    assert run("validate", out).exit_code == EXIT_OK
    printed = run("generate", "density-trap", "--k", 8, "--topics", 2)
    assert json.loads(printed.output) == json.loads(out.read_text())


def test_generate_density_trap_rejects_small_k():
    r = run("generate", "density-trap", "--k", 1)
    assert r.exit_code == 1 and "setting 'k' must be an integer in [2, 1000]; got 1" in r.stderr


# -- memaudit baseline ----------------------------------------------------------------------

def test_baseline_table_and_json(tmp_path):
    path = tmp_path / "q.json"
    shutil.copyfile(QUICKSTART, path)
    before = path.read_bytes()
    r = run("baseline", path, "--budget-frac", 0.25, "--method", "density,gvt,kind:fact")
    assert r.exit_code == EXIT_OK, r.output
    lines = r.output.splitlines()
    assert "OPT = 10 (certified)" in lines[0]
    assert [ln.split()[0] for ln in lines[2:]] == ["OPT", "density", "gvt", "kind:fact"]
    j = run("baseline", path, "--budget-frac", 0.25, "--method", "density,random", "--seed", 3, "--json")
    doc = json.loads(j.output)
    assert doc["opt"] == 10.0 and doc["opt_certified"] is True
    assert [m["method"] for m in doc["methods"]] == ["density", "random"]
    assert doc["methods"][1]["settings"] == {"seed": 3}
    assert all(0 <= m["ratio"] <= 1 for m in doc["methods"])
    assert path.read_bytes() == before


@pytest.mark.parametrize("method, message", [("nope", "unknown method 'nope'"), (",", "no method given"),
                                             ("kind:", "needs an argument"), ("kind:fatc", "unknown candidate kind")])
def test_baseline_bad_method_is_one_line_error(method, message):
    r = run("baseline", QUICKSTART, "--budget-frac", 0.25, "--method", method)
    assert r.exit_code == EXIT_BAD_INPUT and r.stderr.startswith("error: ") and message in r.stderr


@pytest.mark.parametrize("args", [("--method", "random", "--seed", "-1"), ("--method", "gvt-geometric", "--gvt-eps", "nan"),
                                  ("--method", "gvt-geometric", "--gvt-floor", "nan"),
                                  ("--method", "gvt-geometric", "--gvt-eps", "1"),
                                  ("--method", "fifo", "--pick", "smart")])
def test_baseline_bad_settings_are_usage_errors(args):
    for command in ("baseline", "compare"):
        r = run(command, QUICKSTART, "--budget-frac", "0.25", *args)
        assert r.exit_code == EXIT_USAGE and "Traceback" not in r.output, (command, args, r.output)


def test_a_setting_the_method_rejects_is_one_line_error():
    from memaudit.errors import MethodError
    pkg = load_package(QUICKSTART)
    with pytest.raises(MethodError, match=r"method .gvt-geometric.: setting .eps. must be a number in \(0, 1\); got 2.0"):
        score_methods(pkg, budget_frac=0.25, methods=["gvt-geometric"], settings={"gvt-geometric": {"eps": 2.0}},
                      backend=None)


def test_baseline_on_a_broken_package_is_one_line_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "memaudit-package/1", ', encoding="utf-8")
    r = run("baseline", bad, "--budget-frac", 0.25)
    assert r.exit_code == EXIT_BAD_INPUT and "error:" in r.stderr and "Traceback" not in r.output


# -- memaudit compare -----------------------------------------------------------------------

def test_compare_table_csv_json_and_plot(tmp_path):
    r = run("compare", QUICKSTART, "--method", "density,gvt", "--budget-frac", "0.1,0.5",
            "-o", tmp_path / "rows.csv", "--plot", tmp_path / "ratios.png")
    assert r.exit_code == EXIT_OK, r.output
    assert r.output.splitlines()[1].split() == ["method", "0.1", "0.5"]
    rows = list(csv.DictReader(io.StringIO((tmp_path / "rows.csv").read_text())))
    assert [(row["budget_frac"], row["method"]) for row in rows] == [
        ("0.1", "OPT"), ("0.1", "density"), ("0.1", "gvt"), ("0.5", "OPT"), ("0.5", "density"), ("0.5", "gvt")]
    assert (tmp_path / "ratios.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    j = json.loads(run("compare", QUICKSTART, "--method", "density", "--budget-frac", "0.25", "--json").output)
    assert {row["method"] for row in j} == {"OPT", "density"}
    c = run("compare", QUICKSTART, "--method", "density", "--budget-frac", "0.25", "--csv").output
    assert c.splitlines()[0].startswith("package,budget_frac,budget,method,value,opt,ratio")


def test_compare_rows_agree_with_score_methods():
    pkg = load_package(QUICKSTART)
    rows = compare(pkg, [0.25], methods=["greedy"])
    rep = score_methods(pkg, budget_frac=0.25, methods=["greedy"])
    assert rows[1]["value"] == rep.scores[0].value and rows[1]["ratio"] == rep.scores[0].ratio


@pytest.mark.parametrize("fracs", ["0.1,x", "-0.1", "nan", ""])
def test_compare_bad_fractions_are_usage_errors(fracs):
    r = run("compare", QUICKSTART, "--budget-frac", fracs)
    assert r.exit_code == EXIT_USAGE and "--budget-frac" in r.output


def test_compare_refuses_to_write_over_the_package(tmp_path):
    path = tmp_path / "q.json"
    shutil.copyfile(QUICKSTART, path)
    before = path.read_bytes()
    r = run("compare", path, "--budget-frac", "0.25", "-o", path)
    assert r.exit_code == EXIT_BAD_INPUT and "refusing to write over the package" in r.stderr
    assert path.read_bytes() == before
