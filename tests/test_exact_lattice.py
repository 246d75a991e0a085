"""exact.lattice_budget: the budget rounded down to the costs' grid loses no store and admits none."""

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_solvers.exact import as_fraction, fits_budget, lattice_budget


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(1, 40).map(float), st.sampled_from([0.1, 0.25, 0.3, 1.5, 2.75, 1e-3])),
                min_size=1, max_size=6),
       st.floats(0, 60, allow_nan=False))
def test_every_store_fits_the_lowered_budget_exactly_when_it_fits_the_budget(costs, budget):
    lowered = lattice_budget(costs, budget)
    assert lowered <= budget
    for k in range(len(costs) + 1):
        for store in itertools.combinations(costs, k):
            assert fits_budget(store, lowered) == fits_budget(store, budget)


@given(st.lists(st.integers(1, 50), min_size=1, max_size=8), st.floats(0, 1e4, allow_nan=False))
def test_integer_costs_round_the_budget_down_to_a_multiple_of_their_gcd(costs, budget):
    step = math.gcd(*costs)
    lowered = lattice_budget([float(c) for c in costs], budget)
    assert lowered == math.floor(budget) // step * step
    assert budget - lowered < step


def test_costs_on_no_grid_or_without_cost_keep_the_budget():
    assert lattice_budget([1 / 3, 1.0], 2.5) == 2.5
    assert lattice_budget([], 7.5) == 7.5
    assert lattice_budget([0.0], 7.5) == 7.5


def test_a_step_that_is_not_a_float_rounds_up_to_the_next_float():
    lowered = lattice_budget([0.1], 0.35)              # 3/10 exactly is no float
    assert as_fraction(lowered) >= as_fraction(0.3) and lowered < 0.35
    assert fits_budget([0.1, 0.1, 0.1], lowered) and not fits_budget([0.1] * 4, lowered)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=50), st.integers(-3, 3),
       st.sampled_from([0.0, 1e-9, -1e-9, 0.5, -0.5, 1e-12]))
def test_whole_costs_fit_exactly_as_their_decimals_say(costs, shift, frac):
    """Whole-number costs take the float comparison; it must agree with the exact rule on the decimals,
    also for budgets a hair off the total and totals near the budget."""
    from memaudit_solvers.exact import exact_sum

    budget = float(sum(costs) + shift) + frac
    assert fits_budget(costs, budget) == (exact_sum(costs) <= as_fraction(budget))


def test_whole_costs_at_the_float_limit_take_the_exact_path():
    big = [2.0 ** 52, 2.0 ** 52, 1.0]           # magnitude 2**53 + 1: floats no longer add up exactly
    assert fits_budget(big, 2.0 ** 53) is False
    assert fits_budget([2.0 ** 52, 2.0 ** 52], 2.0 ** 53) is True
