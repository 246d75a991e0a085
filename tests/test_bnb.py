"""Tests of memaudit_solvers.bnb: exactness against an enumeration oracle and the MILP, properties of OPT, bounds, settings."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_solvers.exact import fits_budget
from memaudit_solvers.bnb import branch_and_bound, lagrangian_bound, objective_grid
from memaudit_solvers.milp import milp_highs
from memaudit_solvers.objective import evaluate, is_feasible, total_cost
from memaudit_solvers.problem import Problem, breakpoint_pieces, min_cap_pieces
from memaudit_solvers.random_problems import random_problem, summary_problem, tiny_problem
from memaudit_solvers.result import Result
from test_objective import build, problem_data  # the drawn-problem strategy of the objective tests

#: bnb settings that each take a different path through the code
CONFIGS = {
    "default": {},
    "coupled": {"max_combos": 1, "tree_limit": 0},                   # no component is collapsed
    "coupled-no-lp": {"max_combos": 1, "tree_limit": 0, "root_lp": False, "node_lp": False},
    "coupled-no-dp": {"max_combos": 1, "tree_limit": 0, "dp_limit": 1},
    "lagrangian-only": {"max_combos": 1, "tree_limit": 0, "root_lp": False, "node_lp": False, "dp_limit": 1},
    "tree-dp": {"max_combos": 1},                   # every coupled component through bnb.treedp's programme
}
PIECES = ("min1", "cap", "pwl")


# -- the oracle: every store, enumerated with numpy, F from the pieces as a min --------------------------

def all_stores(problem):
    """Boolean matrix (n_stores, n_candidates): every choice of one candidate or none per group."""
    stores = np.zeros((1, problem.n_candidates), dtype=bool)
    for members in problem.group_members():
        grown = [stores]
        for u in members:
            s = stores.copy()
            s[:, u] = True
            grown.append(s)
        stores = np.vstack(grown)
    return stores


def opt_by_enumeration(problem, budgets):
    """OPT for each budget, by evaluating every store: sum_r w_r min_k (slope_rk * s_r + intercept_rk)."""
    x = all_stores(problem).astype(float)
    sums = x @ problem.coverage.toarray()
    h = np.min(sums[:, :, None] * problem.h_slopes[None] + problem.h_intercepts[None], axis=2)
    values = h @ problem.weights if problem.n_units else np.zeros(len(x))
    # the project's budget rule is exact on the package's decimals (solvers.exact.fits_budget)
    fits = [np.array([fits_budget(problem.costs[row.astype(bool)], b) for row in x]) for b in budgets]
    return [float(values[ok].max()) for ok in fits]


def budgets_for(problem):
    """Zero, the cheapest candidate, just above it, a quarter and half of everything, above everything."""
    total = float(problem.costs.sum())
    cheapest = float(problem.costs.min()) if problem.n_candidates else 1.0
    return [0.0, cheapest, cheapest + 0.5, 0.25 * total, 0.5 * total, total + 1.0]


def check_exact(problem, budget, opt, **config):
    r = branch_and_bound(problem, budget, **config)
    assert isinstance(r, Result)
    assert r.status == "optimal", r.message
    assert is_feasible(problem, r.chosen, budget)
    assert r.value == evaluate(problem, r.chosen)
    assert r.cost == total_cost(problem, r.chosen)
    tol = 1e-9 * max(1.0, abs(opt))
    assert abs(r.value - opt) <= tol, (budget, config, r.value, opt)
    assert r.bound >= r.value and r.bound <= opt + tol
    return r


# -- hand-made problems with the awkward shapes ---------------------------------------------------------

def special_problems():
    rng = np.random.default_rng(7)
    out = {}
    # ties: identical candidates everywhere, so many stores reach OPT
    out["ties"] = Problem.build([2.0] * 6, [0, 0, 1, 1, 2, 3], [[1.0, 0.5]] * 6, [1.0, 1.0])
    # one unit covered by every candidate, saturating under a cap of 2 and a concave pwl
    s, b = breakpoint_pieces([(1.0, 1.0), (2.0, 1.5), (4.0, 2.0)])
    sc, bc = min_cap_pieces([2.0, 1.0])
    cov = np.zeros((12, 3))
    cov[:, 0] = 0.5
    cov[np.arange(12), 1 + np.arange(12) % 2] = rng.choice([0.5, 1.0], 12)
    pad = lambda v: np.concatenate([v, np.repeat(v[-1:], 4 - len(v))])  # noqa: E731
    out["many-coverers"] = Problem.build(rng.integers(1, 5, 12).astype(float), np.arange(12) // 2, cov,
                                         [3.0, 1.0, 2.0], h_slopes=[s, pad(sc[0]), pad(sc[1])],
                                         h_intercepts=[b, pad(bc[0]), pad(bc[1])])
    # empty coverage rows only: OPT is 0 at every budget
    out["nothing-covered"] = Problem.build([1.0, 2.0, 3.0], [0, 1, 1], np.zeros((3, 2)), [1.0, 1.0])
    # no candidates at all, and groups without candidates
    out["no-candidates"] = Problem.build([], [], np.zeros((0, 2)), [1.0, 2.0])
    out["empty-groups"] = Problem.build([1.0, 2.0, 2.0], [1, 1, 4], [[1, 0], [0, 1], [1, 1]], [1.0, 2.0],
                                        n_groups=6)
    # one big group: only one candidate can be stored
    out["one-group"] = Problem.build(rng.integers(1, 6, 9).astype(float), [0] * 9,
                                     rng.choice([0.0, 0.5, 1.0], (9, 4)), [1.0, 2.0, 3.0, 1.0])
    # h that keeps rising (last piece not flat): h(z) = min(z, 0.5 z + 0.5), and the linear h(z) = z
    out["open-h"] = Problem.build(rng.integers(1, 6, 10).astype(float), np.arange(10) // 2,
                                  rng.choice([0.0, 0.5, 1.0, 2.0], (10, 3)), [1.0, 2.0, 1.5],
                                  h_slopes=[[1.0, 0.5], [1.0, 0.5], [1.0, 1.0]],
                                  h_intercepts=[[0.0, 0.5], [0.0, 0.5], [0.0, 0.0]])
    # costs and coverage off any grid: no DP, no objective grid, only the relative tolerance
    out["off-grid"] = Problem.build(rng.uniform(0.5, 3.0, 10), np.arange(10) // 2, rng.uniform(0, 1.3, (10, 3))
                                    * (rng.random((10, 3)) < 0.6), rng.uniform(0.3, 2.0, 3))
    return out


SPECIAL = special_problems()


@pytest.mark.parametrize("config", list(CONFIGS), ids=list(CONFIGS))
@pytest.mark.parametrize("name", list(SPECIAL))
def test_bnb_matches_enumeration_on_special_problems(name, config):
    p = SPECIAL[name]
    budgets = budgets_for(p)
    for budget, opt in zip(budgets, opt_by_enumeration(p, budgets)):
        check_exact(p, budget, opt, **CONFIGS[config])


@pytest.mark.parametrize("config", list(CONFIGS), ids=list(CONFIGS))
@pytest.mark.parametrize("pieces", PIECES)
def test_bnb_matches_enumeration_on_tiny_problems(pieces, config):
    # without LP prices the bound is the marginal-gain knapsack and the tree grows fast: smaller problems there
    sizes = (4, 8, 12, 16, 10, 14) if CONFIGS[config].get("root_lp", True) else (4, 8, 12, 6, 10, 12)
    for seed, n_candidates in enumerate(sizes):
        p = tiny_problem(seed, n_candidates=n_candidates, n_units=2 + seed % 4, pieces=pieces)
        budgets = budgets_for(p)
        for budget, opt in zip(budgets, opt_by_enumeration(p, budgets)):
            check_exact(p, budget, opt, **CONFIGS[config])


@pytest.mark.parametrize("config", ["default", "coupled"])
@pytest.mark.parametrize("seed", range(4))
def test_bnb_matches_enumeration_on_package_shaped_problems(seed, config):
    p = random_problem(7, seed)
    budgets = [0.0] + [f * p.stream_cost() for f in (0.1, 0.25, 0.5, 1.0)]
    for budget, opt in zip(budgets, opt_by_enumeration(p, budgets)):
        check_exact(p, budget, opt, **CONFIGS[config])


@pytest.mark.parametrize("n, seed, config", [
    *[(n, seed, "default") for n in (12, 60, 150) for seed in (0, 1, 2)],
    # the coupled search (nothing collapsed) is exact but needs ~1000 nodes at n = 150: stop at 60
    *[(n, seed, "coupled") for n in (12, 60) for seed in (0, 1, 2)],
    *[(12, seed, config) for seed in (0, 1, 2) for config in ("coupled-no-lp", "lagrangian-only")],
])
def test_bnb_matches_milp_highs(n, seed, config):
    # brute force refuses n = 12 (about 4**12 stores), so HiGHS is the reference there too
    p = random_problem(n, seed)
    for frac in (0.10, 0.25, 0.50):
        budget = frac * p.stream_cost()
        ref = milp_highs(p, budget)
        assert ref.status == "optimal"
        check_exact(p, budget, ref.value, **CONFIGS[config])


@st.composite
def tiny(draw, max_candidates=10):
    return tiny_problem(draw(st.integers(0, 10**6)), n_candidates=draw(st.integers(1, max_candidates)),
                        n_units=draw(st.integers(1, 5)), pieces=draw(st.sampled_from(PIECES)))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_bnb_matches_enumeration_on_drawn_problems(data):
    """Arbitrary floats and h shapes, including h that never flattens."""
    p = build(data.draw(problem_data(max_candidates=9, max_units=4)))
    budget = data.draw(st.floats(0, float(p.costs.sum()) + 1))
    config = data.draw(st.sampled_from(list(CONFIGS)))
    opt = opt_by_enumeration(p, [budget])[0]
    r = branch_and_bound(p, budget, **CONFIGS[config])
    assert r.status == "optimal" and is_feasible(p, r.chosen, budget)
    assert r.value == evaluate(p, r.chosen)
    assert r.value >= opt - 1e-7 * max(1.0, opt), (config, r.value, opt)


# -- properties of OPT ---------------------------------------------------------------------------------

def opt(problem, budget, config="default"):
    r = branch_and_bound(problem, budget, **CONFIGS[config])
    assert r.status == "optimal"
    return r.value


def with_rows(problem, keep=None, extra=None, weights=None):
    """A copy of ``problem`` with candidates ``keep`` only, plus ``extra`` = (cost, group, coverage row)."""
    keep = np.arange(problem.n_candidates) if keep is None else np.asarray(keep, dtype=np.int64)
    costs = problem.costs[keep].tolist()
    groups = problem.groups[keep].tolist()
    dense = problem.coverage.toarray()[keep].tolist()
    n_groups = problem.n_groups
    if extra is not None:
        costs.append(extra[0])
        groups.append(extra[1])
        dense.append(extra[2])
        n_groups = max(n_groups, extra[1] + 1)
    return Problem.build(costs, groups, np.array(dense).reshape(len(costs), problem.n_units),
                         problem.weights if weights is None else weights, h_slopes=problem.h_slopes,
                         h_intercepts=problem.h_intercepts, n_groups=n_groups)


TOL = 1e-9
configs = st.sampled_from(list(CONFIGS))


@settings(max_examples=40, deadline=None)
@given(tiny(), st.floats(0, 30), st.floats(0, 30), configs)
def test_opt_is_monotone_in_budget(p, b1, b2, config):
    lo, hi = sorted((b1, b2))
    assert opt(p, lo, config) <= opt(p, hi, config) + TOL * max(1.0, opt(p, hi, config))


@settings(max_examples=40, deadline=None)
@given(tiny(), st.floats(0, 30), st.data(), configs)
def test_adding_a_candidate_never_lowers_opt(p, budget, data, config):
    group = data.draw(st.integers(0, p.n_groups), label="group")   # n_groups: a new group
    cost = data.draw(st.sampled_from([1.0, 2.0, 3.0, 5.0, 0.5]), label="cost")
    row = data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5]), min_size=p.n_units, max_size=p.n_units))
    bigger = with_rows(p, extra=(cost, group, row))
    before, after = opt(p, budget, config), opt(bigger, budget, config)
    assert after >= before - TOL * max(1.0, before)


@settings(max_examples=40, deadline=None)
@given(tiny(), st.floats(0, 30), st.data(), configs)
def test_removing_a_group_never_raises_opt(p, budget, data, config):
    group = data.draw(st.integers(0, p.n_groups - 1), label="group")
    smaller = with_rows(p, keep=np.flatnonzero(p.groups != group))
    before, after = opt(p, budget, config), opt(smaller, budget, config)
    assert after <= before + TOL * max(1.0, before)


@settings(max_examples=40, deadline=None)
@given(tiny(), st.floats(0, 30), configs)
def test_doubling_the_weights_doubles_opt(p, budget, config):
    doubled = with_rows(p, weights=2.0 * p.weights)
    single = opt(p, budget, config)
    assert math.isclose(opt(doubled, budget, config), 2.0 * single, rel_tol=1e-9, abs_tol=1e-9)


# -- objective_grid ------------------------------------------------------------------------------------

def assert_on_grid(value, step):
    assert abs(value - step * round(value / step)) <= 1e-9 * max(1.0, abs(value)), (value, step)


@settings(max_examples=40, deadline=None)
@given(tiny(max_candidates=16), st.data())
def test_objective_grid_step_divides_every_value(p, data):
    step = objective_grid(p)
    assert step > 0  # all data of tiny_problem are multiples of 1/4
    if p.is_min1:
        assert step >= 0.5  # coverage in halves, integer weights: the grid is not uselessly fine
    for _ in range(5):
        chosen = data.draw(st.lists(st.integers(0, p.n_candidates - 1), unique=True))  # feasible or not
        assert_on_grid(evaluate(p, chosen), step)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_objective_grid_on_drawn_grid_data(data):
    p = build(data.draw(problem_data(grid=True)))
    step = objective_grid(p)
    assert step > 0
    n = p.n_candidates
    chosen = data.draw(st.lists(st.integers(0, n - 1), unique=True)) if n else []
    assert_on_grid(evaluate(p, chosen), step)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_objective_grid_on_drawn_float_data(data):
    """Arbitrary floats: either no grid (0) or one every value lies on."""
    p = build(data.draw(problem_data(grid=False)))
    step = objective_grid(p)
    assert step >= 0
    if step > 0:
        n = p.n_candidates
        chosen = data.draw(st.lists(st.integers(0, n - 1), unique=True)) if n else []
        assert_on_grid(evaluate(p, chosen), step)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.data())
def test_objective_grid_of_decimal_weights_on_decimal_coverage(n, m, data):
    """Weights and coverage of three decimals: every F is a multiple of 1e-6, so the grid is too.

    The products w * step are taken in rationals (as floats, 2.504 * 0.001 is no small ratio)."""
    thousandths = st.integers(1, 3000).map(lambda k: k / 1000)
    cov = np.array(data.draw(st.lists(st.lists(st.integers(0, 1000).map(lambda k: k / 1000), min_size=m,
                                               max_size=m), min_size=n, max_size=n)))
    p = Problem.build([1.0] * n, list(range(n)), cov, data.draw(st.lists(thousandths, min_size=m, max_size=m)))
    step = objective_grid(p)
    if p.coverage.nnz:
        assert step >= 1e-6 * (1 - 1e-9), step
    chosen = data.draw(st.lists(st.integers(0, n - 1), unique=True))
    assert_on_grid(evaluate(p, chosen), step)


def test_the_grid_of_three_decimal_data_closes_a_fine_grained_summary_at_the_root():
    """A 40-experience summary problem (3-decimal coverage and weights) whose root bound is OPT + 4.6e-8:
    with no grid bnb explored 27,301 nodes (63 s; HiGHS 1 s); the grid of 1e-6 proves OPT at the root."""
    p = summary_problem(40, 524288, window=2, restate=0.8, coverage_decimals=3)
    assert objective_grid(p) == pytest.approx(1e-6, rel=1e-12)
    budget = 0.10 * p.stream_cost()
    r = branch_and_bound(p, budget, time_limit=60)
    assert r.status == "optimal" and r.stats["nodes"] <= 20
    assert r.value == pytest.approx(milp_highs(p, budget).value, rel=1e-9)


def test_objective_grid_is_zero_when_finer_than_the_round_off_of_F():
    # weights 1e7 and 1e-7 on whole coverage: F is a multiple of 1e-7, 1e-14 of its size (GRID_FLOOR 1e-12)
    p = Problem.build([1.0, 1.0], [0, 1], [[1.0, 0.0], [0.0, 1.0]], [1e7, 1e-7])
    assert objective_grid(p) == 0.0
    assert objective_grid(Problem.build([1.0, 1.0], [0, 1], [[1.0, 0.0], [0.0, 1.0]], [1e4, 1e-4])) == 1e-4


def test_bnb_prunes_on_the_grid_of_its_input_not_of_the_collapsed_problem():
    """Collapsed components become options worth float sums of products (no small ratios); F is unchanged,
    so the input's grid (3-decimal weights, 2-decimal coverage: 1e-5) is the one the search uses."""
    p = summary_problem(50, 2)
    r = branch_and_bound(p, 0.25 * p.stream_cost())
    assert r.stats["components"] > 1 and r.stats["grid_step"] == objective_grid(p) == pytest.approx(1e-5)


