"""The results store: schema and migration, write rules, real concurrent writers, and when a cached solve is reused."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from memaudit.package import load_package
from memaudit.results import cache as cache_mod
from memaudit.results.cache import ResultsCache, cached_solve, package_digest, solve_key
from memaudit.results.store import SCHEMA_VERSION, Store, StoreError, row_key
from memaudit.solve import solve_package

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "packages_data" / "examples" / "quickstart.json"
SMALL0 = ROOT / "packages_data" / "small" / "small-s0.json"


def _row(key: str, **kw) -> dict:
    base = dict(key=key, kind="score", package_sha256="p" * 64, budget=1.0, method="density", settings={},
                memaudit_version="0.1.0", code_version="c", backend_versions={}, status="scored", value=1.0)
    return {**base, **kw}


def test_new_store_is_wal_and_current_schema(tmp_path):
    with Store(tmp_path / "sub" / "r.sqlite") as st:
        assert st.schema_version() == SCHEMA_VERSION
        assert st._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert st.count() == 0 and st.integrity_check() == "ok"


def test_schema_1_file_is_migrated_and_keeps_its_rows(tmp_path):
    path = tmp_path / "old.sqlite"
    old = Store(path, _target_version=1)
    assert old.schema_version() == 1
    cols = [r[1] for r in old._conn.execute("PRAGMA table_info(results)")]
    assert "host" not in cols
    old._conn.execute("INSERT INTO results (key, kind, package_sha256, settings, memaudit_version, code_version, "
                      "backend_versions, status, value, created) VALUES ('k1', 'score', 'p', '{}', '0.0.1', 'c', '{}', "
                      "'scored', 4.5, 0)")
    old.close()
    with Store(path) as st:
        assert st.schema_version() == SCHEMA_VERSION
        assert "host" in [r[1] for r in st._conn.execute("PRAGMA table_info(results)")]
        row = st.get("k1")
        assert row["value"] == 4.5 and row["memaudit_version"] == "0.0.1" and row["host"] is None


def test_newer_schema_and_foreign_files_are_refused(tmp_path):
    path = tmp_path / "future.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match=r"future.sqlite: results store schema 3 was written by a newer memaudit"):
        Store(path)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match=r"junk.sqlite: not a memaudit results store"):
        Store(junk)
    assert junk.read_bytes() == b"this is not sqlite at all" * 100


def test_a_reusable_row_is_kept_and_a_failed_one_replaced(tmp_path):
    with Store(tmp_path / "r.sqlite") as st:
        assert st.put([_row("a", reusable=True, value=2.0)]) == 1
        assert st.put([_row("a", reusable=True, value=99.0)]) == 0
        assert st.put([_row("a", status="error", error="boom")], replace=True) == 0
        assert st.get("a")["value"] == 2.0
        st.put([_row("b", status="error", error="boom")])
        st.put([_row("b", reusable=True, value=3.0)])
        assert st.get("b")["value"] == 3.0 and st.get("b")["status"] == "scored"
        assert st.put([_row("a", reusable=True, value=5.0)], replace=True) == 1
        assert st.get("a")["value"] == 5.0
        assert st.count() == 2


def test_row_key_covers_every_identity_field():
    base = dict(kind="solve", package_sha256="ab", budget=3.0, method="bnb", backend="milp-highs", settings={},
                memaudit_version="0.1.0", code_version="x", backend_versions={"milp-highs": "highspy 1"})
    k = row_key(**base)
    for field, other in [("package_sha256", "ac"), ("budget", 3.0000001), ("method", "milp-cbc"), ("backend", None),
                         ("settings", {"time_limit": 1}), ("memaudit_version", "0.2.0"), ("code_version", "y"),
                         ("backend_versions", {"milp-highs": "highspy 2"}), ("kind", "score")]:
        assert row_key(**dict(base, **{field: other})) != k, field


def _writer(path: str, worker: int, n: int, shared: int) -> None:
    st = Store(path)
    for i in range(n):
        key = f"shared-{i}" if i < shared else f"w{worker}-{i}"
        st.put([_row(key, value=float(i), reusable=True)])
    st.close()


def test_concurrent_writer_processes_lose_nothing(tmp_path):
    path = str(tmp_path / "r.sqlite")
    Store(path).close()
    ctx = multiprocessing.get_context("spawn")
    n, shared, n_proc = 60, 10, 4
    procs = [ctx.Process(target=_writer, args=(path, w, n, shared)) for w in range(n_proc)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with Store(path) as st:
        assert st.integrity_check() == "ok"
        keys = [r["key"] for r in st.rows()]
        assert len(keys) == len(set(keys)) == shared + n_proc * (n - shared)
        assert {f"w{w}-{i}" for w in range(n_proc) for i in range(shared, n)} <= set(keys)


# -- cached solves ---------------------------------------------------------------------------

def test_cached_solve_reuses_a_certified_opt_and_no_cache_resolves(tmp_path):
    pkg = load_package(QUICKSTART)
    db = tmp_path / "r.sqlite"
    first, reused = cached_solve(pkg, budget=30, db=db, package_path=QUICKSTART)
    assert not reused and first.certified
    again, reused = cached_solve(pkg, budget=30, db=db)
    fresh = solve_package(pkg, budget=30)
    assert reused and again.certified and again.value == fresh.value
    assert list(again.result.chosen) == list(fresh.result.chosen)
    with Store(db) as st:
        (row,) = st.rows("solve")
        assert row["certified"] and row["certificate"]["certified"]
        assert row["certificate"]["package"]["path"] == str(QUICKSTART)
    _, reused = cached_solve(pkg, budget=30, db=db, use_cache=False)
    assert not reused
    _, reused = cached_solve(pkg, budget=31, db=db)
    assert not reused
    with Store(db) as st:
        assert [r["budget"] for r in st.rows("solve")] == [30.0, 31.0]


def test_a_row_of_another_memaudit_or_backend_version_is_not_reused(tmp_path, monkeypatch):
    pkg = load_package(QUICKSTART)
    db = tmp_path / "r.sqlite"
    monkeypatch.setattr(cache_mod, "__version__", "0.0.9")
    _, reused = cached_solve(pkg, budget=30, db=db)
    assert not reused
    monkeypatch.undo()
    _, reused = cached_solve(pkg, budget=30, db=db)
    assert not reused, "a certified row written by memaudit 0.0.9 was reused by this version"
    real = cache_mod.versions_of
    monkeypatch.setattr(cache_mod, "versions_of", lambda *n: {k: v + " (other build)" for k, v in real(*n).items()})
    _, reused = cached_solve(pkg, budget=30, db=db)
    assert not reused, "a row of another highspy version was reused"
    monkeypatch.setattr(cache_mod, "code_version", lambda: "edited-source")
    _, reused = cached_solve(pkg, budget=30, db=db)
    assert not reused, "a row of other solver source was reused"
    with Store(db) as st:
        assert st.count("solve") == 4
        assert {r["memaudit_version"] for r in st.rows()} == {"0.0.9", "0.1.0"}


def test_a_tampered_row_is_not_reused(tmp_path):
    pkg = load_package(SMALL0)
    db = tmp_path / "r.sqlite"
    report, _ = cached_solve(pkg, budget=100, db=db)
    key, _ = solve_key(package_digest(pkg), 100, "bnb", "milp-highs", {"time_limit": None, "rtol": 1e-6})
    with Store(db) as st:
        row = st.get(key)
        assert row is not None
        # claim a better value than the stored stores are worth
        row["payload"]["results"][0]["value"] += 1.0
        row["payload"]["results"][1]["value"] += 1.0
        st.put([row], replace=True)
    again, reused = cached_solve(pkg, budget=100, db=db)
    assert not reused and again.value == report.value
    with Store(db) as st:  # the fresh, correct solve replaced the tampered row
        assert st.get(key)["payload"]["results"][0]["value"] == report.value


def test_results_cache_in_score_methods_and_compare(tmp_path):
    from memaudit.baselines import compare, score_methods

    pkg = load_package(SMALL0)
    db = tmp_path / "r.sqlite"
    plain = compare(pkg, [0.1, 0.25], methods=["density", "gvt"])
    cache = ResultsCache(db, package_path=SMALL0)
    cold = compare(pkg, [0.1, 0.25], methods=["density", "gvt"], cache=cache)
    assert cache.reused == [] and cold == [dict(r, wall_time=c["wall_time"]) for r, c in zip(plain, cold)]
    warm_cache = ResultsCache(db)
    warm = compare(pkg, [0.1, 0.25], methods=["density", "gvt"], cache=warm_cache)
    assert len(warm_cache.reused) == 2
    assert [(r["method"], r["value"], r["ratio"]) for r in warm] == [(r["method"], r["value"], r["ratio"]) for r in plain]
    with Store(db) as st:
        assert st.count("solve") == 2 and st.count("score") == 4
        scored = {(r["method"], r["budget_frac"]): r for r in st.rows("score")}
    want = {(r["method"], r["budget_frac"]): r for r in plain if r["method"] != "OPT"}
    for k, r in want.items():
        assert scored[k]["value"] == r["value"] and scored[k]["ratio"] == r["ratio"] and scored[k]["reusable"]
        assert scored[k]["payload"]["validity_covered"] == r["validity_covered"]
    rep = score_methods(pkg, budget_frac=0.1, methods=["random"], settings={"random": {"seed": 3}},
                        cache=ResultsCache(db))
    assert rep.opt_certified
