"""The numeric form of a MEMAUDIT package: arrays only, no JSON, no ids."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["Problem", "ProblemError", "MAX_H_CELLS", "check_h_cells", "min_cap_pieces", "breakpoint_pieces",
           "stack_pieces"]

#: The most cells ``n_units * n_pieces`` a :class:`Problem` stores for h.  h is dense: every unit
#: carries as many pieces as the unit with the most breakpoints, so one unit of 2,000 breakpoints
#: among 20,000 units would need 40 million cells (about 1 GB while compiling).  At this limit the
#: two arrays take 80 MB each; a package of units with ``min1`` or ``cap`` h (2 pieces each) reaches
#: it only beyond 5 million units.
MAX_H_CELLS = 10_000_000


class ProblemError(ValueError):
    """The arrays given to :class:`Problem` break one of its rules."""


def check_h_cells(n_units: int, n_pieces: int) -> None:
    """Refuse an h table of more than :data:`MAX_H_CELLS` cells, before it is allocated.

    Raises
    ------
    ProblemError
        If ``n_units * n_pieces > MAX_H_CELLS``.

    Examples
    --------
    >>> check_h_cells(5_000_000, 2)
    >>> try:
    ...     check_h_cells(20_000, 2_001)
    ... except ProblemError as exc:
    ...     print(exc)
    h needs 20,000 units x 2,001 pieces = 40,020,000 cells, more than MAX_H_CELLS = 10,000,000 (every unit stores as many pieces as the unit with the most breakpoints); use fewer breakpoints or fewer units
    """
    cells = int(n_units) * int(n_pieces)
    if cells > MAX_H_CELLS:
        raise ProblemError(f"h needs {n_units:,} units x {n_pieces:,} pieces = {cells:,} cells, more than "
                           f"MAX_H_CELLS = {MAX_H_CELLS:,} (every unit stores as many pieces as the unit with "
                           "the most breakpoints); use fewer breakpoints or fewer units")


def min_cap_pieces(caps):
    """Pieces of ``h(z) = min(cap, z)`` for each cap.

    Parameters
    ----------
    caps : array_like, shape (n_units,)
        Positive saturation levels; ``cap = 1`` is the default ``min(1, z)``.

    Returns
    -------
    slopes, intercepts : ndarray, shape (n_units, 2)

    Examples
    --------
    >>> s, b = min_cap_pieces([1.0, 2.0])
    >>> s.tolist(), b.tolist()
    ([[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [0.0, 2.0]])
    """
    caps = np.asarray(caps, dtype=float).reshape(-1)
    n = caps.shape[0]
    slopes = np.tile(np.array([1.0, 0.0]), (n, 1))
    intercepts = np.column_stack([np.zeros(n), caps])
    return slopes, intercepts


def breakpoint_pieces(points):
    """Pieces of one concave piecewise-linear ``h`` given by its breakpoints.

    ``h`` starts at (0, 0), is linear between the breakpoints ``(z, h(z))``
    (sorted by z, z > 0) and constant after the last one.

    Parameters
    ----------
    points : sequence of (z, value) pairs

    Returns
    -------
    slopes, intercepts : ndarray, shape (len(points) + 1,)

    Raises
    ------
    ProblemError
        If the points do not describe a concave, non-decreasing h.

    Examples
    --------
    >>> s, b = breakpoint_pieces([(1.0, 1.0), (2.0, 1.5)])
    >>> s.tolist(), b.tolist()
    ([1.0, 0.5, 0.0], [0.0, 0.5, 1.5])
    """
    pts = [(0.0, 0.0)] + [(float(z), float(v)) for z, v in points]
    if len(pts) < 2:
        raise ProblemError("a breakpoint list needs at least one point (z, h(z)) with z > 0")
    slopes, intercepts = [], []
    for (z0, v0), (z1, v1) in zip(pts, pts[1:]):
        if not (np.isfinite(z1) and np.isfinite(v1)):
            raise ProblemError(f"breakpoint ({z1}, {v1}) is not finite")
        if z1 <= z0:
            raise ProblemError(f"breakpoints must have strictly increasing z > 0; got {z1} after {z0}")
        slope = (v1 - v0) / (z1 - z0)
        if slope < 0:
            raise ProblemError(f"h must be non-decreasing; it falls from {v0} to {v1} between z={z0} and z={z1}")
        if slopes and slope > slopes[-1] + 1e-12:
            raise ProblemError(f"h must be concave; its slope rises from {slopes[-1]} to {slope} at z={z0}")
        slopes.append(slope)
        b = v0 - slope * z0
        intercepts.append(0.0 if abs(b) <= 1e-12 * max(1.0, abs(v0)) else b)
    slopes.append(0.0)
    intercepts.append(pts[-1][1])
    return np.array(slopes), np.array(intercepts)


def stack_pieces(pieces) -> tuple[np.ndarray, np.ndarray]:
    """Stack each unit's pieces into the ``(n_units, n_pieces)`` arrays of :class:`Problem`.

    Shorter rows repeat their last piece (a repeated piece changes no minimum).  The size is
    checked by :func:`check_h_cells` before the arrays are allocated.

    Parameters
    ----------
    pieces : sequence of (slopes, intercepts) pairs, one per unit, each 1-d of the same length

    Returns
    -------
    slopes, intercepts : ndarray, shape (n_units, max pieces of a unit)

    Examples
    --------
    >>> s, b = stack_pieces([breakpoint_pieces([(1.0, 1.0), (2.0, 1.5)]), ([1.0, 0.0], [0.0, 1.0])])
    >>> s.tolist(), b.tolist()
    ([[1.0, 0.5, 0.0], [1.0, 0.0, 0.0]], [[0.0, 0.5, 1.5], [0.0, 1.0, 1.0]])
    """
    n_units = len(pieces)
    k = max((len(s) for s, _ in pieces), default=2)
    check_h_cells(n_units, k)
    slopes, intercepts = np.empty((n_units, k)), np.empty((n_units, k))
    for r, (s, b) in enumerate(pieces):
        n = len(s)
        if n < 1 or len(b) != n:
            raise ProblemError(f"unit {r} has {n} slopes and {len(b)} intercepts; give the same number, at least 1")
        slopes[r, :n], intercepts[r, :n] = s, b
        slopes[r, n:], intercepts[r, n:] = s[-1], b[-1]
    return slopes, intercepts


@dataclass(frozen=True, eq=False)
class Problem:
    """Budgeted concave-coverage selection with one candidate per group.

    maximise ``F(X) = sum_r weights[r] * h_r(sum_{u in X} coverage[u, r])``
    subject to ``sum_{u in X} costs[u] <= budget`` and at most one candidate
    of each group in X.  ``h_r(z) = min_k (h_slopes[r, k] * z + h_intercepts[r, k])``:
    concave, non-decreasing, ``h_r(0) = 0``.  The budget is not part of the
    problem: every method takes it as an argument.

    Parameters
    ----------
    costs : ndarray, shape (n_candidates,)
        Storage cost of each candidate, finite and > 0.
    groups : ndarray of int, shape (n_candidates,)
        Group (experience) index of each candidate, in ``[0, n_groups)``.
    coverage : scipy.sparse.csr_array, shape (n_candidates, n_units)
        ``a[u, r] >= 0``, finite.
    weights : ndarray, shape (n_units,)
        ``w[r] > 0``, finite.
    h_slopes, h_intercepts : ndarray, shape (n_units, n_pieces)
        Affine pieces of each ``h_r``; slopes >= 0, intercepts >= 0 and the
        smallest intercept of each row is 0.  At most :data:`MAX_H_CELLS` cells
        (:meth:`build` refuses more; :func:`stack_pieces` builds them from
        per-unit pieces).
    n_groups : int
        Number of groups; groups without candidates are allowed.
    kinds : tuple of str, optional
        A label per candidate (its representation kind: ``raw``, ``fact``, ...).
        Only the ``kind:<k>`` writers read it; the objective never does.

    cost_unit : float, optional
        A power of two: the costs (and the budgets given with them) are the package's own
        numbers times it.  Set by :func:`memaudit_solvers.exact.rescaled`; the exact budget check divides
        it back out, so it judges the decimals the package wrote at every scale.

    Groups are numbered in stream order: the online writers see group 0 first.

    Use :meth:`build` to construct one from plain arrays with validation.
    """

    costs: np.ndarray
    groups: np.ndarray
    coverage: sp.csr_array
    weights: np.ndarray
    h_slopes: np.ndarray
    h_intercepts: np.ndarray
    n_groups: int
    kinds: tuple | None = None
    cost_unit: float = 1.0
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_candidates(self) -> int:
        return int(self.costs.shape[0])

    @property
    def n_units(self) -> int:
        return int(self.weights.shape[0])

    @classmethod
    def build(cls, costs, groups, coverage, weights, *, h_slopes=None, h_intercepts=None, n_groups=None,
              kinds=None):
        """Validate plain arrays and return a :class:`Problem`.

        ``coverage`` may be dense (n_candidates, n_units) or any scipy sparse
        matrix.  Without ``h_slopes`` / ``h_intercepts`` every unit gets the
        default ``h(z) = min(1, z)``.

        Examples
        --------
        >>> p = Problem.build([2, 3], [0, 0], [[1.0, 0.0], [1.0, 1.0]], [1.0, 2.0])
        >>> p.n_candidates, p.n_units, p.n_groups
        (2, 2, 1)
        """
        costs = np.asarray(costs, dtype=float).reshape(-1)
        groups = np.asarray(groups).reshape(-1)
        weights = np.asarray(weights, dtype=float).reshape(-1)
        n_cand, n_units = costs.shape[0], weights.shape[0]
        if groups.shape[0] != n_cand:
            raise ProblemError(f"groups has {groups.shape[0]} entries but costs has {n_cand}")
        if groups.size and not np.issubdtype(groups.dtype, np.integer):
            if not np.all(np.equal(np.mod(groups, 1), 0)):
                raise ProblemError("group indices must be integers")
        groups = groups.astype(np.int64)
        if n_groups is None:
            n_groups = int(groups.max()) + 1 if n_cand else 0
        if n_cand and (groups.min() < 0 or groups.max() >= n_groups):
            raise ProblemError(f"group indices must lie in [0, {n_groups}); got {groups.min()}..{groups.max()}")
        if not np.all(np.isfinite(costs)) or np.any(costs <= 0):
            bad = int(np.flatnonzero(~(np.isfinite(costs) & (costs > 0)))[0])
            raise ProblemError(f"costs must be finite and > 0; candidate {bad} has cost {costs[bad]}")
        if not np.all(np.isfinite(weights)) or np.any(weights <= 0):
            bad = int(np.flatnonzero(~(np.isfinite(weights) & (weights > 0)))[0])
            raise ProblemError(f"weights must be finite and > 0; unit {bad} has weight {weights[bad]}")
        cov = sp.csr_array(coverage, dtype=float) if sp.issparse(coverage) else sp.csr_array(np.asarray(coverage, dtype=float).reshape(n_cand, n_units))
        if cov.shape != (n_cand, n_units):
            raise ProblemError(f"coverage has shape {cov.shape}, expected ({n_cand}, {n_units})")
        cov.sum_duplicates()
        cov.eliminate_zeros()
        cov.sort_indices()
        if not np.all(np.isfinite(cov.data)) or np.any(cov.data < 0):
            raise ProblemError("coverage values must be finite and >= 0")
        if h_slopes is None and h_intercepts is None:
            h_slopes, h_intercepts = min_cap_pieces(np.ones(n_units))
        elif h_slopes is None or h_intercepts is None:
            raise ProblemError("give both h_slopes and h_intercepts, or neither")
        n_pieces = np.asarray(h_slopes).size // n_units if n_units else 2
        check_h_cells(n_units, n_pieces)
        h_slopes = np.asarray(h_slopes, dtype=float).reshape(n_units, n_pieces)
        h_intercepts = np.asarray(h_intercepts, dtype=float).reshape(n_units, n_pieces)
        if h_slopes.shape != h_intercepts.shape or h_slopes.shape[1] < 1:
            raise ProblemError("h_slopes and h_intercepts must have the same shape (n_units, n_pieces >= 1)")
        if not (np.all(np.isfinite(h_slopes)) and np.all(np.isfinite(h_intercepts))):
            raise ProblemError("h pieces must be finite")
        if np.any(h_slopes < 0):
            raise ProblemError("h must be non-decreasing: every piece slope must be >= 0")
        if np.any(h_intercepts < 0) or (n_units and np.any(np.abs(h_intercepts.min(axis=1)) > 0)):
            raise ProblemError("h(0) must be 0: intercepts must be >= 0 with the smallest equal to 0")
        if kinds is not None:
            kinds = tuple(str(k) for k in kinds)
            if len(kinds) != n_cand:
                raise ProblemError(f"kinds has {len(kinds)} entries but costs has {n_cand}")
        return cls(costs, groups, cov, weights, h_slopes, h_intercepts, int(n_groups), kinds)

    # -- derived structure, computed once -------------------------------
    def cached(self, key, fn):
        """Return ``fn()``, computed once per problem under ``key``."""
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    @property
    def coverage_csc(self) -> sp.csc_array:
        """Coverage in column-major form (units x candidates access)."""
        return self.cached("csc", lambda: sp.csc_array(self.coverage))

    @property
    def is_min1(self) -> bool:
        """True when every unit has the default ``h(z) = min(1, z)``."""
        def check():
            s, b = self.h_slopes, self.h_intercepts
            env1 = np.min(s * 1.0 + b, axis=1)
            env_big = np.min(s * 1e6 + b, axis=1)
            env_half = np.min(s * 0.5 + b, axis=1)
            return bool(np.allclose(env1, 1.0, rtol=0, atol=0) and np.all(env_big == 1.0) and np.all(env_half == 0.5))
        return self.cached("is_min1", check)

    def group_order(self) -> tuple[np.ndarray, np.ndarray]:
        """``(order, bounds)``: the candidates sorted by group (stable), and where each group starts in
        that order (length n_groups + 1): group g's candidates are ``order[bounds[g]:bounds[g + 1]]``."""
        def sort():
            order = np.argsort(self.groups, kind="stable")
            return order, np.searchsorted(self.groups[order], np.arange(self.n_groups + 1))
        return self.cached("group_order", sort)

    def group_members(self) -> list[np.ndarray]:
        """Candidate indices of each group (list of length n_groups)."""
        def members():
            order, bounds = self.group_order()
            return [order[bounds[g]:bounds[g + 1]] for g in range(self.n_groups)]
        return self.cached("members", members)

    def group_max_costs(self) -> np.ndarray:
        """Largest candidate cost in each group (0 for an empty group)."""
        out = np.zeros(self.n_groups)
        np.maximum.at(out, self.groups, self.costs)
        return out

    def stream_cost(self) -> float:
        """Cost of storing every experience verbatim: sum of per-group max costs."""
        return float(self.group_max_costs().sum())
