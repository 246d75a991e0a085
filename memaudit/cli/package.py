"""``memaudit validate``, ``inspect`` and ``schema``: the package and document formats."""

from __future__ import annotations

import json
import os

import click

from ..certificate import write_json
from ..clitools import budget_options, check_budget_flags, check_fraction, num, pct, plural, safe, safe_echo
from ..coupling import coupling_report
from ..errors import MemauditError
from ..package import COST_MODEL_UNITS, load_package, package_json_schema, resolve_budget, summarize
from .common import EXIT_BAD_INPUT, EXIT_OK, one_line

__all__ = ["COMMANDS", "one_line"]


@click.command()
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
            click.echo(f"error: {one_line(exc)}", err=True)
            failed = True
            continue
        safe_echo(f"ok: {path} ({len(pkg.experiences)} experiences, {len(pkg.candidates)} candidates, "
                   f"{len(pkg.units)} units, {len(pkg.queries)} queries)")
    click.get_current_context().exit(EXIT_BAD_INPUT if failed else EXIT_OK)


def _is_manifest(path: str) -> bool:
    """True when ``path`` names a set manifest: ``manifest.json`` whose ``format`` is the manifest's."""
    from ..generators.datasets import MANIFEST_FORMAT
    if os.path.basename(path) != "manifest.json":
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return f'"format": "{MANIFEST_FORMAT}"'.encode() in head


@click.command()
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


@click.command()
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
    from ..formats.certificate import Certificate
    from ..formats.documents import Manifest, RunDocument
    from ..formats.scenario import ScenarioFile

    models = {"certificate": Certificate, "manifest": Manifest, "scenario": ScenarioFile, "run": RunDocument}
    data = package_json_schema() if doc_format == "package" else models[doc_format].model_json_schema()
    if output is None:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        write_json(data, output)


COMMANDS = [validate, inspect, schema]
