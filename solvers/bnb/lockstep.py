"""The tree DP of :mod:`memaudit_solvers.bnb.treedp` run on many components at once, one numpy step per group.

Every component decides its groups in its own order; step ``i`` decides the ``i``-th group of every
component still running.  A *state* is a component and the coverage sums of the units it leaves open,
each open unit held in a *slot* (a column of the state keys, reused once its unit closes, so an unused
slot is 0); an *entry* is a (cost, value) pair of a state, with a back-pointer to the entry it came from.
Per step, every (state, option of the component's group) pair gets its new key and the value of the
units it closes, then every (pair, entry) its cost and value, and the new frontier of each new state
is kept: all as whole-array operations, with no Python loop over states or entries.  The arithmetic is
the one-component programme's, term by term (sums clipped at saturation, a unit's ``w_r h_r(z)``
added when it closes, in unit order), and ties keep the entry the one-at-a-time loop would keep.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Mapping, Sequence

import numpy as np

from ..objective import h_values
from ..problem import Problem

__all__ = ["run_lockstep"]


def _plan(problem: Problem, comps: Sequence[Mapping[int, Sequence[int]]], orders: Sequence[Sequence[int]],
          g_units: Mapping[int, Sequence[int]]):
    """The step tables: per (step, component) its options and the units its group touches.

    Options (rows sorted by step, then component): candidate (-1: none), cost, and where their
    coverage of the touched units starts in ``a_vals``.  Touches (same order): unit, its slot before
    the step (-1: not open), its slot after (-1: it closes), whether it closes.
    """
    indptr, indices, data = problem.coverage.indptr, problem.coverage.indices, problem.coverage.data
    opt: list[tuple[int, int, int, float, int]] = []
    touch: list[tuple[int, int, int, int, int, bool]] = []
    a_vals: list[float] = []
    width = 1
    for c, (by_group, order) in enumerate(zip(comps, orders)):
        last = {r: i for i, g in enumerate(order) for r in g_units[g]}
        slot: dict[int, int] = {}
        free: list[int] = []
        n_slots = 0
        for i, g in enumerate(order):
            touched = g_units[g]
            olds = [slot.get(r, -1) for r in touched]
            for r in touched:
                if last[r] == i and r in slot:
                    heapq.heappush(free, slot.pop(r))
            for r in touched:
                if last[r] != i and r not in slot:
                    if free:
                        slot[r] = heapq.heappop(free)
                    else:
                        slot[r], n_slots = n_slots, n_slots + 1
            for r, old in zip(touched, olds):
                touch.append((i, c, r, old, -1 if last[r] == i else slot[r], last[r] == i))
            pos = {r: j for j, r in enumerate(touched)}
            opt.append((i, c, -1, 0.0, len(a_vals)))
            a_vals.extend([0.0] * len(touched))
            for u in by_group[g]:
                row = [0.0] * len(touched)
                for k in range(indptr[u], indptr[u + 1]):
                    row[pos[int(indices[k])]] = float(data[k])
                opt.append((i, c, int(u), float(problem.costs[u]), len(a_vals)))
                a_vals.extend(row)
        width = max(width, n_slots)
    o = np.array(opt, dtype=[("step", np.int64), ("comp", np.int64), ("cand", np.int64), ("cost", float),
                             ("a", np.int64)])
    t = np.array(touch, dtype=[("step", np.int64), ("comp", np.int64), ("unit", np.int64), ("old", np.int64),
                               ("new", np.int64), ("close", bool)])
    o = o[np.argsort(o["step"], kind="stable")]
    t = t[np.argsort(t["step"], kind="stable")]
    return o, t, np.asarray(a_vals, dtype=float), width


def _seg(counts: np.ndarray):
    """For segments of these lengths: each item's segment and its position inside it."""
    seg = np.repeat(np.arange(counts.size), counts)
    return seg, np.arange(seg.size) - np.repeat(np.cumsum(counts) - counts, counts)


