"""memaudit's own exact branch-and-bound with Lagrangian (LP-quality) bounds.

The package splits along the steps of :func:`branch_and_bound`: ``grid`` (the
objective's and the costs' grid steps), ``decompose`` (presolve and
independent components), ``bound`` (prices, conjugates and the knapsack LP)
and ``search`` (the branch-and-bound itself).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from ..objective import budget_slack, costs_fit, evaluate
from ..problem import Problem
from ..result import Result, check_budget, make_result
from ..settings import TIME_LIMIT, Setting, validate_settings
from .bound import lagrangian_bound, right_slopes
from .decompose import decompose, dominated
from .grid import objective_grid
from .mckp import DP_LIMIT
from .primal import greedy
from .restart import carry_cuts, fix_in
from .search import Progress, Search
from .treedp import TREE_LIMIT

__all__ = ["branch_and_bound", "BNB_SETTINGS", "objective_grid", "lagrangian_bound", "Progress"]

#: bnb's settings, declared once: the registry registers bnb with them and :func:`branch_and_bound`
#: validates with them, so a direct call and ``memaudit solve --method bnb:...`` refuse alike
BNB_SETTINGS = (
    TIME_LIMIT,
    Setting("root_lp", bool, True, "Bound the root with the LP relaxation (off: Lagrangian bounds only)."),
    Setting("node_lp", bool, True, "Re-solve the LP at search nodes."),
    Setting("max_combos", int, 4096, "Largest number of group combinations a component enumerates.", low=1),
    Setting("dp_limit", int, DP_LIMIT, "Largest table (cells) of the knapsack dynamic programme that gives "
            "the bound its integer value.", low=1),
    Setting("tree_limit", int, TREE_LIMIT, "Largest number of (state, entry) pairs of the exact dynamic "
            "programme over a component's path decomposition (0: off, enumerate or search instead).", low=0))


def branch_and_bound(problem: Problem, budget: float, /, *, time_limit: float | None = None,
                     root_lp: bool = True, node_lp: bool = True, max_combos: int = 4096,
                     dp_limit: int = DP_LIMIT, tree_limit: int = TREE_LIMIT,
                     progress: Callable[[Progress], None] | None = None) -> Result:
    """Exact optimum by decomposition and branch-and-bound with Lagrangian bounds.

    1. Candidates costing more than the budget, covering nothing, or dominated
       inside their group (another costs no more and covers at least as much)
       are removed.
    2. Groups that share no unit are independent.  Each connected component
       of groups is collapsed into one group whose options are the (cost,
       value) Pareto frontier of its stores; F is unchanged and those groups
       no longer interact.  The frontiers come from one dynamic programme over
       a path decomposition of each component's groups, run on all components
       at once (:mod:`memaudit_solvers.bnb.treedp`): always for a component of
       at most ``max_combos`` stores, within ``tree_limit`` for a larger one.
    3. The bound prices each unit of coverage (``mu_r``) and the budget
       (``lam``): for any prices ``F(S + X) <= F(S) + sum_r phi_r(mu_r) +
       sum_{u in X} mu . a_u`` (``phi_r`` the concave conjugate of ``w_r h_r``),
       and the best X for the right side is a multiple-choice knapsack, whose
       LP value is computed exactly and, when costs lie on a grid and the
       table is small (``dp_limit`` cells), whose integer value is computed by
       dynamic programming over the options reduced-cost fixing keeps
       (:mod:`memaudit_solvers.bnb.mckp`).  Prices come from the LP relaxation where coupled
       units remain (one persistent HiGHS model, see :mod:`memaudit_solvers.bnb.nodelp`,
       whose bounds change per node); the LP only *proposes* them -- the
       bound is computed here and is valid whatever they are.  At the root,
       rounds of cuts tighten that LP: Gomory mixed-integer cuts of its
       tableau rows (:mod:`memaudit_solvers.bnb.tableau`) and c-MIR and
       submodular cuts of each unit's coverage, in its own row and in its group
       form (:mod:`memaudit_solvers.bnb.cuts`), then, when those stop
       raising it, exact cuts of each unit's hull found by row generation over
       its coverage levels (:mod:`memaudit_solvers.bnb.hull`);
       each cut holds at every store within the budget, and the bound prices
       it with the LP's multiplier (valid for any multiplier >= 0).
    4. Incumbents: greedy, LP and DP roundings, the Lagrangian choice upgraded
       greedily, the knapsack DP on a core of groups (at the root, then every
       ``CORE_DP_EVERY`` nodes), at the root before the cut rounds an exchange
       greedy (a group may swap its candidate for another), and at the root a sub-MIP (HiGHS on the
       node LP with the root's cuts, at most 5 s and 30 % of the time left) over the LP's support, the groups it splits
       and every candidate reduced-cost fixing keeps, skipped after a restart
       inside what an earlier sub-MIP proved and at a root whose exact one-unit
       cuts found some (:mod:`memaudit_solvers.bnb.primal`);
       its store is re-evaluated here and never enters a bound.  Reduced-cost fixing removes options whose bound
       (the Lagrangian bound with that option forced) cannot beat the
       incumbent by a grid step.  When at the root it removes at least 10 % of
       the candidates (a group whose 'none' goes and which keeps one candidate
       counts that one as taken in), the search restarts on what is left
       (:mod:`memaudit_solvers.bnb.restart`): the taken candidates are fixed
       into every store (h shifted by what they cover, coverage cut to each
       unit's new saturation point, the budget less their cost), presolve and
       decomposition run again, and the root's cuts are
       carried over to the rebuilt problem, then a new root (at most
       ``MAX_RESTARTS`` times); every store better than the incumbent uses
       only those candidates and takes the fixed ones, so OPT is unchanged.
       A group whose 'none' goes but which keeps two or more candidates keeps
       no 'none' in the rebuilt problem (``must_pick``).
       ``stats`` counts ``restarts``, the candidates ``fixed_in`` and those
       groups.  The search takes the open node of largest bound first,
       branching on a fractional candidate (take it or leave it) chosen by
       reliability branching (pseudocosts, and trial LPs for candidates not
       yet observed: ``strong_branching_lps``), or without an LP value on a
       group (one child per option).
       When every value of F lies on a grid (detected from the input's data,
       see :func:`objective_grid`) a bound below ``incumbent + step`` closes a
       node; otherwise the tolerance is 1e-9 relative.  Every tolerance is
       relative to the data's own scale (budget checks use
       :func:`memaudit_solvers.objective.budget_slack`), so scaling all costs and the
       budget, or all weights, by any power of ten changes neither the store
       nor OPT (beyond the scale).

    Parameters
    ----------
    problem : Problem
    budget : float
        The knapsack capacity, >= 0.
    time_limit : float, optional
        Seconds for the whole call; when exceeded the best store found is
        returned with status ``timeout`` and the largest bound of the open
        nodes.  The decomposition's programme stops at the limit (the
        components it has not finished stay coupled), the first node then skips its LP and DP
        steps, and later nodes are not started; only the reduction, one
        Lagrangian bound (linear in the coverage entries) with its rounding
        and, without the root LP, one greedy store (stopped at the limit where
        greedy_store takes a deadline) always run.
    root_lp, node_lp : bool
        Take unit prices from the LP relaxation at the root / at nodes the
        cheaper bounds do not close.  With both off the prices are the
        weights (the fractional knapsack over marginal gains).
    max_combos : int
        Largest number of stores of a component whose frontier is computed
        with no limit (as if every store were enumerated).
    tree_limit : int
        Most (state, frontier entry) pairs the dynamic programme may create for
        one component too large to enumerate; 0 never tries it.
    dp_limit : int
        Largest dynamic-programming table (options x budget steps).
    progress : callable, optional
        Called with a :class:`Progress` (nodes, incumbent, bound, gap,
        elapsed seconds) after the first node, then at most once every
        ``PROGRESS_EVERY`` (1) seconds while the search runs; never called
        when not given, nor after the search ends (the Result says the rest).

    Returns
    -------
    Result
        status ``optimal`` or ``timeout``; ``stats`` has nodes, LP and DP
        solves, options fixed by reduced costs, the root bound, the grid
        steps and the decomposition.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> r = branch_and_bound(p, 4)
    >>> r.value, r.chosen.tolist(), r.status
    (2.5, [1, 2], 'optimal')
    """
    started = time.perf_counter()
    settings = _check_settings(budget, time_limit, root_lp, node_lp, max_combos, dp_limit, tree_limit)
    if progress is not None and not callable(progress):
        raise ValueError(f"progress must be None or a callable taking a Progress; got {progress!r}")
    budget = float(budget)
    deadline = started + (time_limit if time_limit is not None else math.inf)
    p = problem
    tol_b = budget_slack(budget)
    active = (p.costs <= budget + tol_b) & (np.diff(p.coverage.indptr) > 0)
    removed = {"over_budget": int((p.costs > budget + tol_b).sum())}
    dom = dominated(p, active)
    active &= ~dom
    removed["dominated"] = int(dom.sum())
    if not active.any():
        return make_result(p, budget, method="bnb", settings=settings, chosen=[], status="optimal", bound=0.0,
                           started=started, stats={"removed": removed, "nodes": 0},
                           message="no candidate fits the budget with positive value")
    reduced, members, exact_units, dstats, _ = decompose(p, active, max_combos, deadline=deadline,
                                                      budget=budget + tol_b, tree_limit=tree_limit)
    # F of the reduced problem is F of the input (a frontier option's unit is worth its value), so the input's
    # grid holds there when the reduced problem shows none: its options' values are float sums that rarely
    # read as small ratios
    delta = objective_grid(reduced) or objective_grid(p)
    search = _search(p, budget, reduced, members, exact_units, deadline, dp_limit, started, progress, delta)
    search.offer([])
    if not root_lp or (exact_units.all() and search.cost_step <= 0):
        # with the root LP its rounding completed greedily comes first; with every unit exact and
        # costs on a grid the root's upgraded Lagrangian choice and knapsack DP do better
        search.offer(greedy(reduced, budget, deadline))
    open_bound = search.run(_start_prices(reduced), root_lp=root_lp, node_lp=node_lp, restart=MAX_RESTARTS > 0)
    stats = dict(search.stats, removed=removed, **dstats, restarts=0)
    best_value, chosen = search.inc_value, sorted(u for j in search.inc_store for u in members[j])
    fixed: list[int] = []           # original candidates every better store takes (found by restarts)
    offset = spent = 0.0            # F of those, and their cost: the restarted search sees F - offset
    while search.survivors is not None and stats["restarts"] < MAX_RESTARTS:
        # restart on the candidates reduced-cost fixing left (every store better than the incumbent
        # uses only those, and takes those it fixed in): presolve and decomposition again, which can
        # split components, with the root's cuts carried over
        # a sub-MIP that proved the best store of every candidate left leaves the next one nothing to find
        skipping = search.skip_sub_mip or bool(
            np.isin(np.concatenate([search.survivors, search.fixed_in]), search.sub_mip_proved).all())
        stats["sub_mips_skipped"] = stats.get("sub_mips_skipped", 0) + int(skipping)
        shifted, gain, cost, cuts = fix_in(reduced, search.fixed_in, search.cuts)
        # groups every better store takes a candidate of, less those with a candidate kept that covers
        # nothing once the fixed ones are in ('none' is then as good as that candidate)
        covers = np.diff(shifted.coverage.indptr) > 0
        must_pick = np.setdiff1d(search.must_pick, shifted.groups[search.survivors[~covers[search.survivors]]])
        fixed += [u for j in search.fixed_in for u in members[j]]
        offset, spent = offset + gain, spent + cost
        keep = np.zeros(reduced.n_candidates, dtype=bool)
        keep[search.survivors] = True
        keep &= covers & ~dominated(shifted, keep)
        stats["restarts"] += 1
        stats["restart_candidates"] = int(keep.sum())
        stats["fixed_in"] = len(fixed)
        if not keep.any():
            value = evaluate(p, fixed)
            if value > best_value and costs_fit(p, p.costs[fixed], budget):
                best_value, chosen = value, sorted(fixed)
            open_bound = -math.inf
            break
        delta = search.delta
        reduced, sub_members, exact_units, rstats, unit_origin = decompose(
            shifted, keep, max_combos, deadline=deadline, budget=budget - spent + tol_b, tree_limit=tree_limit)
        cuts = carry_cuts(cuts, shifted, reduced, sub_members, unit_origin)[0]
        members = [tuple(u for k in sub for u in members[k]) for sub in sub_members]
        # a root whose hull cuts found nothing leaves the next one without them: on summary_problem(n, s)
        # (n = 50-200) they found none at most roots, and each restart tried them again
        skip_hull = search.hull_found is False or search.skip_hull
        ran_out = search.sub_mip_ran_out
        search = _search(p, budget, reduced, members, exact_units, deadline, dp_limit, started, progress, delta,
                         fixed=fixed, spent=spent, offset=offset, restarted=True)
        search.skip_sub_mip = skipping
        search.skip_hull = skip_hull
        search.sub_mip_ran_out = ran_out
        # a group the last root's fixing left without 'none' (every better store takes one of its
        # candidates) keeps no 'none' in the rebuilt problem; a collapsed component keeps no empty store
        sizes = np.fromiter((len(sub) for sub in sub_members), dtype=np.int64, count=len(sub_members))
        flat = np.fromiter((k for sub in sub_members for k in sub), dtype=np.int64, count=int(sizes.sum()))
        hit = np.bincount(np.repeat(np.arange(sizes.size), sizes), weights=np.isin(shifted.groups[flat], must_pick),
                          minlength=sizes.size) > 0
        search.none_out[reduced.groups[hit]] = True
        stats["must_pick"] = stats.get("must_pick", 0) + int(search.none_out.sum())
        search.cuts = cuts                      # the root's cuts, rewritten for what is left
        search.inc_value = best_value - offset  # the store stays the one found before the restart
        open_bound = search.run(_start_prices(reduced), root_lp=root_lp, node_lp=node_lp,
                                restart=stats["restarts"] < MAX_RESTARTS) + offset
        if search.stats["incumbent_updates"]:     # (not inc_value + offset > best_value: rounding)
            chosen = sorted(fixed + [u for j in search.inc_store for u in members[j]])
            best_value = max(best_value, search.inc_value + offset)
        for key in ("nodes", "lp_solves", "dp_solves", "pruned", "fixed_by_reduced_cost", "incumbent_updates",
                    "candidate_branchings", "group_branchings", "strong_branching_lps", "dp_node_calls", "dp_node_closes",
                    "patient_roots", "sub_mips", "sub_mips_proved_before", "sub_mips_ran_out", "repairs", "repairs_improved",
                    "repair_seconds"):
            stats[key] += search.stats[key]
        stats.update(restart_components=rstats["components"], restart_coupled_groups=rstats["coupled_groups"])
        if search.survivors is None:
            break
    if open_bound > -math.inf:
        return make_result(p, budget, method="bnb", settings=settings, chosen=chosen, status="timeout",
                           bound=max(open_bound, best_value), started=started, stats=stats,
                           message=f"time limit {time_limit}s reached after {stats['nodes']} nodes")
    return make_result(p, budget, method="bnb", settings=settings, chosen=chosen, status="optimal",
                       bound=best_value, started=started, stats=stats,
                       message=f"proved optimal after {stats['nodes']} nodes")


#: restarts after reduced-cost fixing at the root, at most
MAX_RESTARTS = 10


def _start_prices(reduced: Problem) -> np.ndarray:
    """Unit prices of the first node: ``w_r h_r'(0+)`` (the marginal-gain bound)."""
    return reduced.weights * right_slopes(reduced, np.zeros(reduced.n_units))


