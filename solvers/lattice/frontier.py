"""The stores that matter of a component too large to enumerate: its (cost, value) Pareto frontier, by a
dynamic programme along a path order of its groups.

The state after a prefix of the order is the coverage of the units still *open* (covered by a group of the
prefix and by one after it), in exact whole steps of the coverage grid and capped where h stops rising; a unit
adds its value when its last group has chosen.  Two partial stores in the same state face the same future, so
one that costs more and is worth no more can go: each state keeps a Pareto list of (cost, value).  Every value
is a whole number of steps of F's grid (each unit's ``w_r h_r`` is, at every store of kept candidates), checked
against its float round-off as the enumeration's values are.  The order is reverse Cuthill-McKee on the groups
that share a unit (few units open at once).  Shares no code with bnb's tree programme.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from ..exact import decimal_grid
from ..objective import h_values
from ..problem import Problem
from ..result import Declined
from .grid import on_grid, term_errors

__all__ = ["frontier"]

#: the most coverage levels of one unit the programme tabulates
_MAX_LEVELS = 100_000

#: the most shared units the order may keep open at once (more: decline before the programme runs).
#: Each open unit multiplies the states a step can reach.  Measured (git 5015301): every large component
#: the certificate proved at 10,000 experiences (``random_problem(10000, s, restate=0.8)`` with min1,
#: pwl and cap h, 409-414 components each; ``random_problem`` at 10,000 and 30,000 has none) keeps 1
#: unit open; the one component of ``summary_problem(3000, 0)`` keeps 1,158 open, that of
#: ``summary_problem(10000, 0)`` 3,978, and their
#: programmes declined on :data:`~memaudit_solvers.lattice.MAX_ENTRIES` after 6.9 and 14-17 s
#: (311,040 states at the 13th of 9,509 steps).
MAX_OPEN_UNITS = 64


def pareto(cost: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (cost, value) pairs no other pair beats (costs no more and is worth at least as much), by cost."""
    if cost.size <= 1:
        return cost, value
    order = np.lexsort((-value, cost))
    cost, value = cost[order], value[order]
    keep = np.empty(cost.size, dtype=bool)
    keep[0] = True
    np.greater(value[1:], np.maximum.accumulate(value)[:-1], out=keep[1:])
    return cost[keep], value[keep]


