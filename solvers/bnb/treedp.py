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

from ..problem import Problem

__all__ = ["Frontier", "component_frontier", "frontiers", "group_order", "group_orders", "open_width", "saturation",
           "TREE_LIMIT"]

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
    return group_orders([g_units], [True])[0]


def group_orders(comps: Sequence[Mapping[int, Sequence[int]]], trees: Sequence[bool]) -> list[list[int]]:
    """:func:`group_order` of each component (a map group -> its units), with one reverse
    Cuthill-McKee run over all of them (it orders each connected part on its own); networkx's
    decomposition is tried only where ``trees[c]``."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    gi: list[int] = []
    ri: list[int] = []
    first: list[int] = []
    n = 0
    for g_units in comps:
        groups = sorted(g_units)
        units = sorted({r for rs in g_units.values() for r in rs})
        node = {r: n + len(groups) + k for k, r in enumerate(units)}
        for k, g in enumerate(groups):
            gi.extend([n + k] * len(g_units[g]))
            ri.extend(node[r] for r in g_units[g])
        first.append(n)
        n += len(groups) + len(units)
    adj = sp.csr_array((np.ones(2 * len(gi)), (gi + ri, ri + gi)), shape=(n, n))
    pos = np.empty(n, dtype=np.int64)
    pos[reverse_cuthill_mckee(adj, symmetric_mode=True) if n else np.zeros(0, dtype=np.int64)] = np.arange(n)
    out = []
    for c, g_units in enumerate(comps):
        groups = sorted(g_units)
        if len(groups) <= 2:
            out.append(groups)
            continue
        best = [groups[k] for k in np.argsort(pos[first[c]:first[c] + len(groups)]).tolist()]
        out.append(_tree_order(g_units, best) if trees[c] else best)
    return out


def _tree_order(g_units: Mapping[int, Sequence[int]], best: list[int]) -> list[int]:
    """networkx's tree-decomposition order of the groups when it keeps fewer units open than ``best``."""
    best_width = open_width(best, g_units)
    groups = sorted(g_units)
    units = sorted({r for rs in g_units.values() for r in rs})
    n = len(groups) + len(units)
    if best_width <= PATH_WIDTH or n > MAX_DECOMPOSED_NODES:
        return best
    import networkx as nx   # imported only here: it takes a second to load
    from networkx.algorithms.approximation import treewidth_min_fill_in

    unit_node = {r: len(groups) + k for k, r in enumerate(units)}
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from((k, unit_node[r]) for k, g in enumerate(groups) for r in g_units[g])
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

def frontiers(problem: Problem, comps: Sequence[Mapping[int, Sequence[int]]], *, budget: float = math.inf,
              limits: Sequence[int | None], deadline: float = math.inf) -> list[Frontier | None]:
    """The exact frontiers of many components at once (:func:`component_frontier` of each).

    ``limits[c]`` is component c's most (state, entry) pairs, or None for no limit and no test of its
    open units (a component small enough to enumerate: its pairs are at most its stores times its
    groups).  All components run together, one numpy step per group
    (:func:`memaudit_solvers.bnb.lockstep.run_lockstep`), in batches of at most
    :data:`BATCH_CANDIDATES` candidates.
    """
    from .lockstep import run_lockstep

    g_units = _group_units(problem, {g: c for comp in comps for g, c in comp.items()})
    orders = group_orders([{g: g_units[g] for g in comp} for comp in comps],
                          [lim is not None for lim in limits])
    out: list[Frontier | None] = [None] * len(comps)
    todo = [c for c, comp in enumerate(comps)
            if limits[c] is None or open_width(orders[c], g_units) <= MAX_OPEN_UNITS]
    units = np.array(sorted({r for c in todo for g in comps[c] for r in g_units[g]}), dtype=np.int64)
    sat = dict(zip(units.tolist(), saturation(problem, units).tolist()))
    batch: list[int] = []
    size = 0
    for k, c in enumerate(todo):
        batch.append(c)
        size += sum(len(m) for m in comps[c].values())
        if size < BATCH_CANDIDATES and k + 1 < len(todo):
            continue
        if time.perf_counter() > deadline:
            break
        lims = [math.inf if (lim := limits[b]) is None else float(lim) for b in batch]
        res = run_lockstep(problem, [comps[b] for b in batch], [orders[b] for b in batch], g_units, sat,
                           budget=budget, limits=lims, deadline=deadline)
        for b, r in zip(batch, res):
            out[b] = None if r is None else Frontier(*r)
        batch, size = [], 0
    return out


#: most candidates of the components one lockstep run takes (bounds its memory; a run's Python
#: overhead is per step, so larger batches are faster)
BATCH_CANDIDATES = 20_000


def component_frontier(problem: Problem, by_group: Mapping[int, Sequence[int]], *, budget: float = math.inf,
                       limit: int | None = TREE_LIMIT, deadline: float = math.inf) -> Frontier | None:
    """The exact (cost, value) Pareto frontier of one component's stores, or None if too large.

    Parameters
    ----------
    problem : Problem
    by_group : mapping of group -> its candidates
        The component: every unit its candidates cover is covered by no candidate outside it.
    budget : float
        Stores costing more are dropped as they appear (the frontier is then cut at the budget).
    limit : int or None
        Most (state, frontier entry) pairs created before giving up (None: no limit, and no test of
        the open units either); ``deadline`` (a ``time.perf_counter()`` value) is checked after
        every group as well.

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
    return frontiers(problem, [by_group], budget=budget, limits=[limit], deadline=deadline)[0]
