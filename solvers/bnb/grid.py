"""Exactness helpers of bnb: small-rational reading of floats and the objective's grid step."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..problem import Problem

__all__ = ["objective_grid", "cost_step"]


def _as_fraction(x: float, max_den: int = 10**6) -> Fraction | None:
    """The ratio of small integers (denominator <= max_den) whose nearest float is exactly x, or None.

    0.3 is read as 3/10 and 1/3 as 1/3 (the decimals a user wrote), while a float
    that is merely *close* to such a ratio is not: the match must be exact.
    """
    x = float(x)
    f = Fraction(x).limit_denominator(max_den)
    return f if float(f) == x else None


def _frac_gcd(a: Fraction, b: Fraction) -> Fraction:
    if a == 0:
        return abs(b)
    if b == 0:
        return abs(a)
    den = a.denominator * b.denominator // math.gcd(a.denominator, b.denominator)
    return Fraction(math.gcd(int(a * den), int(b * den)), den)


def _rational_step(values) -> Fraction | None:
    """Largest rational step with every value (read by :func:`_as_fraction`) an integer multiple
    of it: ``Fraction(0)`` for no nonzero value, None when some value is no small ratio or the
    step's denominator passes 10**9."""
    step = Fraction(0)
    for v in values:
        f = _as_fraction(v)
        if f is None:
            return None
        step = _frac_gcd(step, f)
        if step.denominator > 10**9:
            return None
    return step


def cost_step(values) -> float:
    """Largest step with every value an integer multiple of it, or 0 if none is found."""
    values = np.unique(np.asarray(values, dtype=float))
    whole = np.abs(values) < 2.0 ** 53
    if values.size and whole.all() and np.all(values == np.rint(values)):
        # integers (the usual costs): their gcd, as the rational reading below would give it
        step_int = int(np.gcd.reduce(np.abs(values).astype(np.int64)))
        return float(step_int) if step_int > 0 else 0.0
    step = _rational_step(values)
    return float(step) if step is not None and step > 0 else 0.0


#: most decimal places :func:`_decimal_steps` tries (the rational reading allows denominators to 10**6)
_DECIMALS = 6


def _decimal_steps(values: np.ndarray, first: np.ndarray) -> np.ndarray | None:
    """Per segment of ``values`` (segments start at ``first``), the step :func:`cost_step` would give,
    when every value is the float nearest a decimal of at most :data:`_DECIMALS` places; else None.

    ``m / 10**k == v`` (one correctly rounded division) says v is the float nearest ``m / 10**k``,
    the fraction :func:`_as_fraction` reads, and a segment's step is then ``gcd(m) / 10**k``: one
    vector pass instead of a rational gcd per segment (0.7 s over 4,000 units of partial
    coverage; the same steps).
    """
    for k in range(_DECIMALS + 1):
        scale = 10.0 ** k
        m = np.rint(values * scale)
        if np.all(np.abs(m) < 2.0 ** 53) and np.array_equal(m / scale, values):
            return np.gcd.reduceat(np.abs(m).astype(np.int64), first) / scale
    return None


