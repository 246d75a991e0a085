"""Exact integer data: the grid of h (integral y) and CP-SAT's all-integer model."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from ..exact import _MAX_SCALED, _fractions, _lcm_of_denominators, _scaled_ints, as_fraction
from ..result import Declined
from .model import _Model

@dataclass(frozen=True)
class _Grid:
    """The cover rows in integers: ``Y[r] = y_scale * y[r]`` is integral at every optimum.

    ``Y[r] - sum_u coefs * x[u] <= intercepts`` with integer data, so for any
    binary x the largest feasible ``Y[r]`` is an integer: declaring Y integer
    loses no store and lets a solver use the objective's grid to close its gap.
    """

    y_scale: int
    x_part: sp.csr_array     # (n_p, n_x) a[u, r] of each cover row; only its pattern is used
    coefs: np.ndarray        # (nnz,) y_scale * slope * a[u, r], aligned with x_part.indices
    intercepts: np.ndarray   # (n_p,) y_scale * intercept
    y_upper: np.ndarray      # (n_y,) largest value Y[r] can reach


def _grid(model: _Model) -> _Grid:
    """Scale the cover rows exactly to integers, or raise :class:`Declined` saying which data cannot be."""
    cover = model.cover  # (n_y, n_x)
    nz_unit = np.repeat(np.arange(model.n_y), np.diff(cover.indptr))
    fa = _fractions(cover.data, lambda i, v: f"coverage value {v!r} of candidate {model.candidates[cover.indices[i]]} "
                                             f"on unit {model.units[nz_unit[i]]}")

    def piece(i):
        return f"unit {model.units[model.piece_units[i]]} (piece {model.piece_ids[i]})"

    fs = _fractions(model.piece_slopes, lambda i, v: f"h slope {v!r} of {piece(i)}")
    fb = _fractions(model.piece_intercepts, lambda i, v: f"h intercept {v!r} of {piece(i)}")
    finite_cap = np.isfinite(model.y_upper)
    fu = _fractions(model.y_upper[finite_cap], lambda i, v: f"h cap {v!r} of unit {model.units[finite_cap][i]}")

    x_part = sp.csr_array(cover[model.piece_units])
    x_part.sort_indices()
    row_ids = np.repeat(np.arange(x_part.shape[0]), np.diff(x_part.indptr))
    pairs = np.column_stack([model.piece_slopes[row_ids], x_part.data])
    uniq_pairs, pair_inverse = (np.unique(pairs, axis=0, return_inverse=True) if len(pairs)
                                else (np.zeros((0, 2)), np.zeros(0, dtype=np.int64)))
    products = [fs[s] * fa[a] for s, a in uniq_pairs.tolist()]
    y_scale = _lcm_of_denominators(products + list(fb.values()) + list(fu.values()))
    if y_scale > _MAX_SCALED:
        raise Declined(f"the scale needed to make the h values integer is {y_scale} > 2**40; CP-SAT would risk "
                       "overflow — use milp-highs or milp-cbc")
    prod_ints = [int(p * y_scale) for p in products]
    if prod_ints and max(prod_ints) > _MAX_SCALED:
        raise Declined("cover coefficients scale to integers above 2**40 — use milp-highs or milp-cbc")
    coefs = np.array(prod_ints, dtype=np.int64)[pair_inverse.reshape(-1)]
    intercepts = _scaled_ints(model.piece_intercepts, lambda v: int(fb[v] * y_scale), "h intercepts")

    # Y[r] can reach at most min over its pieces of (intercept + sum of its coefficients), and its cap
    row_sums = np.zeros(x_part.shape[0], dtype=np.int64)
    np.add.at(row_sums, row_ids, coefs)
    reach = np.full(model.n_y, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(reach, model.piece_units, intercepts + row_sums)
    caps = _scaled_ints(model.y_upper[finite_cap], lambda v: int(fu[v] * y_scale), "h caps")
    y_upper = reach.copy()
    y_upper[finite_cap] = np.minimum(reach[finite_cap], caps)
    if y_upper.size and int(y_upper.max()) > _MAX_SCALED:
        raise Declined("h values scale to integers above 2**40 — use milp-highs or milp-cbc")
    return _Grid(y_scale=y_scale, x_part=x_part, coefs=coefs, intercepts=intercepts, y_upper=y_upper)


#: largest ``y_scale`` a float back-end gets integral y with: beyond it the grid step is too fine to
#: help close a gap, and integer columns of that range with near-equal coefficients (coverage 1/3
#: next to 0.333333 gives y_scale 3,000,000) made CBC report a feasible model infeasible
_MAX_GRID_SCALE = 10**4


#: most integer y columns a float back-end gets: on a package where one candidate covers every unit,
#: HiGHS proved OPT in 3.7 s with integral y against 9.8 s without at 1,000 units, but had no proof
#: after 60 s with it against 14.6 s without at 4,000 units (benchmarks in docs/reliability-exactness.md)
_MAX_INTEGRAL_Y = 2000


def _try_grid(model: _Model, wanted: bool) -> _Grid | None:
    """The integer cover rows when wanted and the data allow them on a coarse grid, else None (y continuous)."""
    if not wanted or model.n_y > _MAX_INTEGRAL_Y:
        return None
    try:
        grid = _grid(model)
    except Declined:
        return None
    return grid if grid.y_scale <= _MAX_GRID_SCALE else None


@dataclass(frozen=True)
class _Scaled:
    """All-integer data for CP-SAT: F = objective . Y / value_scale."""

    grid: _Grid
    costs: np.ndarray        # (n_x,) cost_scale * c (zeros when there is no budget row)
    budget: int              # floor(cost_scale * B), exactly (see _cost_grid)
    objective: np.ndarray    # (n_y,) value_scale * w / y_scale
    cost_scale: Fraction
    value_scale: Fraction    # F = objective . Y / value_scale


def _common_unit(fracs) -> Fraction:
    """The factor that maps positive fractions to coprime integers: lcm of denominators / gcd of numerators."""
    fracs = list(fracs)
    lcm = _lcm_of_denominators(fracs)
    return Fraction(lcm, math.gcd(*(int(f * lcm) for f in fracs)) or 1)


def _cost_grid(model: _Model) -> tuple[Fraction, np.ndarray, int]:
    """Costs and budget in integers, exact on the decimals they stand for (:func:`memaudit_solvers.exact.as_fraction`).

    Returns ``(cost_scale, costs, budget)`` with ``budget = floor(cost_scale * B)``; ``cost_scale`` is
    the smallest factor making every cost a coprime integer (only the costs' common unit matters).  Costs on a short
    decimal grid are stated as those decimals: a store fits the integer row exactly when it fits the
    budget.  Otherwise costs that are small ratios (thirds: 0.6666666666666666 as 2/3) are stated as
    the ratios when that loses no store: the ratio and the decimal sums of any store differ by less
    than ``delta`` (the floats' rounding), so when no grid step ``k / cost_scale`` lies in
    ``(B, B + delta]`` every store that fits on the decimals fits the integer row; a store the row
    admits but the decimals do not is caught by the exact check of the result.  Else decline.
    """
    costs = model.costs / model.decimal_unit        # exact: a power of two; the package's own numbers
    budget = as_fraction(model.budget / model.decimal_unit)
    uniq, first = np.unique(costs, return_index=True)
    fracs = {v: as_fraction(v) for v in uniq.tolist()}
    scale = _common_unit(fracs.values())
    if max(fracs.values()) * scale > _MAX_SCALED:
        fracs = _fractions(costs, lambda i, v: f"cost {v!r} of candidate {model.candidates[i]}")
        scale = _common_unit(fracs.values())
        if scale.numerator > _MAX_SCALED:
            raise Declined(f"the costs need a scale of {scale} > 2**40 to be integers; CP-SAT would risk "
                           "overflow — use milp-highs or milp-cbc")
        delta = Fraction(len(costs) + 2) * Fraction(2) ** -52 * (as_fraction(float(np.abs(costs).sum())) + budget)
        next_step = (math.floor(budget * scale) + 1) / scale
        if next_step <= budget + delta:
            v = float(uniq[0])
            raise Declined(f"cost {v!r} of candidate {model.candidates[int(first[0])]} is not a short decimal, and "
                           f"the budget {float(budget)!r} lies within round-off of a step of the costs' grid {1 / scale}: "
                           "CP-SAT cannot state the budget row exactly — use milp-highs or milp-cbc")
    ints = _scaled_ints(costs, lambda v: int(fracs[v] * scale), "costs")
    return scale, ints, min(math.floor(budget * scale), int(ints.sum()))


def _scale_for_cpsat(model: _Model) -> _Scaled:
    """Scale the whole reduced model exactly to integers, or raise :class:`Declined`."""
    grid = _grid(model)
    weights = model.weights / model.value_scale     # the problem's own weights, exactly
    # weights only need a common scale: short decimals such as 1e-9 are exact too
    fw = _fractions(weights, lambda i, v: f"weight {v!r} of unit {model.units[i]}", decimals=True)
    # the objective only needs to be proportional to F: divide by the gcd of the w / y_scale
    ratios = [f / grid.y_scale for f in fw.values()]
    value_scale = Fraction(_lcm_of_denominators(ratios), math.gcd(*(r.numerator for r in ratios)) or 1)
    objective = _scaled_ints(weights, lambda v: int(fw[v] * value_scale / grid.y_scale), "weights")
    if float(np.dot(objective.astype(float), grid.y_upper.astype(float))) > 2.0**53:
        raise Declined("the scaled objective can exceed 2**53 — use milp-highs or milp-cbc")
    # costs enter only through the budget row
    if model.budget_row:
        cost_scale, costs, budget_int = _cost_grid(model)
    else:
        cost_scale, costs, budget_int = Fraction(1), np.zeros(model.n_x, dtype=np.int64), 0
    return _Scaled(grid=grid, costs=costs, budget=budget_int, objective=objective, cost_scale=cost_scale,
                   value_scale=value_scale)


def objective_step(problem, budget: float) -> Fraction | None:
    """The grid of F: a step ``g`` with F(X) a multiple of ``g`` for every store X, or None.

    With ``y_scale * h_r`` an integer at every store (:func:`_grid`) and the weights short
    decimals, ``F = sum_r (w_r / y_scale) Y_r`` is a multiple of ``gcd(numerators) / lcm(denominators)``
    of the ``w_r / y_scale``.  So a bound below ``value + g`` proves a store of that value optimal:
    no store's F lies strictly in between.  None when the data have no such grid.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> objective_step(p, 4)
    Fraction(1, 2)
    """
    from .model import _reduced_model

    model = _reduced_model(problem, budget, fold_private=False)
    if model.n_y == 0:
        return None
    try:
        grid = _grid(model)
        weights = model.weights / model.value_scale     # the problem's own weights, exactly
        fw = _fractions(weights, lambda i, v: f"weight {v!r}", decimals=True)
    except Declined:
        return None
    ratios = [f / grid.y_scale for f in fw.values()]
    return Fraction(math.gcd(*(r.numerator for r in ratios)) or 1, _lcm_of_denominators(ratios))


#: with y continuous, a back-end stops once its bound is within this fraction of one step of the objective's
#: grid above its store (F is a multiple of the step, so the store is then optimal; the rest of the step
#: is a margin for the float bound)
GRID_GAP = 0.99


def _grid_gap(problem, budget: float, model: _Model, grid: _Grid | None, stats: dict) -> tuple[Fraction | None, float]:
    """``(step, abs_gap)``: the objective's grid step when y is continuous (None when y is integral or
    F has no grid) and the absolute gap in the model's objective units a back-end may stop at
    (``GRID_GAP`` of one step; 0 without a step).  Records ``grid_step`` and ``gap_abs`` in ``stats``."""
    step = objective_step(problem, budget) if grid is None else None
    if step is None:
        return None, 0.0
    abs_gap = GRID_GAP * float(step) * model.value_scale
    stats.update(grid_step=float(step), gap_abs=GRID_GAP * float(step))
    return step, abs_gap


def _grid_message(backend: str, bound: float, step: Fraction) -> str:
    return (f"{backend}'s bound {bound:.12g} is less than one step of the objective's grid ({float(step):g}) "
            "above its store's value: no store's F lies in between, so the store is optimal")
