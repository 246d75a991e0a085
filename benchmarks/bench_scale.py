"""The scale series of benchmarks/bench_exact.py: every method alone, then certified OPT end to end, at 10k-100k."""

from __future__ import annotations

import multiprocessing
import time
import traceback

from memaudit_solvers.certify import certify
from bench_families import make_problem
from bench_tables import MILP_NAMES, cell_text, fmt_seconds

__all__ = ["LARGE_FRACS", "TARGETS", "run_large", "large_table"]

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


def run_certify(problem, budget: float, time_limit: float) -> dict:
    """Certified OPT end to end as the library does it today: ``certify(problem, budget)`` with its default
    method and back-end(s), the time limit given to each; never raises."""
    from bench_runs import log

    t0 = time.perf_counter()
    try:
        cert = certify(problem, budget, time_limit=time_limit)
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


def run_large(args, n: int, frac: float, methods, all_runs: list, disagreements: list, skips) -> dict:
    """One problem of the scale series: each method alone (skipped at this budget once it timed out at a
    smaller size), then :func:`run_certify`; the row of :func:`large_table`."""
    from bench_runs import load_now, log, not_run, report_disagreements, solve

    family, seed = args.large_family, args.seeds_list[0]
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
            log(f"large n={n} frac={frac:g} {name}: skipped ({why})")
        else:
            r = capped(name, lambda: solve(name, p, budget, args.large_time_limit), args.large_wall_cap)
            log(f"large n={n} frac={frac:g} {name}: {r['seconds']:.3f}s {r['status']} value={r['value']} "
                f"bound={r['bound']} nodes={r['nodes']} (load {load_now()})")
        r.pop("_result", None)
        runs[name] = {**base, **r}
        skips.record(key, frac, name, n, [r])
    cert = {"certified": False, "summary": "", "backend": None,
            **capped("certify", lambda: run_certify(p, budget, args.large_time_limit), args.large_wall_cap)}
    if cert["status"] == "killed":
        cert["summary"] = f"NOT certified: certify {cert['message']}"
    cert = {**base, **cert}
    log(f"large n={n} frac={frac:g} certify: {cert['seconds']:.3f}s {cert['summary']} (load {load_now()})")
    all_runs.extend(runs.values())
    all_runs.append(cert)
    n_disagree = report_disagreements(f"large {family} n={n} frac={frac:g} seed={seed}",
                                      [*runs.values(), cert], disagreements)
    return {"n": n, "frac": frac, "problem": p, "runs": runs, "certify": cert, "generate_seconds": gen,
            "n_disagree": n_disagree}


def large_table(rows: list[dict], methods, args) -> list[str]:
    """The scale series as one markdown table, a row per size and budget, and its notes."""
    from bench_tables import budget_label

    milps = [m for m in methods if m in MILP_NAMES]
    head = (["experiences", "candidates", "units", "budget"] + [f"{m} (s)" for m in methods]
            + (["bnb / fastest MILP"] if "bnb" in methods and milps else [])
            + ["certified OPT end to end (s)", "certified by", "target"])
    lines = [f"### Scale series: `{args.large_family}` family, seed {args.seeds_list[0]}", "",
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
                cells.append(f"{meds['bnb'] / others[best]:.2f} (vs {best})")
            else:
                cells.append("–")
        target = TARGETS.get(row["n"])
        met = "–" if target is None else (f"< {target:g} s: " + ("yes" if c["certified"] and c["seconds"] < target
                                                                    else "no"))
        label = budget_label(row["frac"]) + (" **DISAGREE**" if row["n_disagree"] else "")
        lines.append("| " + " | ".join([f"{row['n']:,}", f"{p.n_candidates:,}", f"{p.n_units:,}", label, *cells,
                                        f"{fmt_seconds(c['seconds'])}" + ("" if c["certified"] else " (not certified)"),
                                        c["backend"] or "–", met]) + " |")
        attempts = f" (before it: {'; '.join(c['attempts'])})" if c.get("attempts") else ""
        notes.append(f"- {row['n']:,} at {budget_label(row['frac'])}: {c['summary']}{attempts}; generating the "
                     f"problem took {row['generate_seconds']:.1f} s (not counted).")
    lines += ["", f"Each method alone, one solve at a time, {args.large_time_limit:g} s limit each (`*` = not proven "
              "optimal; `skipped` = a back-end that timed out at a smaller size with the same budget; bnb always "
              f"runs; `stopped` = no answer within the wall-clock cap of {args.large_wall_cap:g} s). Certified OPT "
              "end to end = `memaudit_solvers.certify.certify(problem, budget, time_limit=...)` as the library does "
              "it (its default method and certifying back-end): the method's solve, the back-end's and their "
              "comparison. Target: certified OPT for 10,000 experiences under 10 s, for 100,000 under 60 s.",
              ""] + notes
    return lines
