"""``--db`` / ``--no-cache`` on solve, baseline and compare: a certified OPT in the store is reused and says so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from memaudit.cli import main
from memaudit.results.store import Store

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "packages_data" / "examples" / "quickstart.json"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_solve_reuses_a_certified_opt_and_no_cache_resolves(tmp_path):
    db = tmp_path / "r.sqlite"
    first = run("solve", QUICKSTART, "--budget-frac", "0.25", "--db", db, "--json")
    assert first.exit_code == 0 and "reused from the results store" not in first.output
    again = run("solve", QUICKSTART, "--budget-frac", "0.25", "--db", db, "--json", "-v")
    assert again.exit_code == 0
    assert f"reused from the results store {db}; --no-cache re-solves" in again.stderr
    quiet = run("solve", QUICKSTART, "--budget-frac", "0.25", "--db", db, "--json")
    assert "reused" not in quiet.stderr and json.loads(quiet.stdout)["certified"]
    a = json.loads(first.stdout)
    b = json.loads(again.stdout)
    assert (a["opt"], a["store"], a["certified"]) == (b["opt"], b["store"], True)
    fresh = run("solve", QUICKSTART, "--budget-frac", "0.25", "--db", db, "--no-cache")
    assert fresh.exit_code == 0 and "reused" not in fresh.output and "status: certified" in fresh.output
    with Store(db) as st:
        assert st.count("solve") == 1


def test_default_store_comes_from_memaudit_db(tmp_path, monkeypatch):
    db = tmp_path / "env.sqlite"
    monkeypatch.setenv("MEMAUDIT_DB", str(db))
    assert run("solve", QUICKSTART, "--budget", "30").exit_code == 0
    assert "reused" in run("solve", QUICKSTART, "--budget", "30").output
    with Store(db) as st:
        assert st.count("solve") == 1


def test_compare_and_baseline_reuse_opt_and_store_scores(tmp_path):
    db = tmp_path / "r.sqlite"
    pkg = tmp_path / "q.json"
    shutil.copyfile(QUICKSTART, pkg)
    before = pkg.read_bytes()
    cold = run("compare", pkg, "--budget-frac", "0.25,0.5", "--method", "density,gvt", "--db", db, "--json")
    assert cold.exit_code == 0 and "reused" not in cold.output
    warm = run("compare", pkg, "--budget-frac", "0.25,0.5", "--method", "density,gvt", "--db", db, "--json", "-v")
    assert warm.exit_code == 0 and warm.stderr.count("reused from the results store") == 2
    strip = lambda rows: [{k: v for k, v in r.items() if k != "wall_time"} for r in rows]  # noqa: E731
    out = lambda r: json.loads(r.stdout)  # noqa: E731
    assert strip(out(cold)) == strip(out(warm))
    base = run("baseline", pkg, "--budget-frac", "0.25", "--method", "density", "--db", db)
    assert base.exit_code == 0 and "reused from the results store" in base.output
    with Store(db) as st:
        assert st.count("solve") == 2 and st.count("score") == 4
    assert pkg.read_bytes() == before


def test_unusable_store_is_a_one_line_error(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"not a database" * 200)
    r = run("solve", QUICKSTART, "--budget", "30", "--db", bad)
    assert r.exit_code == 1 and r.output.startswith(f"error: {bad}: not a memaudit results store")


def test_unusable_default_store_only_warns(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("MEMAUDIT_DB", str(blocker / "sub" / "results.sqlite"))  # its folder cannot be made
    r = run("solve", QUICKSTART, "--budget", "30")
    assert r.exit_code == 0 and "warning: results store unavailable, nothing is cached" in r.output
    assert "status: certified" in r.output
