"""Write ``random_problem(n, seed)`` as a MEMAUDIT package, to time ``memaudit solve`` end to end at scale.

    .venv/bin/python scripts/random_package.py 10000 0 /tmp/random-10000.json [--restate 0.8]
    .venv/bin/memaudit solve /tmp/random-10000.json --budget-frac 0.1 --no-cache

Costs are the problem's own (``cost_source: given``, cost model words) and texts are short ids;
``h = min(1, z)`` as in :func:`memaudit_solvers.random_problems.random_problem`.  The script checks
that the package compiles back to the same problem (costs, groups, coverage, weights, same order).
"""

from __future__ import annotations

import argparse

import numpy as np
import scipy.sparse as sp

from memaudit.package import compile_package, package_from_dict, save_package
from memaudit_solvers.random_problems import random_problem


def problem_package(problem, package_id: str, meta: dict) -> dict:
    """The package dict of a :class:`memaudit_solvers.Problem` with the default h (min1)."""
    cov = sp.csr_array(problem.coverage)
    kinds = problem.kinds if problem.kinds is not None else ["fact"] * problem.n_candidates
    candidates = []
    for i in range(problem.n_candidates):
        s, e = cov.indptr[i], cov.indptr[i + 1]
        candidates.append({"id": f"c{i}", "experience": f"e{int(problem.groups[i])}", "kind": str(kinds[i]),
                           "text": f"c{i}", "cost": float(problem.costs[i]),
                           "coverage": {f"u{int(r)}": float(a) for r, a in zip(cov.indices[s:e], cov.data[s:e])}})
    return {"format": "memaudit-package/1", "id": package_id, "cost_model": "words", "cost_source": "given",
            "experiences": [{"id": f"e{g}", "text": f"experience {g}"} for g in range(problem.n_groups)],
            "units": [{"id": f"u{r}", "kind": "current", "weight": float(w)} for r, w in enumerate(problem.weights)],
            "candidates": candidates, "meta": meta}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int, help="experiences")
    ap.add_argument("seed", type=int)
    ap.add_argument("output", help="package file to write")
    ap.add_argument("--restate", type=float, default=0.15, help="random_problem's restate (default 0.15)")
    args = ap.parse_args(argv)
    p = random_problem(args.n, args.seed, restate=args.restate)
    doc = problem_package(p, f"random-n{args.n}-s{args.seed}-r{args.restate:g}",
                          {"generator": "random_problem", "seed": args.seed, "restate": args.restate})
    pkg = package_from_dict(doc)
    q = compile_package(pkg).problem
    same = (np.array_equal(p.costs, q.costs) and np.array_equal(p.groups, q.groups)
            and np.array_equal(p.weights, q.weights) and (sp.csr_array(p.coverage) != q.coverage).nnz == 0)
    if not same:
        raise SystemExit("error: the package does not compile back to the same problem")
    save_package(pkg, args.output)


if __name__ == "__main__":
    main()
