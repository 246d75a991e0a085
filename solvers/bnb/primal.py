"""bnb's primal heuristics: roundings of a relaxation and time-boxed sub-MIPs at the root.

The stores found here are only *offered* to the search (which re-checks feasibility and evaluates
F with :func:`memaudit_solvers.objective.evaluate`); they never enter a bound, so the optimality proof stays
bnb's own.
"""

from __future__ import annotations

import heapq
import inspect
import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..greedy import greedy_store
from ..objective import budget_slack, coverage_sums, h_values
from ..problem import Problem
from ..result import SolverError
from .mckp import kept_mckp
from .nodelp import column_lp

if TYPE_CHECKING:  # pragma: no cover
    from .search import Search

__all__ = ["sub_mip_store", "node_lp_sub_mip_store", "neighbourhood", "round_store", "upgrade_store", "core_dp_store", "core_groups", "root_sub_mip", "root_core_mip", "greedy",
           "exchange_greedy", "shortfall_units", "repair_groups", "repair_sub_mip_store", "root_repair"]

#: LP values below this count as zero when the support of the LP solution is read
SUPPORT_TOL = 1e-6

#: seconds the root's sub-MIP heuristic may take at most (and at most 30 % of the time left)
SUB_MIP_SECONDS = 5.0

#: the cap instead of :data:`SUB_MIP_SECONDS` once a root sub-MIP of the same solve (restarts included) ran
#: out of its time unproved: HiGHS then spent it at the root of the sub-MIP (1,500 cut rows, a 1e-5 grid),
#: and the next roots' sub-MIPs, on as many candidates, did the same.  summary_problem(1000, s, restate=0.8)
#: at 10 %: five sub-MIPs of 5 s each; side by side (alternating, 25 cells of the summary families at
#: n = 200-3,000, 5-25 %): 11 cells median 0.912, total 0.857 ((1000, 0) at 10 % 30.0 -> 18.1 s, (1000, 2)
#: 53.0 -> 45.7 s); 14 more cells median 0.994, total 0.997 (2 s instead of 1 s: 1.023, 0.868)
SUB_MIP_SECONDS_AGAIN = 1.0

#: whether the root's sub-MIP also runs at a root whose exact one-unit cuts (:mod:`memaudit_solvers.bnb.hull`)
#: found some: it does not, since with that closure the root's bound is tight and the search finds the optimum itself,
#: while the sub-MIP (HiGHS on 93-99 % of the candidates there) repeats HiGHS's whole solve.  Side by side
#: (36 restated and plain summaries, n = 200 / 500, 5-25 %): total time 0.74 of with it, restated summaries
#: at 10 % median 0.88 (0.40-1.00: (500, 2) 22.6 -> 9.0 s), plain summaries 0.98-1.02; summaries at
#: n = 1,000 / 3,000 and 10 / 25 %, 0.97; restated random problems (n = 200-3,000) 0.79
SUB_MIP_AFTER_HULL = False

#: groups in the core of the root's sub-MIP when no unit is coupled
CORE_GROUPS = 300

#: largest table (cells) of the knapsack DP on a core of groups before reduced-cost fixing (a
#: heuristic step: it must stay cheap)
CORE_DP_CELLS = 2_000_000

#: largest number of candidates kept by reduced-cost fixing that the root's sub-MIP takes in full
#: (more, and it takes only the LP's neighbourhood).  5,000 made the sub-MIP on 3,000-3,300 survivors
#: HiGHS solving nearly the whole problem (1.8-3.3 s a call on summary_problem(1000-3000, s) at 25 %);
#: with 2,000 those runs took 20-25 % less in all (n = 1,000 seed 1: 5.3 -> 4.0 s; n = 3,000 seeds 1, 2:
#: 12.1 -> 10.9 s and 6.8 -> 5.6 s), n = 500 the same; 500 was slower (n = 1,000 seed 2: 5.2 -> 9.6 s)
SURVIVOR_CAP = 2000


#: greedy_store stops at a deadline in the versions that take one
_GREEDY_DEADLINE = "deadline" in inspect.signature(greedy_store).parameters


def greedy(problem: Problem, budget: float, deadline: float, start=()) -> np.ndarray:
    """:func:`memaudit_solvers.greedy.greedy_store`, stopped at ``deadline`` when it takes one."""
    extra: dict[str, Any] = {"deadline": deadline} if _GREEDY_DEADLINE else {}
    return greedy_store(problem, budget, start=start, **extra)


#: passes of :func:`exchange_greedy` over every candidate, at most (a pass that moves nothing ends it)
EXCHANGE_PASSES = 4


