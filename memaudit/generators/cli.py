"""Command-line commands of this subpackage; ``memaudit.cli`` adds every entry of ``COMMANDS``.

``memaudit generate small|validity|natural``, ``memaudit ablate`` and ``memaudit report findings``.
"""

from __future__ import annotations

import json

import click

__all__ = ["COMMANDS", "generate", "ablate_command", "report"]

#: click commands / groups added to the top-level ``memaudit`` group
COMMANDS: list[click.Command] = []


def _write_or_print(pkg, output) -> None:
    from ..package import package_to_dict, summarize
    from . import write_package

    if output is None:
        click.echo(json.dumps(package_to_dict(pkg), indent=2, ensure_ascii=False, allow_nan=False))
        return
    write_package(pkg, output)
    s = summarize(pkg)
    click.echo(f"wrote {output}: package {pkg.id}, {s['n_experiences']} experiences, {s['n_candidates']} "
               f"candidates, {s['n_units']} units, {s['n_queries']} queries, stream cost {s['stream_cost']:g} "
               f"({pkg.cost_model})", err=True)


def _common(f):
    f = click.option("--id", "package_id", default=None, metavar="ID",
                     help="Package id. Default: <family>-s<seed>.")(f)
    f = click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, metavar="FILE",
                     help="Write the package to FILE (atomically). Default: print the JSON on stdout.")(f)
    f = click.option("--seed", type=int, default=0, show_default=True, help="Seed of the generator.")(f)
    return f


@click.group()
def generate():
    """Generate a seeded, byte-for-byte reproducible package of one family."""


def _synthetic_command(family: str, defaults, doc: str):
    from ..costs import COST_MODELS

    def run(seed, output, package_id, **params):
        from . import generate as gen

        _write_or_print(gen(family, seed, package_id=package_id, **params), output)

    run.__doc__ = doc
    cmd = run
    helps = {
        "entities": "Entities (services) whose attributes are tracked (1-8).",
        "attributes": "Attributes per entity (1-8).",
        "min_updates": "Fewest updates of an attribute (0-9).",
        "max_updates": "Most updates of an attribute (0-9).",
        "restate_prob": "Chance of a restatement after each set / update.",
        "deletions": "Personal details stated and later deleted on request (0-4).",
        "deletion_updates": "Updates of each personal detail before its deletion (0-3).",
        "details": "Incident details (0-8).",
        "procedures": "Release procedures (at most one per entity).",
        "chatter": "Distractor experiences that cover nothing.",
        "validity_prob": "Chance that a superseded value gets a 'still valid?' query.",
        "interval_prob": "Chance that a superseded value gets a 'what was it on day d?' query.",
        "events_per_day": "Experiences per day (session), 1-1000: 5 minutes apart from 09:00, closer past 288 a day.",
    }
    for name in reversed(list(helps)):
        default = getattr(defaults, name)
        kind = float if isinstance(default, float) else int
        cmd = click.option(f"--{name.replace('_', '-')}", name, type=kind, default=default, show_default=True,
                           help=helps[name])(cmd)
    cmd = click.option("--cost-model", "cost_model", type=click.Choice(list(COST_MODELS)), default=defaults.cost_model,
                       show_default=True, help="Cost model of the candidate texts.")(cmd)
    cmd = _common(cmd)
    return generate.command(name=family)(cmd)


def _register_synthetic():
    from .synthetic import SMALL_DEFAULTS, VALIDITY_DEFAULTS

    _synthetic_command("small", SMALL_DEFAULTS,
                       "MEMAUDIT-Small: a few entities, short streams, mostly current-value queries.")
    _synthetic_command("validity", VALIDITY_DEFAULTS,
                       "Validity-heavy: long update chains, deletions, interval and validity queries.")


_register_synthetic()


@generate.command(name="natural")
@_common
@click.option("--filler/--no-filler", default=True, show_default=True,
              help="Keep the distractor exchanges (whole transcript) or only the 26 fact-bearing ones.")
@click.option("--filler-lines", type=int, default=16, show_default=True,
              help="Lines of generated code in each distractor reply.")
@click.option("--exchanges-per-session", type=int, default=12, show_default=True,
              help="Exchanges per day (the seed has 12).")
@click.option("--cost-model", type=click.Choice(["words", "chars", "bytes", "tokens"]), default="tokens",
              show_default=True, help="Cost model of the candidate texts.")
