"""Tests of memaudit_solvers.objective and memaudit_solvers.problem: F against a naive reimplementation, the checkers, validation."""

import math
import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_solvers.objective import (COST_RTOL, coverage_sums, evaluate, infeasibility, is_feasible, marginal_gains,
                               total_cost)
from memaudit_solvers.problem import Problem, ProblemError, breakpoint_pieces, min_cap_pieces

GRID_VALUES = (0.0, 0.5, 1.0, 1.5, 2.5)


# -- the naive objective: plain loops over a dense coverage list, h from its own description ----------

def naive_h(spec, z):
    """h(z) straight from the description of h, not from its pieces.

    ``("cap", c)`` is ``min(c, z)``; ``("points", pts, open_end)`` interpolates linearly from
    (0, 0) through the breakpoints and afterwards stays flat, or keeps the last slope when
    ``open_end``.
    """
    if spec[0] == "cap":
        return min(spec[1], z)
    _, pts, open_end = spec
    prev_z, prev_v = 0.0, 0.0
    for zk, vk in pts:
        if z <= zk:
            return prev_v + (vk - prev_v) * (z - prev_z) / (zk - prev_z)
        prev_z, prev_v = zk, vk
    if not open_end:
        return prev_v
    (z0, v0), (z1, v1) = ([(0.0, 0.0)] + list(pts))[-2:]
    return v1 + (v1 - v0) / (z1 - z0) * (z - z1)


def naive_value(data, chosen):
    """F(chosen) = sum_r w[r] * h_r(sum_{u in chosen} a[u][r]) with Python loops."""
    total = 0.0
    for r, w in enumerate(data["weights"]):
        s = 0.0
        for u in chosen:
            s += data["coverage"][u][r]
        total += w * naive_h(data["h"][r], s)
    return total


def pieces_of(spec):
    """Affine pieces (slopes, intercepts) of one h description, through the library's helpers."""
    if spec[0] == "cap":
        s, b = min_cap_pieces([spec[1]])
        return s[0].tolist(), b[0].tolist()
    _, pts, open_end = spec
    s, b = breakpoint_pieces(pts)
    # collinear breakpoints can leave an intercept of -1e-17 (see test_collinear_breakpoints_build);
    # memaudit.package clips it the same way
    s, b = s.tolist(), np.maximum(b, 0.0).tolist()
    if open_end:  # drop the flat piece after the last breakpoint: h keeps rising
        s, b = s[:-1], b[:-1]
    return s, b


def build(data):
    """The Problem of a drawn data dict (pieces padded by repeating the last one, which is legal)."""
    kw = {}
    if data["h"]:
        pieces = [pieces_of(spec) for spec in data["h"]]
        k = max(len(s) for s, _ in pieces)
        kw["h_slopes"] = [s + [s[-1]] * (k - len(s)) for s, _ in pieces]
        kw["h_intercepts"] = [b + [b[-1]] * (k - len(b)) for _, b in pieces]
    coverage = np.array(data["coverage"], dtype=float).reshape(len(data["costs"]), len(data["weights"]))
    if data["sparse"]:
        coverage = sp.coo_array(coverage)
    return Problem.build(data["costs"], data["groups"], coverage, data["weights"], n_groups=data["n_groups"], **kw)


@st.composite
def h_specs(draw, kind):
    if kind == "min1":
        return ("cap", 1.0)
    if kind == "cap":
        return ("cap", draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]) | st.floats(0.01, 10)))
    # concave, non-decreasing breakpoints: positive z steps, non-increasing slopes >= 0
    n = draw(st.integers(1, 3))
    steps = draw(st.lists(st.sampled_from([0.25, 0.5, 1.0, 1.5]) | st.floats(0.05, 5), min_size=n, max_size=n))
    slopes = sorted(draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0]) | st.floats(0, 4),
                                  min_size=n, max_size=n)), reverse=True)
    pts, z, v = [], 0.0, 0.0
    for dz, a in zip(steps, slopes):
        z, v = z + dz, v + a * dz
        pts.append((z, v))
    return ("points", pts, kind == "open")