def _exchange_gains(problem: Problem, sums: np.ndarray, cands: np.ndarray, held: np.ndarray) -> np.ndarray:
    """``F(S - held + v) - F(S)`` for each v of ``cands`` (``held[i]``: the candidate of v's group in
    S, or -1), with ``sums`` the coverage sums of S."""
    cov = problem.coverage
    ptr, ind, val = cov.indptr, cov.indices, cov.data
    has = held >= 0
    hc = np.where(has, held, 0)
    n_v = ptr[cands + 1] - ptr[cands]
    n_c = np.where(has, ptr[hc + 1] - ptr[hc], 0)
    # entries of v (+a) then of the held candidate (-a), one segment per v
    pos_v = np.repeat(ptr[cands] - np.cumsum(n_v) + n_v, n_v) + np.arange(int(n_v.sum()))
    pos_c = np.repeat(ptr[hc] - np.cumsum(n_c) + n_c, n_c) + np.arange(int(n_c.sum()))
    owner = np.concatenate([np.repeat(np.arange(cands.size), n_v), np.repeat(np.arange(cands.size), n_c)])
    units = np.concatenate([ind[pos_v], ind[pos_c]])
    delta = np.concatenate([val[pos_v], -val[pos_c]])
    # add up the entries of the same (v, unit) pair, then score each pair's change of h
    key = owner.astype(np.int64) * problem.n_units + units
    pairs, inv = np.unique(key, return_inverse=True)
    d = np.bincount(inv, weights=delta, minlength=pairs.size)
    p_owner, p_unit = pairs // problem.n_units, pairs % problem.n_units
    before = sums[p_unit]
    change = problem.weights[p_unit] * (h_values(problem, p_unit, before + d) - h_values(problem, p_unit, before))
    return np.bincount(p_owner, weights=change, minlength=cands.size)


def _move_gain(problem: Problem, sums: np.ndarray, v: int, c: int) -> float:
    """``F(S - c + v) - F(S)`` for one move (``c = -1``: v's group holds nothing in S), with ``sums``
    the coverage sums of S: :func:`_exchange_gains` for one candidate, 5-7 times faster on the
    few entries of one move (the exchange greedy re-scores every move it pops)."""
    cov = problem.coverage
    ptr, ind, val = cov.indptr, cov.indices, cov.data
    d = dict(zip(ind[ptr[v]:ptr[v + 1]].tolist(), val[ptr[v]:ptr[v + 1]].tolist()))
    if c >= 0:
        for r, a in zip(ind[ptr[c]:ptr[c + 1]].tolist(), val[ptr[c]:ptr[c + 1]].tolist()):
            d[r] = d.get(r, 0.0) - a
    us = np.fromiter(d.keys(), dtype=np.int64, count=len(d))
    before = sums[us]
    after = before + np.fromiter(d.values(), dtype=float, count=len(d))
    if problem.is_min1:
        return float(problem.weights[us] @ (np.minimum(after, 1.0) - np.minimum(before, 1.0)))
    return float(problem.weights[us] @ (h_values(problem, us, after) - h_values(problem, us, before)))


