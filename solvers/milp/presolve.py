"""Our own presolve of the MILP: candidates dominated inside their group are dropped before any back-end sees them."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["group_dominance"]


def group_dominance(costs: np.ndarray, groups: np.ndarray, coverage: sp.csr_array) -> tuple[np.ndarray, np.ndarray]:
    """Candidates dominated inside their group, and for each one a kept candidate that dominates it.

    ``v`` dominates ``u`` when both are in one group, ``c[v] <= c[u]`` and ``a[v, r] >= a[u, r]``
    for every unit ``r``; of two equal candidates the one with the smaller index stays.  A store
    holding ``u`` stays feasible with ``v`` in its place (one per group, cost no higher) and F
    does not fall (every h is non-decreasing), so dropping every dominated candidate keeps OPT.
    Ties are broken by index, so the relation is a strict order and each dominated candidate is
    mapped (through chains) to one that is kept.

    Parameters
    ----------
    costs : (n,) array
    groups : (n,) int array
    coverage : (n, m) sparse array
        Coverage of the units that matter (rows in the order of ``costs``).

    Returns
    -------
    (removed, kept_by) : two (k,) int arrays
        Positions of the dominated candidates (sorted) and, for each, the position of a kept
        candidate that dominates it.

    Examples
    --------
    >>> a = sp.csr_array(np.array([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]))
    >>> group_dominance(np.array([5.0, 3.0, 4.0, 2.0]), np.array([0, 0, 0, 1]), a)
    (array([0]), array([2]))
    """
    n = costs.shape[0]
    order = np.argsort(groups, kind="stable")
    g_sorted = groups[order]
    starts = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]]) if n else np.zeros(0, dtype=np.int64)
    sizes = np.diff(np.r_[starts, n])
    size_of = np.repeat(sizes, sizes)                 # group size at each sorted position
    start_of = np.repeat(starts, sizes)
    # every ordered pair (u, v) of distinct candidates of one group, in sorted positions
    u_pos = np.repeat(np.arange(n), size_of)
    offsets = np.arange(u_pos.size) - np.repeat(np.cumsum(size_of) - size_of, size_of)
    v_pos = np.repeat(start_of, size_of) + offsets
    distinct = u_pos != v_pos
    u, v = order[u_pos[distinct]], order[v_pos[distinct]]
    if u.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    a = sp.csr_array(coverage)
    diff = sp.csr_array(a[v] - a[u])
    pair_of = np.repeat(np.arange(u.size), np.diff(diff.indptr))   # the pair of each stored difference
    worse = np.bincount(pair_of[diff.data < 0], minlength=u.size) > 0
    better = np.bincount(pair_of[diff.data > 0], minlength=u.size) > 0
    dominates = ~worse & (costs[v] <= costs[u]) & (better | (costs[v] < costs[u]) | (v < u))
    u, v = u[dominates], v[dominates]
    if u.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    removed, first = np.unique(u, return_index=True)
    by = np.full(n, -1, dtype=np.int64)
    by[removed] = v[first]
    kept_by = by[removed]
    for _ in range(int(sizes.max())):                 # follow chains to a kept candidate
        chained = by[kept_by] >= 0
        if not chained.any():
            break
        kept_by = np.where(chained, by[kept_by], kept_by)
    return removed.astype(np.int64), kept_by.astype(np.int64)