def frontier(problem: Problem, groups: list[np.ndarray], worth: np.ndarray, cost_ints: np.ndarray, step: Fraction,
             budget: int, max_entries: int, deadline: float = math.inf) -> tuple[np.ndarray, np.ndarray] | None:
    """``(costs, values)`` of the Pareto frontier of one component's stores within ``budget`` (whole cost and grid
    steps), ``groups`` the kept candidates of each of its groups; None past ``deadline``.

    Raises :class:`Declined` when the coverage is on no exact grid, the order keeps more than
    :data:`MAX_OPEN_UNITS` shared units open at once, or the lists grow past ``max_entries``.
    """
    m = len(groups)
    cands = np.concatenate(groups)
    gpos = np.repeat(np.arange(m), [g.size for g in groups])
    cov = sp.coo_array(sp.csr_array(problem.coverage[cands]))
    on = worth[cov.col] & (cov.data > 0)
    row, unit, amount = cov.row[on], cov.col[on], cov.data[on]
    # a unit is shared when candidates of two groups of the component cover it (indexed locally: arrays of
    # the component's own units, not the problem's, so that many components cost linear time)
    touched, at = np.unique(unit, return_inverse=True)
    lo = np.full(touched.size, m, dtype=np.int64)
    hi = np.full(touched.size, -1, dtype=np.int64)
    np.minimum.at(lo, at, gpos[row])
    np.maximum.at(hi, at, gpos[row])
    shared = lo[at] != hi[at]
    # private units: their worth goes onto the candidate, in whole grid steps
    p_row, p_unit, p_amt = row[~shared], unit[~shared], amount[~shared]
    worth_f = problem.weights[p_unit] * h_values(problem, p_unit, p_amt)
    def per_candidate(weights):
        return np.bincount(p_row, weights=weights, minlength=cands.size).astype(float)
    priv_f = per_candidate(worth_f)
    priv_e = (per_candidate(term_errors(problem, p_unit, p_amt, 1))
              + (np.bincount(p_row, minlength=cands.size) + 2) * 2.0**-53 * per_candidate(np.abs(worth_f)))
    priv = on_grid(priv_f, priv_e, step, "a candidate's worth on its own units")
    # shared units: coverage in whole steps of its exact grid
    s_row, s_unit, s_amt = row[shared], unit[shared], amount[shared]
    units = np.unique(s_unit)
    local = np.searchsorted(units, s_unit)
    uniq, inverse = np.unique(s_amt, return_inverse=True)
    grid = decimal_grid(uniq) if uniq.size else (1, [])
    if grid is None:
        raise Declined("a coverage value of a large component is no short decimal: the lattice certificate cannot "
                       "tabulate its units exactly")
    scale, ints = grid
    amt = np.array(ints, dtype=np.int64)[inverse.reshape(-1)] if uniq.size else np.zeros(0, np.int64)
    # the order: reverse Cuthill-McKee on the groups that share a unit
    pair = sp.csr_array((np.ones(local.size), (gpos[s_row], local)), shape=(m, units.size))
    adj = sp.csr_array(pair @ pair.T)
    order = reverse_cuthill_mckee(adj, symmetric_mode=True) if m else np.zeros(0, np.int64)
    pos = np.empty(m, dtype=np.int64)
    pos[order] = np.arange(m)
    first = np.full(units.size, m, dtype=np.int64)
    last = np.full(units.size, -1, dtype=np.int64)
    np.minimum.at(first, local, pos[gpos[s_row]])
    np.maximum.at(last, local, pos[gpos[s_row]])
    # a unit is open from the step of its first group up to that of its last (exclusive)
    width = int(np.cumsum(np.bincount(first, minlength=m + 1) - np.bincount(last, minlength=m + 1)).max()) \
        if units.size else 0
    if width > MAX_OPEN_UNITS:
        raise Declined(f"a coupled component ({m} experiences) keeps up to {width:,} shared units open at once in "
                       f"its programme's order, more than {MAX_OPEN_UNITS}: the lattice certificate cannot list "
                       "its stores")
    levels, table = _unit_tables(problem, units, local, amt, gpos[s_row], scale, step, m)
    shares: list[dict[int, int]] = [dict() for _ in range(cands.size)]
    for r, u, a in zip(s_row.tolist(), local.tolist(), amt.tolist()):
        shares[r][u] = shares[r].get(u, 0) + a
    costs, privs = cost_ints[cands], priv
    by_pos: list[list[int]] = [[] for _ in range(m)]
    for r, g in enumerate(gpos.tolist()):
        by_pos[pos[g]].append(r)
    opening: list[list[int]] = [[] for _ in range(m)]
    closing: list[list[int]] = [[] for _ in range(m)]
    for u, (f, la) in enumerate(zip(first.tolist(), last.tolist())):
        opening[f].append(u)
        closing[la].append(u)

    states: dict[tuple, tuple[np.ndarray, np.ndarray]] = {(): (np.zeros(1, np.int64), np.zeros(1, np.int64))}
    open_now: list[int] = []
    for i in range(m):
        if time.perf_counter() > deadline:
            return None
        after = sorted((set(open_now) | set(opening[i])) - set(closing[i]))
        options: list[tuple[int, int, dict[int, int]]] = [(0, 0, {})]
        options += [(int(costs[r]), int(privs[r]), shares[r]) for r in by_pos[i]]
        buckets: dict[tuple, list] = defaultdict(list)
        for n_done, (key, (c, v)) in enumerate(states.items()):
            if n_done % 4096 == 4095 and time.perf_counter() > deadline:
                return None                  # (one step over many states can take seconds)
            cover = dict(zip(open_now, key))
            for cost, worth_own, share in options:
                now = dict(cover)
                for u, a in share.items():
                    now[u] = min(now.get(u, 0) + a, levels[u])
                gained = worth_own + sum(table[u][now.get(u, 0)] for u in closing[i])
                buckets[tuple(now.get(u, 0) for u in after)].append((c, v, cost, gained))
        states, entries = {}, 0
        for key, parts in buckets.items():
            if len(parts) == 1:
                c0, v0, cost, gained = parts[0]
                c, v = c0 + cost, v0 + gained
            else:
                c = np.concatenate([p[0] + p[2] for p in parts])
                v = np.concatenate([p[1] + p[3] for p in parts])
            fits = c <= budget
            if fits.any():                   # (the all-zero state always holds the empty store)
                c, v = pareto(c[fits], v[fits])
                states[key] = (c, v)
                entries += c.size
        if entries > max_entries:
            raise Declined(f"a coupled component ({m} experiences) keeps more than {max_entries:,} (cost, value) "
                           "pairs in its programme: the lattice certificate cannot list its stores")
        open_now = after
    return states[()]


def _unit_tables(problem: Problem, units, local, amt, group, scale: int, step: Fraction, m: int):
    """Per shared unit: the level (in coverage steps) where h stops rising (coverage beyond it is worth the same)
    and its worth ``w h`` in grid steps at each level up to it."""
    n = units.size
    most = np.zeros(n, dtype=np.int64)
    # the most coverage a store gives a unit: per group its largest amount, summed
    top: dict[tuple[int, int], int] = {}
    for u, a, g in zip(local.tolist(), amt.tolist(), group.tolist()):
        top[(u, g)] = max(top.get((u, g), 0), a)
    for (u, _), a in top.items():
        most[u] += a
    if most.size and int(most.max()) >= _MAX_LEVELS:
        raise Declined("a unit of a large component can be covered in more than 100,000 steps of its grid: the "
                       "lattice certificate cannot tabulate it")
    # every (unit, level) up to its most in one evaluation, then split by unit
    count = most + 1
    unit_of = np.repeat(np.arange(n), count)
    level = np.arange(unit_of.size) - np.repeat(np.cumsum(count) - count, count)
    r = units[unit_of]
    z = level / scale
    f = problem.weights[r] * h_values(problem, r, z)
    k = on_grid(f, term_errors(problem, r, z, m), step, "a unit's worth")
    ends = np.cumsum(count)
    levels = np.zeros(n, dtype=np.int64)
    table: list[list[int]] = []
    for u in range(n):
        fu = f[ends[u] - count[u]:ends[u]]
        levels[u] = int(np.flatnonzero(fu == fu[-1])[0])   # h is non-decreasing: from here on it no longer rises
        table.append(k[ends[u] - count[u]:ends[u] - count[u] + levels[u] + 1].tolist())
    return levels, table
