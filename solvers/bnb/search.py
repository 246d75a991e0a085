"""bnb's search: best-bound-first branch-and-bound over the options of the reduced problem."""

from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from ..objective import budget_slack, coverage_sums, evaluate, unit_values
from ..problem import Problem
from .bound import lagrangian_min, residual_conjugate, right_slopes
from .cuts import MIN_GAIN, ROUNDS, STALL_GAIN, STALL_ROUNDS, Cuts, separate
from .grid import cost_step, objective_grid
from .hull import hull_cuts
from .mckp import kept_mckp
from .nodelp import NodeLP
from .primal import (core_dp_store, exchange_greedy, greedy, root_core_mip, root_repair, root_sub_mip, round_store,
                     upgrade_store)
from .tableau import tableau_cuts

__all__ = ["Search", "Progress", "NONE"]

#: the option index of "no candidate of this group"
NONE = -1

#: at a root with coupled units, the rounding of the first LP point is completed by
#: :func:`memaudit_solvers.bnb.primal.exchange_greedy` before any cut round
EXCHANGE_AT_ROOT = True


@dataclass(frozen=True)
class Progress:
    """What :func:`memaudit_solvers.bnb.branch_and_bound` tells its ``progress`` callable.

    ``bound`` is the largest bound of the open nodes (never below OPT), ``incumbent`` the value of
    the best store found, ``gap = (bound - incumbent) / |bound|`` (0 when the bound is 0) and
    ``elapsed`` the seconds since the call began.
    """

    nodes: int
    incumbent: float
    bound: float
    gap: float
    elapsed: float


#: after the cheap separators' rounds stall, rounds of the exact one-unit cuts of
#: :mod:`memaudit_solvers.bnb.hull`, at most HULL_ROUNDS.  Without the tableau cuts in those rounds
#: (HULL_TABLEAU): their dense rows made each root LP solve slower for little (summary_problem(500,
#: 1, restate=0.8) at 10 %: root 351.638 in 5.3 s, with them 351.631 in 6.3 s; side by side over 12
#: restated summaries at n = 200 / 500, 5 / 10 %, total time 0.91 of with them)
HULL_CUTS = True
HULL_ROUNDS = 20
HULL_TABLEAU = False

#: a root whose rounds could not move its LP value (they stalled, or the exact one-unit rounds never
#: started for it) is taken again once its sub-MIP has left a gap, with patient rounds: up to
#: PATIENT_STALL_ROUNDS in a row may leave the value unchanged and the exact one-unit rounds start and
#: may stall too (:meth:`Search.lp_prices`).  Such an LP sits on a face of equal value (every unit at
#: the most coverage it can get, say) that moves only once the cuts together cut all of it off.
#: Only after the sub-MIP: where that face holds a store (summary_problem(1000, s, restate=0.8) at 25 %)
#: the sub-MIP finds it and patient rounds from the start took 5.6-7.1 s instead of 0.9-2.4 s.
#: summary_problem(103, 181109, window=2, restate=0.8126, coverage_decimals=3) at 10 %: the LP sat
#: at 65.199 for 13 patient rounds, then fell to 65.1976 (OPT 65.1866), and the search took 71 nodes
#: in 1.2 s where it had timed out at 60 s after 12,298 nodes at 65.199 (HiGHS: 1.1 s)
PATIENT_ROOT = True
PATIENT_STALL_ROUNDS = 40
#: the patient rounds stop being patient after the least of: PATIENT_MIN_SECONDS or, when more,
#: PATIENT_ELAPSED_SHARE of the time the solve has taken so far; and PATIENT_LEFT_SHARE of the time
#: left.  Unbounded, summary_problem(3000, 0, restate=0.8) at 25 % (a root LP at OPT, 2147.684, and a
#: sub-MIP store 0.64 below it) spent 45 of its 60 s in 14 stalled rounds of 3-4 s re-solves each
PATIENT_MIN_SECONDS = 1.0
PATIENT_ELAPSED_SHARE = 0.5
PATIENT_LEFT_SHARE = 0.25

#: after each root round's re-solve the tableau cuts the LP does not price leave it (as at the end of
#: the root): their rows are dense, and kept they made each re-solve slower (summary_problem(500, 0,
#: restate=0.8) at 10 %: 16 re-solves 1.48 s -> 18 re-solves 0.46 s, the same root bound 372.5217).
#: Side by side, 81 runs of summaries, restated summaries and restated random problems (n = 200-1,000,
#: 5 / 10 / 25 %): total time 0.90, restated summaries at 5 / 10 % median 0.84, summaries 0.97-1.01
DROP_SLACK_TABLEAU = True

#: fraction of the root's candidates reduced-cost fixing must remove or take in for a restart
RESTART_FIXED = 0.1

#: below the root the knapsack DP on a core of groups (a primal heuristic) runs at every this many nodes
#: only: on the benchmark families' first three sizes it never improved the incumbent below the root
#: in 73 calls, and took 2.7 s of a 17.6 s search on summary_problem(1000, 2) at 25 %
CORE_DP_EVERY = 16

#: nodes below the root with an LP at which a search runs the knapsack DP; unless it closed one of them,
#: the search runs it no more (:meth:`Search.dp_pays`)
DP_TRIAL = 8

#: a candidate's LP value must be this far from 0 and 1 to be branched on
BRANCH_FRAC = 1e-6