@st.composite
def problem_data(draw, max_candidates=8, max_units=5, grid=None):
    """Raw arrays of a random problem.  ``grid=True`` keeps every number on a small rational grid."""
    grid = draw(st.booleans()) if grid is None else grid
    n_cand = draw(st.integers(0, max_candidates))
    n_units = draw(st.integers(0, max_units))
    n_groups = draw(st.integers(1 if n_cand else 0, max(n_cand, 0) + 1))
    groups = draw(st.lists(st.integers(0, max(n_groups - 1, 0)), min_size=n_cand, max_size=n_cand))
    if grid:
        cost = st.integers(1, 8).map(float)
        value = st.sampled_from(GRID_VALUES)
        weight = st.sampled_from([0.5, 1.0, 2.0, 3.0])
    else:
        cost = st.floats(0.01, 100)
        value = st.sampled_from(GRID_VALUES) | st.floats(0, 50, allow_subnormal=False)
        weight = st.floats(0.01, 100)
    costs = draw(st.lists(cost, min_size=n_cand, max_size=n_cand))
    coverage = [draw(st.lists(value, min_size=n_units, max_size=n_units)) for _ in range(n_cand)]
    weights = draw(st.lists(weight, min_size=n_units, max_size=n_units))
    kind = draw(st.sampled_from(["min1", "cap", "points", "open", "mixed"]))
    kinds = [draw(st.sampled_from(["min1", "cap", "points", "open"])) if kind == "mixed" else kind
             for _ in range(n_units)]
    if grid:
        kinds = [k if k in ("min1", "cap") else "min1" for k in kinds]
        h = [("cap", 1.0) if k == "min1" else ("cap", draw(st.sampled_from([0.5, 1.0, 1.5, 2.0]))) for k in kinds]
    else:
        h = [draw(h_specs(k)) for k in kinds]
    default_h = kind == "min1" and draw(st.booleans())
    return {"costs": costs, "groups": groups, "n_groups": n_groups, "coverage": coverage, "weights": weights,
            "h": [] if default_h and n_units else h, "h_specs": h, "sparse": draw(st.booleans())}


def h_of(data):
    """The h description of every unit (the default is min(1, z))."""
    return data["h"] if data["h"] else [("cap", 1.0)] * len(data["weights"])


@st.composite
def problem_and_selection(draw, **kw):
    data = draw(problem_data(**kw))
    n = len(data["costs"])
    chosen = draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n)) if n else []
    return data, chosen


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


# -- evaluate ----------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(problem_and_selection())
def test_evaluate_matches_naive_reimplementation(case):
    data, chosen = case
    p = build(data)
    assert close(evaluate(p, chosen), naive_value(dict(data, h=h_of(data)), chosen))
    mask = np.zeros(p.n_candidates, dtype=bool)
    mask[chosen] = True
    assert evaluate(p, mask) == evaluate(p, chosen)
    assert close(total_cost(p, chosen), sum(data["costs"][u] for u in chosen))
    sums = coverage_sums(p, chosen)
    assert sums.shape == (p.n_units,)
    for r in range(p.n_units):
        assert close(sums[r], sum(data["coverage"][u][r] for u in chosen))


@settings(max_examples=40, deadline=None)
@given(problem_and_selection())
def test_default_h_is_min1(case):
    """Without pieces every unit gets h(z) = min(1, z)."""
    data, chosen = case
    data = dict(data, h=[])
    p = build(data)
    assert close(evaluate(p, chosen), naive_value(dict(data, h=[("cap", 1.0)] * len(data["weights"])), chosen))


def test_evaluate_hand_computed():
    # unit 0: min(1, z) weight 2; unit 1: breakpoints (1, 1), (3, 2) weight 0.5
    s1, b1 = min_cap_pieces([1.0])
    s2, b2 = breakpoint_pieces([(1, 1), (3, 2)])
    p = Problem.build([1, 1, 1], [0, 1, 2], [[0.5, 2.0], [0.75, 0.0], [0.0, 3.0]], [2.0, 0.5],
                      h_slopes=[s1[0].tolist() + [0.0], s2.tolist()],
                      h_intercepts=[b1[0].tolist() + [1.0], b2.tolist()])
    assert evaluate(p, []) == 0.0
    assert evaluate(p, [0]) == 2.0 * 0.5 + 0.5 * 1.5          # h2(2) = 1 + (2 - 1) / 2
    assert evaluate(p, [0, 1]) == 2.0 * 1.0 + 0.5 * 1.5       # unit 0 saturates at 1
    assert evaluate(p, [0, 2]) == 2.0 * 0.5 + 0.5 * 2.0       # unit 1 flat after z = 3


