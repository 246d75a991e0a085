"""memaudit's own exact branch-and-bound with Lagrangian (LP-quality) bounds."""

from __future__ import annotations

import heapq
import itertools
import math
import time
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from .greedy import greedy_store
from .objective import coverage_sums, evaluate, marginal_gains, unit_values
from .problem import Problem
from .result import Result, check_budget, make_result

__all__ = ["branch_and_bound", "objective_grid", "lagrangian_bound"]

_NONE = -1


# ---------------------------------------------------------------------------
# exactness helpers
# ---------------------------------------------------------------------------
def _as_fraction(x: float, max_den: int = 10**6) -> Fraction | None:
    """The ratio of small integers (denominator <= max_den) whose nearest float is exactly x, or None.

    0.3 is read as 3/10 and 1/3 as 1/3 (the decimals a user wrote), while a float
    that is merely *close* to such a ratio is not: the match must be exact.
    """
    x = float(x)
    f = Fraction(x).limit_denominator(max_den)
    return f if float(f) == x else None


def _frac_gcd(a: Fraction, b: Fraction) -> Fraction:
    if a == 0:
        return abs(b)
    if b == 0:
        return abs(a)
    den = a.denominator * b.denominator // math.gcd(a.denominator, b.denominator)
    return Fraction(math.gcd(int(a * den), int(b * den)), den)


def objective_grid(problem: Problem) -> float:
    """A step ``delta > 0`` with every value ``F(X)`` a multiple of it, or 0 if none is found.

    Each unit's coverage values (per column), piece slopes and intercepts and
    weights are read as small rationals (denominators up to 10**6, whose
    nearest float must be the value itself); when they are, ``F`` takes
    values on a grid, and an upper bound below
    ``incumbent + delta`` proves the incumbent optimal.  The grid is detected
    from the data, never assumed.

    Examples
    --------
    >>> from solvers.problem import Problem
    >>> objective_grid(Problem.build([1, 1], [0, 1], [[0.5, 0], [1, 1]], [2.0, 3.0]))  # 2*{0,.5,1} + 3*{0,1}
    1.0
    >>> objective_grid(Problem.build([1], [0], [[0.1234567891]], [1.0]))
    0.0
    """
    def key():
        if problem.coverage.nnz == 0:
            return 1.0  # F is identically 0
        # per unit, the coverage sums s_r lie on the grid step_r = gcd of column r's values
        csc = problem.coverage_csc
        col = np.repeat(np.arange(problem.n_units), np.diff(csc.indptr))
        pairs = np.unique(np.column_stack([col, csc.data]), axis=0)
        units, first, n_vals = np.unique(pairs[:, 0].astype(np.int64), return_index=True, return_counts=True)
        step = np.zeros(problem.n_units)
        step[units] = pairs[first, 1]                   # one distinct value: the step is that value
        for r, start, n in zip(units[n_vals > 1], first[n_vals > 1], n_vals[n_vals > 1]):
            step[r] = _cost_step(pairs[start:start + n, 1])
            if step[r] == 0:
                return 0.0
        # every term w_r h_r(s_r) is then a multiple of w_r * gcd_k(slope_rk * step_r, intercept_rk)
        # (units nobody covers contribute 0 and are left out)
        covered = np.zeros(problem.n_units, dtype=bool)
        covered[units] = True
        w = problem.weights[covered, None]
        terms = np.concatenate([(w * problem.h_slopes[covered] * step[covered, None]).ravel(),
                                (w * problem.h_intercepts[covered]).ravel()])
        step = _cost_step(terms[terms > 0])
        return step if step > 0 else (1.0 if not np.any(terms > 0) else 0.0)
    return problem.cached("objective_grid", key)


# ---------------------------------------------------------------------------
# the bound
# ---------------------------------------------------------------------------
def _kinks(problem: Problem):
    """Pairwise piece intersections z > 0 per unit and h there (padded with NaN / -inf)."""
    def build():
        a, b = problem.h_slopes, problem.h_intercepts
        k = a.shape[1]
        zs = []
        for i in range(k):
            for j in range(i + 1, k):
                with np.errstate(divide="ignore", invalid="ignore"):
                    z = (b[:, j] - b[:, i]) / (a[:, i] - a[:, j])
                z[~np.isfinite(z) | (z <= 0)] = np.nan
                zs.append(z)
        if not zs:
            zs = [np.full(problem.n_units, np.nan)]
        z = np.column_stack(zs)
        hz = np.min(a[:, None, :] * np.nan_to_num(z)[:, :, None] + b[:, None, :], axis=2)
        return z, hz
    return problem.cached("kinks", build)


