"""``memaudit sweep``: the grid in-process and on a real dask.distributed LocalCluster (2 worker processes),
resumable, with crashing methods, task time-outs and a worker killed mid-run."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

import results_faulty_methods as faulty
from memaudit.baselines import score_methods
from memaudit.cli import main
from memaudit.package import load_package
from memaudit.results.store import Store
from memaudit.results.sweep import SweepError, run_sweep

ROOT = Path(__file__).resolve().parents[1]
SMALL = [ROOT / "packages_data" / "small" / f"small-s{i}.json" for i in range(3)]
FRACS = [0.1, 0.3]
METHODS = ["density", "gvt", "kind:fact"]


@pytest.fixture
def faulty_methods():
    faulty.install()
    yield
    faulty.uninstall()


def _truth(paths, fracs, methods):
    """Every cell computed directly (no store, no sweep): ``{(package id, frac, method): value}``."""
    out = {}
    for p in paths:
        pkg = load_package(p)
        for f in fracs:
            rep = score_methods(pkg, budget_frac=f, methods=methods)
            assert rep.opt_certified
            out[pkg.id, f, "OPT"] = rep.opt
            for s in rep.scores:
                out[pkg.id, f, s.method] = s.value
    return out


def _stored(db):
    """``{(package id, frac, method): value}`` from the store, and the list of keys (to count duplicates)."""
    with Store(db) as st:
        rows = st.rows()
    got = {}
    for r in rows:
        got[r["package_id"], round(r["budget_frac"], 12), "OPT" if r["kind"] == "solve" else r["method"]] = r["value"]
    return got, [r["key"] for r in rows], rows


def _round(d):
    return {(a, round(b, 12), c): v for (a, b, c), v in d.items()}


def test_in_process_sweep_matches_direct_runs_and_resumes(tmp_path):
    db = tmp_path / "r.sqlite"
    rep = run_sweep(SMALL[:2], FRACS, METHODS, db=db, workers=1, progress=False)
    n = 2 * len(FRACS) * (1 + len(METHODS))
    assert rep.mode == "in-process" and len(rep.cells) == n and rep.computed == n and not rep.failed
    got, keys, rows = _stored(db)
    assert len(keys) == len(set(keys)) == n
    assert got == _round(_truth(SMALL[:2], FRACS, METHODS))
    assert all(r["certified"] for r in rows if r["kind"] == "solve")
    assert all(r["certificate"]["certified"] for r in rows if r["kind"] == "solve")
    again = run_sweep(SMALL[:2], FRACS, METHODS, db=db, workers=1, progress=False)
    assert again.mode == "nothing to do" and again.reused == n and again.computed == 0
    more = run_sweep(SMALL[:2], FRACS, [*METHODS, "recency"], db=db, workers=1, progress=False)
    assert more.reused == n and more.computed == 2 * len(FRACS)


def test_crashing_method_and_task_timeout_fail_their_cells_only(tmp_path, faulty_methods):
    db = tmp_path / "r.sqlite"
    rep = run_sweep(SMALL[:1], [0.2], ["density", "crash-test"], db=db, workers=1, progress=False)
    failed = {(c.method, c.error.split(":")[0]) for c in rep.failed}
    assert failed == {("crash-test", "RuntimeError")}
    assert "simulated back-end crash" in rep.failed[0].error
    _, _, rows = _stored(db)
    bad = [r for r in rows if r["method"] == "crash-test"]
    assert len(bad) == 1 and bad[0]["status"] == "error" and not bad[0]["certified"] and bad[0]["value"] is None
    assert {r["status"] for r in rows if r["method"] != "crash-test"} == {"certified", "scored"}
    # a rerun retries only the failed cell
    again = run_sweep(SMALL[:1], [0.2], ["density", "crash-test"], db=db, workers=1, progress=False)
    assert again.reused == 2 and len(again.failed) == 1
    slow = run_sweep(SMALL[1:2], [0.2], ["density", "slow-test"], db=db, workers=1, task_timeout=1.5,
                     progress=False)
    assert [c.method for c in slow.failed] == ["slow-test"]
    assert "TimeoutError: the task did not finish within --task-timeout 1.5 s" in slow.failed[0].error
    assert not any(c.status in ("certified", "scored") for c in slow.cells if c.method == "slow-test")


def test_per_method_settings_key_and_run_their_cells(tmp_path):
    """``--methods gvt-geometric:eps=0.05,random:seed=3``: each method runs with its own settings, and the cells
    with other settings are other cells (no reuse across settings)."""
    db = tmp_path / "r.sqlite"
    pkg = load_package(SMALL[0])
    given = {"gvt-geometric": {"eps": 0.05}, "random": {"seed": 3}}
    rep = run_sweep(SMALL[:1], [0.3], ["gvt-geometric", "random"], db=db, workers=1, progress=False, settings=given)
    assert not rep.failed and rep.computed == 3
    direct = score_methods(pkg, budget_frac=0.3, methods=["gvt-geometric", "random"], settings=given)
    _, _, rows = _stored(db)
    scores = {r["method"]: r for r in rows if r["kind"] == "score"}
    assert {m: scores[m]["value"] for m in scores} == {s.method: s.value for s in direct.scores}
    assert scores["gvt-geometric"]["settings"]["eps"] == 0.05 and scores["random"]["settings"]["seed"] == 3
    other = run_sweep(SMALL[:1], [0.3], ["gvt-geometric", "random"], db=db, workers=1, progress=False,
                      settings={"gvt-geometric": {"eps": 0.2}, "random": {"seed": 3}})
    assert other.reused == 2 and other.computed == 1  # OPT and random reused; eps=0.2 is a new cell
    r = CliRunner().invoke(main, ["sweep", str(SMALL[0]), "--budget-frac", "0.3", "--methods",
                                  "gvt-geometric:eps=0.05,random:seed=3", "--db", str(db), "--workers", "1",
                                  "--no-progress"])
    assert r.exit_code == 0 and "3 reused, 0 computed" in r.output, r.output


def test_bad_per_method_settings_are_refused_before_any_work(tmp_path):
    db = tmp_path / "r.sqlite"
    r = CliRunner().invoke(main, ["sweep", str(SMALL[0]), "--methods", "gvt-geometric:eps=2", "--db", str(db),
                                  "--workers", "1"])
    assert r.exit_code == 1
    assert "error: method 'gvt-geometric': setting 'eps' must be a number in (0, 1); got '2'" in r.output
    assert not db.exists()
    with pytest.raises(SweepError, match="settings given for 'gvt', which the sweep does not run"):
        run_sweep(SMALL[:1], FRACS, ["density"], db=db, workers=1, settings={"gvt": {}})


def test_bad_sweep_arguments(tmp_path):
    with pytest.raises(SweepError, match="no package given"):
        run_sweep([], FRACS, METHODS, db=tmp_path / "r.sqlite", workers=1)
    with pytest.raises(SweepError, match="no budget fraction"):
        run_sweep(SMALL[:1], [], METHODS, db=tmp_path / "r.sqlite", workers=1)
    with pytest.raises(SweepError, match="mutually exclusive"):
        run_sweep(SMALL[:1], FRACS, METHODS, db=tmp_path / "r.sqlite", workers=2, scheduler="tcp://127.0.0.1:1")
    r = CliRunner().invoke(main, ["sweep", str(SMALL[0]), "--methods", "density,nope", "--db",
                                  str(tmp_path / "r.sqlite"), "--workers", "1"])
    assert r.exit_code == 1 and "error: unknown method 'nope'" in r.output


def test_sweep_cli_writes_csv_and_parquet_and_lists_failures(tmp_path, faulty_methods):
    db = tmp_path / "r.sqlite"
    args = ["sweep", str(SMALL[0]), "--budget-frac", "0.1,0.25", "--methods", "density,gvt", "--db", str(db),
            "--workers", "1", "--no-progress"]
    r = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "rows.csv")])
    assert r.exit_code == 0, r.output
    assert "6 cells" in r.output and "0 reused, 6 computed, 0 failed" in r.output
    import pandas as pd

    csv = pd.read_csv(tmp_path / "rows.csv")
    assert len(csv) == 6 and set(csv["kind"]) == {"solve", "score"}
    r = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "rows.parquet")])
    assert r.exit_code == 0 and "6 reused, 0 computed" in r.output
    pq = pd.read_parquet(tmp_path / "rows.parquet")
    assert sorted(pq["value"]) == sorted(csv["value"])
    r = CliRunner().invoke(main, ["sweep", str(SMALL[0]), "--budget-frac", "0.1", "--methods", "crash-test",
                                  "--db", str(db), "--workers", "1", "--no-progress"])
    assert r.exit_code == 3 and "failed: small-s0 budget 0.1 crash-test: RuntimeError: simulated back-end crash" in r.output
    r = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "rows.xlsx")])
    assert r.exit_code == 1 and "--out must end in .parquet or .csv" in r.output


# -- a real LocalCluster ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster_client():
    dask = pytest.importorskip("dask")
    from dask.distributed import Client, LocalCluster

    faulty.install()
    # a task is failed at its first dead worker (then split per method): fewer worker restarts to wait for
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
        client = Client(cluster)
        client.register_plugin(faulty.InstallFaulty())
        yield client
        client.close()
        cluster.close()
    faulty.uninstall()


@pytest.mark.slow
def test_local_cluster_sweep_survives_a_killed_worker(tmp_path, cluster_client):
    db = tmp_path / "r.sqlite"
    pids = cluster_client.run(os.getpid)
    killed = []

    def kill_one(rows):
        if not killed:
            victim = sorted(pids.values())[0]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    rep = run_sweep(SMALL, FRACS, METHODS, db=db, client=cluster_client, progress=False, on_result=kill_one)
    assert killed, "no worker was killed"
    n = len(SMALL) * len(FRACS) * (1 + len(METHODS))
    assert len(rep.cells) == n
    got, keys, rows = _stored(db)
    assert len(keys) == len(set(keys)), "a cell was written twice"
    # a task lost with the killed worker is rerun elsewhere (or, past allowed-failures, listed as failed)
    ok = {k: v for k, v in got.items() if v is not None}
    truth = _round(_truth(SMALL, FRACS, METHODS))
    assert {k: truth[k] for k in ok} == ok
    failed = [c for c in rep.failed]
    assert len(ok) + len(failed) == n
    assert all("KilledWorker" in c.error or "died" in c.error.lower() for c in failed)
    # whatever failed is redone by a rerun (through the scheduler's address, as --scheduler does): nothing is lost
    again = run_sweep(SMALL, FRACS, METHODS, db=db, scheduler=cluster_client.scheduler.address, progress=False)
    assert not again.failed and again.reused == n - len(failed)
    got, keys, _ = _stored(db)
    assert len(keys) == n and got == truth


@pytest.mark.slow
def test_local_cluster_worker_that_dies_on_a_cell_fails_only_that_cell(tmp_path, cluster_client):
    db = tmp_path / "r.sqlite"
    rep = run_sweep(SMALL[:1], [0.2], ["density", "die-test"], db=db, client=cluster_client, progress=False)
    # the task of (small-s0, 0.2) kills its worker; it is split per method, and only die-test fails
    assert [(c.package, c.method) for c in rep.failed] == [("small-s0", "die-test")]
    assert "KilledWorker" in rep.failed[0].error
    _, _, rows = _stored(db)
    by = {(r["kind"], r["method"]): r for r in rows}
    assert by["solve", "bnb"]["status"] == "certified" and by["score", "density"]["status"] == "scored"
    assert by["score", "die-test"]["status"] == "error" and not by["score", "die-test"]["certified"]
    # the cluster recovers: a later grid runs fine
    after = run_sweep(SMALL[2:3], [0.2], ["density"], db=db, client=cluster_client, progress=False)
    assert not after.failed


@pytest.mark.slow
def test_sweep_cli_on_a_local_cluster_of_two_workers(tmp_path):
    db = tmp_path / "r.sqlite"
    r = CliRunner().invoke(main, ["sweep", str(SMALL[0]), str(SMALL[1]), "--budget-frac", "0.2", "--methods",
                                  "density", "--db", str(db), "--workers", "2", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "4 cells" in r.output and "4 computed, 0 failed; dask (LocalCluster)" in r.output
    got, keys, _ = _stored(db)
    assert len(keys) == 4 and got == _round(_truth(SMALL[:2], [0.2], ["density"]))


@pytest.mark.slow
def test_unreachable_scheduler_is_a_one_line_error(tmp_path):
    r = CliRunner().invoke(main, ["sweep", str(SMALL[0]), "--budget-frac", "0.2", "--methods", "density", "--db",
                                  str(tmp_path / "r.sqlite"), "--scheduler", "tcp://127.0.0.1:9", "--no-progress"])
    assert r.exit_code == 1 and r.output.startswith("error: cannot reach the Dask scheduler at tcp://127.0.0.1:9")


def test_a_cluster_without_workers_fails_the_cells_instead_of_hanging(tmp_path, monkeypatch):
    pytest.importorskip("dask")
    from dask.distributed import Client, LocalCluster

    from memaudit.results import sweep as sweep_mod

    monkeypatch.setattr(sweep_mod, "NO_WORKER_SECONDS", 1.0)
    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster, Client(cluster) as client:
        rep = run_sweep(SMALL[:1], [0.2], ["density"], db=tmp_path / "r.sqlite", client=client, progress=False)
    assert [c.method for c in rep.failed] == ["OPT", "density"]
    assert all("no Dask worker alive for 1 s" in c.error for c in rep.failed)
