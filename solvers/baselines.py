"""Baseline writers, scored against the certified optimum.

Every function here has the method contract ``fn(problem, budget, /, **settings) -> Result``
and returns status ``heuristic``: a store that is feasible by construction (``make_result``
re-checks it) and claims no bound.  Value and cost are recomputed by
:func:`memaudit_solvers.objective.evaluate`.

Offline baselines see the whole package.  The MEMAUDIT paper's two heuristics (arXiv
2605.02199, as its public artifact runs them) carry the names a reader of the paper expects:

* :func:`density`: the paper's density-only writer, one pass in stream order, each experience
  taking its candidate of largest marginal gain per cost that fits;
* :func:`gvt`: the paper's grouped value-threshold, one stream-order pass per threshold of the
  exact grid of singleton densities, best run;

and our own variants keep their own names:

* :func:`density_global` (``density-global``): a global sort by standalone value per cost;
* :func:`gvt_geometric` (``gvt-geometric``): exact marginal gains against a geometrically
  falling threshold, with a best-single fallback; ``gvt-upgrade`` also lets a group exchange
  its stored representation for a better one;
* :func:`kind_greedy` (``fact-only``, ``summary-only``): the greedy restricted to one kind;
* :func:`random_store`: a seeded random feasible store.

(``greedy``, the cost-benefit greedy, lives in :mod:`memaudit_solvers.greedy`.)

Online writers see the stream one experience at a time (groups in index order) and
decide before the next one arrives; their state is the store so far:

* :func:`fifo`: write each experience while it fits;
* :func:`recency`: write each experience and evict the oldest until the store fits;
* :func:`kind_writer`: always write the candidate of one kind (``kind:raw``, ``kind:fact``).

:func:`recency_raw` (``recency-raw``) is the paper's recency writer: it sees the whole stream
and takes raw spans newest first, skipping one that does not fit.

What an online writer writes for an experience is chosen by ``pick`` from that
experience's own candidates: ``verbatim`` (its largest candidate: the raw span, the default),
``cheapest``, or ``value`` (largest standalone value; this reads the unit weights, which
come from the future queries, so it is online in the stream but not blind to the queries).
:func:`online_stores` yields the store after each experience, which is how the tests show
that no writer looks ahead.
"""

from __future__ import annotations

import time
from collections import deque

import numpy as np

from .objective import Coverage, Coverages, budget_slack, evaluate, standalone_values
from .problem import Problem
from .result import Result, check_budget, make_result

__all__ = ["density", "density_global", "gvt", "gvt_geometric", "gvt_upgrade", "stream_passes", "kind_greedy",
           "recency_raw", "random_store", "fifo", "recency", "kind_writer", "online_stores", "PICKS", "GAIN_TOL"]

#: how an online writer chooses one candidate of an arriving experience
PICKS = ("verbatim", "cheapest", "value")

#: a marginal gain at or below this is no gain (the paper's artifact uses the same 1e-12)
GAIN_TOL = 1e-12


def _slack(budget: float) -> float:
    return budget_slack(budget)


def _lexmax(mask: np.ndarray, keys) -> np.ndarray:
    """Per row, the column of the lexicographically largest ``keys`` among ``mask``; -1 for an empty row.

    ``mask`` has shape (T, C); each key is (T, C) or (C,).  Ties are compared exactly, as a
    Python tuple comparison would; the last key must break every tie.
    """
    tie = mask.copy()
    for key in keys:
        k = np.broadcast_to(key, mask.shape)
        best = np.max(np.where(tie, k, -np.inf), axis=1, keepdims=True)
        tie &= k == best
    pick = np.where(tie.any(axis=1), np.argmax(tie, axis=1), -1)
    return pick