def _state_ids(comp: np.ndarray, keys: np.ndarray):
    """Number the distinct (component, key) rows in order of first appearance; return (ids, firsts)."""
    cols = [keys[:, k] for k in range(keys.shape[1] - 1, -1, -1) if keys[:, k].any()]
    order = np.lexsort([*cols, comp])               # stable: equal rows keep their order
    new = np.ones(order.size, dtype=bool)
    new[1:] = comp[order[1:]] != comp[order[:-1]]
    for col in cols:
        new[1:] |= col[order[1:]] != col[order[:-1]]
    firsts = order[new]
    rank = np.empty(firsts.size, dtype=np.int64)
    rank[np.argsort(firsts)] = np.arange(firsts.size)
    ids = np.empty(order.size, dtype=np.int64)
    ids[order] = rank[np.cumsum(new) - 1]
    return ids, np.sort(firsts)


def run_lockstep(problem: Problem, comps: Sequence[Mapping[int, Sequence[int]]], orders: Sequence[Sequence[int]],
                 g_units: Mapping[int, Sequence[int]], sat: Mapping[int, float], *, budget: float,
                 limits: Sequence[float], deadline: float):
    """Run the programme on ``comps`` (each with its group order); one result per component.

    Returns a list of ``(costs, values, members, states, entries)`` (the frontier of stores of
    positive value, as :class:`memaudit_solvers.bnb.treedp.Frontier` holds it) or None where the
    component created more than ``limits[c]`` (state, entry) pairs or ``deadline`` passed first.
    """
    n_comp = len(comps)
    o, t, a_vals, width = _plan(problem, comps, orders, g_units)
    lengths = np.array([len(order) for order in orders], dtype=np.int64)
    limit = np.asarray(limits, dtype=float)
    n_steps = int(lengths.max()) if n_comp else 0
    o_bounds = np.searchsorted(o["step"], np.arange(n_steps + 1))
    t_bounds = np.searchsorted(t["step"], np.arange(n_steps + 1))
    t_sat = np.array([sat[int(r)] for r in t["unit"]], dtype=float)
    t_w = problem.weights[t["unit"]]
    # live states (component, key) and their entries, sorted by state then cost
    st_comp = np.arange(n_comp, dtype=np.int64)
    st_key = np.zeros((n_comp, width))
    e_state = np.arange(n_comp, dtype=np.int64)
    e_cost, e_val = np.zeros(n_comp), np.zeros(n_comp)
    e_full = np.arange(n_comp, dtype=np.int64)        # index of each live entry in its step's full numbering
    created = np.ones(n_comp)
    widest = np.ones(n_comp, dtype=np.int64)
    alive = np.ones(n_comp, dtype=bool)
    steps: list[tuple[np.ndarray, np.ndarray]] = []    # per step: (parent in the step before, candidate)
    finals: list[tuple] = []       # per step that ends components: (step, full indices, components, costs, values)
    for i in range(n_steps):
        oc, ts = o[o_bounds[i]:o_bounds[i + 1]], slice(t_bounds[i], t_bounds[i + 1])
        n_opt = np.bincount(oc["comp"], minlength=n_comp)
        n_touch = np.bincount(t["comp"][ts], minlength=n_comp)
        o_off, t_off = np.cumsum(n_opt) - n_opt, np.cumsum(n_touch) - n_touch
        es = np.searchsorted(e_state, np.arange(st_comp.size + 1))
        # (state, option) pairs, in state order then option order; only those whose cheapest entry fits
        pair_s, j = _seg(n_opt[st_comp])
        pair_o = o_off[st_comp[pair_s]] + j
        fit = e_cost[es[pair_s]] + oc["cost"][pair_o] <= budget
        pair_s, pair_o = pair_s[fit], pair_o[fit]
        pc = st_comp[pair_s]
        # every (pair, touched unit): the new sum, clipped at saturation
        pt, j = _seg(n_touch[pc])
        tt = ts.start + t_off[pc[pt]] + j
        old_slot, new_slot, closing = t["old"][tt], t["new"][tt], t["close"][tt]
        old = np.where(old_slot >= 0, st_key[pair_s[pt], np.maximum(old_slot, 0)], 0.0)
        z = np.minimum(old + a_vals[oc["a"][pair_o[pt]] + j], t_sat[tt])
        keys = st_key[pair_s]
        gone = closing & (old_slot >= 0)
        keys[pt[gone], old_slot[gone]] = 0.0
        keys[pt[~closing], new_slot[~closing]] = z[~closing]
        units = t["unit"][tt[closing]]
        gain = np.bincount(pt[closing], weights=t_w[tt[closing]] * h_values(problem, units, z[closing]),
                           minlength=pair_s.size)
        pair_state, firsts = _state_ids(pc, keys)
        # every (pair, entry of its state) that fits the budget
        n_e = es[pair_s + 1] - es[pair_s]
        rp, j = _seg(n_e)
        r_e = es[pair_s[rp]] + j
        cost = e_cost[r_e] + oc["cost"][pair_o[rp]]
        fit = cost <= budget
        rp, r_e, cost = rp[fit], r_e[fit], cost[fit]
        value = e_val[r_e] + gain[rp]
        created += np.bincount(pc[rp], minlength=n_comp)
        alive &= created <= limit
        keep = alive[pc[rp]]
        rp, r_e, cost, value = rp[keep], r_e[keep], cost[keep], value[keep]
        new_comp, new_key = pc[firsts], keys[firsts]
        kept_state = alive[new_comp]
        renumber = np.cumsum(kept_state) - 1
        new_comp, new_key = new_comp[kept_state], new_key[kept_state]
        ns = renumber[pair_state[rp]]
        # each new state's Pareto frontier: cost order, values strictly rising (the first among ties)
        order = np.lexsort((-value, cost, ns))
        rank = np.searchsorted(np.sort(value), value)      # equal values, equal ranks
        combined = (ns * (rank.size + 1) + rank)[order]
        best = np.maximum.accumulate(combined)
        sel = order[np.concatenate([[True], combined[1:] > best[:-1]])] if order.size else order
        e_state, e_cost, e_val = ns[sel], cost[sel], value[sel]
        steps.append((e_full[r_e[sel]], oc["cand"][pair_o[rp[sel]]]))
        widest = np.maximum(widest, np.bincount(new_comp, minlength=n_comp))
        if time.perf_counter() > deadline:
            alive[:] = False
            break
        done = alive & (lengths == i + 1)
        if done.any():
            fin = np.flatnonzero(done[new_comp[e_state]])
            finals.append((i, fin, new_comp[e_state[fin]], e_cost[fin], e_val[fin]))
            alive &= ~done
        # carry the live components' states and entries to the next step
        live_e = alive[new_comp[e_state]]
        live_s = alive[new_comp]
        renumber = np.cumsum(live_s) - 1
        e_full = np.flatnonzero(live_e)
        e_state, e_cost, e_val = renumber[e_state[live_e]], e_cost[live_e], e_val[live_e]
        st_comp, st_key = new_comp[live_s], new_key[live_s]
        if not alive.any():
            break
    return _collect(n_comp, finals, steps, widest, created)


