"""Online writers: they see the stream one experience at a time and decide before the next one arrives."""

from __future__ import annotations

import time
from collections import deque

import numpy as np

from ..objective import budget_slack, standalone_values
from ..problem import Problem
from ..result import Result, check_budget, make_result
from .common import kind_mask

__all__ = ["PICKS", "online_stores", "fifo", "recency", "kind_writer"]

#: how an online writer chooses one candidate of an arriving experience
PICKS = ("verbatim", "cheapest", "value")


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
    of_kind = kind_mask(problem, str(kind), f"kind:{kind}") if policy == "kind" else None
    members = problem.group_members()
    store: deque[int] = deque()
    held = 0.0
    for g in range(problem.n_groups):
        if of_kind is not None:
            own = members[g][of_kind[members[g]]]
            u = int(own[0]) if own.size else None
        else:
            u = _pick(problem, members[g], pick)
        if u is not None and problem.costs[u] <= budget + budget_slack(budget):
            if policy == "recency":
                store.append(u)
                held += problem.costs[u]
                while held > budget + budget_slack(budget):
                    held -= problem.costs[store.popleft()]
            elif held + problem.costs[u] <= budget + budget_slack(budget):
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
