"""``memaudit baseline`` and ``memaudit compare``: baselines as a ratio to the certified OPT."""

from __future__ import annotations

import json

import click

from memaudit_solvers.registry import BASELINES, ONLINE_METHODS, SETTINGS, method_names, method_settings

from ..baselines import DEFAULT_METHODS, parse_method_specs, score_methods
from ..baselines import compare as compare_methods
from ..clitools import (budget_options, check_budget_flags, check_fraction, num, parse_fractions, progress_printer,
                        same_file, setting_flags, settings_for, table_lines)
from ..errors import MemauditError
from ..fileio import atomic_write
from ..package import COST_MODEL_UNITS, load_package
from ..report import csv_text, plot_ratios
from ..results.cli import cache_options, make_cache, say_reused
from ..solve import resolve_method
from .common import BACKEND_CHOICES, FLAG_ALIASES, exit_with

__all__ = ["COMMANDS"]

#: the methods baseline and compare run, and their declared settings: one flag per setting name
_SCORED = {name: SETTINGS[name] for name in sorted({**BASELINES, **ONLINE_METHODS})}


def _baseline_options(f):
    f = setting_flags(_SCORED, aliases=FLAG_ALIASES)(f)
    f = click.option("--backend", default="highs", show_default=True, metavar=BACKEND_CHOICES,
                     help="Back-end that certifies OPT, the denominator of every ratio; 'none' skips it.")(f)
    f = click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
                     help="Time limit for computing OPT (bnb and the back-end each).")(f)
    f = click.option("--method", "methods", default=",".join(DEFAULT_METHODS),
                     show_default=", ".join(DEFAULT_METHODS),  # spaces: the help wraps between names
                     metavar="M1,M2,...", help="Comma-separated methods, each optionally with its settings "
                     "(NAME:key=value,key=value, e.g. gvt-geometric:eps=0.05): " + method_names() + ".  "
                     "A setting flag below applies to every listed method that declares it.")(f)
    return f


def _baseline_settings(methods, setting_flags_given):
    """``(names, {method: settings})``: the flags for every method declaring them, then each method's own."""
    names, own = parse_method_specs(methods)
    return names, {m: {**settings_for(method_settings(resolve_method(m)), setting_flags_given), **own.get(m, {})}
                   for m in names}


def _ratio_text(ratio) -> str:
    return "n/a" if ratio is None else f"{ratio:.3f}"


def _opt_warning(certified: bool, status: str) -> None:
    if not certified:
        click.echo(f"warning: OPT is {status}: ratios are against the best store found and may overstate "
                   "the baselines", err=True)


@click.command()
@click.argument("package", type=click.Path())
@budget_options
@_baseline_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("-v", "--verbose", is_flag=True, help="Progress lines on stderr even when it is not a terminal.")
@cache_options
def baseline(package, budget, budget_frac, methods, time_limit, backend, setting_flags, as_json, verbose, db,
             no_cache):
    """Score baselines on PACKAGE at one budget, as a ratio to the certified OPT.

    \b
    Per method: value, ratio = value / OPT, cost / budget, units fully covered,
    validity units fully covered (of those in the package), kinds stored, time.
    Offline: density and gvt (the MEMAUDIT paper's density-only and grouped
    value-threshold, stream order), density-global (global sort by value per
    cost), gvt-geometric (geometric threshold schedule), gvt-upgrade (it may
    exchange a group's stored representation), greedy (marginal gain per cost +
    best single), fact-only / summary-only / recency-raw (the paper's simple
    writers), random.  Online, deciding as each
    experience arrives: fifo (write while it fits), recency (keep the newest),
    kind:<k> (always write kind k, e.g. kind:fact).  Every registered method may be
    listed (--method); `memaudit settings methods` shows each one's settings.

    Exit code 0 when OPT is certified, 3 when it is not (the ratios are then against the
    best store found), 1 on bad input.
    """
    check_budget_flags(budget, budget_frac)
    check_fraction(budget_frac)
    names, settings = _baseline_settings(methods, setting_flags)
    pkg = load_package(package)
    rep = score_methods(pkg, budget=budget, budget_frac=budget_frac, methods=names, settings=settings, backend=backend,
                        time_limit=time_limit, progress=progress_printer(verbose),
                        cache=(cache := make_cache(db, no_cache, package)))
    say_reused(cache, quiet=as_json and not verbose)
    if as_json:
        click.echo(json.dumps(rep.to_dict(), indent=2, ensure_ascii=False, allow_nan=False))
        exit_with(rep.opt_certified)
    _opt_warning(rep.opt_certified, rep.opt_status)
    unit = COST_MODEL_UNITS[pkg.cost_model]
    click.echo(f"package {pkg.id}: budget {num(rep.budget)} {unit} = {rep.budget_frac:.3g} of the stream cost; "
               f"OPT = {num(rep.opt)} ({rep.opt_status})")
    rows = []
    for s in [rep.opt_store, *rep.scores]:
        name = "OPT (bnb)" if s is rep.opt_store else s.method
        rows.append((name, num(round(s.value, 9)), _ratio_text(s.ratio), f"{num(s.cost)}/{num(s.budget)}",
                     f"{s.units_covered}/{s.units_total}", f"{s.validity_covered}/{s.validity_total}",
                     " ".join(f"{k}:{n}" for k, n in s.kinds.items()) or "-", f"{s.wall_time:.3g}s"))
    for line in table_lines(("method", "value", "ratio", "cost/budget", "units", "validity", "kinds", "time"), rows,
                            ("<", ">", ">", ">", ">", ">", "<", ">")):
        click.echo(line)
    exit_with(rep.opt_certified)




