"""``memaudit ablate`` and :func:`memaudit.generators.ablate.ablate`."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from memaudit.cli import main
from memaudit.generators import generate, write_package
from memaudit.generators.ablate import AblationError, ablate, parse_kinds
from memaudit.package import load_package, package_sha256, resolve_budget
from memaudit.solve import solve_package


@pytest.fixture
def validity_path(tmp_path):
    path = tmp_path / "v.json"
    write_package(generate("validity", 2), path)
    return path


def test_ablate_drops_only_the_kinds_and_keeps_units_and_queries():
    pkg = generate("validity", 2)
    out = ablate(pkg, ["tombstone", "compound_update"])
    assert {c.kind for c in out.candidates} == {"raw", "fact", "update"}
    kept = [c for c in pkg.candidates if c.kind not in ("tombstone", "compound_update")]
    assert out.candidates == kept
    assert out.units == pkg.units and out.queries == pkg.queries and out.experiences == pkg.experiences
    assert out.meta["ablation"] == [{"dropped_kinds": ["tombstone", "compound_update"],
                                     "n_dropped": len(pkg.candidates) - len(kept), "source_id": pkg.id}]
    assert out.meta["generator"] == "validity"


@pytest.mark.parametrize("seed", range(4))
def test_ablation_never_raises_opt(seed):
    pkg = generate("validity", seed)
    out = ablate(pkg, ["tombstone", "compound_update"])
    for frac in (0.1, 0.25):
        b = resolve_budget(pkg, budget_frac=frac)  # same stream cost: raw is every group's largest candidate
        assert b == resolve_budget(out, budget_frac=frac)
        full = solve_package(pkg, budget=b, backend=None).value
        less = solve_package(out, budget=b, backend=None).value
        assert less <= full + 1e-9


def test_ablate_refuses_to_empty_a_group():
    pkg = generate("small", 1)
    with pytest.raises(AblationError, match=r"dropping raw would leave the group of experience 'e\d+' \(and \d+ "
                                            r"more\) empty"):
        ablate(pkg, ["raw"])


def test_parse_kinds():
    assert parse_kinds(" tombstone ,compound_update,tombstone") == ("tombstone", "compound_update")
    with pytest.raises(AblationError, match="needs at least one candidate kind"):
        parse_kinds(" , ")
    with pytest.raises(AblationError, match="unknown candidate kind 'facts'"):
        parse_kinds("raw,facts")


def test_cli_ablate(validity_path, tmp_path):
    out = tmp_path / "out.json"
    before = validity_path.read_bytes()
    r = CliRunner().invoke(main, ["ablate", str(validity_path), "--drop-kinds", "tombstone,compound_update",
                                  "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "wrote" in r.stdout and "validity-s2-no-tombstone-compound_update" in r.stdout
    assert validity_path.read_bytes() == before
    pkg = load_package(out)
    assert pkg.meta["ablation"][-1]["source_sha256"] == package_sha256(validity_path)
    assert "stream cost" not in r.stderr  # raw stays: the stream cost and --budget-frac budgets are the same
    assert not any(c.kind in ("tombstone", "compound_update") for c in pkg.candidates)
    # reproducible: the same command writes the same bytes
    out2 = tmp_path / "out2.json"
    CliRunner().invoke(main, ["ablate", str(validity_path), "--drop-kinds", "tombstone,compound_update",
                              "-o", str(out2)])
    assert out.read_bytes() == out2.read_bytes()


@pytest.mark.parametrize("args,match", [
    (["--drop-kinds", "raw,fact"], "error: dropping raw, fact would leave the group of experience 'e"),
    (["--drop-kinds", "tombstones"], "error: unknown candidate kind 'tombstones' in --drop-kinds; valid kinds: raw"),
    (["--drop-kinds", "tombstone", "--same"], "refusing to write the ablated package over its source"),
    (["--drop-kinds", "tombstone", "--id", ""], "error: package id must not be empty; got ''"),
])
def test_cli_ablate_errors(validity_path, tmp_path, args, match):
    out = validity_path if "--same" in args else tmp_path / "o.json"
    args = [a for a in args if a != "--same"]
    r = CliRunner().invoke(main, ["ablate", str(validity_path), *args, "-o", str(out)])
    assert r.exit_code == 1
    assert r.stderr.startswith("error: ") and match in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    if out != validity_path:
        assert not out.exists()


def test_cli_ablate_missing_file(tmp_path):
    r = CliRunner().invoke(main, ["ablate", str(tmp_path / "nope.json"), "--drop-kinds", "tombstone",
                                  "-o", str(tmp_path / "o.json")])
    assert r.exit_code == 1 and "nope.json: no such file" in r.stderr


def test_ablating_twice_keeps_both_records(validity_path, tmp_path):
    once, twice = tmp_path / "once.json", tmp_path / "twice.json"
    for src, out, kinds in ((validity_path, once, "tombstone"), (once, twice, "compound_update")):
        r = CliRunner().invoke(main, ["ablate", str(src), "--drop-kinds", kinds, "-o", str(out)])
        assert r.exit_code == 0, r.output
    records = load_package(twice).meta["ablation"]
    assert [rec["dropped_kinds"] for rec in records] == [["tombstone"], ["compound_update"]]
    assert [rec["source_id"] for rec in records] == ["validity-s2", "validity-s2-no-tombstone"]
    assert records[1]["source_sha256"] == package_sha256(once)
    assert "dropped" in r.stdout and f"dropped {records[1]['n_dropped']} candidates" in r.stdout


def test_dropping_raw_changes_the_stream_cost_and_says_so(tmp_path):
    from memaudit.package import stream_cost

    src = tmp_path / "n.json"
    write_package(generate("natural", 1, filler=False), src)
    pkg = load_package(src)
    groups = {c.experience for c in pkg.candidates if c.kind != "raw"}
    assert len(groups) == len(pkg.experiences)  # every fact-bearing experience has a candidate besides raw
    out = tmp_path / "o.json"
    r = CliRunner().invoke(main, ["ablate", str(src), "--drop-kinds", "raw", "-o", str(out)])
    assert r.exit_code == 0, r.output
    before, after = stream_cost(pkg), stream_cost(load_package(out))
    assert after < before
    assert (f"note: the stream cost changed from {before:g} to {after:g}, so --budget-frac budgets of {out} "
            "differ from its source's") in r.stderr


def test_ablate_help_mentions_the_stream_cost():
    r = CliRunner().invoke(main, ["ablate", "--help"])
    assert "stream cost" in " ".join(r.output.split())
