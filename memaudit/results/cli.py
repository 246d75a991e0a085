"""Commands of the results subpackage: ``memaudit sweep`` and ``memaudit report html``, plus the ``--db`` /
``--no-cache`` options that ``solve``, ``baseline`` and ``compare`` share."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..clitools import safe_echo

__all__ = ["COMMANDS", "sweep", "html_command", "cache_options", "make_cache", "say_reused"]

COMMANDS: list = []

_DB_HELP = ("Results store (SQLite). Default: $MEMAUDIT_DB, else ~/.cache/memaudit/results.sqlite.")


def cache_options(f):
    """``--db PATH`` and ``--no-cache`` for a command that solves."""
    f = click.option("--no-cache", "no_cache", is_flag=True,
                     help="Re-solve even when the results store holds a certified OPT (the new result is stored).")(f)
    f = click.option("--db", "db", type=click.Path(dir_okay=False), default=None, metavar="PATH", help=_DB_HELP)(f)
    return f


def make_cache(db, no_cache: bool, package_path=None):
    """The :class:`~memaudit.results.cache.ResultsCache` of the ``--db`` / ``--no-cache`` options.

    An explicit ``--db`` that cannot be opened is an error; the *default* store that cannot be
    opened (a read-only home, say) is only a warning: the command then runs without a store.
    """
    from .cache import MemoryStore, ResultsCache
    from .store import StoreError

    try:
        return ResultsCache(db, use_cache=not no_cache, package_path=package_path)
    except StoreError as exc:
        if db is not None:
            raise
        safe_echo(f"warning: results store unavailable, nothing is cached: {exc}", err=True)
        return ResultsCache(MemoryStore(), use_cache=not no_cache, package_path=package_path)


def say_reused(cache, quiet: bool = False) -> None:
    """One stderr line per solve taken from the store (none when ``quiet``: machine-readable output
    without ``-v``)."""
    if quiet:
        return
    for r in cache.reused:
        safe_echo(f"note: certified OPT of {r['package']} at budget {r['budget']:g} ({r['method']} + "
                   f"{r['backend'] or 'no back-end'}) reused from the results store "
                   f"{getattr(cache.store, 'path', '(memory)')}; --no-cache re-solves", err=True)


def _package_files(args) -> list[str]:
    from ..errors import MemauditError

    out = []
    for a in args:
        p = Path(a)
        if p.is_dir():
            manifest = p / "manifest.json"
            if manifest.exists():
                try:
                    entries = json.loads(manifest.read_text(encoding="utf-8"))["packages"]
                    out.extend(str(p / e["file"]) for e in entries)
                except (ValueError, KeyError, TypeError) as exc:
                    raise MemauditError(f"{manifest}: not a package-set manifest ({exc})") from None
            else:
                files = sorted(str(f) for f in p.glob("*.json"))
                if not files:
                    raise MemauditError(f"{p}: a directory with no *.json package file")
                out.extend(files)
        else:
            out.append(str(p))
    return out




@click.command()
@click.argument("packages", nargs=-1, required=True, type=click.Path())
@click.option("--budget-frac", "budget_fracs", default="0.1,0.25,0.5", show_default=True, metavar="F1,F2,...",
              help="Budgets as fractions of the stream cost.")
@click.option("--methods", default=None, metavar="M1,M2:key=value,...",
              help="Methods scored against OPT, each optionally with settings (gvt-geometric:eps=0.05,"
                   "floor=0.01; 'memaudit settings methods' lists them). Default: those of 'memaudit compare'.")
@click.option("--db", type=click.Path(dir_okay=False), default=None, metavar="PATH", help=_DB_HELP)
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="1: run in this process without Dask; N: a local Dask cluster of N worker processes. "
                   "Default: one worker per core.")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on an existing Dask cluster (tcp://host:port) instead of a local one.")
@click.option("--backend", default="highs", show_default=True, metavar="highs|cbc|cpsat|none",
              help="Back-end that certifies OPT.")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Time limit of bnb and of the back-end each (a time-out is stored, not reported optimal).")
@click.option("--task-timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Give up a (package, budget) task after this long: its cells are listed as failed.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the random baseline.")
@click.option("--no-cache", "no_cache", is_flag=True, help="Recompute every cell, even those in the store.")
@click.option("--out", type=click.Path(dir_okay=False), default=None, metavar="ROWS.parquet|ROWS.csv",
              help="Also write the grid's rows (one per cell) to this file.")
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: on a terminal).")
def sweep(packages, budget_fracs, methods, db, workers, scheduler, backend, time_limit, task_timeout, seed, no_cache,
          out, progress):
    """Every method at every budget on every PACKAGE, into the results store.

    PACKAGES are package files or set directories (a manifest.json's packages, else every
    *.json).  Cells already in the store (same package, budget, method, settings, memaudit and
    back-end versions) are not run again.  Failed cells (a crashing back-end, a dead worker, a
    task time-out) are listed with their errors and never reported as optimal; exit code 3 then.
    """
    from ..baselines import parse_method_specs
    from ..clitools import parse_fractions
    from .api import frame, write_rows
    from .store import open_store
    from .sweep import DEFAULT_SWEEP_METHODS, run_sweep

    names, settings = parse_method_specs(methods) if methods else (list(DEFAULT_SWEEP_METHODS), {})
    paths = _package_files(packages)
    store = open_store(db)
    try:
        rep = run_sweep(paths, parse_fractions(budget_fracs), names, db=store, workers=workers, scheduler=scheduler,
                        backend=backend, time_limit=time_limit, task_timeout=task_timeout, seed=seed,
                        use_cache=not no_cache, progress=progress, settings=settings)
        if out is not None:
            rows = store.get_many(rep.keys)
            write_rows(frame([rows[k] for k in rep.keys if k in rows]), out)
        path = store.path
    finally:
        store.close()
    safe_echo(f"sweep: {len(rep.cells)} cells ({len(paths)} packages x {len(parse_fractions(budget_fracs))} budgets x "
               f"(OPT + {len(names)} methods)): {rep.reused} reused, {rep.computed} computed, {len(rep.failed)} "
               f"failed; {rep.mode}; {rep.wall_time:.3g} s; store {path}")
    for c in rep.failed:
        safe_echo(f"  failed: {c.package} budget {c.budget_frac:g} {c.method}: {c.error}")
    if out is not None:
        safe_echo(f"rows written to {out}")
    click.get_current_context().exit(3 if rep.failed else 0)


COMMANDS.append(sweep)


@click.command("html")
@click.option("--db", type=click.Path(dir_okay=False), default=None, metavar="PATH", help=_DB_HELP)
@click.option("-o", "--out", "out", type=click.Path(dir_okay=False), default="report.html", show_default=True,
              metavar="FILE.html", help="Where to write the page.")
@click.option("--title", default="memaudit results", show_default=True, help="Title of the page.")
def html_command(db, out, title):
    """The results store as one self-contained HTML page (inline figures, sortable tables)."""
    from ..errors import MemauditError
    from .html import write_html
    from .store import default_db_path

    path = Path(db) if db is not None else default_db_path()
    if not path.exists():
        raise MemauditError(f"{path}: no results store there; run 'memaudit sweep' or pass --db PATH")
    write_html(path, out, title=title)
    safe_echo(f"report written to {out}")
