"""The lattice certificate (memaudit_solvers.lattice) against a brute-force oracle: its bound is valid at
every price, it never proves a store that is not optimal, and it closes the knapsack gaps it is for."""

import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from memaudit.cli import main

from memaudit_solvers.bruteforce import brute_force
from memaudit_solvers.certify import certify, run_rescaled
from memaudit_solvers.lattice import lattice, lattice_proof
from memaudit_solvers.lattice.stores import component_stores, integer_costs
from memaudit_solvers.milp.scaling import objective_step
from memaudit_solvers.objective import evaluate, infeasibility
from memaudit_solvers.problem import Problem, breakpoint_pieces, min_cap_pieces
from memaudit_solvers.random_problems import random_problem
from memaudit_solvers.fallthrough import run_backend
from memaudit_solvers.result import Declined


def small_problem(seed: int, pieces: str = "min1", shared: int = 2, cost_unit: float = 1.0) -> Problem:
    """Up to 6 experiences of 1-3 candidates, private units and ``shared`` units two groups cover;
    costs whole multiples of ``cost_unit``, weights 1-3, coverage 0.5 / 1."""
    rng = np.random.default_rng(seed)
    n_groups = int(rng.integers(1, 7))
    sizes = rng.integers(1, 4, n_groups)
    groups = np.repeat(np.arange(n_groups), sizes)
    n = groups.size
    n_units = n_groups + shared
    cov = np.zeros((n, n_units))
    for i, g in enumerate(groups):
        cov[i, g] = rng.choice([0.5, 1.0])
    for s in range(shared):
        if n_groups >= 2:
            a, b = rng.choice(n_groups, 2, replace=False)
            for g in (a, b):
                members = np.flatnonzero(groups == g)
                cov[rng.choice(members), n_groups + s] = rng.choice([0.5, 1.0])
    costs = rng.integers(1, 9, n).astype(float) * cost_unit
    weights = rng.choice([1.0, 1.5, 2.0, 3.0], n_units)
    kw = {}
    if pieces == "pwl":
        s3, b3 = breakpoint_pieces([(1.0, 1.0), (2.0, 1.5)])
        kw = {"h_slopes": np.tile(s3, (n_units, 1)), "h_intercepts": np.tile(b3, (n_units, 1))}
    elif pieces == "cap":
        kw = dict(zip(("h_slopes", "h_intercepts"), min_cap_pieces(rng.choice([1.0, 2.0], n_units))))
    return Problem.build(costs, groups, cov, weights, n_groups=n_groups, **kw)


def random_store(p: Problem, budget: float, seed: int) -> np.ndarray:
    """A random feasible store: a random candidate per group, dropped while over the budget."""
    rng = np.random.default_rng(seed)
    store = [int(rng.choice(np.flatnonzero(p.groups == g))) for g in range(p.n_groups) if rng.random() < 0.7]
    rng.shuffle(store)
    while store and infeasibility(p, store, budget):
        store.pop()
    return np.array(sorted(store), dtype=np.int64)


problems = st.tuples(st.integers(0, 10**6), st.sampled_from(["min1", "pwl", "cap"]), st.integers(0, 3),
                     st.sampled_from([1.0, 0.5, 0.25]), st.sampled_from([0.2, 0.35, 0.5, 0.8]))


def build(case):
    seed, pieces, shared, unit, frac = case
    p = small_problem(seed, pieces, shared, unit)
    return p, float(math.floor(frac * p.costs.sum() / unit) * unit)