# -- marginal gains ---------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(problem_and_selection())
def test_marginal_gains_equal_difference_of_evaluate(case):
    data, chosen = case
    p = build(data)
    naive = dict(data, h=h_of(data))
    base = evaluate(p, chosen)
    gains = marginal_gains(p, coverage_sums(p, chosen))
    assert gains.shape == (p.n_candidates,)
    for u in range(p.n_candidates):
        with_u = chosen + [u]   # for u already in S: its coverage counted once more, as documented
        expected = naive_value(naive, with_u) - naive_value(naive, chosen)
        assert math.isclose(gains[u], expected, rel_tol=1e-9, abs_tol=1e-9 * max(1.0, base))
        if u not in chosen:
            assert math.isclose(gains[u], evaluate(p, with_u) - base, rel_tol=1e-9, abs_tol=1e-9 * max(1.0, base))
        assert gains[u] >= -1e-9 * max(1.0, base)  # F is monotone
    subset = [u for u in range(p.n_candidates) if u % 2 == 1][::-1]
    assert marginal_gains(p, coverage_sums(p, chosen), subset).tolist() == gains[subset].tolist()


@settings(max_examples=40, deadline=None)
@given(problem_and_selection())
def test_marginal_gains_diminish(case):
    """Submodularity: a gain never grows when the store grows."""
    data, chosen = case
    p = build(data)
    small = chosen[: len(chosen) // 2]
    g_small = marginal_gains(p, coverage_sums(p, small))
    g_big = marginal_gains(p, coverage_sums(p, chosen))
    scale = max(1.0, evaluate(p, chosen))
    for u in set(range(p.n_candidates)) - set(chosen):
        assert g_big[u] <= g_small[u] + 1e-9 * scale


# -- feasibility -------------------------------------------------------------------------------------

def small_problem():
    """Four candidates: 0 and 1 share group 0; costs 2, 3, 1, 4."""
    return Problem.build([2, 3, 1, 4], [0, 0, 1, 2], [[1, 0], [0, 1], [0.5, 0.5], [1, 1]], [1.0, 2.0])


@pytest.mark.parametrize("chosen, budget, match", [
    ([0, 1], 100, r"group 0 has more than one chosen candidate"),
    ([1, 2, 3], 7.5, r"cost 8 exceeds the budget 7\.5"),
    ([0], 0, r"cost 2 exceeds the budget 0"),
    ([2, 2], 100, r"a candidate is chosen twice"),
    ([4], 100, r"out of range \[0, 4\)"),
    ([-1, 2], 100, r"out of range \[0, 4\)"),
])
def test_infeasible_stores_say_why(chosen, budget, match):
    p = small_problem()
    assert not is_feasible(p, chosen, budget)
    why = infeasibility(p, chosen, budget)
    assert why
    assert re.search(match, why), why


@pytest.mark.parametrize("chosen, budget", [([], 0), ([], 100), ([0, 2, 3], 7), ([1, 2, 3], 8), ([3], 4.0)])
def test_feasible_stores(chosen, budget):
    p = small_problem()
    assert is_feasible(p, chosen, budget)
    assert infeasibility(p, chosen, budget) == ""
    mask = np.isin(np.arange(p.n_candidates), chosen)
    assert is_feasible(p, mask, budget)


def test_budget_check_tolerates_float_round_off_only():
    p = Problem.build([0.1, 0.2], [0, 1], [[1.0], [1.0]], [1.0])
    assert is_feasible(p, [0, 1], 0.3)          # 0.1 + 0.2 = 0.30000000000000004
    assert not is_feasible(p, [0, 1], 0.3 - 1e-6)


def test_selection_forms_are_checked():
    p = small_problem()
    with pytest.raises(ValueError, match=r"boolean selection needs shape \(4,\)"):
        evaluate(p, np.array([True, False]))
    with pytest.raises(ValueError, match="candidate indices must be integers"):
        evaluate(p, [0.5])


@settings(max_examples=60, deadline=None)
@given(problem_and_selection(), st.floats(0, 60))
def test_is_feasible_matches_the_rules(case, budget):
    data, chosen = case
    p = build(data)
    groups = [data["groups"][u] for u in chosen]
    cost = sum(data["costs"][u] for u in chosen)
    expected = len(set(groups)) == len(groups) and cost <= budget + COST_RTOL * max(1.0, budget)
    assert is_feasible(p, chosen, budget) == expected


# -- Problem.build rejects each bad array -------------------------------------------------------------

GOOD = {"costs": [2.0, 3.0, 1.0], "groups": [0, 0, 1], "coverage": [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]],
        "weights": [1.0, 2.0]}


