"""Our own presolve of the MILP: candidates dominated inside their group are dropped before any back-end sees them."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["group_dominance", "folded_dominance", "group_types"]


def _segments(sorted_groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of equal values in ``sorted_groups``: their starts and sizes, and each position's rank in its run.

    >>> _segments(np.array([0, 0, 2, 2, 2, 5]))
    (array([0, 2, 5]), array([2, 3, 1]), array([0, 1, 0, 1, 2, 0]))
    """
    n = sorted_groups.shape[0]
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    sizes = np.diff(np.r_[starts, n])
    return starts, sizes, np.arange(n) - np.repeat(starts, sizes)


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
    starts, sizes, _ = _segments(groups[order])
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


def folded_dominance(costs: np.ndarray, values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidates of fully folded groups dominated by their cost and folded value, and a kept dominator of each.

    In a group no cover row touches, a candidate contributes exactly its folded value (``x_values``)
    and its cost, so ``v`` dominates ``u`` of its group when ``c[v] <= c[u]`` and ``value[v] >= value[u]``
    (compared as the floats the model states, no tolerance); of two equal ones the smaller position stays.
    A store holding ``u`` stays feasible with ``v`` in its place and the model's objective does not fall.

    Parameters
    ----------
    costs, values, groups : (n,) arrays
        Cost, folded value and group of each candidate (only candidates of fully folded groups).

    Returns
    -------
    (removed, kept_by) : two (k,) int arrays
        Positions of the dominated candidates (sorted) and, for each, a kept one that dominates it.

    Examples
    --------
    >>> folded_dominance(np.array([3.0, 2.0, 4.0, 2.0]), np.array([1.0, 1.0, 5.0, 2.0]), np.array([0, 0, 0, 1]))
    (array([0]), array([1]))
    """
    n = costs.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.lexsort((np.arange(n), -values, costs, groups))     # by group, cost up, value down, position
    starts, sizes, rank = _segments(groups[order])
    best = order.copy()            # the candidate of largest value so far in its group, this one included
    for k in range(1, int(sizes.max())):       # a running maximum by rank: groups are small
        at = np.flatnonzero(rank == k)
        before = best[at - 1]
        best[at] = np.where(values[before] >= values[order[at]], before, order[at])
    dominated = rank > 0
    prev = np.r_[-1, best[:-1]]
    dominated &= values[prev.clip(0)] >= values[order]
    removed, kept_by = order[dominated], prev[dominated]
    sort = np.argsort(removed)
    return removed[sort].astype(np.int64), kept_by[sort].astype(np.int64)


def group_types(costs: np.ndarray, values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Groups with identical option lists, as *types*: the same sorted list of (cost, value) pairs.

    Two groups no cover row touches and whose candidates have exactly equal costs and folded values
    (the floats compared bit for bit, no tolerance) are interchangeable in the model: any store can
    swap their choices without changing its cost or the objective.

    Parameters
    ----------
    costs, values, groups : (n,) arrays
        Cost, folded value and group of each candidate (only candidates of fully folded groups).

    Returns
    -------
    (type_of, option_of, n_of_type) : (n,), (n,) and (n_types,) int arrays
        The type of each candidate's group, the candidate's option in its group's sorted list
        (by cost, then value, then position), and the number of groups of each type.

    Examples
    --------
    >>> group_types(np.array([2.0, 1.0, 1.0, 2.0, 1.0]), np.array([3.0, 1.0, 1.0, 3.0, 2.0]), np.array([0, 0, 1, 1, 2]))
    (array([0, 0, 0, 0, 1]), array([1, 0, 0, 1, 0]), array([2, 1]))
    """
    n = costs.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.lexsort((np.arange(n), values, costs, groups))
    starts, sizes, rank = _segments(groups[order])
    row = np.repeat(np.arange(starts.size), sizes)
    keys = np.zeros((starts.size, 1 + 2 * int(sizes.max())))
    keys[:, 0] = sizes
    keys[row, 1 + 2 * rank] = costs[order]
    keys[row, 2 + 2 * rank] = values[order]
    as_bytes = np.ascontiguousarray(keys).view(np.dtype((np.void, keys.shape[1] * keys.itemsize))).reshape(-1)
    _, type_of_group, n_of_type = np.unique(as_bytes, return_inverse=True, return_counts=True)
    type_of, option_of = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    type_of[order] = type_of_group.reshape(-1)[row]
    option_of[order] = rank
    return type_of, option_of, n_of_type.astype(np.int64)
