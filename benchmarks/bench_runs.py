"""One timed solve per method, the correctness checks between methods, and which method to skip where."""

from __future__ import annotations

import math
import os
import sys
import time
import traceback

from memaudit_solvers.bnb import branch_and_bound
from memaudit_solvers.certify import CERT_RTOL
from memaudit_solvers.milp import BACKENDS
from memaudit_solvers.random_problems import random_problem, summary_problem
from memaudit_solvers.result import Declined

__all__ = ["METHODS", "RTOL", "NOT_RUN", "log", "load_now", "not_run", "solve", "check_cell",
           "report_disagreements", "TimeoutSkips", "warm_up"]

#: every method the benchmark can time, by its registered name
METHODS = {"bnb": branch_and_bound, **BACKENDS}
RTOL = CERT_RTOL  # 1e-6, the certification tolerance
#: statuses of a method that did not solve: nothing to time, nothing to check
NOT_RUN = ("skipped", "declined", "error", "killed")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_now() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


def _nodes(stats: dict):
    """Search nodes as each method counts them (bnb nodes, HiGHS MIP nodes, CP-SAT branches)."""
    for key in ("nodes", "mip_node_count", "num_branches"):
        if stats.get(key) is not None:
            return stats[key]
    return None


def not_run(name: str, status: str, message: str) -> dict:
    """The record of a method that did not solve: ``skipped`` or ``declined``."""
    return {"method": name, "seconds": None, "wall_time": None, "status": status, "value": None, "bound": None,
            "nodes": None, "message": message}


def solve(name: str, problem, budget: float, time_limit: float) -> dict:
    """One timed solve; never raises (a back-end that declines becomes ``declined``, an exception ``error``)."""
    fn = METHODS[name]
    t0 = time.perf_counter()
    try:
        res = fn(problem, budget, time_limit=time_limit)
    except Declined as exc:
        return {**not_run(name, "declined", str(exc)), "seconds": time.perf_counter() - t0}
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
        if r["status"] == "optimal" or r["status"] in NOT_RUN:
            continue
        if r["value"] is not None and r["value"] > opt + tol:
            problems.append(f"{r['method']} found a store worth {r['value']!r} above the proven optimum {opt!r}")
        if r["bound"] is not None and r["bound"] < opt - tol:
            problems.append(f"{r['method']} claims bound {r['bound']!r} below the proven optimum {opt!r}")
    return problems


def report_disagreements(where: str, runs: list[dict], disagreements: list) -> int:
    """Check one problem's runs; log and collect each disagreement; return how many."""
    found = check_cell(runs)
    for msg in found:
        line = f"DISAGREE {where}: {msg}"
        disagreements.append(line)
        log("!" * 70 + "\n" + line + "\n" + "!" * 70)
    return len(found)


class TimeoutSkips:
    """Which back-end to skip where: once a method other than bnb timed out on at least half the runs
    of a cell, it is not run on the larger sizes of the same family and budget (shown as ``skipped``,
    with the size where it timed out).  bnb, the method under study, always runs.  Off
    (``enabled=False``) every method runs everywhere."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.timed_out: dict = {}        # (family, frac, method) -> smallest n where it timed out

    def reason(self, family: str, frac: float, method: str, n: int) -> str | None:
        n0 = self.timed_out.get((family, frac, method))
        if not self.enabled or method == "bnb" or n0 is None or n0 >= n:
            return None
        return f"timed out at n={n0:,}"

    def record(self, family: str, frac: float, method: str, n: int, runs: list[dict]) -> None:
        done = [r for r in runs if r["status"] not in NOT_RUN or r["status"] == "killed"]
        if done and 2 * sum(r["status"] != "optimal" for r in done) >= len(done):
            key = (family, frac, method)
            self.timed_out[key] = min(n, self.timed_out.get(key, n))


def warm_up(methods, time_limit: float) -> None:
    """One untimed solve of two small problems per method: imports, and the first call of bnb's exact
    one-unit cuts (numba loads or compiles their programme then: 0.3 s cached, 4 s on a fresh machine),
    stay out of the first timed cell."""
    warm = [(random_problem(20, seed=987654), 0.25), (summary_problem(50, 1, restate=0.8), 0.1)]
    for name in methods:
        t0 = time.perf_counter()
        try:
            for p, frac in warm:
                METHODS[name](p, frac * p.stream_cost(), time_limit=time_limit)
            log(f"warm-up {name}: {time.perf_counter() - t0:.2f}s")
        except Exception as exc:  # noqa: BLE001
            log(f"warm-up {name} raised {type(exc).__name__}: {exc}\n{traceback.format_exc()}")


