"""``memaudit solve`` and ``memaudit verify``: the exact optimum, its certificate and its re-check."""

from __future__ import annotations

import contextlib
import gc
import json
import math

import click

from memaudit_solvers.registry import SETTINGS, method_names

from ..baselines import parse_method_specs
from ..certificate import build_certificate, load_certificate, verify_certificate, write_certificate
from ..clitools import (budget_options, check_budget_flags, check_fraction, num, pct, plural, progress_printer, safe,
                        safe_echo, same_file, setting_flags, table_lines)
from ..errors import MemauditError
from ..fileio import check_output
from ..package import COST_MODEL_UNITS, load_package, resolve_budget, stream_cost
from ..results.cli import cache_options, make_cache, say_reused
from ..certification import AUTO_ORDER, TIME_BOX_CAP, TIME_BOX_FACTOR, TIME_BOX_FLOOR
from ..solve import BACKEND_ALIASES, store_rows, takes_time_limit, uncovered_units
from .common import BACKEND_CHOICES, DEFAULT_BACKEND_TIME_LIMIT, DEFAULT_METHOD_TIME_LIMIT, FLAG_ALIASES, exit_with

__all__ = ["COMMANDS"]


# -- helpers -------------------------------------------------------------------

def _units_text(units: dict) -> str:
    if not units:
        return "-"
    return ", ".join(u if a == 1 else f"{u} ({num(a)})" for u, a in units.items())


def _print_solve(report) -> None:
    pkg, result = report.package, report.result
    shown = report.best_result
    unit = COST_MODEL_UNITS[pkg.cost_model]
    total = stream_cost(pkg)
    lines: list[str] = []
    echo = lines.append      # printed at the end in one write (a store of 10,000 candidates is as many lines)
    echo(f"package {pkg.id}: {plural(len(pkg.experiences), 'experience')}, "
         f"{plural(len(pkg.candidates), 'candidate')}, {plural(len(pkg.units), 'unit')}; "
         f"cost model {pkg.cost_model}")
    echo(f"budget {num(report.budget)} {unit} = {pct(report.budget, total)} of the stream cost "
         f"({num(total)} {unit})")
    if report.backend_note:
        echo(report.backend_note)
    echo("")
    if result.status == "optimal" and (report.certification is None or report.certification.certified):
        echo(f"OPT = {num(report.value)}")
    elif result.status == "optimal":
        echo(f"{result.method} claims OPT = {num(report.value)} (not confirmed by the back-end)")
    elif report.backend_proved:
        echo(f"OPT = {num(shown.value)}, proved by {shown.method} alone; {result.method} stopped short "
             f"({_method_outcome(result)}, value {num(result.value)})")
    else:
        echo(f"value = {num(report.value)} (not proven optimal: {_method_outcome(result)})")
    echo(f"status: {report.status}")
    if report.certified:
        names = " + ".join(r.method for r in report.results)
        echo(f"certified by {names} (values agree within {report.certification.rtol:g})")
        for note in report.backend_failures:
            echo(f"  - first tried: {note}")
        proof = report.backend_result.stats.get("lattice") if report.backend_result is not None else None
        if proof is not None:                  # why the certificate holds, in one sentence
            echo(f"  - {report.backend_result.message}")
        warm = report.warm_started
        if warm is not None:
            echo(f"  - {report.backend} was warm-started from {warm['from']}'s store ({plural(warm['n_chosen'], 'candidate')}, "
                 f"F = {num(warm['value'])}): it checked that store in its own model and proved its own bound")
    else:
        echo("not certified:")
        for reason in report.reasons:
            echo(f"  - {reason}")
    echo("")
    rows = store_rows(report, shown)
    whose = f", {shown.method}'s" if shown is not result else ""
    echo(f"store ({plural(len(rows), 'candidate')}{whose}, grouped by experience in stream order):")
    if rows:
        table = [(r["experience"], r["candidate"], r["kind"], num(r["cost"]), _units_text(r["units"]))
                 for r in rows]
        for line in table_lines(("experience", "candidate", "kind", "cost", "units covered"), table,
                           ("<", "<", "<", ">", "<")):
            echo(line)
    else:
        echo("  (empty)")
    echo("")
    missing = uncovered_units(report, shown)
    total_weight = sum(u.weight for u in pkg.units)
    lost = sum(u["lost"] for u in missing)
    echo(f"units left uncovered: {len(missing)} of {len(pkg.units)} (weighted value {num(lost)} of "
         f"{num(total_weight)} missing)")
    if missing:
        table = [(u["unit"], u["kind"], num(u["weight"]), num(u["coverage"]), f"{u['level']:.3g}")
                 for u in missing]
        for line in table_lines(("unit", "kind", "weight", "coverage", "h/h(inf)"), table, ("<", "<", ">", ">", ">")):
            echo(line)
    echo("")
    echo(f"cost {num(shown.cost)} / budget {num(report.budget)} {unit} ({pct(shown.cost, report.budget)} "
         "of the budget)")
    times = [f"{r.method} {r.wall_time:.3g} s ({r.status})" for r in report.results]
    times[1:1] = [f"{a.backend} {a.seconds:.3g} s ({a.outcome})" for a in report.attempts
                  if not a.counted and a.outcome in ("timeout", "overran", "not proven", "failed")]
    if report.declined:
        times.append(f"{report.backend} declined")
    echo("times: " + ", ".join(times) + f"; start-up {report.startup_time:.3g} s (imports, compiling the package)")
    click.echo("\n".join(safe(str(line)) for line in lines))