def _search(p: Problem, budget: float, reduced: Problem, members, exact_units, deadline, dp_limit, started,
            progress, delta, fixed=(), spent: float = 0.0, offset: float = 0.0, restarted: bool = False) -> Search:
    """A :class:`Search` on ``reduced`` whose stores are checked against the exact budget rule on ``p``.

    After a restart that fixed candidates in, ``fixed`` are those (original candidates), ``spent``
    their cost and ``offset`` their F: the search sees the budget less ``spent`` and F less ``offset``.
    """
    fixed = list(fixed)

    def fits(store) -> bool:
        """The exact rule on the original candidates of a store of the reduced problem."""
        originals = fixed + [u for j in store for u in members[j]]
        return costs_fit(p, p.costs[originals], budget)

    return Search(reduced, budget - spent, exact_units=exact_units, use_lp=not exact_units.all(),
                  deadline=deadline, dp_limit=dp_limit, started=started, progress=progress, fits=fits, delta=delta,
                  offset=offset, restarted=restarted)


def _check_settings(budget, time_limit, root_lp, node_lp, max_combos, dp_limit, tree_limit) -> dict:
    check_budget(budget)
    given = {"time_limit": time_limit, "root_lp": root_lp, "node_lp": node_lp, "max_combos": max_combos,
             "dp_limit": dp_limit, "tree_limit": tree_limit}
    return validate_settings("method 'bnb'", BNB_SETTINGS, given)
