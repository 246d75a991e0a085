"""random_problem: the vectorised generator draws exactly the problems of the first, pure-Python one."""

import itertools

import numpy as np
import pytest

from _random_problem_reference import reference_random_problem
from memaudit_solvers.random_problems import random_problem


def assert_same_problem(new, old):
    assert new.n_groups == old.n_groups
    assert new.costs.dtype == old.costs.dtype and np.array_equal(new.costs, old.costs)
    assert new.groups.dtype == old.groups.dtype and np.array_equal(new.groups, old.groups)
    assert np.array_equal(new.weights, old.weights)
    assert new.coverage.shape == old.coverage.shape
    for part in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(new.coverage, part), getattr(old.coverage, part)), part
    assert np.array_equal(new.h_slopes, old.h_slopes) and np.array_equal(new.h_intercepts, old.h_intercepts)
    assert new.kinds == old.kinds


#: every (restate, update, coverage_values)
SETTINGS = list(itertools.product((0.0, 0.15, 0.8, 1.0), (0.0, 0.5, 1.0), ((0.5, 1.0), (1.0,), (0.0, 0.25, 2.0))))


@pytest.mark.parametrize("restate, update, coverage_values", SETTINGS)
def test_same_problem_as_the_reference(restate, update, coverage_values):
    kwargs = dict(restate=restate, update=update, coverage_values=coverage_values)
    for n in (0, 1, 2, 5, 40, 213):
        seed = (7 * n + int(100 * restate) + int(10 * update) + len(coverage_values)) % 2027
        assert_same_problem(random_problem(n, seed, **kwargs), reference_random_problem(n, seed, **kwargs))


@pytest.mark.parametrize("seed", range(10))
def test_same_problem_as_the_reference_over_seeds(seed):
    for n in (150, 301):
        assert_same_problem(random_problem(n, seed), reference_random_problem(n, seed))


@pytest.mark.parametrize("n, seed, restate", [(1600, 0, 0.15), (3000, 2, 0.8), (2500, 11, 0.5)])
def test_same_problem_as_the_reference_at_benchmark_sizes(n, seed, restate):
    """Long streams: many values to restate (the draw's range grows) and every kind of experience."""
    assert_same_problem(random_problem(n, seed, restate=restate), reference_random_problem(n, seed, restate=restate))


def test_the_default_family_has_every_kind_and_shared_units():
    p = random_problem(400, 3)
    assert set(p.kinds) == {"raw", "fact", "update", "tombstone", "summary"}
    per_unit = np.bincount(p.coverage.tocoo().col, minlength=p.n_units)
    assert per_unit.min() >= 1
    assert per_unit.max() > 4          # a restated value is covered from several experiences


def test_empty_coverage_values_rejected_as_before():
    with pytest.raises(ValueError):
        reference_random_problem(3, 0, coverage_values=())
    with pytest.raises(ValueError, match="coverage_values must not be empty"):
        random_problem(3, 0, coverage_values=())
    assert_same_problem(random_problem(0, 0, coverage_values=()), reference_random_problem(0, 0, coverage_values=()))
