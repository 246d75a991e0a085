"""Seeded random problems shaped like MEMAUDIT packages, for tests and benchmarks."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .problem import Problem

__all__ = ["random_problem", "summary_problem", "tiny_problem"]

#: candidate kinds of :func:`random_problem`, by code
_KINDS = ("raw", "fact", "update", "tombstone", "summary")


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
    fact_values = np.asarray(coverage_values, dtype=float).reshape(-1)
    n = int(n_experiences)
    if n > 0 and fact_values.size == 0:
        raise ValueError("coverage_values must not be empty")
    # The draws, one experience at a time, in exactly the order of the first (pure Python)
    # version: the stream is data-dependent (a restated value or an update draws more), so it
    # cannot be drawn in bulk without re-implementing the Generator.  ``rng.choice(seq)`` draws
    # ``rng.integers(0, len(seq))``, so indexing by that draw keeps the stream and avoids
    # converting a growing list per call (quadratic time).  Everything else is numpy.
    rand, integers = rng.random, rng.integers
    restated: list[int] = []      # per experience: index among the new values so far, -1 = a new value
    updates: list[bool] = []
    fact_pick: list[int] = []     # index into coverage_values for the fact candidate
    drawn: list[tuple] = []       # costs: raw, fact, then update and tombstone, or summary (0 = none)
    n_values = 0
    n_fact_values = int(fact_values.size)
    for _ in range(n):
        if n_values and rand() < restate:
            restated.append(int(integers(0, n_values)))
        else:
            restated.append(-1)
            n_values += 1
        is_update = rand() < update
        updates.append(is_update)
        fact_pick.append(int(integers(0, n_fact_values)))
        raw, fact = integers(20, 61), integers(5, 13)
        if is_update:
            drawn.append((raw, fact, integers(8, 16), integers(4, 9)))
        elif rand() < 0.5:
            drawn.append((raw, fact, integers(10, 21), 0))
        else:
            drawn.append((raw, fact, 0, 0))
    restated_a = np.array(restated, dtype=np.int64)
    updates_a = np.array(updates, dtype=bool)
    costs_drawn = np.array(drawn, dtype=np.int64).reshape(n, 4)
    has_summary = ~updates_a & (costs_drawn[:, 2] > 0)
    # units: a new value takes the next index, then its validity unit (for an update) the one after
    new_value = restated_a < 0
    first_unit = np.concatenate([[0], np.cumsum(new_value.astype(np.int64) + updates_a)]).astype(np.int64)
    n_units = int(first_unit[-1])
    values = first_unit[:-1].copy()
    values[~new_value] = values[new_value][restated_a[~new_value]]   # restated: the earlier value's unit
    validity = first_unit[:-1] + new_value                            # meaningful only for updates
    # candidates per experience, in order: raw, fact, then update and tombstone, or a summary
    n_cands = 2 + 2 * updates_a.astype(np.int64) + has_summary
    groups = np.repeat(np.arange(n, dtype=np.int64), n_cands)
    slot = np.arange(groups.size) - np.repeat(np.cumsum(n_cands) - n_cands, n_cands)
    upd = updates_a[groups]
    kind_codes = np.where(slot < 2, slot, np.where(upd, slot, 4))   # indices into _KINDS
    costs = costs_drawn[groups, slot].astype(float)
    # coverage: the value (every kind but tombstone), the validity unit (raw, update and tombstone of an update)
    cand = np.arange(groups.size)
    has_v = kind_codes != 3
    has_d = upd & (kind_codes != 1)
    v_val = np.where(kind_codes == 1, fact_values[np.array(fact_pick, dtype=np.int64)[groups]], 1.0)
    rows = np.concatenate([cand[has_v], cand[has_d]])
    cols = np.concatenate([values[groups][has_v], validity[groups][has_d]])
    vals = np.concatenate([v_val[has_v], np.ones(int(has_d.sum()))])
    weights = rng.integers(1, 4, size=n_units).astype(float)
    cov = sp.csr_array((vals, (rows, cols)), shape=(groups.size, n_units))
    kinds = [_KINDS[k] for k in kind_codes.tolist()]
    return Problem.build(costs, groups, cov, weights, n_groups=n, kinds=kinds)


def summary_problem(n_experiences: int, seed: int, *, window: int = 6, restate: float = 0.3,
                    coverage_decimals: int = 2) -> Problem:
    """A random problem whose summaries tie a sliding window of experiences together.

    Unlike :func:`random_problem` (one value per experience, coverage 0.5 or
    1.0, integer weights), each experience states 1-3 units (each, with
    probability ``restate``, an earlier unit again), and its candidates are a
    ``raw`` span (cost 20-60 words, covers its units with 1.0), one ``fact``
    per unit (10-30 % of the raw cost, coverage 0.3-1.0), a compound
    ``update`` over all its units when it has several (30-60 %, coverage
    0.5-1.0 each), and half the time a ``summary`` (30-80 %) covering 2-5
    units of the last ``window`` experiences with 0.2-0.7 each.  Costs are
    whole words, coverage has ``coverage_decimals`` decimals, weights are
    0.5-3.0 with three decimals; ``h = min(1, z)``.  The summaries chain the
    whole stream into one coupled component of path width about ``window``,
    and the partial coverage leaves the objective on no usable grid.

    Examples
    --------
    >>> p = summary_problem(40, seed=3)
    >>> p.n_groups, bool((p.costs == p.costs.round()).all())
    (40, True)
    >>> summary_problem(40, seed=3).coverage.toarray().tolist() == p.coverage.toarray().tolist()
    True
    """
    rng = np.random.default_rng(seed)
    n = int(n_experiences)
    costs: list[float] = []
    groups: list[int] = []
    kinds: list[str] = []
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    stated: list[list[int]] = []     # the units of each experience
    n_units = 0

    def add(group: int, kind: str, cost: float, cover: dict[int, float]) -> None:
        row = len(costs)
        costs.append(float(max(1, round(cost))))
        groups.append(group)
        kinds.append(kind)
        for unit, a in cover.items():
            rows.append(row)
            cols.append(unit)
            vals.append(round(a, coverage_decimals))

    for e in range(n):
        units: set[int] = set()
        for _ in range(int(rng.integers(1, 4))):
            if n_units and rng.random() < restate:
                units.add(int(rng.integers(0, n_units)))
            else:
                units.add(n_units)
                n_units += 1
        mine = sorted(units)
        stated.append(mine)
        raw = float(rng.uniform(20, 60))
        add(e, "raw", raw, {u: 1.0 for u in mine})
        for u in mine:
            add(e, "fact", raw * rng.uniform(0.1, 0.3), {u: float(rng.uniform(0.3, 1.0))})
        if len(mine) > 1:
            add(e, "update", raw * rng.uniform(0.3, 0.6), {u: float(rng.uniform(0.5, 1.0)) for u in mine})
        if e and rng.random() < 0.5:
            pool = sorted({u for earlier in stated[max(0, e - window):e + 1] for u in earlier})
            picked = rng.choice(pool, size=min(len(pool), int(rng.integers(2, 6))), replace=False)
            add(e, "summary", raw * rng.uniform(0.3, 0.8),
                {int(u): float(rng.uniform(0.2, 0.7)) for u in picked})
    weights = np.round(rng.uniform(0.5, 3.0, size=n_units), 3)
    cov = sp.csr_array((vals, (rows, cols)), shape=(len(costs), n_units))
    return Problem.build(np.array(costs), np.array(groups, dtype=np.int64), cov, weights,
                         n_groups=n, kinds=kinds)


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
