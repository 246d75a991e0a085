"""benchmarks/bench_exact.py's plumbing at tiny sizes with the real solvers: tables, checks, skips, scale series."""

import dataclasses
import json
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_exact  # noqa: E402
import bench_runs  # noqa: E402
from bench_families import FAMILIES, make_problem  # noqa: E402
from memaudit_solvers.bnb import branch_and_bound  # noqa: E402
from memaudit_solvers.milp import installed_backends, milp_highs  # noqa: E402
from memaudit_solvers.problem import Problem  # noqa: E402
from memaudit_solvers.result import make_result  # noqa: E402


def run(capsys, *argv):
    code = bench_exact.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_quick_run_prints_a_table_of_every_installed_method(capsys):
    code, out, err = run(capsys, "--quick", "--sizes", "20", "--seeds", "1")
    assert code == 0, err
    methods = ["bnb", *installed_backends()]
    header = next(line for line in out.splitlines() if line.startswith("| n | candidates"))
    assert [f"{m} (s)" in header for m in methods] == [True] * len(methods)
    rows = [line for line in out.splitlines() if line.startswith("| 20 |")]
    assert len(rows) == 3                                    # one per default budget of the random family
    assert all(" (vs " in row for row in rows)               # a ratio against a named MILP in every cell
    assert "bnb median <= fastest MILP median in" in out and "### Every family" in out
    assert "DISAGREE" not in out
    assert err.count(" optimal value=") == 3 * len(methods)  # every solve proved its optimum


def lying_milp(problem, budget, /, *, time_limit=None):
    """milp-highs, except that it reports the empty store as proven optimal (a wrong result)."""
    real = milp_highs(problem, budget, time_limit=time_limit)
    return make_result(problem, budget, method="lying", settings={}, chosen=[], status="optimal", bound=None,
                       started=time.perf_counter() - real.wall_time)


