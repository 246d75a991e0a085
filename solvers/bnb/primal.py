"""bnb's primal heuristics beyond rounding: a time-boxed sub-MIP on the groups the LP leaves open.

The stores found here are only *offered* to the search (which re-checks feasibility and evaluates
F with :func:`memaudit_solvers.objective.evaluate`); they never enter a bound, so the optimality proof stays
bnb's own.
"""

from __future__ import annotations

import numpy as np

from ..problem import Problem

__all__ = ["sub_mip_store"]

#: LP values below this count as zero when the support of the LP solution is read
SUPPORT_TOL = 1e-6


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


def sub_mip_store(problem: Problem, budget: float, cands: np.ndarray, time_limit: float):
    """Best store HiGHS finds within ``time_limit`` seconds using only ``cands``, or None.

    The candidates' groups and units are renumbered into a small :class:`Problem`; the store
    returned is in the original candidate numbering.
    """
    from ..milp import milp_highs  # the LP/MIP engine is used as a heuristic only

    cands = np.asarray(cands, dtype=np.int64)
    if cands.size == 0 or time_limit <= 0:
        return None
    cov = problem.coverage[cands]
    units = np.unique(cov.indices)
    if units.size == 0:
        return None
    _, groups = np.unique(problem.groups[cands], return_inverse=True)
    sub = Problem.build(problem.costs[cands], groups, cov[:, units], problem.weights[units],
                        h_slopes=problem.h_slopes[units], h_intercepts=problem.h_intercepts[units],
                        n_groups=int(groups.max()) + 1)
    res = milp_highs(sub, budget, time_limit=time_limit)
    if res.chosen is None or res.chosen.size == 0:
        return None
    return cands[res.chosen]