def _collect(n_comp: int, finals, steps, widest: np.ndarray, created: np.ndarray) -> list:
    """Each finished component's frontier (stores of positive value), read back through the back-pointers."""
    out: list = [None] * n_comp
    if not finals:
        return out
    f_step = np.concatenate([np.full(f[1].size, f[0]) for f in finals])
    f_idx, f_comp, f_cost, f_val = (np.concatenate([f[k] for f in finals]) for k in (1, 2, 3, 4))
    pos = f_val > 0
    f_step, f_idx, f_comp, f_cost, f_val = f_step[pos], f_idx[pos], f_comp[pos], f_cost[pos], f_val[pos]
    cur, uid = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    got_uid, got_cand = [], []
    for i in range(max(f[0] for f in finals), -1, -1):
        here = np.flatnonzero(f_step == i)
        cur, uid = np.concatenate([cur, f_idx[here]]), np.concatenate([uid, here])
        parent, cand = steps[i]
        c = cand[cur]
        got_uid.append(uid[c >= 0])
        got_cand.append(c[c >= 0])
        cur = parent[cur]
    p_uid, p_cand = np.concatenate(got_uid), np.concatenate(got_cand)
    order = np.lexsort((p_cand, p_uid))
    split = np.split(p_cand[order], np.cumsum(np.bincount(p_uid, minlength=f_val.size))[:-1])
    members = [tuple(m.tolist()) for m in split]
    for f in finals:
        for c in np.unique(f[2]).tolist():
            out[c] = (np.zeros(0), np.zeros(0), [], int(widest[c]), int(created[c]))
    for c in np.unique(f_comp).tolist():
        mine = np.flatnonzero(f_comp == c)
        out[c] = (f_cost[mine], f_val[mine], [members[k] for k in mine.tolist()], int(widest[c]), int(created[c]))
    return out