def test_objective_grid_is_zero_off_grid():
    # 0.1234567891 is no ratio with a denominator <= 10**6 (to 1e-12), so F has no detected grid
    p = Problem.build([1.0, 1.0], [0, 1], [[0.1234567891, 0.0], [0.0, 1.0]], [1.0, 1.0])
    assert objective_grid(p) == 0.0
    r = branch_and_bound(p, 2.0)
    assert r.status == "optimal" and r.chosen.tolist() == [0, 1]


# -- the Lagrangian bound ------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(tiny(max_candidates=12), st.data())
def test_lagrangian_bound_is_valid_for_any_prices(p, data):
    """F(X) <= sum_r phi_r(mu_r) + MCK-LP(mu) for every mu >= 0 when each h ends flat (all three kinds do)."""
    budget = data.draw(st.floats(0, float(p.costs.sum()) + 1), label="budget")
    price = st.sampled_from([0.0, 0.5, 1.0, 3.0]) | st.floats(0, 10)
    mu = np.array(data.draw(st.lists(price, min_size=p.n_units, max_size=p.n_units), label="mu"))
    best = opt_by_enumeration(p, [budget])[0]
    assert lagrangian_bound(p, budget, mu) >= best - 1e-9 * max(1.0, best)
    assert lagrangian_bound(p, budget) >= best - 1e-9 * max(1.0, best)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_default_lagrangian_bound_is_valid_for_any_h(data):
    """With mu = None (the weights times h'(0)) the bound holds for every concave h, flat at the end or not."""
    p = build(data.draw(problem_data(max_candidates=8, max_units=4)))
    budget = data.draw(st.floats(0, float(p.costs.sum()) + 1))
    best = opt_by_enumeration(p, [budget])[0]
    assert lagrangian_bound(p, budget) >= best - 1e-9 * max(1.0, best)


