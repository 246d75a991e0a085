"""The coverage states of memaudit_solvers.objective against evaluate (the objective's one function) and by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_solvers.objective import Coverage, Coverages, evaluate, h_inf, h_values
from memaudit_solvers.problem import Problem, breakpoint_pieces, min_cap_pieces

from test_objective import build, naive_h, problem_data  # the drawn-problem strategy of the objective tests


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


@st.composite
def problem_and_moves(draw):
    """A drawn problem and a sequence of store moves: ("add" | "remove", candidate), each legal when made."""
    data = draw(problem_data())
    n = len(data["costs"])
    moves, held = [], set()
    for _ in range(draw(st.integers(0, 12)) if n else 0):
        u = draw(st.integers(0, n - 1))
        moves.append(("remove" if u in held else "add", u))
        held ^= {u}
    return data, moves


def played(case):
    """The problem of a drawn case and a coverage state after all its moves."""
    data, moves = case
    p = build(data)
    state = Coverage(p)
    for op, u in moves:
        getattr(state, op)(u)
    return p, state


@settings(max_examples=60, deadline=None)
@given(problem_and_moves())
def test_value_after_any_moves_is_evaluate_of_the_same_store(case):
    data, moves = case
    p = build(data)
    state = Coverage(p)
    held: set[int] = set()
    assert state.value == evaluate(p, [])
    for op, u in moves:
        getattr(state, op)(u)
        held ^= {u}
        assert state.chosen.tolist() == sorted(held)
        assert close(state.value, evaluate(p, sorted(held)))
        assert np.allclose(state.unit_values.sum(), state.value, rtol=1e-12, atol=0)


@settings(max_examples=60, deadline=None)
@given(problem_and_moves())
def test_gains_are_differences_of_evaluate(case):
    p, state = played(case)
    store = state.chosen.tolist()
    base = evaluate(p, store)
    gains = state.gains()
    assert gains.shape == (p.n_candidates,)
    for u in range(p.n_candidates):
        # a candidate already held is scored as added once more: evaluate counts a repeated index twice
        assert close(gains[u], evaluate(p, store + [u]) - base)
        assert close(state.gain(u), gains[u])
    some = list(range(p.n_candidates))[::2]
    assert np.array_equal(state.gains(some), gains[some])


@settings(max_examples=40, deadline=None)
@given(problem_and_moves())
def test_a_copy_is_independent_and_a_start_store_is_its_sums(case):
    p, state = played(case)
    twin = state.copy()
    started = Coverage(p, state.chosen)
    assert close(started.value, state.value) and started.chosen.tolist() == state.chosen.tolist()
    if p.n_candidates:
        u = int(np.flatnonzero(~state.held)[0]) if (~state.held).any() else 0
        (twin.remove if twin.held[u] else twin.add)(u)
        assert twin.held[u] != state.held[u]
        assert close(state.value, evaluate(p, state.chosen)) and close(twin.value, evaluate(p, twin.chosen))


@settings(max_examples=40, deadline=None)
@given(problem_data(), st.data())
def test_side_by_side_states_score_each_group_as_single_states_do(data, draw):
    p = build(data)
    n_t = draw.draw(st.integers(1, 4))
    states, singles = Coverages(p, n_t), [Coverage(p) for _ in range(n_t)]
    members = p.group_members()
    for g in range(p.n_groups):
        gains = states.group_gains(g)
        assert gains.shape == (n_t, members[g].size)
        for t in range(n_t):
            assert np.allclose(gains[t], singles[t].gains(members[g]), rtol=1e-12, atol=1e-12)
            if members[g].size and draw.draw(st.booleans()):
                u = int(members[g][draw.draw(st.integers(0, members[g].size - 1))])
                states.add(t, u)
                singles[t].add(u)
    assert np.allclose(states.values, [evaluate(p, s.chosen) for s in singles], rtol=1e-9, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(problem_data())
def test_h_inf_is_what_h_approaches_and_saturation_is_reaching_it(data):
    p = build(data)
    full = h_inf(p)
    specs = data["h"] if data["h"] else [("cap", 1.0)] * p.n_units
    for r, spec in enumerate(specs):
        far = 1e6 if spec[0] == "cap" else spec[1][-1][0] * 10 + 1e6   # beyond every breakpoint
        if naive_h(spec, 2 * far) > naive_h(spec, far):                 # an open end that keeps rising
            assert full[r] == np.inf
        else:
            assert close(full[r], naive_h(spec, far))
    state = Coverage(p, np.arange(p.n_candidates))
    h = h_values(p, np.arange(p.n_units), state.sums)
    assert state.saturated().tolist() == [bool(np.isfinite(f) and v >= (1 - 1e-9) * f) for v, f in zip(h, full)]


def test_by_hand():
    slopes, intercepts = min_cap_pieces([1.0, 2.0])
    s3, b3 = breakpoint_pieces([(1.0, 1.0), (3.0, 2.0)])
    p = Problem.build([1, 2, 3], [0, 1, 2], [[1, 0.5, 0], [0, 1, 1], [0.5, 1, 4]], [1.0, 2.0, 3.0],
                      h_slopes=np.vstack([np.c_[slopes, slopes[:, -1]], s3]),
                      h_intercepts=np.vstack([np.c_[intercepts, intercepts[:, -1]], b3]))
    assert h_inf(p).tolist() == [1.0, 2.0, 2.0]
    state = Coverage(p)
    assert state.gains().tolist() == [1.0 + 1.0, 2.0 + 3.0, 0.5 + 2.0 + 6.0]
    state.add(1)                                   # s = (0, 1, 1): 2 * 1 + 3 * 1
    assert state.value == 5.0 and state.saturated().tolist() == [False, False, False]
    state.add(2)                                   # s = (0.5, 2, 5): 0.5 + 2 * 2 + 3 * 2
    assert state.value == 10.5 and state.saturated().tolist() == [False, True, True]
    assert state.gains([0]).tolist() == [0.5]      # unit 0 reaches 1; units 1, 2 are saturated
    state.remove(1)                                # s = (0.5, 1, 4): 0.5 + 2 * 1 + 3 * 2
    assert state.value == 8.5 == evaluate(p, [2])


def test_moves_that_break_the_store_are_refused():
    p = Problem.build([1, 1], [0, 1], [[1.0], [1.0]], [1.0])
    state = Coverage(p, [0])
    with pytest.raises(ValueError, match="candidate 0 is already in the store"):
        state.add(0)
    with pytest.raises(ValueError, match="candidate 1 is not in the store"):
        state.remove(1)
    with pytest.raises(ValueError, match="at most once"):
        Coverage(p, [1, 1])
    assert state.chosen.tolist() == [0] and state.value == 1.0
