"""Seeded random problems shaped like MEMAUDIT packages, for tests and benchmarks."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .problem import Problem

__all__ = ["random_problem", "tiny_problem"]


def random_problem(n_experiences: int, seed: int, *, restate: float = 0.15, update: float = 0.5,
                   coverage_values=(0.5, 1.0)) -> Problem:
    """A package-shaped random problem.

    Each experience states a value (a new unit, or with probability ``restate``
    an earlier one again: a unit shared across groups); with probability
    ``update`` it also supersedes an older value, adding a validity unit.  So
    there are about 1.5 units per experience.  Candidates per experience:
    ``raw`` (20-60 words, covers all its units with 1.0), ``fact`` (5-12 words,
    covers the value with 0.5 or 1.0), and for updates ``update`` (8-15, value
    and validity) and ``tombstone`` (4-8, validity only); a non-update
    experience gets a third ``summary`` candidate half the time, so 2-4
    candidates each, labelled with those kinds.  Weights are integers 1-3;
    ``h = min(1, z)``.

    Examples
    --------
    >>> p = random_problem(50, seed=1)
    >>> p.n_groups, 100 <= p.n_candidates <= 200
    (50, True)
    >>> random_problem(50, seed=1).costs.tolist() == p.costs.tolist()
    True
    """
    rng = np.random.default_rng(seed)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    costs: list[float] = []
    groups: list[int] = []
    kinds: list[str] = []
    n_units = 0
    value_units: list[int] = []

    def add(g, kind, cost, cover):
        u = len(costs)
        kinds.append(kind)
        costs.append(float(cost))
        groups.append(g)
        for r, a in cover:
            rows.append(u)
            cols.append(r)
            vals.append(a)

    for g in range(n_experiences):
        if value_units and rng.random() < restate:
            value = int(rng.choice(value_units))
        else:
            value = n_units
            n_units += 1
            value_units.append(value)
        validity = None
        if rng.random() < update:
            validity = n_units
            n_units += 1
        fact_cov = float(rng.choice(coverage_values))
        own = [(value, 1.0)] + ([(validity, 1.0)] if validity is not None else [])
        add(g, "raw", rng.integers(20, 61), own)
        add(g, "fact", rng.integers(5, 13), [(value, fact_cov)])
        if validity is not None:
            add(g, "update", rng.integers(8, 16), [(value, 1.0), (validity, 1.0)])
            add(g, "tombstone", rng.integers(4, 9), [(validity, 1.0)])
        elif rng.random() < 0.5:
            add(g, "summary", rng.integers(10, 21), [(value, 1.0)])
    weights = rng.integers(1, 4, size=n_units).astype(float)
    cov = sp.csr_array((vals, (rows, cols)), shape=(len(costs), n_units))
    return Problem.build(costs, groups, cov, weights, n_groups=n_experiences, kinds=kinds)


def tiny_problem(seed: int, *, n_candidates: int = 10, n_units: int = 5, pieces: str = "min1") -> Problem:
    """A small unstructured random problem for brute-force comparisons.

    ``pieces`` is ``"min1"``, ``"cap"`` (random caps 0.5-2) or ``"pwl"`` (a
    random concave three-piece h per unit).  Coverage rows may be empty, costs
    tie often, and one unit is covered by most candidates.
    """
    rng = np.random.default_rng(seed)
    n_groups = max(1, int(rng.integers(max(1, n_candidates // 3), n_candidates + 1)))
    groups = np.sort(np.concatenate([np.arange(min(n_groups, n_candidates)),
                                     rng.integers(0, n_groups, size=max(0, n_candidates - n_groups))]))
    groups = groups[:n_candidates]
    costs = rng.integers(1, 8, size=n_candidates).astype(float)
    dense = rng.choice([0.0, 0.0, 0.5, 1.0, 1.5], size=(n_candidates, n_units))
    if n_units:
        dense[:, 0] = rng.choice([0.0, 0.5, 1.0], size=n_candidates)
    if n_candidates > 2:
        dense[rng.integers(0, n_candidates)] = 0.0
    weights = rng.integers(1, 4, size=n_units).astype(float)
    if pieces == "min1":
        return Problem.build(costs, groups, dense, weights)
    if pieces == "cap":
        caps = rng.choice([0.5, 1.0, 1.5, 2.0], size=n_units)
        slopes = np.tile([1.0, 0.0], (n_units, 1))
        intercepts = np.column_stack([np.zeros(n_units), caps])
        return Problem.build(costs, groups, dense, weights, h_slopes=slopes, h_intercepts=intercepts)
    if pieces == "pwl":
        s1 = rng.choice([1.0, 2.0], size=n_units)
        z1 = rng.choice([0.5, 1.0], size=n_units)
        s2 = s1 * rng.choice([0.25, 0.5], size=n_units)
        z2 = z1 + rng.choice([0.5, 1.0], size=n_units)
        v1 = s1 * z1
        v2 = v1 + s2 * (z2 - z1)
        slopes = np.column_stack([s1, s2, np.zeros(n_units)])
        intercepts = np.column_stack([np.zeros(n_units), v1 - s2 * z1, v2])
        return Problem.build(costs, groups, dense, weights, h_slopes=slopes, h_intercepts=intercepts)
    raise ValueError(f"pieces must be 'min1', 'cap' or 'pwl'; got {pieces!r}")