def test_lagrangian_bound_with_prices_below_the_final_slope():
    # h(z) = z: phi_r(mu) = sup_y (1 - mu) y = inf for mu < 1, so the only honest answers are inf or an error
    p = Problem.build([1.0, 1.0], [0, 1], [[1.0], [1.0]], [1.0], h_slopes=[[1.0]], h_intercepts=[[0.0]])
    assert lagrangian_bound(p, 2.0, mu=[0.5]) >= 2.0


# -- time limit and settings ---------------------------------------------------------------------------

def test_tiny_time_limit_returns_a_feasible_store_and_a_bound():
    p = random_problem(800, 1)
    budget = 0.25 * p.stream_cost()
    r = branch_and_bound(p, budget, time_limit=1e-6)
    assert r.status in ("timeout", "optimal")
    assert r.bound >= r.value
    assert is_feasible(p, r.chosen, budget)
    assert r.value == evaluate(p, r.chosen)
    if r.status == "timeout":
        assert "time limit" in r.message
    assert r.settings["time_limit"] == 1e-6


def test_settings_are_recorded():
    p = tiny_problem(3)
    r = branch_and_bound(p, 5.0, max_combos=7, root_lp=False, dp_limit=99, tree_limit=5)
    assert r.method == "bnb"
    assert r.settings == {"time_limit": None, "root_lp": False, "node_lp": True, "max_combos": 7, "dp_limit": 99,
                          "tree_limit": 5}


