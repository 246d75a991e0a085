"""Sweep benchmark: every shipped package set x 3 budgets x the default methods, cold (empty store) and warm
(everything cached), in this process and on a LocalCluster of 2 worker processes.

Run:  .venv/bin/python benchmarks/bench_sweep.py [--sets small,validity,natural] [--fracs 0.1,0.25,0.5]
      [--warm-repeats 3] [--skip-dask]

Prints one line per run and the ratios cold / warm and in-process / LocalCluster.  Timings only, no asserts.
The LocalCluster start-up (spawning the worker processes) is timed apart from the grid.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memaudit.results.store import Store  # noqa: E402
from memaudit.results.sweep import DEFAULT_SWEEP_METHODS, run_sweep  # noqa: E402


def shipped(sets) -> list[Path]:
    out = []
    for s in sets:
        manifest = json.loads((ROOT / "packages_data" / s / "manifest.json").read_text(encoding="utf-8"))
        out += [ROOT / "packages_data" / s / e["file"] for e in manifest["packages"]]
    return out


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="small,validity,natural")
    ap.add_argument("--fracs", default="0.1,0.25,0.5")
    ap.add_argument("--warm-repeats", type=int, default=3)
    ap.add_argument("--skip-dask", action="store_true")
    args = ap.parse_args(argv)
    paths = shipped(args.sets.split(","))
    fracs = [float(f) for f in args.fracs.split(",")]
    methods = list(DEFAULT_SWEEP_METHODS)
    n_cells = len(paths) * len(fracs) * (1 + len(methods))
    print(f"grid: {len(paths)} packages ({args.sets}) x {len(fracs)} budgets x (OPT + {len(methods)} methods: "
          f"{', '.join(methods)}) = {n_cells} cells")
    results = {}
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))

    def grid(label, db, **kw):
        t, rep = timed(lambda: run_sweep(paths, fracs, methods, db=db, progress=False, command="python benchmarks/bench_sweep.py", **kw))
        assert not rep.failed, [(c.package, c.method, c.error) for c in rep.failed]
        print(f"  {label:28s} {t:9.3f} s   computed {rep.computed:5d}  reused {rep.reused:5d}  ({rep.mode})")
        return t, rep

    db = tmp / "inproc.sqlite"
    results["cold in-process"], rep = grid("cold, in-process", db, workers=1)
    assert rep.computed == n_cells
    warm = [grid("warm, in-process", db, workers=1)[0] for _ in range(args.warm_repeats)]
    results["warm in-process"] = statistics.median(warm)
    with Store(db) as st:
        assert st.count() == n_cells and st.integrity_check() == "ok"

    if not args.skip_dask:
        from dask.distributed import Client, LocalCluster

        t_up, (cluster, client) = timed(lambda: (lambda c: (c, Client(c)))(
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")))
        print(f"  {'LocalCluster(2) start-up':28s} {t_up:9.3f} s")
        try:
            db2 = tmp / "dask.sqlite"
            results["cold LocalCluster(2)"], rep = grid("cold, LocalCluster(2)", db2, client=client)
            assert rep.computed == n_cells
            warm = [grid("warm, LocalCluster(2)", db2, client=client)[0] for _ in range(args.warm_repeats)]
            results["warm LocalCluster(2)"] = statistics.median(warm)
        finally:
            client.close()
            cluster.close()

    print("\nratios (medians of the warm runs):")
    c, w = results["cold in-process"], results["warm in-process"]
    print(f"  in-process:      cold / warm = {c / w:8.1f}x   ({c:.3f} s / {w:.3f} s)")
    if "cold LocalCluster(2)" in results:
        cd, wd = results["cold LocalCluster(2)"], results["warm LocalCluster(2)"]
        print(f"  LocalCluster(2): cold / warm = {cd / wd:8.1f}x   ({cd:.3f} s / {wd:.3f} s)")
        print(f"  cold:            in-process / LocalCluster(2) = {c / cd:.2f}x (above 1: the cluster is faster)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
