"""bnb's presolve: dominated candidates, and independent components collapsed to Pareto frontiers."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..objective import marginal_gains
from ..problem import Problem
from .treedp import TREE_LIMIT, frontiers

__all__ = ["decompose", "dominated", "Decomposition"]


class Decomposition(NamedTuple):
    """What :func:`decompose` returns."""

    reduced: Problem
    members: list          # members[j]: the tuple of the input's candidates behind reduced candidate j
    exact_units: np.ndarray  # (reduced units,) True for a frontier option's private unit
    stats: dict
    unit_origin: np.ndarray  # (reduced units,) the input's unit behind a coupled unit, -1 for a private one


def decompose(problem: Problem, active: np.ndarray, max_combos: int, deadline: float = math.inf, *,
              budget: float = math.inf, tree_limit: int = TREE_LIMIT):
    """Collapse independent components of groups into single groups of Pareto options.

    Two groups are linked when some unit is covered by active candidates of
    both.  A connected component is replaced by one group whose options are the
    (cost, value) Pareto frontier of its stores, cut at ``budget``; each option
    covers a private unit of weight = its value, so F is unchanged.  Every
    frontier comes from the dynamic programme over a path decomposition of the
    component's groups (:func:`memaudit_solvers.bnb.treedp.frontiers`: per state
    of the units it leaves open, a Pareto frontier), all components at once: a
    component of at most ``max_combos`` stores without a limit, a larger one
    when the programme creates at most ``tree_limit`` (state, entry) pairs for
    it (0: never tried).  Otherwise it keeps its candidates and units
    ("coupled"), and so does every component not finished when ``deadline`` (a
    ``time.perf_counter()`` value) passes.

    Returns a :class:`Decomposition` ``(reduced, members, exact_units, stats, unit_origin)`` where
    ``members[j]`` is the tuple of original candidates behind reduced candidate j and
    ``unit_origin`` the input's unit behind each coupled unit (-1 for a frontier option's own).
    """
    from scipy.sparse.csgraph import connected_components

    cand = np.flatnonzero(active)
    cov = problem.coverage[cand]
    g_of = problem.groups[cand]
    # components of the bipartite group--unit graph (linear in the coverage entries; the group x group
    # product would be quadratic when many groups share one unit)
    n_g = problem.n_groups
    edges = sp.csr_array((np.ones(cov.nnz), (np.repeat(g_of, np.diff(cov.indptr)), n_g + cov.indices)),
                         shape=(n_g + problem.n_units, n_g + problem.n_units))
    _, label = connected_components(edges, directed=False)
    label = label[:n_g]
    n_comp = int(label.max()) + 1 if n_g else 0
    comp_size = np.bincount(label[np.unique(g_of)], minlength=n_comp)
    single_gain = marginal_gains(problem, np.zeros(problem.n_units), cand)
    # groups alone in their component: each candidate is an option worth its standalone value
    alone = (comp_size[label[g_of]] == 1) & (single_gain > 0)
    _, new_gid = np.unique(g_of[comp_size[label[g_of]] == 1], return_inverse=True)
    n_alone_groups = int(new_gid.max()) + 1 if new_gid.size else 0
    gid_alone = np.zeros(cand.size, dtype=np.int64)
    gid_alone[comp_size[label[g_of]] == 1] = new_gid
    opt_cost: list[float] = problem.costs[cand[alone]].tolist()
    opt_value: list[float] = single_gain[alone].tolist()
    opt_members: list[tuple[int, ...]] = [(int(u),) for u in cand[alone]]
    new_group_of_option = gid_alone[alone].tolist()
    n_new_groups = n_alone_groups
    # larger components: enumerate (if small enough) or keep coupled
    multi = np.flatnonzero(comp_size > 1)
    by_comp: dict[int, dict[int, list[int]]] = {int(c): {} for c in multi}
    for u, g in zip(cand.tolist(), g_of.tolist()):
        c = int(label[g])
        if c in by_comp:
            by_comp[c].setdefault(g, []).append(u)
    coupled_cands: list[int] = []
    coupled_group_of: list[int] = []
    n_collapsed = n_coupled_groups = n_tree = tree_entries = 0
    # a component of at most max_combos stores gets its exact frontier (the programme without a limit);
    # a larger one when the programme stays within tree_limit
    comps = list(by_comp.values())
    small = [_n_stores(by_group, max_combos) <= max_combos for by_group in comps]
    tried = [c for c in range(len(comps)) if small[c] or tree_limit > 0]
    found = frontiers(problem, [comps[c] for c in tried], budget=budget, deadline=deadline,
                      limits=[None if small[c] else tree_limit for c in tried]) if tried else []
    frontier_of = dict(zip(tried, found))
    for c, by_group in enumerate(comps):
        groups = sorted(by_group)
        frontier = frontier_of.get(c)
        if frontier is None:
            for g in groups:
                coupled_cands.extend(by_group[g])
                coupled_group_of.extend([n_new_groups] * len(by_group[g]))
                n_new_groups += 1
            n_coupled_groups += len(groups)
            continue
        opt_cost.extend(frontier.costs.tolist())
        opt_value.extend(frontier.values.tolist())
        opt_members.extend(frontier.members)
        new_group_of_option.extend([n_new_groups] * frontier.costs.size)
        n_new_groups += 1
        n_collapsed += len(groups)
        if not small[c]:
            n_tree += 1
            tree_entries += frontier.entries
    # reduced problem: frontier options with private units, then coupled candidates
    n_opt = len(opt_cost)
    coupled = np.array(coupled_cands, dtype=np.int64)
    c_units = np.unique(problem.coverage[coupled].indices) if coupled.size else np.zeros(0, dtype=np.int64)
    n_units = n_opt + c_units.size
    blocks = [sp.csr_array((np.ones(n_opt), (np.arange(n_opt), np.arange(n_opt))), shape=(n_opt, n_units))]
    if coupled.size:
        sub = problem.coverage[coupled][:, c_units]
        blocks.append(sp.hstack([sp.csr_array((coupled.size, n_opt)), sub]).tocsr())
    coverage = sp.vstack(blocks).tocsr()
    k = problem.h_slopes.shape[1]
    s_opt, b_opt = np.tile([1.0] + [0.0] * (k - 1), (n_opt, 1)), np.tile([0.0] + [1.0] * (k - 1), (n_opt, 1))
    slopes = np.vstack([s_opt, problem.h_slopes[c_units]])
    intercepts = np.vstack([b_opt, problem.h_intercepts[c_units]])
    weights = np.concatenate([np.asarray(opt_value, dtype=float), problem.weights[c_units]])
    costs = np.concatenate([np.asarray(opt_cost, dtype=float), problem.costs[coupled]])
    option_groups = np.concatenate([np.asarray(new_group_of_option, dtype=np.int64),
                                    np.asarray(coupled_group_of, dtype=np.int64)])
    reduced = Problem.build(costs, option_groups, coverage, weights, h_slopes=slopes, h_intercepts=intercepts,
                            n_groups=max(n_new_groups, 1))
    members = opt_members + [(int(u),) for u in coupled]
    exact_units = np.zeros(n_units, dtype=bool)
    exact_units[:n_opt] = True
    stats = {"components": int((comp_size > 0).sum()), "groups_collapsed": n_collapsed,
             "coupled_groups": n_coupled_groups, "reduced_options": int(costs.size),
             "tree_dp_components": n_tree, "tree_dp_entries": tree_entries}
    unit_origin = np.concatenate([np.full(n_opt, -1, dtype=np.int64), c_units.astype(np.int64)])
    return Decomposition(reduced, members, exact_units, stats, unit_origin)


def _n_stores(by_group, cap: int) -> int:
    """Stores of a component (one candidate or none per group), counted up to just past ``cap``."""
    n = 1
    for cands in by_group.values():
        n *= len(cands) + 1
        if n > cap:
            break
    return n


#: groups with more active candidates are not searched for dominated pairs (the pairs grow with the square)
MAX_DOMINANCE_GROUP = 64


def dominated(problem: Problem, active: np.ndarray) -> np.ndarray:
    """Candidates dominated inside their group: another costs no more and covers at least as much.

    Groups of more than :data:`MAX_DOMINANCE_GROUP` candidates are left as they are, so the pairs
    compared stay below ``MAX_DOMINANCE_GROUP * n_candidates``.
    """
    cand = np.flatnonzero(active)
    if cand.size < 2:
        return np.zeros(problem.n_candidates, dtype=bool)
    order = cand[np.argsort(problem.groups[cand], kind="stable")]
    g = problem.groups[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    sizes = np.diff(np.append(starts, order.size))
    us, vs = [], []
    for size in np.unique(sizes[(sizes > 1) & (sizes <= MAX_DOMINANCE_GROUP)]):
        base = starts[sizes == size]
        for i in range(size):
            for j in range(size):
                if i != j:
                    us.append(order[base + i])
                    vs.append(order[base + j])
    if not us:
        return np.zeros(problem.n_candidates, dtype=bool)
    u = np.concatenate(us)
    v = np.concatenate(vs)
    cheaper = problem.costs[u] <= problem.costs[v]
    u, v = u[cheaper], v[cheaper]
    diff = (problem.coverage[v] - problem.coverage[u]).tocsr()
    excess = np.zeros(u.size)
    np.maximum.at(excess, np.repeat(np.arange(u.size), np.diff(diff.indptr)), diff.data)
    covers = excess <= 0
    deficit = np.zeros(u.size)
    np.minimum.at(deficit, np.repeat(np.arange(u.size), np.diff(diff.indptr)), diff.data)
    equal = covers & (deficit >= 0) & (problem.costs[u] == problem.costs[v])
    # u dominates v: covers at least as much for no more cost; identical twins keep the lower index
    dominates = covers & (~equal | (u < v))
    out = np.zeros(problem.n_candidates, dtype=bool)
    out[v[dominates]] = True
    return out
