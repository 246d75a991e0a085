"""Tests of memaudit.certification and the MILP warm start: time-boxed fall-through, hints, our own presolve."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from memaudit.certification import auto_order, backend_key, backend_order, default_time_box
from memaudit.cli import EXIT_OK, main
from memaudit.errors import MethodError
from memaudit.package import compile_package, load_package, package_from_dict
from memaudit.results.cache import ResultsCache
from memaudit.solve import solve_package
from memaudit_solvers.bnb import branch_and_bound
from memaudit_solvers.bruteforce import brute_force
from memaudit_solvers.milp import BACKENDS, installed_backends
from memaudit_solvers.milp.model import _reduced_model
from memaudit_solvers.milp.presolve import group_dominance
from memaudit_solvers.problem import Problem
from memaudit_solvers.random_problems import random_problem, tiny_problem

PWL = [[1.0, 1.0], [2.0, 1.5], [3.0, 1.75]]


def package_of(problem: Problem, h=None) -> dict:
    """A package dict stating ``problem`` (costs given; ``h`` for every unit, default min1)."""
    cov = sp.csr_array(problem.coverage)
    kinds = problem.kinds if problem.kinds is not None else ["fact"] * problem.n_candidates
    unit = {} if h is None else {"h": h}
    return {"format": "memaudit-package/1", "id": "pkg", "cost_model": "words", "cost_source": "given",
            "experiences": [{"id": f"e{g}", "text": f"experience {g}"} for g in range(problem.n_groups)],
            "units": [{"id": f"u{r}", "kind": "current", "weight": float(w), **unit}
                      for r, w in enumerate(problem.weights)],
            "candidates": [{"id": f"c{i}", "experience": f"e{int(problem.groups[i])}", "kind": str(kinds[i]),
                            "text": f"c{i}", "cost": float(problem.costs[i]),
                            "coverage": {f"u{int(r)}": float(a) for r, a in
                                         zip(cov.indices[cov.indptr[i]:cov.indptr[i + 1]],
                                             cov.data[cov.indptr[i]:cov.indptr[i + 1]])}}
                           for i in range(problem.n_candidates)]}


@pytest.fixture(scope="module")
def slow_for_cpsat(tmp_path_factory):
    """``random_problem(400, 2, restate=0.8)`` with a concave pwl h, at 5 % of the stream cost: CP-SAT
    needed 37 s to prove it here (8 s without an answer in another run), HiGHS 0.45 s."""
    pkg = package_from_dict(package_of(random_problem(400, 2, restate=0.8), {"breakpoints": PWL}))
    path = tmp_path_factory.mktemp("pwl") / "pwl.json"
    path.write_text(json.dumps(package_of(random_problem(400, 2, restate=0.8), {"breakpoints": PWL})))
    return pkg, path, 0.05 * compile_package(pkg).problem.stream_cost()


needs = pytest.mark.skipif(not {"cpsat", "milp-highs"} <= set(installed_backends()), reason="needs OR-Tools and highspy")


@needs
def test_a_timed_out_backend_falls_through_to_the_next_which_certifies(slow_for_cpsat):
    pkg, _, budget = slow_for_cpsat
    report = solve_package(pkg, budget=budget, backend="cpsat,highs", time_box=2.0, backend_time_limit=60)
    assert report.certified and report.backend == "milp-highs"
    first, second = report.attempts
    assert (first.backend, first.outcome, first.time_limit, first.counted) == ("cpsat", "timeout", 2.0, False)
    assert 1.5 <= first.seconds < 10          # stopped by its box, not by the 60 s overall limit
    assert (second.backend, second.outcome, second.counted) == ("milp-highs", "proved", True)
    assert report.backend_failures == (first.line(),)
    assert first.line().startswith("cpsat timed out after ") and "(time box 2 s)" in first.line()
    assert report.warm_started["from"] == "bnb" and report.warm_started["value"] == report.value
    log = report.certification_log()
    assert log["mode"] == "auto" and log["certified_by"] == "milp-highs" and log["time_box"] == 2.0
    assert [a["outcome"] for a in log["attempts"]] == ["timeout", "proved"]


@needs
def test_the_cli_reports_the_fall_through_in_text_and_json(slow_for_cpsat, tmp_path):
    _, path, budget = slow_for_cpsat
    args = ["solve", str(path), "--budget", repr(budget), "--backend", "cpsat,highs", "--backend-time-box", "2",
            "--no-cache"]
    text = CliRunner().invoke(main, args)
    assert text.exit_code == EXIT_OK, text.output
    assert "certified by bnb + milp-highs" in text.stdout
    assert "  - first tried: cpsat timed out after " in text.stdout
    assert "milp-highs was warm-started from bnb's store" in text.stdout
    doc = json.loads(CliRunner().invoke(main, args + ["--json"]).stdout)
    cert = doc["certification"]
    assert doc["certified"] and doc["backend"] == "milp-highs" and cert["certified_by"] == "milp-highs"
    assert [(a["backend"], a["outcome"]) for a in cert["attempts"]] == [("cpsat", "timeout"), ("milp-highs", "proved")]
    assert cert["warm_start"]["from"] == "bnb"


def test_an_explicit_backend_keeps_its_time_limit_and_does_not_fall_through(slow_for_cpsat):
    pkg, _, budget = slow_for_cpsat
    if "cpsat" not in installed_backends():
        pytest.skip("needs OR-Tools")
    report = solve_package(pkg, budget=budget, backend="cpsat", backend_time_limit=1.0)
    assert not report.certified and report.backend == "cpsat" and report.backend_result.status == "timeout"
    assert [a.backend for a in report.attempts] == ["cpsat"] and report.time_box is None and not report.auto
    assert any("cpsat did not prove optimality (status timeout" in r for r in report.reasons)


def test_auto_order_and_time_box_defaults():
    assert auto_order("bnb")[0] == "milp-highs" and "milp-highs" not in auto_order("milp-highs")
    assert default_time_box(0.1) == 10.0 and default_time_box(4.0) == 20.0 and default_time_box(60.0) == 60.0
    assert backend_order("none", "bnb") is None and backend_order("scip,highs,scip", "bnb") == ["milp-scip",
                                                                                                "milp-highs"]
    assert backend_key("auto", "bnb") == "auto" and backend_key("highs", "bnb") == "milp-highs"
    with pytest.raises(MethodError, match="unknown back-end 'gurobi'"):
        backend_order("highs,gurobi", "bnb")
    with pytest.raises(MethodError, match="cannot contain 'none'"):
        backend_order("highs,none", "bnb")
    with pytest.raises(MethodError, match="the time box must be a number of seconds > 0; got -1"):
        solve_package(load_package("packages_data/examples/quickstart.json"), budget=30, time_box=-1)


def test_an_auto_row_is_reused_by_auto_and_not_by_a_named_backend(tmp_path):
    pkg = load_package("packages_data/examples/quickstart.json")
    db = tmp_path / "r.sqlite"
    first, reused = ResultsCache(db).solve(pkg, budget=30, backend="auto")
    again, reused_again = ResultsCache(db).solve(pkg, budget=30, backend="auto", time_box=5.0, warm_start=False)
    named, reused_named = ResultsCache(db).solve(pkg, budget=30, backend="highs")
    assert first.certified and (reused, reused_again, reused_named) == (False, True, False)
    assert again.backend == first.backend and again.value == first.value and named.certified


# -- the warm start ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(installed_backends()))
def test_every_backend_starts_from_the_hint_and_proves_the_same_optimum(name):
    p = random_problem(60, 4, restate=0.8)
    budget = 0.15 * p.stream_cost()
    best = branch_and_bound(p, budget)
    cold = BACKENDS[name](p, budget)
    warm = BACKENDS[name](p, budget, hint=best.chosen)
    assert cold.status == warm.status == "optimal" and warm.value == pytest.approx(best.value, rel=1e-9)
    assert warm.stats["warm_start"] == {"n_chosen": len(best.chosen), "value": best.value,
                                        **({"accepted": True} if name == "milp-scip" else {})}
    assert "warm_start" not in cold.stats and "hint" not in warm.settings


@pytest.mark.parametrize("name", sorted(installed_backends()))
def test_a_poor_hint_does_not_stop_the_search(name):
    p = random_problem(40, 2, restate=0.8)
    budget = 0.2 * p.stream_cost()
    opt = branch_and_bound(p, budget).value
    one = [int(np.argmin(p.costs))]                  # a feasible store far below OPT
    r = BACKENDS[name](p, budget, hint=one)
    assert r.status == "optimal" and r.value == pytest.approx(opt, rel=1e-9) and r.value > r.stats["warm_start"]["value"]


@pytest.mark.parametrize("hint, match", [([0, 1], "must be a feasible store: .*group"),
                                         ([99], r"outside \[0, 3\)"), ("x", "must be a store")])
def test_a_bad_hint_is_refused(hint, match):
    p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    with pytest.raises(ValueError, match=match):
        BACKENDS["milp-highs"](p, 4, hint=hint)


# -- our own presolve: dominance inside a group -----------------------------------------------

@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("pieces", ["min1", "cap", "pwl"])
def test_dropping_dominated_candidates_keeps_opt(seed, pieces):
    p = tiny_problem(seed, n_candidates=11, n_units=4, pieces=pieces)
    budget = 0.4 * p.stream_cost()
    opt = brute_force(p, budget).value
    removed, kept_by = group_dominance(p.costs, p.groups, sp.csr_array(p.coverage))
    dense = p.coverage.toarray()
    for u, v in zip(removed.tolist(), kept_by.tolist()):   # each replacement is kept and dominates
        assert v not in removed and p.groups[u] == p.groups[v] and p.costs[v] <= p.costs[u]
        assert np.all(dense[v] >= dense[u])
    keep = np.setdiff1d(np.arange(p.n_candidates), removed)
    q = Problem.build(p.costs[keep], p.groups[keep], dense[keep], p.weights, h_slopes=p.h_slopes,
                      h_intercepts=p.h_intercepts, n_groups=p.n_groups)
    assert brute_force(q, budget).value == pytest.approx(opt, rel=1e-12)
    assert BACKENDS["milp-highs"](p, budget).value == pytest.approx(opt, rel=1e-9)


def test_a_hinted_candidate_the_presolve_dropped_is_replaced_by_its_dominator():
    # candidate 0 (cost 5, covers both units) is dominated by candidate 2 (cost 4, covers both)
    p = Problem.build([5.0, 3.0, 4.0, 2.0], [0, 0, 0, 1], [[1, 1], [1, 0], [1, 1], [0, 1]], [1.0, 1.0])
    model = _reduced_model(p, 6.0)
    assert model.replaced.tolist() == [0] and model.replacement.tolist() == [2]
    r = BACKENDS["milp-highs"](p, 6.0, hint=[0])
    assert r.status == "optimal" and r.value == 2.0 and r.stats["warm_start"]["value"] == 2.0


# -- the objective's grid: a bound less than one step above a store proves it ------------------

@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("pieces", ["min1", "cap", "pwl"])
def test_every_store_value_is_a_multiple_of_the_objective_step(seed, pieces):
    from fractions import Fraction

    from memaudit_solvers.exact import as_fraction
    from memaudit_solvers.milp.scaling import objective_step
    from memaudit_solvers.objective import evaluate

    p = tiny_problem(seed, n_candidates=10, n_units=4, pieces=pieces)
    budget = 0.5 * p.stream_cost()
    step = objective_step(p, budget)
    assert step is not None and step > 0
    rng = np.random.default_rng(seed)
    for _ in range(20):
        store = [int(rng.choice(np.flatnonzero(p.groups == g))) for g in range(p.n_groups) if rng.random() < 0.5]
        k = Fraction(as_fraction(evaluate(p, store))) / step
        assert abs(k - round(k)) < 1e-6, (store, k)


@pytest.mark.parametrize("name", sorted(set(installed_backends()) - {"cpsat"}))
def test_a_float_backend_with_continuous_y_proves_on_the_grid(name):
    p = random_problem(300, 1, restate=0.8)
    budget = 0.1 * p.stream_cost()
    opt = branch_and_bound(p, budget).value
    r = BACKENDS[name](p, budget, integral_y=False)
    assert r.status == "optimal" and r.value == pytest.approx(opt, rel=1e-12)
    assert r.stats["integral_y"] is False and r.stats["grid_step"] == 0.5 and r.stats["gap_abs"] == 0.99 * 0.5
    assert r.bound == r.value


def test_a_backend_that_ignores_its_time_box_is_stopped_and_the_next_certifies(monkeypatch):
    """A stand-in for a solver that does not check its time limit (HiGHS's presolve ran 168 s past a 150 s
    limit at 30,000 experiences): the forked attempt is stopped after the box and the grace."""
    import time as _time

    import memaudit_solvers.registry as registry

    def stalls(problem, budget, **settings):
        _time.sleep(60)
        raise AssertionError("not stopped")

    monkeypatch.setitem(registry.METHODS, "milp-cbc", stalls)
    pkg = load_package("packages_data/examples/quickstart.json")
    started = _time.perf_counter()
    report = solve_package(pkg, budget=30, backend="cbc,highs", time_box=0.5)
    assert _time.perf_counter() - started < 30
    assert report.certified and report.backend == "milp-highs"
    first = report.attempts[0]
    assert (first.backend, first.outcome) == ("milp-cbc", "overran") and 5.0 <= first.seconds < 15
    assert "milp-cbc did not stop at its time limit of 0.5 s and was stopped 5 s later" in report.backend_failures[0]


def test_when_every_box_times_out_the_closest_runs_again_with_the_time_left(monkeypatch):
    """A stand-in for CBC that needs more than its 1 s box (it returns a time-out then) and the real CBC
    when given 5 s or more: the retry with what is left of the 30 s certifies."""
    import time as _time

    import memaudit_solvers.registry as registry
    from memaudit_solvers.milp import milp_cbc
    from memaudit_solvers.result import make_result

    def needs_five_seconds(problem, budget, *, time_limit=None, hint=None, **settings):
        if time_limit is not None and time_limit < 5:
            return make_result(problem, budget, method="milp-cbc", settings={}, chosen=[], status="timeout",
                               bound=float("inf"), started=_time.perf_counter())
        return milp_cbc(problem, budget, time_limit=time_limit, hint=hint, **settings)

    monkeypatch.setitem(registry.METHODS, "milp-cbc", needs_five_seconds)
    pkg = load_package("packages_data/examples/quickstart.json")
    report = solve_package(pkg, budget=30, backend="cbc,cbc", time_box=1.0, backend_time_limit=30)
    assert report.certified and report.backend == "milp-cbc"
    first, again = report.attempts
    assert (first.outcome, first.time_limit, first.counted, first.retry) == ("timeout", 1.0, False, False)
    assert (again.outcome, again.counted, again.retry) == ("proved", True, True) and 25 < again.time_limit <= 30
    assert report.backend_failures == (first.line(),) and "(time box 1 s)" in first.line()


def _solve_in_daemon(conn):   # pragma: no cover - runs in the child
    from memaudit.package import load_package
    from memaudit.solve import solve_package

    report = solve_package(load_package("packages_data/examples/quickstart.json"), budget=30)
    conn.send((report.status, report.value))


def test_auto_certifies_inside_a_daemonic_process():
    """A pool or Dask worker is daemonic and may not start children: the boxed attempt runs in-process there."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_solve_in_daemon, args=(send,), daemon=True)
    child.start()
    assert receive.poll(120), "the daemonic solve did not answer"
    status, value = receive.recv()
    child.join()
    assert status == "certified" and value > 0