@click.command()
@click.argument("package", type=click.Path())
@click.option("--budget-frac", "budget_fracs", default="0.1,0.25,0.5", show_default=True, metavar="F1,F2,...",
              help="Budgets as fractions of the stream cost.")
@_baseline_options
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV (one row per budget and method) instead of the table.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the same rows) instead of the table.")
@click.option("-o", "--output", type=click.Path(), default=None, metavar="FILE",
              help="Also write the rows to FILE: CSV if it ends in .csv, else JSON.")
@click.option("--plot", type=click.Path(), default=None, metavar="FILE.png",
              help="Save a plot of ratio to OPT against budget, one line per method.")
@click.option("-v", "--verbose", is_flag=True, help="Progress lines on stderr even when it is not a terminal.")
@cache_options
def compare(package, budget_fracs, methods, time_limit, backend, setting_flags, as_csv, as_json, output, plot,
            verbose, db, no_cache):
    """Every method at every budget on PACKAGE: ratios to the certified OPT.

    The table has one row per method and one column per budget fraction; each cell
    is value / OPT.  --csv / --json print the full rows (value, OPT, cost, units,
    validity units, kinds, time) for pandas or a spreadsheet.

    Exit code 0 when OPT is certified at every budget, 3 when it is not at some budget,
    1 on bad input.
    """
    if as_csv and as_json:
        raise click.UsageError("--csv and --json are mutually exclusive: give one of them")
    fracs = parse_fractions(budget_fracs)
    names, settings = _baseline_settings(methods, setting_flags)
    for path in (output, plot):
        if path is not None and same_file(path, package):
            raise MemauditError(f"{path}: refusing to write over the package itself; choose another file")
    pkg = load_package(package)
    rows = compare_methods(pkg, fracs, methods=names, settings=settings, backend=backend,
                           time_limit=time_limit, progress=progress_printer(verbose),
                           cache=(cache := make_cache(db, no_cache, package)))
    say_reused(cache, quiet=(as_csv or as_json) and not verbose)
    if output is not None:
        data = (csv_text(rows) if output.lower().endswith(".csv")
                else json.dumps(rows, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
        atomic_write(output, data.encode("utf-8"))
    if plot is not None:
        plot_ratios(rows, plot, pkg.id)
    uncertified = sorted({r["budget_frac"] for r in rows if not r["opt_certified"]})
    if as_csv:
        click.echo(csv_text(rows), nl=False)
        exit_with(not uncertified)
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False, allow_nan=False))
        exit_with(not uncertified)
    if uncertified:
        _opt_warning(False, f"not certified at budget fraction(s) {', '.join(map(str, uncertified))}")
    click.echo(f"package {pkg.id}: ratio to OPT (value / certified optimum) by budget fraction")
    order = ["OPT", *names]
    cell = {(r["method"], r["budget_frac"]): r for r in rows}
    table = [("OPT value", *[num(round(cell["OPT", f]["value"], 9)) for f in fracs])]
    for m in order[1:]:
        table.append((m, *[_ratio_text(cell[m, f]["ratio"]) for f in fracs]))
    table.append(("validity kept by OPT", *[f"{cell['OPT', f]['validity_covered']}/{cell['OPT', f]['validity_total']}"
                                           for f in fracs]))
    for line in table_lines(("method", *[f"{f:g}" for f in fracs]), table, ("<",) + (">",) * len(fracs)):
        click.echo(line)
    if output is not None:
        click.echo(f"rows written to {output}")
    if plot is not None:
        click.echo(f"plot written to {plot}")
    exit_with(not uncertified)


COMMANDS = [baseline, compare]
