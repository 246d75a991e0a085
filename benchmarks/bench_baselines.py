"""Baseline speed: every registered baseline (offline and online) on the largest shipped package and on large
seeded random problems, medians of repeated runs; optionally beside an older copy of the solvers package.

Run:  .venv/bin/python benchmarks/bench_baselines.py [--sizes 2000,10000] [--fracs 0.05,0.2] [--repeats 5]
      [--before DIR]   # DIR holds a package folder ``memaudit_solvers_before`` (e.g. ``git archive`` of an
                       # older solvers/ renamed): each run then times both, alternating, in this process

Each timed run gets a fresh copy of the problem (empty per-problem cache), so what a method derives once
(standalone values, group tables) is part of its time.  Medians of CPU time (process_time: steadier than wall
time on a shared machine) and of wall time; the two implementations alternate run by run.  Prints a markdown
table; timings only, no asserts.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memaudit_solvers.problem import Problem  # noqa: E402
from memaudit_solvers.random_problems import random_problem  # noqa: E402

METHODS = ("density", "density-global", "greedy", "gvt", "gvt-geometric", "gvt-upgrade", "fact-only", "summary-only",
           "recency-raw", "random", "fifo", "recency", "kind:fact")


def fresh(p: Problem) -> Problem:
    """The same arrays with an empty cache."""
    return Problem(p.costs, p.groups, p.coverage, p.weights, p.h_slopes, p.h_intercepts, p.n_groups, p.kinds,
                   p.cost_unit)


def problems(sizes):
    from memaudit.package import compile_package, load_package
    pkg = ROOT / "packages_data" / "natural" / "natural-s42.json"
    yield "natural-s42", compile_package(load_package(pkg)).problem
    for n in sizes:
        yield f"random-{n}", random_problem(n, seed=1)


def median_times(impls, name, p, budget, repeats):
    """Per implementation: median CPU seconds, median wall seconds and the value, the implementations alternating."""
    cpu: dict = {k: [] for k in impls}
    wall: dict = {k: [] for k in impls}
    value = {}
    for _ in range(repeats):
        for k, get_method in impls.items():
            q = fresh(p)
            c, t = time.process_time(), time.perf_counter()
            r = get_method(name)(q, budget)
            cpu[k].append(time.process_time() - c)
            wall[k].append(time.perf_counter() - t)
            value[k] = r.value
    return {k: (statistics.median(cpu[k]), statistics.median(wall[k]), value[k]) for k in impls}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,10000")
    ap.add_argument("--fracs", default="0.05,0.2")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--before", default=None)
    args = ap.parse_args(argv)
    from memaudit_solvers.registry import get_method
    impls = {"now": get_method}
    if args.before:
        sys.path.insert(0, args.before)
        impls = {"before": importlib.import_module("memaudit_solvers_before.registry").get_method, **impls}
    labels = list(impls)
    head = " | ".join(f"{k} cpu s | {k} wall s" for k in labels)
    two = len(labels) == 2
    print(f"| problem | frac | method | {head} |" + (" cpu now/before | same value |" if two else ""))
    print("|---" * (3 + 2 * len(labels) + (2 if two else 0)) + "|")
    for pname, p in problems([int(s) for s in args.sizes.split(",") if s]):
        for frac in [float(f) for f in args.fracs.split(",")]:
            budget = frac * p.stream_cost()
            for m in args.methods.split(","):
                got = median_times(impls, m, p, budget, args.repeats)
                cells = " | ".join(f"{got[k][0]:.4f} | {got[k][1]:.4f}" for k in labels)
                extra = ""
                if two:
                    (cb, _, vb), (cn, _, vn) = got["before"], got["now"]
                    extra = f" {cn / cb:.2f} | {vb == vn} |"
                print(f"| {pname} | {frac} | {m} | {cells} |{extra}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
