"""Certification at scale: bnb, then each MILP back-end cold and warm-started from bnb's store, side by side.

    .venv/bin/python scripts/certify_scale.py --n 10000 --fracs 0.05,0.1,0.25 --time-limit 60 \\
        --configs highs+h,highs,scip+h,cbc+h,cpsat1+h [--restate 0.8] [--out runs.json]

One JSON line per run (seconds, status, value, bound).  ``+h`` hands bnb's store to the back-end as a
MIP start (``hint``); ``cpsatK`` runs CP-SAT with K workers; ``lattice+h`` is the lattice certificate of that store.  Budgets are fractions of the stream cost
of ``random_problem(n, seed)``.  The numbers in docs/backends.md come from this script.
"""

from __future__ import annotations

import argparse
import json
import time

from memaudit_solvers.bnb import branch_and_bound
from memaudit_solvers.certify import run_rescaled
from memaudit_solvers.registry import get_method
from memaudit_solvers.random_problems import random_problem

CONFIGS = {"highs": ("milp-highs", {}), "scip": ("milp-scip", {}), "cbc": ("milp-cbc", {}),
           "cpsat1": ("cpsat", {"threads": 1}), "cpsat2": ("cpsat", {"threads": 2}), "cpsat8": ("cpsat", {"threads": 8}),
           "lattice": ("lattice", {})}   # the lattice certificate: only with +h (it proves bnb's store)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--fracs", default="0.1")
    ap.add_argument("--restate", type=float, default=None, help="random_problem's restate (default its own, 0.15)")
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--configs", default="highs+h,highs,scip+h,cbc+h")
    ap.add_argument("--out", default=None, help="also write every run to this JSON file")
    args = ap.parse_args(argv)
    rows = []

    def emit(row):
        rows.append(row)
        print(json.dumps(row), flush=True)

    for seed in map(int, args.seeds.split(",")):
        p = random_problem(args.n, seed, **({} if args.restate is None else {"restate": args.restate}))
        for frac in map(float, args.fracs.split(",")):
            budget = frac * p.stream_cost()
            base = dict(n=args.n, seed=seed, restate=args.restate, frac=frac)
            t = time.perf_counter()
            r = run_rescaled(branch_and_bound, p, budget, time_limit=args.time_limit)
            emit(dict(base, config="bnb", seconds=time.perf_counter() - t, status=r.status, value=r.value, bound=r.bound))
            for config in args.configs.split(","):
                name, settings = CONFIGS[config.removesuffix("+h")]
                hint = r.chosen if config.endswith("+h") else None
                t = time.perf_counter()
                b = run_rescaled(get_method(name), p, budget, time_limit=args.time_limit, hint=hint, **settings)
                emit(dict(base, config=config, seconds=time.perf_counter() - t, status=b.status, value=b.value,
                          bound=b.bound, agrees=abs(b.value - r.value) <= 1e-6 * abs(r.value), message=b.message))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
