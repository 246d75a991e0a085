"""Time the exact branch-and-bound against every MILP back-end on seeded package-shaped problems.

Run from the repository root::

    .venv/bin/python benchmarks/bench_exact.py            # full random grid (tens of minutes)
    .venv/bin/python benchmarks/bench_exact.py --quick    # n = 50, 100, 200, one seed
    .venv/bin/python benchmarks/bench_exact.py --families all --quick      # every family, smallest size
    .venv/bin/python benchmarks/bench_exact.py --families all --time-limit 20   # every family and size
    .venv/bin/python benchmarks/bench_exact.py --n-large 10000,30000,100000 --large-only   # scale series

The markdown tables go to stdout (each as soon as it is done), one progress line per
solve to stderr.  The script reports speed, it never asserts it.  It does check
correctness: every method that proves optimality must reach the same value (1e-6
relative), no store may beat a proven optimum and no proven bound may sit below it;
otherwise it prints DISAGREE and exits with code 1.  A method that raises is reported
with its traceback and the exit code is 2.  A back-end that timed out on a cell is
skipped on the larger sizes of the same family and budget, and said so (``--no-skip``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memaudit.fileio import atomic_write  # noqa: E402
from memaudit_solvers.milp import BACKENDS, installed_backends  # noqa: E402
from bench_families import FAMILIES, QUICK_FAMILY_SIZES, make_problem  # noqa: E402
from bench_runs import (METHODS, TimeoutSkips, load_now, log, not_run, report_disagreements,  # noqa: E402
                        solve, warm_up)
from bench_scale import LARGE_FRACS, WALL_CAP, large_table, run_large  # noqa: E402
from bench_tables import budget_label, grid_table, summary_table  # noqa: E402

__all__ = ["main", "parse_args", "run_grid"]


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
        "versions": {d: version(d) for d in ("numpy", "scipy", "numba", "highspy", "ortools", "pulp", "PySCIPOpt")},
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


def run_grid(args, family, sizes, fracs, methods, all_runs: list, disagreements: list,
             skips: TimeoutSkips) -> list[dict]:
    cells = []
    total = len(sizes) * len(fracs) * len(args.seeds_list) * len(methods)
    k = 0
    for n in sizes:
        problems = {seed: make_problem(family, n, seed) for seed in args.seeds_list}
        for frac in fracs:
            by_method: dict = {m: [] for m in methods}
            shape = []
            n_disagree = 0
            skipped = {m: skips.reason(family, frac, m, n) for m in methods}
            for seed, p in problems.items():
                budget = frac * p.stream_cost()
                shape.append((p.n_candidates, p.n_units))
                seed_runs = []
                for name in methods:
                    k += 1
                    base = {"family": family, "n": n, "experiences": p.n_groups, "frac": frac, "seed": seed,
                            "budget": budget, "n_candidates": p.n_candidates,
                            "n_units": p.n_units, "time_limit": args.time_limit}
                    where = f"[{family} {k}/{total}] n={n} frac={frac:g} seed={seed} {name}"
                    if name == "milp-cbc" and args.cbc_max_n is not None and n > args.cbc_max_n:
                        r = not_run(name, "skipped", f"n > --cbc-max-n {args.cbc_max_n}")
                        log(f"{where}: skipped (n > {args.cbc_max_n})")
                    elif skipped[name]:
                        r = not_run(name, "skipped", skipped[name])
                        log(f"{where}: skipped ({skipped[name]}, same budget)")
                    else:
                        r = solve(name, p, budget, args.time_limit)
                        log(f"{where}: {r['seconds']:.3f}s {r['status']} value={r['value']} bound={r['bound']} "
                            f"nodes={r['nodes']} (load {load_now()})")
                    r.pop("_result", None)
                    r = {**base, **r}
                    seed_runs.append(r)
                    by_method[name].append(r)
                    all_runs.append(r)
                n_disagree += report_disagreements(f"{family} n={n} frac={frac:g} seed={seed}", seed_runs,
                                                   disagreements)
            for name in methods:
                skips.record(family, frac, name, n, by_method[name])
            cells.append({"family": family, "n": n, "frac": frac, "by_method": by_method, "n_disagree": n_disagree,
                          "n_candidates": statistics.median(c for c, _ in shape),
                          "n_units": statistics.median(u for _, u in shape)})
    return cells


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    installed = [m for m in METHODS if m == "bnb" or m in installed_backends()]
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
    ap.add_argument("--methods", type=lambda s: parse_list(s, str, "methods"), default=installed,
                    help=f"comma-separated (default: every installed one, here {','.join(installed)})")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per solve (default 60)")
    ap.add_argument("--cbc-max-n", type=int, default=0,
                    help="do not run milp-cbc above this many experiences, to shorten a run; 0 = no cap "
                         "(default 0)")
    ap.add_argument("--no-skip", action="store_true",
                    help="run every method everywhere (by default a back-end other than bnb that timed out on "
                         "at least half the runs of a cell is skipped on the larger sizes of that family and "
                         "budget, shown as 'skipped')")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: the smallest sizes of each family (50,100,200 for random) and one seed")
    ap.add_argument("--n-large", type=lambda s: parse_list(s, int, "n-large"), default=[],
                    help="scale series: one problem of each of these sizes (experiences) per --large-fracs "
                         "and --large-seeds, "
                         "solved by every method alone and certified end to end by memaudit_solvers.certify."
                         "certify (e.g. 10000,30000,100000; off by default)")
    ap.add_argument("--large-family", default="random", choices=[f for f in FAMILIES if f != "validity"],
                    help="the family of the scale series (default random)")
    ap.add_argument("--large-fracs", type=lambda s: parse_list(s, float, "large-fracs"), default=list(LARGE_FRACS),
                    help=f"budgets of the scale series (default {','.join(map(str, LARGE_FRACS))})")
    ap.add_argument("--large-seeds", type=lambda s: parse_list(s, int, "large-seeds"), default=[0],
                    help="seeds of the scale series, comma-separated: one problem per size, budget and seed "
                         "(default 0)")
    ap.add_argument("--large-time-limit", type=float, default=60.0,
                    help="seconds per solver on --n-large (default 60)")
    ap.add_argument("--large-wall-cap", type=float, default=WALL_CAP,
                    help=f"seconds of wall clock after which one call of the scale series is stopped and shown as "
                         f"'stopped', whatever its own time limit (default {WALL_CAP:g})")
    ap.add_argument("--certify-backends", default="auto",
                    help="scale series: the back-ends the library's certify tries in turn, comma-separated "
                         "(e.g. milp-highs), or auto: the order memaudit solve --backend auto takes for the problem "
                         "(default auto)")
    ap.add_argument("--large-only", action="store_true", help="skip the grid; run only --n-large")
    ap.add_argument("--json", metavar="PATH", help="write machine facts and every raw run here")
    args = ap.parse_args(argv)

    unknown = [m for m in args.methods if m not in METHODS]
    if unknown:
        ap.error(f"unknown method(s) {', '.join(unknown)}; valid: {', '.join(METHODS)}")
    missing = [m for m in args.methods if m != "bnb" and m in BACKENDS and m not in installed_backends()]
    if missing:
        ap.error(f"not installed: {', '.join(missing)} (pip install pulp / ortools / pyscipopt)")
    args.methods = [m for m in METHODS if m in args.methods]  # fixed order, no duplicates
    if args.families == ["all"]:
        args.families = list(FAMILIES)
    bad = [f for f in args.families if f not in FAMILIES]
    if bad:
        ap.error(f"unknown family(ies) {', '.join(bad)}; valid: {', '.join(FAMILIES)} or all")
    if args.seeds is None:
        args.seeds = 1 if args.quick else 3
    if args.seeds < 1:
        ap.error("--seeds must be >= 1")
    if not args.time_limit > 0 or not args.large_time_limit > 0 or not args.large_wall_cap > 0:
        ap.error("--time-limit, --large-time-limit and --large-wall-cap must be > 0")
    if args.cbc_max_n is not None and args.cbc_max_n <= 0:
        args.cbc_max_n = None
    if not args.large_seeds or min(args.large_seeds) < 0:
        ap.error("--large-seeds must list seeds >= 0")
    if args.large_only and not args.n_large:
        ap.error("--large-only needs --n-large N")
    if args.certify_backends != "auto":
        from memaudit_solvers.registry import CERTIFIERS, EXACT_METHODS
        args.certify_backends = [b.strip() for b in args.certify_backends.split(",") if b.strip()]
        bad = [b for b in args.certify_backends if b not in EXACT_METHODS and b not in CERTIFIERS or b == "bnb"]
        if bad or not args.certify_backends:
            ap.error(f"--certify-backends: unknown or unusable back-end(s) {', '.join(bad) or '(none given)'}")
    args.seeds_list = list(range(args.seeds))
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    methods = args.methods
    facts = machine_facts()
    v = facts["versions"]
    out: list[str] = []

    def emit(lines: list[str]) -> None:
        """Print finished lines at once (a run stopped early keeps its tables) and keep them."""
        print("\n".join(lines), flush=True)
        out.extend(lines)

    emit(["## Exact solvers on seeded package-shaped problems", "",
           f"Machine: Python {facts['python']} on {facts['platform']}, os.cpu_count() = {facts['cpu_count']}, "
           f"load average at start {facts['load_average_at_start']}. numpy {v['numpy']}, scipy {v['scipy']}, numba {v['numba']}, "
           f"highspy {v['highspy']}, ortools {v['ortools']}, pulp {v['pulp']}, PySCIPOpt {v['PySCIPOpt']}. "
           f"Code: git {facts['git_head']}, solvers/bnb/*.py sha256 {facts['bnb_sha256']}.", "",
           "Budget = fraction x `stream_cost()` (the cost of keeping the cheapest candidate of every experience).", ""])

    warm_up(methods, args.time_limit)
    all_runs: list = []
    disagreements: list = []
    started = time.perf_counter()
    all_ratios: list = []
    family_cells: dict = {}
    skips = TimeoutSkips(enabled=not args.no_skip)
    if not args.large_only:
        for family in args.families:
            desc, sizes, fracs = FAMILIES[family]
            sizes = args.sizes or (QUICK_FAMILY_SIZES[family] if args.quick else sizes)
            fracs = args.fracs or fracs
            t0 = time.perf_counter()
            cells = run_grid(args, family, sizes, fracs, methods, all_runs, disagreements, skips)
            family_cells[family] = cells
            emit([f"### Family `{family}`: {desc}", ""] + grid_table(cells, methods, args, all_ratios)
                 + [f"Family wall time {(time.perf_counter() - t0) / 60:.1f} min (load average now "
                    f"{load_now()}).", ""])
        if len(args.families) > 1 and all_ratios:
            worst, wc = max(all_ratios, key=lambda t: t[0])
            emit([f"**All families**: bnb median <= fastest MILP median in "
                  f"{sum(r <= 1.0 for r, _ in all_ratios)}/{len(all_ratios)} cells; median ratio "
                  f"{statistics.median(r for r, _ in all_ratios):.2f}; worst {worst:.2f} "
                  f"({wc['family']} n={wc['n']} {budget_label(wc['frac'])})."])
        summary = summary_table(family_cells, methods)
        if summary:
            emit(["", "### Every family: bnb against the fastest MILP", ""] + summary)
    if args.n_large:
        rows = [run_large(args, n, frac, seed, methods, all_runs, disagreements, skips)
                for n in sorted(args.n_large) for frac in args.large_fracs for seed in args.large_seeds]
        emit([""] + large_table(rows, methods, args))
    elapsed = time.perf_counter() - started
    errors = [r for r in all_runs if r["status"] == "error"]
    tail = ["", f"Total benchmark time {elapsed / 60:.1f} min (load average at the end {load_now()})."]
    if errors:
        tail.append(f"ERRORS: {len(errors)} solve(s) raised: " + "; ".join(
            f"{r['method']} n={r['n']} frac={r['frac']:g} seed={r['seed']}: {r['error']}" for r in errors))
    if disagreements:
        tail += ["", "**DISAGREE** -- methods that proved optimality do not agree:"] + [f"- {d}" for d in disagreements]
    emit(tail)

    if args.json:
        payload = {"machine": facts, "settings": {"families": args.families, "sizes": args.sizes, "fracs": args.fracs,
                                                  "seeds": args.seeds_list, "methods": methods,
                                                  "time_limit": args.time_limit, "cbc_max_n": args.cbc_max_n,
                                                  "skip_after_timeout": not args.no_skip, "n_large": args.n_large,
                                                  "large_family": args.large_family,
                                                  "large_fracs": args.large_fracs,
                                                  "large_seeds": args.large_seeds,
                                                  "large_time_limit": args.large_time_limit,
                                                  "large_wall_cap": args.large_wall_cap,
                                                  "certify_backends": args.certify_backends},
                   "runs": all_runs, "disagreements": disagreements, "elapsed_seconds": elapsed}
        atomic_write(args.json, json.dumps(payload, indent=1, default=str))
        log(f"wrote {args.json}")

    if disagreements:
        log("DISAGREE: " + str(len(disagreements)) + " disagreement(s); exit code 1")
        return 1
    if errors:
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