def exchange_greedy(problem: Problem, budget: float, deadline: float, start=()) -> np.ndarray:
    """The cost-benefit greedy where a group may also exchange its candidate for another.

    A move adds a candidate of a group with none, or exchanges a group's candidate for another of
    the same group; the move of largest gain per extra cost that fits the budget is made (one that
    gains and frees budget first), scored lazily from a heap and re-scored before it is made.
    Passes over every candidate repeat while one moves something (at most :data:`EXCHANGE_PASSES`),
    since an exchange gains more as the rest of the store grows.  :func:`greedy` keeps the first
    candidate of each group, so a cheap fact taken early locks its group: on
    ``summary_problem(200, s, restate=0.8)`` at 25 % (seeds 0-4) it ends at 121.4-150.3 with
    54-64 % of the budget left, where this finds the optimum (130.8-158.4, every unit saturated).

    Returns the store (sorted candidate indices), within the budget, one candidate per group.
    """
    p = problem
    start = np.asarray(start, dtype=np.int64)
    cur = np.full(p.n_groups, -1, dtype=np.int64)
    cur[p.groups[start]] = start
    sums = coverage_sums(p, start)
    left = budget + budget_slack(budget) - float(p.costs[start].sum())
    costs, groups, tol = p.costs, p.groups, 1e-12
    # gains per extra cost are ranked in a power-of-two unit near the largest cost (an exact
    # rescaling: costs of 1e-320 would overflow gain / cost)
    unit = math.ldexp(1.0, math.frexp(float(costs.max()) if costs.size else 1.0)[1])
    every = np.flatnonzero(np.diff(p.coverage.indptr) > 0)

    def scored(cands):
        held = cur[groups[cands]]
        gain = _exchange_gains(p, sums, cands, held)
        extra = costs[cands] - np.where(held >= 0, costs[np.maximum(held, 0)], 0.0)
        ok = (held != cands) & (gain > tol) & (extra <= left)
        with np.errstate(divide="ignore"):
            key = np.where(extra > 0, -gain / np.where(extra > 0, extra / unit, 1.0), -np.inf)
        return ok, key

    cov = p.coverage
    ptr, ind, val = cov.indptr, cov.indices, cov.data
    for _ in range(EXCHANGE_PASSES):
        moved = False
        ok, key = scored(every)
        heap = list(zip(key[ok].tolist(), every[ok].tolist()))
        heapq.heapify(heap)
        while heap and time.perf_counter() < deadline:
            _, v = heapq.heappop(heap)
            c = int(cur[groups[v]])
            if c == v:
                continue
            extra = costs[v] - (costs[c] if c >= 0 else 0.0)
            if extra > left:
                continue                # the budget first: it is cheaper to check than the gain
            gain = _move_gain(p, sums, v, c)
            if gain <= tol:
                continue
            key1 = -gain / (extra / unit) if extra > 0 else -np.inf
            if heap and key1 > heap[0][0] + tol:
                heapq.heappush(heap, (key1, v))     # worse than it was: its turn comes later
                continue
            if c >= 0:
                sums[ind[ptr[c]:ptr[c + 1]]] -= val[ptr[c]:ptr[c + 1]]
                left += costs[c]
            sums[ind[ptr[v]:ptr[v + 1]]] += val[ptr[v]:ptr[v + 1]]
            left -= costs[v]
            cur[groups[v]] = v
            moved = True
        if not moved:
            break
    return np.sort(cur[cur >= 0])


def neighbourhood(problem: Problem, opt_cand: np.ndarray, opt_group: np.ndarray, free_idx: np.ndarray,
                  lp_x: np.ndarray, keep) -> np.ndarray:
    """Candidates of the sub-MIP: the LP's support, every option of a group the LP splits, and ``keep``."""
    oc = opt_cand[free_idx]
    grp = opt_group[free_idx]
    frac = (lp_x > SUPPORT_TOL) & (lp_x < 1 - SUPPORT_TOL)
    split = np.zeros(problem.n_groups, dtype=bool)
    split[grp[frac]] = True
    take = (oc >= 0) & ((lp_x > SUPPORT_TOL) | split[grp])
    return np.unique(np.concatenate([oc[take], np.asarray(keep, dtype=np.int64)]))


def sub_mip_store(problem: Problem, budget: float, cands: np.ndarray, time_limit: float, fixed=None, hint=None):
    """Best store HiGHS finds within ``time_limit`` seconds using only ``cands``, or None; and whether
    HiGHS proved it the best such store (only ever used to skip a later sub-MIP, never in a bound).

    The candidates' groups and units are renumbered into a small :class:`Problem`; the store
    returned is in the original candidate numbering.  With ``fixed`` (candidates of other groups that
    stay, their cost already out of ``budget``) a unit's h is shifted by what they cover,
    ``h_r(z + c_r) - h_r(c_r)`` (still concave, non-decreasing and 0 at 0), so the sub-problem's F is
    what ``cands`` add to theirs; ``hint`` (candidates, those among ``cands`` used) is HiGHS's MIP start.
    """
    from ..milp import milp_highs  # the LP/MIP engine is used as a heuristic only

    cands = np.asarray(cands, dtype=np.int64)
    if cands.size == 0 or time_limit <= 0:
        return None, False
    cov = problem.coverage[cands]
    units = np.unique(cov.indices)
    if units.size == 0:
        return None, True
    slopes, intercepts = problem.h_slopes[units], problem.h_intercepts[units]
    if fixed is not None:
        c = coverage_sums(problem, fixed)[units]
        intercepts = np.maximum(intercepts + slopes * c[:, None] - h_values(problem, units, c)[:, None], 0.0)
        intercepts[np.arange(units.size), intercepts.argmin(axis=1)] = 0.0     # h(0) = 0 exactly
    _, groups = np.unique(problem.groups[cands], return_inverse=True)
    sub = Problem.build(problem.costs[cands], groups, cov[:, units], problem.weights[units],
                        h_slopes=slopes, h_intercepts=intercepts, n_groups=int(groups.max()) + 1)
    start = None if hint is None else np.flatnonzero(np.isin(cands, hint))
    try:
        res = milp_highs(sub, budget, time_limit=time_limit, hint=start if start is not None and start.size else None)
    except SolverError:
        return None, False  # e.g. a store over the budget by HiGHS's float tolerance: a heuristic just offers nothing
    proved = res.status == "optimal"
    if res.chosen is None or res.chosen.size == 0:
        return None, proved
    return cands[res.chosen], proved


