"""The ``memaudit`` command line: parse, call the library, print.

Exit codes
----------
0  success: ``solve`` found a certified optimum (or a proven optimum with ``--backend none``);
   ``verify`` passed every check; ``validate`` / ``inspect`` / ``schema`` succeeded.
1  bad input: any :class:`memaudit.errors.MemauditError` (malformed package or certificate, bad
   budget, unknown method or back-end, a missing optional back-end, a method that cannot state
   the package).  One line ``error: <message>`` on stderr, no traceback.
2  command-line usage error (click's own: unknown option, --budget with --budget-frac, ...).
3  ``solve``: solved but not certified (time-out, the two results disagree, or the certifying
   back-end declined the package: the store is reported with the reason); ``baseline`` /
   ``compare``: OPT, the denominator, is not certified (at some budget);
   ``verify``: a check failed.

Any other exception is a bug and keeps its traceback.  Input files are never modified.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys

import click

from memaudit_solvers.registry import BASELINES, ONLINE_METHODS, SETTINGS, method_names, method_settings

from . import __version__
from .certificate import build_certificate, load_certificate, verify_certificate, write_certificate, write_json
from .baselines import DEFAULT_METHODS, parse_method_specs, score_methods
from .baselines import compare as compare_methods
from .clitools import (budget_options, check_budget_flags, check_fraction, num, parse_fractions, pct, plural,
                       progress_printer, safe, safe_echo, same_file, setting_flags, settings_for,
                       settings_lines, table_lines)
from .coupling import coupling_report
from .errors import MemauditError
from .fileio import atomic_write, check_output, guard_inputs
from .report import csv_text, plot_ratios
from .generators.density_trap import MAX_K as MAX_TRAP_K
from .generators.density_trap import TOPICS as TRAP_TOPICS
from .generators.density_trap import density_trap
from .package import (COST_MODEL_UNITS, load_package, package_json_schema, package_to_dict, resolve_budget,
                      save_package, stream_cost, summarize)
from .solve import BACKEND_ALIASES, resolve_method, store_rows, takes_time_limit, uncovered_units
from .results.cli import cache_options, make_cache, say_reused

__all__ = ["main", "run", "EXIT_OK", "EXIT_BAD_INPUT", "EXIT_USAGE", "EXIT_NOT_CERTIFIED"]

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_NOT_CERTIFIED = 3

_BACKEND_CHOICES = "auto|highs|cbc|cpsat|scip|none"

#: default time limits of ``solve`` (seconds): the method, then the certifying back-end
DEFAULT_METHOD_TIME_LIMIT = 60.0
DEFAULT_BACKEND_TIME_LIMIT = 300.0

#: the methods baseline and compare run, and their declared settings: one flag per setting name
_SCORED = {name: SETTINGS[name] for name in sorted({**BASELINES, **ONLINE_METHODS})}

#: flag names older than the generated ones, kept working
_FLAG_ALIASES = {"eps": ("--gvt-eps",), "floor": ("--gvt-floor",)}


def _one_line(exc: BaseException) -> str:
    return safe(" ".join(str(exc).split()))


class _Group(click.Group):
    """Turns every MemauditError into ``error: <message>`` on stderr and exit code 1."""

    def invoke(self, ctx):
        try:
            with guard_inputs():
                return super().invoke(ctx)
        except MemauditError as exc:
            click.echo(f"error: {_one_line(exc)}", err=True)
            ctx.exit(EXIT_BAD_INPUT)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="memaudit")
def main():
    """Exact, certified auditing of budgeted LLM memory writing (MEMAUDIT packages).

    \b
    Exit codes:
      0  success (solve: certified optimum, or proven optimum with --backend none;
         verify: every check passed)
      1  bad input: malformed package or certificate, bad budget, unknown method or
         back-end, missing back-end ("error: <message>" on stderr)
      2  command-line usage error
      3  solve: solved but not certified (time-out, disagreement, back-end declined);
         baseline / compare: OPT not certified; verify: a check failed
    """


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
    echo = safe_echo
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
    if report.declined:
        times.append(f"{report.backend} declined")
    echo("times: " + ", ".join(times) + f"; start-up {report.startup_time:.3g} s (imports, compiling the package)")


def _method_outcome(result) -> str:
    """``status timeout, bound 709.2, gap 0.24 %`` (a heuristic has no bound to show)."""
    if result.status == "heuristic":
        return f"{result.method} is a heuristic"
    text = f"{result.method} status {result.status}, bound {num(result.bound)}"
    if math.isfinite(result.gap):
        text += f", gap {pct(result.gap, 1)}"
    return text


# -- commands --------------------------------------------------------------------

@main.command()
@click.argument("package", type=click.Path())
@budget_options
@click.option("--method", default="bnb", show_default=True, metavar="NAME[:key=value,...]",
              help="Method that chooses the store, optionally with its settings (e.g. bnb:node_lp=false): "
                   + method_names() + ".")
@click.option("--backend", default="auto", show_default=True, metavar=_BACKEND_CHOICES,
              help="Independent MILP back-end that certifies the optimum; 'auto' is highs, or cbc when "
                   "the method is milp-highs; 'none' skips certification.")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Time limit of the method in seconds (for methods that take one).  "
                   f"[default: {DEFAULT_METHOD_TIME_LIMIT:g}]")
@click.option("--backend-time-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="SECONDS", help="Time limit of the certifying back-end in seconds.  [default: "
                                      f"the --time-limit when given, else {DEFAULT_BACKEND_TIME_LIMIT:g}]")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (the certificate plus the store).")
@click.option("-o", "--output", type=click.Path(), default=None, metavar="CERTIFICATE.json",
              help="Write the certificate (memaudit-certificate/1) to this file.")
@click.option("-v", "--verbose", is_flag=True, help="Progress lines on stderr even when it is not a terminal.")
@setting_flags(SETTINGS, skip=("time_limit",), aliases=_FLAG_ALIASES)
@cache_options
def solve(package, budget, budget_frac, method, backend, time_limit, backend_time_limit, as_json, output,
          verbose, setting_flags, db, no_cache):
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
                                 budget_frac=budget_frac, settings=settings)
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
    ok = report.status in ("certified", "optimal (not certified)")
    click.get_current_context().exit(EXIT_OK if ok else EXIT_NOT_CERTIFIED)


@main.command()
@click.argument("package", type=click.Path())
@click.argument("cert", type=click.Path())
@click.option("--backend", default="highs", show_default=True, metavar=_BACKEND_CHOICES,
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
    click.get_current_context().exit(EXIT_OK if report.passed else EXIT_NOT_CERTIFIED)


@main.command()
@click.argument("packages", nargs=-1, required=True, type=click.Path())
def validate(packages):
    """Check that each PACKAGE file follows the package format (exit 1 if any does not).

    A set manifest (memaudit-manifest/1, as in packages_data/*/manifest.json) matched by a
    glob is recognised and skipped with a note.
    """
    failed = False
    for path in packages:
        if _is_manifest(path):
            click.echo(f"skip: {path} is a set manifest (memaudit-manifest/1), not a package")
            continue
        try:
            pkg = load_package(path)
        except MemauditError as exc:
            click.echo(f"error: {_one_line(exc)}", err=True)
            failed = True
            continue
        safe_echo(f"ok: {path} ({len(pkg.experiences)} experiences, {len(pkg.candidates)} candidates, "
                   f"{len(pkg.units)} units, {len(pkg.queries)} queries)")
    click.get_current_context().exit(EXIT_BAD_INPUT if failed else EXIT_OK)


def _is_manifest(path: str) -> bool:
    """True when ``path`` names a set manifest: ``manifest.json`` whose ``format`` is the manifest's."""
    from .generators.datasets import MANIFEST_FORMAT
    if os.path.basename(path) != "manifest.json":
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return f'"format": "{MANIFEST_FORMAT}"'.encode() in head


@main.command()
@click.argument("package", type=click.Path())
@budget_options
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def inspect(package, budget, budget_frac, as_json):
    """Counts by kind, stream cost, units by kind, the budget as a fraction of the stream cost, and
    the coupling: independent parts of the package (experiences linked by a shared unit)."""
    check_budget_flags(budget, budget_frac)
    pkg = load_package(package)
    b = None
    if budget is not None or budget_frac is not None:
        b = resolve_budget(pkg, budget=budget, budget_frac=budget_frac)
        check_fraction(budget_frac)
    s = summarize(pkg, budget=b)
    coupling = coupling_report(pkg)
    if as_json:
        click.echo(json.dumps(dict(s, coupling=coupling.to_dict()), indent=2, ensure_ascii=False))
        return
    unit = COST_MODEL_UNITS[pkg.cost_model]
    echo = safe_echo
    echo(f"package {s['id']} ({s['format']}), cost model {s['cost_model']} (costs from {s['cost_source']})")
    echo(f"{s['n_experiences']} experiences, {s['n_candidates']} candidates, {s['n_units']} units, "
         f"{s['n_queries']} queries")
    echo("candidates by kind: " + ", ".join(f"{k} {n} (cost {num(s['cost_by_kind'][k])})"
                                           for k, n in s["candidates_by_kind"].items()))
    echo("units by kind: " + ", ".join(f"{k} {n}" for k, n in s["units_by_kind"].items()))
    echo(f"stream cost: {num(s['stream_cost'])} {unit}")
    if s["budget"] is None:
        echo("budget: none in the package (pass --budget or --budget-frac)")
    else:
        echo(f"budget: {num(s['budget'])} {unit} = {pct(s['budget'], s['stream_cost'])} of the stream cost")
    echo(f"coupling: {plural(coupling.n_components, 'independent part')} ({coupling.n_singletons} of one experience); "
         f"the largest has {plural(coupling.largest_experiences, 'experience')} and "
         f"{plural(coupling.largest_units, 'unit')}; {plural(coupling.n_shared_units, 'unit')} covered from more "
         f"than one experience (at most {coupling.max_experiences_per_unit})")


@main.command()
@click.option("--format", "doc_format",
              type=click.Choice(["package", "certificate", "manifest", "scenario", "run"]),
              default="package", show_default=True,
              help="Which document: package (memaudit-package/1), certificate (memaudit-certificate/1), "
                   "manifest (memaudit-manifest/1), scenario (memaudit-scenario/1) or run "
                   "(memaudit-harness-run/1).")
@click.option("-o", "--output", type=click.Path(), default=None, metavar="FILE",
              help="Write the schema to FILE instead of stdout.")
def schema(doc_format, output):
    """Print the JSON Schema of a memaudit document format (default: the package format)."""
    from .formats.certificate import Certificate
    from .formats.documents import Manifest, RunDocument
    from .formats.scenario import ScenarioFile

    models = {"certificate": Certificate, "manifest": Manifest, "scenario": ScenarioFile, "run": RunDocument}
    data = package_json_schema() if doc_format == "package" else models[doc_format].model_json_schema()
    if output is None:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        write_json(data, output)


# -- baselines -------------------------------------------------------------------

def _baseline_options(f):
    f = setting_flags(_SCORED, aliases=_FLAG_ALIASES)(f)
    f = click.option("--backend", default="highs", show_default=True, metavar=_BACKEND_CHOICES,
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


def _exit_certified(certified: bool) -> None:
    """End the command with ``solve``'s contract: 0 when OPT is certified, 3 when it is not."""
    click.get_current_context().exit(EXIT_OK if certified else EXIT_NOT_CERTIFIED)


def _opt_warning(certified: bool, status: str) -> None:
    if not certified:
        click.echo(f"warning: OPT is {status}: ratios are against the best store found and may overstate "
                   "the baselines", err=True)


@main.command()
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
    kind:<k> (always write kind k, e.g. kind:fact).

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
        _exit_certified(rep.opt_certified)
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
    _exit_certified(rep.opt_certified)




@main.command()
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
        _exit_certified(not uncertified)
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False, allow_nan=False))
        _exit_certified(not uncertified)
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
    _exit_certified(not uncertified)


@click.command("density-trap")
@click.option("--k", "k", type=click.IntRange(2, MAX_TRAP_K), default=10, show_default=True,
              help="Units per topic: the current value and K - 1 retired values; density keeps about 1/K.")
@click.option("--topics", type=click.IntRange(1, len(TRAP_TOPICS)), default=1, show_default=True,
              help="Number of topics (experiences).")
@click.option("--cost-model", type=click.Choice(["words", "chars", "bytes", "tokens"]), default="words",
              show_default=True, help="Cost model of the package.")
@click.option("-o", "--output", type=click.Path(), default=None, metavar="PACKAGE.json",
              help="Write the package here (default: print it).")
@click.option("--budget", type=click.FloatRange(min=0), default=None, metavar="B",
              help="Write this budget instead of the construction's (the cost of the compound updates).")
@click.option("--budget-frac", "budget_frac", type=click.FloatRange(min=0), default=None, metavar="F",
              help="Write budget = F x the stream cost instead of the construction's.")
def density_trap_command(k, topics, cost_model, output, budget, budget_frac):
    """A package where density-only selection keeps about 1/K of OPT.

    Each topic is one experience that moves an attribute to a new value and retires
    K - 1 old ones.  Its fact is the densest candidate, so density stores it and the
    experience's one slot is gone: the compound update (OPT) can never follow.
    Density's ratio is 1 / (1 + w (K - 1)), w = 0.9 with words, at the package's own
    budget (the compound updates' cost; --budget / --budget-frac write another).  See
    memaudit/generators/density_trap.py for the construction.
    """
    from .generators import with_budget

    check_budget_flags(budget, budget_frac)
    pkg = with_budget(density_trap(k, topics=topics, cost_model=cost_model), budget=budget, budget_frac=budget_frac)
    if output is None:
        click.echo(json.dumps(package_to_dict(pkg), indent=2, ensure_ascii=False, allow_nan=False))
    else:
        save_package(pkg, output)
        trap = ("" if budget is not None or budget_frac is not None else
                f"; density keeps {pkg.meta['density_ratio_by_construction']:.3f} of OPT by construction")
        click.echo(f"wrote {output}: {len(pkg.candidates)} candidates, {len(pkg.units)} units, budget "
                   f"{num(pkg.budget)}{trap}")


@main.command("settings")
@click.argument("what", type=click.Choice(["methods", "policies", "readers", "importers", "all"]), default="all")
def settings_command(what):
    """Every registered method, harness policy, reader and vendor importer with its declared settings.

    Give them as NAME:key=value,... (--method, --policy, --reader) or with the flags of the
    command; every line below is read from the declarations beside the registry entries.
    """
    from .harness.policies import POLICY_SETTINGS
    from .harness.readers import READER_SETTINGS
    from .stores import IMPORTER_SETTINGS

    tables = {"methods": {**SETTINGS, "kind:<k>": ()}, "policies": POLICY_SETTINGS, "readers": READER_SETTINGS,
              "importers": IMPORTER_SETTINGS}
    for name, table in tables.items():
        if what in (name, "all"):
            click.echo(f"{name}:")
            for line in settings_lines(table):
                click.echo("  " + line)


# -- commands of the subpackages (each keeps its heavy imports inside its commands) --------

def _add_subpackage_commands() -> None:
    from .diagnose.cli import COMMANDS as diagnose_commands
    from .generators.cli import COMMANDS as generator_commands
    from .harness.cli import COMMANDS as harness_commands
    from .locomo.cli import COMMANDS as locomo_commands
    from .results.cli import COMMANDS as results_commands
    from .results.cli import html_command
    from .stores.cli import COMMANDS as store_commands

    for command in (*generator_commands, *harness_commands, *store_commands, *locomo_commands,
                    *diagnose_commands, *results_commands):
        main.add_command(command)
    main.commands["generate"].add_command(density_trap_command)
    main.commands["report"].add_command(html_command)


_add_subpackage_commands()


def run() -> None:
    """The ``memaudit`` console script: :func:`main` with the default SIGPIPE action, so a
    closed pipe (``memaudit solve PKG | head``) ends the command quietly, as for any Unix tool."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()


if __name__ == "__main__":  # pragma: no cover
    run()
