"""The objective F and its checkers: the only place coverage is added up."""

from __future__ import annotations

import numpy as np

from .exact import fits_budget
from .problem import Problem

__all__ = ["as_indices", "coverage_sums", "unit_values", "sums_value", "evaluate", "total_cost",
           "is_feasible", "infeasibility", "costs_fit", "budget_slack", "marginal_gains", "standalone_values", "h_values", "h_inf",
           "rows_entries", "SATURATION_RTOL"]

#: most (entry, piece) pairs :func:`h_values` holds at once (8 bytes each, two temporaries)
_H_BLOCK = 1 << 21

#: relative slack of the search-time knapsack check (:func:`budget_slack`); the final check
#: (:func:`infeasibility`) is exact and has no tolerance
COST_RTOL = 1e-9

#: a unit is saturated when ``h_r(s_r) >= (1 - SATURATION_RTOL) * h_r(inf)`` (:meth:`Coverage.saturated`)
SATURATION_RTOL = 1e-9


def as_indices(problem: Problem, chosen) -> np.ndarray:
    """Sorted int64 candidate indices from an index list or a boolean mask."""
    arr = np.asarray(chosen)
    if arr.dtype == bool:
        if arr.shape != (problem.n_candidates,):
            raise ValueError(f"a boolean selection needs shape ({problem.n_candidates},); got {arr.shape}")
        return np.flatnonzero(arr).astype(np.int64)
    arr = arr.reshape(-1)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"candidate indices must be integers; got dtype {arr.dtype}")
    return np.sort(arr.astype(np.int64))