def coverage_values(problem: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Each covered unit's distinct coverage values: ``(units, first, values, decimal)``.

    ``values`` holds them unit by unit (ascending; unit ``units[i]``'s start at ``first[i]``) and
    ``decimal`` is each unit's step of :func:`_decimal_steps` (None when some value is no short
    decimal).  Computed once per problem; :func:`objective_grid` and the tree programme's state gate
    (:func:`memaudit_solvers.bnb.treedp._levels`) read it.
    """
    def distinct():
        csc = problem.coverage_csc
        col = np.repeat(np.arange(problem.n_units), np.diff(csc.indptr))
        pairs = np.unique(np.column_stack([col, csc.data]), axis=0)
        units, first = np.unique(pairs[:, 0].astype(np.int64), return_index=True)
        return units, first, pairs[:, 1], _decimal_steps(pairs[:, 1], first)
    return problem.cached("coverage_values", distinct)


#: the finest grid :func:`objective_grid` reports, as a fraction of the largest F the data allow.  F and the
#: bounds are sums whose round-off stays within some (log2 terms + 4) eps of that size (pairwise sums:
#: about 5e-15 at 100,000 terms), and a prune needs it below half a step: 1e-12 leaves a hundredfold
#: margin.  (1e-10 dropped the grid of 1e-5 of summary_problem(10000, 0), whose size bound is 116,740.)
GRID_FLOOR = 1e-12


def objective_grid(problem: Problem) -> float:
    """A step ``delta > 0`` with every value ``F(X)`` a multiple of it, or 0 if none is found.

    Each unit's coverage values (per column), piece slopes and intercepts and
    weights are read as small rationals (denominators up to 10**6, whose
    nearest float must be the value itself) and multiplied as such; when they are, ``F`` takes
    values on a grid, and an upper bound below
    ``incumbent + delta`` proves the incumbent optimal.  The grid is detected
    from the data, never assumed, and not reported (0) when it is finer than
    :data:`GRID_FLOOR` of the largest F the data allow (the round-off of F's
    floats would then matter).

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> objective_grid(Problem.build([1, 1], [0, 1], [[0.5, 0], [1, 1]], [2.0, 3.0]))  # 2*{0,.5,1} + 3*{0,1}
    1.0
    >>> objective_grid(Problem.build([1], [0], [[0.1234567891]], [1.0]))
    0.0
    >>> objective_grid(Problem.build([1], [0], [[0.001]], [2.504]))  # 2.504 * 0.001 in rationals
    0.002504
    """
    def key():
        if problem.coverage.nnz == 0:
            return 1.0  # F is identically 0
        # per unit, the coverage sums s_r lie on the grid step_r = gcd of column r's values
        units, first, values, decimal = coverage_values(problem)
        n_vals = np.diff(np.append(first, values.size))
        step = np.zeros(problem.n_units)
        read: dict = {}     # float -> the small ratio it is read as (None: none)
        if decimal is not None:
            step[units] = decimal
        else:
            step[units] = values[first]                     # one distinct value: the step is that value
            for r, start, n in zip(units[n_vals > 1], first[n_vals > 1], n_vals[n_vals > 1]):
                exact = _rational_step(values[start:start + n])
                if exact is None or exact == 0:
                    return 0.0
                step[r] = float(exact)
                read[step[r]] = exact
        # every term w_r h_r(s_r) is then a multiple of w_r * gcd_k(slope_rk * step_r, intercept_rk)
        # (units nobody covers contribute 0 and are left out).  The products are taken in
        # rationals: in floats 2.504 * 0.001 is 0.0025039999999999997, no small ratio, and 3-decimal
        # weights on 3-decimal coverage would lose their grid of 1e-6
        covered = np.zeros(problem.n_units, dtype=bool)
        covered[units] = True
        n_pieces = problem.h_slopes.shape[1]
        rows = np.unique(np.column_stack([problem.weights[covered], step[covered], problem.h_slopes[covered],
                                          problem.h_intercepts[covered]]), axis=0)

        def rational(x: float) -> Fraction | None:
            if x not in read:
                read[x] = _as_fraction(x)
            return read[x]

        grid = Fraction(0)
        for row in rows.tolist():
            w, s = rational(row[0]), rational(row[1])
            factors = [rational(v) for v in row[2:]]
            if w is None or s is None or any(f is None for f in factors):
                return 0.0
            for k, f in enumerate(factors):
                grid = _frac_gcd(grid, w * f * s if k < n_pieces else w * f)
            if grid.denominator > 10**9:
                return 0.0
        if grid == 0:
            return 1.0
        # a step near the float round-off of F's size would let the prune of a bound below
        # incumbent + step hinge on the round-off: no grid then (GRID_FLOOR)
        reach = np.abs(problem.coverage).sum(axis=0)
        size = float(np.sum(np.abs(problem.weights) * (np.abs(problem.h_slopes).max(axis=1) * reach
                                                       + np.abs(problem.h_intercepts).max(axis=1))))
        return float(grid) if float(grid) >= GRID_FLOOR * size else 0.0
    return problem.cached("objective_grid", key)
