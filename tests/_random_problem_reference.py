"""The first, pure-Python ``random_problem``, kept verbatim as the reference the vectorised one must reproduce."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from memaudit_solvers.problem import Problem

__all__ = ["reference_random_problem"]


def reference_random_problem(n_experiences: int, seed: int, *, restate: float = 0.15, update: float = 0.5,
                             coverage_values=(0.5, 1.0)) -> Problem:
    """``memaudit_solvers.random_problems.random_problem`` as first written: one Python step per draw."""
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


