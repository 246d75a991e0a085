"""Exhaustive enumeration of every store of a small problem (numpy), for exact OPTs at many budgets at once."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memaudit_solvers.objective import h_values

from .paper_protocol import PaperReportError

__all__ = ["MAX_STORES", "Enumeration", "enumerate_stores"]

#: refuse to enumerate more stores than this
MAX_STORES = 200_000


@dataclass
class Enumeration:
    """Every store of a small problem (one candidate or none per group), with its cost and value.

    Store ``j`` picks option ``np.unravel_index(j, sizes)[g]`` of group g: 0 for none, ``k`` for
    the group's k-th candidate (``options[g][k]``).
    """

    problem: object
    options: list
    sizes: tuple
    costs: np.ndarray
    values: np.ndarray

    def store(self, j: int) -> list[int]:
        """The candidate indices of store ``j``."""
        picks = np.unravel_index(int(j), self.sizes)
        return sorted(int(self.options[g][k]) for g, k in enumerate(picks) if k > 0)

    def without(self, candidates) -> np.ndarray:
        """Mask of the stores that use none of ``candidates`` (indices)."""
        bad = set(int(u) for u in candidates)
        mask = np.ones(1, dtype=bool)
        for opts in self.options:
            ok = np.array([k == 0 or int(u) not in bad for k, u in enumerate(opts)], dtype=bool)
            mask = (mask[:, None] & ok[None]).reshape(-1)
        return mask

    def best(self, budget: float, allowed=None) -> tuple[list[int], float]:
        """An optimal store at ``budget`` (largest value, then lowest cost, then first) and its value.

        ``allowed`` (mask over the stores, see :meth:`without`) restricts the search.  The value
        returned is :func:`memaudit_solvers.objective.evaluate` of that store, checked against the
        enumeration's own sum.
        """
        from memaudit_solvers.objective import budget_slack, evaluate

        fits = self.costs <= budget + budget_slack(budget)
        ok = np.flatnonzero(fits if allowed is None else fits & allowed)
        top = np.max(self.values[ok])
        tied = ok[self.values[ok] >= top - 1e-12]
        j = int(tied[np.argmin(self.costs[tied])])
        store = self.store(j)
        value = evaluate(self.problem, store)
        if abs(value - float(self.values[j])) > 1e-9 * max(1.0, abs(value)):  # pragma: no cover - a bug
            raise PaperReportError(f"enumeration value {self.values[j]} differs from evaluate {value}")
        return store, value


def enumerate_stores(problem, *, max_stores: int = MAX_STORES) -> Enumeration:
    """Enumerate every store of ``problem`` at once (numpy), for exact OPTs at many budgets.

    Stores are built group by group (each group: none, or one of its candidates), carrying
    their coverage sums and costs.  The objective of every store is ``sum_r w_r h_r(s_r)`` with
    h stated as in :func:`memaudit_solvers.objective.h_values`; :meth:`Enumeration.best` re-evaluates the
    store it returns with :func:`memaudit_solvers.objective.evaluate`.

    Raises
    ------
    PaperReportError
        When the problem has more than ``max_stores`` stores.

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> e = enumerate_stores(Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0]))
    >>> e.sizes, e.best(4)
    ((3, 2), ([1, 2], 2.5))
    """
    members = problem.group_members()
    n = 1
    for m in members:
        n *= m.size + 1
    if n > max_stores:
        raise PaperReportError(f"enumeration would visit {n} stores (more than {max_stores}); use bnb")
    dense = problem.coverage.toarray()
    sums = np.zeros((1, problem.n_units))
    costs = np.zeros(1)
    options = []
    for m in members:
        options.append(np.concatenate([[-1], m]).astype(np.int64))
        opt_sums = np.vstack([np.zeros((1, problem.n_units)), dense[m]])          # (k, U)
        opt_costs = np.concatenate([[0.0], problem.costs[m]])
        sums = (sums[:, None, :] + opt_sums[None]).reshape(-1, problem.n_units)
        costs = (costs[:, None] + opt_costs[None]).reshape(-1)
    # h of every store at once, by the one formula of h (memaudit_solvers.objective.h_values, 2-D form)
    h = h_values(problem, np.arange(problem.n_units), sums)
    return Enumeration(problem, options, tuple(o.size for o in options), costs, h @ problem.weights)

