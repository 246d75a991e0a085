"""The components of a problem and the stores of each that a better store may use, as whole numbers of cost and
grid steps: every store of a small component (enumerated), the Pareto frontier of a large one
(:mod:`~memaudit_solvers.lattice.frontier`), in both cases only the stores no other store of the same component
beats (costs no more, worth at least as much: a better store can always use the one that beats it instead)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..exact import as_fraction, decimal_grid
from ..objective import h_inf, h_values
from ..problem import Problem
from ..result import Declined
from .frontier import frontier, pareto
from .grid import on_grid, row_errors

__all__ = ["Stores", "integer_costs", "kept_candidates", "component_stores"]

#: the most stores enumerated in all (memory: about 100 bytes each)
MAX_TOTAL_STORES = 5_000_000


@dataclass(frozen=True)
class Stores:
    """Component c's stores are ``values[starts[c]:starts[c + 1]]`` (grid steps) and ``costs[...]`` (cost
    steps), by cost, each within the budget and worth more than the cheaper ones (the empty store, 0 and 0,
    first)."""

    values: np.ndarray
    costs: np.ndarray
    starts: np.ndarray
    n_enumerated: int          # stores enumerated before the Pareto filter
    n_programmed: int          # components whose frontier came from the programme

    @property
    def n_components(self) -> int:
        return int(self.starts.size - 1)


def integer_costs(problem: Problem, budget: float) -> tuple[np.ndarray, int, Fraction]:
    """Every cost and the budget as whole steps of the costs' exact grid: ``(costs, budget, step)``.

    A store fits (:func:`~memaudit_solvers.exact.fits_budget`: the decimals the floats stand for) exactly
    when its integer costs add up to at most the integer budget.
    """
    own = problem.costs / problem.cost_unit          # exact: a power of two; the package's own numbers
    uniq, inverse = np.unique(own, return_inverse=True)
    grid = decimal_grid(uniq)
    if grid is None:
        raise Declined("the costs are on no exact grid (a cost is no short decimal): the lattice certificate "
                       "needs whole steps of cost")
    scale, ints = grid
    whole = math.gcd(*ints) or 1
    cost_step = Fraction(whole, scale)
    costs = np.array([i // whole for i in ints], dtype=np.int64)[inverse.reshape(-1)]
    budget_int = math.floor(as_fraction(float(budget) / problem.cost_unit) / cost_step)
    return costs, budget_int, cost_step


def worth_units(problem: Problem) -> np.ndarray:
    """(n_units,) bool: the units a store can gain from."""
    return (h_inf(problem) > 0) & (problem.weights > 0)


def kept_candidates(problem: Problem, budget: float) -> np.ndarray:
    """The candidates a better store may need: those that fit the budget, cover a unit worth something, and
    are not dominated inside their group (:func:`~memaudit_solvers.milp.presolve.group_dominance`: any store
    holding a dominated one is worth no more with its dominator instead, and fits)."""
    from ..milp.presolve import group_dominance

    cov = problem.coverage[:, np.flatnonzero(worth_units(problem))]
    fits = np.flatnonzero((problem.costs <= budget) & (np.diff(sp.csr_array(cov).indptr) > 0))
    sub = sp.csr_array(cov[fits])
    removed, _ = group_dominance(problem.costs[fits], problem.groups[fits], sub)
    stay = np.ones(fits.size, dtype=bool)
    stay[removed] = False
    return fits[stay]


def components(problem: Problem, kept: np.ndarray) -> tuple[np.ndarray, int]:
    """``(component of each group, number of components)``: groups joined through units worth something that
    kept candidates of both cover (a group with no kept candidate: -1)."""
    g = problem.n_groups
    cov = sp.coo_array(problem.coverage[kept][:, np.flatnonzero(worth_units(problem))])
    n = g + problem.n_units
    adj = sp.csr_array((np.ones(cov.nnz), (problem.groups[kept][cov.row], g + cov.col)), shape=(n, n))
    _, labels = connected_components(adj, directed=False)
    used = np.zeros(g, dtype=bool)
    used[problem.groups[kept]] = True
    comp = np.full(g, -1, dtype=np.int64)
    _, comp[used] = np.unique(labels[:g][used], return_inverse=True)
    return comp, int(comp.max()) + 1 if used.any() else 0


def component_stores(problem: Problem, budget: float, step: Fraction, cost_ints: np.ndarray, budget_int: int,
                     max_stores: int, max_entries: int, deadline: float = math.inf) -> Stores | None:
    """The stores of every component that matter (see the module docstring); None past ``deadline``.

    A component of at most ``max_stores`` stores is enumerated (mixed radix over its groups, all components
    at once), a larger one goes to the dynamic programme (at most ``max_entries`` (cost, value) pairs).
    """
    kept = kept_candidates(problem, budget)
    comp_of_group, n_comp = components(problem, kept)
    groups = problem.groups[kept]
    order = np.lexsort((kept, groups))
    cands, groups = kept[order], groups[order]
    ug, gstart, gsize = np.unique(groups, return_index=True, return_counts=True)
    comp = comp_of_group[ug]
    by_comp = np.argsort(comp, kind="stable")
    ug, gstart, gsize, comp = ug[by_comp], gstart[by_comp], gsize[by_comp], comp[by_comp]
    radix = gsize + 1
    large = np.bincount(comp, weights=np.log2(radix), minlength=n_comp) > math.log2(max_stores) + 1e-9
    small = ~large[comp]
    values, costs, n_enum = _enumerate(problem, cands, gstart[small], radix[small], comp[small], n_comp, large,
                                       cost_ints, step)
    parts_v, parts_c, parts_comp = [values], [costs[0]], [costs[1]]
    worth = worth_units(problem)
    first = np.flatnonzero(np.r_[True, comp[1:] != comp[:-1]]) if comp.size else np.zeros(0, np.int64)
    ends = np.r_[first[1:], comp.size]
    for big in np.flatnonzero(large).tolist():
        at = np.searchsorted(comp[first], big)
        lists = [cands[gstart[k]:gstart[k] + gsize[k]] for k in range(int(first[at]), int(ends[at]))]
        found = frontier(problem, lists, worth, cost_ints, step, budget_int, max_entries, deadline)
        if found is None:
            return None
        fc, fv = found
        parts_c.append(fc)
        parts_v.append(fv)
        parts_comp.append(np.full(fc.size, big, dtype=np.int64))
    if time.perf_counter() > deadline:
        return None
    v, c, k = np.concatenate(parts_v), np.concatenate(parts_c), np.concatenate(parts_comp)
    fits = c <= budget_int                           # a store over the budget is no part of a feasible one
    v, c, k = v[fits], c[fits], k[fits]
    # within each component only the stores no cheaper store beats (the empty one, cost 0, first)
    order = np.lexsort((-v, c, k))
    v, c, k = v[order], c[order], k[order]
    span = int(np.abs(v).max()) + 1 if v.size else 1
    shifted = v + k * span                          # each component's run of values above the previous runs
    before = np.maximum.accumulate(shifted)
    head = np.r_[True, k[1:] != k[:-1]]
    keep = head | (shifted > np.r_[0, before[:-1]])
    v, c, k = v[keep], c[keep], k[keep]
    starts = np.r_[0, np.cumsum(np.bincount(k, minlength=n_comp))].astype(np.int64)
    return Stores(values=v, costs=c, starts=starts, n_enumerated=n_enum, n_programmed=int(large.sum()))


def _enumerate(problem: Problem, cands, gstart, radix, comp, n_comp: int, large, cost_ints, step: Fraction):
    """Every store of the small components (``comp`` of each of their groups, by component), in mixed radix:
    ``(values, (costs, component of each), count)``."""
    first = np.flatnonzero(np.r_[True, comp[1:] != comp[:-1]]) if comp.size else np.zeros(0, np.int64)
    starts_of = np.zeros(n_comp, dtype=np.int64)
    starts_of[comp[first]] = first
    rank = np.arange(comp.size) - starts_of[comp]
    stride = np.ones(comp.size, dtype=np.int64)
    sizes = np.where(large, 0, 1).astype(np.int64)    # a large component has none here
    for k in range(int(rank.max()) + 1 if rank.size else 0):
        at = np.flatnonzero(rank == k)
        stride[at] = sizes[comp[at]]
        sizes[comp[at]] *= radix[at]
    total = int(sizes.sum())
    if total > MAX_TOTAL_STORES:
        raise Declined(f"the components have {total:,} stores in all, more than {MAX_TOTAL_STORES:,}: the lattice "
                       "certificate enumerates every one")
    starts = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    per_group = sizes[comp]
    rep = np.repeat(np.arange(comp.size), per_group)
    local = np.arange(rep.size) - np.repeat(np.cumsum(per_group) - per_group, per_group)
    digit = (local // stride[rep]) % radix[rep]
    take = digit > 0
    rep, local, digit = rep[take], local[take], digit[take]
    row = starts[comp[rep]] + local
    col = cands[gstart[rep] + digit - 1]
    rows = sp.csr_array((np.ones(row.size), (row, col)), shape=(total, problem.n_candidates))
    # F of every store in whole grid steps, checked against its round-off; its cost in whole cost steps
    z = sp.csr_array(rows @ problem.coverage)
    row_of = np.repeat(np.arange(total), np.diff(z.indptr))
    worth = problem.weights[z.indices] * h_values(problem, z.indices, z.data)
    values = on_grid(np.bincount(row_of, weights=worth, minlength=total), row_errors(problem, rows), step,
                     "a component's store")
    if cost_ints.size and float(cost_ints.max()) * problem.n_groups >= 2.0**62:
        raise Declined("costs too large for exact 64-bit sums")
    costs = np.zeros(total, dtype=np.int64)
    np.add.at(costs, np.repeat(np.arange(total), np.diff(rows.indptr)), cost_ints[rows.indices])
    return values, (costs, np.repeat(np.arange(n_comp), sizes)), total