def test_a_wrong_proven_optimum_prints_disagree_and_exits_1(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(bench_runs.METHODS, "lying", lying_milp)
    report = tmp_path / "runs.json"
    code, out, err = run(capsys, "--sizes", "20", "--fracs", "0.25", "--seeds", "1", "--methods", "bnb,lying",
                         "--json", str(report))
    assert code == 1
    assert "**DISAGREE**" in out and "proven optima differ: bnb=" in out and "lying=0.0" in out
    assert "DISAGREE" in err
    payload = json.loads(report.read_text())
    assert len(payload["disagreements"]) == 1 and {r["method"] for r in payload["runs"]} == {"bnb", "lying"}


def stalling_bnb(problem, budget, /, *, time_limit=None):
    """bnb's real answer, reported as a time-out (as if it had not closed the gap)."""
    return dataclasses.replace(branch_and_bound(problem, budget, time_limit=time_limit), status="timeout")


def test_a_method_that_timed_out_is_skipped_on_larger_sizes_and_said_so(capsys, monkeypatch):
    monkeypatch.setitem(bench_runs.METHODS, "stalling", stalling_bnb)
    code, out, err = run(capsys, "--sizes", "20,30", "--fracs", "0.25", "--seeds", "1",
                         "--methods", "milp-highs,stalling")
    assert code == 0, err
    row20 = next(line for line in out.splitlines() if line.startswith("| 20 |"))
    row30 = next(line for line in out.splitlines() if line.startswith("| 30 |"))
    assert "* |" in row20 and "skipped" not in row20     # its time-out is starred
    assert "skipped" in row30
    assert "stalling timed out at n=20 medium (25%)" in out
    assert "stalling: skipped (timed out at n=20" in err
    code, out, _ = run(capsys, "--sizes", "20,30", "--fracs", "0.25", "--seeds", "1",
                       "--methods", "milp-highs,stalling", "--no-skip")
    assert code == 0 and "skipped" not in next(line for line in out.splitlines() if line.startswith("| 30 |"))


def test_timeout_skips_are_per_family_and_budget():
    skips = bench_runs.TimeoutSkips()
    runs = [{"status": "timeout"}, {"status": "optimal"}, {"status": "optimal"}]
    skips.record("restate", 0.1, "milp-cbc", 400, runs)            # 1 of 3: not enough to skip
    assert skips.reason("restate", 0.1, "milp-cbc", 800) is None
    skips.record("restate", 0.1, "milp-cbc", 800, runs[:2])         # 1 of 2: half
    assert skips.reason("restate", 0.1, "milp-cbc", 1600) == "timed out at n=800"
    assert skips.reason("restate", 0.1, "milp-cbc", 800) is None    # the size itself is not skipped
    assert skips.reason("restate", 0.25, "milp-cbc", 1600) is None
    assert skips.reason("random", 0.1, "milp-cbc", 1600) is None
    assert bench_runs.TimeoutSkips(enabled=False).reason("restate", 0.1, "milp-cbc", 1600) is None
    skips.record("restate", 0.1, "bnb", 800, runs[:1])              # bnb, the method under study, always runs
    assert skips.reason("restate", 0.1, "bnb", 1600) is None


def test_check_cell_catches_a_store_above_or_a_bound_below_the_proven_optimum():
    opt = {"method": "bnb", "status": "optimal", "value": 10.0, "bound": 10.0}
    assert bench_runs.check_cell([opt, {"method": "x", "status": "timeout", "value": 9.0, "bound": 11.0}]) == []
    above = bench_runs.check_cell([opt, {"method": "x", "status": "timeout", "value": 10.5, "bound": 11.0}])
    below = bench_runs.check_cell([opt, {"method": "x", "status": "timeout", "value": 9.0, "bound": 9.5}])
    assert above == ["x found a store worth 10.5 above the proven optimum 10.0"]
    assert below == ["x claims bound 9.5 below the proven optimum 10.0"]
    skipped = {"method": "x", "status": "skipped", "value": None, "bound": None}
    assert bench_runs.check_cell([opt, skipped]) == []


def test_a_back_end_that_declines_is_reported_not_an_error():
    p = Problem.build([1.0, 2.0], [0, 1], [[1.0, 0.0], [0.0, 1.0]], [1.0, 1e-13])   # weights 13 decades apart
    r = bench_runs.solve("milp-highs", p, 3.0, 5.0)
    assert r["status"] == "declined" and "weights" in r["message"]
    assert bench_runs.solve("bnb", p, 3.0, 5.0)["status"] == "optimal"


def test_scale_series_times_each_method_and_certification_end_to_end(capsys, tmp_path):
    report = tmp_path / "scale.json"
    code, out, err = run(capsys, "--n-large", "60,90", "--large-only", "--methods", "bnb,milp-highs",
                         "--json", str(report))
    assert code == 0, err
    assert "### Scale series: `random` family" in out
    rows = [line for line in out.splitlines() if line.startswith(("| 60 |", "| 90 |"))]
    assert len(rows) == 2 and all("| milp-highs |" in row for row in rows)   # certified by HiGHS
    assert out.count("certified by bnb + milp-highs: both proved OPT = ") == 2
    runs = json.loads(report.read_text())["runs"]
    cert = [r for r in runs if r["method"] == "certify"]
    assert [r["n"] for r in cert] == [60, 90] and all(r["certified"] for r in cert)
    by_n = {(r["n"], r["method"]): r for r in runs}
    assert all(by_n[n, "certify"]["value"] == by_n[n, "bnb"]["value"] == by_n[n, "milp-highs"]["value"]
               for n in (60, 90))
    # the command line on the same problem written as a package: certified, the same OPT, timed from start-up
    assert "memaudit solve, end to end (s)" in next(line for line in out.splitlines() if line.startswith("| experiences"))
    cli = [r for r in runs if r["method"] == "memaudit solve"]
    assert [r["n"] for r in cli] == [60, 90] and all(r["certified"] and r["exit"] == 0 for r in cli)
    assert all(by_n[n, "memaudit solve"]["value"] == by_n[n, "bnb"]["value"] for n in (60, 90))
    assert all(r["seconds"] > r["solver_seconds"] > 0 and r["around_seconds"] > 0 for r in cli)
    assert out.count("memaudit solve certified OPT = ") == 2


def test_the_scale_series_runs_every_seed_it_is_given(capsys, tmp_path):
    report = tmp_path / "seeds.json"
    code, out, err = run(capsys, "--n-large", "60", "--large-only", "--methods", "bnb", "--large-seeds", "0,3",
                         "--json", str(report))
    assert code == 0, err
    assert "### Scale series: `random` family, seeds 0, 3" in out
    head = next(line for line in out.splitlines() if line.startswith("| experiences"))
    assert head.startswith("| experiences | seed | candidates |")
    assert [line.split(" | ")[1] for line in out.splitlines() if line.startswith("| 60 |")] == ["0", "3"]
    cert = [r for r in json.loads(report.read_text())["runs"] if r["method"] == "certify"]
    assert [r["seed"] for r in cert] == [0, 3]
    assert cert[0]["n_candidates"] != cert[1]["n_candidates"] or cert[0]["value"] != cert[1]["value"]


def test_the_scale_series_certifies_with_the_back_ends_it_is_given(capsys, tmp_path):
    report = tmp_path / "lattice.json"
    code, out, err = run(capsys, "--n-large", "60", "--large-only", "--methods", "bnb", "--certify-backends",
                         "lattice", "--json", str(report))
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("| 60 |"))
    assert "| lattice |" in row and "certified by bnb + lattice: both proved OPT = " in out
    assert "with bnb and the back-ends lattice tried in turn" in out
    (cert,) = [r for r in json.loads(report.read_text())["runs"] if r["method"] == "certify"]
    assert cert["certified"] and cert["parts"][1]["stats"]["lattice"]["proved"]


