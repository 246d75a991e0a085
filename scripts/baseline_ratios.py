"""Ratio to OPT of every baseline on seeded random package-shaped problems (the README's table).

    .venv/bin/python scripts/baseline_ratios.py [--sizes 20,50,100] [--seeds 10] [--fracs 0.1,0.25,0.5]
                                                [--budget-rule stream|paper]

OPT comes from bnb (exact); every ratio is value / OPT.  Prints mean and minimum per method and budget.
Budgets: ``stream`` (default) is f times each problem's own stream cost; ``paper`` is the MEMAUDIT
paper's rule, one budget per f for the whole run: B = max(1, round(f x M)), M the mean total candidate
cost over every problem of the run.
"""

from __future__ import annotations

import argparse

import numpy as np

from memaudit.baselines import DEFAULT_METHODS
from memaudit.reports.paper import paper_budgets
from memaudit_solvers.random_problems import random_problem
from memaudit_solvers.registry import run_method


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20,50,100", help="experiences per problem (comma-separated)")
    ap.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 per size")
    ap.add_argument("--fracs", default="0.1,0.25,0.5", help="budgets as fractions of the stream cost")
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS) + ",kind:update,kind:tombstone")
    ap.add_argument("--budget-rule", choices=("stream", "paper"), default="stream",
                    help="stream: f x each problem's stream cost; paper: max(1, round(f x mean total candidate cost))")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    fracs = [float(f) for f in args.fracs.split(",")]
    methods = args.methods.split(",")
    ratios = {(m, f): [] for m in methods for f in fracs}
    problems = [random_problem(n, seed) for n in sizes for seed in range(args.seeds)]
    fixed = dict(zip(fracs, paper_budgets(float(np.mean([p.costs.sum() for p in problems])), fracs)))
    for p in problems:
        for f in fracs:
            budget = fixed[f] if args.budget_rule == "paper" else f * p.stream_cost()
            opt = run_method("bnb", p, budget).value
            for m in methods:
                ratios[m, f].append(run_method(m, p, budget).value / opt if opt > 0 else 1.0)
    count = len(sizes) * args.seeds
    rule = ("budget f x stream cost" if args.budget_rule == "stream" else
            "paper's budget rule: " + ", ".join(f"f={f:g}: B={fixed[f]}" for f in fracs))
    print(f"random_problem(n, seed), n in {sizes}, seeds 0-{args.seeds - 1} ({count} problems), {rule}: "
          "ratio to OPT, mean / min")
    print("| method | " + " | ".join(f"{f:g}" for f in fracs) + " |")
    print("|---|" + "---|" * len(fracs))
    for m in methods:
        cells = [f"{np.mean(ratios[m, f]):.3f} / {np.min(ratios[m, f]):.3f}" for f in fracs]
        print(f"| {m} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