def stream_passes(problem: Problem, budget: float, thresholds, rule: str):
    """One stream-order pass per threshold, all run side by side: their stores, costs and values.

    In each pass the groups arrive in index order; for each, among its candidates that fit the
    remaining budget and have marginal gain > :data:`GAIN_TOL` against the pass's store so far,
    the pass stores at most one:

    * ``rule="density"``: the one of largest ``(gain / cost, gain, -cost, index)`` (the
      threshold is ignored);
    * ``rule="value"``: among those with ``gain / cost + 1e-12 >= threshold``, the one of largest
      ``(gain, -cost, index)``.

    Marginal gains are exact (recomputed against each pass's own store).

    Parameters
    ----------
    thresholds : array_like, shape (T,)

    Returns
    -------
    stores : list of T lists of candidate indices (stream order)
    costs : ndarray, shape (T,)
    values : ndarray, shape (T,)
        ``F`` of each store, from the pass's coverage state (:class:`memaudit_solvers.objective.Coverages`).
    """
    tau = np.asarray(thresholds, dtype=float).reshape(-1)
    n_t = tau.size
    states = Coverages(problem, n_t)
    remaining = np.full(n_t, float(budget))
    slack = _slack(budget)
    stores: list[list[int]] = [[] for _ in range(n_t)]
    for g, members in enumerate(problem.group_members()):
        if members.size == 0:
            continue
        gains = states.group_gains(g)                                      # (T, C)
        costs = problem.costs[members]
        ok = (costs <= remaining[:, None] + slack) & (gains > GAIN_TOL)
        dens = gains / costs
        if rule == "density":
            pick = _lexmax(ok, (dens, gains, -costs, members.astype(float)))
        else:
            ok &= dens + 1e-12 >= tau[:, None]
            pick = _lexmax(ok, (gains, -costs, members.astype(float)))
        for t in np.flatnonzero(pick >= 0):
            j = int(pick[t])
            u = int(members[j])
            stores[t].append(u)
            remaining[t] -= costs[j]
            states.add(t, u)
    spent = np.array([float(problem.costs[s].sum()) for s in stores])
    return stores, spent, states.values


def density(problem: Problem, budget: float, /) -> Result:
    """The MEMAUDIT paper's density-only writer: one pass in stream order.

    For each arriving experience (group index order) it stores the candidate of largest
    marginal gain per cost ``(F(S + u) - F(S)) / c_u`` among those that fit the remaining budget
    and have gain > 1e-12; ties by larger gain, then lower cost, then the later-listed
    candidate.  No threshold, no look-ahead, never revisits: a cheap fact that arrives first
    takes its experience's one slot even when the costlier update of that experience carries
    the validity state, and budget spent early on dense but low-value experiences is gone when
    a valuable one arrives.  It can be arbitrarily bad (``memaudit generate density-trap``).
    ``density-global`` is the global-sort variant.

    Examples
    --------
    >>> p = Problem.build([1, 4], [0, 0], [[1, 0], [1, 1]], [1.0, 2.0])
    >>> density(p, 4).chosen.tolist()   # the cheap fact takes the slot of the update
    [0]
    >>> q = Problem.build([1, 2], [0, 1], [[1, 0], [0, 1]], [1.0, 5.0])
    >>> density(q, 2).chosen.tolist()   # stream order: the first experience spends the budget
    [0]
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    stores, _, _ = stream_passes(problem, budget, [0.0], "density")
    return make_result(problem, budget, method="density", settings={}, chosen=sorted(stores[0]),
                       status="heuristic", bound=float("inf"), started=started)


def density_global(problem: Problem, budget: float, /) -> Result:
    """Density by a global sort: our static value-per-cost variant (``density-global``).

    Sorts the candidates by standalone value per cost ``F({u}) / c_u`` (ties: smaller
    index first) and takes each one that still fits and whose group has nothing yet.
    Values are never re-scored against what is already stored, so it pays again for
    units it holds, and a cheap candidate can take the one slot of an experience whose
    costlier representation carries the validity state.  Unlike :func:`density` it is not
    bound to stream order.  Candidates of standalone value 0 are never taken.

    Examples
    --------
    >>> p = Problem.build([1, 4], [0, 0], [[1, 0], [1, 1]], [1.0, 2.0])
    >>> density_global(p, 4).chosen.tolist()
    [0]
    >>> q = Problem.build([1, 2], [0, 1], [[1, 0], [0, 1]], [1.0, 5.0])
    >>> density_global(q, 2).chosen.tolist()   # the later, denser experience first
    [1]
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    values = standalone_values(problem)
    ratio = values / problem.costs
    order = np.lexsort((np.arange(problem.n_candidates), -ratio))
    chosen, used, remaining = [], np.zeros(problem.n_groups, dtype=bool), budget
    for u in order:
        if values[u] <= 0:
            break
        g = problem.groups[u]
        if not used[g] and problem.costs[u] <= remaining + _slack(budget):
            chosen.append(int(u))
            used[g] = True
            remaining -= problem.costs[u]
    return make_result(problem, budget, method="density-global", settings={}, chosen=chosen, status="heuristic",
                       bound=float("inf"), started=started)


