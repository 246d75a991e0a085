"""Tests of memaudit_solvers.certify: bnb certified by each back-end, and every way a pair of results can fail to certify."""

import dataclasses
import time

import numpy as np
import pytest

from memaudit_solvers.bnb import branch_and_bound
from memaudit_solvers.certify import CERT_RTOL, certify, compare_results
from memaudit_solvers.greedy import greedy_store
from memaudit_solvers.milp import BACKENDS as MILPS
from memaudit_solvers.milp import installed_backends, milp_highs
from memaudit_solvers.objective import evaluate, is_feasible, total_cost
from memaudit_solvers.problem import Problem
from memaudit_solvers.random_problems import random_problem, tiny_problem
from memaudit_solvers.registry import EXACT_METHODS
from memaudit_solvers.result import Result, make_result

PROBLEMS = {
    "tiny-min1": (tiny_problem(21, n_candidates=12, pieces="min1"), 9.0),
    "tiny-pwl": (tiny_problem(22, n_candidates=12, n_units=4, pieces="pwl"), 11.0),
    "package-n7": (random_problem(7, 8), 45.0),
    "package-n40": (random_problem(40, 3), 300.0),
}
BACKENDS = [b for b in sorted(EXACT_METHODS) if b != "bnb" and (b not in MILPS or b in installed_backends())]


