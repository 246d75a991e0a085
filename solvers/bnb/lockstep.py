"""The tree DP of :mod:`memaudit_solvers.bnb.treedp` run on many components at once, one numpy step per group.

Every component decides its groups in its own order; step ``i`` decides the ``i``-th group of every
component still running.  A *state* is a component and the coverage sums of the units it leaves open,
each open unit held in a *slot* (a column of the state keys, reused once its unit closes, so an unused
slot is 0); an *entry* is a (cost, value) pair of a state, with a back-pointer to the entry it came from.
Per step, every (state, option of the component's group) pair gets its new key and the value of the
units it closes, then every (pair, entry) its cost and value, and the new frontier of each new state
is kept: all as whole-array operations, with no Python loop over states or entries.  The arithmetic is
the one-component programme's, term by term (sums clipped at saturation, a unit's ``w_r h_r(z)``
added when it closes, in unit order), and ties keep the entry a one-at-a-time loop over states,
options and entries would keep.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import numpy as np

from ..objective import h_values
from ..problem import Problem

__all__ = ["Plan", "plan", "run_lockstep"]


@dataclass
class Plan:
    """The step tables of a batch of components (groups numbered 0..n-1, component by component).

    Group ``comp_start[c] + i`` is component c's ``i``-th group in its order.  Its options are the
    rows ``opt_start[g] .. + n_opt[g]`` (candidate, -1 first for none; cost; where its coverage of
    the touched units starts in ``a_vals``); its touched units the rows ``touch_start[g] .. +
    n_touch[g]`` (unit, slot before the step or -1, slot after or -1, whether the unit closes), in
    unit order.
    """

    comp_start: np.ndarray
    lengths: np.ndarray
    n_opt: np.ndarray
    opt_start: np.ndarray
    opt_cand: np.ndarray
    opt_cost: np.ndarray
    opt_a: np.ndarray
    n_touch: np.ndarray
    touch_start: np.ndarray
    t_unit: np.ndarray
    t_old: np.ndarray
    t_new: np.ndarray
    t_close: np.ndarray
    a_vals: np.ndarray
    width: int


def _starts(counts: np.ndarray) -> np.ndarray:
    return np.cumsum(counts) - counts


def _seg(counts: np.ndarray):
    """For segments of these lengths: each item's segment and its position inside it."""
    seg = np.repeat(np.arange(counts.size), counts)
    return seg, np.arange(seg.size) - np.repeat(_starts(counts), counts)


