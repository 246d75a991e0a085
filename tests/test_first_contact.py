"""What a newcomer meets in the first hour: the headline command, its defaults, exit codes, papercuts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memaudit.cli import EXIT_NOT_CERTIFIED, EXIT_OK, EXIT_USAGE, main
from memaudit.clitools import pct, plural
from memaudit.package import load_package
from memaudit.solve import solve_package

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "packages_data" / "examples" / "quickstart.json"


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def pkg_path(tmp_path):
    path = tmp_path / "quickstart.json"
    shutil.copyfile(QUICKSTART, path)
    return path


def run(runner, *args):
    return runner.invoke(main, [str(a) for a in args])


# -- the method is the default back-end: another back-end certifies, and says so ----------------

def test_solve_with_milp_highs_picks_another_backend(runner, pkg_path):
    result = run(runner, "solve", pkg_path, "--budget-frac", "0.25", "--method", "milp-highs")
    assert result.exit_code == EXIT_OK, result.output
    assert "certifying back-end lattice: the method is milp-highs" in result.stdout
    assert "certified by milp-highs + lattice" in result.stdout
    result = run(runner, "solve", pkg_path, "--budget-frac", "0.25", "--method", "milp-highs", "--no-warm-start",
                 "--no-cache")
    assert result.exit_code == EXIT_OK, result.output          # the lattice needs the store: SCIP certifies
    assert "certified by milp-highs + milp-scip" in result.stdout


def test_explicit_same_backend_is_still_refused(runner, pkg_path):
    result = run(runner, "solve", pkg_path, "--budget-frac", "0.25", "--method", "milp-highs", "--backend", "highs")
    assert result.exit_code == 1
    assert "must differ from the method" in result.stderr


# -- the back-end's proven optimum is shown when the method stops short --------------------------

def test_backend_proof_is_shown_when_the_method_is_short():
    pkg = load_package(QUICKSTART)
    report = solve_package(pkg, budget=30.25, method="density")
    assert report.result.value < report.backend_result.value     # density is not optimal here
    assert report.backend_proved and not report.certified
    assert report.best_result is report.backend_result
    exact = solve_package(pkg, budget=30.25)
    assert report.best_result.value == pytest.approx(exact.value)


def test_text_output_shows_the_backend_optimum_and_store(runner, pkg_path):
    result = run(runner, "solve", pkg_path, "--budget-frac", "0.25", "--method", "density")
    assert result.exit_code == EXIT_NOT_CERTIFIED
    out = result.stdout
    assert "OPT = 10, proved by milp-highs alone; density stopped short (density is a heuristic, value 8.5)" in out
    assert "milp-highs's, grouped by experience" in out
    assert "status heuristic: )" not in out


def test_start_up_time_is_reported_apart_from_the_methods(runner, pkg_path):
    result = run(runner, "solve", pkg_path, "--budget-frac", "0.25")
    assert result.exit_code == EXIT_OK
    times = [line for line in result.stdout.splitlines() if line.startswith("times: ")]
    assert len(times) == 1 and "; start-up " in times[0] and "(imports, compiling the package)" in times[0]


def test_solve_report_records_startup_time():
    report = solve_package(load_package(QUICKSTART), budget=30.25)
    assert report.startup_time > 0
    assert "highspy" in sys.modules      # bnb's node LP, warmed before any method was timed


def test_solve_help_states_default_time_limits(runner):
    out = " ".join(run(runner, "solve", "--help").stdout.split())     # the help text as one line
    assert "[default: 60]" in out and "else 300]" in out and "'auto' tries milp-highs" in out and "at most 60 s]" in out


# -- budget fractions typed as percents -------------------------------------------------------

def test_budget_frac_above_one_warns(runner, pkg_path):
    result = run(runner, "solve", pkg_path, "--budget-frac", "25")
    assert result.exit_code == EXIT_OK, result.output
    assert "warning: --budget-frac 25 is 2500% of the stream cost" in result.stderr
    assert "budget 3025 words = 2500% of the stream cost" in result.stdout


@pytest.mark.parametrize("command", [["solve"], ["inspect"], ["baseline", "--method", "density"]])
def test_budget_frac_absurd_is_refused(runner, pkg_path, command):
    result = run(runner, command[0], pkg_path, *command[1:], "--budget-frac", "250")
    assert result.exit_code == EXIT_USAGE, result.output
    assert "did you mean 2.5?" in result.stderr


def test_compare_refuses_a_percent(runner, pkg_path):
    result = run(runner, "compare", pkg_path, "--budget-frac", "0.1,500", "--method", "density")
    assert result.exit_code == EXIT_USAGE
    assert "did you mean 5?" in result.stderr


def test_percent_never_in_scientific_notation():
    assert pct(1, 3e6) == "0.0000333%"
    assert pct(2000, 1) == "200000%"
    assert "e" not in pct(1e-9, 1)


def test_plural():
    assert plural(1, "candidate") == "1 candidate"
    assert plural(2, "candidate") == "2 candidates"
    assert plural(2, "query") == "2 queries"


# -- exit codes of baseline and compare follow solve's ---------------------------------------

def test_baseline_exit_codes(runner, pkg_path):
    ok = run(runner, "baseline", pkg_path, "--budget-frac", "0.25", "--method", "density")
    assert ok.exit_code == EXIT_OK, ok.output
    short = run(runner, "baseline", pkg_path, "--budget-frac", "0.25", "--method", "density", "--time-limit", "1e-9")
    assert short.exit_code == EXIT_NOT_CERTIFIED, short.output
    as_json = run(runner, "baseline", pkg_path, "--budget-frac", "0.25", "--method", "density", "--json",
                  "--time-limit", "1e-9")
    assert as_json.exit_code == EXIT_NOT_CERTIFIED
    assert json.loads(as_json.stdout)["opt_certified"] is False


def test_compare_exit_codes(runner, pkg_path):
    ok = run(runner, "compare", pkg_path, "--budget-frac", "0.1,0.25", "--method", "density", "--csv")
    assert ok.exit_code == EXIT_OK, ok.output
    short = run(runner, "compare", pkg_path, "--budget-frac", "0.1", "--method", "density", "--time-limit", "1e-9")
    assert short.exit_code == EXIT_NOT_CERTIFIED, short.output


def test_help_says_baseline_and_compare_exit_3(runner):
    for command in ("baseline", "compare"):
        assert "3 when" in " ".join(run(runner, command, "--help").stdout.split())


# -- papercuts --------------------------------------------------------------------------------

def test_validate_skips_a_manifest_in_the_glob(runner):
    paths = sorted((ROOT / "packages_data" / "small").glob("*.json"))[:3]
    manifest = ROOT / "packages_data" / "small" / "manifest.json"
    result = run(runner, "validate", manifest, *paths)
    assert result.exit_code == EXIT_OK, result.output
    assert f"skip: {manifest} is a set manifest" in result.stdout


def test_singular_counts(runner, tmp_path):
    doc = {"format": "memaudit-package/1", "id": "one", "cost_model": "words", "budget": 5,
           "experiences": [{"id": "e1", "text": "We deploy to eu-west-2."}],
           "units": [{"id": "region", "kind": "current", "weight": 1}],
           "candidates": [{"id": "e1.raw", "experience": "e1", "kind": "raw", "text": "We deploy to eu-west-2.",
                           "coverage": {"region": 1}}]}
    path = tmp_path / "one.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = run(runner, "solve", path)
    assert result.exit_code == EXIT_OK, result.output
    assert "1 experience, 1 candidate, 1 unit;" in result.stdout
    assert "store (1 candidate, grouped" in result.stdout


def test_closed_pipe_is_quiet():
    exe = Path(sys.executable).parent / "memaudit"
    if not exe.exists():
        pytest.skip("the memaudit console script is not installed next to this Python")
    proc = subprocess.run(f"'{exe}' solve packages_data/examples/quickstart.json --budget-frac 0.25 | head -1",
                          shell=True, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.stdout.startswith("package quickstart")
    assert proc.stderr == ""


def test_method_default_never_wraps_mid_name(runner):
    from memaudit.baselines import DEFAULT_METHODS
    for command in ("baseline", "compare"):
        words = set(run(runner, command, "--help").stdout.replace(",", " ").replace("(", " ").replace(")", " ").split())
        missing = [m for m in DEFAULT_METHODS if m not in words and "-" not in m]
        assert not missing, (command, missing)


def test_search_progress_line():
    from memaudit_solvers.bnb import Progress
    from memaudit.solve import _search_progress
    lines = []
    _search_progress(lines.append)(Progress(nodes=1082, incumbent=2206.0, bound=2206.88, gap=0.000399, elapsed=40.2))
    assert lines == ["    40.2 s  nodes 1082  incumbent 2206  bound 2206.88  gap 0.0399%"]


def test_generated_id_names_non_default_parameters(runner, tmp_path):
    from memaudit.package import load_package as load
    ids = {}
    for name, extra in (("default", []), ("other", ["--entities", "8", "--attributes", "8"]),
                        ("again", ["--entities", "8", "--attributes", "8"]), ("third", ["--entities", "7"])):
        out = tmp_path / f"{name}.json"
        result = run(runner, "generate", "validity", "--seed", "1", *extra, "-o", out)
        assert result.exit_code == 0, result.output
        ids[name] = load(out).id
    assert ids["default"] == "validity-s1"                                  # the shipped id
    assert ids["other"].startswith("validity-s1-p") and len(ids["other"]) == len("validity-s1-p") + 8
    assert ids["again"] == ids["other"] and ids["third"] != ids["other"]


def test_report_findings_unknown_set_lists_the_valid_ones(runner):
    result = run(runner, "report", "findings", "--set", "nope")
    assert result.exit_code == 1
    assert "'nope' is not a package set there; valid sets: natural, small, validity" in result.stderr


def test_harness_run_on_a_package_says_it_is_a_package(runner):
    result = run(runner, "harness", "run", QUICKSTART, "--policy", "profile")
    assert result.exit_code == 1
    assert "this is a MEMAUDIT package (memaudit-package/1), not a scenario" in result.stderr


def test_audit_against_an_unrelated_package_warns(runner):
    export = ROOT / "tests" / "fixtures" / "stores" / "mem0_sample_a.json"
    result = run(runner, "audit", QUICKSTART, export, "--budget-frac", "0.5")
    assert "warning: no exported memory matched any unit of package 'quickstart'" in result.stdout
    related = run(runner, "audit", ROOT / "packages_data" / "natural" / "ledgerline.json", export, "--budget-frac", "0.5")
    assert "no exported memory matched" not in related.stdout


def test_adjudicate_creates_no_cache_when_the_judge_cannot_start(runner, tmp_path):
    cache = tmp_path / "cache"
    export = ROOT / "tests" / "fixtures" / "stores" / "mem0_sample_a.json"
    result = run(runner, "adjudicate", ROOT / "packages_data" / "natural" / "ledgerline.json", export,
                 "-o", tmp_path / "rows.csv", "--judge-cmd", str(tmp_path / "no-such-judge"), "--cache-dir", cache)
    assert result.exit_code == 1 and "not found" in result.stderr
    assert not cache.exists()