def round_store(search: Search, info: dict, x_opt=None) -> list[int]:
    """Offer S + the options a relaxation prefers, cut to the budget; return that store."""
    p = search.p
    store = [int(u) for u in info["store"]]
    if x_opt is not None:
        oc = search.opt_cand[info["free_idx"]]
        take = (x_opt > 0.5) & (oc >= 0)
        extra = oc[take][np.argsort(-x_opt[take], kind="stable")]
    else:
        oc = search.opt_cand[info["free_idx"]][info["pick"]]
        extra = oc[oc >= 0]
    spent = float(p.costs[store].sum()) if store else 0.0
    for u in extra:
        if spent + p.costs[u] <= search.budget + search.slack:
            store.append(int(u))
            spent += p.costs[u]
    search.offer(store)
    return store


def upgrade_store(search: Search, info: dict) -> None:
    """Offer the Lagrangian choice upgraded greedily (the multiple-choice knapsack's greedy).

    ``info['pick']`` (one option per group, within the budget) is the start; then, best extra
    profit per extra cost first, each group moves at most once to an option of larger profit
    whose extra cost still fits.
    """
    pick, profit, cost, seg_of = info["pick"], info["profit"], info["cost"], info["seg_of"]
    cur = np.zeros(info["starts"].size, dtype=np.int64)
    cur[seg_of[pick]] = np.flatnonzero(pick)
    gain = profit - profit[cur[seg_of]]
    extra = cost - cost[cur[seg_of]]
    up = np.flatnonzero(gain > 0)
    if up.size == 0:
        return
    with np.errstate(divide="ignore", over="ignore"):      # costs near the float limits: +inf orders fine
        ratio = np.where(extra[up] > 0, gain[up] / np.where(extra[up] > 0, extra[up], 1.0), np.inf)
    left = info["rest"] - float(cost[cur].sum()) + search.slack
    moved = np.zeros(cur.size, dtype=bool)
    for o in up[np.argsort(-ratio, kind="stable")].tolist():
        s = seg_of[o]
        if not moved[s] and extra[o] <= left:
            left -= extra[o]
            cur[s] = o
            moved[s] = True
    oc = search.opt_cand[info["free_idx"][cur]]
    search.offer(np.concatenate([info["store"], oc[oc >= 0]]))


def _seconds(search: Search) -> float:
    cap = SUB_MIP_SECONDS_AGAIN if search.sub_mip_ran_out else SUB_MIP_SECONDS
    return min(cap, 0.3 * (search.deadline - time.perf_counter()))


#: the root's sub-MIP (not the core MIP, whose store has a part fixed outside it) is HiGHS on the search's
#: node LP with every cut of the root's rounds as rows, over the sub-MIP's candidates, rather than on the
#: sub-problem they span (:func:`sub_mip_store`).  Side by side (git 56c5159, a fresh problem per run):
#: restated summaries n = 200-1,000 at 5-25 %, total time 0.90 (10 %: median 0.92; (1000, 0) 21.6 -> 13.7 s,
#: (1000, 1) 10.4 -> 7.4 s: HiGHS proves the sub-MIP in 1.5 s where it took 4.5 s on the bare sub-problem);
#: summaries and restated random problems n = 500-3,000, total 1.02 (one run 2.8 -> 5.3 s,
#: summary_problem(500, 2) at 25 %, where HiGHS's own model with integral y is the stronger).  Tried before
#: the rounds dropped their unpriced tableau cuts, it was 1.17 on summaries (the dense rows slowed HiGHS)
SUB_MIP_ON_NODE_LP = True

#: no root sub-MIP over candidates a sub-MIP of the same search proved its best store among (the
#: patient pass of a root, :data:`memaudit_solvers.bnb.search.PATIENT_ROOT`): it could not find a
#: better store.  summary_problem(1000, 1, restate=0.8) at 5 %: the last restart's two sub-MIPs over
#: the same 330 candidates took 0.94 s each; the solve 4.74 -> 3.92 s (HiGHS 4.0 s)
SKIP_PROVED = True

