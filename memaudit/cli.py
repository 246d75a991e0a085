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
   back-end declined the package: the store is reported with the reason);
   ``verify``: a check failed.

Any other exception is a bug and keeps its traceback.  Input files are never modified.
"""

from __future__ import annotations

import json

import click

from solvers.registry import METHODS

from . import __version__
from .certificate import build_certificate, load_certificate, verify_certificate, write_certificate, write_json
from .clitools import budget_options, check_budget_flags, num, pct, progress_printer, same_file, table_lines
from .errors import MemauditError
from .package import (COST_MODEL_UNITS, load_package, package_json_schema, resolve_budget, stream_cost,
                      summarize)
from .solve import BACKEND_ALIASES, solve_package, store_rows, uncovered_units

__all__ = ["main", "EXIT_OK", "EXIT_BAD_INPUT", "EXIT_USAGE", "EXIT_NOT_CERTIFIED"]

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_NOT_CERTIFIED = 3

_BACKEND_CHOICES = "highs|cbc|cpsat|none"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


class _Group(click.Group):
    """Turns every MemauditError into ``error: <message>`` on stderr and exit code 1."""

    def invoke(self, ctx):
        try:
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
         verify: a check failed
    """


# -- helpers -------------------------------------------------------------------

def _units_text(units: dict) -> str:
    if not units:
        return "-"
    return ", ".join(u if a == 1 else f"{u} ({num(a)})" for u, a in units.items())


def _print_solve(report) -> None:
    pkg, result = report.package, report.result
    unit = COST_MODEL_UNITS[pkg.cost_model]
    total = stream_cost(pkg)
    echo = click.echo
    echo(f"package {pkg.id}: {len(pkg.experiences)} experiences, {len(pkg.candidates)} candidates, "
         f"{len(pkg.units)} units; cost model {pkg.cost_model}")
    echo(f"budget {num(report.budget)} {unit} = {pct(report.budget, total)} of the stream cost "
         f"({num(total)} {unit})")
    echo("")
    if result.status == "optimal" and (report.certification is None or report.certification.certified):
        echo(f"OPT = {num(report.value)}")
    elif result.status == "optimal":
        echo(f"{result.method} claims OPT = {num(report.value)} (not confirmed by the back-end)")
    else:
        echo(f"value = {num(report.value)} (not proven optimal: {result.method} status {result.status}, "
             f"bound {num(result.bound)}, gap {result.gap:.3g})")
    echo(f"status: {report.status}")
    if report.certified:
        names = " + ".join(r.method for r in report.results)
        echo(f"certified by {names} (values agree within {report.certification.rtol:g})")
    else:
        echo("not certified:")
        for reason in report.reasons:
            echo(f"  - {reason}")
    echo("")
    rows = store_rows(report)
    echo(f"store ({len(rows)} candidates, grouped by experience in stream order):")
    if rows:
        table = [(r["experience"], r["candidate"], r["kind"], num(r["cost"]), _units_text(r["units"]))
                 for r in rows]
        for line in table_lines(("experience", "candidate", "kind", "cost", "units covered"), table,
                           ("<", "<", "<", ">", "<")):
            echo(line)
    else:
        echo("  (empty)")
    echo("")
    missing = uncovered_units(report)
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
    echo(f"cost {num(result.cost)} / budget {num(report.budget)} {unit} ({pct(result.cost, report.budget)} "
         "of the budget)")
    times = [f"{r.method} {r.wall_time:.3g} s ({r.status})" for r in report.results]
    if report.declined:
        times.append(f"{report.backend} declined")
    echo("times: " + ", ".join(times))


# -- commands --------------------------------------------------------------------

@main.command()
@click.argument("package", type=click.Path())
@budget_options
@click.option("--method", default="bnb", show_default=True, metavar="NAME",
              help="Method that chooses the store: " + ", ".join(sorted(METHODS)) + ".")
@click.option("--backend", default="highs", show_default=True, metavar=_BACKEND_CHOICES,
              help="Independent MILP back-end that certifies the optimum; 'none' skips certification.")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Time limit in seconds, for the method and for the back-end each.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (the certificate plus the store).")