#: strong branching: a candidate whose pseudocost has fewer observations than this in either direction
#: is probed by two trial LPs (:meth:`Search.choose_candidate`)
RELIABLE = 1

#: trial LPs of at most this many candidates per node, stopping after SB_LOOKAHEAD probes that do
#: not improve the best score
SB_MAX = 8
SB_LOOKAHEAD = 4

#: dual simplex iterations of one trial LP
SB_ITERATIONS = 100

#: an option whose LP value is at most this is not taken by the LP solution (:meth:`Search.lp_keeps`)
LP_ZERO = 1e-9

#: seconds between two progress reports
PROGRESS_EVERY = 1.0


def _moved(first: float, now: float) -> bool:
    """Whether a root's rounds took its LP value from ``first`` down to ``now`` by at least
    :data:`cuts.MIN_GAIN` of it."""
    return first - now >= MIN_GAIN * abs(first)


class Search:
    """State of one branch-and-bound run (options = candidates + one 'none' per group)."""

    def __init__(self, problem: Problem, budget: float, *, exact_units: np.ndarray, use_lp: bool,
                 deadline: float, dp_limit: int, started: float | None = None, progress=None, fits=None,
                 delta: float | None = None, offset: float = 0.0, restarted: bool = False):
        self.p = problem
        self.offset = offset    # F of the candidates a restart fixed in: reports add it to this problem's F
        # exact budget rule for a store of this (reduced) problem, asked only near the budget
        self.fits = fits
        self.started = time.perf_counter() if started is None else started
        self.progress = progress
        self.last_report = -math.inf
        self.budget = float(budget)
        self.slack = budget_slack(self.budget)
        self.use_lp = use_lp
        self.deadline = deadline
        self.dp_limit = dp_limit
        self.exact_units = exact_units
        cand = np.arange(problem.n_candidates)
        groups_present = np.unique(problem.groups)
        opt_cand = np.concatenate([cand, np.full(groups_present.size, NONE)])
        opt_group = np.concatenate([problem.groups, groups_present])
        order = np.lexsort((opt_cand, opt_group))
        self.opt_cand = opt_cand[order]
        self.opt_group = opt_group[order]
        self.opt_cost = np.where(self.opt_cand >= 0, problem.costs[np.maximum(self.opt_cand, 0)], 0.0)
        self.n_opts = self.opt_cand.size
        self.group_present = np.zeros(problem.n_groups, dtype=bool)
        self.group_present[groups_present] = True
        self.node_lp: NodeLP | None = None        # the persistent HiGHS LP, built at the first LP solve
        self.cuts = Cuts(problem.n_candidates, problem.n_units)   # separated at the root, kept in the node LP
        self.cut_units = np.flatnonzero(~exact_units)
        self.hull_known: dict = {}      # per unit, its hull LP with the stores generated (hull.hull_cuts)
        # None: this root has not tried the hull cuts; else whether they found any.  A restart
        # whose last root tried them and found none skips them (skip_hull)
        self.hull_found: bool | None = None
        self.skip_hull = False
        # a restarted search keeps the first grid (its incumbent lies on that one); the first search is
        # given its input's (``delta``, see branch_and_bound), else reads this problem's
        self.restarted = restarted
        self.delta = objective_grid(problem) if delta is None else delta
        self.survivors: np.ndarray | None = None
        self.fixed_in = np.zeros(0, dtype=np.int64)     # with survivors: the candidates every better store takes
        self.must_pick = np.zeros(0, dtype=np.int64)    # with survivors: groups every better store takes one of
        self.none_out = np.zeros(problem.n_groups, dtype=bool)   # groups whose 'none' the root leaves out
        self.patient = False                            # this root's rounds are patient (PATIENT_ROOT)
        self.patient_until = -math.inf                  # ... until this time.perf_counter()
        self.root_stalled = False                       # the last root's rounds left its LP value where it was
        self.skip_sub_mip = False                       # set by a restart whose candidates a sub-MIP closed
        self.sub_mip_proved = np.zeros(0, dtype=np.int64)   # candidates whose best store a sub-MIP proved
        self.sub_mip_ran_out = False                    # a root sub-MIP of this solve ran out of its time unproved
        self.cost_step = cost_step(problem.costs)
        # pseudocosts: per candidate and direction (0: left out, 1: taken), the LP value lost per unit
        # of the LP value's change, summed, and how many observations
        self.pc_sum = np.zeros((2, problem.n_candidates))
        self.pc_count = np.zeros((2, problem.n_candidates))
        self.inc_value = -math.inf
        self.inc_store = np.zeros(0, dtype=np.int64)
        self.stats = {"nodes": 0, "lp_solves": 0, "dp_solves": 0, "pruned": 0, "fixed_by_reduced_cost": 0,
                      "incumbent_updates": 0, "root_bound": math.inf, "root_lp_value": math.nan,
                      "grid_step": self.delta, "cost_step": self.cost_step, "cuts": 0, "tableau_cuts": 0,
                      "cut_rounds": 0, "hull_cuts": 0, "candidate_branchings": 0, "group_branchings": 0,
                      "strong_branching_lps": 0, "dp_node_calls": 0, "dp_node_closes": 0,
                      "patient_roots": 0, "sub_mips": 0, "sub_mips_proved_before": 0, "sub_mips_ran_out": 0, "repairs": 0,
                      "repairs_improved": 0, "repair_seconds": 0.0}

    # -- pruning rule -----------------------------------------------------
    def can_prune(self, ub) -> bool | np.ndarray:
        ub = np.asarray(ub, dtype=float)
        inc = self.inc_value
        # tolerances relative to the values compared (never an absolute floor: weights may be 1e-12)
        scale = np.maximum(abs(inc), np.abs(ub))
        out = ub <= inc + 1e-9 * np.where(np.isfinite(scale), scale, 0.0)
        if self.delta > 0:
            out |= ub < inc + self.delta - np.minimum(0.5 * self.delta, 1e-7 * np.abs(ub))
        return bool(out) if out.ndim == 0 else out

    def offer(self, store) -> None:
        store = np.unique(np.asarray(store, dtype=np.int64))
        cost = float(self.p.costs[store].sum())
        if cost > self.budget + self.slack:
            return
        if self.fits is not None and cost >= self.budget - self.slack and not self.fits(store):
            return  # within the float slack of the budget but over it exactly (objective.costs_fit)
        if np.unique(self.p.groups[store]).size != store.size:
            return
        value = evaluate(self.p, store)
        if value > self.inc_value + 1e-12 * abs(value):
            self.inc_value, self.inc_store = value, store
            self.stats["incumbent_updates"] += 1

    def steps_within(self, rest: float) -> int:
        """How many cost steps fit in ``rest`` (within the budget's float slack); needs ``cost_step > 0``."""
        return int(math.floor((rest + self.slack) / self.cost_step))

    # -- node analysis ----------------------------------------------------
    def analyse(self, allowed, prices):
        """Lagrangian bound of a node from ``prices = (mu, pi)``; None when the node has no feasible store.

        ``mu`` prices the units' coverage and ``pi`` the cuts (:class:`memaudit_solvers.bnb.cuts.Cuts`;
        None: no cut used).  A unit r keeps the weight ``w_r - W_r`` in the conjugate, ``W`` what
        the multipliers take off it (:meth:`~memaudit_solvers.bnb.cuts.Cuts.multipliers`); each cut
        adds ``pi_k (gamma_k + alpha_k . x)``: its part on the store to the constant, its ``alpha``
        to the free candidates' profits.
        """
        mu_in, pi_in = prices
        p = self.p
        counts = np.bincount(self.opt_group[allowed], minlength=p.n_groups)
        decided = allowed & (counts[self.opt_group] == 1)
        store = self.opt_cand[decided & (self.opt_cand >= 0)]
        free = allowed & ~decided
        spent = float(p.costs[store].sum())
        rest = self.budget - spent
        if rest < -self.slack:
            return None
        sums = coverage_sums(p, store)
        values = unit_values(p, sums)
        f_store = float(values.sum())
        pi, cut_w = self.cuts.multipliers(pi_in, p.weights)
        w = p.weights - cut_w
        slope_hi = w * right_slopes(p, sums)
        slope_lo = w * p.h_slopes.min(axis=1)
        mu = np.clip(np.where(self.exact_units, np.inf, mu_in), slope_lo, slope_hi)
        const = f_store + float(residual_conjugate(p, sums, mu, weights=w).sum())
        cut_profit = None
        if pi.any():
            with np.errstate(invalid="ignore", divide="ignore"):
                h_store = np.where(p.weights > 0, values / p.weights, 0.0)
            on_store = self.cuts.gamma + self.cuts.alpha[:, store].sum(axis=1)
            const += float(pi @ on_store) - float(cut_w @ h_store)
            cut_profit = self.cuts.alpha.T @ pi
        free_idx = np.flatnonzero(free)
        info = {"ub": f_store, "store": store, "free_idx": free_idx, "mu": mu, "prices": (mu, pi), "sums": sums,
                "rest": rest, "f_store": f_store, "const": const}
        if free_idx.size == 0:
            return info
        oc = self.opt_cand[free_idx]
        real = oc >= 0
        profit = np.zeros(free_idx.size)
        profit[real] = p.coverage[oc[real]] @ mu
        if cut_profit is not None:
            profit[real] += cut_profit[oc[real]]
        cost = self.opt_cost[free_idx]
        grp = self.opt_group[free_idx]
        starts = np.flatnonzero(np.r_[True, grp[1:] != grp[:-1]])
        # with costs on a grid no store spends more than the last multiple of the step within the rest
        # (the knapsack DP's capacity): its LP cannot spend the remainder either
        lp_rest = self.steps_within(rest) * self.cost_step if self.cost_step > 0 else rest
        val, _, d, m, pick = lagrangian_min(profit, cost, starts, lp_rest)
        if math.isinf(val):
            return None
        seg_of = np.repeat(np.arange(starts.size), np.diff(np.append(starts, free_idx.size)))
        ub = const + val
        info.update(ub=ub, ub_lagr=ub, ub_opt=ub - (m[seg_of] - d), pick=pick, grp=grp,
                    starts=starts, seg_of=seg_of, d=d, profit=profit, cost=cost)
        return info

    def dp_bound(self, info):
        """Integer multiple-choice knapsack over the free options by dynamic programming.

        Tightens ``info['ub']`` (the knapsack is solved exactly instead of its LP, over the options
        reduced-cost fixing keeps: :mod:`memaudit_solvers.bnb.mckp`) and offers the maximising
        store.  Needs costs on a grid and a table of at most ``dp_limit`` cells; otherwise does
        nothing.
        """
        if self.cost_step <= 0 or info["free_idx"].size == 0:
            return
        step = self.cost_step
        cost_units = np.rint(info["cost"] / step).astype(np.int64)
        cap = self.steps_within(info["rest"])
        if self.stats["nodes"] <= 1 or self.stats["nodes"] % CORE_DP_EVERY == 0:
            core_dp_store(self, info, cost_units, cap)     # a better incumbent first: fixing then keeps fewer
        drop = np.asarray(self.can_prune(info["ub_opt"]), dtype=bool)
        # the store is traced back only when it would beat the incumbent (value + const above it)
        out = kept_mckp(info["profit"], cost_units, info["seg_of"], info["starts"].size, ~drop, cap, self.dp_limit,
                        self.deadline, self.inc_value - info["const"])
        if out is None:
            return
        self.stats["dp_solves"] += 1
        value, picked = out
        left_out = float(info["ub_opt"][drop].max()) if drop.any() else -math.inf
        if picked:
            oc = self.opt_cand[info["free_idx"][picked]]
            self.offer(np.concatenate([info["store"], oc[oc >= 0]]))
        info["ub"] = min(info["ub"], max(info["const"] + value, left_out))

    # -- LP relaxation of a node: used only to propose unit prices --------
    def lp_prices(self, info, allowed, separate_cuts: bool = False):
        """Solve the node's LP relaxation; return (prices (mu, pi), x of free options, LP value) or None.

        With ``separate_cuts`` (the root), rounds of :func:`memaudit_solvers.bnb.tableau.tableau_cuts`
        (Gomory mixed-integer cuts of the current basis) and :func:`memaudit_solvers.bnb.cuts.separate`
        (c-MIR and submodular cuts of one unit) add the cuts the LP point violates and re-solve, at
        most :data:`cuts.ROUNDS` times; when those stop, after they moved the LP value, rounds of
        :func:`memaudit_solvers.bnb.hull.hull_cuts` (exact one-unit cuts, at most :data:`HULL_ROUNDS`)
        go on until one raises the LP value by less than :data:`cuts.MIN_GAIN` of it (no stalled
        round there: :meth:`_to_hull`).  The cheap rounds go on while a round raises the LP value by at least
        :data:`cuts.MIN_GAIN` of it, or leaves it unchanged (within :data:`cuts.STALL_GAIN`) at most
        :data:`cuts.STALL_ROUNDS` times in a row (each such point is rounded too, a store worth the
        LP value ending the rounds): on a degenerate LP a round's cuts move the point and not the
        value (``summary_problem(81, 917402, window=7, restate=0.65)`` at 25 %: the first round left
        85.831 unchanged and the rounds stopped there; the search then timed out at 60 s, 0.19 above
        OPT, where the next rounds take the root to 85.653 and the whole solve takes 1.3 s).  On a
        patient root (:data:`PATIENT_ROOT`, within its time) up to :data:`PATIENT_STALL_ROUNDS` rounds
        in a row may leave the value unchanged, the hull rounds included, and the hull rounds start
        even where the cheap ones never moved the LP.
        """
        p = self.p
        if self.node_lp is None:
            steps = self.steps_within(self.budget) if self.cost_step > 0 else None
            self.node_lp = NodeLP(p, self.budget, steps, self.cost_step)
            self.node_lp.add_cuts(self.cuts.ycoef, self.cuts.gamma, self.cuts.alpha)   # carried by a restart
        real = self.opt_cand >= 0
        upper = np.zeros(p.n_candidates)
        upper[self.opt_cand[allowed & real]] = 1.0
        lower = np.zeros(p.n_candidates)
        lower[info["store"]] = 1.0
        none_allowed = np.zeros(p.n_groups, dtype=bool)
        none_allowed[self.opt_group[allowed & ~real]] = True
        group_lower = (self.group_present & ~none_allowed).astype(float)
        self.stats["lp_solves"] += 1
        node_lp = self.node_lp
        out = node_lp.solve(lower, upper, group_lower)
        if out is None:
            return None
        if separate_cuts and EXCHANGE_AT_ROOT and self.cut_units.size and not self.out_of_time():
            # before the rounds (a store worth the LP value spares them all): from the LP point's
            # rounding, and at the first root from the empty store too (after a restart the empty
            # start beat the rounding's in 2 of 91 roots of summary_problem(100-500, 0-2, restate 0.3 / 0.8))
            starts = [round_store(self, info, self._x_of_options(info, out[2]))]
            if not self.restarted:
                starts.append(info["store"])
            for start in starts:
                self.offer(exchange_greedy(p, self.budget, self.deadline, start=start))
        stalled = 0
        # the cheap separators' rounds first; when they stall, rounds of the exact one-unit cuts
        # (memaudit_solvers.bnb.hull), at most HULL_ROUNDS
        hull = False
        rounds = ROUNDS if separate_cuts and self.cut_units.size else 0
        first_value = out[-1]
        while rounds > 0:
            mu, pi, x, y, value = out
            if self.out_of_time() or self.can_prune(value):
                break       # (an LP at most the incumbent: the bound from its prices closes the node)
            # the tableau rows first: they refer to this basis, which new rows would change
            t_ycoef, t_gamma, t_alpha = (tableau_cuts(node_lp, x, y) if not hull or HULL_TABLEAU
                                         else (None, np.zeros(0), None))
            if hull:
                unit, gamma, alpha = hull_cuts(p, x, y, self.cut_units, self.hull_known, self.deadline)
                self.stats["hull_cuts"] += int(unit.size)
                self.hull_found = bool(self.hull_found) or unit.size > 0
            else:
                unit, gamma, alpha = separate(p, x, y, self.cut_units)
            if unit.size + t_gamma.size == 0:
                if self._to_hull(hull, first_value, value):
                    hull, rounds, stalled = True, HULL_ROUNDS, 0
                    continue
                break
            rounds -= 1
            before = len(self.cuts)
            self.cuts.extend(unit, gamma, alpha)
            if t_gamma.size:
                self.cuts.extend(np.full(t_gamma.size, -1), t_gamma, t_alpha, t_ycoef)
            node_lp.add_cuts(self.cuts.ycoef[before:], self.cuts.gamma[before:], self.cuts.alpha[before:])
            self.stats["cuts"] += int(unit.size)
            self.stats["tableau_cuts"] += int(t_gamma.size)
            self.stats["cut_rounds"] += 1
            self.stats["lp_solves"] += 1
            new = node_lp.solve(lower, upper, group_lower)
            if new is None:
                break
            if DROP_SLACK_TABLEAU:
                new = self._drop_slack_tableau(node_lp, new)
            out = new
            gain = value - new[-1]
            if gain >= MIN_GAIN * abs(value):
                stalled = 0
            elif (gain > STALL_GAIN * abs(value)
                  or stalled >= (PATIENT_STALL_ROUNDS if self._patient_now() else 0 if hull else STALL_ROUNDS)):
                if self._to_hull(hull, first_value, new[-1]):
                    hull, rounds, stalled = True, HULL_ROUNDS, 0
                    continue
                break
            else:
                stalled += 1    # the same LP value at another point (a degenerate LP): cut again
                # that other point may round to a store worth the LP value (every unit saturated,
                # say), which ends the rounds
                round_store(self, info, self._x_of_options(info, new[2]))
            if rounds == 0 and self._to_hull(hull, first_value, out[-1]):
                hull, rounds, stalled = True, HULL_ROUNDS, 0
        self.hull_known = {}    # the units' hull LPs serve this root's rounds only
        if separate_cuts:
            self.root_stalled = not hull and not _moved(first_value, out[-1])
        if separate_cuts and len(self.cuts):
            # the tableau cuts the root LP does not price leave the LP and the bound: their dense rows
            # cost every node LP (summary_problem(500, 2) at 25 %: 35.8 s -> 24.8 s, the same nodes)
            out = self._drop_slack_tableau(node_lp, out)
        mu, pi, x, _, value = out
        return (mu, pi), self._x_of_options(info, x), value

    def _drop_slack_tableau(self, node_lp, out):
        """``out`` (a :meth:`NodeLP.solve` answer) after the tableau cuts its LP does not price
        (multiplier 0) left the cuts and the node LP; the one-unit cuts all stay."""
        mu, pi, x, y, value = out
        keep = (pi > 0) | (self.cuts.unit >= 0)
        if keep.all():
            return out
        self.cuts.keep(keep)
        node_lp.keep_cuts(keep)
        return mu, pi[keep], x, y, value

    def _to_hull(self, hull: bool, first: float, now: float) -> bool:
        """Whether the root's rounds go on with the exact one-unit cuts: they have not yet, and the
        cheap rounds took the LP value from ``first`` to ``now`` by at least :data:`cuts.MIN_GAIN` of
        it, or the rounds are patient (:data:`PATIENT_ROOT`).  Where they could not move it the LP
        may sit at a store's value: ``summary_problem(1000, 0, restate=0.8)`` at 25 %, 723.828 in
        every round, where the hull rounds took 6.9 s instead of 1.7 s and changed nothing; a patient
        root comes after its sub-MIP, which finds such a store."""
        return (HULL_CUTS and not hull and not self.skip_hull and not self.out_of_time()
                and (_moved(first, now) or self._patient_now()))

    def _patient_now(self) -> bool:
        """Whether this root's rounds are patient (:data:`PATIENT_ROOT`) and still within their time."""
        return self.patient and time.perf_counter() < self.patient_until

    def _x_of_options(self, info, x: np.ndarray) -> np.ndarray:
        """The LP values ``x`` of the candidates as values of the node's free options ('none': 0)."""
        oc = self.opt_cand[info["free_idx"]]
        x_opt = np.zeros(oc.size)
        x_opt[oc >= 0] = x[oc[oc >= 0]]
        return x_opt

    def dp_pays(self, is_root: bool) -> bool:
        """Whether a node with an LP runs the knapsack DP after it (:meth:`dp_bound`).

        Always at a root.  Below it, the DP's integer bound closes nodes the LP-priced Lagrangian
        leaves open on some packages and never on others: after :data:`DP_TRIAL` nodes in which it
        closed none, this search stops running it (on ``summary_problem(n, s)`` at 25 % it tightened
        every node's bound and closed none in 470 calls, the same nodes without it: 5-15 % of the
        search's time).
        """
        st = self.stats
        return is_root or st["dp_node_closes"] > 0 or st["dp_node_calls"] < DP_TRIAL

    def bound(self, allowed, prices, dp: bool = True):
        """Analyse a node: Lagrangian bound, rounding, then (if ``dp``) the DP bound; None if closed."""
        info = self.analyse(allowed, prices)
        if info is None:
            return None
        if info["free_idx"].size == 0:
            self.offer(info["store"])
            return None
        round_store(self, info)
        if self.can_prune(info["ub"]):
            return None
        if not dp or self.out_of_time():
            return info
        upgrade_store(self, info)          # a better incumbent first: reduced-cost fixing then shrinks the DP
        self.dp_bound(info)
        if self.can_prune(info["ub"]):
            return None
        return info

    def restart_point(self, info) -> bool:
        """Set ``survivors`` and ``fixed_in`` and say True when a restart on what reduced-cost fixing leaves pays.

        Reduced-cost fixing removes options; a group whose 'none' option goes and which keeps one
        candidate takes it in every store better than the incumbent (``fixed_in``), and the other
        candidates kept are ``survivors``; the groups without 'none' (gone here or left out at this
        root) that keep two or more are ``must_pick``.  A restart pays when at least :data:`RESTART_FIXED` of the
        candidates are removed or taken in: the rebuilt problem is smaller, its units shifted by what
        the taken candidates cover, and cuts separated on it are stronger (see
        :func:`memaudit_solvers.bnb.branch_and_bound`).
        """
        oc = self.opt_cand[info["free_idx"]]
        real = oc >= 0
        drop = np.asarray(self.can_prune(info["ub_opt"]), dtype=bool)
        n_seg = info["starts"].size
        kept = np.bincount(info["seg_of"][real & ~drop], minlength=n_seg)     # candidates each group keeps
        none_gone = np.zeros(n_seg, dtype=bool)
        none_gone[info["seg_of"][~real & drop]] = True
        # a group whose 'none' is fixed out and which keeps one candidate takes it in every better store
        taken = real & ~drop & ((kept == 1) & none_gone)[info["seg_of"]]
        if drop[real].sum() + taken.sum() < RESTART_FIXED * real.sum():
            return False
        survivors = oc[real & ~drop & ~taken].astype(np.int64)
        fixed = np.concatenate([info["store"], oc[taken]]).astype(np.int64)
        self.survivors, self.fixed_in = survivors, fixed
        # groups left with two or more candidates and no 'none': every better store takes one of them
        no_none = none_gone | self.none_out[info["grp"][info["starts"]]]
        self.must_pick = np.unique(info["grp"][info["starts"][no_none & (kept >= 2)]]).astype(np.int64)
        return True

    def lp_keeps(self, info, lp_x, drop) -> bool:
        """Whether the node's LP solution takes none of the options reduced-cost fixing ``drop`` s.

        Removing options the LP solution leaves at 0 keeps it optimal, so the node can branch on it
        at once instead of being analysed again (same LP value, one LP solve less).  A group's 'none'
        is taken by ``1 - `` its candidates' LP values.
        """
        if lp_x is None:
            return False
        seg_of = info["seg_of"]
        oc = self.opt_cand[info["free_idx"]]
        taken = np.bincount(seg_of, weights=lp_x, minlength=info["starts"].size)
        value = np.where(oc >= 0, lp_x, 1.0 - taken[seg_of])
        return bool((value[drop] <= LP_ZERO).all())

    def pseudocost_update(self, cand: int, direction: int, loss: float, change: float) -> None:
        """Record that moving candidate ``cand``'s LP value by ``change`` (> 0) towards ``direction`` lost ``loss``."""
        if change > BRANCH_FRAC and math.isfinite(loss):
            self.pc_sum[direction, cand] += max(loss, 0.0) / change
            self.pc_count[direction, cand] += 1

    def choose_candidate(self, cand: np.ndarray, x: np.ndarray, lp_value: float) -> int:
        """Index into ``cand`` of the candidate to branch on (reliability branching).

        ``x`` are the candidates' LP values (fractional) and ``lp_value`` the node's.  Each is scored
        by the product of the LP value its two children are expected to lose (Achterberg, Koch and
        Martin, 2005): its pseudocost per unit of change times the change, the average over every
        candidate where it has none.  Candidates observed fewer than :data:`RELIABLE` times in a
        direction are probed first, best expected first, by two trial LPs each
        (:meth:`memaudit_solvers.bnb.nodelp.NodeLP.trial`; at most :data:`SB_MAX`, stopping after
        :data:`SB_LOOKAHEAD` that do not beat the best score); a probe's losses are recorded as
        pseudocosts.  The choice only orders the search: every child is bounded by bnb's own bound.
        """
        change = np.stack([x, 1.0 - x])                                   # (2, k): towards 0, towards 1
        count = self.pc_count[:, cand]
        total = self.pc_count.sum(axis=1)
        mean = np.where(total > 0, self.pc_sum.sum(axis=1) / np.maximum(total, 1), 1.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_unit = np.where(count > 0, self.pc_sum[:, cand] / count, mean[:, None])
        eps = 1e-9 * max(1.0, abs(lp_value))
        loss = per_unit * change
        score = np.maximum(loss[0], eps) * np.maximum(loss[1], eps)
        unreliable = count.min(axis=0) < RELIABLE
        best = int(np.argmax(np.where(unreliable, -np.inf, score))) if (~unreliable).any() else -1
        best_score = score[best] if best >= 0 else -np.inf
        lp = self.node_lp
        if lp is None or not unreliable.any():
            return best if best >= 0 else int(np.argmax(score))
        since = probes = 0
        for i in np.flatnonzero(unreliable)[np.argsort(-score[unreliable], kind="stable")].tolist():
            if probes >= SB_MAX or since >= SB_LOOKAHEAD or self.out_of_time():
                break
            j = int(cand[i])
            probe = []
            for direction, (lo, hi) in enumerate(((0.0, 0.0), (1.0, 1.0))):
                value = lp.trial(j, lo, hi, (0.0, 1.0), SB_ITERATIONS)
                self.stats["strong_branching_lps"] += 1
                if value is None:
                    break
                lost = lp_value - value if math.isfinite(value) else math.inf
                probe.append(lost)
                self.pseudocost_update(j, direction, lost, change[direction, i])
            probes += 1
            if len(probe) < 2:
                continue
            # an infeasible child loses everything: the other side is as good as forced
            s_i = max(min(probe[0], 1e300), eps) * max(min(probe[1], 1e300), eps)
            score[i] = s_i
            if s_i > best_score:
                best, best_score, since = i, s_i, 0
            else:
                since += 1
        if best < 0:
            best = int(np.argmax(score))
        return best

    def branch_on_candidate(self, info, lp_x, open_segs, allowed, push, lp_value: float = math.nan):
        """Branch on a fractional candidate of an open group: take it or leave it.

        With the node's LP value the candidate is chosen by :meth:`choose_candidate` (reliability
        branching), else it is the one whose LP value is nearest 1/2.  The child that takes it keeps its
        forced bound; the child without it keeps the largest forced bound of its group's other
        options (it takes one of them, or none).  The child on the LP's side (x >= 1/2: taking it)
        is returned, to dive into, the other is pushed.  Returns None when no candidate of an open
        group is fractional (the caller branches on a group instead).  On ``summary_problem(500, s)``
        at 25 % the nearest-1/2 rule took the search from 3,728 / 2,951 nodes (one child per option
        of the most fractional group) to 329 / 305.
        """
        free_idx, ub_opt, seg_of = info["free_idx"], info["ub_opt"], info["seg_of"]
        real = self.opt_cand[free_idx] >= 0
        frac = np.where(np.isin(seg_of, open_segs) & real, np.minimum(lp_x, 1 - lp_x), -1.0)
        fractional = np.flatnonzero(frac > BRANCH_FRAC)
        if fractional.size == 0:
            return None
        if math.isfinite(lp_value):
            o = int(fractional[self.choose_candidate(self.opt_cand[free_idx[fractional]], lp_x[fractional],
                                                      lp_value)])
        else:
            o = int(np.argmax(frac))
        j = int(self.opt_cand[free_idx[o]])
        members = np.flatnonzero(seg_of == seg_of[o])
        others = members[members != o]
        take = allowed.copy()
        take[free_idx[members]] = False
        take[free_idx[o]] = True
        leave = allowed.copy()
        leave[free_idx[o]] = False
        ub = info["ub"]
        e_take = (take, info["prices"], float(min(ub, ub_opt[o])), False, (j, 1, lp_value, 1.0 - lp_x[o]))
        e_leave = (leave, info["prices"], float(min(ub, ub_opt[others].max())), False, (j, 0, lp_value, lp_x[o]))
        first, second = (e_take, e_leave) if lp_x[o] >= 0.5 else (e_leave, e_take)
        push(*second)
        self.stats["candidate_branchings"] += 1
        return first

    # -- the search -------------------------------------------------------
    def out_of_time(self) -> bool:
        return time.perf_counter() > self.deadline

    def report(self, open_bound: float) -> None:
        """Call ``progress`` when the last report is at least PROGRESS_EVERY seconds old."""
        now = time.perf_counter()
        if self.progress is None or now - self.last_report < PROGRESS_EVERY:
            return
        self.last_report = now
        bound = max(open_bound, self.inc_value) + self.offset
        inc = self.inc_value + self.offset
        gap = (bound - inc) / abs(bound) if bound != 0 else 0.0
        self.progress(Progress(nodes=int(self.stats["nodes"]), incumbent=float(inc), bound=float(bound),
                               gap=float(gap), elapsed=now - self.started))

    def run(self, mu0, *, root_lp: bool, node_lp: bool, restart: bool = False) -> float:
        """Best-bound-first search with plunging; returns the largest open bound (-inf when finished).

        After a branching the preferred child is processed next (a dive, which
        finds incumbents early); when a dive ends, the open node of largest
        bound is taken.  With ``restart``, a root whose reduced-cost fixing
        removes at least :data:`RESTART_FIXED` of the candidates stops there:
        ``survivors`` then holds the candidates left (every store better than
        the incumbent uses only those) and the root's bound is returned.
        """
        heap: list = []
        counter = itertools.count()
        plunge = None

        def push(allowed, prices, ub, is_root=False, branch=None):
            # largest bound first; among equal bounds the node pushed last (the preferred child);
            # branch = (candidate, direction, parent's LP value, change) for the pseudocosts
            heapq.heappush(heap, (-ub, -next(counter), (allowed, prices, ub, is_root, branch)))

        push(~((self.opt_cand == NONE) & self.none_out[self.opt_group]), (mu0, None), math.inf, True)
        while heap or plunge is not None:
            if self.stats["nodes"]:
                open_bound = max(-heap[0][0] if heap else -math.inf, plunge[2] if plunge is not None else -math.inf)
                if self.out_of_time():
                    return open_bound
                self.report(open_bound)
            if plunge is not None:
                (allowed, prices, parent_ub, is_root, branch), plunge = plunge, None
            else:
                allowed, prices, parent_ub, is_root, branch = heapq.heappop(heap)[2]
            if self.can_prune(parent_ub):
                self.stats["pruned"] += 1
                continue
            self.stats["nodes"] += 1
            lp_wanted = self.use_lp and (root_lp if is_root else node_lp)
            info = self.bound(allowed, prices, dp=not lp_wanted)     # with an LP, the DP waits for its prices
            lp_x, lp_val = None, math.nan
            if info is not None and lp_wanted and not self.out_of_time():
                lp = self.lp_prices(info, allowed, separate_cuts=is_root)
                if lp is not None:
                    (mu_lp, pi_lp), lp_x, lp_val = lp
                    if branch is not None and math.isfinite(branch[2]):
                        self.pseudocost_update(branch[0], branch[1], branch[2] - lp_val, branch[3])
                    if is_root:
                        self.stats["root_lp_value"] = lp_val
                    store = round_store(self, info, lp_x)
                    if not self.out_of_time():
                        self.offer(greedy(self.p, self.budget, self.deadline, start=store))
                    info_lp = self.bound(allowed, (np.where(np.isinf(mu_lp), prices[0], mu_lp), pi_lp), dp=False)
                    if info_lp is None:
                        info = None
                    elif info_lp["ub_lagr"] <= info["ub_lagr"]:
                        info = info_lp
            if is_root and info is not None and restart and self.restart_point(info):
                self.stats["root_bound"] = min(info["ub"], parent_ub)
                return float(self.stats["root_bound"])   # rebuilt on what is left (see branch_and_bound)
            if info is not None and lp_wanted and not self.out_of_time() and self.dp_pays(is_root):
                self.dp_bound(info)
                closed = bool(self.can_prune(info["ub"]))
                if not is_root:
                    self.stats["dp_node_calls"] += 1
                    self.stats["dp_node_closes"] += int(closed)
                if closed:
                    info = None
            if is_root and info is not None:
                info = root_sub_mip(self, info, lp_x) if lp_x is not None else root_core_mip(self, info)
                if info is not None and lp_x is not None and not self.out_of_time():
                    info = root_repair(self, info, lp_x)     # where the incumbent falls short of the LP
                if info is not None and restart and self.restart_point(info):   # a better incumbent fixes more
                    self.stats["root_bound"] = min(info["ub"], parent_ub)
                    return float(self.stats["root_bound"])
                if (info is not None and PATIENT_ROOT and self.root_stalled and not self.patient
                        and not self.out_of_time()):
                    # the root again, its rounds patient now that the sub-MIP left a gap (PATIENT_ROOT)
                    self.patient = True
                    now = time.perf_counter()
                    self.patient_until = now + min(max(PATIENT_MIN_SECONDS, PATIENT_ELAPSED_SHARE * (now - self.started)),
                                                   PATIENT_LEFT_SHARE * (self.deadline - now))
                    self.stats["patient_roots"] += 1
                    plunge = (allowed, info["prices"], min(info["ub"], parent_ub), True, None)
                    continue
            if info is not None:
                # the parent's bound holds on this subtree too: a node's bound never exceeds it
                info["ub"] = min(info["ub"], parent_ub)
            if is_root:
                self.stats["root_bound"] = info["ub"] if info is not None else self.inc_value
            if info is None:
                self.stats["pruned"] += 1
                continue
            # reduced-cost fixing on this subtree (Lagrangian bound with one option forced)
            free_idx, ub_opt, seg_of = info["free_idx"], info["ub_opt"], info["seg_of"]
            drop = np.asarray(self.can_prune(ub_opt), dtype=bool)
            child_allowed = allowed.copy()
            child_allowed[free_idx[drop]] = False
            self.stats["fixed_by_reduced_cost"] += int(drop.sum())
            keep = ~drop
            counts = np.bincount(seg_of[keep], minlength=info["starts"].size)
            open_segs = np.flatnonzero(counts >= 2)
            reanalyse = (child_allowed, info["prices"], info["ub"], False, None)
            if open_segs.size == 0 or (drop.any() and not self.lp_keeps(info, lp_x, drop)):
                plunge = reanalyse      # re-analyse the reduced node before branching
                continue
            entry = (self.branch_on_candidate(info, lp_x, open_segs, child_allowed, push, lp_val)
                     if lp_x is not None else None)
            if entry is not None:
                plunge = entry          # the child on the LP's side: dive into it now
                continue
            if drop.any():
                plunge = reanalyse
                continue
            # else: one child per option of the open group whose LP choice is most fractional, or
            # (no LP) whose best two options are closest in reduced profit
            if lp_x is not None:
                best_x = np.zeros(info["starts"].size)
                np.maximum.at(best_x, seg_of, lp_x)
                score = best_x[open_segs]
            else:
                order = np.lexsort((-info["d"], seg_of))          # by group, best first
                first = info["starts"]
                gap2 = info["d"][order[first]] - info["d"][order[np.minimum(first + 1, order.size - 1)]]
                score = gap2[open_segs]
            seg = open_segs[int(np.argmin(score))]
            self.stats["group_branchings"] += 1
            members = np.flatnonzero(seg_of == seg)
            pref = lp_x[members] if lp_x is not None else info["d"][members]
            members = members[np.lexsort((-info["d"][members], -pref))]
            for k, o in enumerate(members[::-1]):
                child = child_allowed.copy()
                child[free_idx[members]] = False
                child[free_idx[o]] = True
                entry = (child, info["prices"], float(min(info["ub"], ub_opt[o])), False, None)
                if k == members.size - 1:
                    plunge = entry          # the preferred child: dive into it now
                else:
                    push(*entry)
        return -math.inf