#: a cut row of the node LP with more nonzeros than this on the sub-MIP's columns stays out of the
#: sub-MIP (every other row goes in).  The dense rows are the tableau cuts' (the one-unit cuts have a
#: unit's candidates); with a dozen of them among 700 cuts HiGHS spent the sub-MIP's 5 s at its
#: root: summary_problem(1000, 1, restate=0.8) at 5 %, 1,463 candidates, not proved in 5.0 s with
#: them, proved in 1.85 s without; the solve 16.5-22.0 -> 6.9-8.8 s (HiGHS 7.9 s).  23 cells of the
#: summary families of 1.4 s or more (n = 100-1,000, 5-25 %) side by side: median 0.997, total 0.857;
#: without any tableau cut (by origin, not density) total 0.899, without any cut at all 0.834 on 66 cells
SUB_MIP_MAX_CUT_NNZ = 100


def node_lp_sub_mip_store(search: Search, cands: np.ndarray, time_limit: float):
    """Best store HiGHS finds within ``time_limit`` seconds in the search's node LP made a MIP over ``cands``,
    or None; and whether HiGHS proved it the best such store (only ever used to skip a later sub-MIP).

    The model is the node LP's rows with the node's bounds (the cuts of the root's rounds among them, but
    those denser than :data:`SUB_MIP_MAX_CUT_NNZ`: each holds at every store, and ``y_r`` is at most
    ``h_r`` of the coverage) on the columns of ``cands`` and of
    every unit, the candidates integer: its optimum is the best store of ``cands`` the node allows
    (the root's: what a restart fixed in, the groups it left no 'none').  The incumbent, when
    it uses only ``cands``, is HiGHS's MIP start.  HiGHS's default feasibility tolerances: with primal and integrality
    tolerances of 1e-10 it "proved" 702.5988 on ``summary_problem(1000, 1, restate=0.8)`` at 10 % where
    a store of those candidates is worth 702.6119 (with 1e-7: 702.6119, proved).  The store comes back to
    :meth:`Search.offer`, which checks the budget exactly and evaluates F itself.
    """
    node_lp = search.node_lp
    if node_lp is None:
        return None, False
    hs = node_lp.hs
    from ..milp.highs import _new_silent_highs
    from ..milp.model import RANDOM_SEED

    full = node_lp.h.getLp()          # the node's bounds and every cut row; only cands' columns go on
    n_x, n_y = node_lp.n_x, node_lp.n_y
    cands = np.unique(np.asarray(cands, dtype=np.int64))
    cols = np.concatenate([cands, n_x + np.arange(n_y)])
    sub = sp.csr_array(node_lp.matrix[:, cols])
    keep = np.ones(sub.shape[0], dtype=bool)           # the rows of the model; dense cuts stay out
    keep[node_lp.cut_row0:] = np.diff(sub.indptr)[node_lp.cut_row0:] <= SUB_MIP_MAX_CUT_NNZ
    lp = column_lp(hs, sp.csc_array(sub[keep]), np.asarray(full.col_cost_)[cols],
                   np.asarray(full.col_lower_)[cols], np.asarray(full.col_upper_)[cols],
                   np.asarray(full.row_lower_)[keep], np.asarray(full.row_upper_)[keep])
    lp.integrality_ = [hs.HighsVarType.kInteger] * cands.size + [hs.HighsVarType.kContinuous] * n_y
    h = _new_silent_highs(hs)
    for name, value in {"threads": 1, "time_limit": float(time_limit), "mip_rel_gap": 0.0,
                        "mip_abs_gap": max(search.delta, 0.0) * 0.99 / node_lp.w_scale,
                        "random_seed": RANDOM_SEED}.items():
        h.setOptionValue(name, value)
    h.passModel(lp)
    inc = np.asarray(search.inc_store, dtype=np.int64)
    if inc.size and np.isin(inc, cands).all():
        p = search.p
        y = np.minimum(h_values(p, np.arange(n_y), coverage_sums(p, inc)), node_lp.col_hi[n_x:])
        sol = hs.HighsSolution()
        sol.col_value = np.concatenate([np.isin(cands, inc).astype(float), y]).tolist()
        sol.value_valid = True
        h.setSolution(sol)
    h.run()
    proved = h.getModelStatus() == hs.HighsModelStatus.kOptimal
    if h.getInfo().primal_solution_status < 2:
        return None, proved
    col = np.asarray(h.getSolution().col_value)
    return cands[col[:cands.size] > 0.5], proved