@pytest.mark.parametrize("budget, kwargs, name", [
    pytest.param(-1.0, {}, "budget", id="negative-budget"),
    pytest.param(math.nan, {}, "budget", id="nan-budget"),
    pytest.param(math.inf, {}, "budget", id="inf-budget"),
    pytest.param("5", {}, "budget", id="str-budget"),
    pytest.param(True, {}, "budget", id="bool-budget"),
    pytest.param(5.0, {"time_limit": 0}, "time_limit", id="zero-time-limit"),
    pytest.param(5.0, {"time_limit": -1.0}, "time_limit", id="negative-time-limit"),
    pytest.param(5.0, {"time_limit": math.nan}, "time_limit", id="nan-time-limit"),
    pytest.param(5.0, {"root_lp": "yes"}, "root_lp", id="root-lp-str"),
    pytest.param(5.0, {"node_lp": 1}, "node_lp", id="node-lp-int"),
    pytest.param(5.0, {"max_combos": 0}, "max_combos", id="zero-max-combos"),
    pytest.param(5.0, {"max_combos": 2.5}, "max_combos", id="float-max-combos"),
    pytest.param(5.0, {"dp_limit": 0}, "dp_limit", id="zero-dp-limit"),
])
def test_bad_settings_raise_value_error_naming_the_setting(budget, kwargs, name):
    with pytest.raises(ValueError, match=name):
        branch_and_bound(tiny_problem(0), budget, **kwargs)


