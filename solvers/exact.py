"""Exact rational arithmetic on a problem's numbers: the one place floats become fractions.

**Which rational a float stands for.**  A package states its numbers in decimal (JSON);
the loader turns each into the nearest float.  :func:`as_fraction` maps a float back to
the *shortest decimal that rounds to it* (``repr``), which is the decimal the user wrote
whenever it had at most 17 significant digits.  So ``0.1 + 0.2 <= 0.3`` holds exactly
(as the user means it), while the binary floats do not satisfy it.  Every exact check
(:func:`fits_budget`, the integer budget row of the MILPs) uses this one rule.

**Exact rescaling.**  :func:`power_of_two` picks a power of two that brings a set of
magnitudes near 1; multiplying floats by it is exact (no rounding) away from overflow
and underflow, so a rescaled problem has the same stores, the same feasibility and
values scaled by exactly that factor.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["as_fraction", "exact_sum", "fits_budget", "lattice_budget", "power_of_two", "decimal_grid",
           "MAX_MAGNITUDE_RATIO"]

#: CP-SAT data: largest denominator tried for each number, and largest scaled integer accepted
_MAX_DENOMINATOR = 10**6
_MAX_SCALED = 2**40

#: unit roundoff of float64
_EPS = 2.0**-53

#: largest ratio between the magnitudes of one kind of number (weights, costs) that a float
#: MILP back-end states faithfully next to its absolute tolerances (1e-9 .. 1e-6)
MAX_MAGNITUDE_RATIO = 1e9


def as_fraction(x: float) -> Fraction:
    """The rational a float stands for: its shortest round-tripping decimal.

    Examples
    --------
    >>> as_fraction(0.1), as_fraction(3.333333), as_fraction(2.0)
    (Fraction(1, 10), Fraction(3333333, 1000000), Fraction(2, 1))
    >>> as_fraction(0.1) + as_fraction(0.2) == as_fraction(0.3)
    True
    """
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{x!r} is not a finite number")
    return Fraction(repr(x))


def exact_sum(values) -> Fraction:
    """Exact sum of the decimals the floats stand for (see :func:`as_fraction`).

    Examples
    --------
    >>> exact_sum([0.1, 0.2]) == Fraction(3, 10)
    True
    """
    total = Fraction(0)
    for v in np.asarray(values, dtype=float).reshape(-1).tolist():
        total += as_fraction(v)
    return total


def fits_budget(costs, budget: float) -> bool:
    """True when the costs add up to at most the budget, exactly.

    Whole-number costs (the usual: words) add up exactly in floats while their total stays below
    2**53, and such a total is at most the budget's decimal exactly when it is at most the budget's
    float (rounding is monotone, and a float equal to a whole number has that number as its
    shortest decimal), so they are compared as floats.  Otherwise a float pre-check decides when
    the float sum is farther from the budget than its worst rounding error (``(n + 2) * 2**-53`` of
    the magnitudes involved, which also covers the gap between each float and its decimal); only
    the rare sums in that band are added up in :class:`fractions.Fraction` (a store that spends
    the budget to the word used to: 11.5 s of a 40 s search at 3,000 experiences).

    Examples
    --------
    >>> fits_budget([0.1, 0.2], 0.3), 0.1 + 0.2 <= 0.3
    (True, False)
    >>> fits_budget([4e-10, 4e-10, 4e-10, 4e-10, 4e-10], 1e-9), fits_budget([4e-10, 4e-10], 1e-9)
    (False, True)
    """
    arr = np.asarray(costs, dtype=float).reshape(-1)
    budget = float(budget)
    if arr.size == 0:
        return budget >= 0
    total = float(arr.sum())
    magnitude = float(np.abs(arr).sum())
    if magnitude < 2.0 ** 53 and np.all(arr == np.rint(arr)):
        return total <= budget
    err = (arr.size + 4) * 2 * _EPS * (magnitude + abs(budget))
    if total + err < budget:
        return True
    if total - err > budget:
        return False
    return exact_sum(arr) <= as_fraction(budget)


def lattice_budget(costs, budget: float) -> float:
    """The budget rounded down to the costs' grid: a float ``B' <= budget`` that every store fits
    exactly when it fits ``budget`` (:func:`fits_budget`).

    When every cost is a multiple of a step ``g`` (the decimals the floats stand for, see
    :func:`decimal_grid`), every store costs a multiple of ``g``, so none costs more than
    ``floor(budget / g) * g`` and at most ``budget``: the budget can be lowered to that multiple
    without losing a store.  A knapsack row stated with it has a tighter LP (its relaxation cannot
    spend the remainder).  ``B'`` is that multiple, or the float just above it when it is not a
    float; ``budget`` itself when the costs are on no usable grid.

    Examples
    --------
    >>> lattice_budget([4, 6, 10], 19.95), lattice_budget([0.5, 1.25], 2.9), lattice_budget([1 / 3], 2.0)
    (18.0, 2.75, 2.0)
    """
    budget = float(budget)
    values = np.unique(np.abs(np.asarray(costs, dtype=float).reshape(-1)))
    values = values[values > 0]
    if values.size == 0 or not math.isfinite(budget) or budget < 0:
        return budget
    if np.all(values == np.rint(values)) and values[-1] < 2.0 ** 53 and budget < 2.0 ** 53:
        whole = int(np.gcd.reduce(values.astype(np.int64)))      # integers: no fractions needed
        return float(math.floor(budget) // whole * whole) if whole > 0 else budget
    grid = decimal_grid(values)
    if grid is None:
        return budget
    scale, ints = grid
    step = Fraction(math.gcd(*ints), scale)
    exact = math.floor(as_fraction(budget) / step) * step
    lowered = float(exact)
    if Fraction(lowered) < exact:
        lowered = math.nextafter(lowered, math.inf)
    return min(lowered, budget)


def power_of_two(magnitude: float) -> float:
    """The power of two ``2**-k`` that brings a positive ``magnitude`` into [1, 2); 1.0 for 0.

    Multiplying by it is exact in binary floating point (barring overflow and underflow).

    Examples
    --------
    >>> power_of_two(1e-9) * 1e-9, power_of_two(3.0), power_of_two(0.0)
    (1.073741824, 0.5, 1.0)
    """
    magnitude = abs(float(magnitude))
    if magnitude == 0 or not math.isfinite(magnitude):
        return 1.0
    _, exponent = math.frexp(magnitude)   # magnitude = m * 2**exponent, m in [0.5, 1)
    return math.ldexp(1.0, 1 - exponent)


def decimal_grid(values, max_scaled: int = _MAX_SCALED) -> tuple[int, list[int]] | None:
    """The smallest integer scale ``s`` with ``s * as_fraction(v)`` an integer for every value, and those integers.

    None when the scale or an integer would exceed ``max_scaled`` (the values are then
    not on a usable exact grid).

    Examples
    --------
    >>> decimal_grid([0.1, 0.25, 2.0])
    (20, [2, 5, 40])
    >>> decimal_grid([1 / 3]) is None
    True
    """
    fracs = [as_fraction(v) for v in np.asarray(values, dtype=float).reshape(-1).tolist()]
    scale = 1
    for f in fracs:
        scale = math.lcm(scale, f.denominator)
        if scale > max_scaled:
            return None
    ints = [int(f * scale) for f in fracs]
    if ints and max(abs(i) for i in ints) > max_scaled:
        return None
    return scale, ints


def _fractions(values: np.ndarray, describe, decimals: bool = False) -> dict[float, Fraction]:
    """Each distinct value as a small-integer ratio, or raise :class:`Declined` naming the first that is not.

    With ``decimals`` a value that is no small ratio is taken as its decimal (:func:`as_fraction`);
    the caller then bounds the common scale.
    """
    from .result import Declined   # result imports objective, which imports this module
    out = {}
    uniq, first = np.unique(np.asarray(values, dtype=float), return_index=True)
    for v, i in zip(uniq.tolist(), first.tolist()):
        f = Fraction(v).limit_denominator(_MAX_DENOMINATOR)
        if float(f) != v and decimals:
            f = as_fraction(v)
        if float(f) != v:   # exact: the nearest float of the ratio must be v itself
            raise Declined(f"{describe(i, v)} is not a ratio of small integers; CP-SAT needs data that scale "
                           "exactly to integers — use milp-highs or milp-cbc")
        out[v] = f
    return out


def _lcm_of_denominators(fracs) -> int:
    scale = 1
    for f in fracs:
        scale = math.lcm(scale, f.denominator)
    return scale


def _scaled_ints(values: np.ndarray, as_int, what: str) -> np.ndarray:
    """Map each distinct value through ``as_int`` (exact Python ints) and check the magnitude."""
    from .result import Declined
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    uniq, inverse = np.unique(values, return_inverse=True)
    ints = [as_int(v) for v in uniq.tolist()]
    big = max(abs(i) for i in ints)
    if big > _MAX_SCALED:
        raise Declined(f"{what} scale to integers as large as {big} > 2**40; CP-SAT would risk overflow "
                       "— use milp-highs or milp-cbc")
    return np.array(ints, dtype=np.int64)[inverse.reshape(-1)]


def rescale_factors(problem, budget: float) -> tuple[float, float]:
    """Powers of two ``(cost_scale, value_scale)`` that bring the budget (the smallest cost when the
    budget is 0) and the largest weight into [1, 2).

    Only far-off scales are touched: a factor is 1 when its magnitude already lies in
    ``[2**-4, 2**20]``, where the methods' own float rules are tested.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([4e-10, 4e-10], [0, 1], [[1.0], [1.0]], [1e-9])
    >>> rescale_factors(p, 1e-9), rescale_factors(p, 10.0)
    ((1073741824.0, 1073741824.0), (1.0, 1073741824.0))
    """
    def factor(magnitude):
        return 1.0 if magnitude == 0 or 2.0**-4 <= magnitude <= 2.0**20 else power_of_two(magnitude)
    w_max = float(problem.weights.max()) if problem.n_units else 0.0
    # with a budget of 0 the costs set the scale, so no float slack admits a tiny cost
    c_ref = abs(float(budget)) or (float(problem.costs.min()) if problem.n_candidates else 0.0)
    return factor(c_ref), factor(w_max)


def rescaled(problem, budget: float, cost_scale: float, value_scale: float):
    """The problem with costs times ``cost_scale`` and weights times ``value_scale``, and the budget scaled.

    Both factors must be powers of two; the result is checked to be exact (no overflow,
    no underflow), else :class:`~memaudit_solvers.result.Declined` says the numbers span too many
    orders of magnitude.  Stores keep their indices; F scales by exactly ``value_scale``.
    """
    from .problem import Problem
    from .result import Declined
    if cost_scale == 1.0 and value_scale == 1.0:
        return problem, float(budget)
    costs, weights, b = problem.costs * cost_scale, problem.weights * value_scale, float(budget) * cost_scale
    if not (np.array_equal(costs / cost_scale, problem.costs) and np.array_equal(weights / value_scale, problem.weights)
            and b / cost_scale == float(budget) and np.all(np.isfinite(costs)) and np.all(np.isfinite(weights))):
        raise Declined("the costs or the weights span too many orders of magnitude to be rescaled exactly "
                       "(a factor of two would overflow or underflow)")
    return Problem(costs, problem.groups, problem.coverage, weights, problem.h_slopes, problem.h_intercepts,
                   problem.n_groups, problem.kinds, problem.cost_unit * cost_scale), b
