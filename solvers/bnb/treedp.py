"""Exact (cost, value) Pareto frontier of a coupled component by dynamic programming over a path decomposition.

A component of groups tied by shared units is too large to enumerate when its groups have many
options, but validity chains (a value superseded again and again, each update sharing a validity unit
with the next) are paths: taken in a good order, only a few units are *open* at a time (covered by a
group already decided and by one still to come).  The programme decides the groups in that order and
keeps, for every *state* (the coverage sums of the open units), the (cost, value) Pareto frontier of
the choices so far; a unit's value ``w_r h_r(s_r)`` is added when its last group is decided.  A sum is
stored clipped at the unit's saturation point ``z_sat`` (where h becomes flat: 1 for ``min(1, z)``),
which is exact because ``h(min(s, z_sat) + a) = h(s + a)`` for every ``a >= 0`` once clipped again.
The order is a path decomposition of the component's group graph: scipy's reverse Cuthill-McKee
order, or networkx's min-fill-in tree decomposition read depth-first from a peripheral bag when
that keeps fewer units open.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..objective import h_values
from ..problem import Problem

__all__ = ["Frontier", "component_frontier", "group_order", "open_width", "saturation", "TREE_LIMIT"]

#: default largest number of (state, frontier entry) pairs one component's programme may create
TREE_LIMIT = 300_000

#: a component whose best order keeps more units open than this is not tried (its states would explode)
MAX_OPEN_UNITS = 12


@dataclass(frozen=True)
class Frontier:
    """The (cost, value) Pareto frontier of a component's stores of positive value.

    ``costs`` and ``values`` have shape (n_options,), sorted by cost, values strictly rising;
    ``members[i]`` is the tuple of candidates of a store with that cost and value.  ``states`` is the
    largest number of states of one step and ``entries`` the (state, entry) pairs created in all.
    """

    costs: np.ndarray
    values: np.ndarray
    members: list[tuple[int, ...]]
    states: int
    entries: int


def saturation(problem: Problem, units: np.ndarray) -> np.ndarray:
    """``z_sat`` per unit: the smallest z with h constant on ``[z, inf)``, or inf when h never flattens.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem, breakpoint_pieces
    >>> s, b = breakpoint_pieces([(1.0, 1.0), (2.0, 1.5)])
    >>> p = Problem.build([1.0], [0], [[1.0, 1.0]], [1.0, 1.0], h_slopes=[[1.0, 0.0, 0.0], s],
    ...                   h_intercepts=[[0.0, 1.0, 1.0], b])
    >>> saturation(p, np.array([0, 1])).tolist()
    [1.0, 2.0]
    """
    from .bound import kinks

    z, _ = kinks(problem)
    z = z[units]
    flat = problem.h_slopes[units].min(axis=1) == 0
    last = np.where(np.isnan(z), -np.inf, z).max(axis=1, initial=-np.inf)
    # flat with no kink z > 0: h is 0 everywhere (a zero slope through the origin)
    return np.where(flat, np.maximum(last, 0.0), np.inf)


def _group_units(problem: Problem, by_group: Mapping[int, Sequence[int]]) -> dict[int, list[int]]:
    cov = problem.coverage
    return {g: sorted({int(r) for u in cands for r in cov.indices[cov.indptr[u]:cov.indptr[u + 1]]})
            for g, cands in by_group.items()}


def open_width(order: Sequence[int], g_units: Mapping[int, Sequence[int]]) -> int:
    """Largest number of units open between two groups of ``order`` (covered by a group before and a
    group after): the width of the programme's states.

    Examples
    --------
    >>> open_width([0, 1, 2], {0: [5], 1: [5, 6], 2: [6]}), open_width([0, 2, 1], {0: [5], 1: [5, 6], 2: [6]})
    (1, 2)
    """
    last = {r: i for i, g in enumerate(order) for r in g_units[g]}
    opened: set[int] = set()
    width = 0
    for i, g in enumerate(order):
        opened.update(g_units[g])
        opened -= {r for r in g_units[g] if last[r] == i}
        width = max(width, len(opened))
    return width


def group_order(g_units: Mapping[int, Sequence[int]]) -> list[int]:
    """An order of the groups that keeps few units open (a path decomposition of their graph).

    First scipy's reverse Cuthill-McKee order of the group--unit graph (linear in its edges: a
    unit shared by many groups is one node, not a clique of them); when it keeps more than
    :data:`PATH_WIDTH` units open (the component is no chain) and the graph has at most
    :data:`MAX_DECOMPOSED_NODES` nodes, also networkx's min-fill-in tree decomposition of that
    graph, its bags read depth-first from a bag at the end of a longest path; the order with the
    smaller :func:`open_width` wins.

    Examples
    --------
    >>> group_order({0: [1], 3: [1, 2], 7: [2]}) in ([0, 3, 7], [7, 3, 0])
    True
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    groups = sorted(g_units)
    if len(groups) <= 2:
        return groups
    units = sorted({r for rs in g_units.values() for r in rs})
    node = {("g", g): i for i, g in enumerate(groups)}
    node.update({("r", r): len(groups) + i for i, r in enumerate(units)})
    gi = [node["g", g] for g in groups for _ in g_units[g]]
    ri = [node["r", r] for g in groups for r in g_units[g]]
    n = len(node)
    adj = sp.csr_array((np.ones(2 * len(gi)), (gi + ri, ri + gi)), shape=(n, n))
    best = [groups[i] for i in reverse_cuthill_mckee(adj, symmetric_mode=True) if i < len(groups)]
    best_width = open_width(best, g_units)
    if best_width <= PATH_WIDTH or n > MAX_DECOMPOSED_NODES:
        return best
    import networkx as nx   # imported only here: it takes a second to load
    from networkx.algorithms.approximation import treewidth_min_fill_in

    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(zip(gi, ri))
    _, tree = treewidth_min_fill_in(graph)
    bags = sorted(tree.nodes, key=lambda bag: sorted(bag))
    far = bags[0]
    for _ in range(2):                      # two sweeps: a bag at one end of a longest path
        dist = nx.single_source_shortest_path_length(tree, far)
        far = max(bags, key=lambda bag: (dist.get(bag, -1), sorted(bag)))
    seen: set[int] = set()
    order = []
    for bag in nx.dfs_preorder_nodes(tree, far, sort_neighbors=lambda nb: sorted(nb, key=sorted)):
        for i in sorted(bag):
            if i < len(groups) and i not in seen:
                seen.add(i)
                order.append(groups[i])
    order += [groups[i] for i in range(len(groups)) if i not in seen]
    return order if open_width(order, g_units) < best_width else best


