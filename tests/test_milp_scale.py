"""The MILP model's own presolve and HiGHS's options at scale, against a brute-force oracle."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st

from memaudit_solvers.bruteforce import brute_force
from memaudit_solvers.milp import BACKENDS, installed_backends
from memaudit_solvers.milp import model as model_module
from memaudit_solvers.milp.model import _reduced_model, _single_group_units
from memaudit_solvers.problem import Problem, breakpoint_pieces
from memaudit_solvers.random_problems import random_problem

FLOAT_BACKENDS = [m for m in ("milp-highs", "milp-scip", "milp-cbc") if m in installed_backends()]


def grouped_problem(seed):
    """A small problem where many units are covered inside one group only (some with pwl h)."""
    rng = np.random.default_rng(seed)
    n_groups = int(rng.integers(2, 5))
    groups = np.sort(np.concatenate([np.arange(n_groups), rng.integers(0, n_groups, int(rng.integers(0, 6)))]))
    n_cand, n_units = groups.size, int(rng.integers(2, 8))
    owner = rng.integers(-1, n_groups, n_units)         # -1: a unit any group may cover
    cov = np.where(rng.random((n_cand, n_units)) < 0.5, rng.choice([0.5, 1.0, 1.5], (n_cand, n_units)), 0.0)
    cov[(owner[None, :] >= 0) & (groups[:, None] != owner[None, :])] = 0.0
    s3, b3 = breakpoint_pieces([(1.0, 1.0), (2.0, 1.5)])
    slopes = np.tile(s3.reshape(1, -1), (n_units, 1))
    intercepts = np.tile(b3.reshape(1, -1), (n_units, 1))
    plain = rng.random(n_units) < 0.5                   # min(1, z) on about half the units
    slopes[plain], intercepts[plain] = [1.0, 0.0, 0.0], [0.0, 1.0, 1.0]
    weights = rng.choice([1.0, 2.0, 3.0], n_units)
    return Problem.build(rng.integers(1, 6, n_cand).astype(float), groups, cov, weights,
                         h_slopes=slopes, h_intercepts=intercepts, n_groups=n_groups)


def test_single_group_units_are_found():
    # units (rows) by candidates (columns); candidates 0, 1 in group 0, candidate 2 in group 1
    cover = sp.csr_array(np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]))
    assert _single_group_units(cover, np.array([0, 0, 1])).tolist() == [True, False, True, True]


@pytest.fixture
def at_scale(monkeypatch):
    """Every model counts as large (``SCALE_COLUMNS`` = 0)."""
    monkeypatch.setattr(model_module, "SCALE_COLUMNS", 0)


def test_units_of_one_group_fold_into_its_candidates(at_scale):
    # unit 0 is covered by candidates 0 and 1 (group 0 only), unit 1 by groups 0 and 1
    p = Problem.build([2.0, 1.5, 1.0], [0, 0, 1], [[1.0, 0.5], [0.5, 0.0], [0.0, 1.0]], [2.0, 3.0])
    model = _reduced_model(p, 10.0)
    assert model.units.tolist() == [1]
    assert (model.x_values / model.value_scale).tolist() == [2.0, 1.0, 0.0]
    assert _reduced_model(p, 10.0, fold_private=False).units.tolist() == [0, 1]
    model_module.SCALE_COLUMNS = 10**9            # below scale only a unit one candidate covers folds
    assert _reduced_model(p, 10.0).units.tolist() == [0, 1]


@pytest.mark.parametrize("method", FLOAT_BACKENDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), frac=st.sampled_from([0.2, 0.45, 0.7, 1.0]))
def test_folded_model_keeps_opt(at_scale, method, seed, frac):
    p = grouped_problem(seed)
    budget = float(int(frac * p.costs.sum()))
    opt = brute_force(p, budget).value
    r = BACKENDS[method](p, budget)
    assert r.status == "optimal" and r.value == pytest.approx(opt, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("hinted", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_scale_options_keep_opt(at_scale, seed, hinted):
    """Every model counts as large: no presolve (unless groups merged), the IPM root, heuristics off with a hint; OPT unchanged."""
    p = random_problem(6, seed, restate=0.5)
    for frac in (0.1, 0.25, 0.5):
        budget = frac * p.stream_cost()
        ref = brute_force(p, budget)
        r = BACKENDS["milp-highs"](p, budget, hint=ref.chosen if hinted else None)
        assert r.status == "optimal" and r.value == pytest.approx(ref.value, rel=1e-12)
        if r.stats.get("backend_status") != "not run: empty model":
            # presolve stays on for a model whose interchangeable groups merged into counts
            assert ("presolve" in r.stats["scale_options"]) != ("aggregated" in r.stats)
            assert ("mip_heuristic_effort" in r.stats["scale_options"]) == hinted
            assert not r.stats["integral_y"]       # at scale y stays continuous


def test_no_scale_options_on_small_models():
    p = random_problem(20, 0)
    r = BACKENDS["milp-highs"](p, 0.2 * p.stream_cost())
    assert r.stats["scale_options"] == {} and r.stats["integral_y"]
