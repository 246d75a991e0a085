"""The problem families of benchmarks/bench_exact.py: seeded problems by family name, size and seed."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from memaudit_solvers.problem import Problem, breakpoint_pieces, min_cap_pieces
from memaudit_solvers.random_problems import random_problem, summary_problem

__all__ = ["FAMILIES", "QUICK_FAMILY_SIZES", "DEFAULT_SIZES", "QUICK_SIZES", "DEFAULT_FRACS", "HARD_SIZES",
           "HARD_FRACS", "make_problem", "with_h", "with_pwl", "side_by_side"]

DEFAULT_SIZES = (50, 100, 200, 400, 800, 1600)
QUICK_SIZES = (50, 100, 200)
DEFAULT_FRACS = (0.10, 0.25, 0.50)
HARD_SIZES = (200, 400, 800, 1600, 3000)
HARD_FRACS = (0.05, 0.10, 0.25)
#: the summary families' sizes: to 1,000 since bnb proves every run there (2026-12-06, with the exact one-unit cuts)
SUMMARY_SIZES = (50, 100, 200, 500, 1000)
#: the concave h of the ``restate-pwl`` family, as breakpoints (z, h(z))
PWL_BREAKPOINTS = [(1.0, 1.0), (2.0, 1.5), (3.0, 1.75)]

#: problem families: name -> (description, default sizes, default budget fractions)
FAMILIES = {
    "random": ("`random_problem(n, seed)`: 15 % restated facts, h = min(1, z)", DEFAULT_SIZES, DEFAULT_FRACS),
    "restate": ("`random_problem(n, seed, restate=0.8)`: 80 % restated facts (coupled), h = min(1, z)",
                HARD_SIZES, HARD_FRACS),
    "restate-pwl": ("`random_problem(n, seed, restate=0.8)` with a concave h through (1, 1), (2, 1.5), (3, 1.75)",
                    HARD_SIZES, HARD_FRACS),
    "restate-cap": ("`random_problem(n, seed, restate=0.8)` with h = min(2, z)", HARD_SIZES, HARD_FRACS),
    "validity": ("n streams of the `validity` generator (8 entities x 8 attributes, 9 updates each, "
                 "seeds seed*n .. seed*n+n-1) side by side, about 780 experiences per stream", (1, 3),
                 HARD_FRACS),
    "summaries": ("`summary_problem(n, seed)`: 1-3 units per experience, partial coverage (two decimals), "
                  "real weights, summaries over a window of 6 experiences (one coupled component)",
                  SUMMARY_SIZES, HARD_FRACS),
    "summaries-restate": ("`summary_problem(n, seed, restate=0.8)`: the same with 80 % of the units restated (many "
                          "groups cover each unit: symmetric, degenerate LPs)", SUMMARY_SIZES, HARD_FRACS),
}
#: the sizes of ``--quick``
QUICK_FAMILY_SIZES = {"random": QUICK_SIZES, "restate": (200,), "restate-pwl": (200,), "restate-cap": (200,),
                      "validity": (1,), "summaries": (50,), "summaries-restate": (50,)}


def with_h(p: Problem, slopes, intercepts) -> Problem:
    """``p`` with one h (pieces ``slopes``, ``intercepts``) for every unit."""
    s = np.tile(np.asarray(slopes, dtype=float), (p.n_units, 1))
    b = np.tile(np.asarray(intercepts, dtype=float), (p.n_units, 1))
    return Problem.build(p.costs, p.groups, p.coverage, p.weights, h_slopes=s, h_intercepts=b, n_groups=p.n_groups)


def side_by_side(problems) -> Problem:
    """Independent problems as one: groups and units renumbered, coverage block-diagonal."""
    k = max(p.h_slopes.shape[1] for p in problems)
    pad = lambda a: np.pad(a, ((0, 0), (0, k - a.shape[1])), mode="edge")  # noqa: E731
    g0 = np.cumsum([0] + [p.n_groups for p in problems[:-1]])
    return Problem.build(np.concatenate([p.costs for p in problems]),
                         np.concatenate([p.groups + g for p, g in zip(problems, g0)]),
                         sp.block_diag([p.coverage for p in problems], format="csr"),
                         np.concatenate([p.weights for p in problems]),
                         h_slopes=np.vstack([pad(p.h_slopes) for p in problems]),
                         h_intercepts=np.vstack([pad(p.h_intercepts) for p in problems]),
                         n_groups=int(sum(p.n_groups for p in problems)))


def validity_stream(seed: int) -> Problem:
    """One stream of the ``validity`` generator (8 entities x 8 attributes, 9 updates each), compiled."""
    from memaudit.generators import generate
    from memaudit.package import compile_package

    pkg = generate("validity", seed, entities=8, attributes=8, min_updates=9, max_updates=9)
    return compile_package(pkg).problem


def with_pwl(p: Problem) -> Problem:
    """``p`` with every h the ``restate-pwl`` family's (through :data:`PWL_BREAKPOINTS`)."""
    return with_h(p, *breakpoint_pieces(PWL_BREAKPOINTS))


def make_problem(family: str, n: int, seed: int) -> Problem:
    """The problem of ``family`` at size ``n`` (experiences; streams for ``validity``) and ``seed``."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; valid: {', '.join(FAMILIES)}")
    if family == "random":
        return random_problem(n, seed)
    if family == "summaries":
        return summary_problem(n, seed)
    if family == "summaries-restate":
        return summary_problem(n, seed, restate=0.8)
    if family == "validity":
        return side_by_side([validity_stream(seed * n + i) for i in range(n)])
    p = random_problem(n, seed, restate=0.8)
    if family == "restate-pwl":
        return with_pwl(p)
    if family == "restate-cap":
        s, b = min_cap_pieces([2.0])
        return with_h(p, s[0], b[0])
    return p
