"""greedy_store's deadline: it stops adding when the deadline passes and returns a feasible prefix of its store."""

from __future__ import annotations

import types

import numpy as np
import pytest

import memaudit_solvers.greedy as greedy_module
from memaudit_solvers.greedy import greedy, greedy_store
from memaudit_solvers.objective import is_feasible
from memaudit_solvers.random_problems import random_problem


class Clock:
    """A fake ``time`` module whose perf_counter ticks by one at each call."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        self.now += 1.0
        return self.now


def _with_clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(greedy_module, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))
    return clock


@pytest.mark.parametrize("seed", [0, 1, 4])
def test_deadline_gives_a_feasible_growing_prefix_of_the_store(monkeypatch, seed):
    p = random_problem(80, seed=seed)
    budget = 0.4 * p.stream_cost()
    full = greedy_store(p, budget)
    assert full.size > 3
    assert np.array_equal(greedy_store(p, budget, deadline=float("inf")), full)   # never reached: the same store
    stores = []
    for ticks in (1, 3, 6, 12, 25, 50, 10**9):
        clock = _with_clock(monkeypatch)          # a fresh clock per call: the loop looks ticks times
        stores.append(greedy_store(p, budget, deadline=float(ticks)))
        assert clock.now <= ticks + 1             # it stops at its first look past the deadline
    assert stores[0].size <= 1                    # the first look (1) is not past 1, the second is: one pop
    assert [s.size for s in stores] == sorted(s.size for s in stores)
    for small, big in zip(stores, stores[1:]):
        assert set(small.tolist()) <= set(big.tolist())
    assert 0 < stores[3].size < full.size
    assert np.array_equal(stores[-1], full)
    assert all(is_feasible(p, s, budget) for s in stores)


def test_deadline_keeps_the_start_store():
    p = random_problem(40, seed=5)
    budget = 0.5 * p.stream_cost()
    start = greedy_store(p, budget)[:2]
    store = greedy_store(p, budget, start=start, deadline=0.0)   # perf_counter is far past 0
    assert store.tolist() == sorted(start.tolist())


def test_default_behaviour_unchanged_and_greedy_has_no_deadline():
    p = random_problem(50, seed=6)
    budget = 0.2 * p.stream_cost()
    assert np.array_equal(greedy_store(p, budget), greedy_store(p, budget, deadline=None))
    assert greedy(p, budget).value >= 0