@click.option("-o", "--output", type=click.Path(), default=None, metavar="CERTIFICATE.json",
              help="Write the certificate (memaudit-certificate/1) to this file.")
@click.option("-v", "--verbose", is_flag=True, help="Progress lines on stderr even when it is not a terminal.")
def solve(package, budget, budget_frac, method, backend, time_limit, as_json, output, verbose):
    """Solve PACKAGE exactly and certify the optimum with an independent back-end.

    Exit code 0 when the optimum is certified (or proven, with --backend none), 3 when the
    store is not certified (time-out, disagreement, back-end declined), 1 on bad input.
    """
    check_budget_flags(budget, budget_frac)
    if output is not None and same_file(output, package):
        raise MemauditError(f"{output}: refusing to write the certificate over the package itself; "
                            "choose another -o file")
    pkg = load_package(package)
    b = resolve_budget(pkg, budget=budget, budget_frac=budget_frac)
    report = solve_package(pkg, budget=b, method=method, backend=backend, time_limit=time_limit,
                           progress=progress_printer(verbose))
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
    feasibility at the certificate's budget, re-evaluates the store and re-solves with the
    back-end.  Exit code 0 when every check passes, 3 when one fails, 1 on bad input.
    """
    data = load_certificate(cert)
    say = progress_printer(verbose)
    if say and BACKEND_ALIASES.get(backend, backend) is not None:
        say(f"re-solving with {BACKEND_ALIASES.get(backend, backend)}...")
    report = verify_certificate(package, data, backend=backend, time_limit=time_limit)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(f"verifying {cert} against {package}")
        width = max(len(c.name) for c in report.checks)
        for c in report.checks:
            click.echo(f"  {c.outcome.upper():4}  {c.name.ljust(width)}  {c.detail}")
        click.echo(f"verdict: {report.verdict}")
    click.get_current_context().exit(EXIT_OK if report.passed else EXIT_NOT_CERTIFIED)


@main.command()
@click.argument("packages", nargs=-1, required=True, type=click.Path())
def validate(packages):
    """Check that each PACKAGE file follows the package format (exit 1 if any does not)."""
    failed = False
    for path in packages:
        try:
            pkg = load_package(path)
        except MemauditError as exc:
            click.echo(f"error: {_one_line(exc)}", err=True)
            failed = True
            continue
        click.echo(f"ok: {path} ({len(pkg.experiences)} experiences, {len(pkg.candidates)} candidates, "
                   f"{len(pkg.units)} units, {len(pkg.queries)} queries)")
    click.get_current_context().exit(EXIT_BAD_INPUT if failed else EXIT_OK)


@main.command()
@click.argument("package", type=click.Path())
@budget_options
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def inspect(package, budget, budget_frac, as_json):
    """Counts by kind, stream cost, units by kind, and the budget as a fraction of the stream cost."""
    check_budget_flags(budget, budget_frac)
    pkg = load_package(package)
    b = None
    if budget is not None or budget_frac is not None:
        b = resolve_budget(pkg, budget=budget, budget_frac=budget_frac)
    s = summarize(pkg, budget=b)
    if as_json:
        click.echo(json.dumps(s, indent=2, ensure_ascii=False))
        return
    unit = COST_MODEL_UNITS[pkg.cost_model]
    echo = click.echo
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
        echo(f"budget: {num(s['budget'])} {unit} = {s['budget_frac']:.4g} of the stream cost")


@main.command()
@click.option("-o", "--output", type=click.Path(), default=None, metavar="FILE",
              help="Write the schema to FILE instead of stdout.")
def schema(output):
    """Print the JSON Schema of the package format (memaudit-package/1)."""
    data = package_json_schema()
    if output is None:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        write_json(data, output)


# -- commands of the subpackages (each keeps its heavy imports inside its commands) --------

def _add_subpackage_commands() -> None:
    from .generators.cli import COMMANDS as generator_commands
    from .harness.cli import COMMANDS as harness_commands
    from .stores.cli import COMMANDS as store_commands

    for command in (*generator_commands, *harness_commands, *store_commands):
        main.add_command(command)


_add_subpackage_commands()


if __name__ == "__main__":  # pragma: no cover
    main()
