"""The coupling report: independent parts of a package, from a hand-built package whose graph is known."""

from __future__ import annotations

from click.testing import CliRunner

from memaudit.cli import main
from memaudit.coupling import coupling_graph, coupling_report
from memaudit.package import package_from_dict


def _pkg():
    # e1 and e2 share unit a; e3 covers b and c alone; e4 covers nothing
    cands = [("e1", {"a": 1}), ("e1", {"a": 1, "x": 0.5}), ("e2", {"a": 0.5}), ("e3", {"b": 1, "c": 1}),
             ("e4", {})]
    return package_from_dict({
        "format": "memaudit-package/1", "id": "coupled", "cost_model": "words",
        "experiences": [{"id": e, "text": "one two three"} for e in ("e1", "e2", "e3", "e4")],
        "units": [{"id": u, "kind": "current", "weight": 1} for u in ("a", "b", "c", "x")],
        "candidates": [{"id": f"{e}.c{i}", "experience": e, "kind": "fact", "text": "one two", "coverage": cov}
                       for i, (e, cov) in enumerate(cands)]})


def test_coupling_counts():
    c = coupling_report(_pkg())
    assert c.n_components == 3                      # {e1, e2}, {e3}, {e4}
    assert (c.largest_experiences, c.largest_units) == (2, 2)   # e1, e2 with a, x
    assert c.n_shared_units == 1 and c.max_experiences_per_unit == 2
    assert c.n_singletons == 2


def test_graph_is_bipartite_and_ignores_zero_coverage():
    pkg = _pkg()
    g = coupling_graph(pkg)
    assert {side for _, side in g.nodes(data="side")} == {"experience", "unit"}
    assert not any(g.nodes[a]["side"] == g.nodes[b]["side"] for a, b in g.edges)


def test_inspect_prints_and_jsons_the_coupling(tmp_path):
    import json
    from memaudit.package import save_package
    path = tmp_path / "coupled.json"
    save_package(_pkg(), path)
    runner = CliRunner()
    out = runner.invoke(main, ["inspect", str(path)]).stdout
    assert "coupling: 3 independent parts (2 of one experience); the largest has 2 experiences and 2 units" in out
    doc = json.loads(runner.invoke(main, ["inspect", str(path), "--json"]).stdout)
    assert doc["coupling"]["n_components"] == 3
