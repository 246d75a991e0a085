"""Write ``random_problem(n, seed)`` as a MEMAUDIT package, to time ``memaudit solve`` end to end at scale.

    .venv/bin/python scripts/random_package.py 10000 0 /tmp/random-10000.json [--restate 0.8] [--compact]
    .venv/bin/memaudit solve /tmp/random-10000.json --budget-frac 0.1 --no-cache

Costs are the problem's own (``cost_source: given``, cost model words) and texts are short ids;
``h = min(1, z)`` as in :func:`memaudit_solvers.random_problems.random_problem` (a unit with
``h = min(cap, z)`` is written as ``{"cap": cap}``).  The script checks that the package compiles back
to the same problem (costs, groups, coverage, weights, h, same order).  ``--compact`` writes the JSON
without whitespace: at 100,000 experiences 49 MiB instead of 83, within the 64 MiB memaudit reads.
"""

from __future__ import annotations

import argparse

import numpy as np
import scipy.sparse as sp

from memaudit.package import Package, compile_package, package_from_dict, save_package
from memaudit_solvers.random_problems import random_problem

__all__ = ["problem_package", "package_of_problem", "unit_caps"]


def unit_caps(problem) -> list[float] | None:
    """Each unit's cap when every h is ``min(cap, z)`` (two pieces: slope 1 through 0, then flat at cap),
    else None (breakpoint lists are not written: their pieces would not compile back bit for bit)."""
    s, b = problem.h_slopes, problem.h_intercepts
    if s.shape[1] != 2 or not (np.all(s[:, 0] == 1.0) and np.all(s[:, 1] == 0.0) and np.all(b[:, 0] == 0.0)):
        return None
    return b[:, 1].tolist()


def problem_package(problem, package_id: str, meta: dict) -> dict:
    """The package dict of a :class:`memaudit_solvers.Problem` whose h are all ``min(cap, z)`` (see
    :func:`unit_caps`); raises ValueError for another h."""
    caps = unit_caps(problem)
    if caps is None:
        raise ValueError("only problems whose every h is min(cap, z) are written as packages here")
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
            "units": [{"id": f"u{r}", "kind": "current", "weight": float(w), **({} if cap == 1.0 else {"h": {"cap": cap}})}
                      for r, (w, cap) in enumerate(zip(problem.weights, caps))],
            "candidates": candidates, "meta": meta}


def package_of_problem(problem, package_id: str, meta: dict) -> Package:
    """:func:`problem_package`, validated, and checked to compile back to ``problem`` exactly (ValueError if not)."""
    pkg = package_from_dict(problem_package(problem, package_id, meta))
    q = compile_package(pkg).problem
    same = (np.array_equal(problem.costs, q.costs) and np.array_equal(problem.groups, q.groups)
            and np.array_equal(problem.weights, q.weights) and (sp.csr_array(problem.coverage) != q.coverage).nnz == 0
            and np.array_equal(problem.h_slopes, q.h_slopes) and np.array_equal(problem.h_intercepts, q.h_intercepts))
    if not same:
        raise ValueError("the package does not compile back to the same problem")
    return pkg


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int, help="experiences")
    ap.add_argument("seed", type=int)
    ap.add_argument("output", help="package file to write")
    ap.add_argument("--restate", type=float, default=0.15, help="random_problem's restate (default 0.15)")
    ap.add_argument("--compact", action="store_true", help="JSON without whitespace (needed from ~75,000 experiences)")
    args = ap.parse_args(argv)
    p = random_problem(args.n, args.seed, restate=args.restate)
    try:
        pkg = package_of_problem(p, f"random-n{args.n}-s{args.seed}-r{args.restate:g}",
                                 {"generator": "random_problem", "seed": args.seed, "restate": args.restate})
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    save_package(pkg, args.output, indent=None if args.compact else 2)


if __name__ == "__main__":
    main()