def test_sparse_and_dense_coverage_give_the_same_optimum():
    p = tiny_problem(11, n_candidates=12, pieces="pwl")
    dense = Problem.build(p.costs, p.groups, p.coverage.toarray(), p.weights, h_slopes=p.h_slopes,
                          h_intercepts=p.h_intercepts)
    coo = Problem.build(p.costs, p.groups, sp.coo_array(p.coverage), p.weights, h_slopes=p.h_slopes,
                        h_intercepts=p.h_intercepts)
    for budget in budgets_for(p):
        assert branch_and_bound(dense, budget).value == branch_and_bound(coo, budget).value


# -- grids that only look like grids ------------------------------------------------------------

def test_a_cost_close_to_a_ratio_is_not_a_grid():
    """Regression: 0.83924... is within 1e-12 of a ratio with a small denominator, but not equal to it.

    Reading it as that ratio made the DP drop the store whose cost equals the budget exactly.
    """
    x = 0.8392418201373975
    p = Problem.build([x, 1.0, 1.5], [0, 1, 2], np.eye(3), [1.0, 1.0, 1.9])
    r = branch_and_bound(p, x + 1.0)
    assert r.value == 2.0 and r.chosen.tolist() == [0, 1]


@pytest.mark.parametrize("seed", range(40))
def test_one_odd_cost_among_integers(seed):
    rng = np.random.default_rng(seed)
    n = 9
    costs = rng.integers(1, 6, size=n).astype(float)
    costs[rng.integers(0, n)] = float(rng.uniform(0.2, 0.9))
    groups = np.sort(rng.integers(0, 5, size=n))
    cov = rng.choice([0.0, 0.5, 1.0], size=(n, 4))
    p = Problem.build(costs, groups, cov, rng.integers(1, 4, size=4).astype(float))
    for budget in (costs[0] + costs[1], costs.sum() / 3, float(rng.uniform(1, 8))):
        assert branch_and_bound(p, budget).value == pytest.approx(opt_by_enumeration(p, [budget])[0], abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 10**7), st.integers(0, 6)), min_size=1, max_size=6),
                min_size=1, max_size=6))