def _run_sub_mip(search: Search, budget: float, cands: np.ndarray, seconds: float, outside=None) -> bool:
    """Offer the sub-MIP's store; say whether HiGHS proved it the best store of ``cands``."""
    t0 = time.perf_counter()
    if SUB_MIP_ON_NODE_LP and outside is None and search.node_lp is not None:
        store, proved = node_lp_sub_mip_store(search, cands, seconds)
    else:
        store, proved = sub_mip_store(search.p, budget, cands, seconds, fixed=outside)
    search.stats["sub_mip_seconds"] = search.stats.get("sub_mip_seconds", 0.0) + time.perf_counter() - t0
    search.stats["sub_mip_candidates"] = int(cands.size)
    search.stats["sub_mips"] += 1
    if store is not None:
        search.offer(store if outside is None else np.concatenate([outside, store]))
    return proved


def root_sub_mip(search: Search, info: dict, lp_x: np.ndarray):
    """Offer the store of a time-boxed sub-MIP on the LP's open groups; None if that closes the root.

    Not run at a root whose exact one-unit cuts found some (:data:`SUB_MIP_AFTER_HULL`).  HiGHS
    solves it on the node LP with the root's cuts (:func:`node_lp_sub_mip_store`,
    :data:`SUB_MIP_ON_NODE_LP`).  The sub-MIP takes the LP's support and split groups and, when there are at most
    :data:`SURVIVOR_CAP` of them, every candidate reduced-cost fixing keeps (an improving store
    uses only those).  When HiGHS proves its store the best of those candidates they are kept in
    ``search.sub_mip_proved``: a restart on a subset of them skips its sub-MIP (``skip_sub_mip``),
    which could not find a better store (on ``summary_problem(n, s)`` at 25 % the second sub-MIP
    took 0.3-0.8 s and never improved).
    """
    seconds = _seconds(search)
    if seconds <= 0.05 or search.skip_sub_mip or (search.hull_found and not SUB_MIP_AFTER_HULL):
        return info
    cands = neighbourhood(search.p, search.opt_cand, search.opt_group, info["free_idx"], lp_x,
                          np.concatenate([info["store"], search.inc_store]))
    oc = search.opt_cand[info["free_idx"]]
    kept = oc[~np.asarray(search.can_prune(info["ub_opt"]), dtype=bool) & (oc >= 0)]
    if kept.size <= SURVIVOR_CAP:
        cands = np.union1d(cands, kept)
    if SKIP_PROVED and search.sub_mip_proved.size and np.isin(cands, search.sub_mip_proved).all():
        search.stats["sub_mips_proved_before"] += 1
        return None if search.can_prune(info["ub"]) else info
    if _run_sub_mip(search, search.budget, cands, seconds):
        search.sub_mip_proved = cands
    else:                                           # the later roots' sub-MIPs: SUB_MIP_SECONDS_AGAIN
        search.sub_mip_ran_out = True
        search.stats["sub_mips_ran_out"] += 1
    return None if search.can_prune(info["ub"]) else info


def core_groups(info: dict, size: int) -> np.ndarray:
    """Mask of the ``size`` groups whose two best options are closest in reduced profit (the ones the
    budget price cannot decide; groups of one option are never in it)."""
    order = _by_gap(info)[:size]
    in_core = np.zeros(info["starts"].size, dtype=bool)
    in_core[order] = True
    return in_core


def _by_gap(info: dict) -> np.ndarray:
    """Groups of two options or more, closest two best reduced profits first."""
    d, seg_of, starts = info["d"], info["seg_of"], info["starts"]
    order = np.lexsort((-d, seg_of))                     # by group, best reduced profit first
    second = np.minimum(starts + 1, d.size - 1)
    has_two = np.append(starts[1:], d.size) - starts >= 2
    gap = np.where(has_two, d[order[starts]] - d[order[second]], np.inf)
    by_gap = np.argsort(gap, kind="stable")
    return by_gap[np.isfinite(gap[by_gap])]


def core_dp_store(search: Search, info: dict, cost_units: np.ndarray, cap: int) -> None:
    """Offer the best store that keeps the incumbent's choice outside a core of groups and takes the
    core's best choice by the knapsack DP.

    The core is the groups of :func:`core_groups` order, as many as keep the DP's table within
    :data:`CORE_DP_CELLS` cells (its width is at most the core's largest costs added up).
    """
    if "pick" not in info:
        return
    # outside the core: the incumbent's choice where the node allows it, else the Lagrangian one
    seg_of, starts = info["seg_of"], info["starts"]
    oc = search.opt_cand[info["free_idx"]]
    base = np.isin(oc, search.inc_store) & (oc >= 0)
    took = np.zeros(starts.size, dtype=bool)
    took[seg_of[base]] = True
    base |= (oc < 0) & ~took[seg_of]
    took[seg_of[base]] = True
    base |= info["pick"] & ~took[seg_of]
    order = _by_gap(info)
    n_opts = np.diff(np.append(starts, seg_of.size))[order]
    widest = np.maximum.reduceat(cost_units, starts)[order]
    cells = np.cumsum(n_opts) * (np.minimum(np.cumsum(widest), cap) + 1)
    in_core = np.zeros(starts.size, dtype=bool)
    in_core[order[:max(1, int(np.searchsorted(cells, min(search.dp_limit, CORE_DP_CELLS), side="right")))]] = True
    out = kept_mckp(info["profit"], cost_units, seg_of, starts.size, base | in_core[seg_of], cap,
                    min(search.dp_limit, CORE_DP_CELLS), search.deadline)
    if out is not None and out[1]:
        chosen = oc[out[1]]
        search.offer(np.concatenate([info["store"], chosen[chosen >= 0]]))