def _exchange(problem, state, held, g, members, remaining, tau, budget) -> float:
    """GVT's optional upgrade: switch group g from its stored u to the best v whose exchange clears tau."""
    u = int(held[g])
    others = members[(members != u) & (problem.costs[members] <= remaining + problem.costs[u] + _slack(budget))]
    if others.size == 0:
        return remaining
    without = state.copy()
    without.remove(u)
    base = without.gain(u)
    gains = without.gains(others) - base
    extra = problem.costs[others] - problem.costs[u]
    ok = (gains > 1e-12) & ((extra <= 0) | (gains >= tau * extra * (1 - 1e-12)))
    if not ok.any():
        return remaining
    others, gains = others[ok], gains[ok]
    v = int(others[np.lexsort((others, problem.costs[others], -gains))[0]])
    state.remove(u)
    state.add(v)
    held[g] = v
    return remaining + problem.costs[u] - problem.costs[v]


def gvt(problem: Problem, budget: float, /) -> Result:
    """The MEMAUDIT paper's grouped value-threshold (GVT), on the exact threshold grid.

    The thresholds are every singleton density ``F({u}) / c_u`` of a candidate that fits the
    budget, plus 0, in descending order: an exact finite grid, not a geometric one.  For each
    threshold, one pass in stream order: each arriving experience stores, among its candidates
    that fit the remaining budget, have marginal gain > 1e-12 and gain per cost
    ``+ 1e-12 >= threshold``, the one of largest marginal gain (ties: lower cost, then the
    later-listed candidate).  The result is the best-valued run (ties: the cheaper store, then
    the earlier threshold).  No best-single fallback: the threshold 0 run already admits every
    candidate.  ``gvt-geometric`` is our geometric-schedule variant.

    Examples
    --------
    >>> p = Problem.build([1, 2, 2], [0, 1, 2], [[1, 0], [1, 0], [0, 1]], [1.0, 1.0])
    >>> gvt(p, 3).chosen.tolist()   # the second copy of unit 0 gains nothing
    [0, 2]
    >>> r = gvt(Problem.build([1, 4], [0, 0], [[1, 0], [1, 1]], [1.0, 2.0]), 4)
    >>> r.chosen.tolist(), r.stats["thresholds"]   # at threshold 0.75 the update is admissible
    ([1], 3)
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    values = standalone_values(problem)
    fits = problem.costs <= budget + _slack(budget)
    grid = np.unique(np.concatenate([values[fits] / problem.costs[fits], [0.0]]))[::-1]
    stores, spent, values = stream_passes(problem, budget, grid, "value")
    best, best_value, best_cost = 0, -1.0, 0.0
    for t, value in enumerate(values.tolist()):
        if value > best_value + 1e-12 or (abs(value - best_value) <= 1e-12 and spent[t] < best_cost):
            best, best_value, best_cost = t, value, float(spent[t])
    return make_result(problem, budget, method="gvt", settings={}, chosen=sorted(stores[best]), status="heuristic",
                       bound=float("inf"), started=started,
                       stats={"thresholds": int(grid.size), "best_threshold": float(grid[best])})


def gvt_geometric(problem: Problem, budget: float, /, *, eps: float = 0.1, floor: float = 1e-3,
                  best_single: bool = True, upgrade: bool = False) -> Result:
    """Group Value-Threshold on a geometric schedule: our variant (``gvt-geometric``).

    Let ``d`` be the best standalone density ``F({u}) / c_u`` over candidates that fit.
    The thresholds are ``d, d(1-eps), d(1-eps)^2, ...`` down to ``floor * d``, then one
    last pass at the floor.  At each threshold the groups are scanned in stream order;
    in each group with nothing stored yet, among its candidates that fit the remaining
    budget and whose *exact* marginal gain per cost clears the threshold, the one with
    the largest marginal gain is stored (ties: cheaper, then smaller index).  Marginal
    gains are recomputed against the store so far, so a unit already held is not paid
    for twice.  With ``best_single`` the result is the better of this store and the
    best single candidate that fits (the fallback that bounds the loss of any
    threshold rule on a knapsack).

    A stored representation is final: once a cheap fact holds an experience's slot at a
    high threshold, the costlier update of that experience cannot follow at a lower one.
    ``upgrade=True`` (not the default) relaxes this: a group that holds u may switch to v
    when the exchange's gain per extra cost, ``(F(S - u + v) - F(S)) / (c_v - c_u)``, clears
    the threshold (any positive gain when v is not costlier) and v fits.

    Parameters
    ----------
    eps : float in (0, 1)
        Relative step of the threshold schedule (default 0.1: 10 % per step).
    floor : float in (0, 1]
        Lowest threshold, as a fraction of the first one (default 1e-3).
    best_single : bool
        Compare with the best single candidate (default True).
    upgrade : bool
        Allow exchanges within a group at later thresholds (default False).

    Examples
    --------
    >>> p = Problem.build([1, 2, 2], [0, 1, 2], [[1, 0], [1, 0], [0, 1]], [1.0, 1.0])
    >>> gvt_geometric(p, 3).chosen.tolist()   # the second copy of unit 0 gains nothing
    [0, 2]
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    if not (0 < eps < 1):
        raise ValueError(f"gvt-geometric: eps must lie in (0, 1); got {eps!r}")
    if not (0 < floor <= 1):
        raise ValueError(f"gvt-geometric: floor must lie in (0, 1]; got {floor!r}")
    settings = {"eps": float(eps), "floor": float(floor), "best_single": bool(best_single),
                "upgrade": bool(upgrade)}
    values = standalone_values(problem)
    fits = np.flatnonzero((problem.costs <= budget + _slack(budget)) & (values > 0))
    chosen: list[int] = []
    thresholds = 0
    if fits.size:
        d = float(np.max(values[fits] / problem.costs[fits]))
        members = problem.group_members()
        held = np.full(problem.n_groups, -1, dtype=np.int64)   # the stored candidate of each group, -1: none
        state = Coverage(problem)
        remaining = budget
        tau, last = d, floor * d
        while True:
            thresholds += 1
            if not upgrade:
                # gains only shrink as the store grows and the budget left only falls, so a pass in which
                # no candidate is admissible at its start stores nothing; when nothing fits, no later one does
                open_ = np.flatnonzero((held[problem.groups] < 0) & (problem.costs <= remaining + _slack(budget)))
                if open_.size == 0:
                    break
                start_gains = state.gains(open_)
                if not np.any((start_gains > 0) & (start_gains >= tau * problem.costs[open_] * (1 - 1e-12))):
                    if tau <= last:
                        break
                    tau = max(tau * (1 - eps), last)
                    continue
            for g in range(problem.n_groups):
                if held[g] >= 0:
                    if upgrade:
                        remaining = _exchange(problem, state, held, g, members[g], remaining, tau, budget)
                    continue
                cand = members[g][problem.costs[members[g]] <= remaining + _slack(budget)]
                if cand.size == 0:
                    continue
                gains = state.gains(cand)
                ok = (gains > 0) & (gains >= tau * problem.costs[cand] * (1 - 1e-12))
                if not ok.any():
                    continue
                cand, gains = cand[ok], gains[ok]
                u = int(cand[np.lexsort((cand, problem.costs[cand], -gains))[0]])
                held[g] = u
                remaining -= problem.costs[u]
                state.add(u)
            if tau <= last:
                break
            tau = max(tau * (1 - eps), last)
        chosen = [int(u) for u in held if u >= 0]
        if best_single:
            u = int(fits[np.lexsort((fits, problem.costs[fits], -values[fits]))[0]])
            if values[u] > evaluate(problem, chosen):
                chosen = [u]
    return make_result(problem, budget, method="gvt-upgrade" if upgrade else "gvt-geometric", settings=settings, chosen=sorted(chosen),
                       status="heuristic", bound=float("inf"), started=started,
                       stats={"thresholds": thresholds})


