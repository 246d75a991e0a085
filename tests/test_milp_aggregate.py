"""The MILP's merge of interchangeable groups into count columns (HiGHS at scale), against a brute-force oracle."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from memaudit_solvers.bruteforce import brute_force
from memaudit_solvers.milp import BACKENDS
from memaudit_solvers.milp import model as model_module
from memaudit_solvers.milp.model import _reduced_model
from memaudit_solvers.milp.presolve import group_types
from memaudit_solvers.objective import evaluate, infeasibility, total_cost
from memaudit_solvers.problem import Problem, breakpoint_pieces


def repeated_problem(seed, pieces="min1"):
    """A small problem built from a few group templates, each repeated with its own private units,
    plus units shared between groups (their groups are coupled and must stay binary)."""
    rng = np.random.default_rng(seed)
    costs, groups, rows, weights = [], [], [], []
    n_groups, n_private = 0, 0
    private_rows = []                                   # (group, candidate row, {private unit: amount})
    for _ in range(int(rng.integers(1, 4))):            # templates
        n_cand, n_units = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        t_costs = rng.integers(1, 6, n_cand).astype(float)
        t_cov = np.where(rng.random((n_cand, n_units)) < 0.7, rng.choice([0.5, 1.0, 1.5], (n_cand, n_units)), 0.0)
        t_cov[:, 0] = np.maximum(t_cov[:, 0], 0.5)       # every candidate covers something
        t_w = rng.choice([1.0, 2.0, 3.0], n_units)
        for _ in range(min(int(rng.integers(1, 4)), 7 - n_groups)):   # copies, each with its own units
            for c in range(n_cand):
                costs.append(t_costs[c])
                groups.append(n_groups)
                private_rows.append({n_private + r: t_cov[c, r] for r in range(n_units) if t_cov[c, r] > 0})
            weights.extend(t_w.tolist())
            n_private += n_units
            n_groups += 1
    n_shared = int(rng.integers(0, 3)) if len(costs) >= 2 else 0
    cov = np.zeros((len(costs), n_private + n_shared))
    for i, row in enumerate(private_rows):
        for r, a in row.items():
            cov[i, r] = a
    for s in range(n_shared):                           # a shared unit covered by candidates of two groups
        for i in rng.choice(len(costs), 2, replace=False):
            cov[i, n_private + s] = 1.0
    weights.extend(rng.choice([1.0, 2.0], n_shared).tolist())
    n_units = n_private + n_shared
    kw = {}
    if pieces == "pwl":
        s3, b3 = breakpoint_pieces([(1.0, 1.0), (2.0, 1.5)])
        kw = {"h_slopes": np.tile(s3.reshape(1, -1), (n_units, 1)), "h_intercepts": np.tile(b3.reshape(1, -1), (n_units, 1))}
    return Problem.build(np.array(costs), np.array(groups), cov, np.array(weights), n_groups=n_groups, **kw)


@pytest.fixture
def at_scale(monkeypatch):
    """Every model counts as large (``SCALE_COLUMNS`` = 0): the wide fold, and the merge for HiGHS."""
    monkeypatch.setattr(model_module, "SCALE_COLUMNS", 0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), frac=st.sampled_from([0.15, 0.3, 0.5, 0.8, 1.0]),
       pieces=st.sampled_from(["min1", "pwl"]))
def test_aggregated_model_gives_the_brute_force_optimum(at_scale, seed, frac, pieces):
    p = repeated_problem(seed, pieces)
    budget = float(int(frac * p.costs.sum()))
    opt = brute_force(p, budget).value
    r = BACKENDS["milp-highs"](p, budget)
    assert r.status == "optimal" and r.value == pytest.approx(opt, rel=1e-9, abs=1e-12)
    # the decoded store is feasible and worth what HiGHS reported for its counts
    assert not infeasibility(p, r.chosen, budget)
    assert r.value == evaluate(p, r.chosen)
    if "objective" in r.stats:
        assert r.stats["objective"] / r.stats["value_scale"] == pytest.approx(r.value, rel=1e-9, abs=1e-12)
    if "aggregated" in r.stats:                          # the root ran first, without presolve
        assert r.stats["root_without_presolve"] in ("Optimal", "Solution limit reached")
    hinted = BACKENDS["milp-highs"](p, budget, hint=brute_force(p, budget).chosen)
    assert hinted.status == "optimal" and hinted.value == pytest.approx(opt, rel=1e-9, abs=1e-12)


def test_identical_private_groups_merge_into_counts(at_scale):
    # three copies of one group (costs 2 and 3, private units worth 1 and 2), one other group
    p = Problem.build([2.0, 3.0, 2.0, 3.0, 2.0, 3.0, 4.0], [0, 0, 1, 1, 2, 2, 3], np.array([
        [1, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0, 0], [0, 0, 0, 1, 0, 0, 0],
        [0, 0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 0, 1]], dtype=float),
        [1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 5.0])
    model = _reduced_model(p, 8.0, aggregate=True)
    assert _reduced_model(p, 8.0).n_x == 7 and not _reduced_model(p, 8.0).aggregated
    assert model.aggregated and model.n_x == 3
    assert model.x_upper.tolist() == [1.0, 3.0, 3.0]
    assert model.column_names() == ["x_6", "count_0", "count_1"]
    assert model.row_names() == ["budget", "one_per_group_of_type_0"]
    a, upper = model.matrix()
    assert upper.tolist() == [model.budget, 3.0] and a.toarray()[1].tolist() == [0.0, 1.0, 1.0]
    # counts decode to a store: option 0 to the first group of the type, option 1 to the next two
    store = model.store(np.array([1.0, 1.0, 2.0]))
    assert store.tolist() == [0, 3, 5, 6]
    assert model.columns_at(store).tolist() == [1.0, 1.0, 2.0]
    r = BACKENDS["milp-highs"](p, 8.0)
    assert r.stats["aggregated"] == {"n_types": 1, "n_groups_merged": 3, "n_count_columns": 2, "n_binary_columns": 1}
    assert r.value == brute_force(p, 8.0).value == 7.0


def test_counts_beyond_a_type_are_a_back_end_failure(at_scale):
    from memaudit_solvers.result import SolverError
    p = Problem.build([2.0, 3.0, 2.0, 3.0], [0, 0, 1, 1], np.eye(4), [1.0, 2.0, 1.0, 2.0])
    model = _reduced_model(p, 10.0, aggregate=True)
    with pytest.raises(SolverError, match="exceed the groups of a type"):
        model.store(np.array([2.0, 1.0]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), frac=st.sampled_from([0.3, 0.6, 1.0]), pieces=st.sampled_from(["min1", "pwl"]))
def test_a_hint_round_trips_through_the_counts(at_scale, seed, frac, pieces):
    p = repeated_problem(seed, pieces)
    budget = float(int(frac * p.costs.sum()))
    model = _reduced_model(p, budget, aggregate=True)
    store = brute_force(p, budget).chosen
    swap = np.isin(model.replaced, store)              # dominated choices go to their kept dominator
    x = model.columns_at(np.concatenate([store, model.replacement[swap]]))
    back = model.store(x)
    assert model.columns_at(back).tolist() == x.tolist()
    assert not infeasibility(p, back, budget)
    assert total_cost(p, back) <= total_cost(p, store)
    assert evaluate(p, back) >= evaluate(p, store) - 1e-12 * max(1.0, evaluate(p, store))
    # and the x part of the hint's columns is those counts
    cols = model_module._hint_columns(p, model, None, store, {})
    assert cols[:model.n_x].tolist() == x.tolist()


def test_a_coupled_group_is_never_merged(at_scale):
    # groups 0 and 1 are identical but share unit 2; groups 2 and 3 are the same template, private
    cov = np.zeros((8, 7))
    cov[0, 0] = cov[1, 0] = cov[2, 1] = cov[3, 1] = 1.0
    cov[0, 2] = cov[2, 2] = 1.0                         # unit 2 is covered by groups 0 and 1
    cov[4, 3] = cov[5, 3] = cov[6, 4] = cov[7, 4] = 1.0
    cov[5, 5] = cov[7, 6] = 1.0
    p = Problem.build([2.0, 1.0, 2.0, 1.0, 1.0, 2.0, 1.0, 2.0], [0, 0, 1, 1, 2, 2, 3, 3], cov,
                      [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    model = _reduced_model(p, 4.0, aggregate=True)
    binary = model.x_upper == 1
    assert sorted(model.candidates[binary].tolist()) == [0, 1, 2, 3]
    assert model.x_upper[~binary].tolist() == [2.0, 2.0]
    for r in (BACKENDS["milp-highs"](p, 4.0), BACKENDS["milp-highs"](p, 4.0, hint=[0, 5])):
        assert r.status == "optimal" and r.value == brute_force(p, 4.0).value


def test_group_types_compare_the_floats_exactly():
    v = 0.1 + 0.2                                       # 0.30000000000000004, not 0.3
    type_of, _, n_of_type = group_types(np.array([1.0, 1.0, 1.0]), np.array([0.3, v, 0.3]), np.array([0, 1, 2]))
    assert type_of[0] == type_of[2] != type_of[1] and sorted(n_of_type.tolist()) == [1, 2]


def test_other_back_ends_keep_the_binary_model(at_scale):
    p = repeated_problem(3)
    assert not _reduced_model(p, 10.0).aggregated      # aggregate defaults to False: SCIP, CBC, CP-SAT
    for name in ("milp-cbc", "milp-scip"):
        if name in BACKENDS:
            try:
                r = BACKENDS[name](p, 10.0)
            except Exception as err:                     # an optional back-end may be absent
                pytest.skip(str(err))
            assert "aggregated" not in r.stats and r.value == brute_force(p, 10.0).value


def test_units_of_a_coupled_group_keep_their_y_when_aggregating(at_scale):
    # group 0 (candidates 0, 1) covers unit 0 alone and shares unit 1 with group 1; group 2 is private
    cov = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    p = Problem.build([2.0, 1.0, 1.0, 1.0], [0, 0, 1, 2], cov, [1.0, 2.0, 3.0])
    assert _reduced_model(p, 3.0).units.tolist() == [1]               # the binary model folds unit 0
    assert _reduced_model(p, 3.0, aggregate=True).units.tolist() == [0, 1]
    assert BACKENDS["milp-highs"](p, 3.0).value == brute_force(p, 3.0).value
