"""``memaudit.results.load`` and its pivots, checked against the rows read straight from SQLite."""

from __future__ import annotations

import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import memaudit.results as mr
from memaudit.errors import MemauditError
from memaudit.results.api import write_rows
from memaudit.results.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [ROOT / "packages_data" / "small" / "small-s2.json", ROOT / "packages_data" / "validity" / "validity-s1.json"]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "r.sqlite"
    assert not run_sweep(PACKAGES, [0.1, 0.5], ["density", "random", "kind:update"], db=path, workers=1,
                         progress=False).failed
    return path


def _sql(db, query):
    conn = sqlite3.connect(db)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def test_load_one_row_per_result_with_settings_and_kinds_as_columns(db):
    df = mr.load(db)
    assert len(df) == _sql(db, "SELECT COUNT(*) FROM results")[0][0] == 2 * 2 * 4
    assert set(df["kind"]) == {"solve", "score"}
    rnd = df[df["method"] == "random"]
    assert (rnd["settings.seed"] == 0).all()
    assert {"kinds.update", "units_covered", "validity_total", "opt_certified"} <= set(df.columns)
    upd = df[df["method"] == "kind:update"]
    assert (upd.filter(like="kinds.").drop(columns="kinds.update").sum(axis=1) == 0).all()
    assert (upd["kinds.update"] > 0).all()
    assert len(mr.load(db, kind="solve")) == 4


def test_ratio_table_and_intervals_match_sqlite(db):
    want = defaultdict(list)
    for m, f, r in _sql(db, "SELECT method, budget_frac, ratio FROM results WHERE kind = 'score'"):
        want[m, round(f, 9)].append(r)
    t = mr.ratio_table(mr.load(db))
    assert sorted(t.index) == ["density", "kind:update", "random"]
    for (m, f), rs in want.items():
        col = next(c for c in t.columns if round(c, 9) == f)
        assert t.loc[m, col] == pytest.approx(np.mean(rs), rel=1e-12)
    iv = mr.ratio_intervals(mr.load(db))
    assert len(iv) == 2 * 3 * 2 and (iv["n"] == 1).all()  # one package per family
    assert (iv["lo"] == iv["mean"]).all() and (iv["min"] <= iv["mean"]).all()
    fam = mr.family_table(mr.load(db))
    assert set(fam.index.get_level_values(0)) == {"small", "validity"}


def test_kinds_and_validity_tables(db):
    df = mr.load(db)
    kt = mr.kinds_table(df)
    assert kt.loc["kind:update"].drop("update").sum() == 0
    rows = _sql(db, "SELECT method, budget_frac, payload FROM results WHERE kind = 'score'")
    import json

    got, tot = defaultdict(int), defaultdict(int)
    for m, f, p in rows:
        p = json.loads(p)
        got[m, round(f, 9)] += p["validity_covered"]
        tot[m, round(f, 9)] += p["validity_total"]
    vt = mr.validity_table(df)
    for (m, f), n in tot.items():
        if n:
            col = next(c for c in vt.columns if round(c, 9) == f)
            assert vt.loc[m, col] == pytest.approx(got[m, f] / n)


def test_write_rows_says_what_to_install_without_pyarrow(db, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(MemauditError, match=r"writing Parquet needs pyarrow: pip install 'memaudit\[parquet\]'"):
        write_rows(mr.load(db), tmp_path / "rows.parquet")
    assert not (tmp_path / "rows.parquet").exists()