def gvt_upgrade(problem: Problem, budget: float, /, *, eps: float = 0.1, floor: float = 1e-3,
                best_single: bool = True) -> Result:
    """:func:`gvt_geometric` with ``upgrade=True``, registered as ``gvt-upgrade``."""
    return gvt_geometric(problem, budget, eps=eps, floor=floor, best_single=best_single, upgrade=True)


def _kind_mask(problem: Problem, kind: str, who: str) -> np.ndarray:
    if problem.kinds is None:
        raise ValueError(f"{who} needs candidate kinds, and this problem has none "
                         "(packages always have them; build a Problem with kinds=...)")
    return np.array([k == kind for k in problem.kinds], dtype=bool)


def kind_greedy(problem: Problem, budget: float, /, *, kind: str) -> Result:
    """The cost-benefit greedy over the candidates of one kind: the paper's fact-only / summary-only.

    Registered as ``fact-only`` (kind ``fact``) and ``summary-only`` (kind ``summary``).
    Repeatedly stores, among candidates of ``kind`` in groups with nothing stored that fit the
    remaining budget and have marginal gain > 1e-12, the one of largest
    ``(gain / cost, gain, -cost, index)``; no best-single fallback.  Needs ``problem.kinds``.

    Examples
    --------
    >>> p = Problem.build([2, 1, 2], [0, 0, 1], [[1, 0], [1, 0], [0, 1]], [1.0, 3.0],
    ...                   kinds=["fact", "summary", "fact"])
    >>> kind_greedy(p, 4, kind="fact").chosen.tolist()   # the later fact is denser
    [0, 2]
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    allowed = _kind_mask(problem, kind, f"{kind}-only")
    used = np.zeros(problem.n_groups, dtype=bool)
    state = Coverage(problem)
    chosen, remaining = [], budget
    while True:
        cand = np.flatnonzero(allowed & ~used[problem.groups] & (problem.costs <= remaining + _slack(budget)))
        if cand.size == 0:
            break
        gains = state.gains(cand)
        costs = problem.costs[cand]
        pick = _lexmax((gains > GAIN_TOL)[None], (gains / costs, gains, -costs, cand.astype(float)))[0]
        if pick < 0:
            break
        u = int(cand[pick])
        chosen.append(u)
        used[problem.groups[u]] = True
        remaining -= problem.costs[u]
        state.add(u)
    name = {"fact": "fact-only", "summary": "summary-only"}.get(kind, f"{kind}-only")
    return make_result(problem, budget, method=name, settings={"kind": kind}, chosen=sorted(chosen),
                       status="heuristic", bound=float("inf"), started=started)


def recency_raw(problem: Problem, budget: float, /) -> Result:
    """The paper's recency writer: raw spans newest first, skipping any that does not fit.

    Visits the ``raw`` candidates from the last experience to the first (ties: lower cost,
    then smaller index) and stores each whose experience has nothing stored and that fits the
    remaining budget.  Unlike :func:`recency` (online, evicts the oldest until the store fits,
    so it keeps a contiguous run of the latest experiences), it skips an experience that does
    not fit and goes on with older ones.  Needs ``problem.kinds``.

    Examples
    --------
    >>> p = Problem.build([1, 3, 2], [0, 1, 2], [[1, 0], [1, 0], [0, 1]], [1.0, 1.0], kinds=["raw"] * 3)
    >>> recency_raw(p, 3).chosen.tolist(), recency(p, 3).chosen.tolist()   # skips e1, keeps e0
    ([0, 2], [2])
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    raw = np.flatnonzero(_kind_mask(problem, "raw", "recency-raw"))
    order = raw[np.lexsort((raw, problem.costs[raw], -problem.groups[raw]))]
    used = np.zeros(problem.n_groups, dtype=bool)
    chosen, remaining = [], budget
    for u in order.tolist():
        g = problem.groups[u]
        if not used[g] and problem.costs[u] <= remaining + _slack(budget):
            chosen.append(u)
            used[g] = True
            remaining -= problem.costs[u]
    return make_result(problem, budget, method="recency-raw", settings={}, chosen=sorted(chosen),
                       status="heuristic", bound=float("inf"), started=started)


