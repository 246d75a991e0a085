"""Randomized shapes the grid does not hold: bnb against HiGHS (brute force on the tiny ones), side by side.

Run:  .venv/bin/python benchmarks/bench_shapes.py [--kinds summary,validity,coupled,tiny] [--seconds 300]
      [--seed 1] [--time-limit 60] [--scale 1] [--json PATH]

Each problem is drawn from its own seeded random generator, so a run is reproducible from ``--seed`` (how
many problems fit in ``--seconds`` depends on the machine). Kinds:

- ``summary``: ``summary_problem(n, s, window, restate, coverage_decimals)``, n 20-400, windows 2-7, 0-90 %
  restated, one to three coverage decimals (the shapes bench_exact.py's two summary families fix);
- ``validity``: the ``validity`` generator with random settings (entities, attributes, update counts,
  restatements, deletions, details, queries, chatter), one to three streams side by side;
- ``coupled``: ``random_problem(n, s, restate, coverage_values)``, n 50-1,500, with min1 or a pwl h;
- ``tiny``: 3-8 experiences of the summary and coupled kinds, checked against brute force.

``--scale k`` multiplies the sizes of the first three kinds (experiences; streams side by side for
``validity``) by ``k`` and leaves the draws otherwise the same: ``--scale 5`` draws summary problems of
100-2,000 experiences.

Budgets are 3, 5, 10, 25 or 50 % of the stream cost. Every problem prints one line; a line says MISMATCH
when bnb's optimum differs from the reference's proven one, SLOW when bnb did not prove its optimum or took
more than twice HiGHS's time and over 0.3 s. The summary gives, per kind, the median and total of bnb /
HiGHS, how many problems bnb took longer on, and bnb's and HiGHS's time-outs. Timings only, no asserts;
the exactness checks that gate the project are in tests/.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_families import side_by_side, with_pwl  # noqa: E402
from memaudit_solvers.bnb import branch_and_bound  # noqa: E402
from memaudit_solvers.bruteforce import brute_force  # noqa: E402
from memaudit_solvers.milp import milp_highs  # noqa: E402
from memaudit_solvers.random_problems import random_problem, summary_problem  # noqa: E402

KINDS = ("summary", "validity", "coupled", "tiny")
FRACS = (0.03, 0.05, 0.1, 0.25, 0.5)


def draw(kind: str, rng: np.random.Generator, scale: float = 1.0):
    """(label, problem) of one random problem of ``kind``, its size times ``scale`` (not for ``tiny``)."""
    seed = int(rng.integers(10**6))
    sized = lambda n: max(1, round(n * scale))  # noqa: E731
    if kind == "summary" or (kind == "tiny" and rng.random() < 0.5):
        n = int(rng.integers(3, 9)) if kind == "tiny" else sized(int(rng.integers(20, 401)))
        w, rs, cd = int(rng.integers(2, 8)), round(float(rng.uniform(0, 0.9)), 4), int(rng.integers(1, 4))
        return (f"summary_problem({n}, {seed}, window={w}, restate={rs}, coverage_decimals={cd})",
                summary_problem(n, seed, window=w, restate=rs, coverage_decimals=cd))
    if kind in ("coupled", "tiny"):
        n = int(rng.integers(3, 9)) if kind == "tiny" else sized(int(rng.integers(50, 1501)))
        rs = round(float(rng.uniform(0, 0.95)), 4)
        cv = tuple(float(v) for v in rng.choice([0.25, 0.5, 0.75, 1.0, 1.5], size=2, replace=False))
        p = random_problem(n, seed, restate=rs, coverage_values=cv)
        pwl = bool(rng.random() < 0.5)
        return (f"random_problem({n}, {seed}, restate={rs}, coverage_values={cv}){' with pwl h' if pwl else ''}",
                with_pwl(p) if pwl else p)
    if kind == "validity":
        from memaudit.generators import generate
        from memaudit.package import compile_package

        lo = int(rng.integers(0, 10))
        settings = dict(entities=int(rng.integers(1, 9)), attributes=int(rng.integers(1, 9)), min_updates=lo,
                        max_updates=int(rng.integers(lo, 10)), restate_prob=float(rng.choice([0, 0.2, 0.5, 0.9])),
                        deletions=int(rng.integers(0, 5)), details=int(rng.integers(0, 9)),
                        validity_prob=float(rng.choice([0.3, 1.0])), interval_prob=float(rng.choice([0, 0.75, 1.0])),
                        chatter=int(rng.integers(0, 20)))
        streams = sized(int(rng.choice([1, 1, 2, 3])))
        problems = [compile_package(generate("validity", seed + i, **settings)).problem for i in range(streams)]
        args = ", ".join(f"{k}={v}" for k, v in settings.items())
        return (f"{streams} x validity(seed={seed}{'..' + str(seed + streams - 1) if streams > 1 else ''}, {args})",
                problems[0] if streams == 1 else side_by_side(problems))
    raise ValueError(f"unknown kind {kind!r}; known: {', '.join(KINDS)}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kinds", default="summary,validity,coupled,tiny",
                    help=f"comma-separated, drawn in turn (known: {', '.join(KINDS)}; default all)")
    ap.add_argument("--seconds", type=float, default=300.0, help="stop drawing after this long (default 300)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the draws (default 1)")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per solve, bnb and HiGHS (default 60)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply the sizes of the summary, coupled and validity kinds by this (default 1)")
    ap.add_argument("--json", metavar="PATH", help="also write every run as JSON here")
    args = ap.parse_args(argv)
    if not 0 < args.scale < 1000:
        ap.error(f"--scale must be above 0 and below 1000; got {args.scale}")
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        ap.error(f"unknown kind(s) {', '.join(unknown)}; known: {', '.join(KINDS)}")
    rng = np.random.default_rng(args.seed)
    # warm-up (imports, numba's cached programme) out of the timed runs
    warm = summary_problem(50, 1, restate=0.8)
    branch_and_bound(warm, 0.1 * warm.stream_cost())
    runs, end, i = [], time.perf_counter() + args.seconds, 0
    while time.perf_counter() < end:
        kind = kinds[i % len(kinds)]
        i += 1
        label, p = draw(kind, rng, args.scale)
        frac = float(rng.choice(FRACS))
        budget = frac * p.stream_cost()
        t = time.perf_counter()
        r = branch_and_bound(p, budget, time_limit=args.time_limit)
        tb = time.perf_counter() - t
        t = time.perf_counter()
        h = milp_highs(p, budget, time_limit=args.time_limit)
        th = time.perf_counter() - t
        ref = brute_force(p, budget).value if kind == "tiny" else (h.value if h.status == "optimal" else None)
        mismatch = ref is not None and r.status == "optimal" and abs(r.value - ref) > 1e-6 * max(1.0, abs(ref))
        slow = r.status != "optimal" or (tb > 2 * th and tb > 0.3)
        runs.append(dict(kind=kind, problem=label, frac=frac, bnb_seconds=tb, bnb_status=r.status, bnb_value=r.value,
                         highs_seconds=th, highs_status=h.status, highs_value=h.value, reference=ref,
                         mismatch=mismatch, slow=slow))
        flag = " MISMATCH" if mismatch else " SLOW" if slow else ""
        print(f"{label} at {frac:.0%}: bnb {tb:.3f}s {r.status}, HiGHS {th:.3f}s {h.status}{flag}", flush=True)
    print(f"\n{len(runs)} problems in {args.seconds:.0f} s (seed {args.seed}, scale {args.scale:g}); "
          f"{sum(r['mismatch'] for r in runs)} mismatches, {sum(r['slow'] for r in runs)} slow\n")
    print("| kind | problems | median bnb / HiGHS | total bnb / HiGHS | bnb slower | bnb time-outs | HiGHS time-outs |")
    print("|---|---|---|---|---|---|---|")
    for kind in kinds:
        rs = [r for r in runs if r["kind"] == kind]
        if not rs:
            continue
        tb = np.array([r["bnb_seconds"] for r in rs])
        th = np.array([r["highs_seconds"] for r in rs])
        print(f"| {kind} | {len(rs)} | {np.median(tb / th):.3f} | {tb.sum() / th.sum():.3f} | {(tb > th).sum()} "
              f"| {sum(r['bnb_status'] != 'optimal' for r in rs)} | {sum(r['highs_status'] != 'optimal' for r in rs)} |")
    if args.json:
        from memaudit.fileio import atomic_write

        atomic_write(args.json, json.dumps(runs, indent=1))
    return 1 if any(r["mismatch"] for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
