"""The scale series of benchmarks/bench_exact.py: every method alone, then certified OPT end to end (the library's
``certify``, and the command line's ``memaudit solve`` on the problem written as a package), at 10k-100k."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback

from memaudit_solvers.certify import certify
from bench_families import make_problem
from bench_tables import MILP_NAMES, cell_text, fmt_ratio, fmt_seconds

__all__ = ["LARGE_FRACS", "TARGETS", "run_large", "large_table", "write_package", "run_solve_cli", "certify_order"]

#: default budgets of the scale series (fractions of the stream cost)
LARGE_FRACS = (0.10,)
#: the speed the exact solver aims at: certified OPT under this many seconds at this many experiences
TARGETS = {10_000: 10.0, 100_000: 60.0}
#: default wall-clock cap (seconds) on one call of the scale series, whatever its own time limit says
WALL_CAP = 300.0


def capped(name: str, fn, wall_cap: float) -> dict:
    """``fn()`` (a record-returning call that never raises) in a forked child, stopped after ``wall_cap``
    seconds: a solver that does not honour its own time limit cannot hang the benchmark.  A stopped
    call is the record ``status="killed"``."""
    from bench_runs import log

    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)

    def child():
        rec = fn()
        rec.pop("_result", None)
        send.send(rec)

    proc = ctx.Process(target=child, daemon=True)
    t0 = time.perf_counter()
    proc.start()
    send.close()
    if receive.poll(wall_cap):
        try:
            rec = receive.recv()
        except EOFError:          # the child ended without an answer
            rec = None
        proc.join()
        if rec is not None:
            return rec
        why = f"the child process died (exit code {proc.exitcode})"
    else:
        proc.kill()
        proc.join()
        why = f"stopped at the wall-clock cap of {wall_cap:g} s (--large-wall-cap), its own time limit notwithstanding"
    seconds = time.perf_counter() - t0
    log(f"  !! {name}: {why}")
    return {"method": name, "seconds": seconds, "wall_time": None, "status": "killed", "value": None,
            "bound": None, "nodes": None, "message": why}


def certify_order(problem, backends) -> list[str]:
    """The back-ends ``certify`` tries: ``backends`` as given, or for ``"auto"`` the order ``memaudit solve
    --backend auto`` takes for this problem (the lattice certificate first at scale)."""
    if backends != "auto":
        return list(backends)
    from memaudit.certification import backend_order
    return backend_order("auto", "bnb", problem)


def run_certify(problem, budget: float, time_limit: float, backends="auto") -> dict:
    """Certified OPT end to end by the library: ``certify(problem, budget, backend=...)`` with bnb and the
    back-ends of :func:`certify_order` tried in turn, the time limit given to each; never raises."""
    from bench_runs import log

    t0 = time.perf_counter()
    try:
        cert = certify(problem, budget, time_limit=time_limit, backend=certify_order(problem, backends))
    except Exception as exc:  # noqa: BLE001 - a crash is a result to report
        tb = traceback.format_exc()
        log(f"  !! certify raised {type(exc).__name__}: {exc}\n{tb}")
        return {"method": "certify", "seconds": time.perf_counter() - t0, "status": "error", "value": None,
                "bound": None, "nodes": None, "error": f"{type(exc).__name__}: {exc}", "traceback": tb,
                "certified": False, "summary": f"certify raised {type(exc).__name__}: {exc}", "backend": None}
    seconds = time.perf_counter() - t0
    backend = cert.results[1].method if len(cert.results) > 1 else None
    return {"method": "certify", "seconds": seconds, "status": "optimal" if cert.certified else "not certified",
            "value": cert.value, "bound": None, "nodes": None, "certified": cert.certified, "summary": cert.summary,
            "backend": backend, "attempts": list(cert.attempts),
            "parts": [{"method": r.method, "status": r.status, "wall_time": r.wall_time, "value": r.value,
                       "stats": r.stats} for r in cert.results]}


def write_package(problem, name: str, directory: str) -> tuple[str | None, str]:
    """``(path, "")`` of ``problem`` written as a compact package file in ``directory`` (checked to compile back to
    the same problem), or ``(None, why)`` when its h cannot be written exactly (breakpoint lists)."""
    from scripts.random_package import package_of_problem

    from memaudit.package import save_package

    try:
        pkg = package_of_problem(problem, name, {"generator": "bench_scale"})
    except ValueError as exc:
        return None, str(exc)
    path = os.path.join(directory, f"{name}.json")
    save_package(pkg, path, indent=None)
    return path, ""


def run_solve_cli(path: str, budget: float, time_limit: float, wall_cap: float) -> dict:
    """``memaudit solve PATH --budget B --time-limit T --json`` in a child process, its whole wall time from
    start-up to exit (no results store: ``--no-cache`` and a fresh ``--db``), stopped with every process it
    started after ``wall_cap`` seconds; never raises."""
    db = os.path.join(os.path.dirname(path), f"results-{os.getpid()}-{time.monotonic_ns()}.sqlite")
    cmd = [sys.executable, "-m", "memaudit.cli", "solve", path, "--budget", repr(float(budget)), "--time-limit",
           repr(float(time_limit)), "--no-cache", "--db", db, "--json"]
    rec = {"method": "memaudit solve", "status": "error", "value": None, "bound": None, "nodes": None,
           "certified": False, "backend": None, "summary": ""}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=wall_cap)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)      # the CLI and the back-end children it forked
        proc.communicate()
        return {**rec, "seconds": time.perf_counter() - t0, "status": "killed",
                "summary": f"NOT certified: memaudit solve stopped at the wall-clock cap of {wall_cap:g} s"}
    rec["seconds"] = seconds = time.perf_counter() - t0
    try:
        doc = json.loads(out)
    except ValueError:
        return {**rec, "exit": proc.returncode, "summary": f"memaudit solve exit {proc.returncode}: {err.strip()[-300:]}"}
    method = doc["results"][0]
    solver = method["wall_time"] + sum(a["seconds"] for a in doc["certification"]["attempts"])
    return {**rec, "exit": proc.returncode, "status": "optimal" if doc["certified"] else "not certified",
            "value": doc["opt"], "certified": doc["certified"], "backend": doc["certification"]["certified_by"],
            "solver_seconds": solver, "around_seconds": seconds - solver,
            "summary": (f"memaudit solve {doc['status']} OPT = {doc['opt']!r} in {seconds:.2f} s: method and back-ends "
                        f"{solver:.2f} s, everything around them (start-up, reading, checks, compiling, report) "
                        f"{seconds - solver:.2f} s")}


def _cli_row(args, p, name: str, budget: float) -> dict:
    """The ``memaudit solve`` record of one problem of the series (the package written first, not counted)."""
    from bench_runs import log

    with tempfile.TemporaryDirectory(prefix="bench-scale-") as directory:
        t0 = time.perf_counter()
        path, why = write_package(p, name, directory)
        written = time.perf_counter() - t0
        if path is None:
            return {"method": "memaudit solve", "seconds": 0.0, "status": "skipped", "value": None, "bound": None,
                    "nodes": None, "certified": False, "backend": None, "summary": f"memaudit solve not run: {why}"}
        log(f"  package written in {written:.1f} s ({os.path.getsize(path) / 2**20:.1f} MiB); running memaudit solve")
        rec = run_solve_cli(path, budget, args.large_time_limit, args.large_wall_cap)
    return {**rec, "write_seconds": written}


def run_large(args, n: int, frac: float, seed: int, methods, all_runs: list, disagreements: list, skips) -> dict:
    """One problem of the scale series: each method alone (skipped at this budget once it timed out at a
    smaller size), then :func:`run_certify`; the row of :func:`large_table`."""
    from bench_runs import load_now, log, not_run, report_disagreements, solve

    family = args.large_family
    log(f"generating the large problem: {family} n={n}, seed={seed}")
    t0 = time.perf_counter()
    p = make_problem(family, n, seed)
    gen = time.perf_counter() - t0
    budget = frac * p.stream_cost()
    base = {"family": family, "n": n, "experiences": p.n_groups, "frac": frac, "seed": seed, "budget": budget,
            "n_candidates": p.n_candidates, "n_units": p.n_units, "time_limit": args.large_time_limit,
            "large": True}
    runs = {}
    key = f"large {family}"
    for name in methods:
        why = skips.reason(key, frac, name, n)
        if why:
            r = not_run(name, "skipped", why)
            log(f"large n={n} frac={frac:g} seed={seed} {name}: skipped ({why})")
        else:
            r = capped(name, lambda: solve(name, p, budget, args.large_time_limit), args.large_wall_cap)
            log(f"large n={n} frac={frac:g} seed={seed} {name}: {r['seconds']:.3f}s {r['status']} value={r['value']} "
                f"bound={r['bound']} nodes={r['nodes']} (load {load_now()})")
        r.pop("_result", None)
        runs[name] = {**base, **r}
        skips.record(key, frac, name, n, [r])
    cert = {"certified": False, "summary": "", "backend": None,
            **capped("certify", lambda: run_certify(p, budget, args.large_time_limit, args.certify_backends),
                     args.large_wall_cap)}
    if cert["status"] == "killed":
        cert["summary"] = f"NOT certified: certify {cert['message']}"
    cert = {**base, **cert}
    log(f"large n={n} frac={frac:g} seed={seed} certify: {cert['seconds']:.3f}s {cert['summary']} (load {load_now()})")
    cli = {**base, **_cli_row(args, p, f"{family}-n{n}-s{seed}", budget)}
    log(f"large n={n} frac={frac:g} seed={seed} memaudit solve: {cli['seconds']:.3f}s {cli['summary']} (load {load_now()})")
    all_runs.extend(runs.values())
    all_runs.extend([cert, cli])
    n_disagree = report_disagreements(f"large {family} n={n} frac={frac:g} seed={seed}",
                                      [*runs.values(), cert, cli], disagreements)
    return {"n": n, "frac": frac, "seed": seed, "problem": p, "runs": runs, "certify": cert, "cli": cli, "generate_seconds": gen,
            "n_disagree": n_disagree}


def large_table(rows: list[dict], methods, args) -> list[str]:
    """The scale series as one markdown table, a row per size and budget, and its notes."""
    from bench_tables import budget_label

    milps = [m for m in methods if m in MILP_NAMES]
    seeds = sorted({row["seed"] for row in rows})
    head = (["experiences"] + (["seed"] if len(seeds) > 1 else []) + ["candidates", "units", "budget"]
            + [f"{m} (s)" for m in methods]
            + (["bnb / fastest MILP"] if "bnb" in methods and milps else [])
            + ["certified OPT end to end (s)", "certified by", "memaudit solve, end to end (s)", "target"])
    seed_text = f"seed {seeds[0]}" if len(seeds) == 1 else "seeds " + ", ".join(map(str, seeds))
    lines = [f"### Scale series: `{args.large_family}` family, {seed_text}", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes = []
    for row in rows:
        p, c = row["problem"], row["certify"]
        cells = []
        meds = {}
        for m in methods:
            text, meds[m] = cell_text([row["runs"][m]])
            cells.append(text)
        if "bnb" in methods and milps:
            others = {m: meds[m] for m in milps if meds[m] is not None}
            if meds["bnb"] is not None and others:
                best = min(others, key=others.__getitem__)
                cells.append(f"{fmt_ratio(meds['bnb'] / others[best])} (vs {best})")
            else:
                cells.append("–")
        cli = row["cli"]
        target = TARGETS.get(row["n"])

        def met(r) -> str:
            return "yes" if r["certified"] and r["seconds"] < target else "no"
        goal = "–" if target is None else f"< {target:g} s: library {met(c)}, CLI {met(cli)}"
        label = budget_label(row["frac"]) + (" **DISAGREE**" if row["n_disagree"] else "")
        seed_cell = [str(row["seed"])] if len(seeds) > 1 else []
        lines.append("| " + " | ".join([f"{row['n']:,}", *seed_cell, f"{p.n_candidates:,}", f"{p.n_units:,}", label, *cells,
                                        f"{fmt_seconds(c['seconds'])}" + ("" if c["certified"] else " (not certified)"),
                                        c["backend"] or "–", _cli_cell(cli), goal]) + " |")
        attempts = f" (before it: {'; '.join(c['attempts'])})" if c.get("attempts") else ""
        notes.append(f"- {row['n']:,} at {budget_label(row['frac'])}"
                     + (f", seed {row['seed']}" if len(seeds) > 1 else "") + f": {c['summary']}{attempts}; {cli['summary']}; "
                     f"generating the problem took {row['generate_seconds']:.1f} s"
                     + (f", writing its package {cli['write_seconds']:.1f} s" if "write_seconds" in cli else "")
                     + " (not counted).")
    lines += ["", f"Each method alone, one solve at a time, {args.large_time_limit:g} s limit each (`*` = not proven "
              "optimal; `skipped` = a back-end that timed out at a smaller size with the same budget; bnb always "
              f"runs; `stopped` = no answer within the wall-clock cap of {args.large_wall_cap:g} s). Certified OPT "
              "end to end = `memaudit_solvers.certify.certify(problem, budget, time_limit=..., backend=...)` with "
              "bnb and the back-ends "
              + ("of `memaudit solve --backend auto` for the problem (the lattice certificate first at scale)"
                 if args.certify_backends == "auto" else ", ".join(args.certify_backends))
              + " tried in turn: the method's solve, the back-end's and their comparison. memaudit solve, end to end = the command line in a child process on the problem written "
              "as a compact package file, from start-up to exit (`memaudit solve PKG --budget B --time-limit T "
              "--no-cache --json`: reading and checking the file, compiling, bnb, `--backend auto`, the certificate, "
              "the report), stopped at the same wall-clock cap. Target: certified OPT for 10,000 experiences under "
              "10 s, for 100,000 under 60 s.",
              ""] + notes
    return lines


def _cli_cell(r: dict) -> str:
    if r["status"] == "skipped":
        return "–"
    if r["status"] == "killed":
        return f"stopped after {fmt_seconds(r['seconds'])}"
    if r["status"] == "error":
        return "error"
    return fmt_seconds(r["seconds"]) + ("" if r["certified"] else " (not certified)")