def with_(key, index, value):
    data = {k: [list(r) if isinstance(r, list) else r for r in v] for k, v in GOOD.items()}
    if key == "coverage":
        data[key][index[0]][index[1]] = value
    else:
        data[key][index] = value
    return data


@pytest.mark.parametrize("data, match", [
    pytest.param(with_("costs", 1, -1.0), r"costs must be finite and > 0; candidate 1 has cost -1", id="neg-cost"),
    pytest.param(with_("costs", 0, 0.0), r"costs must be finite and > 0; candidate 0 has cost 0", id="zero-cost"),
    pytest.param(with_("costs", 2, math.nan), r"costs must be finite and > 0; candidate 2 has cost nan",
                 id="nan-cost"),
    pytest.param(with_("costs", 2, math.inf), r"costs must be finite and > 0; candidate 2 has cost inf",
                 id="inf-cost"),
    pytest.param(with_("coverage", (1, 0), -0.5), r"coverage values must be finite and >= 0", id="neg-coverage"),
    pytest.param(with_("coverage", (2, 1), math.nan), r"coverage values must be finite and >= 0",
                 id="nan-coverage"),
    pytest.param(with_("coverage", (0, 1), math.inf), r"coverage values must be finite and >= 0",
                 id="inf-coverage"),
    pytest.param(with_("weights", 1, 0.0), r"weights must be finite and > 0; unit 1 has weight 0", id="zero-weight"),
    pytest.param(with_("weights", 0, -2.0), r"weights must be finite and > 0; unit 0 has weight -2",
                 id="neg-weight"),
    pytest.param(with_("weights", 0, math.nan), r"weights must be finite and > 0; unit 0 has weight nan",
                 id="nan-weight"),
    pytest.param(with_("weights", 1, math.inf), r"weights must be finite and > 0; unit 1 has weight inf",
                 id="inf-weight"),
    pytest.param(with_("groups", 1, 0.5), r"group indices must be integers", id="fractional-group"),
    pytest.param(with_("groups", 0, -1), r"group indices must lie in \[0, 2\)", id="negative-group"),
    pytest.param(dict(GOOD, groups=[0, 1]), r"groups has 2 entries but costs has 3", id="short-groups"),
])
def test_build_rejects_bad_arrays(data, match):
    with pytest.raises(ProblemError, match=match):
        Problem.build(data["costs"], data["groups"], data["coverage"], data["weights"])


def test_build_rejects_bad_shapes_and_group_range():
    with pytest.raises(ProblemError, match=r"coverage has shape \(3, 3\), expected \(3, 2\)"):
        Problem.build(GOOD["costs"], GOOD["groups"], sp.csr_array(np.ones((3, 3))), GOOD["weights"])
    with pytest.raises(ProblemError, match=r"group indices must lie in \[0, 1\)"):
        Problem.build(GOOD["costs"], GOOD["groups"], GOOD["coverage"], GOOD["weights"], n_groups=1)


@pytest.mark.parametrize("slopes, intercepts, match", [
    pytest.param([[1, 0], [-1, 0]], [[0, 1], [0, 1]], r"non-decreasing: every piece slope must be >= 0",
                 id="negative-slope"),
    pytest.param([[1, 0], [1, 0]], [[0, 1], [0.5, 1]], r"h\(0\) must be 0", id="h0-positive"),
    pytest.param([[1, 0], [1, 0]], [[0, 1], [-0.5, 1]], r"h\(0\) must be 0", id="negative-intercept"),
    pytest.param([[1, 0], [1, math.nan]], [[0, 1], [0, 1]], r"h pieces must be finite", id="nan-piece"),
    pytest.param([[1, 0], [1, 0]], [[0, 1], [0, math.inf]], r"h pieces must be finite", id="inf-piece"),
    pytest.param([[1, 0], [1, 0]], None, r"give both h_slopes and h_intercepts", id="slopes-only"),
])
def test_build_rejects_bad_pieces(slopes, intercepts, match):
    with pytest.raises(ProblemError, match=match):
        Problem.build(GOOD["costs"], GOOD["groups"], GOOD["coverage"], GOOD["weights"],
                      h_slopes=slopes, h_intercepts=intercepts)


