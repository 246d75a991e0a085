"""The MEMAUDIT paper's packages and `memaudit report paper`, checked against an independent implementation.

Everything independent lives here in plain Python, written from the protocol (the template's draw
order, the two heuristics, brute-force OPT), and never calls the code under test.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from click.testing import CliRunner

from memaudit.cli import main
from memaudit.generators import generate
from memaudit.generators.paper import paper_small, paper_temporal_interval, paper_update_chain, total_candidate_cost
from memaudit.package import compile_package, load_package, package_to_dict
from memaudit.reports.paper import PAPER, paper_budgets, paper_json, run_paper

# -- the template, written from the protocol ---------------------------------------------------------


def template(seed):
    """(groups, weights, validity units) of MemAudit-Small for one seed: groups are lists of
    (kind, cost, {unit: a}) in stream order."""
    rng = random.Random(seed)
    w, groups = {}, []
    for i in range(3):
        w[f"fact{i}"] = rng.choice([1.0, 1.2, 1.4])
        w.setdefault(f"context{i // 2}", 0.35)
        raw = 5 + rng.randint(0, 1)
        f, c = f"fact{i}", f"context{i // 2}"
        groups.append([("raw", raw, {f: 1.0, c: 0.4}), ("fact", 2, {f: 1.0}), ("summary", 3, {f: 0.7, c: 0.5})])
    for i in range(2):
        s, cur, inv = f"stale{i}", f"current{i}", f"invalid{i}"
        w[s] = 0.15
        w[cur] = 2.0 + 0.25 * rng.randint(0, 2)
        w[inv] = 2.0 + 0.25 * rng.randint(0, 2)
        groups.append([("raw", 4, {s: 1.0}), ("fact", 2, {s: 1.0}), ("summary", 3, {s: 0.75})])
        groups.append([("raw", 6, {cur: 1.0, inv: 0.45, s: 0.2}), ("fact", 2, {cur: 1.0}), ("tombstone", 1, {inv: 1.0}),
                       ("compound_update", 3, {cur: 1.0, inv: 1.0}), ("summary", 4, {cur: 0.75, inv: 0.75, s: 0.1})])
    return groups, w, ["invalid0", "invalid1"]


def value(store, w):
    sums = {}
    for _, _, cov in store:
        for u, a in cov.items():
            sums[u] = sums.get(u, 0.0) + a
    return sum(w[u] * min(1.0, s) for u, s in sums.items())


def gain(c, store, w):
    return value(store + [c], w) - value(store, w)


def brute_opt(groups, w, budget, drop=()):
    best = [0.0]

    def visit(g, store, spent):
        if g == len(groups):
            best[0] = max(best[0], value(store, w))
            return
        visit(g + 1, store, spent)
        for c in groups[g]:
            if c[0] not in drop and spent + c[1] <= budget:
                visit(g + 1, store + [c], spent + c[1])
    visit(0, [], 0)
    return best[0]


def density_only(groups, w, budget):
    store, spent = [], 0
    for group in groups:
        keys = []
        for j, c in enumerate(group):
            g = gain(c, store, w)
            if spent + c[1] <= budget and g > 1e-12:
                keys.append((g / c[1], g, -c[1], j))
        if keys:
            c = group[max(keys)[3]]
            store.append(c)
            spent += c[1]
    return store


def gvt(groups, w, budget):
    taus = sorted({value([c], w) / c[1] for group in groups for c in group if c[1] <= budget} | {0.0}, reverse=True)
    best, best_value, best_cost = [], -1.0, 0
    for tau in taus:
        store, spent = [], 0
        for group in groups:
            keys = []
            for j, c in enumerate(group):
                g = gain(c, store, w)
                if spent + c[1] <= budget and g > 1e-12 and g / c[1] + 1e-12 >= tau:
                    keys.append((g, -c[1], j))
            if keys:
                c = group[max(keys)[2]]
                store.append(c)
                spent += c[1]
        v = value(store, w)
        if v > best_value + 1e-12 or (abs(v - best_value) <= 1e-12 and spent < best_cost):
            best, best_value, best_cost = store, v, spent
    return best


def invalidation(store, units):
    sums = {}
    for _, _, cov in store:
        for u, a in cov.items():
            sums[u] = sums.get(u, 0.0) + a
    return sum(min(1.0, sums.get(u, 0.0)) for u in units)


# -- the package pins the template -------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_paper_small_is_the_template(seed):
    pkg = paper_small(seed)
    groups, w, _ = template(seed)
    assert (len(pkg.experiences), len(pkg.candidates), len(pkg.units)) == (7, 25, 11)
    assert {u.id: u.weight for u in pkg.units} == w
    got = [[(c.kind, c.cost, dict(c.coverage)) for c in pkg.candidates if c.experience == e.id] for e in pkg.experiences]
    assert got == groups
    assert pkg.cost_source == "given" and pkg.meta["generator"] == "paper-small" and pkg.meta["seed"] == seed
    assert [u.id for u in pkg.units if u.kind == "validity"] == ["invalid0", "invalid1"]


def test_paper_small_weights_of_two_seeds_are_pinned():
    # random.Random(0): choice -> 1.4, raw 6; 1.4, raw 5; 1.0, raw 6 (seed 0); the draws in the protocol's order
    w0 = {u.id: u.weight for u in paper_small(0).units}
    w1 = {u.id: u.weight for u in paper_small(1).units}
    assert [w0[k] for k in ("fact0", "fact1", "fact2", "current0", "invalid0", "current1", "invalid1")] == \
        [template(0)[1][k] for k in ("fact0", "fact1", "fact2", "current0", "invalid0", "current1", "invalid1")]
    assert w0 != w1
    assert total_candidate_cost(paper_small(0)) == sum(c[1] for g in template(0)[0] for c in g)
    assert all(0.35 == w[k] for w in (w0, w1) for k in ("context0", "context1"))
    assert all(0.15 == w[k] for w in (w0, w1) for k in ("stale0", "stale1"))


def test_stress_packages_match_the_protocol():
    chain = paper_update_chain()
    assert (len(chain.experiences), len(chain.candidates), total_candidate_cost(chain)) == (4, 18, 51.0)
    assert {u.id: u.weight for u in chain.units} == {"v0": 0.1, "v1": 0.1, "inv0": 1.85, "v2": 0.1, "inv1": 1.85,
                                                      "v3": 2.3, "inv2": 1.85}
    temporal = paper_temporal_interval()
    assert (len(temporal.experiences), len(temporal.candidates), total_candidate_cost(temporal)) == (7, 30, 88.0)
    assert sorted({c.kind for c in temporal.candidates}) == ["compound_update", "fact", "raw", "summary", "tombstone"]


def test_paper_generators_are_byte_reproducible_and_validated(tmp_path):
    for family, seed in (("paper-small", 7), ("paper-update-chain", 0), ("paper-temporal-interval", 0)):
        r1 = CliRunner().invoke(main, ["generate", family, *(["--seed", str(seed)] if seed else []), "--budget", "6",
                                       "-o", str(tmp_path / "a.json")])
        r2 = CliRunner().invoke(main, ["generate", family, *(["--seed", str(seed)] if seed else []), "--budget", "6",
                                       "-o", str(tmp_path / "b.json")])
        assert r1.exit_code == r2.exit_code == 0, r1.output
        assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
        assert load_package(tmp_path / "a.json").budget == 6.0
    assert generate("paper-small", 3).budget is None
    with pytest.raises(Exception, match="setting 'entities' must be one of the declared settings \\(none\\)"):
        generate("paper-update-chain", 0, entities=3)
    with pytest.raises(Exception, match="seed must be an integer >= 0"):
        paper_small(-1)


def test_paper_budget_rule():
    assert paper_budgets(81.534) == [2, 4, 8, 16]
    assert paper_budgets(0.1, [0.02]) == [1]          # never below 1
    mean = float(np.mean([total_candidate_cost(paper_small(s)) for s in range(500)]))
    assert mean == pytest.approx(PAPER["base_mean_total_cost"], abs=5e-4)


# -- a reduced paper experiment against the independent implementation ------------------------------


def _independent(n_seeds):
    costs = [sum(c[1] for g in template(s)[0] for c in g) for s in range(n_seeds)]
    budgets = [max(1, round(f * (sum(costs) / n_seeds))) for f in (0.02, 0.05, 0.10, 0.20)]
    out = {str(b): {"density": [], "gvt": [], "no_tombstone": [], "inv_density": [], "inv_gvt": []} for b in budgets}
    for s in range(n_seeds):
        groups, w, inv = template(s)
        for b in budgets:
            opt = brute_opt(groups, w, b)
            d, g = density_only(groups, w, b), gvt(groups, w, b)
            row = out[str(b)]
            row["density"].append(value(d, w) / opt)
            row["gvt"].append(value(g, w) / opt)
            row["no_tombstone"].append(brute_opt(groups, w, b, drop=("tombstone", "compound_update")) / opt)
            row["inv_density"].append(invalidation(d, inv))
            row["inv_gvt"].append(invalidation(g, inv))
    return budgets, {b: {k: float(np.mean(v)) for k, v in row.items()} for b, row in out.items()}


@pytest.mark.parametrize("n_seeds", [pytest.param(8, id="8-seeds"), pytest.param(40, id="40-seeds", marks=pytest.mark.slow)])
def test_reduced_paper_experiment_matches_an_independent_brute_force(n_seeds):
    rep = run_paper(n_seeds=n_seeds, audit_seeds=2)
    budgets, ours = _independent(n_seeds)
    assert rep.budgets == budgets
    base, inval = rep.base(), rep.invalidation()
    for b in map(str, budgets):
        for m in ("density", "gvt", "no_tombstone"):
            assert base[b][m] == pytest.approx(ours[b][m], abs=1e-12), (b, m)
        assert inval[b]["density"] == pytest.approx(ours[b]["inv_density"], abs=1e-12)
        assert inval[b]["gvt"] == pytest.approx(ours[b]["inv_gvt"], abs=1e-12)
    a = rep.audit()
    assert a["rows"] == 2 * 4 * 3 and a["agree"] == a["rows"] and a["max_abs_diff"] < 1e-9


def test_stress_packages_against_the_independent_brute_force():
    rep = run_paper(n_seeds=2, audit=False)
    stress = rep.stress()
    for name, pkg in (("update_chain", paper_update_chain()), ("temporal_interval", paper_temporal_interval())):
        w = {u.id: u.weight for u in pkg.units}
        groups = [[(c.kind, c.cost, dict(c.coverage)) for c in pkg.candidates if c.experience == e.id]
                  for e in pkg.experiences]
        opt = brute_opt(groups, w, 6)
        assert stress[name]["density"] == pytest.approx(value(density_only(groups, w, 6), w) / opt, abs=1e-12)
        assert stress[name]["gvt"] == pytest.approx(value(gvt(groups, w, 6), w) / opt, abs=1e-12)
        assert stress[name]["no_tombstone"] == pytest.approx(
            brute_opt(groups, w, 6, drop=("tombstone", "compound_update")) / opt, abs=1e-12)
        # deterministic packages: the paper's published heat-map values, to its three decimals
        for m in ("density", "gvt", "no_tombstone"):
            assert round(stress[name][m], 3) == PAPER["stress_b6"][name][m], (name, m)


def test_json_document_has_exactly_the_stated_shape():
    rep = run_paper(n_seeds=3, audit_seeds=1)
    doc = paper_json(rep)
    assert list(doc) == ["base", "stress_b6", "audit", "paper"]
    assert set(doc["base"]) == {str(b) for b in rep.budgets}
    for per in doc["base"].values():
        assert {"density", "gvt", "no_tombstone", "density-global", "gvt-geometric", "greedy"} == set(per)
        assert all(0 <= v <= 1 + 1e-12 for v in per.values())
    assert set(doc["stress_b6"]) == {"base", "update_chain", "temporal_interval"}
    assert set(doc["audit"]) == {"rows", "agree", "max_abs_diff"}
    assert doc["paper"]["base"]["2"]["density"] == 0.264 and doc["paper"]["audit"]["rows"] == 1200
    json.dumps(doc, allow_nan=False)


def test_report_paper_cli_text_json_and_plots(tmp_path):
    r = CliRunner().invoke(main, ["report", "paper", "--seeds", "3", "--audit-seeds", "1", "--plot", str(tmp_path),
                                  "--rows", str(tmp_path / "rows.json")])
    assert r.exit_code == 0, r.output
    assert "density" in r.stdout and "paper" in r.stdout and "certification audit" in r.stdout
    for name in ("ratio_vs_budget.png", "stress_heatmap_b6.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert len(rows["base"]) == 3 * 4 and len(rows["audit"]) == 12
    j = CliRunner().invoke(main, ["report", "paper", "--seeds", "2", "--no-audit", "--json"])
    assert j.exit_code == 0 and json.loads(j.stdout)["audit"]["rows"] == 0
    bad = CliRunner().invoke(main, ["report", "paper", "--seeds", "0"])
    assert bad.exit_code == 2 and "--seeds" in bad.output


def test_package_json_round_trips():
    pkg = paper_small(5)
    data = package_to_dict(pkg)
    assert data["cost_source"] == "given" and all(isinstance(c["cost"], float) for c in data["candidates"])
    assert compile_package(pkg).problem.n_groups == 7