def plan(problem: Problem, lengths: np.ndarray, cands: np.ndarray, cand_group: np.ndarray,
         pair_g: np.ndarray, pair_r: np.ndarray) -> Plan:
    """The step tables, from the groups in step order (``lengths[c]`` of component c).

    ``cands`` / ``cand_group``: every option candidate and its group, grouped (``cand_group``
    non-decreasing; in each group the order the options are tried); ``pair_g`` / ``pair_r``: the
    (group, unit) pairs of their coverage, sorted.
    """
    n_groups = int(lengths.sum())
    comp_start = _starts(lengths)
    comp_of = np.repeat(np.arange(lengths.size), lengths)
    step_of = np.arange(n_groups) - comp_start[comp_of]
    # units: first and last step that touches each (units are private to a component)
    units, r_idx = np.unique(pair_r, return_inverse=True)
    first = np.full(units.size, np.iinfo(np.int64).max)
    last = np.full(units.size, -1)
    np.minimum.at(first, r_idx, step_of[pair_g])
    np.maximum.at(last, r_idx, step_of[pair_g])
    # slots: units open between two steps (first < last) share columns, greedily by opening step
    slot = np.full(units.size, -1)
    width = 1
    comp_u = np.zeros(units.size, dtype=np.int64)
    comp_u[r_idx] = comp_of[pair_g]
    opened = np.flatnonzero(first < last)
    by_start = opened[np.lexsort((first[opened], comp_u[opened]))]
    busy: list[tuple[int, int]] = []
    free: list[int] = []
    n_slots, current = 0, -1
    for u in by_start.tolist():
        if comp_u[u] != current:
            current, busy, free, n_slots = comp_u[u], [], [], 0
        while busy and busy[0][0] <= first[u]:
            heapq.heappush(free, heapq.heappop(busy)[1])
        s = heapq.heappop(free) if free else n_slots
        n_slots = max(n_slots, s + 1)
        slot[u] = s
        heapq.heappush(busy, (int(last[u]), s))
        width = max(width, n_slots)
    # touches: the pairs, in group then unit order
    n_touch = np.bincount(pair_g, minlength=n_groups)
    step_p = step_of[pair_g]
    close = step_p == last[r_idx]
    t_old = np.where(step_p > first[r_idx], slot[r_idx], -1)
    t_new = np.where(close, -1, slot[r_idx])
    # options: per group "none", then its candidates
    n_cand = np.bincount(cand_group, minlength=n_groups)
    n_opt = n_cand + 1
    opt_start = _starts(n_opt)
    opt_cand = np.full(int(n_opt.sum()), -1, dtype=np.int64)
    cand_row = opt_start[cand_group] + 1 + np.arange(cands.size) - _starts(n_cand)[cand_group]
    opt_cand[cand_row] = cands
    opt_cost = np.zeros(opt_cand.size)
    opt_cost[cand_row] = problem.costs[cands]
    opt_group = np.repeat(np.arange(n_groups), n_opt)
    opt_a = _starts(n_touch[opt_group])
    # coverage of each option's touched units, at its position among them
    indptr = problem.coverage.indptr
    lens = indptr[cands + 1] - indptr[cands]
    ent_row, j = _seg(lens)
    pos = indptr[cands][ent_row] + j
    touch_start = _starts(n_touch)
    g_ent = cand_group[ent_row]
    span = int(units.max(initial=0)) + 1
    k = np.searchsorted(pair_g * span + pair_r, g_ent * span + problem.coverage.indices[pos])
    a_vals = np.zeros(int(n_touch[opt_group].sum()))
    a_vals[opt_a[cand_row[ent_row]] + k - touch_start[g_ent]] = problem.coverage.data[pos]
    return Plan(comp_start, lengths, n_opt, opt_start, opt_cand, opt_cost, opt_a, n_touch, touch_start,
                pair_r.astype(np.int64), t_old, t_new, close, a_vals, width)


