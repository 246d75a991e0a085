"""Offline writers that need no threshold: density by a global sort, the one-kind greedy, the paper's recency and a random store."""

from __future__ import annotations

import time

import numpy as np

from ..coverage import Coverage
from ..objective import budget_slack, standalone_values
from ..problem import Problem
from ..result import Result, check_budget, make_result
from .common import GAIN_TOL, kind_mask, lexmax

__all__ = ["density_global", "kind_greedy", "recency_raw", "random_store"]


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
        if not used[g] and problem.costs[u] <= remaining + budget_slack(budget):
            chosen.append(int(u))
            used[g] = True
            remaining -= problem.costs[u]
    return make_result(problem, budget, method="density-global", settings={}, chosen=chosen, status="heuristic",
                       bound=float("inf"), started=started)


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
    allowed = kind_mask(problem, kind, f"{kind}-only")
    used = np.zeros(problem.n_groups, dtype=bool)
    state = Coverage(problem)
    chosen, remaining = [], budget
    while True:
        cand = np.flatnonzero(allowed & ~used[problem.groups] & (problem.costs <= remaining + budget_slack(budget)))
        if cand.size == 0:
            break
        gains = state.gains(cand)
        costs = problem.costs[cand]
        pick = lexmax((gains > GAIN_TOL)[None], (gains / costs, gains, -costs, cand.astype(float)))[0]
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
    >>> from memaudit_solvers.baselines import recency
    >>> recency_raw(p, 3).chosen.tolist(), recency(p, 3).chosen.tolist()   # skips e1, keeps e0
    ([0, 2], [2])
    """
    started = time.perf_counter()
    budget = check_budget(budget)
    raw = np.flatnonzero(kind_mask(problem, "raw", "recency-raw"))
    order = raw[np.lexsort((raw, problem.costs[raw], -problem.groups[raw]))]
    used = np.zeros(problem.n_groups, dtype=bool)
    chosen, remaining = [], budget
    for u in order.tolist():
        g = problem.groups[u]
        if not used[g] and problem.costs[u] <= remaining + budget_slack(budget):
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
        if problem.costs[u] <= remaining + budget_slack(budget):
            chosen.append(u)
            remaining -= problem.costs[u]
    return make_result(problem, budget, method="random", settings={"seed": int(seed)}, chosen=sorted(chosen),
                       status="heuristic", bound=float("inf"), started=started)