#: largest group--unit graph (groups + units) given to networkx's tree decomposition
MAX_DECOMPOSED_NODES = 3000


#: an order keeping at most this many units open is taken without trying networkx's decomposition
PATH_WIDTH = 2

#: an h with at most this many pieces is evaluated in plain Python (a numpy call costs more)
_PY_PIECES = 16


def _h(problem: Problem, r: int, z: float, pieces: dict[int, list[tuple[float, float]]]) -> float:
    """``h_r(z)``, as :func:`memaudit_solvers.objective.h_values` computes it (the same float operations)."""
    k = problem.h_slopes.shape[1]
    if k > _PY_PIECES:
        return float(h_values(problem, np.array([r]), np.array([z]))[0])
    if r not in pieces:
        pieces[r] = list(zip(problem.h_slopes[r].tolist(), problem.h_intercepts[r].tolist()))
    return min(a * z + b for a, b in pieces[r])


def _pareto(costs: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Indices of the entries worth more than every entry costing no more (cost order)."""
    order = np.lexsort((-values, costs))
    v = values[order]
    before = np.maximum.accumulate(np.concatenate([[-np.inf], v[:-1]]))
    return order[v > before]


def component_frontier(problem: Problem, by_group: Mapping[int, Sequence[int]], *, budget: float = math.inf,
                       limit: int = TREE_LIMIT, deadline: float = math.inf) -> Frontier | None:
    """The exact (cost, value) Pareto frontier of one component's stores, or None if too large.

    Parameters
    ----------
    problem : Problem
    by_group : mapping of group -> its candidates
        The component: every unit its candidates cover is covered by no candidate outside it.
    budget : float
        Stores costing more are dropped as they appear (the frontier is then cut at the budget).
    limit : int
        Most (state, frontier entry) pairs created before giving up; ``deadline`` (a
        ``time.perf_counter()`` value) is checked after every group as well.

    Returns
    -------
    Frontier or None
        None when the best order keeps more than :data:`MAX_OPEN_UNITS` units open, or the limit or
        the deadline is reached.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([2, 1, 2, 1], [0, 0, 1, 1], [[1, 1, 0], [0, 1, 0], [0, 1, 1], [0, 1, 0]], [1, 1, 1])
    >>> f = component_frontier(p, {0: [0, 1], 1: [2, 3]})
    >>> f.costs.tolist(), f.values.tolist(), f.members
    ([1.0, 2.0, 4.0], [1.0, 2.0, 3.0], [(3,), (2,), (0, 2)])
    """
    g_units = _group_units(problem, by_group)
    order = group_order(g_units)
    if open_width(order, g_units) > MAX_OPEN_UNITS:
        return None
    units = np.array(sorted({r for rs in g_units.values() for r in rs}), dtype=np.int64)
    sat = dict(zip(units.tolist(), saturation(problem, units).tolist()))
    weight = dict(zip(units.tolist(), problem.weights[units].tolist()))
    last = {r: i for i, g in enumerate(order) for r in g_units[g]}
    cov = problem.coverage
    unit_value: dict[tuple[int, float], float] = {}      # w_r h_r(z), computed once per (unit, sum)
    pieces: dict[int, list[tuple[float, float]]] = {}
    open_units: list[int] = []
    # one step per group: the states' keys (sums of the open units, in open_units order), and per
    # state its entries' costs, values, and back-pointers (previous state, its entry, the candidate)
    keys: list[tuple[float, ...]] = [()]
    costs: list[np.ndarray] = [np.zeros(1)]
    values: list[np.ndarray] = [np.zeros(1)]
    steps: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = []
    created = 1
    widest = 1
    for i, g in enumerate(order):
        nothing: dict[int, float] = {}
        options = [(-1, 0.0, nothing)]
        for u in by_group[g]:
            span = slice(cov.indptr[u], cov.indptr[u + 1])
            options.append((int(u), float(problem.costs[u]), dict(zip(cov.indices[span].tolist(),
                                                                      cov.data[span].tolist()))))
        touched = g_units[g]
        closing = [r for r in touched if last[r] == i]
        new_open = sorted((set(open_units) | set(touched)) - set(closing))
        # per new state: its parts, each (costs, values, previous state, how many entries, candidate);
        # a state's entries are sorted by cost, so the entries that fit the budget are a prefix
        buckets: dict[tuple[float, ...], list[tuple[np.ndarray, np.ndarray, int, int, int]]] = {}
        for sid, key in enumerate(keys):
            sums = dict(zip(open_units, key))
            c0, v0 = costs[sid], values[sid]
            for cand, cost, cover in options:
                c = c0 + cost
                n_fit = int(np.searchsorted(c, budget, side="right"))
                if n_fit == 0:
                    continue
                new = {r: min(sums.get(r, 0.0) + cover.get(r, 0.0), sat[r]) for r in touched}
                gain = 0.0
                for r in closing:
                    z = new[r]
                    if (r, z) not in unit_value:
                        unit_value[r, z] = weight[r] * _h(problem, r, z, pieces)
                    gain += unit_value[r, z]
                new_key = tuple(new[r] if r in new else sums[r] for r in new_open)
                buckets.setdefault(new_key, []).append((c[:n_fit], v0[:n_fit] + gain, sid, n_fit, cand))
                created += n_fit
            if created > limit:            # checked inside a step too: one step's memory stays bounded
                return None
        keys, costs, values, step = [], [], [], []
        for key, parts in buckets.items():
            c = np.concatenate([p[0] for p in parts])
            v = np.concatenate([p[1] for p in parts])
            keep = _pareto(c, v)
            sizes = np.array([p[3] for p in parts])
            parent = np.repeat([p[2] for p in parts], sizes)[keep]
            entry = (np.arange(c.size) - np.repeat(np.cumsum(sizes) - sizes, sizes))[keep]
            chosen = np.repeat([p[4] for p in parts], sizes)[keep]
            keys.append(key)
            costs.append(c[keep])
            values.append(v[keep])
            step.append((parent, entry, chosen))
        steps.append(step)
        open_units = new_open
        widest = max(widest, len(keys))
        if created > limit or time.perf_counter() > deadline:
            return None
    # every unit is closed: one state, () -- keep the stores of positive value
    fin_c, fin_v = costs[0], values[0]
    keep = np.flatnonzero(fin_v > 0)
    members = []
    for e in keep.tolist():
        sid, store = 0, []
        for step in reversed(steps):
            parent, entry, chosen = step[sid]
            if chosen[e] >= 0:
                store.append(int(chosen[e]))
            sid, e = int(parent[e]), int(entry[e])
        members.append(tuple(sorted(store)))
    return Frontier(fin_c[keep], fin_v[keep], members, widest, created)