def root_core_mip(search: Search, info: dict):
    """Without coupled units: keep the Lagrangian choice outside a core of groups, sub-MIP the core.

    The core is the groups whose two best options are closest in reduced profit (the ones the
    budget price cannot decide).  Every unit is private here, so the rest of the store is fixed
    without touching the core's value.
    """
    seconds = _seconds(search)
    if seconds <= 0.05 or search.use_lp or search.skip_sub_mip or "pick" not in info:
        return info
    seg_of = info["seg_of"]
    in_core = core_groups(info, CORE_GROUPS)
    oc = search.opt_cand[info["free_idx"]]
    fixed = oc[info["pick"] & ~in_core[seg_of] & (oc >= 0)]
    outside = np.concatenate([info["store"], fixed]).astype(np.int64)
    rest = search.budget - float(search.p.costs[outside].sum())
    cands = oc[in_core[seg_of] & (oc >= 0)]
    if rest < 0 or cands.size == 0:
        return info
    _run_sub_mip(search, rest, cands, seconds, outside)
    return None if search.can_prune(info["ub"]) else info


#: whether a root the sub-MIP leaves open repairs the incumbent where it falls short of the LP
#: (:func:`root_repair`)
REPAIR = True

#: groups one repair frees at most around a unit the incumbent falls short on, and at most this share of
#: the groups (a repair is a small sub-MIP, not the problem again)
REPAIR_GROUPS = 20
REPAIR_GROUP_SHARE = 0.2

#: repairs (sub-MIPs) a root tries at most, one per unit it falls short on, the largest shortfall first;
#: it stops after :data:`REPAIR_FAILS` in a row that found nothing better
REPAIR_TRIES = 12
REPAIR_FAILS = 3

#: seconds all repairs of a root take at most: :data:`REPAIR_SECONDS`, 10 % of the time left, and
#: :data:`REPAIR_ELAPSED_SHARE` of the time so far (at least :data:`REPAIR_MIN_SECONDS`); one at most
#: :data:`REPAIR_ONE_SECONDS`
REPAIR_SECONDS = 2.0
REPAIR_ELAPSED_SHARE = 0.2
REPAIR_MIN_SECONDS = 0.05
REPAIR_ONE_SECONDS = 0.2