@contextlib.contextmanager
def _frozen_gc():
    """Inside the block the objects alive at its start (a loaded package: ~100,000 of them at 10,000 experiences)
    sit in the collector's permanent generation, so its passes (a third of the content digest's time) and a
    forked certifying back-end (copy-on-write) leave them alone; after it they are collected as usual again.
    Left as it is when something else froze objects first."""
    mine = gc.get_freeze_count() == 0
    if mine:
        gc.freeze()
    try:
        yield
    finally:
        if mine:
            gc.unfreeze()


def _method_outcome(result) -> str:
    """``status timeout, bound 709.2, gap 0.24 %`` (a heuristic has no bound to show)."""
    if result.status == "heuristic":
        return f"{result.method} is a heuristic"
    text = f"{result.method} status {result.status}, bound {num(result.bound)}"
    if math.isfinite(result.gap):
        text += f", gap {pct(result.gap, 1)}"
    return text


@click.command()
@click.argument("package", type=click.Path())
@budget_options
@click.option("--method", default="bnb", show_default=True, metavar="NAME[:key=value,...]",
              help="Method that chooses the store, optionally with its settings (e.g. bnb:node_lp=false): "
                   + method_names() + ".")
@click.option("--backend", default="auto", show_default=True, metavar=BACKEND_CHOICES,
              help="Independent back-end that certifies the optimum: a MILP (highs, scip, cbc, cpsat) or the "
                   "lattice certificate (exact arithmetic: one budget price, every coupled component's stores, "
                   "the integer lattice of what a better store would lose; it proves the method's store or says "
                   "it cannot).  'auto' tries "
                   + ", ".join(AUTO_ORDER) + " in turn (without the method itself), each in a time box "
                   "(--backend-time-box), and falls through to the next on a time-out, decline, failure or "
                   "missing install; the report says which timed out after how long and which certified.  "
                   "A comma-separated list (e.g. scip,highs) is tried the same way in that order.  A named "
                   "back-end runs alone with its time limit as given; 'none' skips certification.")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Time limit of the method in seconds (for methods that take one).  "
                   f"[default: {DEFAULT_METHOD_TIME_LIMIT:g}]")