def _state_ids(comp: np.ndarray, keys: np.ndarray):
    """Number the distinct (component, key) rows in order of first appearance; return (ids, firsts).

    Slot values become small integer codes and a row one int64 (one stable sort); a key too
    varied for that falls back to a lexicographic sort of the columns.
    """
    cols = [k for k in range(keys.shape[1]) if keys[:, k].any()]
    code = comp.astype(np.int64)
    if cols:
        vals = keys[:, cols]
        uniq = np.unique(vals)
        if (int(comp.max(initial=0)) + 1) * float(uniq.size) ** len(cols) < 2.0 ** 62:
            digits = np.searchsorted(uniq, vals)
            for k in range(len(cols)):
                code = code * uniq.size + digits[:, k]
        else:
            _, code = np.unique(np.column_stack([comp, vals]), axis=0, return_inverse=True)
            code = code.reshape(-1)
    order = np.argsort(code, kind="stable")
    ordered = code[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = ordered[1:] != ordered[:-1]
    firsts = order[new]
    rank = np.empty(firsts.size, dtype=np.int64)
    rank[np.argsort(firsts)] = np.arange(firsts.size)
    ids = np.empty(order.size, dtype=np.int64)
    ids[order] = rank[np.cumsum(new) - 1]
    return ids, np.sort(firsts)


def _pareto(ns: np.ndarray, cost: np.ndarray, value: np.ndarray, int_costs: bool) -> np.ndarray:
    """Rows kept: per state ``ns``, by cost, those worth more than every row of no larger cost
    (among equal costs and values the first row), in (state, cost) order."""
    if int_costs and ns.size and float(ns.max()) * (float(cost.max()) + 1) < 2.0 ** 62:
        order = np.argsort(ns * (int(cost.max()) + 1) + cost.astype(np.int64), kind="stable")
    else:
        order = np.lexsort((cost, ns))
    s, c, v = ns[order], cost[order], value[order]
    # running lexicographic max of (state, value): numpy orders complex numbers that way
    best = np.maximum.accumulate(s + 1j * v)
    keep = np.ones(order.size, dtype=bool)
    keep[1:] = (s[1:] != best[:-1].real) | (v[1:] > best[:-1].imag)
    kept = np.flatnonzero(keep)
    # of rows kept with one cost, the last (the largest value, first among equals)
    last = np.ones(kept.size, dtype=bool)
    last[:-1] = (s[kept[1:]] != s[kept[:-1]]) | (c[kept[1:]] != c[kept[:-1]])
    return order[kept[last]]


def run_lockstep(problem: Problem, p: Plan, sat: np.ndarray, *, budget: float, limits: np.ndarray,
                 deadline: float) -> list:
    """Run the programme on a batch of components; one result per component.

    ``sat[k]``: saturation of touch row k's unit.  Returns a list of ``(costs, values, members,
    states, entries)`` (the frontier of stores of positive value, as
    :class:`memaudit_solvers.bnb.treedp.Frontier` holds it) or None where the component created
    more than ``limits[c]`` (state, entry) pairs or ``deadline`` passed first.
    """
    n_comp = p.lengths.size
    costs = problem.costs
    int_costs = bool(np.all(costs == np.rint(costs))) and float(costs.sum()) < 2.0 ** 52
    t_w = problem.weights[p.t_unit]
    st_comp = np.arange(n_comp, dtype=np.int64)      # live states: component and key
    st_key = np.zeros((n_comp, p.width))
    e_state = np.arange(n_comp, dtype=np.int64)      # their entries, by state then cost
    e_cost, e_val = np.zeros(n_comp), np.zeros(n_comp)
    e_full = np.arange(n_comp, dtype=np.int64)       # each live entry's index in its step's numbering
    created = np.ones(n_comp)
    widest = np.ones(n_comp, dtype=np.int64)
    alive = np.ones(n_comp, dtype=bool)
    steps: list[tuple[np.ndarray, np.ndarray]] = []   # per step: (parent in the step before, candidate)
    finals: list[tuple] = []      # per step that ends components: (step, entries, components, costs, values)
    for i in range(int(p.lengths.max(initial=0))):
        es = np.searchsorted(e_state, np.arange(st_comp.size + 1))
        g_s = p.comp_start[st_comp] + i
        # (state, option) pairs, in state order then option order; only those whose cheapest entry fits
        pair_s, j = _seg(p.n_opt[g_s])
        pair_o = p.opt_start[g_s][pair_s] + j
        fit = e_cost[es[pair_s]] + p.opt_cost[pair_o] <= budget
        if not fit.all():
            pair_s, pair_o = pair_s[fit], pair_o[fit]
        pc, pg = st_comp[pair_s], g_s[pair_s]
        # every (pair, touched unit): the new sum, clipped at saturation
        pt, j = _seg(p.n_touch[pg])
        tt = p.touch_start[pg][pt] + j
        old_slot, closing = p.t_old[tt], p.t_close[tt]
        old = np.where(old_slot >= 0, st_key[pair_s[pt], np.maximum(old_slot, 0)], 0.0)
        z = np.minimum(old + p.a_vals[p.opt_a[pair_o][pt] + j], sat[tt])
        keys = st_key[pair_s]
        gone = closing & (old_slot >= 0)
        keys[pt[gone], old_slot[gone]] = 0.0
        stay = ~closing
        keys[pt[stay], p.t_new[tt[stay]]] = z[stay]
        shut = tt[closing]
        gain = np.bincount(pt[closing], weights=t_w[shut] * h_values(problem, p.t_unit[shut], z[closing]),
                           minlength=pair_s.size)
        pair_state, firsts = _state_ids(pc, keys)
        # every (pair, entry of its state) that fits the budget
        rp, j = _seg(es[pair_s + 1] - es[pair_s])
        r_e = es[pair_s[rp]] + j
        cost = e_cost[r_e] + p.opt_cost[pair_o[rp]]
        fit = cost <= budget
        if not fit.all():
            rp, r_e, cost = rp[fit], r_e[fit], cost[fit]
        value = e_val[r_e] + gain[rp]
        created += np.bincount(pc[rp], minlength=n_comp)
        new_comp, new_key = pc[firsts], keys[firsts]
        ns = pair_state[rp]
        if (created > limits).any():
            alive &= created <= limits
            keep = alive[pc[rp]]
            rp, r_e, cost, value = rp[keep], r_e[keep], cost[keep], value[keep]
            kept_state = alive[new_comp]
            ns = (np.cumsum(kept_state) - 1)[ns[keep]]
            new_comp, new_key = new_comp[kept_state], new_key[kept_state]
        # each new state's Pareto frontier
        sel = _pareto(ns, cost, value, int_costs)
        e_state, e_cost, e_val = ns[sel], cost[sel], value[sel]
        steps.append((e_full[r_e[sel]], p.opt_cand[pair_o[rp[sel]]]))
        widest = np.maximum(widest, np.bincount(new_comp, minlength=n_comp))
        if time.perf_counter() > deadline:
            alive[:] = False
            break
        done = alive & (p.lengths == i + 1)
        e_comp = new_comp[e_state]
        if done.any():
            fin = np.flatnonzero(done[e_comp])
            finals.append((i, fin, e_comp[fin], e_cost[fin], e_val[fin]))
            alive &= ~done
        live_s = alive[new_comp]
        if live_s.all():
            e_full = np.arange(e_state.size)
            st_comp, st_key = new_comp, new_key
            continue
        if not live_s.any():
            break
        live_e = alive[e_comp]
        e_full = np.flatnonzero(live_e)
        e_state, e_cost, e_val = (np.cumsum(live_s) - 1)[e_state[live_e]], e_cost[live_e], e_val[live_e]
        st_comp, st_key = new_comp[live_s], new_key[live_s]
    return _collect(n_comp, finals, steps, widest, created)


def _collect(n_comp: int, finals, steps, widest: np.ndarray, created: np.ndarray) -> list:
    """Each finished component's frontier (stores of positive value), read back through the back-pointers."""
    out: list = [None] * n_comp
    if not finals:
        return out
    f_step = np.concatenate([np.full(f[1].size, f[0]) for f in finals])
    f_idx, f_comp, f_cost, f_val = (np.concatenate([f[k] for f in finals]) for k in (1, 2, 3, 4))
    for f in finals:
        for c in np.unique(f[2]).tolist():
            out[c] = (np.zeros(0), np.zeros(0), [], int(widest[c]), int(created[c]))
    pos = f_val > 0
    f_step, f_idx, f_comp, f_cost, f_val = f_step[pos], f_idx[pos], f_comp[pos], f_cost[pos], f_val[pos]
    if f_val.size == 0:
        return out
    cur, uid = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    got_uid, got_cand = [], []
    for i in range(max(f[0] for f in finals), -1, -1):
        here = np.flatnonzero(f_step == i)
        if here.size:
            cur, uid = np.concatenate([cur, f_idx[here]]), np.concatenate([uid, here])
        parent, cand = steps[i]
        c = cand[cur]
        got_uid.append(uid[c >= 0])
        got_cand.append(c[c >= 0])
        cur = parent[cur]
    p_uid, p_cand = np.concatenate(got_uid), np.concatenate(got_cand)
    order = np.lexsort((p_cand, p_uid))
    ends = np.cumsum(np.bincount(p_uid, minlength=f_val.size)).tolist()
    flat = p_cand[order].tolist()
    members = [tuple(flat[a:b]) for a, b in zip([0] + ends[:-1], ends)]
    bounds = np.flatnonzero(np.r_[True, f_comp[1:] != f_comp[:-1], True])
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        c = int(f_comp[a])
        out[c] = (f_cost[a:b], f_val[a:b], members[a:b], int(widest[c]), int(created[c]))
    return out