def random_store(problem: Problem, budget: float, /, *, seed: int = 0) -> Result:
    """A seeded random feasible store.

    Visits the groups in a random order and, for each, one of its candidates drawn
    uniformly; stores it if it fits.  The same seed gives the same store.

    Examples
    --------
    >>> from memaudit_solvers.random_problems import random_problem
    >>> p = random_problem(30, seed=2)
    >>> random_store(p, 100, seed=7).chosen.tolist() == random_store(p, 100, seed=7).chosen.tolist()
    True
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    rng = np.random.default_rng(seed)
    members = problem.group_members()
    chosen, remaining = [], budget
    for g in rng.permutation(problem.n_groups):
        if members[g].size == 0:
            continue
        u = int(members[g][rng.integers(members[g].size)])
        if problem.costs[u] <= remaining + _slack(budget):
            chosen.append(u)
            remaining -= problem.costs[u]
    return make_result(problem, budget, method="random", settings={"seed": int(seed)}, chosen=sorted(chosen),
                       status="heuristic", bound=float("inf"), started=started)


# -- online writers ------------------------------------------------------------

def _pick(problem: Problem, members: np.ndarray, pick: str) -> int | None:
    """The candidate an online writer writes for one experience, from that experience alone."""
    if members.size == 0:
        return None
    costs = problem.costs[members]
    if pick == "verbatim":
        return int(members[np.lexsort((members, -costs))[0]])
    if pick == "cheapest":
        return int(members[np.lexsort((members, costs))[0]])
    values = standalone_values(problem)[members]
    return int(members[np.lexsort((members, costs, -values))[0]])


def _check_pick(pick: str) -> str:
    if pick not in PICKS:
        raise ValueError(f"pick must be one of {', '.join(PICKS)}; got {pick!r}")
    return pick


def online_stores(problem: Problem, budget: float, policy: str, *, pick: str = "verbatim", kind: str | None = None):
    """Run an online writer and yield its store (sorted list) after each experience.

    ``policy`` is ``fifo``, ``recency`` or ``kind``.  The writer's decision for group
    g reads only group g's candidates (and, for ``pick="value"``, the unit weights)
    and the store it already holds, never a later group: so the first t stores are
    the same for any two streams that agree on their first t experiences.
    """
    budget = check_budget(budget)
    _check_pick(pick)
    if policy == "kind" and problem.kinds is None:
        raise ValueError(f"kind:{kind} needs candidate kinds, and this problem has none "
                         "(packages always have them; build a Problem with kinds=...)")
    members = problem.group_members()
    store: deque[int] = deque()
    held = 0.0
    for g in range(problem.n_groups):
        if policy == "kind":
            own = [int(u) for u in members[g] if problem.kinds[u] == kind]
            u = own[0] if own else None
        else:
            u = _pick(problem, members[g], pick)
        if u is not None and problem.costs[u] <= budget + _slack(budget):
            if policy == "recency":
                store.append(u)
                held += problem.costs[u]
                while held > budget + _slack(budget):
                    held -= problem.costs[store.popleft()]
            elif held + problem.costs[u] <= budget + _slack(budget):
                store.append(u)
                held += problem.costs[u]
        yield sorted(store)


def _online(name: str, policy: str, problem: Problem, budget: float, settings: dict, **kw) -> Result:
    started = time.perf_counter()
    budget = check_budget(budget)
    store: list[int] = []
    for store in online_stores(problem, budget, policy, **kw):
        pass
    return make_result(problem, budget, method=name, settings=settings, chosen=store, status="heuristic",
                       bound=float("inf"), started=started)


def fifo(problem: Problem, budget: float, /, *, pick: str = "verbatim") -> Result:
    """Online, keep-until-full: write each arriving experience if it still fits.

    For each experience in stream order the writer takes one candidate (``pick``, default
    ``verbatim``: the largest, i.e. the raw span) and stores it if the store has room;
    otherwise that experience is dropped and writing goes on with the next one.
    Nothing stored is ever removed.

    Examples
    --------
    >>> p = Problem.build([3, 1, 2, 2], [0, 0, 1, 2], [[1, 0], [1, 0], [0, 1], [0, 1]], [1.0, 1.0])
    >>> fifo(p, 5).chosen.tolist()
    [0, 2]
    """
    return _online("fifo", "fifo", problem, budget, {"pick": _check_pick(pick)}, pick=pick)


def recency(problem: Problem, budget: float, /, *, pick: str = "verbatim") -> Result:
    """Online, keep-newest: write every arriving experience, evicting the oldest until it fits.

    A candidate larger than the whole budget is never written.  The final store is the
    longest run of the latest experiences' picks that fits.

    Examples
    --------
    >>> p = Problem.build([3, 1, 2, 2], [0, 0, 1, 2], [[1, 0], [1, 0], [0, 1], [0, 1]], [1.0, 1.0])
    >>> recency(p, 5).chosen.tolist()
    [2, 3]
    """
    return _online("recency", "recency", problem, budget, {"pick": _check_pick(pick)}, pick=pick)


def kind_writer(problem: Problem, budget: float, /, *, kind: str) -> Result:
    """Online, one kind always: write each experience's candidate of kind ``kind`` while it fits.

    Registered as ``kind:<k>`` (``kind:raw``, ``kind:fact``, ...).  An experience with no
    candidate of that kind is not written; one that does not fit is dropped (as in
    :func:`fifo`).  Needs ``problem.kinds``.  When a group has several candidates of the
    kind, the first is written.
    """
    return _online(f"kind:{kind}", "kind", problem, budget, {"kind": kind}, kind=kind)