@click.option("--backend-time-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="SECONDS", help="Time limit of the certifying back-end in seconds (with 'auto': the time "
                                      "all its attempts share).  [default: "
                                      f"the --time-limit when given, else {DEFAULT_BACKEND_TIME_LIMIT:g}]")
@click.option("--backend-time-box", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="With --backend auto or a list: seconds each back-end gets before the next one runs; when all time "
                   "out, the one that came closest runs again with the time left.  [default: the larger of "
                   f"{TIME_BOX_FLOOR:g} s and {TIME_BOX_FACTOR:g} x the method's time, at most {TIME_BOX_CAP:g} s]")
@click.option("--warm-start/--no-warm-start", default=True, show_default=True,
              help="Give the certifying back-end the method's store as a MIP start (it checks that store in "
                   "its own model and proves its own bound; only its time changes).  The lattice certificate "
                   "needs the store, so without it auto starts with the MILPs.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (the certificate plus the store).")
@click.option("-o", "--output", type=click.Path(), default=None, metavar="CERTIFICATE.json",
              help="Write the certificate (memaudit-certificate/1) to this file.")
@click.option("-v", "--verbose", is_flag=True, help="Progress lines on stderr even when it is not a terminal.")
@setting_flags(SETTINGS, skip=("time_limit",), aliases=FLAG_ALIASES)
@cache_options
def solve(package, budget, budget_frac, method, backend, time_limit, backend_time_limit, backend_time_box,
          warm_start, as_json, output, verbose, setting_flags, db, no_cache):
    """Solve PACKAGE exactly and certify the optimum with an independent back-end.

    The budget is the package's own unless --budget or --budget-frac is given.  When the
    method stops at its time limit and the back-end proves the optimum, that optimum and its
    store are shown (not certified: one proof only).  On a terminal, progress goes to stderr.

    Exit code 0 when the optimum is certified (or proven, with --backend none), 3 when the
    store is not certified (time-out, disagreement, back-end declined), 1 on bad input.
    """
    check_budget_flags(budget, budget_frac)
    names, own = parse_method_specs(method)
    if len(names) != 1:
        raise MemauditError(f"--method takes one method; got {method!r}")
    method, settings = names[0], {**setting_flags, **own.get(names[0], {})}
    if output is not None and same_file(output, package):
        raise MemauditError(f"{output}: refusing to write the certificate over the package itself; "
                            "choose another -o file")
    pkg = load_package(package)
    with _frozen_gc():   # the package lives as long as the command: the collector need not walk it again
        if output is not None:
            check_output(output)  # a bad -o fails before the solve
        b = resolve_budget(pkg, budget=budget, budget_frac=budget_frac)
        check_fraction(budget_frac)
        if backend_time_limit is None:
            backend_time_limit = time_limit if time_limit is not None else DEFAULT_BACKEND_TIME_LIMIT
        if time_limit is None and takes_time_limit(method):
            time_limit = DEFAULT_METHOD_TIME_LIMIT
        cache = make_cache(db, no_cache, package)
        report = cache.solve_package(pkg, budget=b, method=method, backend=backend, time_limit=time_limit,
                                     backend_time_limit=backend_time_limit, progress=progress_printer(verbose),
                                     budget_frac=budget_frac, settings=settings, time_box=backend_time_box,
                                     warm_start=warm_start)
        say_reused(cache, quiet=as_json and not verbose)
        cert = build_certificate(report, package, budget_frac=budget_frac)
        if output is not None:
            write_certificate(cert, output)
        if as_json:
            doc = dict(cert, store_rows=store_rows(report), uncovered_units=uncovered_units(report))
            click.echo(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False))
        else:
            _print_solve(report)
            if output is not None:
                click.echo(f"certificate written to {output}")
    exit_with(report.status in ("certified", "optimal (not certified)"))


@click.command()
@click.argument("package", type=click.Path())
@click.argument("cert", type=click.Path())
@click.option("--backend", default="highs", show_default=True, metavar=BACKEND_CHOICES,
              help="Back-end that re-proves the optimum; 'none' skips the re-solve.")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Time limit in seconds for the re-solve.")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as one JSON document.")
@click.option("-v", "--verbose", is_flag=True, help="Progress lines on stderr even when it is not a terminal.")
def verify(package, cert, backend, time_limit, as_json, verbose):
    """Re-check certificate CERT against PACKAGE without trusting it.

    Re-reads the package and compares its sha256, maps the store ids to candidates, checks
    feasibility at the certificate's budget, re-evaluates the store, checks that certified: true
    is supported by the recorded results, and re-solves with the back-end.  Exit code 0 when every check passes, 3 when one fails, 1 on bad input.
    """
    data = load_certificate(cert)
    say = progress_printer(verbose)
    if say and BACKEND_ALIASES.get(backend, backend) is not None:
        say(f"re-solving with {BACKEND_ALIASES.get(backend, backend)}...")
    report = verify_certificate(package, data, backend=backend, time_limit=time_limit)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        safe_echo(f"verifying {cert} against {package}")
        width = max(len(c.name) for c in report.checks)
        for c in report.checks:
            safe_echo(f"  {c.outcome.upper():4}  {c.name.ljust(width)}  {c.detail}")
        click.echo(f"verdict: {report.verdict}")
    exit_with(report.passed)


COMMANDS = [solve, verify]