def _right_slopes(problem: Problem, sums: np.ndarray) -> np.ndarray:
    """``h_r'(s_r+)`` for every unit."""
    a, b = problem.h_slopes, problem.h_intercepts
    vals = a * sums[:, None] + b
    m = vals.min(axis=1, keepdims=True)
    active = vals <= m + 1e-12 * np.maximum(1.0, np.abs(m))
    return np.where(active, a, np.inf).min(axis=1)


def _residual_conjugate(problem: Problem, sums: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``phi_r = sup_{y>=0} w_r (h_r(s_r + y) - h_r(s_r)) - mu_r y`` (finite for mu_r >= w_r h_r'(inf))."""
    z, hz = _kinks(problem)
    w = problem.weights
    hs = unit_values(problem, sums) / w
    with np.errstate(invalid="ignore"):
        terms = w[:, None] * (hz - hs[:, None]) - mu[:, None] * (z - sums[:, None])
    terms = np.where(z > sums[:, None], terms, -np.inf)
    return np.maximum(0.0, terms.max(axis=1))


def _lagrangian_min(profit, cost, seg_starts, budget):
    """Minimise ``lam*budget + sum_g max_{o in g}(profit_o - lam*cost_o)`` over lam >= 0.

    This is the LP value of the multiple-choice knapsack with these profits
    (options are grouped in contiguous segments).  Returns
    ``(value, lam, d, m, fit_choice)`` where ``d = profit - lam*cost``, ``m`` the
    group maxima and ``fit_choice`` a boolean mask of one maximiser per group
    at a lam where the maximisers fit the budget.  ``value = inf`` when no
    choice fits.
    """
    n_seg = seg_starts.size
    seg_of = np.repeat(np.arange(n_seg), np.diff(np.append(seg_starts, profit.size)))

    def at(lam):
        d = profit - lam * cost
        m = np.maximum.reduceat(d, seg_starts)
        is_max = d >= m[seg_of]
        c_min = np.minimum.reduceat(np.where(is_max, cost, np.inf), seg_starts)
        return lam * budget + m.sum(), budget - c_min.sum(), d, m

    min_cost = np.minimum.reduceat(cost, seg_starts).sum()
    if min_cost > budget + 1e-9 * max(1.0, abs(budget)):
        return math.inf, 0.0, None, None, None
    val0, slope0, d0, m0 = at(0.0)
    if slope0 >= 0:
        lo = hi = 0.0
    else:
        pos = cost > 0
        hi = float(np.max(profit[pos] / cost[pos])) + 1.0
        for _ in range(200):
            if at(hi)[1] >= 0:
                break
            hi *= 2.0
        lo = 0.0
        for _ in range(64):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if at(mid)[1] >= 0:
                hi = mid
            else:
                lo = mid
    v_lo = at(lo)
    v_hi = at(hi)
    val, lam, d, m = (v_lo[0], lo, v_lo[2], v_lo[3]) if v_lo[0] <= v_hi[0] else (v_hi[0], hi, v_hi[2], v_hi[3])
    # one maximiser per group at hi, cheapest among ties: it fits the budget
    d_hi, m_hi = v_hi[2], v_hi[3]
    is_max = d_hi >= m_hi[seg_of]
    c_tie = np.where(is_max, cost, np.inf)
    c_min = np.minimum.reduceat(c_tie, seg_starts)
    pick = is_max & (cost == c_min[seg_of])
    first = np.zeros_like(pick)
    idx = np.flatnonzero(pick)
    _, first_pos = np.unique(seg_of[idx], return_index=True)
    first[idx[first_pos]] = True
    return float(val), float(lam), d, m, first


def lagrangian_bound(problem: Problem, budget: float, mu=None) -> float:
    """Upper bound on OPT from unit prices ``mu`` (default: ``w``, the marginal-gain bound).

    ``F(X) <= sum_r phi_r(mu_r) + sum_{u in X} sum_r mu_r a[u, r]`` for any
    ``mu_r >= w_r h_r'(inf)`` (lower prices are raised to that), where ``phi_r`` is the concave conjugate of
    ``w_r h_r``; the right side's best store is then a multiple-choice
    knapsack whose LP value is computed exactly.  With the LP-dual prices
    this equals the LP relaxation of the MILP.

    Examples
    --------
    >>> from solvers.problem import Problem
    >>> p = Problem.build([2, 2], [0, 1], [[1.0], [1.0]], [1.0])
    >>> lagrangian_bound(p, 4.0), lagrangian_bound(p, 4.0, mu=[0.0])
    (2.0, 1.0)
    """
    sums = np.zeros(problem.n_units)
    slope_inf = problem.weights * problem.h_slopes.min(axis=1)
    mu = problem.weights * _right_slopes(problem, sums) if mu is None else np.asarray(mu, dtype=float)
    mu = np.maximum(mu, slope_inf)   # below w_r h_r'(inf) the conjugate is +inf: raise such prices
    const = float(_residual_conjugate(problem, sums, mu).sum())
    if problem.n_candidates == 0:
        return const
    profit = problem.coverage @ mu
    order = np.lexsort((np.arange(problem.n_candidates), problem.groups))
    g = problem.groups[order]
    groups_present = np.unique(g)
    # add a 'none' option per group
    all_profit = np.concatenate([profit[order], np.zeros(groups_present.size)])
    all_cost = np.concatenate([problem.costs[order], np.zeros(groups_present.size)])
    all_group = np.concatenate([g, groups_present])
    o2 = np.argsort(all_group, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(all_group[o2]) != 0])
    val = _lagrangian_min(all_profit[o2], all_cost[o2], starts, budget)[0]
    return const + val


# ---------------------------------------------------------------------------
# branch and bound
# ---------------------------------------------------------------------------
# ---------------------------------------------------------------------------
# decomposition: groups that share no unit are independent
# ---------------------------------------------------------------------------
def _cost_step(values) -> float:
    """Largest step with every value an integer multiple of it, or 0 if none is found."""
    step = Fraction(0)
    for v in np.unique(np.asarray(values, dtype=float)):
        f = _as_fraction(v)
        if f is None:
            return 0.0
        step = _frac_gcd(step, f)
        if step.denominator > 10**9:
            return 0.0
    return float(step) if step > 0 else 0.0


def _decompose(problem: Problem, active: np.ndarray, max_combos: int):
    """Collapse independent components of groups into single groups of Pareto options.

    Two groups are linked when some unit is covered by active candidates of
    both.  A connected component whose stores can be enumerated (at most
    ``max_combos`` of them) is replaced by one group whose options are the
    (cost, value) Pareto frontier of its stores; each option covers a private
    unit of weight = its value, so F is unchanged.  Larger components keep
    their candidates and units ("coupled").

    Returns ``(reduced, members, exact_units, stats)`` where ``members[j]`` is
    the tuple of original candidates behind reduced candidate j.
    """
    from scipy.sparse.csgraph import connected_components

    cand = np.flatnonzero(active)
    cov = problem.coverage[cand]
    g_of = problem.groups[cand]
    # group x unit incidence, then group x group links through shared units
    inc = sp.csr_array((np.ones(cov.nnz), (np.repeat(g_of, np.diff(cov.indptr)), cov.indices)),
                       shape=(problem.n_groups, problem.n_units))
    inc.data[:] = 1.0
    # components of the bipartite group-unit graph (linear in the incidence; a group x group product is
    # quadratic when many groups share a unit); group nodes come first, so their labels are 0..n_comp-1
    bip = sp.bmat([[None, inc], [inc.T, None]], format="csr")
    _, label_all = connected_components(bip, directed=False)
    label = label_all[:problem.n_groups]
    n_comp = int(label.max()) + 1 if label.size else 0
    comp_size = np.bincount(label[np.unique(g_of)], minlength=n_comp)
    single_gain = marginal_gains(problem, np.zeros(problem.n_units), cand)
    # groups alone in their component: each candidate is an option worth its standalone value
    alone = (comp_size[label[g_of]] == 1) & (single_gain > 0)
    _, new_gid = np.unique(g_of[comp_size[label[g_of]] == 1], return_inverse=True)
    n_alone_groups = int(new_gid.max()) + 1 if new_gid.size else 0
    gid_alone = np.zeros(cand.size, dtype=np.int64)
    gid_alone[comp_size[label[g_of]] == 1] = new_gid
    opt_cost = problem.costs[cand[alone]].tolist()
    opt_value = single_gain[alone].tolist()
    opt_members = [(int(u),) for u in cand[alone]]
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
    n_collapsed = n_coupled_groups = 0
    for comp, by_group in by_comp.items():
        groups = sorted(by_group)
        n_combos = 1
        for g in groups:
            n_combos *= len(by_group[g]) + 1
        if n_combos > max_combos:
            for g in groups:
                coupled_cands.extend(by_group[g])
                coupled_group_of.extend([n_new_groups] * len(by_group[g]))
                n_new_groups += 1
            n_coupled_groups += len(groups)
            continue
        # enumerate every store of the component, keep the (cost, value) Pareto frontier
        choices = [[()] + [(u,) for u in by_group[g]] for g in groups]
        combos = [sum(c, ()) for c in itertools.product(*choices)]
        local = sorted({u for g in groups for u in by_group[g]})
        pos = {u: i for i, u in enumerate(local)}
        x = np.zeros((len(combos), len(local)))
        for i, c in enumerate(combos):
            x[i, [pos[u] for u in c]] = 1.0
        sub = problem.coverage[local]
        units = np.unique(sub.indices)
        sums = x @ sub[:, units].toarray()
        values = (problem.weights[units] * np.min(problem.h_slopes[units][None] * sums[:, :, None]
                                                  + problem.h_intercepts[units][None], axis=2)).sum(axis=1)
        costs = x @ problem.costs[local]
        order = np.lexsort((-values, costs))
        best = 0.0
        for i in order:
            if values[i] > best + 1e-12 * max(1.0, values[i]):
                best = values[i]
                opt_cost.append(costs[i])
                opt_value.append(values[i])
                opt_members.append(combos[i])
                new_group_of_option.append(n_new_groups)
        n_new_groups += 1
        n_collapsed += len(groups)
    # reduced problem: frontier options with private units, then coupled candidates
    n_opt = len(opt_cost)
    coupled = np.array(coupled_cands, dtype=np.int64)
    c_units = np.unique(problem.coverage[coupled].indices) if coupled.size else np.zeros(0, dtype=np.int64)
    n_units = n_opt + c_units.size
    rows = [sp.csr_array((np.ones(n_opt), (np.arange(n_opt), np.arange(n_opt))), shape=(n_opt, n_units))]
    if coupled.size:
        sub = problem.coverage[coupled][:, c_units]
        rows.append(sp.hstack([sp.csr_array((coupled.size, n_opt)), sub]).tocsr())
    coverage = sp.vstack(rows).tocsr() if rows else sp.csr_array((0, 0))
    k = problem.h_slopes.shape[1]
    s_opt, b_opt = np.tile([1.0] + [0.0] * (k - 1), (n_opt, 1)), np.tile([0.0] + [1.0] * (k - 1), (n_opt, 1))
    slopes = np.vstack([s_opt, problem.h_slopes[c_units]])
    intercepts = np.vstack([b_opt, problem.h_intercepts[c_units]])
    weights = np.concatenate([np.asarray(opt_value, dtype=float), problem.weights[c_units]])
    costs = np.concatenate([np.asarray(opt_cost, dtype=float), problem.costs[coupled]])
    groups = np.concatenate([np.asarray(new_group_of_option, dtype=np.int64),
                             np.asarray(coupled_group_of, dtype=np.int64)])
    reduced = Problem.build(costs, groups, coverage, weights, h_slopes=slopes, h_intercepts=intercepts,
                            n_groups=max(n_new_groups, 1))
    members = opt_members + [(int(u),) for u in coupled]
    exact_units = np.zeros(n_units, dtype=bool)
    exact_units[:n_opt] = True
    stats = {"components": int((comp_size > 0).sum()), "groups_collapsed": n_collapsed,
             "coupled_groups": n_coupled_groups, "reduced_options": int(costs.size)}
    return reduced, members, exact_units, stats


# ---------------------------------------------------------------------------
# branch and bound
# ---------------------------------------------------------------------------
class _Search:
    """State of one branch-and-bound run (options = candidates + one 'none' per group)."""

    def __init__(self, problem: Problem, budget: float, *, exact_units: np.ndarray, use_lp: bool,
                 deadline: float, dp_limit: int):
        self.p = problem
        self.budget = float(budget)
        self.use_lp = use_lp
        self.deadline = deadline
        self.dp_limit = dp_limit
        self.exact_units = exact_units
        cand = np.arange(problem.n_candidates)
        groups_present = np.unique(problem.groups)
        opt_cand = np.concatenate([cand, np.full(groups_present.size, _NONE)])
        opt_group = np.concatenate([problem.groups, groups_present])
        order = np.lexsort((opt_cand, opt_group))
        self.opt_cand = opt_cand[order]
        self.opt_group = opt_group[order]
        self.opt_cost = np.where(self.opt_cand >= 0, problem.costs[np.maximum(self.opt_cand, 0)], 0.0)
        self.n_opts = self.opt_cand.size
        self.delta = objective_grid(problem)
        self.cost_step = _cost_step(problem.costs)
        self.inc_value = -math.inf
        self.inc_store = np.zeros(0, dtype=np.int64)
        self.stats = {"nodes": 0, "lp_solves": 0, "dp_solves": 0, "pruned": 0, "fixed_by_reduced_cost": 0,
                      "incumbent_updates": 0, "root_bound": math.inf, "root_lp_value": math.nan,
                      "grid_step": self.delta, "cost_step": self.cost_step}

    # -- pruning rule -----------------------------------------------------
    def can_prune(self, ub) -> bool | np.ndarray:
        ub = np.asarray(ub, dtype=float)
        inc = self.inc_value
        out = ub <= inc + 1e-9 * max(1.0, abs(inc))
        if self.delta > 0:
            out |= ub < inc + self.delta - 1e-7 * np.maximum(1.0, np.abs(ub))
        return bool(out) if out.ndim == 0 else out

    def offer(self, store) -> None:
        store = np.unique(np.asarray(store, dtype=np.int64))
        if float(self.p.costs[store].sum()) > self.budget + 1e-9 * max(1.0, abs(self.budget)):
            return
        if np.unique(self.p.groups[store]).size != store.size:
            return
        value = evaluate(self.p, store)
        if value > self.inc_value + 1e-12 * max(1.0, abs(value)):
            self.inc_value, self.inc_store = value, store
            self.stats["incumbent_updates"] += 1

    # -- node analysis ----------------------------------------------------
    def analyse(self, allowed, mu_in):
        """Lagrangian bound of a node; None when the node has no feasible store."""
        p = self.p
        counts = np.bincount(self.opt_group[allowed], minlength=p.n_groups)
        decided = allowed & (counts[self.opt_group] == 1)
        store = self.opt_cand[decided & (self.opt_cand >= 0)]
        free = allowed & ~decided
        spent = float(p.costs[store].sum())
        rest = self.budget - spent
        if rest < -1e-9 * max(1.0, abs(self.budget)):
            return None
        sums = coverage_sums(p, store)
        f_store = float(unit_values(p, sums).sum())
        slope_hi = p.weights * _right_slopes(p, sums)
        slope_lo = p.weights * p.h_slopes.min(axis=1)
        mu = np.clip(np.where(self.exact_units, np.inf, mu_in), slope_lo, slope_hi)
        const = f_store + float(_residual_conjugate(p, sums, mu).sum())
        free_idx = np.flatnonzero(free)
        info = {"ub": f_store, "store": store, "free_idx": free_idx, "mu": mu, "sums": sums,
                "rest": rest, "f_store": f_store, "const": const}
        if free_idx.size == 0:
            return info
        oc = self.opt_cand[free_idx]
        real = oc >= 0
        profit = np.zeros(free_idx.size)
        profit[real] = p.coverage[oc[real]] @ mu
        cost = self.opt_cost[free_idx]
        grp = self.opt_group[free_idx]
        starts = np.flatnonzero(np.r_[True, grp[1:] != grp[:-1]])
        val, _, d, m, pick = _lagrangian_min(profit, cost, starts, rest)
        if math.isinf(val):
            return None
        seg_of = np.repeat(np.arange(starts.size), np.diff(np.append(starts, free_idx.size)))
        ub = const + val
        info.update(ub=ub, ub_lagr=ub, ub_opt=ub - (m[seg_of] - d), pick=pick, grp=grp,
                    starts=starts, seg_of=seg_of, d=d, profit=profit, cost=cost)
        return info

    def dp_bound(self, info):
        """Integer multiple-choice knapsack over the free options by dynamic programming.

        Tightens ``info['ub']`` (the knapsack is solved exactly instead of its
        LP) and offers the maximising store.  Needs costs on a grid and a
        table of at most ``dp_limit`` cells; otherwise does nothing.
        """
        if self.cost_step <= 0 or info["free_idx"].size == 0:
            return
        step = self.cost_step
        cost_units = np.rint(info["cost"] / step).astype(np.int64)
        starts, seg_of = info["starts"], info["seg_of"]
        n_seg = starts.size
        max_use = int(np.maximum.reduceat(cost_units, starts).sum())
        slack = 1e-9 * max(1.0, abs(self.budget))      # the tolerance of is_feasible
        cap = min(int(math.floor((info["rest"] + slack) / step)), max_use)
        if cap < 0 or (cap + 1) * info["free_idx"].size > self.dp_limit:
            return
        self.stats["dp_solves"] += 1
        profit = info["profit"]
        ends = np.append(starts[1:], seg_of.size)
        table = np.full(cap + 1, -np.inf)
        table[0] = 0.0
        choice = np.zeros((n_seg, cap + 1), dtype=np.int32)
        for s in range(n_seg):
            new = np.full(cap + 1, -np.inf)
            arg = np.full(cap + 1, -1, dtype=np.int32)
            for o in range(starts[s], ends[s]):
                c = cost_units[o]
                if c > cap:
                    continue
                cand_vals = table[: cap + 1 - c] + profit[o]
                better = cand_vals > new[c:]
                new[c:] = np.where(better, cand_vals, new[c:])
                arg[c:] = np.where(better, o, arg[c:])
            table = new
            choice[s] = arg
        best_cap = int(np.argmax(table))
        if not np.isfinite(table[best_cap]):
            info["ub"] = -math.inf
            return
        ub = info["const"] + float(table[best_cap])
        picked = []
        c = best_cap
        for s in range(n_seg - 1, -1, -1):
            o = int(choice[s, c])
            picked.append(o)
            c -= int(cost_units[o])
        oc = self.opt_cand[info["free_idx"][picked]]
        self.offer(np.concatenate([info["store"], oc[oc >= 0]]))
        info["ub"] = min(info["ub"], ub)

    # -- LP relaxation of a node: used only to propose unit prices --------
    def lp_prices(self, info):
        """Solve the node's LP relaxation; return (prices mu, x of free options, LP value) or None."""
        from scipy.optimize import linprog

        p = self.p
        free_idx = info["free_idx"]
        oc = self.opt_cand[free_idx]
        real = np.flatnonzero(oc >= 0)
        cands = oc[real]
        if cands.size == 0:
            return None
        sub = p.coverage[cands]                          # (n_x, n_units)
        touched = np.unique(sub.indices)
        sub = sub[:, touched]                            # (n_x, n_t)
        n_x, n_t = cands.size, touched.size
        sums = info["sums"][touched]
        a = p.h_slopes[touched]
        b = p.h_intercepts[touched]
        hs = np.min(a * sums[:, None] + b, axis=1)
        b_res = a * sums[:, None] + b - hs[:, None]      # residual pieces: y <= a*t + b_res
        flat = a <= 0
        y_cap = np.where(flat, b_res, np.inf).min(axis=1)
        rows_r, rows_k = np.nonzero(~flat)
        n_pieces = rows_r.size
        w = p.weights[touched]
        # piece rows:  y_r - a_rk * sum_u sub[u, r] x_u <= b_res_rk
        sub_t = sp.csr_array(sub.T)                      # (n_t, n_x)
        block = sp.csr_array(sub_t[rows_r].multiply((-a[rows_r, rows_k])[:, None]))
        y_part = sp.csr_array((np.ones(n_pieces), (np.arange(n_pieces), rows_r)), shape=(n_pieces, n_t))
        grp_local = info["grp"][real]
        g_ids, g_local = np.unique(grp_local, return_inverse=True)
        grp_rows = sp.csr_array((np.ones(n_x), (g_local, np.arange(n_x))), shape=(g_ids.size, n_x))
        none_allowed = np.zeros(p.n_groups, dtype=bool)
        none_allowed[self.opt_group[free_idx[oc < 0]]] = True
        eq = ~none_allowed[g_ids]
        n_le, n_eq = int((~eq).sum()), int(eq.sum())
        a_ub = sp.vstack([sp.hstack([block, y_part]),
                          sp.hstack([sp.csr_array(p.costs[cands][None, :]), sp.csr_array((1, n_t))]),
                          sp.hstack([grp_rows[np.flatnonzero(~eq)], sp.csr_array((n_le, n_t))])]).tocsc()
        b_ub = np.concatenate([b_res[rows_r, rows_k], [info["rest"]], np.ones(n_le)])
        a_eq = b_eq = None
        if n_eq:
            a_eq = sp.hstack([grp_rows[np.flatnonzero(eq)], sp.csr_array((n_eq, n_t))]).tocsc()
            b_eq = np.ones(n_eq)
        c = np.concatenate([np.zeros(n_x), -w])
        bounds = np.column_stack([np.zeros(n_x + n_t), np.concatenate([np.ones(n_x), y_cap])])
        self.stats["lp_solves"] += 1
        res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
        if res.status != 0:
            return None
        duals = np.maximum(-res.ineqlin.marginals[:n_pieces], 0.0)
        mu_t = np.zeros(n_t)
        np.add.at(mu_t, rows_r, a[rows_r, rows_k] * duals)
        mu = np.full(p.n_units, np.inf)
        mu[touched] = mu_t
        x_opt = np.zeros(free_idx.size)
        x_opt[real] = res.x[:n_x]
        return mu, x_opt, -res.fun + info["f_store"]

    # -- heuristics -------------------------------------------------------
    def round_store(self, info, x_opt=None):
        """Offer S + the options a relaxation prefers, cut to the budget; return that store."""
        store = list(info["store"])
        if x_opt is not None:
            oc = self.opt_cand[info["free_idx"]]
            take = (x_opt > 0.5) & (oc >= 0)
            extra = oc[take][np.argsort(-x_opt[take], kind="stable")]
        else:
            oc = self.opt_cand[info["free_idx"]][info["pick"]]
            extra = oc[oc >= 0]
        spent = float(self.p.costs[store].sum()) if store else 0.0
        for u in extra:
            if spent + self.p.costs[u] <= self.budget + 1e-9 * max(1.0, abs(self.budget)):
                store.append(int(u))
                spent += self.p.costs[u]
        self.offer(store)
        return store

    def bound(self, allowed, mu):
        """Analyse a node: Lagrangian bound, rounding, then the DP bound; None if closed."""
        info = self.analyse(allowed, mu)
        if info is None:
            return None
        if info["free_idx"].size == 0:
            self.offer(info["store"])
            return None
        self.round_store(info)
        if self.can_prune(info["ub"]):
            return None
        self.dp_bound(info)
        if self.can_prune(info["ub"]):
            return None
        return info

    # -- the search -------------------------------------------------------
    def run(self, mu0, *, root_lp: bool, node_lp: bool):
        """Best-bound-first search with plunging; returns the largest open bound (-inf when finished).

        After a branching the preferred child is processed next (a dive, which
        finds incumbents early); when a dive ends, the open node of largest
        bound is taken.
        """
        heap = []
        counter = itertools.count()
        plunge = None

        def push(allowed, mu, ub, is_root=False):
            # largest bound first; among equal bounds the node pushed last (the preferred child)
            heapq.heappush(heap, (-ub, -next(counter), (allowed, mu, ub, is_root)))

        push(np.ones(self.n_opts, dtype=bool), mu0, math.inf, True)
        while heap or plunge is not None:
            if self.stats["nodes"] and time.perf_counter() > self.deadline:
                return max([e[2][2] for e in heap] + ([plunge[2]] if plunge is not None else []))
            if plunge is not None:
                (allowed, mu, parent_ub, is_root), plunge = plunge, None
            else:
                allowed, mu, parent_ub, is_root = heapq.heappop(heap)[2]
            if self.can_prune(parent_ub):
                self.stats["pruned"] += 1
                continue
            self.stats["nodes"] += 1
            info = self.bound(allowed, mu)
            lp_x = None
            if info is not None and self.use_lp and (root_lp if is_root else node_lp):
                lp = self.lp_prices(info)
                if lp is not None:
                    mu_lp, lp_x, lp_val = lp
                    if is_root:
                        self.stats["root_lp_value"] = lp_val
                    store = self.round_store(info, lp_x)
                    self.offer(greedy_store(self.p, self.budget, start=store))
                    info_lp = self.bound(allowed, np.where(np.isinf(mu_lp), mu, mu_lp))
                    if info_lp is None:
                        info = None
                    elif info_lp["ub_lagr"] <= info["ub_lagr"]:
                        info = info_lp
            if is_root:
                self.stats["root_bound"] = info["ub"] if info is not None else self.inc_value
            if info is None:
                self.stats["pruned"] += 1
                continue
            # reduced-cost fixing on this subtree (Lagrangian bound with one option forced)
            free_idx, ub_opt, seg_of = info["free_idx"], info["ub_opt"], info["seg_of"]
            drop = self.can_prune(ub_opt)
            child_allowed = allowed.copy()
            child_allowed[free_idx[drop]] = False
            self.stats["fixed_by_reduced_cost"] += int(drop.sum())
            keep = ~drop
            counts = np.bincount(seg_of[keep], minlength=info["starts"].size)
            open_segs = np.flatnonzero(counts >= 2)
            if open_segs.size == 0 or drop.any():
                # re-analyse the reduced node before branching
                plunge = (child_allowed, info["mu"], info["ub"], False)
                continue
            # branch on the open group whose LP choice is most fractional, else whose
            # best two options are closest in reduced profit
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
            members = np.flatnonzero(seg_of == seg)
            pref = lp_x[members] if lp_x is not None else info["d"][members]
            members = members[np.lexsort((-info["d"][members], -pref))]
            for k, o in enumerate(members[::-1]):
                child = child_allowed.copy()
                child[free_idx[members]] = False
                child[free_idx[o]] = True
                entry = (child, info["mu"], float(min(info["ub"], ub_opt[o])), False)
                if k == members.size - 1:
                    plunge = entry          # the preferred child: dive into it now
                else:
                    push(*entry)
        return -math.inf


def _dominated(problem: Problem, active: np.ndarray) -> np.ndarray:
    """Candidates dominated inside their group: another costs no more and covers at least as much."""
    cand = np.flatnonzero(active)
    if cand.size < 2:
        return np.zeros(problem.n_candidates, dtype=bool)
    order = cand[np.argsort(problem.groups[cand], kind="stable")]
    g = problem.groups[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    sizes = np.diff(np.append(starts, order.size))
    us, vs = [], []
    for size in np.unique(sizes[sizes > 1]):
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




def branch_and_bound(problem: Problem, budget: float, /, *, time_limit: float | None = None,
                     root_lp: bool = True, node_lp: bool = True, max_combos: int = 4096,
                     dp_limit: int = 20_000_000) -> Result:
    """Exact optimum by decomposition and branch-and-bound with Lagrangian bounds.

    1. Candidates costing more than the budget, covering nothing, or dominated
       inside their group (another costs no more and covers at least as much)
       are removed.
    2. Groups that share no unit are independent.  Each connected component
       of groups with at most ``max_combos`` stores is collapsed into one group
       whose options are the (cost, value) Pareto frontier of its stores; F is
       unchanged and those groups no longer interact.
    3. The bound prices each unit of coverage (``mu_r``) and the budget
       (``lam``): for any prices ``F(S + X) <= F(S) + sum_r phi_r(mu_r) +
       sum_{u in X} mu . a_u`` (``phi_r`` the concave conjugate of ``w_r h_r``),
       and the best X for the right side is a multiple-choice knapsack, whose
       LP value is computed exactly and, when costs lie on a grid and the
       table is small (``dp_limit`` cells), whose integer value is computed by
       dynamic programming.  Prices come from the LP relaxation (HiGHS via
       scipy) where coupled units remain; the LP only *proposes* them -- the
       bound is computed here and is valid whatever they are.
    4. Incumbents: greedy, LP and DP roundings.  Reduced-cost fixing removes
       options whose bound cannot beat the incumbent; the search takes the
       open node of largest bound first, branching on the most fractional
       group of the node LP.
       When every value of F lies on a grid (detected from the data, see
       :func:`objective_grid`) a bound below ``incumbent + step`` closes a
       node; otherwise the tolerance is 1e-9 relative.

    Parameters
    ----------
    problem : Problem
    budget : float
        The knapsack capacity, >= 0.
    time_limit : float, optional
        Seconds; when exceeded the best store found is returned with status
        ``timeout`` and the largest bound of the open nodes.  It is checked
        between nodes: the reduction, the decomposition and the first node
        always complete (about 0.5 s at 10,000 experiences).
    root_lp, node_lp : bool
        Take unit prices from the LP relaxation at the root / at nodes the
        cheaper bounds do not close.  With both off the prices are the
        weights (the fractional knapsack over marginal gains).
    max_combos : int
        Largest number of stores of a component that is enumerated.
    dp_limit : int
        Largest dynamic-programming table (options x budget steps).

    Returns
    -------
    Result
        status ``optimal`` or ``timeout``; ``stats`` has nodes, LP and DP
        solves, options fixed by reduced costs, the root bound, the grid
        steps and the decomposition.

    Examples
    --------
    >>> from solvers.problem import Problem
    >>> p = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
    >>> r = branch_and_bound(p, 4)
    >>> r.value, r.chosen.tolist(), r.status
    (2.5, [1, 2], 'optimal')
    """
    started = time.perf_counter()
    settings = _check_settings(budget, time_limit, root_lp, node_lp, max_combos, dp_limit)
    budget = float(budget)
    deadline = started + (time_limit if time_limit is not None else math.inf)
    p = problem
    tol_b = 1e-9 * max(1.0, abs(budget))
    active = (p.costs <= budget + tol_b) & (np.diff(p.coverage.indptr) > 0)
    removed = {"over_budget": int((p.costs > budget + tol_b).sum())}
    dom = _dominated(p, active)
    active &= ~dom
    removed["dominated"] = int(dom.sum())
    if not active.any():
        return make_result(p, budget, method="bnb", settings=settings, chosen=[], status="optimal", bound=0.0,
                           started=started, stats={"removed": removed, "nodes": 0},
                           message="no candidate fits the budget with positive value")
    reduced, members, exact_units, dstats = _decompose(p, active, max_combos)
    search = _Search(reduced, budget, exact_units=exact_units, use_lp=not exact_units.all(),
                     deadline=deadline, dp_limit=dp_limit)
    search.offer([])
    search.offer(greedy_store(reduced, budget))
    mu0 = reduced.weights * _right_slopes(reduced, np.zeros(reduced.n_units))
    open_bound = search.run(mu0, root_lp=root_lp, node_lp=node_lp)
    chosen = sorted(u for j in search.inc_store for u in members[j])
    stats = dict(search.stats, removed=removed, **dstats)
    if open_bound > -math.inf:
        return make_result(p, budget, method="bnb", settings=settings, chosen=chosen, status="timeout",
                           bound=max(open_bound, search.inc_value), started=started, stats=stats,
                           message=f"time limit {time_limit}s reached after {stats['nodes']} nodes")
    return make_result(p, budget, method="bnb", settings=settings, chosen=chosen, status="optimal",
                       bound=search.inc_value, started=started, stats=stats,
                       message=f"proved optimal after {stats['nodes']} nodes")


def _check_settings(budget, time_limit, root_lp, node_lp, max_combos, dp_limit) -> dict:
    check_budget(budget)
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                   or not time_limit > 0):
        raise ValueError(f"time_limit must be None or a number of seconds > 0; got {time_limit!r}")
    for name, val in (("root_lp", root_lp), ("node_lp", node_lp)):
        if not isinstance(val, bool):
            raise ValueError(f"{name} must be True or False; got {val!r}")
    for name, val in (("max_combos", max_combos), ("dp_limit", dp_limit)):
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise ValueError(f"{name} must be an int >= 1; got {val!r}")
    return {"time_limit": time_limit, "root_lp": root_lp, "node_lp": node_lp, "max_combos": max_combos,
            "dp_limit": dp_limit}
