"""bnb's integer multiple-choice knapsack: dynamic programming over the options reduced-cost fixing keeps.

A node's Lagrangian bound is ``const + max_X sum_{o in X} profit_o`` over one option per group within
the budget; its LP value is computed in :mod:`memaudit_solvers.bnb.bound`, its integer value here when
the costs lie on a grid.  Options whose forced bound (``ub_opt``) cannot beat the incumbent by a grid
step are left out first: every better store uses only the others, and any store using one of them is
worth at most the largest ``ub_opt`` left out, so ``max(const + DP over the kept options, that largest
ub_opt)`` bounds the node.  A group with one kept option takes it (its cost and profit are constants);
the table runs over the remaining groups only.
"""

from __future__ import annotations

import math
import time

import numpy as np

__all__ = ["mckp_table", "kept_mckp", "DP_LIMIT"]

#: default largest table (options x cost units) of the DP bound.  A cell is one vector step (about
#: 1.5 ns here: 100 million cells in 0.16 s; a store traced back costs one step more), so a billion
#: cells is about 1.5-3 s, spent only where the knapsack LP leaves the node open.  Memory is
#: ``O(sqrt(groups) x cost units)`` (:func:`mckp_table` keeps checkpoints, not a choice per cell).
#: 20 million, the first default, left ``random_problem(10000, 1)`` at a 5 % budget without it (100
#: million cells) and its bound on the knapsack LP's, 0.98 above OPT on a 0.5 grid, for any search
#: time; ``random_problem(30000, 1)`` at 10 % needs 550 million.
DP_LIMIT = 1_000_000_000


def _max_step(table: np.ndarray, profit: np.ndarray, cost_units: np.ndarray, first: int, last: int,
              out: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """One group (options ``first .. last - 1``) added to ``table``, into ``out`` (``scratch``: a
    buffer of the same size): each entry is the largest of the tables moved by an option's cost and
    profit.  Two vector operations per option and no temporary (a masked copy that also recorded
    each entry's option took 230 microseconds for 5 options on 15,000 cost units here, this 37: the
    trace finds the options afterwards, see :func:`mckp_table`).
    """
    width = table.size
    out.fill(-np.inf)
    for o in range(first, last):
        c = int(cost_units[o])
        if c >= width:
            continue
        np.add(table[:width - c], profit[o], out=scratch[:width - c])
        np.maximum(out[c:], scratch[:width - c], out=out[c:])
    return out


def mckp_table(profit: np.ndarray, cost_units: np.ndarray, starts: np.ndarray, cap: int,
               deadline: float = math.inf, trace_above: float = -math.inf):
    """Best total profit of one option per group (options in contiguous segments from ``starts``) of
    total cost units at most ``cap``; returns ``(value, picked)`` (-inf and [] when nothing fits), or
    None when ``deadline`` (a ``time.perf_counter`` value) passes before the last group.

    ``table[j]`` is the best profit of cost exactly ``j`` so far; each option moves ``table[j - c]``
    to ``j`` (a slice, no index table).  Among equal profits the first option of the group wins, as
    ``argmax`` would.  Time is one vector operation of ``cap + 1`` per option.  The options picked
    are traced back only when the value exceeds ``trace_above`` and the deadline allows (else
    ``picked`` is None): the pass
    keeps the table every ``ceil(sqrt(groups))`` groups, and the trace re-runs one such block at a
    time from its checkpoint, keeping that block's tables, and walks back through them: a group's
    choice is its first option whose move gives the entry (the same float sum, so an exact match).
    So memory is ``O(sqrt(groups) x (cap + 1))`` and a trace costs one more pass.

    Examples
    --------
    >>> mckp_table(np.array([0.0, 3.0, 5.0, 0.0, 4.0]), np.array([0, 2, 3, 0, 2]), np.array([0, 3]), 4)
    (7.0, [1, 4])
    >>> mckp_table(np.array([0.0, 3.0, 5.0, 0.0, 4.0]), np.array([0, 2, 3, 0, 2]), np.array([0, 3]), 4,
    ...            trace_above=7.0)
    (7.0, None)
    """
    n_seg = starts.size
    ends = np.append(starts[1:], profit.size)
    width = cap + 1
    table = np.full(width, -np.inf)
    table[0] = 0.0
    spare, scratch = np.empty(width), np.empty(width)      # the pass alternates two tables
    block = max(1, math.isqrt(max(n_seg - 1, 0)) + 1)        # ceil(sqrt(n_seg)) for n_seg >= 1
    checkpoints = []
    clock = time.perf_counter
    for s in range(n_seg):
        if clock() > deadline:
            return None
        if s % block == 0:
            checkpoints.append(table.copy())
        table, spare = _max_step(table, profit, cost_units, int(starts[s]), int(ends[s]), spare, scratch), table
    j = int(np.argmax(table))
    if not np.isfinite(table[j]):
        return -math.inf, []
    value = float(table[j])
    if not value > trace_above:
        return value, None
    picked = []
    for b in range(len(checkpoints) - 1, -1, -1):
        if clock() > deadline:
            return value, None          # the value stands; the store is not traced
        lo, hi = b * block, min(n_seg, (b + 1) * block)
        tables = [checkpoints[b]]
        for s in range(lo, hi):
            tables.append(_max_step(tables[-1], profit, cost_units, int(starts[s]), int(ends[s]),
                                    np.empty(width), scratch))
        for s in range(hi - 1, lo - 1, -1):
            # the first option of the group whose move gives the entry (the same float sum as the pass)
            before, target = tables[s - lo], tables[s - lo + 1][j]
            for o in range(int(starts[s]), int(ends[s])):
                c = int(cost_units[o])
                if c <= j and before[j - c] + profit[o] == target:
                    break
            picked.append(o)
            j -= int(cost_units[o])
    return value, picked[::-1]


def kept_mckp(profit: np.ndarray, cost_units: np.ndarray, seg_of: np.ndarray, n_seg: int, keep: np.ndarray,
              cap: int, max_cells: int, deadline: float = math.inf, trace_above: float = -math.inf):
    """:func:`mckp_table` over the options ``keep`` marks (options sorted by group ``seg_of``).

    Groups with one kept option take it.  Returns ``(value, picked)`` with ``picked`` indices into
    the options (None when the value is not above ``trace_above``: no store is traced back), or None
    when the table would exceed ``max_cells`` cells (options times cost units) or ``deadline``
    passes first.
    """
    kept = np.flatnonzero(keep)
    per_seg = np.bincount(seg_of[kept], minlength=n_seg)
    forced = kept[per_seg[seg_of[kept]] == 1]
    rest = kept[per_seg[seg_of[kept]] >= 2]
    cap -= int(cost_units[forced].sum())
    if rest.size:
        max_use = int(np.maximum.reduceat(cost_units[rest],
                                          np.flatnonzero(np.r_[True, seg_of[rest][1:] != seg_of[rest][:-1]])).sum())
        cap = min(cap, max_use)
    if cap < 0 or per_seg.min(initial=1) == 0:
        return -math.inf, []
    if (cap + 1) * rest.size > max_cells:
        return None
    base = float(profit[forced].sum()) if forced.size else 0.0
    if rest.size == 0:
        return base, forced.tolist()
    starts = np.flatnonzero(np.r_[True, seg_of[rest][1:] != seg_of[rest][:-1]])
    out = mckp_table(profit[rest], cost_units[rest], starts, cap, deadline, trace_above - base)
    if out is None:
        return None
    value, picked = out
    if not math.isfinite(value):
        return -math.inf, []
    if picked is None:
        return base + value, None
    return base + value, sorted(forced.tolist() + rest[picked].tolist())
