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
the price is this package's own (the minimiser of ``D``, found by bisection and made exact).

This certifies what a MILP's branch-and-bound cannot close: on ``random_problem(10000, seed)`` at 5 %
of the stream cost the LP bound is 0.6-0.8 above OPT on a grid of 0.5 and HiGHS and SCIP branch for
minutes, while every loss within reach here is a multiple of 0.2 or 0.4 (docs/backends.md).
It shares no code with bnb (which bounds by a dynamic programme over the budget); the components and
their stores are found here, from the problem (:mod:`.stores`: every store of a small component, the
Pareto frontier of a large one by :mod:`.frontier`), the price and the programme are :mod:`.prove`, and
:mod:`.grid` places float values on F's grid with a bound on their round-off.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from ..objective import evaluate
from ..problem import Problem
from ..result import Declined, Result, check_budget, make_result
from ..settings import TIME_LIMIT, Setting, validate_settings
from .grid import grid_floor, row_errors
from .prove import best_price, prove
from .stores import component_stores, integer_costs, kept_candidates

__all__ = ["lattice", "lattice_proof", "LATTICE_SETTINGS", "Proof"]

#: the most (cost, value) pairs the dynamic programme of a large component keeps (more: decline)
MAX_ENTRIES = 2_000_000

#: the settings :func:`lattice` declares (registered as they are by the registry)
LATTICE_SETTINGS = (
    TIME_LIMIT,
    Setting("max_stores", int, 4096, "Most stores of one coupled component that are enumerated; a larger one "
            "gets its (cost, value) frontier from a dynamic programme.", low=1),
    Setting("max_window", int, 10**7, "Widest window, in units of the lattice, that the reachability programme "
            "covers (wider: no proof, the next back-end runs).", low=1))


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
    n_stores: int                    # the stores that matter (each beats the cheaper ones of its component)
    largest_component: int           # of them, in the largest component
    n_enumerated: int = 0            # stores enumerated (small components), before that filter
    n_programmed: int = 0            # components whose frontier came from the dynamic programme
    costs_followed: bool = False     # the second stage (unspent budget followed exactly) decided

    def as_stats(self) -> dict:
        return {"proved": self.proved, "value": float(self.value), "bound": float(self.bound), "lagrangian_bound": float(self.lagrangian_bound),
                "price": str(self.price), "grid_step": str(self.grid_step), "cost_step": str(self.cost_step),
                "window": float(self.window),
                "losses": [[str(v), n] for v, n in self.losses], "slack_loss": str(self.slack_loss),
                "n_components": self.n_components, "n_stores": self.n_stores,
                "n_enumerated": self.n_enumerated, "n_programmed": self.n_programmed,
                "costs_followed": self.costs_followed,
                "largest_component": self.largest_component}

    def explain(self, value: float) -> str:
        """One sentence on why the store is (or is not proved) optimal."""
        programmed = f", {self.n_programmed:,} by a dynamic programme" if self.n_programmed else ""
        head = (f"at the budget price {self.price} per unit of cost the Lagrangian bound over the stores of "
                f"{self.n_components:,} components ({self.n_stores:,} stores that matter, exactly{programmed}) is "
                f"{_num(self.lagrangian_bound)}")
        if self.window < 0:
            return head + f", less than one grid step ({_num(self.grid_step)}) above the store's {value:.10g}: optimal"
        shown = ", ".join(f"{_num(v)} (x{n})" for v, n in self.losses[:6]) + (", ..." if len(self.losses) > 6 else "")
        within = (f"the components' losses within reach [{shown or 'none'}] and {_num(self.slack_loss)} per "
                  f"{_num(self.cost_step)} of cost left unspent")
        if self.proved:
            short = [self.window - k * self.grid_step for k in range(int(self.window / self.grid_step) + 1)]
            listed = ", ".join(_num(v) for v in short[:4]) + (", ..." if len(short) > 4 else "")
            if self.costs_followed:
                return (head + f"; a store worth more than {value:.10g} would fall short of it by {listed}; sums "
                        f"of {within} can make that, but not with the budget the components' stores actually "
                        "leave unspent (a table over loss and cost spent, exact): the store is optimal")
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
        Most stores of one component enumerated; a larger component gets its (cost, value) frontier from
        a dynamic programme (:mod:`.frontier`).
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
        No store given, costs, coverage or F not on an exact grid, a component whose programme keeps more
        than :data:`MAX_ENTRIES` pairs, or numbers too large for exact 64-bit arithmetic.

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
    from ..registry import CERTIFIER_SETTINGS   # the registry imports this module
    from ..milp.model import _check_hint

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
    from ..milp.scaling import objective_step

    store = np.asarray(store, dtype=np.int64).reshape(-1)
    step = objective_step(problem, budget)
    if step is None and kept_candidates(problem, budget).size == 0:
        step = Fraction(1)       # no candidate fits and covers something of worth: every store is worth 0
    if step is None:
        raise Declined("F has no exact grid (a weight, a coverage or an h piece is no short decimal): the lattice "
                       "certificate needs one")
    cost_ints, budget_int, cost_step = integer_costs(problem, budget)
    stores = component_stores(problem, budget, step, cost_ints, budget_int, max_stores, MAX_ENTRIES, deadline)
    if stores is None:
        return None
    values, cost, starts = stores.values, stores.costs, stores.starts
    x = _incidence(problem, store)
    v_hint = grid_floor(evaluate(problem, store), float(row_errors(problem, x)[0]), step)
    if price is None:
        lam = best_price(values, cost, starts, budget_int)
    else:
        if not (isinstance(price, Fraction) and price >= 0):
            raise ValueError(f"price must be a Fraction >= 0; got {price!r}")
        lam = price * cost_step / step               # grid steps of F per step of cost
    found = prove(values, cost, starts, budget_int, v_hint, lam, max_window, deadline)
    if found is None:
        return None
    reach_bound, window, losses, d_units, q, followed = found
    unit = step / q                                  # one unit of the programme, in F
    return Proof(proved=reach_bound is None, value=step * v_hint,
                 bound=step * v_hint if reach_bound is None else reach_bound * step,
                 lagrangian_bound=d_units * unit, price=lam * step / cost_step, grid_step=step,
                 cost_step=cost_step, window=window * unit,
                 losses=tuple((v * unit, n) for v, n in losses), slack_loss=lam.numerator * unit,
                 n_components=stores.n_components, n_stores=int(values.size), n_enumerated=stores.n_enumerated,
                 n_programmed=stores.n_programmed, costs_followed=followed,
                 largest_component=int(np.diff(starts).max()) if values.size else 0)


def _incidence(problem: Problem, store: np.ndarray) -> sp.csr_array:
    """The store as one row of a store incidence (1 x candidates)."""
    return sp.csr_array((np.ones(store.size), (np.zeros(store.size, dtype=np.int64), store)),
                        shape=(1, problem.n_candidates))


