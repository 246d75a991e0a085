"""The MEMAUDIT paper's protocol (arXiv 2605.02199): its methods, distributions and published figures, its
budget rule, and its two measures (invalidation units covered, bootstrap intervals of a mean).

:mod:`memaudit.reports.paper` runs the experiments and is where every name is imported from.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import MemauditError

__all__ = ["PAPER", "BASE_METHODS", "STRESS_METHODS", "DISTRIBUTIONS", "FRACS", "NO_TOMBSTONE", "DROPPED", "BACKEND",
           "PaperReportError", "paper_budgets", "stream_budgets", "invalidation_covered", "bootstrap_ci"]

#: the budget fractions of the base sweep and the audit
FRACS = (0.02, 0.05, 0.10, 0.20)

#: the methods of the base table, beside OPT without tombstones
BASE_METHODS = ("density", "gvt", "density-global", "gvt-geometric", "greedy")

#: the methods of the stress heat-map (the paper's two, and the global-sort density beside them)
STRESS_METHODS = ("gvt", "density", "density-global")

#: the paper's three distributions
DISTRIBUTIONS = ("base", "update_chain", "temporal_interval")

#: the key of OPT without tombstone and compound_update candidates
NO_TOMBSTONE = "no_tombstone"

#: the paper's published figures (arXiv 2605.02199, as its public artifact produces them), in the --json shape
PAPER = {
    "base": {"2": {"density": 0.264, NO_TOMBSTONE: 0.523}, "4": {NO_TOMBSTONE: 0.654},
             "8": {"density": 0.361, NO_TOMBSTONE: 0.689}, "16": {NO_TOMBSTONE: 0.815}},
    "invalidation": {"density": {"2": 0.0, "4": 0.0, "8": 0.0},
                     "gvt": {"2": 2.0, "4": 2.0, "8": 2.0, "16": 2.0}},
    "stress_b6": {"base": {"density": 0.398, NO_TOMBSTONE: 0.650, "gvt": 1.0},
                  "update_chain": {"density": 0.730, NO_TOMBSTONE: 0.513, "gvt": 1.0},
                  "temporal_interval": {"density": 0.662, NO_TOMBSTONE: 0.700, "gvt": 1.0}},
    "audit": {"rows": 1200, "agree": 1200, "max_abs_diff": 0.0},
    "base_mean_total_cost": 81.534,
}

#: the candidate kinds the no-tombstone OPT drops
DROPPED = ("tombstone", "compound_update")

#: the certifying back-end
BACKEND = "milp-highs"


class PaperReportError(MemauditError, ValueError):
    """A paper experiment cannot run as asked (bad sizes), or an OPT did not certify."""


def paper_budgets(mean_total_cost: float, fracs=FRACS) -> list[int]:
    """The paper's budget rule: ``B = max(1, round(f x M))`` for each fraction f.

    ``M`` is the mean, over the run's seeds and distributions, of each package's total
    candidate cost.  Python's ``round`` (half to even), as the paper's artifact uses.

    Examples
    --------
    >>> paper_budgets(81.534)
    [2, 4, 8, 16]
    >>> paper_budgets(81.534, [0.01, 0.5])
    [1, 41]
    """
    return [max(1, int(round(float(f) * float(mean_total_cost)))) for f in fracs]


def stream_budgets(stream_costs, fracs=FRACS) -> list[list[float]]:
    """Our rule beside it: each package's own ``f x stream cost`` (one list per fraction)."""
    return [[float(f) * float(c) for c in stream_costs] for f in fracs]


def invalidation_covered(problem, chosen, validity_mask) -> float:
    """Invalidation units covered: ``sum over validity units of min(1, coverage)`` (the paper's measure).

    Examples
    --------
    >>> from memaudit_solvers.problem import Problem
    >>> p = Problem.build([1, 1], [0, 1], [[0.5, 1], [1, 0]], [1.0, 1.0])
    >>> invalidation_covered(p, [0], np.array([True, False])), invalidation_covered(p, [0, 1], np.array([True, True]))
    (0.5, 2.0)
    """
    idx = np.asarray(chosen, dtype=np.int64)
    dense = problem.cached("dense_coverage", lambda: problem.coverage.toarray())
    sums = dense[idx].sum(axis=0)
    return float(np.minimum(1.0, sums[validity_mask]).sum())


def bootstrap_ci(values, *, n_resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Bootstrap 95 % percentile interval of the mean of ``values`` (scipy.stats.bootstrap, seeded).

    A constant sample gives the degenerate interval ``(v, v)``.

    Examples
    --------
    >>> bootstrap_ci([1.0, 1.0, 1.0])
    (1.0, 1.0)
    >>> lo, hi = bootstrap_ci([0.0, 1.0] * 50)
    >>> 0.39 < lo < 0.5 < hi < 0.61
    True
    """
    from scipy.stats import bootstrap

    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return (math.nan, math.nan)
    if np.all(x == x[0]):
        return (float(x[0]), float(x[0]))
    res = bootstrap((x,), np.mean, n_resamples=n_resamples, confidence_level=0.95, method="percentile",
                    random_state=np.random.default_rng(seed), vectorized=True)
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))