def natural(seed, output, package_id, filler, filler_lines, exchanges_per_session, cost_model):
    """The 30-session, 15-fact scenario of seed 001 (8 updated, 2 deleted on request) as a package."""
    from . import generate as gen

    pkg = gen("natural", seed, package_id=package_id, filler=filler, filler_lines=filler_lines,
              exchanges_per_session=exchanges_per_session, cost_model=cost_model)
    _write_or_print(pkg, output)


@click.command(name="ablate")
@click.argument("package", type=click.Path())
@click.option("--drop-kinds", required=True, metavar="KIND[,KIND...]",
              help="Candidate kinds to remove, e.g. tombstone,compound_update.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), metavar="OUT",
              help="Write the ablated package to OUT (atomically; never over PACKAGE).")
@click.option("--id", "package_id", default=None, metavar="ID",
              help="Id of the new package. Default: <id>-no-<kinds>.")
def ablate_command(package, drop_kinds, output, package_id):
    """Write PACKAGE without the candidates of the given kinds (units and queries unchanged).

    Fails (exit 1) when an experience would be left with no candidate. The new package's
    meta.ablation lists every ablation applied to it. Dropping raw (any group's most
    expensive candidate) lowers the stream cost, so --budget-frac budgets of OUT differ
    from PACKAGE's: compare the two at an absolute --budget (a note says so).
    """
    from ..clitools import same_file
    from ..errors import MemauditError
    from ..package import load_package, loaded_sha256, stream_cost
    from .ablate import ablate, parse_kinds

    kinds = parse_kinds(drop_kinds)
    if same_file(output, package):
        raise MemauditError(f"{output}: refusing to write the ablated package over its source; choose another -o")
    pkg = load_package(package)
    out = ablate(pkg, kinds, package_id=package_id, source_sha256=loaded_sha256(pkg))
    from . import write_package

    write_package(out, output)
    click.echo(f"wrote {output}: package {out.id}, dropped {out.meta['ablation'][-1]['n_dropped']} candidates "
               f"({', '.join(kinds)}); {len(out.candidates)} candidates left for {len(out.experiences)} experiences")
    before, after = stream_cost(pkg), stream_cost(out)
    if before != after:
        click.echo(f"note: the stream cost changed from {before:g} to {after:g}, so --budget-frac budgets of {output} "
                   "differ from its source's; compare the two at an absolute --budget", err=True)


@click.group()
def report():
    """Reports over the shipped package sets."""


COMMANDS.extend([generate, ablate_command, report])


@report.command(name="findings")
@click.option("--set", "sets", multiple=True, metavar="NAME",
              help="Package set under --root (repeatable). Default: small, validity, natural.")
@click.option("--root", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Directory holding the set directories. Default: packages_data/ of this checkout.")
@click.option("--methods", default=None, metavar="M1,M2,...",
              help="Methods to compare with OPT. Default: density, greedy, gvt, random, fifo, recency, "
                   "kind:raw, kind:fact, kind:update, kind:compound_update.")
@click.option("--resolve", is_flag=True,
              help="Recompute OPT and the ablated OPT with bnb instead of reading the certified manifest values.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows and aggregates as one JSON document.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Also write the per-package rows as CSV to FILE.")
def findings(sets, root, methods, resolve, as_json, output):
    """The paper's findings on the shipped sets: baselines vs certified OPT, and the ablation.

    Prints (a) the ratio to OPT (mean, min, n) and the share of validity units' weight
    preserved, per set, budget and method; (b) OPT without tombstone and compound_update
    candidates as a share of full OPT; then ours beside the paper's figures.
    """
    from ..findings import DEFAULT_METHODS, compute_findings, format_findings
    from ..clitools import progress_printer

    names = tuple(sets) or ("small", "validity", "natural")
    method_list = tuple(m.strip() for m in methods.split(",") if m.strip()) if methods else DEFAULT_METHODS
    found = compute_findings(names, root=root, methods=method_list, resolve=resolve,
                             progress=progress_printer(False))
    if output is not None:
        import csv
        import io

        from ..fileio import atomic_write

        buf = io.StringIO()
        keys = ["set", "package", "generator", "budget_frac", "budget", "method", "opt", "value", "ratio",
                "validity_share"]
        w = csv.DictWriter(buf, fieldnames=keys, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(found.rows)
        atomic_write(output, buf.getvalue().encode("utf-8"))
    if as_json:
        from ..findings import PAPER

        click.echo(json.dumps({"summary": found.summary(), "ablation": found.ablation_summary(),
                               "unavailable": found.unavailable, "paper": PAPER}, indent=2))
    else:
        click.echo(format_findings(found))