def h_values(problem: Problem, units: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``h_r(z)`` for paired arrays of unit indices and arguments.

    ``units`` has shape (E,); ``z`` has shape (E,), or (T, E) for T sets of arguments of the same
    units (the result has the shape of ``z``).  A 1-D call is evaluated in blocks of at most
    ``_H_BLOCK`` (entry, piece) pairs, so memory stays linear in the number of entries however
    many pieces an h has.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([1.0], [0], [[1.0, 1.0]], [1.0, 1.0])
    >>> h_values(p, np.array([0, 1, 0]), np.array([0.5, 2.0, 1.0])).tolist()
    [0.5, 1.0, 1.0]
    >>> h_values(p, np.array([0, 1]), np.array([[0.5, 2.0], [3.0, 0.0]])).tolist()
    [[0.5, 1.0], [1.0, 0.0]]
    """
    units = np.asarray(units)
    z = np.asarray(z, dtype=float)
    if z.ndim == 2:
        return _envelope(problem.h_slopes[units], problem.h_intercepts[units], z)
    n_pieces = problem.h_slopes.shape[1] if problem.h_slopes.ndim == 2 else 1
    step = max(1, _H_BLOCK // max(1, n_pieces))
    if units.shape[0] <= step:
        return _envelope(problem.h_slopes[units], problem.h_intercepts[units], z)
    out = np.empty(units.shape[0])
    for start in range(0, units.shape[0], step):
        u = units[start:start + step]
        out[start:start + step] = _envelope(problem.h_slopes[u], problem.h_intercepts[u], z[start:start + step])
    return out


def _envelope(slopes: np.ndarray, intercepts: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``min_k (slopes[e, k] * z[..., e] + intercepts[e, k])``: the one formula of h, given each entry's pieces (E, K)."""
    return np.min(slopes * z[..., None] + intercepts, axis=-1)


def h_inf(problem: Problem) -> np.ndarray:
    """``h_r(inf)``: the value each unit's h saturates at, shape (n_units,); ``inf`` where h never flattens.

    The smallest intercept of the flat (slope 0) pieces: 1 for the default ``min(1, z)``, ``cap``
    for ``min(cap, z)``, the last breakpoint's value for a breakpoint list.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem, min_cap_pieces
    >>> s, b = min_cap_pieces([1.0, 2.5])
    >>> h_inf(Problem.build([1.0], [0], [[1.0, 1.0]], [1.0, 1.0], h_slopes=s, h_intercepts=b)).tolist()
    [1.0, 2.5]
    """
    def compute():
        flat = np.where(problem.h_slopes == 0, problem.h_intercepts, np.inf)
        return flat.min(axis=1) if problem.n_units else np.zeros(0)
    return problem.cached("h_inf", compute)


def coverage_sums(problem: Problem, chosen) -> np.ndarray:
    """``s[r] = sum_{u in chosen} a[u, r]``, shape (n_units,)."""
    idx = as_indices(problem, chosen)
    cov = problem.coverage
    # the chosen rows' entries added up per unit, in row order as the sparse product would (a store is
    # small: this skips building the transpose, which dominated on bnb's hot path)
    _, pos = rows_entries(cov.indptr, idx)
    sums = np.bincount(cov.indices[pos], weights=cov.data[pos], minlength=problem.n_units)
    return sums.astype(float, copy=False)     # (integers when nothing is chosen)


def unit_values(problem: Problem, sums: np.ndarray) -> np.ndarray:
    """``w[r] * h_r(s[r])`` for every unit, shape (n_units,)."""
    units = np.arange(problem.n_units)
    return problem.weights * h_values(problem, units, np.asarray(sums, dtype=float))


def sums_value(problem: Problem, sums: np.ndarray) -> float:
    """``F`` of a store given its coverage sums: ``sum_r w[r] * h_r(s[r])``, the one place F is summed.

    :func:`evaluate` and the coverage states (:class:`Coverage`, :class:`Coverages`) all end here.
    """
    return float(unit_values(problem, sums).sum())


def evaluate(problem: Problem, chosen) -> float:
    """``F(chosen)``: the objective value of a set of candidates.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> evaluate(p, [1]), evaluate(p, [0, 2]), evaluate(p, [])
    (2.0, 2.0, 0.0)
    """
    return sums_value(problem, coverage_sums(problem, chosen))


def total_cost(problem: Problem, chosen) -> float:
    """Sum of the costs of the chosen candidates."""
    return float(problem.costs[as_indices(problem, chosen)].sum())


def budget_slack(budget: float) -> float:
    """Float slack for a search-time budget check, relative to the budget's own scale.

    ``cost <= budget + budget_slack(budget)`` is the one float rule every method uses while
    it searches; it is relative, so it means the same at every scale (no absolute floor
    below 1).  It is lenient on purpose (a float sum of costs that is exactly at the budget
    may round above it); the store a method returns is then judged by the exact
    :func:`infeasibility`, so a store inside the slack but over the budget is never
    called feasible.

    Examples
    --------
    >>> budget_slack(2.0), budget_slack(1e-9) < 1e-17, budget_slack(0.0)
    (2e-09, True, 0.0)
    """
    return COST_RTOL * abs(float(budget))


def infeasibility(problem: Problem, chosen, budget: float) -> str:
    """Why ``chosen`` is not a feasible store, or ``""`` when it is.

    The budget is checked exactly, on the decimals the costs and the budget stand for
    (:func:`memaudit_solvers.exact.fits_budget`): no tolerance, at any scale.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([4e-10] * 5, [0, 1, 2, 3, 4], [[1.0]] * 5, [1.0])
    >>> infeasibility(p, [0, 1], 1e-9), infeasibility(p, [0, 1, 2, 3, 4], 1e-9)
    ('', 'cost 2e-09 exceeds the budget 1e-09')
    """
    idx = as_indices(problem, chosen)
    if idx.size and (idx[0] < 0 or idx[-1] >= problem.n_candidates):
        return f"candidate index out of range [0, {problem.n_candidates})"
    if np.any(np.diff(idx) == 0):
        return "a candidate is chosen twice"
    g = problem.groups[idx]
    if np.unique(g).size != g.size:
        dup = int(np.flatnonzero(np.bincount(g) > 1)[0])
        return f"group {dup} has more than one chosen candidate"
    costs = problem.costs[idx]
    if not costs_fit(problem, costs, budget):
        return f"cost {_num(float(costs.sum()))} exceeds the budget {_num(float(budget))}"
    return ""


def costs_fit(problem: Problem, costs, budget: float) -> bool:
    """The exact budget rule for some of ``problem``'s costs: on the decimals the package states.

    A problem rescaled by a power of two (:func:`memaudit_solvers.exact.rescaled`, ``cost_unit``)
    has floats whose shortest decimals are not the package's scaled decimals, so the unit is divided
    out first (exactly) and :func:`memaudit_solvers.exact.fits_budget` reads the package's numbers.
    Every exact budget check of a store goes through here.

    Examples
    --------
    >>> from memaudit_solvers.exact import rescaled
    >>> p = Problem.build([1e6, 8e6], [0, 1], [[1.0], [1.0]], [1.0])
    >>> q, b = rescaled(p, 9e6, 2.0 ** -23, 1.0)
    >>> costs_fit(q, q.costs, b), costs_fit(p, p.costs, 9e6)
    (True, True)
    """
    unit = problem.cost_unit      # a power of two: dividing it out is exact
    costs = np.asarray(costs, dtype=float)
    return fits_budget(costs, budget) if unit == 1.0 else fits_budget(costs / unit, float(budget) / unit)


def _num(x: float) -> str:
    """A float in short form (``%g``) when that reads back the same, else in full (``repr``)."""
    short = f"{x:g}"
    return short if float(short) == x else repr(x)


def is_feasible(problem: Problem, chosen, budget: float) -> bool:
    """True when ``chosen`` has at most one candidate per group and fits the budget.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> is_feasible(p, [1, 2], 4), is_feasible(p, [0, 1], 10), is_feasible(p, [1, 2], 3)
    (True, False, False)
    """
    return infeasibility(problem, chosen, budget) == ""


def marginal_gains(problem: Problem, sums: np.ndarray, candidates=None) -> np.ndarray:
    """``F(S + u) - F(S)`` for each candidate u, given ``sums = coverage_sums(S)``.

    A candidate already in S is scored as if its coverage were added once more.

    Parameters
    ----------
    sums : ndarray, shape (n_units,)
    candidates : array_like of int, optional
        Which candidates to score (default: all).

    Returns
    -------
    ndarray, shape (len(candidates),)

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> marginal_gains(p, coverage_sums(p, [2])).tolist()
    [0.5, 1.0, 1.5]
    """
    sums = np.asarray(sums, dtype=float)
    cov = problem.coverage
    if candidates is None:
        n = problem.n_candidates
        units, data = cov.indices, cov.data
        row_of = np.repeat(np.arange(n), np.diff(cov.indptr))
    else:
        cand = np.asarray(candidates, dtype=np.int64).reshape(-1)
        n = cand.size
        if n == 1:                      # one row: a slice of the CSR arrays (greedy re-scores one at a time)
            start, end = cov.indptr[cand[0]], cov.indptr[cand[0] + 1]
            units, data = cov.indices[start:end], cov.data[start:end]
            row_of = np.zeros(end - start, dtype=np.intp)
        else:
            row_of, pos = rows_entries(cov.indptr, cand)
            units, data = cov.indices[pos], cov.data[pos]
    base = sums[units]
    gain = problem.weights[units] * (h_values(problem, units, base + data) - h_values(problem, units, base))
    return np.bincount(row_of, weights=gain, minlength=n)


def standalone_values(problem: Problem) -> np.ndarray:
    """``F({u})`` for every candidate u: its value if it were stored alone.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([1, 2], [0, 1], [[1, 0.5], [2, 0]], [1.0, 4.0])
    >>> standalone_values(p).tolist()
    [3.0, 1.0]
    """
    return problem.cached("standalone", lambda: marginal_gains(problem, np.zeros(problem.n_units)))


def rows_entries(indptr: np.ndarray, rows: np.ndarray):
    """Positions of the stored entries of ``rows`` in a CSR matrix, and which row each belongs to.

    Returns ``(row_of, positions)``: ``row_of[i]`` is the index into ``rows`` of
    entry ``positions[i]``.  Avoids scipy's fancy indexing on hot paths.

    Examples
    --------
    >>> rows_entries(np.array([0, 2, 2, 5]), np.array([2, 0]))
    (array([0, 0, 0, 1, 1]), array([2, 3, 4, 0, 1]))
    """
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    row_of = np.repeat(np.arange(rows.size), lengths)
    offsets = np.arange(row_of.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return row_of, np.repeat(starts, lengths) + offsets


def __getattr__(name: str):
    """``Coverage`` and ``Coverages`` live in :mod:`memaudit_solvers.coverage` (built on this module) and
    stay importable from here."""
    if name in ("Coverage", "Coverages"):
        from . import coverage

        return getattr(coverage, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
