"""The paper's stability knobs: the relaxed partition as an exact package transformation, and byte-overhead costs."""

from __future__ import annotations

import itertools

import pytest
from click.testing import CliRunner

from memaudit.cli import main
from memaudit.generators.paper import paper_small, paper_update_chain
from memaudit.package import candidate_costs, compile_package, load_package
from memaudit.reports.stability import StabilityError, recost, relax_partition, stability_rows
from memaudit_solvers.registry import get_method

QUICKSTART = "packages_data/examples/quickstart.json"


def brute_with_k(pkg, budget, k):
    """Best F over stores with at most k candidates per experience, by plain enumeration (written here)."""
    costs = candidate_costs(pkg)
    weights = {u.id: u.weight for u in pkg.units}
    groups = [[c for c in pkg.candidates if c.experience == e.id] for e in pkg.experiences]
    options = [[()] + [s for j in range(1, k + 1) for s in itertools.combinations(g, j)] for g in groups]
    best = 0.0
    for pick in itertools.product(*options):
        chosen = [c for part in pick for c in part]
        if sum(costs[c.id] for c in chosen) > budget + 1e-9:
            continue
        sums = {}
        for c in chosen:
            for u, a in c.coverage.items():
                sums[u] = sums.get(u, 0.0) + a
        best = max(best, sum(weights[u] * min(1.0, s) for u, s in sums.items()))
    return best


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("budget", [3, 6, 10])
def test_relaxed_partition_is_exact_against_brute_force(k, budget):
    pkg = paper_update_chain()
    relaxed = compile_package(relax_partition(pkg, k)).problem
    assert get_method("bnb")(relaxed, budget).value == pytest.approx(brute_with_k(pkg, budget, k), abs=1e-12)


def test_relaxed_partition_options_and_k1_is_the_package():
    pkg = paper_small(2)
    two = relax_partition(pkg, 2)
    # groups of 3, 3, 3, 3, 5, 3, 5 candidates: 3 + 3 = 6 options each for the 3s, 5 + 10 = 15 for the 5s
    assert len(two.candidates) == 5 * 6 + 2 * 15
    pair = next(c for c in two.candidates if c.id == "u0.fact+u0.tombstone")
    assert pair.cost == 3.0 and pair.coverage == {"current0": 1.0, "invalid0": 1.0}
    one = compile_package(relax_partition(pkg, 1)).problem
    for b in (2, 8):
        assert get_method("bnb")(one, b).value == get_method("bnb")(compile_package(pkg).problem, b).value
    with pytest.raises(StabilityError, match="integer >= 1"):
        relax_partition(pkg, 0)


def test_recost_counts_byte_overhead_from_the_texts_and_refuses_given_costs():
    pkg = load_package(QUICKSTART)
    other = recost(pkg, "byte-overhead")
    assert other.cost_model == "byte-overhead" and other.budget is None
    costs = candidate_costs(other)
    for c in pkg.candidates:
        assert costs[c.id] == max(1, 8 + -(-len(c.text.encode("utf-8")) // 24))
    with pytest.raises(StabilityError, match="given costs"):
        recost(paper_small(0), "byte-overhead")


def test_stability_rows_and_cli():
    rows = stability_rows([load_package(QUICKSTART)])
    assert rows[0]["opt_k1"] <= rows[0]["opt_k2"] and rows[0]["opt_byte_overhead"] is not None
    r = CliRunner().invoke(main, ["report", "paper", "--stability", QUICKSTART])
    assert r.exit_code == 0, r.output
    assert "OPT k=2" in r.stdout and "byte-overhead" in r.stdout
    missing = CliRunner().invoke(main, ["report", "paper", "--stability", "nope.json"])
    assert missing.exit_code == 1 and "error:" in missing.output
