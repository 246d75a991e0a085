"""Time the exact branch-and-bound against every MILP back-end on seeded package-shaped problems.

Run from the repository root::

    .venv/bin/python benchmarks/bench_exact.py            # full random grid (tens of minutes)
    .venv/bin/python benchmarks/bench_exact.py --quick    # n = 50, 100, 200, one seed
    .venv/bin/python benchmarks/bench_exact.py --families all --quick      # every family, smallest size
    .venv/bin/python benchmarks/bench_exact.py --families restate,restate-pwl,restate-cap,validity
    .venv/bin/python benchmarks/bench_exact.py --n-large 10000,30000 --large-only   # scale series

The markdown table goes to stdout, one progress line per solve to stderr.  The
script reports speed, it never asserts it.  It does check correctness: every
method that proves optimality must reach the same value (1e-6 relative), no
store may beat a proven optimum and no proven bound may sit below it;
otherwise it prints DISAGREE and exits with code 1.  A method that raises is
reported with its traceback and the exit code is 2.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback

import numpy as np
import scipy.sparse as sp
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memaudit_solvers.bnb import branch_and_bound  # noqa: E402
from memaudit_solvers.certify import CERT_RTOL, compare_results  # noqa: E402
from memaudit_solvers.milp import BACKENDS  # noqa: E402
from memaudit_solvers.problem import Problem, breakpoint_pieces, min_cap_pieces  # noqa: E402
from memaudit_solvers.random_problems import random_problem  # noqa: E402
from bench_tables import budget_label, fmt_seconds, grid_table, summary_table  # noqa: E402

METHODS = {"bnb": branch_and_bound, **BACKENDS}
DEFAULT_SIZES = (50, 100, 200, 400, 800, 1600)
QUICK_SIZES = (50, 100, 200)
DEFAULT_FRACS = (0.10, 0.25, 0.50)
RTOL = CERT_RTOL  # 1e-6, the certification tolerance

#: problem families: name -> (description, default sizes, default budget fractions)
FAMILIES = {
    "random": ("`random_problem(n, seed)`: 15 % restated facts, h = min(1, z)", DEFAULT_SIZES, DEFAULT_FRACS),
    "restate": ("`random_problem(n, seed, restate=0.8)`: 80 % restated facts (coupled), h = min(1, z)",
                (200, 400, 800, 1600, 3000), (0.05, 0.10, 0.25)),
    "restate-pwl": ("`random_problem(n, seed, restate=0.8)` with a concave h through (1, 1), (2, 1.5), (3, 1.75)",
                    (200, 400, 800, 1600, 3000), (0.05, 0.10, 0.25)),
    "restate-cap": ("`random_problem(n, seed, restate=0.8)` with h = min(2, z)", (200, 400, 800, 1600, 3000),
                    (0.05, 0.10, 0.25)),
    "validity": ("n streams of the `validity` generator (8 entities x 8 attributes, 9 updates each, "
                 "seeds seed*n .. seed*n+n-1) side by side, about 770 experiences per stream", (1, 3),
                 (0.05, 0.10, 0.25)),
}
QUICK_FAMILY_SIZES = {"random": QUICK_SIZES, "restate": (200,), "restate-pwl": (200,), "restate-cap": (200,),
                      "validity": (1,)}


def with_h(p: Problem, slopes, intercepts) -> Problem:
    """``p`` with one h for every unit."""
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
    from memaudit.generators import generate
    from memaudit.package import compile_package

    pkg = generate("validity", seed, entities=8, attributes=8, min_updates=9, max_updates=9)
    return compile_package(pkg).problem


def make_problem(family: str, n: int, seed: int) -> Problem:
    if family == "random":
        return random_problem(n, seed)
    if family == "validity":
        return side_by_side([validity_stream(seed * n + i) for i in range(n)])
    p = random_problem(n, seed, restate=0.8)
    if family == "restate-pwl":
        return with_h(p, *breakpoint_pieces([(1.0, 1.0), (2.0, 1.5), (3.0, 1.75)]))
    if family == "restate-cap":
        s, b = min_cap_pieces([2.0])
        return with_h(p, s[0], b[0])
    return p


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_list(text: str, cast, what: str):
    try:
        out = [cast(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--{what} must be a comma-separated list; got {text!r}") from None
    return out


def machine_facts() -> dict:
    def version(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    facts = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "versions": {d: version(d) for d in ("numpy", "scipy", "highspy", "ortools", "pulp")},
    }
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "solvers"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        facts["git_head"] = head + (" (solvers/ modified)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        facts["git_head"] = "unknown"
    bnb_dir = ROOT / "solvers" / "bnb"
    digest = hashlib.sha256()
    for f in sorted(bnb_dir.glob("*.py")):
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    facts["bnb_sha256"] = digest.hexdigest()[:12] if bnb_dir.is_dir() else "?"
    return facts


def _nodes(stats: dict):
    """Search nodes as each method counts them (bnb nodes, HiGHS MIP nodes, CP-SAT branches)."""
    for key in ("nodes", "mip_node_count", "num_branches"):
        if stats.get(key) is not None:
            return stats[key]
    return None


def solve(name: str, problem, budget: float, time_limit: float) -> dict:
    """One timed solve; never raises (an exception becomes status 'error')."""
    fn = METHODS[name]
    t0 = time.perf_counter()
    try:
        res = fn(problem, budget, time_limit=time_limit)
    except Exception as exc:  # noqa: BLE001 - a crash is a result to report
        seconds = time.perf_counter() - t0
        tb = traceback.format_exc()
        log(f"  !! {name} raised {type(exc).__name__}: {exc}\n{tb}")
        return {"method": name, "seconds": seconds, "wall_time": None, "status": "error", "value": None,
                "bound": None, "nodes": None, "error": f"{type(exc).__name__}: {exc}", "traceback": tb}
    seconds = time.perf_counter() - t0
    return {"method": name, "seconds": seconds, "wall_time": res.wall_time, "status": res.status,
            "value": res.value, "bound": None if math.isinf(res.bound) else res.bound,
            "nodes": _nodes(res.stats), "message": res.message, "stats": res.stats, "_result": res}


def check_cell(runs: list[dict]) -> list[str]:
    """Disagreements among the runs on one problem (empty list when consistent)."""
    problems = []
    proven = [r for r in runs if r["status"] == "optimal"]
    if not proven:
        return problems
    opt = max(r["value"] for r in proven)
    tol = RTOL * max(1.0, abs(opt))
    if max(r["value"] for r in proven) - min(r["value"] for r in proven) > tol:
        problems.append("proven optima differ: " + ", ".join(f"{r['method']}={r['value']!r}" for r in proven))
    for r in runs:
        if r["status"] in ("optimal", "error", "skipped"):
            continue
        if r["value"] is not None and r["value"] > opt + tol:
            problems.append(f"{r['method']} found a store worth {r['value']!r} above the proven optimum {opt!r}")
        if r["bound"] is not None and r["bound"] < opt - tol:
            problems.append(f"{r['method']} claims bound {r['bound']!r} below the proven optimum {opt!r}")
    return problems


def warm_up(methods, time_limit: float) -> None:
    p = random_problem(20, seed=987654)
    b = 0.25 * p.stream_cost()
    for name in methods:
        t0 = time.perf_counter()
        try:
            METHODS[name](p, b, time_limit=time_limit)
            log(f"warm-up {name}: {time.perf_counter() - t0:.2f}s")
        except Exception as exc:  # noqa: BLE001
            log(f"warm-up {name} raised {type(exc).__name__}: {exc}\n{traceback.format_exc()}")


def run_grid(args, family, sizes, fracs, methods, all_runs: list, disagreements: list) -> list[dict]:
    cells = []
    total = len(sizes) * len(fracs) * len(args.seeds_list) * len(methods)
    k = 0
    for n in sizes:
        problems = {seed: make_problem(family, n, seed) for seed in args.seeds_list}
        for frac in fracs:
            by_method = {m: [] for m in methods}
            shape = []
            n_disagree = 0
            for seed, p in problems.items():
                budget = frac * p.stream_cost()
                shape.append((p.n_candidates, p.n_units))
                seed_runs = []
                for name in methods:
                    k += 1
                    base = {"family": family, "n": n, "experiences": p.n_groups, "frac": frac, "seed": seed,
                            "budget": budget, "n_candidates": p.n_candidates,
                            "n_units": p.n_units, "time_limit": args.time_limit}
                    if name == "milp-cbc" and args.cbc_max_n is not None and n > args.cbc_max_n:
                        r = {"method": name, "seconds": None, "wall_time": None, "status": "skipped", "value": None,
                             "bound": None, "nodes": None, "message": f"n > --cbc-max-n {args.cbc_max_n}"}
                        log(f"[{family} {k}/{total}] n={n} frac={frac:g} seed={seed} {name}: skipped (n > {args.cbc_max_n})")
                    else:
                        r = solve(name, p, budget, args.time_limit)
                        log(f"[{family} {k}/{total}] n={n} frac={frac:g} seed={seed} {name}: {r['seconds']:.3f}s "
                            f"{r['status']} value={r['value']} bound={r['bound']} nodes={r['nodes']}")
                    r.pop("_result", None)
                    r = {**base, **r}
                    seed_runs.append(r)
                    by_method[name].append(r)
                    all_runs.append(r)
                for msg in check_cell(seed_runs):
                    line = f"DISAGREE {family} n={n} frac={frac:g} seed={seed}: {msg}"
                    disagreements.append(line)
                    n_disagree += 1
                    log("!" * 70 + "\n" + line + "\n" + "!" * 70)
            cells.append({"family": family, "n": n, "frac": frac, "by_method": by_method, "n_disagree": n_disagree,
                          "n_candidates": statistics.median(c for c, _ in shape),
                          "n_units": statistics.median(u for _, u in shape)})
    return cells


def run_large(args, n: int, all_runs: list, disagreements: list) -> list[str]:
    frac, seed = 0.25, args.seeds_list[0]
    log(f"generating the large problem: n={n}, seed={seed}")
    t0 = time.perf_counter()
    p = random_problem(n, seed)
    gen = time.perf_counter() - t0
    budget = frac * p.stream_cost()
    base = {"n": n, "frac": frac, "seed": seed, "budget": budget, "n_candidates": p.n_candidates,
            "n_units": p.n_units, "time_limit": args.large_time_limit, "large": True}
    a = solve("bnb", p, budget, args.large_time_limit)
    log(f"large bnb: {a['seconds']:.3f}s {a['status']} value={a['value']} bound={a['bound']} nodes={a['nodes']}")
    b = solve("milp-highs", p, budget, args.large_time_limit)
    log(f"large milp-highs: {b['seconds']:.3f}s {b['status']} value={b['value']} bound={b['bound']}")
    t1 = time.perf_counter()
    if "_result" in a and "_result" in b:
        cert = compare_results(p, budget, a["_result"], b["_result"])
        certified, summary = cert.certified, cert.summary
    else:
        certified, summary = False, "NOT certified: a method raised (see the traceback on stderr)"
    compare_s = time.perf_counter() - t1
    for r in (a, b):
        r.pop("_result", None)
        all_runs.append({**base, **r})
    for msg in check_cell([a, b]):
        line = f"DISAGREE n={n} frac={frac:g} seed={seed}: {msg}"
        disagreements.append(line)
        log("!" * 70 + "\n" + line + "\n" + "!" * 70)
    total = a["seconds"] + b["seconds"] + compare_s
    under = certified and total < 60.0

    def entry(r):
        return f"{fmt_seconds(r['seconds'])} s ({r['status']})"

    lines = [f"### Large package: {n:,} experiences ({p.n_candidates:,} candidates, {p.n_units:,} units), "
             f"medium budget (25 % of stream cost = {budget:g}), seed {seed}", "",
             "| bnb alone | milp-highs | certified (bnb + milp-highs + compare) | certified under 60 s |",
             "|---|---|---|---|",
             f"| {entry(a)} | {entry(b)} | {fmt_seconds(total)} s, {'yes' if certified else 'no'} | "
             f"{'yes' if under else 'no'} |", "",
             f"{summary}. Generating the problem took {gen:.1f} s (not counted); each solver had a "
             f"{args.large_time_limit:g} s limit."]
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", type=lambda s: parse_list(s, str, "families"), default=["random"],
                    help=f"problem families, comma-separated, or 'all' (default random; known: "
                         f"{', '.join(FAMILIES)}); each has its own default sizes and budgets")
    ap.add_argument("--sizes", type=lambda s: parse_list(s, int, "sizes"), default=None,
                    help="experiences per problem (streams for 'validity'), comma-separated (default: the "
                         "family's, e.g. 50,100,200,400,800,1600 for random)")
    ap.add_argument("--fracs", type=lambda s: parse_list(s, float, "fracs"), default=None,
                    help="budgets as fractions of the stream cost (default: the family's, 0.10,0.25,0.50 for "
                         "random, 0.05,0.10,0.25 for the hard families)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per cell, 0..k-1 (default 3; 1 with --quick)")
    ap.add_argument("--methods", type=lambda s: parse_list(s, str, "methods"), default=list(METHODS),
                    help=f"comma-separated (default {','.join(METHODS)})")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per solve (default 60)")
    ap.add_argument("--cbc-max-n", type=int, default=0,
                    help="do not run milp-cbc above this many experiences, to shorten a run; 0 = no cap "
                         "(default 0: CBC took 0.6-1.5 s median at n=1600 here, one time-out at n=800)")
    ap.add_argument("--quick", action="store_true", help="smoke run: the smallest sizes of each family (50,100,200 for random) and one seed")
    ap.add_argument("--n-large", type=lambda s: parse_list(s, int, "n-large"), default=[],
                    help="scale series: also solve one random problem of each of these sizes at 25%% budget "
                         "with bnb alone and bnb + milp-highs certification (off by default; e.g. "
                         "10000,30000, or 10000,30000,100000)")
    ap.add_argument("--large-time-limit", type=float, default=60.0, help="seconds per solver on --n-large")
    ap.add_argument("--large-only", action="store_true", help="skip the grid; run only --n-large")
    ap.add_argument("--json", metavar="PATH", help="write machine facts and every raw run here")
    args = ap.parse_args(argv)

    unknown = [m for m in args.methods if m not in METHODS]
    if unknown:
        ap.error(f"unknown method(s) {', '.join(unknown)}; valid: {', '.join(METHODS)}")
    methods = [m for m in METHODS if m in args.methods]  # fixed order, no duplicates
    if args.families == ["all"]:
        args.families = list(FAMILIES)
    bad = [f for f in args.families if f not in FAMILIES]
    if bad:
        ap.error(f"unknown family(ies) {', '.join(bad)}; valid: {', '.join(FAMILIES)} or all")
    if args.seeds is None:
        args.seeds = 1 if args.quick else 3
    if args.seeds < 1:
        ap.error("--seeds must be >= 1")
    if not args.time_limit > 0:
        ap.error("--time-limit must be > 0")
    if args.cbc_max_n is not None and args.cbc_max_n <= 0:
        args.cbc_max_n = None
    if args.large_only and not args.n_large:
        ap.error("--large-only needs --n-large N")
    args.seeds_list = list(range(args.seeds))

    facts = machine_facts()
    v = facts["versions"]
    out = ["## Exact solvers on seeded package-shaped problems", "",
           f"Machine: Python {facts['python']} on {facts['platform']}, os.cpu_count() = {facts['cpu_count']}, "
           f"load average at start {facts['load_average_at_start']}. numpy {v['numpy']}, scipy {v['scipy']}, "
           f"highspy {v['highspy']}, ortools {v['ortools']}, pulp {v['pulp']}. "
           f"Code: git {facts['git_head']}, solvers/bnb/*.py sha256 {facts['bnb_sha256']}.", "",
           "Budget = fraction x `stream_cost()` (the cost of keeping the cheapest candidate of every experience).", ""]

    warm = methods if not args.large_only else ["bnb", "milp-highs"]
    if args.n_large:
        warm = list(dict.fromkeys(warm + ["bnb", "milp-highs"]))
    warm_up(warm, args.time_limit)

    all_runs, disagreements = [], []
    started = time.perf_counter()
    all_ratios: list = []
    family_cells: dict = {}
    if not args.large_only:
        for family in args.families:
            desc, sizes, fracs = FAMILIES[family]
            sizes = args.sizes or (QUICK_FAMILY_SIZES[family] if args.quick else sizes)
            fracs = args.fracs or fracs
            cells = run_grid(args, family, sizes, fracs, methods, all_runs, disagreements)
            family_cells[family] = cells
            out += [f"### Family `{family}`: {desc}", ""] + grid_table(cells, methods, args, all_ratios) + [""]
        if len(args.families) > 1 and all_ratios:
            worst, wc = max(all_ratios, key=lambda t: t[0])
            out.append(f"**All families**: bnb median <= fastest MILP median in "
                       f"{sum(r <= 1.0 for r, _ in all_ratios)}/{len(all_ratios)} cells; median ratio "
                       f"{statistics.median(r for r, _ in all_ratios):.2f}; worst {worst:.2f} "
                       f"({wc['family']} n={wc['n']} {budget_label(wc['frac'])}).")
        summary = summary_table(family_cells, methods)
        if summary:
            out += ["", "### Every family: bnb against the fastest MILP", ""] + summary
    for n in args.n_large:
        out += [""] + run_large(args, n, all_runs, disagreements)
    elapsed = time.perf_counter() - started
    errors = [r for r in all_runs if r["status"] == "error"]
    out += ["", f"Total benchmark time {elapsed / 60:.1f} min."]
    if errors:
        out.append(f"ERRORS: {len(errors)} solve(s) raised: " + "; ".join(
            f"{r['method']} n={r['n']} frac={r['frac']:g} seed={r['seed']}: {r['error']}" for r in errors))
    if disagreements:
        out += ["", "**DISAGREE** -- methods that proved optimality do not agree:"] + [f"- {d}" for d in disagreements]
    print("\n".join(out), flush=True)

    if args.json:
        payload = {"machine": facts, "settings": {"families": args.families, "sizes": args.sizes, "fracs": args.fracs,
                                                  "seeds": args.seeds_list,
                                                  "methods": methods, "time_limit": args.time_limit,
                                                  "cbc_max_n": args.cbc_max_n, "n_large": args.n_large},
                   "runs": all_runs, "disagreements": disagreements, "elapsed_seconds": elapsed}
        Path(args.json).write_text(json.dumps(payload, indent=1, default=str))
        log(f"wrote {args.json}")

    if disagreements:
        log("DISAGREE: " + str(len(disagreements)) + " disagreement(s); exit code 1")
        return 1
    if errors:
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