def shortfall_units(problem: Problem, store: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Units where ``store`` makes less of F than the relaxation ``x`` (a value in [0, 1] per candidate)
    makes of its coverage, the largest weighted shortfall ``w_r * (h_r(A^T x) - h_r(A^T store))`` first."""
    units = np.arange(problem.n_units)
    z_x = problem.coverage.T @ x
    short = problem.weights * (h_values(problem, units, z_x) - h_values(problem, units, coverage_sums(problem, store)))
    out = np.flatnonzero(short > 1e-7 * problem.weights)
    return out[np.argsort(-short[out], kind="stable")]


def repair_groups(problem: Problem, store: np.ndarray, seed_units, max_groups: int) -> np.ndarray:
    """Mask of at most ``max_groups`` groups around ``seed_units``, found breadth first.

    First the groups with a candidate that covers a seed unit (most coverage of them first), then the
    groups that can cover what the store's candidates in those groups cover (the units a change there
    takes coverage from), and so on until ``max_groups`` or nothing new.
    """
    csc, cov = problem.coverage_csc, problem.coverage
    in_store = np.zeros(problem.n_candidates, dtype=bool)
    in_store[store] = True
    taken = np.zeros(problem.n_groups, dtype=bool)
    seen = np.zeros(problem.n_units, dtype=bool)
    frontier = np.unique(np.asarray(seed_units, dtype=np.int64))
    seen[frontier] = True
    n_taken = 0
    while frontier.size and n_taken < max_groups:
        col = csc[:, frontier]
        score = np.bincount(problem.groups[col.indices], weights=col.data, minlength=problem.n_groups)
        new = np.flatnonzero((score > 0) & ~taken)
        new = new[np.argsort(-score[new], kind="stable")][:max_groups - n_taken]
        if new.size == 0:
            break
        taken[new] = True
        n_taken += new.size
        held = np.flatnonzero(in_store & np.isin(problem.groups, new))
        units = np.unique(cov[held].indices)
        frontier = units[~seen[units]]
        seen[frontier] = True
    return taken


def repair_sub_mip_store(problem: Problem, budget: float, store: np.ndarray, free_groups: np.ndarray,
                         time_limit: float, allowed=None):
    """The best store HiGHS finds in ``time_limit`` seconds that keeps ``store`` outside ``free_groups``
    (a group mask) and chooses anew inside them (among ``allowed`` candidates, a mask, when given), or None.

    :func:`sub_mip_store` on the free groups' candidates, the rest of ``store`` fixed (h shifted by what
    it covers, the budget what it leaves), ``store`` the MIP start.  A heuristic: the store is only
    offered to the search.
    """
    free = free_groups[problem.groups]
    if allowed is not None:
        free &= allowed
    free = np.flatnonzero(free)
    store = np.asarray(store, dtype=np.int64)
    outside = store[~free_groups[problem.groups[store]]]
    rest = budget - float(problem.costs[outside].sum())
    if free.size == 0 or rest < 0 or time_limit <= 0:
        return None
    try:
        chosen, _ = sub_mip_store(problem, rest, free, time_limit, fixed=outside, hint=store)
    except ValueError:
        return None     # a heuristic: a sub-problem that cannot be built just offers nothing
    if chosen is None:
        return outside if outside.size else None
    return np.concatenate([outside, chosen])


def root_repair(search: Search, info: dict, lp_x: np.ndarray):
    """Repair the incumbent where it falls short of the root's LP; None if that closes the root.

    The units where the incumbent makes less of F than the LP point's coverage does
    (:func:`shortfall_units`) are taken in turn, the largest shortfall first: each frees the groups
    around it (:func:`repair_groups`, at most :data:`REPAIR_GROUPS` and :data:`REPAIR_GROUP_SHARE` of
    them) while the rest of the incumbent stays, and a small sub-MIP chooses anew inside them
    (:func:`repair_sub_mip_store`).  After an improvement the shortfalls are measured again.  At most
    :data:`REPAIR_TRIES` sub-MIPs, :data:`REPAIR_FAILS` in a row that find nothing better, and the
    seconds :data:`REPAIR_SECONDS` allows.  ``summary_problem(3000, 0, restate=0.8)`` at 25 % (the budget
    does not bind, OPT = the weights' sum = the root LP): the root sub-MIP's store left two units at
    coverage 0.98 (0.053 below OPT) and the search timed out at 60 s and at 150 s, where one repair of
    ten groups (46 candidates) finds OPT in a few milliseconds.
    """
    if not REPAIR or search.inc_store.size == 0:
        return info
    p = search.p
    start = time.perf_counter()
    until = start + min(REPAIR_SECONDS, 0.1 * (search.deadline - start),
                        max(REPAIR_MIN_SECONDS, REPAIR_ELAPSED_SHARE * (start - search.started)))
    max_groups = max(1, min(REPAIR_GROUPS, int(REPAIR_GROUP_SHARE * search.group_present.sum())))
    x = np.zeros(p.n_candidates)
    x[info["store"]] = 1.0
    oc = search.opt_cand[info["free_idx"]]
    x[oc[oc >= 0]] = lp_x[oc >= 0]
    allowed = np.zeros(p.n_candidates, dtype=bool)
    allowed[oc[oc >= 0]] = True
    allowed[info["store"]] = True
    tried = np.zeros(p.n_units, dtype=bool)
    tries = fails = 0
    while tries < REPAIR_TRIES and fails < REPAIR_FAILS and not search.can_prune(info["ub"]):
        now = time.perf_counter()
        if now >= until:
            break
        short = shortfall_units(p, search.inc_store, x)
        short = short[~tried[short]]
        if short.size == 0:
            break
        unit = int(short[0])
        tried[unit] = True
        tries += 1
        free = repair_groups(p, search.inc_store, [unit], max_groups)
        before = search.inc_value
        store = repair_sub_mip_store(p, search.budget, search.inc_store, free, min(REPAIR_ONE_SECONDS, until - now),
                                     allowed)
        if store is not None:
            search.offer(store)
        better = search.inc_value > before
        fails = 0 if better else fails + 1
        search.stats["repairs"] += 1
        search.stats["repairs_improved"] += int(better)
    search.stats["repair_seconds"] += time.perf_counter() - start
    return None if search.can_prune(info["ub"]) else info
