"""The coverage state of a store: one store (:class:`Coverage`) or T stores side by side
(:class:`Coverages`), with marginal gains, add / remove, value and saturation, all scored by the one
objective of :mod:`memaudit_solvers.objective` (``sums_value``, ``h_values``, ``h_inf``)."""

from __future__ import annotations

import numpy as np

from .objective import (SATURATION_RTOL, _envelope, as_indices, coverage_sums, h_inf, h_values, marginal_gains,
                        rows_entries, sums_value, unit_values)
from .problem import Problem

__all__ = ["Coverage", "Coverages", "saturated_units"]


def saturated_units(problem: Problem, sums: np.ndarray, rtol: float = SATURATION_RTOL, *,
                    unbounded: bool = False) -> np.ndarray:
    """Boolean mask over units: ``h_r(s_r) >= (1 - rtol) * h_r(inf)``, the one saturation rule.

    A unit whose h never flattens (``h_r(inf)`` infinite) is never saturated, or counts as such when
    ``unbounded`` is True (a reader's "fully covered": nothing it could still gain is capped).

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([1, 1], [0, 1], [[1.0, 0.0], [0.0, 0.4]], [1.0, 1.0])
    >>> saturated_units(p, np.array([1.0, 0.4])).tolist()
    [True, False]
    """
    full = h_inf(problem)
    h = h_values(problem, np.arange(problem.n_units), sums)
    return np.where(np.isfinite(full), h >= (1 - rtol) * full, unbounded)


def _shift(problem: Problem, sums: np.ndarray, u: int, sign: float) -> None:
    """Add (``sign`` 1) or take away (-1) candidate u's coverage row to / from ``sums`` in place.

    A row of the CSR coverage names each unit once (:meth:`Problem.build` sums duplicates), so a
    plain fancy-index update is exact.
    """
    cov = problem.coverage
    start, end = cov.indptr[u], cov.indptr[u + 1]
    sums[cov.indices[start:end]] += sign * cov.data[start:end]


class Coverage:
    """The coverage state of one store as candidates are added and removed: what optimisers work through.

    Holds ``sums`` (``s[r] = sum_{u in store} a[u, r]``, shape (n_units,)), updated in place by
    :meth:`add` and :meth:`remove`; :meth:`gains` are the marginal gains
    (:func:`marginal_gains`) against it and :attr:`value` is ``F`` of the store
    (:func:`sums_value`, the function :func:`evaluate` ends in).  It knows nothing of the budget
    or the groups: feasibility is the optimiser's, checked by :func:`infeasibility`.

    Parameters
    ----------
    chosen : array_like of int or boolean mask, optional
        The starting store (default: empty); its sums are :func:`coverage_sums`.

    Examples
    --------
    >>> from memaudit_solvers.objective import evaluate
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> state = Coverage(p, [2])
    >>> state.gains().tolist(), state.value
    ([0.5, 1.0, 1.5], 1.5)
    >>> state.add(1); state.value, state.saturated().tolist(), state.chosen.tolist()
    (2.5, [False, True], [1, 2])
    >>> state.remove(2); state.value == evaluate(p, [1])
    True
    """

    def __init__(self, problem: Problem, chosen=()) -> None:
        idx = as_indices(problem, chosen)
        self.problem = problem
        self.held = np.zeros(problem.n_candidates, dtype=bool)
        self.held[idx] = True
        if int(self.held.sum()) != idx.size:
            raise ValueError("a coverage state holds each candidate at most once; a candidate is given twice")
        self.sums = coverage_sums(problem, idx)

    @property
    def chosen(self) -> np.ndarray:
        """The candidates held, sorted, int64."""
        return np.flatnonzero(self.held).astype(np.int64)

    def copy(self) -> Coverage:
        """An independent state with the same store."""
        other = object.__new__(Coverage)
        other.problem, other.held, other.sums = self.problem, self.held.copy(), self.sums.copy()
        return other

    def gains(self, candidates=None) -> np.ndarray:
        """``F(S + u) - F(S)`` for each of ``candidates`` (default: all), shape (len(candidates),).

        A candidate already held is scored as if its coverage were added once more.
        """
        return marginal_gains(self.problem, self.sums, candidates)

    def gain(self, u: int) -> float:
        """``F(S + u) - F(S)`` of one candidate."""
        return float(self.gains([u])[0])

    def add(self, u: int) -> None:
        """Store candidate u (not held yet)."""
        u = int(u)
        if self.held[u]:
            raise ValueError(f"candidate {u} is already in the store")
        self.held[u] = True
        _shift(self.problem, self.sums, u, 1.0)

    def remove(self, u: int) -> None:
        """Take candidate u (held) out of the store."""
        u = int(u)
        if not self.held[u]:
            raise ValueError(f"candidate {u} is not in the store")
        self.held[u] = False
        _shift(self.problem, self.sums, u, -1.0)

    @property
    def unit_values(self) -> np.ndarray:
        """``w[r] * h_r(s[r])`` for every unit, shape (n_units,)."""
        return unit_values(self.problem, self.sums)

    @property
    def value(self) -> float:
        """``F`` of the store."""
        return sums_value(self.problem, self.sums)

    def saturated(self, rtol: float = SATURATION_RTOL) -> np.ndarray:
        """Boolean mask over units: ``h_r(s_r) >= (1 - rtol) * h_r(inf)`` (never, where h never flattens)."""
        return saturated_units(self.problem, self.sums, rtol)


class Coverages:
    """T coverage states side by side, each its own store: the passes of a threshold rule run at once.

    ``sums`` has shape (T, n_units).  :meth:`group_gains` scores one group's candidates against
    every state in one array operation; :meth:`add` stores a candidate in one state.  The stores
    themselves are the caller's (they are not tracked here).

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> states = Coverages(p, 2)
    >>> states.add(1, 2)
    >>> states.group_gains(0).tolist(), states.values.tolist()
    ([[1.0, 2.0], [0.5, 1.0]], [0.0, 1.5])
    """

    def __init__(self, problem: Problem, n_states: int) -> None:
        self.problem = problem
        self.sums = np.zeros((int(n_states), problem.n_units))
        self._tables = _group_tables(problem)

    def group_gains(self, g: int) -> np.ndarray:
        """Marginal gains of group g's candidates (in :meth:`Problem.group_members` order) in every state, shape (T, C)."""
        units, data, weights, slopes, intercepts, indicator = self._tables[g]
        base = self.sums[:, units]
        gains = weights * (_envelope(slopes, intercepts, base + data) - _envelope(slopes, intercepts, base))
        return gains @ indicator

    def add(self, t: int, u: int) -> None:
        """Store candidate u in state t."""
        _shift(self.problem, self.sums[t], int(u), 1.0)

    @property
    def values(self) -> np.ndarray:
        """``F`` of each state's store, shape (T,)."""
        return np.array([sums_value(self.problem, row) for row in self.sums])


def _group_tables(problem: Problem) -> list:
    """Per group, its coverage entries: units, amounts, weights (E,), their h pieces (E, K), the (E, C) entry-to-member indicator."""
    def build():
        cov, out = problem.coverage, []
        for members in problem.group_members():
            row_of, pos = rows_entries(cov.indptr, members)
            units = cov.indices[pos]
            indicator = np.zeros((units.size, members.size))
            indicator[np.arange(units.size), row_of] = 1.0
            out.append((units, cov.data[pos], problem.weights[units], problem.h_slopes[units],
                        problem.h_intercepts[units], indicator))
        return out
    return problem.cached("group_tables", build)