def fake(problem, budget, chosen, *, value=None, status="optimal", method="fake", cost=None):
    """A Result built by hand, so it can say anything about its store."""
    chosen = np.asarray(chosen, dtype=np.int64)
    value = evaluate(problem, chosen) if value is None else value
    return Result(method=method, settings={}, budget=float(budget), chosen=chosen, value=value,
                  cost=total_cost(problem, chosen) if cost is None else cost, status=status,
                  bound=value, gap=0.0, wall_time=0.0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_bnb_is_certified_by_every_backend(name, backend):
    problem, budget = PROBLEMS[name]
    if backend == "brute" and name == "package-n40":
        with pytest.raises(ValueError, match="brute force would enumerate"):
            certify(problem, budget, backend=backend)
        return
    c = certify(problem, budget, backend=backend)
    assert c.certified, c.reasons
    assert c.reasons == []
    assert [r.method for r in c.results] == ["bnb", backend]
    assert c.value == c.results[0].value
    assert abs(c.results[0].value - c.results[1].value) <= CERT_RTOL * max(1.0, c.value)
    assert c.summary.startswith(f"certified by bnb + {backend}")
    for r in c.results:
        assert is_feasible(problem, r.chosen, budget)


def test_certify_the_other_way_round():
    problem, budget = PROBLEMS["tiny-pwl"]
    c = certify(problem, budget, method="milp-highs", backend="bnb")
    assert c.certified and [r.method for r in c.results] == ["milp-highs", "bnb"]


def test_a_timeout_is_not_certified():
    # a time-out as bnb reports one (best store so far + an open bound); built directly so the
    # test does not depend on how fast this machine is
    problem = random_problem(55, 105)
    budget = 0.25 * problem.stream_cost()
    store = greedy_store(problem, budget)
    timed_out = make_result(problem, budget, method="bnb", settings={"time_limit": 0.2}, chosen=store,
                            status="timeout", bound=evaluate(problem, store) + 3.0, started=time.perf_counter(),
                            message="time limit 0.2s reached after 12 nodes")
    c = compare_results(problem, budget, timed_out, milp_highs(problem, budget))
    assert not c.certified
    assert any("bnb did not prove optimality (status timeout" in why for why in c.reasons), c.reasons
    assert c.summary.startswith("NOT certified (bnb + milp-highs)")


def test_certify_passes_the_time_limit_on():
    problem = random_problem(300, 2)
    c = certify(problem, 0.25 * problem.stream_cost(), backend="milp-highs", time_limit=7.5)
    assert [r.settings["time_limit"] for r in c.results] == [7.5, 7.5]


def test_a_suboptimal_feasible_store_is_not_certified():
    problem, budget = PROBLEMS["tiny-min1"]
    best = branch_and_bound(problem, budget)
    worse = make_result(problem, budget, method="worse", settings={}, chosen=best.chosen[:-1], status="feasible",
                        bound=float("inf"), started=0.0)
    assert worse.value < best.value
    c = compare_results(problem, budget, best, worse)
    assert not c.certified
    assert any("worse did not prove optimality (status feasible" in why for why in c.reasons), c.reasons
    # a result that proved nothing does not contradict the other: no "values disagree" line
    assert not any(why.startswith("values disagree") for why in c.reasons), c.reasons


def test_two_claimed_optima_that_disagree_are_not_certified():
    """Each result is self-consistent and 'optimal'; only the disagreement gives it away, and the better
    store, feasible on the exact numbers, says which proof is wrong."""
    problem, budget = PROBLEMS["tiny-min1"]
    best = branch_and_bound(problem, budget)
    liar = dataclasses.replace(fake(problem, budget, best.chosen[:-1], method="liar"), status="optimal")
    c = compare_results(problem, budget, best, liar)
    assert not c.certified
    assert len(c.reasons) == 2 and c.reasons[0].startswith("values disagree: bnb="), c.reasons
    assert "liar=" in c.reasons[0]
    assert c.reasons[1].startswith("liar's proof is refuted: bnb's store, feasible on the exact numbers, is worth ")


def test_a_reported_value_is_re_evaluated():
    problem, budget = PROBLEMS["tiny-pwl"]
    best = branch_and_bound(problem, budget)
    inflated = fake(problem, budget, best.chosen, value=best.value + 1.0, method="inflated")
    c = compare_results(problem, budget, inflated, dataclasses.replace(best, value=best.value + 1.0))
    assert not c.certified   # the two agree with each other, but neither store is worth what it claims
    assert any(f"inflated reports {best.value + 1.0} but its store evaluates to {best.value}" in why
               for why in c.reasons), c.reasons
    assert any("bnb reports" in why for why in c.reasons), c.reasons
    assert not any("values disagree" in why for why in c.reasons)


def test_an_over_budget_store_is_not_certified():
    problem, budget = PROBLEMS["tiny-min1"]
    one_per_group = [int(m[0]) for m in problem.group_members() if len(m)]
    assert total_cost(problem, one_per_group) > budget
    over = fake(problem, budget, one_per_group, method="greedy-glutton")
    c = compare_results(problem, budget, over, dataclasses.replace(over, method="twin"))
    assert not c.certified
    assert any(why.startswith("greedy-glutton's store is infeasible: cost") and "exceeds the budget" in why
               for why in c.reasons), c.reasons


def test_two_from_one_group_is_not_certified():
    problem = Problem.build([1.0, 1.0, 1.0], [0, 0, 1], [[1, 0], [0, 1], [1, 1]], [1.0, 1.0])
    both = fake(problem, 10.0, [0, 1], method="both")
    c = compare_results(problem, 10.0, both, branch_and_bound(problem, 10.0))
    assert not c.certified
    assert any("both's store is infeasible: group 0 has more than one chosen candidate" in why
               for why in c.reasons), c.reasons


def test_a_result_for_another_budget_is_not_certified():
    problem, budget = PROBLEMS["package-n7"]
    c = compare_results(problem, budget, branch_and_bound(problem, budget), milp_highs(problem, budget + 10))
    assert not c.certified
    assert any(f"milp-highs ran with budget {budget + 10}" in why for why in c.reasons), c.reasons


def test_one_result_certifies_nothing():
    problem, budget = PROBLEMS["tiny-min1"]
    c = compare_results(problem, budget, branch_and_bound(problem, budget))
    assert not c.certified and "certification needs two results" in c.reasons


def test_certify_needs_two_different_exact_methods():
    problem, budget = PROBLEMS["tiny-min1"]
    with pytest.raises(ValueError, match="two different methods"):
        certify(problem, budget, method="bnb", backend="bnb")
    with pytest.raises(ValueError, match="two different methods"):
        certify(problem, budget, method="milp-highs", backend="milp-highs")
    with pytest.raises(ValueError, match=r"'greedy' is not an exact method or a certifier; choose from .*lattice.*milp-highs"):
        certify(problem, budget, backend="greedy")
    with pytest.raises(ValueError, match=r"'nope' is not an exact method"):
        certify(problem, budget, method="nope")
    with pytest.raises(ValueError, match=r"'lattice' is not an exact method; choose from bnb"):
        certify(problem, budget, method="lattice")      # a certifier proves a store, it chooses none


# -- a back-end that fails on valid data: a solver failure, and the next back-end runs ----------

THIRDS = Problem.build([0.6666666666666666, 3.333333, 0.6666666666666666, 0.333333, 0.666667, 2.0],
                       [0, 0, 1, 1, 2, 2],
                       [[1.0, 0.333333, 1 / 3], [1.0, 0.333333, 0.333333], [1.0, 0.0, 2 / 3],
                        [1 / 3, 0.333333, 0.333333], [0.0, 0.0, 0.333333], [0.0, 1.0, 0.333333]],
                       [1 / 3, 3.333333, 1.0])


def test_thirds_package_is_solved_by_every_float_backend():
    # HiGHS's presolve called this model infeasible at its default tolerances (a run without presolve
    # is now the fallback); CBC had integral y on a 3,000,000-step grid and called it infeasible too
    # (the grid is now capped), then returned a store over the budget by 3e-7 (its tolerance)
    from memaudit_solvers.bruteforce import brute_force
    from memaudit_solvers.milp import milp_cbc
    opt = brute_force(THIRDS, 3.333333).value
    r = milp_highs(THIRDS, 3.333333)
    assert r.status == "optimal" and r.value == pytest.approx(opt, rel=1e-12)
    assert r.stats["integral_y"] is False          # y_scale 3,000,000 is over the cap
    # CBC still returns a store over the exact budget (by 3e-7: its tolerance): a solver failure that says so
    from memaudit_solvers.result import SolverError
    with pytest.raises(SolverError, match=r"CBC returned a store that is not feasible on the exact numbers .*"
                                          r"a back-end failure, not bad input"):
        milp_cbc(THIRDS, 3.333333)
    c = certify(THIRDS, 3.333333, backend=("milp-cbc", "cpsat"), warm_start=False)
    assert c.certified and c.value == pytest.approx(opt, rel=1e-12) and c.attempts[0].startswith("milp-cbc failed")
    # started from bnb's store, CBC keeps that feasible store as its answer and proves it optimal
    c = certify(THIRDS, 3.333333, backend=("milp-cbc", "cpsat"))
    assert c.certified and c.attempts == [] and c.results[1].method == "milp-cbc"


def test_certify_falls_through_a_backend_that_fails(monkeypatch):
    import memaudit_solvers.registry as registry
    from memaudit_solvers.result import SolverError

    def broken(problem, budget, **settings):
        raise SolverError("HiGHS ended with model status 'Infeasible'; the empty store is feasible")

    monkeypatch.setitem(registry.EXACT_METHODS, "milp-highs", broken)
    monkeypatch.setitem(registry.METHODS, "milp-highs", broken)
    c = certify(THIRDS, 3.333333, backend=("milp-highs", "cpsat"))
    assert c.certified and c.results[1].method == "cpsat"
    assert c.attempts == ["milp-highs failed: HiGHS ended with model status 'Infeasible'; the empty store is feasible"]
    with pytest.raises(SolverError, match="Infeasible"):
        certify(THIRDS, 3.333333, backend="milp-highs")
    c = certify(THIRDS, 3.333333, backend=("milp-highs",))
    assert not c.certified and c.reasons[0].startswith("no back-end could check the result: milp-highs failed")


def test_solve_package_reports_a_failed_backend_and_certifies_with_the_next(monkeypatch, tmp_path):
    import json

    import memaudit.solve as solve
    from memaudit.package import load_package
    from memaudit_solvers.result import SolverError
    costs, groups = THIRDS.costs.tolist(), THIRDS.groups.tolist()
    cov = THIRDS.coverage.toarray()
    doc = {"format": "memaudit-package/1", "id": "thirds", "cost_model": "words", "cost_source": "given",
           "budget": 3.333333,
           "experiences": [{"id": f"e{g}", "text": f"experience {g}"} for g in range(3)],
           "units": [{"id": f"u{r}", "kind": "current", "weight": float(w)} for r, w in enumerate(THIRDS.weights)],
           "candidates": [{"id": f"c{i}", "experience": f"e{groups[i]}", "kind": "fact", "text": f"c{i}",
                           "cost": costs[i], "coverage": {f"u{r}": float(a) for r, a in enumerate(cov[i]) if a}}
                          for i in range(6)]}
    path = tmp_path / "thirds.json"
    path.write_text(json.dumps(doc))
    pkg = load_package(path)
    report = solve.solve_package(pkg, budget=3.333333, backend="cbc", warm_start=False)
    assert report.certified and report.backend == "cpsat" and "milp-cbc failed" in report.backend_failures[0]
    report = solve.solve_package(pkg, budget=3.333333, backend="cbc")     # from bnb's store CBC stays feasible
    assert report.certified and report.backend == "milp-cbc" and report.backend_failures == ()
    assert report.warm_started == {"from": "bnb", "n_chosen": len(report.result.chosen), "value": report.value}
    real = solve.get_method

    def failing(name):
        if name == "milp-highs":
            def broken(problem, budget, **settings):
                raise SolverError("HiGHS failed: run returned kError")
            return broken
        return real(name)

    import memaudit.certification as certification
    monkeypatch.setattr(certification, "get_method", failing)
    monkeypatch.setattr(solve, "_probe_backend", lambda name: None)
    report = solve.solve_package(pkg, budget=3.333333, backend="highs")
    assert report.certified and report.backend == "cpsat"
    assert report.backend_failures == ("milp-highs failed on this package (a solver failure, not bad input): "
                                       "HiGHS failed: run returned kError",)


def test_a_bound_of_none_is_the_value_only_for_an_optimal_result():
    problem, budget = PROBLEMS["tiny-min1"]
    best = branch_and_bound(problem, budget)
    same = make_result(problem, budget, method="m", settings={}, chosen=best.chosen, status="optimal", bound=None,
                       started=0.0)
    assert same.bound == same.value == best.value and same.gap == 0
    with pytest.raises(ValueError, match="a bound of None is only for status 'optimal'; got status 'feasible'"):
        make_result(problem, budget, method="m", settings={}, chosen=best.chosen, status="feasible", bound=None,
                    started=0.0)


def test_a_single_proof_is_named_but_does_not_certify():
    """bnb timed out holding the optimum a MILP proves: not certified, and the report says the store is optimal."""
    p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    proved = make_result(p, 4, method="milp-highs", settings={}, chosen=[1, 2], status="optimal", bound=None,
                         started=time.perf_counter())
    held = dataclasses.replace(proved, method="bnb", status="timeout", bound=3.0)
    worse = make_result(p, 4, method="bnb", settings={}, chosen=[2], status="timeout", bound=3.0,
                        started=time.perf_counter())
    c = compare_results(p, 4, held, proved)
    assert not c.certified
    assert ("milp-highs alone proves the optimum 2.5, which bnb's store attains: the store is optimal by one "
            "proof, not two") in c.reasons
    c = compare_results(p, 4, worse, proved)
    assert not c.certified and "milp-highs alone proves the optimum 2.5; bnb's store is worth 1.5" in c.reasons
    assert not any("alone proves" in r for r in compare_results(p, 4, proved, proved).reasons)