def test_the_command_line_column_is_left_out_for_an_h_a_package_cannot_state_exactly(capsys):
    code, out, err = run(capsys, "--n-large", "40", "--large-only", "--large-family", "restate-pwl",
                         "--methods", "bnb")
    assert code == 0, err
    assert "memaudit solve not run: only problems whose every h is min(cap, z) are written as packages here" in out


def test_a_cap_h_is_written_as_a_package_that_compiles_back(tmp_path):
    sys.path.insert(0, str(BENCH.parent))
    from bench_scale import write_package

    from memaudit.package import compile_package, load_package

    p = make_problem("restate-cap", 30, 2)
    path, why = write_package(p, "cap", str(tmp_path))
    assert why == "" and '"h":{"cap":2.0}' in open(path).read()
    q = compile_package(load_package(path)).problem
    assert q.h_intercepts.tolist() == p.h_intercepts.tolist() and q.costs.tolist() == p.costs.tolist()


def test_scale_series_stops_a_call_at_the_wall_clock_cap(capsys):
    code, out, err = run(capsys, "--n-large", "1500", "--large-only", "--methods", "bnb,milp-highs",
                         "--large-wall-cap", "0.01")
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("| 1,500 |"))
    assert row.count("stopped after") == 3 and "(not certified)" in row       # bnb, milp-highs, memaudit solve
    assert "NOT certified: certify stopped at the wall-clock cap of 0.01 s" in out
    assert "NOT certified: memaudit solve stopped at the wall-clock cap of 0.01 s" in out
    stopped = [line.split(":")[0].strip() for line in err.splitlines() if "!!" in line]
    assert stopped == ["!! bnb", "!! milp-highs", "!! certify"]


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "validity"])
def test_families_are_seeded_and_sized(family):
    p = make_problem(family, 30, 4)
    assert p.n_groups == 30
    q = make_problem(family, 30, 4)
    assert p.costs.tolist() == q.costs.tolist() and (p.coverage != q.coverage).nnz == 0
    assert p.h_slopes.tolist() == q.h_slopes.tolist()


def test_bad_arguments_are_one_line_errors(capsys):
    for argv, message in ((["--methods", "bnb,gurobi"], "unknown method(s) gurobi"),
                          (["--families", "nope"], "unknown family(ies) nope"),
                          (["--large-only"], "--large-only needs --n-large N"),
                          (["--n-large", "50", "--large-seeds", "-1"], "--large-seeds must list seeds >= 0"),
                          (["--seeds", "0"], "--seeds must be >= 1"),
                          (["--n-large", "50", "--certify-backends", "greedy"],
                           "--certify-backends: unknown or unusable back-end(s) greedy")):
        with pytest.raises(SystemExit) as exc:
            bench_exact.main(argv)
        assert exc.value.code == 2
        assert message in capsys.readouterr().err


def test_a_ratio_far_below_one_keeps_two_significant_digits():
    """bnb at 0.14 s against HiGHS at 29 s is 0.0047, not 0.00 (the scale series showed 0.00)."""
    from bench_tables import fmt_ratio
    assert [fmt_ratio(r) for r in (0.136 / 29.06, 0.14, 1.456, 0.1)] == ["0.0047", "0.14", "1.46", "0.10"]