def test_decimal_steps_are_the_rational_steps(segments):
    """The vector reading of decimals gives each segment the step cost_step's rational gcd gives
    (values m / 10**k, sorted and unique per segment as objective_grid hands them over)."""
    from memaudit_solvers.bnb.grid import _decimal_steps, cost_step

    segs = [np.unique([m / 10.0 ** k for m, k in seg]) for seg in segments]
    values = np.concatenate(segs)
    first = np.cumsum([0] + [s.size for s in segs[:-1]])
    fast = _decimal_steps(values, first)
    assert fast is not None
    assert fast.tolist() == [cost_step(s) for s in segs]


def test_decimal_steps_refuse_what_is_no_short_decimal():
    from memaudit_solvers.bnb.grid import _decimal_steps

    assert _decimal_steps(np.array([0.5, 0.1234567891]), np.array([0])) is None
    assert _decimal_steps(np.array([1 / 3]), np.array([0])) is None


def test_lp_keeps_says_whether_the_lp_solution_takes_a_dropped_option():
    """A node branches at once after reduced-cost fixing only when the LP solution takes none of the
    options dropped; a group's 'none' is taken by 1 - its candidates' LP values."""
    from memaudit_solvers.bnb.search import NONE, Search

    # two groups of two candidates each; options per group: 'none', then its candidates
    p = Problem.build([1, 2, 1, 2], [0, 0, 1, 1], [[1, 0], [0.5, 0.5], [0, 1], [0.2, 0.8]], [1.0, 1.0])
    s = Search(p, 3.0, exact_units=np.zeros(2, dtype=bool), use_lp=True, deadline=math.inf, dp_limit=10**6)
    info = s.analyse(np.ones(s.n_opts, dtype=bool), (np.ones(2), None))
    oc = s.opt_cand[info["free_idx"]]
    assert oc.tolist() == [NONE, 0, 1, NONE, 2, 3]
    lp_x = np.array([0.0, 0.6, 0.0, 0.0, 1.0, 0.0])       # group 0 takes 'none' by 0.4
    drop = np.zeros(6, dtype=bool)
    for dropped, keeps in [([2], True), ([5], True), ([3], True), ([1], False), ([0], False), ([4], False)]:
        drop[:] = False
        drop[dropped] = True
        assert s.lp_keeps(info, lp_x, drop) is keeps, dropped
    assert s.lp_keeps(info, None, drop) is False
