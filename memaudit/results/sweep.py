"""``memaudit sweep``: packages x budgets x methods, in-process or on Dask, resumable through the results store.

The grid is cut into one task per (package, budget fraction): the task solves and certifies OPT
(unless the store already holds it) and scores each missing method against it, every method in
its own ``try``, so one crashing method fails one cell.  Tasks run in this process
(``workers=1``), on a ``dask.distributed.LocalCluster`` (the default) or on any running Dask
scheduler.

Workers never open the store: they return rows to the client, which writes each task's rows in
one transaction as the task completes.  A remote cluster need not see the client's file (SQLite
over a network file system is not safe), there is one writer, and a killed client loses at most
the tasks in flight.  Before writing, the client re-checks every certified solve a worker hands
back (:func:`memaudit.results.cache.report_from_row`) and stores it with its certificate.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

from memaudit_solvers.certify import CERT_RTOL

from ..errors import MemauditError
from ..package import load_package, package_from_dict, package_to_dict, resolve_budget
from .cache import _family, format_exception, package_digest, report_from_row, score_key, solve_key
from .store import open_store
from .sweep_task import group_errors, run_group

__all__ = ["SweepError", "SweepReport", "Cell", "run_sweep", "run_group", "plan_sweep", "DEFAULT_SWEEP_METHODS"]


class SweepError(MemauditError, ValueError):
    """A sweep cannot start: no package, no budget, an unknown method, an unreachable scheduler."""


def _default_methods():
    from ..baselines import DEFAULT_METHODS

    return tuple(DEFAULT_METHODS)


#: the methods a sweep scores when none is given: those of ``memaudit compare``
DEFAULT_SWEEP_METHODS = _default_methods()


@dataclass
class Cell:
    """One cell of the grid: ``method`` is ``OPT`` for the certified solve."""

    package: str
    path: str
    budget_frac: float
    budget: float
    method: str
    key: str
    status: str = "missing"
    error: str = ""


@dataclass
class SweepReport:
    """What a sweep did: every cell, how many were reused, computed and failed."""

    cells: list = field(default_factory=list)
    reused: int = 0
    computed: int = 0
    wall_time: float = 0.0
    mode: str = ""

    @property
    def failed(self) -> list:
        return [c for c in self.cells if c.status == "error"]

    @property
    def keys(self) -> list:
        return [c.key for c in self.cells]


def _settings_for(method: str, seed: int, given: dict | None = None) -> dict:
    """The settings that key ``method``'s cells: ``given`` over the seed (for the methods that take one) over
    the declared defaults, exactly as :func:`memaudit.baselines.score_methods` keys the rows its workers write."""
    from ..baselines import check_method_settings, method_settings

    return check_method_settings([method], {method: {**method_settings(method, seed=seed), **(given or {})}})[method]


def plan_sweep(paths, budget_fracs, methods, *, backend="milp-highs", time_limit=None, seed: int = 0,
               settings: dict | None = None):
    """The grid: ``(groups, cells)``; each group is one task's worth of cells for one (package, fraction).

    ``settings`` (``{method: {setting: value}}``) are checked against each method's declarations up
    front, before any package is read."""
    from ..baselines import parse_methods
    from ..solve import method_time_limit, resolve_backend

    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise SweepError("no package given: pass one or more package files")
    fracs = list(budget_fracs)
    if not fracs:
        raise SweepError("no budget fraction given: pass e.g. --budget-frac 0.1,0.25,0.5")
    names = parse_methods(methods)
    settings = settings or {}
    unknown = sorted(set(settings) - set(names))
    if unknown:
        raise SweepError(f"settings given for {', '.join(map(repr, unknown))}, which the sweep does not run; "
                         f"methods: {', '.join(names)}")
    method_keys = {m: _settings_for(m, seed, settings.get(m)) for m in names}
    backend = resolve_backend(backend)
    time_limit = method_time_limit(time_limit)
    groups, cells = [], []
    seen = set()
    for path in paths:
        pkg = load_package(path)
        sha = package_digest(pkg)
        if sha in seen:
            continue
        seen.add(sha)
        data = package_to_dict(pkg)
        for f in fracs:
            b = resolve_budget(pkg, budget_frac=f)
            skey, sident = solve_key(sha, b, "bnb", backend, {"time_limit": time_limit, "rtol": float(CERT_RTOL)})
            group = {"package": data, "package_id": pkg.id, "family": _family(pkg, path), "path": path,
                     "budget": b, "budget_frac": float(f), "backend": backend, "time_limit": time_limit,
                     "solve": (skey, sident), "methods": []}
            cells.append(Cell(pkg.id, path, float(f), b, "OPT", skey))
            for m in names:
                s = method_keys[m]
                k, ident = score_key(sha, b, m, s)
                group["methods"].append((m, s, k, ident))
                cells.append(Cell(pkg.id, path, float(f), b, m, k))
            groups.append(group)
    return groups, cells


def _finish_rows(task, rows, store) -> list[dict]:
    """Client side: re-check each certified solve a worker returned and attach its certificate."""
    from ..certificate import build_certificate

    out = []
    pkg = None
    for r in rows:
        if r["kind"] == "solve" and r.get("reusable"):
            pkg = pkg or package_from_dict(task["package"], source=task["path"])
            report = report_from_row(pkg, r)
            if report is None:
                r = dict(r, reusable=False, certified=False, status="error",
                         error="the solve a worker returned does not re-check on the client")
            elif os.path.exists(task["path"]):
                r = dict(r, certificate=build_certificate(report, task["path"], budget_frac=task["budget_frac"]))
        out.append(r)
    return out


def _client_for(workers, scheduler):
    from dask.distributed import Client, LocalCluster

    if scheduler:
        try:
            return Client(scheduler, timeout="10s"), None
        except (OSError, TimeoutError) as exc:
            raise SweepError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    n = workers or os.cpu_count() or 1
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0")
    return Client(cluster), cluster


def run_sweep(paths, budget_fracs, methods=None, *, db=None, workers: int | None = None, scheduler=None,
              client=None, backend="milp-highs", time_limit=None, task_timeout=None, seed: int = 0,
              use_cache: bool = True, progress: bool | None = None, on_result=None,
              command: str | None = None, settings: dict | None = None) -> SweepReport:
    """Run the grid; every cell ends in the store (a result, or an ``error`` row with its reason).

    Parameters
    ----------
    paths : sequence of path
        Package files.
    budget_fracs : sequence of float
    methods : sequence of str, optional
        Default :data:`DEFAULT_SWEEP_METHODS`.
    settings : dict, optional
        ``{method: {setting: value}}``, each checked against the method's declared settings
        (``memaudit settings methods``); they key the method's cells with ``seed`` and the defaults.
    db : path or Store, optional
    workers : int, optional
        1 runs in this process without Dask; N > 1 starts a LocalCluster of N worker processes;
        None: a LocalCluster with one worker per core (or ``scheduler`` / ``client``).
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:port``).
    client : dask.distributed.Client, optional
        Use this client (tests, notebooks).
    task_timeout : float, optional
        Seconds one (package, budget) task may take before its cells are failed.
    use_cache : bool
        False recomputes every cell (rows are replaced).
    progress : bool, optional
        Show a tqdm bar on stderr (None: only on a terminal).
    on_result : callable, optional
        Called with the list of rows of each finished task (tests use it to kill a worker mid-run).
    """
    started = time.perf_counter()
    methods = DEFAULT_SWEEP_METHODS if methods is None else methods
    if workers is not None and workers < 1:
        raise SweepError(f"--workers must be >= 1; got {workers}")
    if workers is not None and scheduler:
        raise SweepError("--workers and --scheduler are mutually exclusive: give one of them")
    groups, cells = plan_sweep(paths, budget_fracs, methods, backend=backend, time_limit=time_limit, seed=seed,
                               settings=settings)
    command = command if command is not None else " ".join(["memaudit", *sys.argv[1:]])
    store = open_store(db)
    try:
        existing = store.get_many([c.key for c in cells]) if use_cache else {}
        tasks = []
        reused = 0
        for g in groups:
            skey = g["solve"][0]
            opt_row = existing.get(skey)
            opt_row = opt_row if opt_row and opt_row["reusable"] else None
            todo = [m for m, _s, k, _i in g["methods"] if not (existing.get(k) or {}).get("reusable")]
            reused += (opt_row is not None) + len(g["methods"]) - len(todo)
            if opt_row is None or todo:
                tasks.append(dict(g, opt_row=opt_row, todo=todo, timeout=task_timeout, command=command))
        report = SweepReport(cells=cells, reused=reused)

        from tqdm.auto import tqdm

        bar = tqdm(total=len(cells), initial=reused, unit="cell", desc="sweep", file=sys.stderr,
                   disable=(not progress) if progress is not None else None, dynamic_ncols=True)

        planned = {c.key for c in cells}
        settled = {k for k, r in existing.items() if r["reusable"]}

        def accept(task, rows):
            rows = _finish_rows(task, rows, store)
            store.put(rows, replace=True)
            new = {r["key"] for r in rows} & planned - settled
            settled.update(new)
            bar.update(len(new))
            if on_result is not None:
                on_result(rows)

        try:
            if not tasks:
                report.mode = "nothing to do"
            elif workers == 1 and client is None and not scheduler:
                report.mode = "in-process"
                for t in tasks:
                    try:
                        rows = run_group(t)
                    except Exception as exc:  # noqa: BLE001 - e.g. a package that no longer parses
                        rows = group_errors(t, format_exception(exc))
                    accept(t, rows)
            else:
                _run_dask(tasks, accept, workers, scheduler, client, report)
        finally:
            bar.close()
        final = store.get_many([c.key for c in cells])
        for c in cells:
            row = final.get(c.key)
            if row is None:
                c.status, c.error = "error", ("no row was written for this cell (do the workers run the same "
                                              "memaudit and back-end versions as this client?)")
            elif row["status"] == "error":
                c.status, c.error = "error", row.get("error") or ""
            else:
                c.status = row["status"]
        report.computed = len(cells) - report.reused - len(report.failed)
        report.wall_time = time.perf_counter() - started
        return report
    finally:
        if store is not db:
            store.close()


#: seconds a sweep waits with no Dask worker alive before it fails the cells still pending
NO_WORKER_SECONDS = 120.0


def _completed(queue, client, futures):
    """``(future, None)`` for each future of ``queue`` as it completes; when the cluster has had no
    worker for :data:`NO_WORKER_SECONDS`, the pending futures are cancelled and handed back as
    ``(future, reason)``, so a cluster that lost every worker ends the sweep instead of hanging it."""
    ready: list = []
    alone_since = None
    last_check = 0.0
    while futures:
        if not ready:
            ready.extend(queue.next_batch(block=False))
        if ready:
            yield ready.pop(0), None
            continue
        time.sleep(0.05)
        now = time.monotonic()
        if now - last_check < 2.0:
            continue
        last_check = now
        if client.scheduler_info().get("workers"):
            alone_since = None
            continue
        alone_since = alone_since or now
        if now - alone_since > NO_WORKER_SECONDS:
            pending = list(futures)
            client.cancel(pending)
            for fut in pending:
                yield fut, f"no Dask worker alive for {NO_WORKER_SECONDS:g} s; the task was cancelled"
            return


def _split(task) -> list[dict]:
    """One task per missing method (each with its own OPT), to find which cell takes a worker down."""
    return [dict(task, todo=[m]) for m in task["todo"]]


def _run_dask(tasks, accept, workers, scheduler, client, report) -> None:
    """Submit every task; a task whose worker died is split into one task per method and resubmitted, so
    a method that kills its worker fails its own cell only."""
    from dask.distributed import as_completed

    own = None
    if client is None:
        client, own = _client_for(workers, scheduler)
        report.mode = f"dask ({'scheduler ' + scheduler if scheduler else 'LocalCluster'})"
    else:
        report.mode = "dask (given client)"
    try:
        futures = {}
        counter = iter(range(10 ** 9))

        def submit(t):
            fut = client.submit(run_group, t, key=f"memaudit-sweep-{next(counter)}-{t['solve'][0][:12]}", pure=False)
            futures[fut] = t
            return fut

        queue = as_completed([submit(t) for t in tasks])
        for fut, lost in _completed(queue, client, futures):
            t = futures.pop(fut)
            if lost is not None:
                accept(t, group_errors(t, lost))
                continue
            try:
                rows = fut.result()
            except Exception as exc:  # noqa: BLE001 - KilledWorker, a lost task: the grid goes on
                if len(t["todo"]) > 1 and not isinstance(exc, TimeoutError):
                    for sub in _split(t):
                        queue.add(submit(sub))
                    fut.release()
                    continue
                rows = group_errors(t, format_exception(exc))
            accept(t, rows)
            fut.release()
    finally:
        if own is not None:
            client.close()
            own.close()