@settings(max_examples=150, deadline=None)
@given(case=problems, store_seed=st.integers(0, 10**6), num=st.integers(0, 40), den=st.integers(1, 12))
def test_the_bound_is_valid_at_every_price(case, store_seed, num, den):
    """Every price gives a valid Lagrangian bound and a valid lattice bound; a proof is never wrong."""
    p, budget = build(case)
    opt = brute_force(p, budget).value
    store = random_store(p, budget, store_seed)
    proof = lattice_proof(p, budget, store, price=Fraction(num, den))
    assert float(proof.lagrangian_bound) >= opt - 1e-9
    assert float(proof.bound) >= opt - 1e-9
    # the store's value on the grid (rounded down: a store with a dominated candidate may sit off it)
    assert float(proof.value) - 1e-9 <= evaluate(p, store) < float(proof.value + proof.grid_step) - 1e-9
    if proof.proved:
        assert evaluate(p, store) == pytest.approx(opt, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(case=problems, store_seed=st.integers(0, 10**6))
def test_only_an_optimal_store_is_proved(case, store_seed):
    p, budget = build(case)
    best = brute_force(p, budget)
    for store in (best.chosen, random_store(p, budget, store_seed)):
        r = lattice(p, budget, hint=store)
        assert r.status in ("optimal", "feasible")
        assert r.bound >= best.value - 1e-9
        assert list(r.chosen) == sorted(store)
        if r.status == "optimal":
            assert r.value == pytest.approx(best.value, abs=1e-9)
            assert r.stats["lattice"]["proved"]


def knapsack(extra: bool = False) -> Problem:
    """Four experiences worth 2 at cost 5 and one worth 1 at cost 6, budget 14: the LP bound is 5.6, OPT 4
    on a grid of 1.  With ``extra`` an experience worth 1 at cost 3 makes 5 reachable."""
    costs = [5.0] * 4 + [6.0] + ([3.0] if extra else [])
    weights = [2.0] * 4 + [1.0] + ([1.0] if extra else [])
    n = len(costs)
    return Problem.build(costs, list(range(n)), np.eye(n), weights)


def test_a_knapsack_gap_of_more_than_a_grid_step_is_closed():
    p = knapsack()
    r = lattice(p, 14.0, hint=[0, 1])
    assert r.status == "optimal" and r.value == 4.0 and r.bound == 4.0
    proof = r.stats["lattice"]
    assert proof["price"] == "2/5" and proof["lagrangian_bound"] == pytest.approx(5.6)
    # a store worth 5 falls short of 5.6 by 0.6; unspent budget loses 0.4 per unit of cost: never 0.6
    assert proof["window"] == pytest.approx(0.6) and proof["slack_loss"] == "2/5"
    assert "0.6" in r.message and "optimal" in r.message


def test_a_reachable_shortfall_is_not_proved_and_the_bound_stays_valid():
    p = knapsack(extra=True)
    assert brute_force(p, 14.0).value == 5.0           # two facts and the cheap experience
    r = lattice(p, 14.0, hint=[0, 1])                  # worth 4: not optimal
    assert r.status == "feasible" and r.bound == 5.0
    assert "not proved" in r.message
    assert lattice(p, 14.0, hint=[0, 1, 5]).status == "optimal"


def test_certification_falls_through_when_the_lattice_cannot_prove():
    p = knapsack(extra=True)
    c = certify(p, 14.0, backend=["lattice", "milp-highs"])
    assert c.certified and c.value == 5.0
    first = certify(p, 14.0, backend=["lattice", "milp-highs"], method="brute")
    assert [r.method for r in first.results] == ["brute", "lattice"]   # brute's store is optimal: proved


def test_random_problem_at_ten_thousand_experiences_is_certified():
    """random_problem(10000, 5) at 5 %: HiGHS and SCIP leave a 0.8 gap on a 0.5 grid for minutes
    (docs/backends.md); every loss within reach of the lattice is a multiple of 0.2 or 0.4."""
    p = random_problem(10000, 5)
    budget = 0.05 * p.stream_cost()
    c = certify(p, budget, backend=["lattice"], time_limit=60)
    assert c.certified and c.value == 10642.0
    proof = c.results[1].stats["lattice"]
    assert proof["price"] == "2/5" and proof["lagrangian_bound"] == pytest.approx(10642.8)
    assert [v for v, _ in proof["losses"]] == ["1/5"]


def test_scaled_costs_and_weights_give_the_same_proof():
    p = knapsack()
    q = Problem.build(p.costs / 1e6, p.groups, p.coverage.toarray(), p.weights * 1e6)   # 5e-06 exactly
    r = run_rescaled(lattice, q, 14e-6, hint=[0, 1])
    assert r.status == "optimal" and r.value == pytest.approx(4e6)


def test_declines_without_a_store_or_an_exact_grid():
    p = knapsack()
    with pytest.raises(Declined, match="given store"):
        lattice(p, 14.0)
    thirds = Problem.build([1 / 3, 2 / 3], [0, 1], np.eye(2), [1.0, 1.0])
    with pytest.raises(Declined, match="costs are on no exact grid"):
        lattice(thirds, 1.0, hint=[0])
    irrational = Problem.build([1.0, 2.0], [0, 1], [[math.sqrt(0.5), 0], [0, 1]], [1.0, 1.0])
    with pytest.raises(Declined, match="F has no exact grid"):
        lattice(irrational, 2.0, hint=[0])
    half = Problem.build([1.0, 1.0, 1.0], [0, 1, 2], [[0.5, 0.25], [0.5, 1 / 3], [0.0, 1 / 3]], [1.0, 1.0])
    with pytest.raises(Declined, match="coverage value of a large component is no short decimal"):
        lattice(half, 2.0, hint=[0], max_stores=1)         # the programme needs the coverage's exact grid


@settings(max_examples=150, deadline=None)
@given(case=problems)
def test_the_programme_keeps_exactly_the_stores_that_matter(case):
    """A component's (cost, value) frontier from the dynamic programme is the enumeration's, filtered."""
    p, budget = build(case)
    step = objective_step(p, budget)
    if step is None:
        return
    cost_ints, budget_int, _ = integer_costs(p, budget)
    listed = component_stores(p, budget, step, cost_ints, budget_int, 10**6, 10**6)
    programmed = component_stores(p, budget, step, cost_ints, budget_int, 1, 10**6)
    assert listed.n_programmed == 0 and programmed.n_programmed == listed.n_components
    assert listed.costs.tolist() == programmed.costs.tolist()
    assert listed.values.tolist() == programmed.values.tolist()
    assert listed.starts.tolist() == programmed.starts.tolist()
    # each component's list: by cost, within the budget, each store worth more than every cheaper one
    for c in range(listed.n_components):
        v = listed.values[listed.starts[c]:listed.starts[c + 1]]
        k = listed.costs[listed.starts[c]:listed.starts[c + 1]]
        assert k[0] == 0 and v[0] == 0 and np.all(np.diff(k) > 0) and np.all(np.diff(v) > 0)
        assert k[-1] <= budget_int


@settings(max_examples=100, deadline=None)
@given(case=problems, store_seed=st.integers(0, 10**6))
def test_proofs_through_the_programme_are_never_wrong(case, store_seed):
    p, budget = build(case)
    best = brute_force(p, budget)
    for store in (best.chosen, random_store(p, budget, store_seed)):
        r = lattice(p, budget, hint=store, max_stores=1)       # every component through the programme
        assert r.bound >= best.value - 1e-9
        if r.status == "optimal":
            assert r.value == pytest.approx(best.value, abs=1e-9)


def test_bad_settings_and_stores_are_refused():
    p = knapsack()
    with pytest.raises(ValueError, match="^method 'lattice': setting 'max_window' must be an integer >= 1; got 0$"):
        lattice(p, 14.0, hint=[0], max_window=0)
    with pytest.raises(ValueError, match="feasible store"):
        lattice(p, 14.0, hint=[0, 1, 2])
    with pytest.raises(ValueError, match="price must be a Fraction"):
        lattice_proof(p, 14.0, [0], price=Fraction(-1))
    r = run_backend("lattice", p, 14.0, 5.0, hint=[0, 1])      # as certification runs it
    assert r.method == "lattice" and r.status == "optimal"
    assert r.settings == {"time_limit": 5.0, "max_stores": 4096, "max_window": 10**7}


def test_a_window_wider_than_allowed_is_no_proof():
    p = knapsack()
    r = lattice(p, 14.0, hint=[0, 1], max_window=1)     # the window is 3 units of 1/5
    assert r.status == "feasible" and r.bound == 5.0


# -- the command line: --backend lattice, auto at scale, verify ----------------------------------------

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "packages_data" / "examples" / "quickstart.json"


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_solve_with_the_lattice_back_end_says_why_and_verify_re_proves_it(tmp_path):
    cert = tmp_path / "cert.json"
    r = _cli("solve", QUICKSTART, "--budget-frac", "0.25", "--backend", "lattice", "--no-cache", "-o", cert)
    assert r.exit_code == 0, r.output
    assert "certified by bnb + lattice" in r.output
    assert "  - lattice certificate: at the budget price " in r.output
    doc = json.loads(cert.read_text())
    assert doc["backend"] == "lattice" and doc["backends"]["lattice"]["version"].startswith("memaudit ")
    assert doc["results"][1]["stats"]["lattice"]["proved"]
    v = _cli("verify", QUICKSTART, cert, "--backend", "lattice")
    assert v.exit_code == 0, v.output
    assert "lattice proved OPT = 10" in v.output


def test_the_lattice_is_no_method_and_needs_the_method_store():
    r = _cli("solve", QUICKSTART, "--budget-frac", "0.25", "--method", "lattice", "--no-cache")
    assert r.exit_code == 1 and "'lattice' is a certifier" in r.output + r.stderr
    r = _cli("solve", QUICKSTART, "--budget-frac", "0.25", "--backend", "lattice", "--no-warm-start", "--no-cache")
    assert r.exit_code == 3
    assert "lattice declined this package: the lattice certificate proves a given store optimal" in r.output


def test_auto_tries_the_lattice_first_at_scale_and_highs_first_below(tmp_path):
    from memaudit.certification import LATTICE_FIRST, backend_order

    small = random_problem(100, 0)
    assert small.n_candidates + small.n_units < LATTICE_FIRST
    assert backend_order("auto", "bnb", small)[:2] == ["milp-highs", "lattice"]
    path = tmp_path / "random-10000-5.json"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "random_package.py"), "10000", "5", str(path), "--compact"],
                   check=True, capture_output=True)
    r = _cli("solve", path, "--budget-frac", "0.05", "--no-cache", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["opt"] == 10642.0 and doc["backend"] == "lattice"
    assert [a["backend"] for a in doc["certification"]["attempts"]] == ["lattice"]


def test_a_time_limit_stops_it_with_status_timeout():
    p = random_problem(2000, 0)
    budget = 0.05 * p.stream_cost()
    store = []                        # the empty store is feasible; the time limit comes first
    r = lattice(p, budget, hint=store, time_limit=1e-6)
    assert r.status == "timeout" and r.bound == math.inf and "time limit" in r.message


def test_the_unspent_budget_is_followed_exactly_when_the_first_stage_cannot_decide():
    """small_problem(3) at 35 %: a loss of 3/8 and unspent budget at 3/8 a unit could make the 1/2 shortfall of a
    store one step better, but no choice of stores leaves that budget unspent: the second stage proves it."""
    p, budget = build((3, "min1", 0, 1.0, 0.35))
    best = brute_force(p, budget)
    r = lattice(p, budget, hint=best.chosen)
    proof = r.stats["lattice"]
    assert r.status == "optimal" and r.value == best.value == 4.5
    assert proof["costs_followed"] and proof["window"] == 0.5 and proof["losses"] == [["3/8", 1]]
    assert "not with the budget the components' stores actually leave unspent" in r.message



def test_a_component_that_keeps_too_many_units_open_is_declined_before_its_programme_runs(monkeypatch):
    import re

    import memaudit_solvers.lattice.frontier as frontier
    from memaudit_solvers.bnb import branch_and_bound
    from memaudit_solvers.greedy import greedy_store
    from memaudit_solvers.random_problems import summary_problem

    # summaries over a sliding window, 30 % of the units restated from anywhere earlier: one component
    # whose order keeps hundreds of units open (at 3,000 experiences its programme declined on its
    # entries after 6.9 s)
    p = summary_problem(300, 0)
    budget = 0.1 * p.stream_cost()
    store = greedy_store(p, budget)
    with pytest.raises(Declined, match="shared units open at once") as info:
        lattice(p, budget, hint=store, max_stores=1)
    width = int(re.search(r"keeps up to ([\d,]+) shared units", str(info.value)).group(1).replace(",", ""))
    assert width > frontier.MAX_OPEN_UNITS
    monkeypatch.setattr(frontier, "MAX_OPEN_UNITS", width)     # at the limit: the programme runs (to its deadline)
    assert lattice(p, budget, hint=store, max_stores=1, time_limit=0.5).status == "timeout"
    # components that keep one unit open at a time (restated random problems) still get their proof
    q = random_problem(400, 1, restate=0.8)
    q_budget = 0.1 * q.stream_cost()
    monkeypatch.setattr(frontier, "MAX_OPEN_UNITS", 1)
    r = lattice(q, q_budget, hint=branch_and_bound(q, q_budget).chosen, max_stores=1)
    assert r.stats["lattice"]["n_programmed"] > 0
    monkeypatch.setattr(frontier, "MAX_OPEN_UNITS", 0)
    with pytest.raises(Declined, match="keeps up to 1 shared units open"):
        lattice(q, q_budget, hint=r.chosen, max_stores=1)


def _with_costs_by_loops(loss, cost, comp, n_comp, window, budget, p, targets):
    """The second stage as plain loops over stores and shortfalls (the oracle of the array version)."""
    stores = [[(int(l), int(c)) for l, c, k in zip(loss, cost, comp) if k == j and l <= window] for j in range(n_comp)]
    reach = {(0, 0)}
    for options in stores:
        if options:
            reach = {(l + lo, c + co) for l, c in reach for lo, co in options if c + co <= budget and l + lo <= window}
    hits = []
    for i, short in enumerate(targets):
        if any(l + p * (budget - c) == short for l, c in reach):
            hits.append(i)
    return hits


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 6), st.integers(0, 40), st.integers(0, 30), st.integers(0, 7),
       st.integers(1, 4))
