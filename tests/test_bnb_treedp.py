"""bnb's dynamic programme over a path decomposition: its Pareto frontiers equal brute force, and bnb's
answers with it equal brute force / HiGHS on coupled problems and validity chains."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_solvers.bnb import branch_and_bound
from memaudit_solvers.bnb.treedp import component_frontier, group_order, open_width
from memaudit_solvers.bruteforce import brute_force
from memaudit_solvers.milp import milp_highs
from memaudit_solvers.objective import evaluate
from memaudit_solvers.problem import Problem, breakpoint_pieces
from memaudit_solvers.random_problems import random_problem, tiny_problem


def brute_frontier(p: Problem, by_group, budget=np.inf):
    """(cost, value) pairs of every store of these groups, Pareto-filtered as decompose does (value > 0)."""
    pairs = []
    for pick in itertools.product(*[[None] + list(c) for c in by_group.values()]):
        store = [u for u in pick if u is not None]
        cost = float(p.costs[store].sum())
        if cost <= budget:
            pairs.append((cost, evaluate(p, store)))
    pairs.sort(key=lambda cv: (cv[0], -cv[1]))
    out, best = [], 0.0
    for c, v in pairs:
        if v > best + 1e-12 * abs(v):
            out.append((c, v))
            best = v
    return out


def whole(p: Problem):
    """Every group of p as one component."""
    return {g: [int(u) for u in m] for g, m in enumerate(p.group_members()) if len(m)}


def check_frontier(p: Problem, by_group, budget=np.inf):
    f = component_frontier(p, by_group, budget=budget)
    assert f is not None
    want = brute_frontier(p, by_group, budget)
    assert len(f.members) == len(want)
    assert f.costs.tolist() == pytest.approx([c for c, _ in want], rel=1e-12)
    assert f.values.tolist() == pytest.approx([v for _, v in want], rel=1e-12)
    for store, c, v in zip(f.members, f.costs, f.values):
        assert np.unique(p.groups[list(store)]).size == len(store)       # at most one candidate per group
        assert all(u in by_group[int(p.groups[u])] for u in store)
        assert float(p.costs[list(store)].sum()) == pytest.approx(c, rel=1e-12)
        assert evaluate(p, list(store)) == pytest.approx(v, rel=1e-12)   # the one objective function
    return f


def with_pwl(p: Problem) -> Problem:
    s, b = breakpoint_pieces([(1.0, 1.0), (2.0, 1.5), (3.0, 1.75)])
    return Problem.build(p.costs, p.groups, p.coverage, p.weights, h_slopes=np.tile(s, (p.n_units, 1)),
                         h_intercepts=np.tile(b, (p.n_units, 1)), n_groups=p.n_groups)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("pieces", ["min1", "cap", "pwl"])
def test_frontier_of_tiny_problems_equals_brute_force(seed, pieces):
    p = tiny_problem(seed, n_candidates=11, n_units=5, pieces=pieces)
    check_frontier(p, whole(p))
    check_frontier(p, whole(p), budget=0.3 * float(p.costs.sum()))


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 6), st.integers(0, 10**6), st.booleans(), st.sampled_from([np.inf, 0.1, 0.25]))
def test_frontier_of_coupled_problems_equals_brute_force(n, seed, pwl, frac):
    p = random_problem(n, seed, restate=0.8)
    p = with_pwl(p) if pwl else p
    check_frontier(p, whole(p), budget=frac * p.stream_cost())


def small_validity(seed: int, **kwargs) -> Problem:
    from memaudit.generators import generate
    from memaudit.package import compile_package

    return compile_package(generate("validity", seed, **kwargs)).problem


def components(p: Problem):
    """Groups of p linked by shared units (connected components), as {group: candidates} maps."""
    import networkx as nx

    graph = nx.Graph()
    cov = p.coverage
    for u in range(p.n_candidates):
        for r in cov.indices[cov.indptr[u]:cov.indptr[u + 1]]:
            graph.add_edge(("g", int(p.groups[u])), ("r", int(r)))
    out = []
    for comp in nx.connected_components(graph):
        groups = sorted(g for kind, g in comp if kind == "g")
        out.append({g: [int(u) for u in p.group_members()[g]] for g in groups})
    return out


def units_of(p: Problem, comp):
    cov = p.coverage
    return {g: sorted({int(r) for u in c for r in cov.indices[cov.indptr[u]:cov.indptr[u + 1]]})
            for g, c in comp.items()}


@pytest.mark.parametrize("seed", range(3))
def test_frontier_of_validity_chains_equals_brute_force(seed):
    p = small_validity(seed, entities=2, attributes=2, min_updates=4, max_updates=5)
    checked = 0
    for comp in components(p):
        n_stores = int(np.prod([len(c) + 1 for c in comp.values()]))
        if 1 < len(comp) and n_stores <= 6_000:
            f = check_frontier(p, comp)
            checked += 1
            # a chain: few units open at a time, so few states (sums 0, 0.5 or 1 of each open unit)
            g_units = units_of(p, comp)
            assert open_width(group_order(g_units), g_units) <= 3
            assert f.states <= 3 ** 3
    assert checked >= 2


def test_group_order_of_a_path_keeps_one_unit_open():
    # groups 0..9 in a shuffled path: group g shares unit g with g + 1
    rng = np.random.default_rng(0)
    names = rng.permutation(10).tolist()
    g_units = {names[i]: [u for u in (i - 1, i) if 0 <= u < 9] for i in range(10)}
    assert open_width(group_order(g_units), g_units) == 1


def test_group_order_of_a_tree_uses_the_tree_decomposition():
    # a star of chains: hub 0 shares unit 100 + i with the first group of arm i; arms of 4 groups
    g_units = {0: [100, 101, 102, 103]}
    for arm in range(4):
        for j in range(4):
            g = 1 + 4 * arm + j
            g_units[g] = [100 + arm] * (j == 0) + [10 * g] * 1 + [10 * (g + 1)] * (j < 3)
            if j > 0:
                g_units[g].append(10 * g)
    g_units = {g: sorted(set(rs)) for g, rs in g_units.items()}
    order = group_order(g_units)
    assert sorted(order) == sorted(g_units)
    assert open_width(order, g_units) <= 4


def test_networkx_is_not_tried_on_an_order_far_wider_than_the_programme_takes(monkeypatch):
    # 30 groups, each pair sharing a unit: every order keeps about 225 units open, far above
    # TREE_MAX_WIDTH; the tree decomposition (seconds on such graphs) is not computed, and the order
    # is still every group once
    import networkx.algorithms.approximation as approx

    from memaudit_solvers.bnb import treedp

    def refuse(*args, **kwargs):
        raise AssertionError("networkx's decomposition was tried")

    monkeypatch.setattr(approx, "treewidth_min_degree", refuse)
    pairs = list(itertools.combinations(range(30), 2))
    g_units = {g: [k for k, pair in enumerate(pairs) if g in pair] for g in range(30)}
    order = group_order(g_units)
    assert sorted(order) == list(range(30))
    assert open_width(order, g_units) > treedp.TREE_MAX_WIDTH


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("frac", [0.1, 0.25, 0.5])
@pytest.mark.parametrize("pwl", [False, True])
def test_bnb_with_the_programme_equals_brute_force(seed, frac, pwl):
    p = random_problem(6, seed, restate=0.8)
    p = with_pwl(p) if pwl else p
    budget = frac * p.stream_cost()
    opt = brute_force(p, budget).value
    r = branch_and_bound(p, budget, max_combos=1)           # every coupled component goes to the programme
    assert r.stats["tree_dp_components"] >= 1 and r.stats["coupled_groups"] == 0
    assert r.status == "optimal" and r.value == pytest.approx(opt, rel=1e-9)


def test_a_component_over_the_limit_stays_coupled():
    p = random_problem(40, 1, restate=0.8)
    budget = 0.1 * p.stream_cost()
    r = branch_and_bound(p, budget, max_combos=1, tree_limit=3)
    assert r.stats["tree_dp_components"] == 0 and r.stats["coupled_groups"] > 0
    ref = milp_highs(p, budget)
    assert r.status == ref.status == "optimal" and r.value == pytest.approx(ref.value, rel=1e-9)
    with_dp = branch_and_bound(p, budget, max_combos=1)
    assert with_dp.stats["tree_dp_components"] >= 1 and with_dp.value == pytest.approx(ref.value, rel=1e-9)


@pytest.mark.parametrize("frac", [0.05, 0.1, 0.25])
def test_validity_chain_closes_at_the_root_and_agrees_with_highs(frac):
    p = small_validity(1, entities=4, attributes=4, min_updates=9, max_updates=9)
    budget = frac * p.stream_cost()
    r = branch_and_bound(p, budget, max_combos=64)                 # components of 3^7 stores and more
    ref = milp_highs(p, budget)
    assert r.stats["tree_dp_components"] >= 1
    assert r.status == ref.status == "optimal"
    assert r.value == pytest.approx(ref.value, rel=1e-9)


@pytest.mark.parametrize("value", [-1, 2.5, True, "9"])
def test_tree_limit_must_be_an_int_at_least_zero(value):
    with pytest.raises(ValueError, match=r"method 'bnb': setting 'tree_limit' must be an integer >= 0; got "):
        branch_and_bound(random_problem(5, 0), 10.0, tree_limit=value)


def test_levels_bound_each_units_coverage_states():
    from memaudit_solvers.bnb.treedp import _levels

    # two groups cover the unit with 0.5 each and h = min(1, z): sums 0, 0.5 and 1, not 2**2
    p = Problem.build([1, 1], [0, 1], [[0.5], [0.5]], [1.0])
    assert _levels(p, np.array([0]), np.array([2])).tolist() == [3.0]
    # coverage on no decimal grid: every subset of the groups may give its own sum
    p = Problem.build([1, 1], [0, 1], [[1 / 3], [0.1234567891]], [1.0])
    assert _levels(p, np.array([0]), np.array([2])).tolist() == [4.0]


@pytest.mark.parametrize("case", ["validity", "restate", "restated summaries"])
def test_the_state_gate_skips_only_what_the_programme_gives_up(case, monkeypatch):
    """A component whose open units' coverage levels multiply far past the limit is not tried: the
    programme finds the same frontiers with and without the gate, and bnb the same optimum."""
    import memaudit_solvers.bnb.treedp as treedp
    from memaudit_solvers.random_problems import summary_problem

    if case == "validity":
        p = small_validity(1, entities=4, attributes=4, min_updates=9, max_updates=9)
    elif case == "restate":
        p = random_problem(200, 0, restate=0.8)
    else:
        p = summary_problem(50, 1, restate=0.8)
    budget = 0.1 * p.stream_cost()
    gated = branch_and_bound(p, budget, max_combos=64)
    monkeypatch.setattr(treedp, "LEVEL_GATE", False)
    plain = branch_and_bound(p, budget, max_combos=64)
    assert gated.stats["tree_dp_components"] == plain.stats["tree_dp_components"]
    assert gated.stats["tree_dp_entries"] == plain.stats["tree_dp_entries"]
    assert gated.status == plain.status == "optimal" and gated.value == pytest.approx(plain.value, rel=1e-9)
