"""One task of a sweep: the missing cells of one (package, budget fraction), run on a Dask worker or in
the client's process (:func:`run_group`); it returns rows and never opens the store."""

from __future__ import annotations

import threading

from ..package import package_from_dict
from .cache import MemoryStore, ResultsCache, error_row, format_exception

__all__ = ["run_group", "group_errors"]


def _with_timeout(fn, seconds):
    """``fn()``, or TimeoutError after ``seconds`` (the abandoned call goes on in a daemon thread)."""
    if seconds is None:
        return fn()
    out = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as exc:  # handed to the caller below
            out["error"] = exc

    t = threading.Thread(target=target, daemon=True, name="memaudit-sweep-cell")
    t.start()
    t.join(seconds)
    if t.is_alive():
        raise TimeoutError(f"the task did not finish within --task-timeout {seconds:g} s")
    if "error" in out:
        raise out["error"]
    return out["value"]


def run_group(task: dict) -> list[dict]:
    """Run one group's missing cells and return their rows (runs on a Dask worker or in-process).

    ``task`` is a group of :func:`plan_sweep` plus ``opt_row`` (the stored solve, or None),
    ``todo`` (the method names to run) and ``timeout`` (seconds for the whole task, or None).
    """
    from ..baselines import score_methods

    pkg = package_from_dict(task["package"], source=task["path"])
    skey, sident = task["solve"]
    mem = MemoryStore([task["opt_row"]] if task.get("opt_row") else [])
    cache = ResultsCache(mem, command=task.get("command", ""), family=task["family"])
    rows: list[dict] = []
    b, frac = task["budget"], task["budget_frac"]

    def work():
        try:
            cache.solve_package(pkg, budget=b, backend=task["backend"], time_limit=task["time_limit"],
                                budget_frac=frac)
        except Exception as exc:  # noqa: BLE001 - a crashing back-end fails the group's cells, not the grid
            text = format_exception(exc)
            rows.append(error_row(skey, sident, pkg.id, task["family"], frac, text))
            for m, _s, k, ident in task["methods"]:
                if m in task["todo"]:
                    rows.append(error_row(k, ident, pkg.id, task["family"], frac, f"OPT failed: {text}"))
            return
        for m, s, k, ident in task["methods"]:
            if m not in task["todo"]:
                continue
            try:
                score_methods(pkg, budget=b, methods=[m], settings={m: s}, backend=task["backend"],
                              time_limit=task["time_limit"], cache=cache)
            except Exception as exc:  # noqa: BLE001 - one crashing method fails one cell
                rows.append(error_row(k, ident, pkg.id, task["family"], frac, format_exception(exc)))

    timed_out = None
    try:
        _with_timeout(work, task.get("timeout"))
    except TimeoutError as exc:
        timed_out = f"TimeoutError: {exc}"
    written = {r["key"]: r for r in list(mem.written)}  # cells finished before a time-out are kept
    written.update({r["key"]: r for r in list(rows)})
    if timed_out is not None:
        written.update({r["key"]: r for r in group_errors(task, timed_out) if r["key"] not in written})
    return list(written.values())


def group_errors(task, text: str) -> list[dict]:
    """Error rows for every cell a task was to compute."""
    skey, sident = task["solve"]
    out = []
    if task.get("opt_row") is None:
        out.append(error_row(skey, sident, task["package_id"], task["family"], task["budget_frac"], text))
    for m, _s, k, ident in task["methods"]:
        if m in task["todo"]:
            out.append(error_row(k, ident, task["package_id"], task["family"], task["budget_frac"], text))
    return out