def test_the_second_stage_finds_the_shortfalls_the_loops_find(seed, n_comp, window, budget, p, q):
    prove_module = sys.modules["memaudit_solvers.lattice.prove"]
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 4, n_comp)
    comp = np.repeat(np.arange(n_comp), sizes)
    loss = rng.integers(0, window + 3, comp.size)
    loss[np.r_[0, np.cumsum(sizes)[:-1]]] = 0            # each component's best store loses nothing
    cost = rng.integers(0, max(budget // 2, 1) + 1, comp.size)
    targets = window - q * np.arange(window // q + 1)
    got = prove_module._with_costs(loss, cost, comp, n_comp, window, budget, p, targets, math.inf)
    assert got is not None
    assert got.tolist() == _with_costs_by_loops(loss, cost, comp, n_comp, window, budget, p, targets.tolist())


def test_a_wide_window_with_as_many_shortfalls_is_followed_exactly_in_time():
    from memaudit_solvers.bnb import branch_and_bound
    from memaudit_solvers.random_problems import summary_problem

    # a window of 61,559 units and as many shortfalls: the second stage looped over both (266 s, its
    # 30 s limit notwithstanding); now it proves the optimum with the costs followed
    p = summary_problem(20, 0)
    budget = 0.1 * p.stream_cost()
    best = branch_and_bound(p, budget)
    r = lattice(p, budget, hint=best.chosen, max_stores=1, time_limit=60)
    assert r.status == "optimal" and r.value == pytest.approx(best.value, abs=1e-9)
    assert r.stats["lattice"]["costs_followed"]
    prove_module = sys.modules["memaudit_solvers.lattice.prove"]
    passed = prove_module._with_costs(np.zeros(3, np.int64), np.ones(3, np.int64), np.array([0, 0, 1]), 2, 5, 3,
                                      1, np.arange(5, -1, -1), deadline=0.0)
    assert passed is None                                # past its deadline it gives up
