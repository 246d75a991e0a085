"""The lattice certificate: a given store proved optimal by one budget price, the stores of every
coupled component, and the integer lattice of what a better store would have to lose.

For a price ``lam >= 0`` on the budget, every store ``X`` satisfies, exactly,

    F(X) = lam * B + sum_c M_c(lam) - [ sum_c loss_c(X) + lam * (B - C(X)) ]

where ``c`` runs over the *components* (groups joined by a unit that candidates of both cover: F is
the sum of their values), ``M_c(lam)`` is the most a component's own stores make of
``value - lam * cost`` (the empty store counts, so ``M_c >= 0``), ``loss_c(X) >= 0`` is how far the
part of ``X`` in ``c`` falls short of it, and ``B - C(X) >= 0`` is the budget ``X`` leaves unspent.
The first part is the Lagrangian bound ``D(lam)``; it bounds F from above (the LP bound of the
knapsack over the components' stores when ``lam`` is its optimal price).

When the costs lie on a grid (integers after one exact scaling), F lies on a grid of step ``g``
(:func:`~memaudit_solvers.milp.scaling.objective_step`) and ``lam = p / q`` is rational, every term
in the brackets is a whole number of units ``g / q``.  A store worth ``V + k*g`` (``k >= 1``) more
than the given store's ``V`` must lose exactly ``D - V - k*g``; the losses within reach are sums of
the components' own losses (one store each) and of ``p`` per unit of unspent budget, so a
reachability programme over that window (a few units wide on knapsack-like packages) decides whether
any such store can exist.  When none can, the given store is optimal.  The argument is exact
(integers and :class:`fractions.Fraction`), valid for every price, and uses nothing but the package:
the price is this module's own (the minimiser of ``D``, found by bisection and made exact).

This certifies what a MILP's branch-and-bound cannot close: on ``random_problem(10000, seed)`` at 5 %
of the stream cost the LP bound is 0.6-0.8 above OPT on a grid of 0.5 and HiGHS and SCIP branch for
minutes, while every loss within reach here is a multiple of 0.2 or 0.4 (docs/backends.md).
It shares no code with bnb (which bounds by a dynamic programme over the budget); the components and
their stores are enumerated here, from the problem.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .exact import as_fraction, decimal_grid
from .objective import evaluate, h_inf, h_values
from .problem import Problem
from .result import Declined, Result, SolverError, check_budget, make_result
from .settings import TIME_LIMIT, Setting, validate_settings

__all__ = ["lattice", "lattice_proof", "LATTICE_SETTINGS", "Proof"]

#: the settings :func:`lattice` declares (registered as they are by the registry)
LATTICE_SETTINGS = (
    TIME_LIMIT,
    Setting("max_stores", int, 4096, "Most stores of one coupled component that are enumerated (a larger "
            "component: decline).", low=1),
    Setting("max_window", int, 10**7, "Widest window, in units of the lattice, that the reachability programme "
            "covers (wider: no proof, the next back-end runs).", low=1))

#: the most stores enumerated in all (memory: about 100 bytes each)
MAX_TOTAL_STORES = 5_000_000

#: the most cell updates the reachability programme may make
_MAX_WORK = 300_000_000

#: a component's value must sit on F's grid within this fraction of a step (after the float error bound)
_GRID_SLACK = 0.25

_EPS = 2.0**-53


@dataclass(frozen=True)
class Proof:
    """What :func:`lattice` found (``Result.stats["lattice"]`` is its :meth:`as_stats`).

    Values are in the units of F of the problem it ran on (:func:`~memaudit_solvers.certify.run_rescaled`
    scales weights far from 1 by a power of two); ``price`` is F per unit of cost in the package's own units.
    """

    proved: bool
    value: Fraction                  # the store's value rounded down to the grid
    bound: Fraction                  # the lattice bound on F (the store's value when proved)
    lagrangian_bound: Fraction       # D(price)
    price: Fraction                  # lam, F per unit of cost
    grid_step: Fraction              # g
    cost_step: Fraction              # the costs' grid
    window: Fraction                 # D - (value + g): the loss a store one step better must have (< 0: none)
    losses: tuple                    # ((loss in F, components offering it), ...) within the window
    slack_loss: Fraction             # what one step of unspent budget loses
    n_components: int
    n_stores: int
    largest_component: int           # stores of the largest component

    def as_stats(self) -> dict:
        return {"proved": self.proved, "value": float(self.value), "bound": float(self.bound), "lagrangian_bound": float(self.lagrangian_bound),
                "price": str(self.price), "grid_step": str(self.grid_step), "cost_step": str(self.cost_step),
                "window": float(self.window),
                "losses": [[str(v), n] for v, n in self.losses], "slack_loss": str(self.slack_loss),
                "n_components": self.n_components, "n_stores": self.n_stores,
                "largest_component": self.largest_component}

    def explain(self, value: float) -> str:
        """One sentence on why the store is (or is not proved) optimal."""
        head = (f"at the budget price {self.price} per unit of cost the Lagrangian bound over the stores of "
                f"{self.n_components:,} components ({self.n_stores:,} stores enumerated exactly) is "
                f"{_num(self.lagrangian_bound)}")
        if self.window < 0:
            return head + f", less than one grid step ({_num(self.grid_step)}) above the store's {value:.10g}: optimal"
        shown = ", ".join(f"{_num(v)} (x{n})" for v, n in self.losses[:6]) + (", ..." if len(self.losses) > 6 else "")
        within = (f"the components' losses within reach [{shown or 'none'}] and {_num(self.slack_loss)} per "
                  f"{_num(self.cost_step)} of cost left unspent")
        if self.proved:
            short = [self.window - k * self.grid_step for k in range(int(self.window / self.grid_step) + 1)]
            listed = ", ".join(_num(v) for v in short[:4]) + (", ..." if len(short) > 4 else "")
            return (head + f"; a store worth more than {value:.10g} would fall short of it by {listed}, and no sum "
                    f"of {within} makes such an amount: the store is optimal")
        return (head + f"; a store worth {_num(self.bound)} would fall short of it by "
                f"{_num(self.lagrangian_bound - self.bound)}, a sum of {within}: the store {value:.10g} is not "
                "proved optimal (the lattice bound is " + _num(self.bound) + ")")


def _num(f: Fraction) -> str:
    return f"{float(f):.10g}"


def lattice(problem: Problem, budget: float, /, *, hint=None, time_limit: float | None = None,
            max_stores: int = 4096, max_window: int = 10**7) -> Result:
    """Prove a given store optimal with the lattice certificate (see the module docstring).

    A certifying back-end, not a solver: it proves (or fails to prove) that the store ``hint`` is
    optimal, and returns that store.

    Parameters
    ----------
    problem : Problem
    budget : float
    hint : array of int
        The store to prove optimal (candidate indices; checked feasible).  Required.
    time_limit : float or None
        Seconds; checked between the steps (status ``timeout`` past it).
    max_stores : int
        Most stores of one component enumerated; a larger component makes it decline.
    max_window : int
        Widest window (in units ``g / q``) of the reachability programme; wider: no proof.

    Returns
    -------
    Result
        The store ``hint``; status ``optimal`` with ``bound`` its value when the certificate closes,
        ``feasible`` with the lattice bound (a valid upper bound on OPT) when it does not.
        ``stats["lattice"]`` records the price, the bounds, the window and the losses within it
        (:class:`Proof`); the message says why.

    Raises
    ------
    Declined
        No store given, costs or F not on an exact grid, a component with more than ``max_stores``
        stores, or numbers too large for exact 64-bit arithmetic.

    Examples
    --------
    Two experiences, each a fact (cost 2, worth 1) or a summary (cost 5, worth 2): at the price
    1/3 per unit of cost both bounds meet.

    >>> p = Problem.build([2, 5, 2, 5], [0, 0, 1, 1],
    ...                   [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]], [1.0] * 4)
    >>> r = lattice(p, 7, hint=[1, 2])
    >>> r.status, r.value
    ('optimal', 3.0)
    """
    from .registry import CERTIFIER_SETTINGS   # the registry imports this module
    from .milp.model import _check_hint

    started = time.perf_counter()
    check_budget(budget)
    settings = validate_settings("method 'lattice'", CERTIFIER_SETTINGS["lattice"],
                                 {"time_limit": time_limit, "max_stores": max_stores, "max_window": max_window})
    if settings["time_limit"] is not None and math.isinf(settings["time_limit"]):
        settings["time_limit"] = None
    deadline = math.inf if settings["time_limit"] is None else started + settings["time_limit"]
    store = _check_hint(problem, budget, hint)
    if store is None:
        raise Declined("the lattice certificate proves a given store optimal and finds none itself: give it one "
                       "(hint=, as certification does with the method's store)")
    value = evaluate(problem, store)

    def finish(status: str, bound, proof: Proof | None, message: str) -> Result:
        stats = {} if proof is None else {"lattice": proof.as_stats()}
        return make_result(problem, budget, method="lattice", settings=settings, chosen=store, status=status,
                           bound=bound, started=started, stats=stats, message=message)

    proof = lattice_proof(problem, budget, store, max_stores=settings["max_stores"],
                          max_window=settings["max_window"], deadline=deadline)
    if proof is None:
        return finish("timeout", math.inf, None, "the time limit stopped the lattice certificate")
    if proof.proved:
        return finish("optimal", value, proof, "lattice certificate: " + proof.explain(value))
    return finish("feasible", float(proof.bound), proof, "lattice certificate: " + proof.explain(value))


def lattice_proof(problem: Problem, budget: float, store, *, price: Fraction | None = None, max_stores: int = 4096,
                  max_window: int = 10**7, deadline: float = math.inf) -> Proof | None:
    """The lattice certificate for the feasible ``store``: a :class:`Proof`, or None past ``deadline``.

    ``price`` (F per unit of cost, any value >= 0: every price gives a valid bound) defaults to the
    minimiser of the Lagrangian bound.  Raises :class:`Declined` as :func:`lattice` does.
    """
    from .milp.scaling import objective_step

    store = np.asarray(store, dtype=np.int64).reshape(-1)
    kept = _kept(problem, budget)
    # with no candidate that fits and covers something of worth every store is worth 0: any step will do
    step = objective_step(problem, budget) if kept.size else Fraction(1)
    if step is None:
        raise Declined("F has no exact grid (a weight, a coverage or an h piece is no short decimal): the lattice "
                       "certificate needs one")
    cost_ints, budget_int, cost_step = _integer_costs(problem, budget)
    comp_of_group, n_comp = _components(problem, kept)
    stores = _stores(problem, kept, comp_of_group, n_comp, max_stores)
    if time.perf_counter() > deadline:
        return None
    values, cost = _store_values(problem, stores, step), _store_costs(stores, cost_ints)
    v_hint = _grid_floor(evaluate(problem, store), _value_error(problem, store), step)
    if price is None:
        lam = _best_price(values, cost, stores.starts, budget_int)
    else:
        if not (isinstance(price, Fraction) and price >= 0):
            raise ValueError(f"price must be a Fraction >= 0; got {price!r}")
        lam = price * cost_step / step               # grid steps of F per step of cost
    found = _prove(values, cost, stores.starts, budget_int, v_hint, lam, max_window, deadline)
    if found is None:
        return None
    reach_bound, window, losses, d_units, q = found
    unit = step / q                                  # one unit of the programme, in F
    return Proof(proved=reach_bound is None, value=step * v_hint,
                 bound=step * v_hint if reach_bound is None else reach_bound * step,
                 lagrangian_bound=d_units * unit, price=lam * step / cost_step, grid_step=step,
                 cost_step=cost_step, window=window * unit,
                 losses=tuple((v * unit, n) for v, n in losses), slack_loss=lam.numerator * unit,
                 n_components=n_comp, n_stores=int(values.size),
                 largest_component=int(np.diff(stores.starts).max()) if values.size else 0)


def _integer_costs(problem: Problem, budget: float) -> tuple[np.ndarray, int, Fraction]:
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


def _kept(problem: Problem, budget: float) -> np.ndarray:
    """The candidates a better store may need: those that fit the budget, cover a unit worth something, and
    are not dominated inside their group (:func:`~memaudit_solvers.milp.presolve.group_dominance`: any store
    holding a dominated one is worth no more with its dominator instead, and fits)."""
    from .milp.presolve import group_dominance

    worth = (h_inf(problem) > 0) & (problem.weights > 0)
    cov = problem.coverage[:, np.flatnonzero(worth)]
    fits = np.flatnonzero((problem.costs <= budget) & (np.diff(sp.csr_array(cov).indptr) > 0))
    sub = sp.csr_array(cov[fits])
    removed, _ = group_dominance(problem.costs[fits], problem.groups[fits], sub)
    stay = np.ones(fits.size, dtype=bool)
    stay[removed] = False
    return fits[stay]


def _components(problem: Problem, kept: np.ndarray) -> tuple[np.ndarray, int]:
    """``(component of each group, number of components)``: groups joined through units that kept
    candidates of both cover (groups with no kept candidate are components of their own, unused)."""
    g = problem.n_groups
    worth = (h_inf(problem) > 0) & (problem.weights > 0)
    cov = sp.coo_array(problem.coverage[kept][:, np.flatnonzero(worth)])
    group_of_entry = problem.groups[kept][cov.row]
    n = g + problem.n_units
    adj = sp.csr_array((np.ones(cov.nnz), (group_of_entry, g + cov.col)), shape=(n, n))
    _, labels = connected_components(adj, directed=False)
    used = np.zeros(g, dtype=bool)
    used[problem.groups[kept]] = True
    comp = np.full(g, -1, dtype=np.int64)
    _, comp[used] = np.unique(labels[:g][used], return_inverse=True)
    return comp, int(comp.max()) + 1 if used.any() else 0


@dataclass(frozen=True)
class _Stores:
    """Every store of every component: ``starts[c]:starts[c + 1]`` are component c's (the first is empty);
    ``rows`` is the (n_stores, n_candidates) 0/1 incidence."""

    starts: np.ndarray
    rows: sp.csr_array


def _stores(problem: Problem, kept: np.ndarray, comp_of_group: np.ndarray, n_comp: int, max_stores: int) -> _Stores:
    """Enumerate each component's stores (one kept candidate or none per group) in mixed radix."""
    groups = problem.groups[kept]
    order = np.lexsort((kept, groups))
    cands, groups = kept[order], groups[order]
    ug, gstart, gsize = np.unique(groups, return_index=True, return_counts=True)
    comp = comp_of_group[ug]
    by_comp = np.argsort(comp, kind="stable")
    ug, gstart, gsize, comp = ug[by_comp], gstart[by_comp], gsize[by_comp], comp[by_comp]
    radix = gsize + 1
    log_size = np.bincount(comp, weights=np.log2(radix), minlength=n_comp)
    if log_size.size and log_size.max() > math.log2(max_stores) + 1e-9:
        worst = int(np.argmax(log_size))
        raise Declined(f"a coupled component ({int((comp == worst).sum())} experiences) has about "
                       f"{2.0 ** log_size[worst]:.3g} stores, more than max_stores = {max_stores}: the lattice "
                       "certificate enumerates every store of a component")
    # exact strides: within a component the product of the radices of the groups before (all <= max_stores)
    first = np.flatnonzero(np.r_[True, comp[1:] != comp[:-1]]) if comp.size else np.zeros(0, np.int64)
    rank = np.arange(comp.size) - first[comp]
    stride = np.ones(comp.size, dtype=np.int64)
    sizes = np.ones(n_comp, dtype=np.int64)
    for k in range(int(rank.max()) + 1 if rank.size else 0):
        at = np.flatnonzero(rank == k)
        stride[at] = sizes[comp[at]]
        sizes[comp[at]] *= radix[at]
    total = int(sizes.sum())
    if total > MAX_TOTAL_STORES:
        raise Declined(f"the components have {total:,} stores in all, more than {MAX_TOTAL_STORES:,}: the lattice "
                       "certificate enumerates every one")
    starts = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    # one entry per (group, store of its component) whose digit is not 'none'
    per_group = sizes[comp]
    rep = np.repeat(np.arange(comp.size), per_group)
    local = np.arange(rep.size) - np.repeat(np.cumsum(per_group) - per_group, per_group)
    digit = (local // stride[rep]) % radix[rep]
    take = digit > 0
    rep, local, digit = rep[take], local[take], digit[take]
    row = starts[comp[rep]] + local
    col = cands[gstart[rep] + digit - 1]
    rows = sp.csr_array((np.ones(row.size), (row, col)), shape=(total, problem.n_candidates))
    return _Stores(starts=starts, rows=rows)


def _value_error(problem: Problem, store: np.ndarray) -> float:
    """A bound on ``|evaluate(store) - F|`` (F on the decimals the data stand for) from float round-off."""
    x = sp.csr_array((np.ones(store.size), (np.zeros(store.size, dtype=np.int64), store)),
                     shape=(1, problem.n_candidates))
    return float(_row_errors(problem, x)[0])


def _row_errors(problem: Problem, rows: sp.csr_array) -> np.ndarray:
    """Per row of a store incidence: a bound on the round-off of its F computed in floats.

    Each term ``w_r h_r(z_r)`` is off by at most ``4 (k + 4) eps |w_r| (max|slope| z_r + max|intercept|)``
    (``k`` the candidates summed into ``z_r``; the data's own decimal readings are within eps/2 of the
    floats), and the row's sum by ``(terms + 2) eps`` of its absolute size.
    """
    z = sp.csr_array(rows @ abs(problem.coverage))
    n_in = np.asarray(rows.sum(axis=1)).reshape(-1)
    row_of = np.repeat(np.arange(rows.shape[0]), np.diff(z.indptr))
    units = z.indices
    slope = np.abs(problem.h_slopes).max(axis=1)[units]
    icpt = np.abs(problem.h_intercepts).max(axis=1)[units]
    size = np.abs(problem.weights[units]) * (slope * z.data + icpt)
    per_term = 4 * (n_in[row_of] + 4) * _EPS * size
    terms = np.diff(z.indptr)
    return (np.bincount(row_of, weights=per_term, minlength=rows.shape[0])
            + (terms + 2) * _EPS * np.bincount(row_of, weights=size, minlength=rows.shape[0]))


def _store_values(problem: Problem, stores: _Stores, step: Fraction) -> np.ndarray:
    """F of every enumerated store, in whole steps of the grid (int64), checked against round-off."""
    z = sp.csr_array(stores.rows @ problem.coverage)
    row_of = np.repeat(np.arange(z.shape[0]), np.diff(z.indptr))
    worth = problem.weights[z.indices] * h_values(problem, z.indices, z.data)
    f = np.bincount(row_of, weights=worth, minlength=z.shape[0])
    err = _row_errors(problem, stores.rows)
    return _on_grid(f, err, step, "a component's store")


def _on_grid(f: np.ndarray, err: np.ndarray, step: Fraction, what: str) -> np.ndarray:
    """``f / step`` rounded to whole steps, after checking that the float round-off ``err`` cannot move
    any value by a quarter step and that each value is that close to the grid."""
    g = float(step)
    f_arr, e_arr = np.asarray(f, dtype=float), np.asarray(err, dtype=float)
    if f_arr.size and (e_arr.max() >= _GRID_SLACK * g or np.abs(f_arr).max() / g >= 2.0**52):
        raise Declined(f"F's grid step {float(step):g} is too fine for the size of the values in floating point: "
                       "the lattice certificate cannot place them on it exactly")
    k = np.rint(f_arr / g)
    off = np.abs(f_arr - k * g)
    if f_arr.size and np.any(off > e_arr + 1e-12 * np.abs(f_arr) + 4 * _EPS * g):
        raise SolverError(f"{what} is worth {f_arr[np.argmax(off - e_arr)]!r}, off F's grid of step {float(step):g}: "
                          "the grid is wrong (a bug), no certificate")
    k = k.astype(np.int64)
    return k


def _grid_floor(value: float, err: float, step: Fraction) -> int:
    """The highest whole number of grid steps at most ``value`` (``value`` within its round-off ``err`` of a
    grid point counts as that point).  The given store may hold a candidate dominated inside its group and be
    worth a value off the grid; a store of kept candidates beats it exactly when it is worth a step more."""
    g = float(step)
    if err >= _GRID_SLACK * g or abs(value) / g >= 2.0**52:
        raise Declined(f"F's grid step {g:g} is too fine for the size of the values in floating point: the "
                       "lattice certificate cannot place them on it exactly")
    near = round(value / g)
    return int(near) if abs(value - near * g) <= err + 4 * _EPS * g else math.floor(value / g)


def _store_costs(stores: _Stores, cost_ints: np.ndarray) -> np.ndarray:
    """Cost of every enumerated store in whole steps of the cost grid (exact int64)."""
    rows = stores.rows
    per = np.repeat(np.arange(rows.shape[0]), np.diff(rows.indptr))
    if cost_ints.size and float(cost_ints.max()) * rows.shape[1] >= 2.0**62:
        raise Declined("costs too large for exact 64-bit sums")
    out = np.zeros(rows.shape[0], dtype=np.int64)
    np.add.at(out, per, cost_ints[rows.indices])
    return out


def _lagrangian(values: np.ndarray, cost: np.ndarray, starts: np.ndarray, budget: int, lam: float) -> float:
    return lam * budget + float(np.maximum.reduceat(values - lam * cost, starts[:-1]).sum())


def _best_price(values: np.ndarray, cost: np.ndarray, starts: np.ndarray, budget: int) -> Fraction:
    """The budget price (whole grid steps of F per step of cost) minimising the Lagrangian bound, exact.

    The bound is convex and piecewise linear in the price, with kinks at ratios of a component's
    value and cost differences; a golden-section search in floats finds the minimiser and
    :meth:`fractions.Fraction.limit_denominator` the kink it sits at (any price gives a valid bound;
    among the candidates the one with the smallest exact bound is kept).
    """
    if values.size == 0 or starts.size < 2:
        return Fraction(0)
    pos = cost > 0
    hi = float((values[pos] / cost[pos]).max()) if pos.any() else 0.0
    if hi <= 0:
        return Fraction(0)
    lo, hi = 0.0, hi
    phi = (math.sqrt(5) - 1) / 2
    a, b = hi - phi * (hi - lo), lo + phi * (hi - lo)
    fa, fb = _lagrangian(values, cost, starts, budget, a), _lagrangian(values, cost, starts, budget, b)
    for _ in range(64):                  # the bracket shrinks to 1e-13 of its width
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - phi * (hi - lo)
            fa = _lagrangian(values, cost, starts, budget, a)
        else:
            lo, a, fa = a, b, fb
            b = lo + phi * (hi - lo)
            fb = _lagrangian(values, cost, starts, budget, b)
    lam = (lo + hi) / 2
    span = int(cost.max()) or 1
    candidates = {Fraction(0)} | {Fraction(lam).limit_denominator(d) for d in (span, 10 * span, span * span)}
    bounds = {}
    for f in sorted(candidates, key=lambda f: f.denominator):
        try:
            bounds[f] = _exact_bound(values, cost, starts, budget, f)[0]
        except Declined:                     # a denominator too large for 64-bit arithmetic: not this one
            continue
    return min(bounds, key=lambda f: (bounds[f], f.denominator))


def _exact_bound(values, cost, starts, budget: int, lam: Fraction):
    """``(D, M, R, q)``: the Lagrangian bound at ``lam = p / q`` in units of ``1 / q`` grid steps, each
    component's best ``M`` and each store's ``R = q * value - p * cost`` (int64, checked)."""
    p, q = lam.numerator, lam.denominator
    top = q * float(np.abs(values).max(initial=0)) + p * float(np.abs(cost).max(initial=0))
    if top * max(1, starts.size) >= 2.0**62:
        raise Declined("the price's denominator makes the numbers too large for exact 64-bit arithmetic")
    r = q * values - p * cost
    best = np.maximum.reduceat(r, starts[:-1]) if r.size else np.zeros(0, dtype=np.int64)
    d = p * budget + int(best.sum())
    return Fraction(d, q), best, r, q


def _prove(values, cost, starts, budget: int, v_hint: int, lam: Fraction, max_window: int, deadline: float):
    """The reachability programme.  Returns None on the deadline, else ``(bound, window, losses, D, q)``:
    ``bound`` None when no store beats the hint, else the highest value (grid steps) one might reach;
    ``window``, ``D`` in units ``1 / q`` grid steps; ``losses`` the distinct component losses within the
    window with how many components offer each."""
    _, best, r, q = _exact_bound(values, cost, starts, budget, lam)
    p = lam.numerator
    d_units = p * budget + int(best.sum())
    window = d_units - q * (v_hint + 1)          # the shortfall of a store one grid step better
    if window < 0:
        return None if time.perf_counter() > deadline else (None, window, (), d_units, q)
    if window > max_window:
        return (d_units // q, window, (), d_units, q)
    comp = np.repeat(np.arange(starts.size - 1), np.diff(starts))
    loss = best[comp] - r
    small = (loss > 0) & (loss <= window)
    pairs = np.unique(np.column_stack([comp[small], loss[small]]), axis=0) if small.any() else np.zeros((0, 2), np.int64)
    counts = np.unique(pairs[:, 1], return_counts=True) if pairs.size else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    losses = tuple(zip(counts[0].tolist(), counts[1].tolist()))
    # components grouped by the set of losses they offer: each picks one of its set, or 0
    sets: dict[tuple, int] = {}
    if pairs.size:
        cut = np.flatnonzero(np.r_[True, pairs[1:, 0] != pairs[:-1, 0]])
        for a, b in zip(cut.tolist(), np.r_[cut[1:], len(pairs)].tolist()):
            key = tuple(pairs[a:b, 1].tolist())
            sets[key] = sets.get(key, 0) + 1
    reach = np.zeros(window + 1, dtype=bool)
    reach[0] = True
    work = 0
    for key, count in sorted(sets.items()):
        for _ in range(count):
            new = reach.copy()
            for v in key:
                new[v:] |= reach[:window + 1 - v]
            work += (len(key) + 1) * (window + 1)
            if np.array_equal(new, reach):
                break
            reach = new
            if work > _MAX_WORK or time.perf_counter() > deadline:
                return None if time.perf_counter() > deadline else (d_units // q, window, losses, d_units, q)
    shift = p
    while 0 < shift <= window:                    # any number of unspent budget steps, p each
        reach[shift:] |= reach[:window + 1 - shift].copy()
        shift *= 2
    targets = window - q * np.arange(window // q + 1)      # shortfalls of stores 1, 2, ... steps better
    hit = np.flatnonzero(reach[targets])
    if hit.size == 0:
        return (None, window, losses, d_units, q)
    return (v_hint + 1 + int(hit.max()), window, losses, d_units, q)
