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
order, or networkx's tree decomposition (min-degree, refined by min-fill-in where its width is at
most :data:`REFINE_WIDTH`) read depth-first from a peripheral bag when that keeps fewer units open.
:func:`frontiers` runs the programme on every component of a problem at once
(:mod:`memaudit_solvers.bnb.lockstep`: one numpy step per group, with no Python loop over states
or entries), small components included: their frontier is the one enumerating their stores gives.
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
    :data:`PATH_WIDTH` units open (the component is no chain), at most :data:`TREE_MAX_WIDTH`, and the
    graph has at most :data:`MAX_DECOMPOSED_NODES` nodes, also networkx's tree decomposition of that graph
    (min-degree; min-fill-in where min-degree's width is at most :data:`REFINE_WIDTH`), its bags
    read depth-first from a bag at the end of a longest path; the order with the smaller
    :func:`open_width` wins.

    Examples
    --------
    >>> group_order({0: [1], 3: [1, 2], 7: [2]}) in ([0, 3, 7], [7, 3, 0])
    True
    """
    return group_orders([g_units], [True])[0]


def group_orders(comps: Sequence[Mapping[int, Sequence[int]]], trees: Sequence[bool]) -> list[list[int]]:
    """:func:`group_order` of each component (a map group -> its units); networkx's decomposition is
    tried only where ``trees[c]``."""
    groups = [g for g_units in comps for g in sorted(g_units)]
    g_comp = np.repeat(np.arange(len(comps)), [len(g_units) for g_units in comps])
    pair_g = np.repeat(np.arange(len(groups)), [len(comps[c][g]) for c, g in zip(g_comp.tolist(), groups)])
    pair_r = np.array([r for g_units in comps for g in sorted(g_units) for r in g_units[g]], dtype=np.int64)
    step, _ = _steps(pair_g, pair_r, g_comp, np.array(groups, dtype=np.int64), trees)
    out: list[list[int]] = [[] for _ in comps]
    for k in np.lexsort((step, g_comp)).tolist():
        out[g_comp[k]].append(groups[k])
    return out


def _steps(pair_g: np.ndarray, pair_r: np.ndarray, g_comp: np.ndarray, group_ids: np.ndarray,
           trees: Sequence[bool]):
    """Each group's step in its component's order, and each component's :func:`open_width`.

    Groups 0..n-1 (``group_ids`` their names, which order a component of at most two groups),
    component ``g_comp`` (non-decreasing), coverage pairs ``(pair_g, pair_r)`` sorted.  One reverse
    Cuthill-McKee run orders every component (it orders each connected part of the graph on its own).
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    n_g, n_comp = g_comp.size, len(trees)
    units, r_idx = np.unique(pair_r, return_inverse=True)
    n = n_g + units.size
    rows = np.concatenate([pair_g, n_g + r_idx])
    adj = sp.csr_array((np.ones(rows.size), (rows, np.concatenate([n_g + r_idx, pair_g]))), shape=(n, n))
    pos = np.empty(n, dtype=np.int64)
    pos[reverse_cuthill_mckee(adj, symmetric_mode=True) if n else np.zeros(0, dtype=np.int64)] = np.arange(n)
    size = np.bincount(g_comp, minlength=n_comp)
    start = np.cumsum(size) - size
    order = np.lexsort((np.where(size[g_comp] <= 2, group_ids, pos[:n_g]), g_comp))
    step = np.empty(n_g, dtype=np.int64)
    step[order] = np.arange(n_g) - start[g_comp[order]]
    width = _widths(step, pair_g, r_idx, units.size, g_comp, start)
    for c in np.flatnonzero((width > PATH_WIDTH) & np.asarray(trees, dtype=bool) & (size > 2)).tolist():
        mine = np.flatnonzero(g_comp == c)
        at = np.isin(pair_g, mine)
        g_units: dict[int, list[int]] = {int(group_ids[g]): [] for g in mine.tolist()}
        for g, r in zip(group_ids[pair_g[at]].tolist(), pair_r[at].tolist()):
            g_units[g].append(r)
        best = [int(group_ids[g]) for g in mine[np.argsort(step[mine])].tolist()]
        tree = _tree_order(g_units, best)
        if tree != best:
            rank = {g: i for i, g in enumerate(tree)}
            step[mine] = [rank[int(group_ids[g])] for g in mine.tolist()]
            width[c] = open_width(tree, g_units)
    return step, width


def _widths(step, pair_g, r_idx, n_units, g_comp, start, weights=None) -> np.ndarray:
    """Per component, the most units open after one step (first step < i + 1 <= last step), or with
    ``weights`` (per unit) the largest sum of the open units' weights."""
    first = np.full(n_units, np.iinfo(np.int64).max)
    last = np.full(n_units, -1)
    np.minimum.at(first, r_idx, step[pair_g])
    np.maximum.at(last, r_idx, step[pair_g])
    base = np.zeros(n_units, dtype=np.int64)
    base[r_idx] = start[g_comp[pair_g]]
    w = np.ones(n_units, dtype=np.int64) if weights is None else np.asarray(weights, dtype=float)
    diff = np.zeros(g_comp.size + 1, dtype=w.dtype)
    np.add.at(diff, base + first, w)
    np.add.at(diff, base + last, -w)
    open_after = np.cumsum(diff)[:-1]            # a unit opens and closes inside its component's span
    width = np.zeros(start.size, dtype=w.dtype)
    has = np.flatnonzero(np.bincount(g_comp, minlength=start.size) > 0)
    if has.size:
        width[has] = np.maximum.reduceat(open_after, start[has])
    return width


def _tree_order(g_units: Mapping[int, Sequence[int]], best: list[int]) -> list[int]:
    """networkx's tree-decomposition order of the groups when it keeps fewer units open than ``best``."""
    best_width = open_width(best, g_units)
    groups = sorted(g_units)
    units = sorted({r for rs in g_units.values() for r in rs})
    n = len(groups) + len(units)
    if best_width <= PATH_WIDTH or best_width > TREE_MAX_WIDTH or n > MAX_DECOMPOSED_NODES:
        return best
    import networkx as nx   # imported only here: it takes a second to load
    from networkx.algorithms.approximation import treewidth_min_degree, treewidth_min_fill_in

    unit_node = {r: len(groups) + k for k, r in enumerate(units)}
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from((k, unit_node[r]) for k, g in enumerate(groups) for r in g_units[g])
    # min-degree first (near linear); min-fill-in (about 20 times slower on a 2,250-node graph: 3.9 s
    # against 0.2 s, for width 159 against 179) only where the min-degree order keeps few enough units
    # open for a refinement to matter (on summary_problem(3000, 1)'s restarts the orders kept 70-221
    # open, the refinements took 1.5 s and none came near MAX_OPEN_UNITS)
    width, tree = treewidth_min_degree(graph)
    order = _bag_order(nx, tree, groups)
    if width <= REFINE_WIDTH and open_width(order, g_units) <= REFINE_WIDTH:
        refined = _bag_order(nx, treewidth_min_fill_in(graph)[1], groups)
        if open_width(refined, g_units) < open_width(order, g_units):
            order = refined
    return order if open_width(order, g_units) < best_width else best


def _bag_order(nx, tree, groups: list[int]) -> list[int]:
    """The groups in the order a depth-first walk of the tree decomposition from one end of a longest
    path meets their bags (the groups of no bag last)."""
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
    return order


def _levels(problem: Problem, units: np.ndarray, n_groups: np.ndarray) -> np.ndarray:
    """An upper bound on the distinct coverage states of each unit in the programme (>= 1).

    A unit covered by ``k`` groups reaches at most ``2**k`` sums of their candidates' coverage (one
    per group), fewer where the coverage lies on a decimal grid of step ``s``: the programme keeps
    ``min(z, z_sat)``, at most ``min(z_sat, sum of the unit's coverage) / s + 1`` values.
    """
    from ..objective import rows_entries
    from .grid import _decimal_steps, coverage_values

    out = np.exp2(np.minimum(n_groups, 60).astype(float))
    covered, first, values, _ = coverage_values(problem)
    mine = np.isin(covered, units)
    if not mine.any():
        return np.maximum(out, 1.0)
    # the decimal steps of these units' values alone (the problem's other units may have none)
    n_vals = np.diff(np.append(first, values.size))[mine]
    seg = covered[mine]
    steps = _decimal_steps(values[rows_entries(np.append(first, values.size), np.flatnonzero(mine))[1]],
                           np.cumsum(n_vals) - n_vals)
    if steps is not None:
        at = np.searchsorted(units, seg)
        total = np.asarray(problem.coverage_csc.sum(axis=0)).ravel()[seg]
        top = np.minimum(saturation(problem, seg), total)
        with np.errstate(divide="ignore", invalid="ignore"):
            grid = np.where(steps > 0, np.floor(top / steps + 1e-9) + 1, np.inf)
        out[at] = np.minimum(out[at], grid)
    return np.maximum(out, 1.0)


#: skip the programme of a component whose open units' coverage states multiply to more than its
#: limit times 2**LEVEL_MARGIN_BITS at some step (:func:`_levels`).  The product bounds the states
#: but ignores that units covered by the same groups move together: a component of 28 bits (limit
#: 300,000: 18.2) finished within the limit on a restart of ``summary_problem(50, 1)`` at 25 %, while
#: those of ``summary_problem(50, s, restate=0.8)`` (40.6 and 72.9 bits) gave up after 0.1 s each
LEVEL_GATE = True
LEVEL_MARGIN_BITS = 12.0


#: largest group--unit graph (groups + units) given to networkx's tree decomposition
MAX_DECOMPOSED_NODES = 3000


#: an order keeping at most this many units open is taken without trying networkx's decomposition
PATH_WIDTH = 2

#: networkx's min-fill-in heuristic refines its min-degree decomposition only up to this width
REFINE_WIDTH = 2 * MAX_OPEN_UNITS

#: networkx's decomposition is not tried on an order keeping more units open than this.  In 90 drawn
#: shapes (bench_shapes' summary, validity and coupled kinds at 5-25 %) it brought 4 orders of 14-16
#: open units to 10-12 and none of more than 24 to MAX_OPEN_UNITS (those kept 25-428 open, its orders
#: 0-20 % fewer); skipping them saved 1.09 of its 1.75 s there, and 0.35 of 6.7 s on
#: summary_problem(1000, 2, restate=0.8) at 5 % (widths 133-283, 994 groups).  8 cells side by side
#: (summaries n = 500-1,000, validity, restate-pwl): time median 0.920, total 0.916
TREE_MAX_WIDTH = 4 * MAX_OPEN_UNITS

def frontiers(problem: Problem, comps: Sequence[Mapping[int, Sequence[int]]], *, budget: float = math.inf,
              limits: Sequence[int | None], deadline: float = math.inf) -> list[Frontier | None]:
    """The exact frontiers of many components at once (:func:`component_frontier` of each).

    ``limits[c]`` is component c's most (state, entry) pairs, or None for no limit and no test of its
    open units (a component small enough to enumerate: its pairs are at most its stores times its
    groups).  All components run together, one numpy step per group
    (:func:`memaudit_solvers.bnb.lockstep.run_lockstep`), in batches of at most
    :data:`BATCH_CANDIDATES` candidates.
    """
    from ..objective import rows_entries
    from .lockstep import plan, run_lockstep

    out: list[Frontier | None] = [None] * len(comps)
    groups = [g for comp in comps for g in sorted(comp)]
    if not groups:
        return out
    g_comp = np.repeat(np.arange(len(comps)), [len(comp) for comp in comps])
    cands = np.array([u for comp in comps for g in sorted(comp) for u in comp[g]], dtype=np.int64)
    cand_g = np.repeat(np.arange(len(groups)), [len(comps[c][g]) for c, g in zip(g_comp.tolist(), groups)])
    row_of, pos = rows_entries(problem.coverage.indptr, cands)
    span = problem.n_units + 1
    codes = np.unique(cand_g[row_of] * span + problem.coverage.indices[pos])
    pair_g, pair_r = codes // span, codes % span
    step, width = _steps(pair_g, pair_r, g_comp, np.array(groups, dtype=np.int64),
                         [lim is not None for lim in limits])
    lim = np.array([math.inf if x is None else float(x) for x in limits])
    todo = np.flatnonzero(np.isinf(lim) | (width <= MAX_OPEN_UNITS))
    if LEVEL_GATE and todo.size and np.isfinite(lim[todo]).any():
        # of those with a limit, skip a component whose states cannot stay near it: the units open at
        # a step can take at most prod_r levels_r coverage states together
        units, r_idx = np.unique(pair_r, return_inverse=True)
        bits = np.log2(_levels(problem, units, np.bincount(r_idx, minlength=units.size)))
        size = np.bincount(g_comp, minlength=len(comps))
        state_bits = _widths(step, pair_g, r_idx, units.size, g_comp, np.cumsum(size) - size, weights=bits)
        hopeless = np.isfinite(lim) & (state_bits > np.log2(np.maximum(lim, 1.0)) + LEVEL_MARGIN_BITS)
        todo = todo[~hopeless[todo]]
    n_cands = np.bincount(g_comp[cand_g], minlength=len(comps))
    batch_of = np.zeros(len(comps), dtype=np.int64)
    batch_of[todo] = np.cumsum(n_cands[todo]) // BATCH_CANDIDATES
    for b in np.unique(batch_of[todo]).tolist():
        if time.perf_counter() > deadline:
            break
        mine = todo[batch_of[todo] == b]
        local = np.full(len(comps), -1)
        local[mine] = np.arange(mine.size)
        lengths = np.bincount(g_comp, minlength=len(comps))[mine]
        in_b = local[g_comp] >= 0
        new_g = np.full(len(groups), -1)
        new_g[in_b] = (np.cumsum(lengths) - lengths)[local[g_comp[in_b]]] + step[in_b]
        c_at = np.flatnonzero(in_b[cand_g])
        c_at = c_at[np.argsort(new_g[cand_g[c_at]], kind="stable")]
        p_at = np.flatnonzero(in_b[pair_g])
        p_at = p_at[np.lexsort((pair_r[p_at], new_g[pair_g[p_at]]))]
        p_g, p_r = new_g[pair_g[p_at]], pair_r[p_at]
        steps_plan = plan(problem, lengths, cands[c_at], new_g[cand_g[c_at]], p_g, p_r)
        res = run_lockstep(problem, steps_plan, saturation(problem, p_r), budget=budget, limits=lim[mine],
                           deadline=deadline)
        for c, r in zip(mine.tolist(), res):
            out[c] = None if r is None else Frontier(*r)
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
        None when the best order keeps more than :data:`MAX_OPEN_UNITS` units open, or (with a limit)
        its open units' coverage levels multiply past it by :data:`LEVEL_MARGIN_BITS`, or the limit or
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