@pytest.mark.parametrize("points, match", [
    pytest.param([(1.0, 1.0), (2.0, 0.5)], r"h must be non-decreasing; it falls from 1\.0 to 0\.5", id="decreasing"),
    pytest.param([(1.0, -1.0)], r"h must be non-decreasing", id="negative-start"),
    pytest.param([(1.0, 0.5), (2.0, 2.0)], r"h must be concave; its slope rises from 0\.5 to 1\.5", id="convex"),
    pytest.param([(1.0, 1.0), (1.0, 2.0)], r"strictly increasing z > 0", id="repeated-z"),
    pytest.param([(0.0, 1.0)], r"strictly increasing z > 0", id="h0-not-zero"),
    pytest.param([(-1.0, 1.0)], r"strictly increasing z > 0", id="negative-z"),
    pytest.param([(1.0, math.nan)], r"is not finite", id="nan-value"),
    pytest.param([(math.inf, 1.0)], r"is not finite", id="inf-z"),
    pytest.param([], r"at least one point", id="empty"),
])
def test_breakpoint_pieces_rejects_bad_h(points, match):
    with pytest.raises(ProblemError, match=match):
        breakpoint_pieces(points)


def test_problem_error_is_a_value_error():
    assert issubclass(ProblemError, ValueError)


@settings(max_examples=40, deadline=None)
@given(h_specs("points"), st.floats(0, 20))
def test_breakpoint_pieces_reproduce_the_interpolation(spec, z):
    s, b = breakpoint_pieces(spec[1])
    assert math.isclose(float(np.min(s * z + b)), naive_h(spec, z), rel_tol=1e-9, abs_tol=1e-9)
    assert abs(float(np.min(s * 0.0 + b))) <= 1e-12


def test_collinear_breakpoints_build():
    """A valid h (linear up to z = 0.3, then flat) must give pieces that Problem.build accepts."""
    s, b = breakpoint_pieces([(0.1, 0.3), (0.3, 0.9)])
    assert float(b.min()) == 0.0
    Problem.build([1.0], [0], [[1.0]], [1.0], h_slopes=[s], h_intercepts=[b])


def test_build_accepts_edge_shapes():
    empty = Problem.build([], [], np.zeros((0, 2)), [1.0, 1.0])
    assert (empty.n_candidates, empty.n_units, empty.n_groups) == (0, 2, 0)
    assert evaluate(empty, []) == 0.0
    no_units = Problem.build([1.0, 2.0], [0, 1], np.zeros((2, 0)), [])
    assert evaluate(no_units, [0, 1]) == 0.0
    spare = Problem.build([1.0], [0], [[1.0]], [1.0], n_groups=3)   # groups without candidates are allowed
    assert spare.n_groups == 3 and [len(m) for m in spare.group_members()] == [1, 0, 0]


def test_h_values_memory_is_linear_in_entries_with_many_pieces(monkeypatch):
    import memaudit_solvers.objective as objective
    from memaudit_solvers.problem import breakpoint_pieces
    # one unit with 2,000 breakpoints among 40: blocked evaluation equals the one-shot one
    pts = [(z, float(np.sqrt(z))) for z in np.linspace(0.01, 5, 2000)]
    s1, b1 = breakpoint_pieces(pts)
    slopes = np.tile(np.r_[[1.0], np.zeros(2000)], (40, 1))
    intercepts = np.tile(np.r_[[0.0], np.ones(2000)], (40, 1))
    slopes[0], intercepts[0] = s1, b1
    rng = np.random.default_rng(3)
    p = Problem.build(rng.integers(1, 9, 30).astype(float), np.arange(30) // 3,
                      rng.choice([0, 0.5, 3.0], size=(30, 40)), np.ones(40), h_slopes=slopes, h_intercepts=intercepts)
    units = np.repeat(np.arange(40), 50)
    z = rng.uniform(0, 6, size=units.size)
    whole = objective.h_values(p, units, z)
    monkeypatch.setattr(objective, "_H_BLOCK", 4001)          # two entries per block
    assert np.array_equal(objective.h_values(p, units, z), whole)
    zs, hs = np.array([0.0] + [q for q, _ in pts]), np.array([0.0] + [v for _, v in pts])
    assert whole[units == 0] == pytest.approx(np.interp(z[units == 0], zs, hs), abs=1e-9)
