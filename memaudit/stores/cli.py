"""Command-line commands of this subpackage; ``memaudit.cli`` adds every entry of ``COMMANDS``.

``memaudit union`` builds a union package, ``memaudit audit`` scores an exported store over OPT of
its union package, ``memaudit adjudicate`` writes an adjudication file (from the matcher or a judge
command).  Exit codes: 0 success, 1 bad input (one ``error:`` line), 2 usage.
"""

from __future__ import annotations

import json

import click

from ..clitools import budget_options, check_budget_flags, num, safe_echo, same_file, setting_flags, table_lines

__all__ = ["COMMANDS"]

_PRODUCT_CHOICE = click.Choice(["mem0", "letta", "amem"])
def _export_options(f):
    """The importers' flags, one per declared setting (:data:`memaudit.stores.IMPORTER_SETTINGS`:
    ``--max-bytes``, ``--as-of``, ``--include-messages``), and ``--no-messages``, kept as the short
    form of ``--include-messages false``; the command gets ``importer_flags`` and ``no_messages``."""
    from . import IMPORTER_SETTINGS

    f = click.option("--no-messages", is_flag=True, help="Same as --include-messages false.")(f)
    return setting_flags(IMPORTER_SETTINGS, dest="importer_flags", kind="importers")(f)


def _import_options(importer_flags: dict, no_messages: bool) -> dict:
    """The keyword arguments of :func:`memaudit.stores.load_any` from the importer flags given."""
    from .export import DEFAULT_MAX_BYTES

    if no_messages and importer_flags.get("include_messages"):
        raise click.UsageError("--no-messages contradicts --include-messages true")
    options = {"max_bytes": DEFAULT_MAX_BYTES, "include_messages": True, "as_of": None, **importer_flags}
    if no_messages:
        options["include_messages"] = False
    return options


def _rows(pkg, export, adjudication):
    from .adjudication import combine_rows, read_adjudication

    file_rows = read_adjudication(adjudication, pkg, export) if adjudication else None
    rows, counts = combine_rows(pkg, export, file_rows)
    sources = {"matcher": counts["matcher"]}
    if adjudication:
        sources[str(adjudication)] = counts["file"]
    return rows, sources


def _refuse_overwrite(output, *inputs):
    from ..errors import MemauditError

    for path in inputs:
        if path is not None and same_file(output, path):
            raise MemauditError(f"{output}: refusing to write over the input file {path}; choose another -o file")


@click.command("union")
@click.argument("package", type=click.Path())
@click.argument("export", type=click.Path())
@click.option("-o", "--output", type=click.Path(), required=True, metavar="UNION.json",
              help="Where to write the union package.")
@click.option("--product", type=_PRODUCT_CHOICE, default=None, help="Which product wrote EXPORT (default: detected).")
@click.option("--adjudication", type=click.Path(), default=None, metavar="FILE",
              help="CSV / JSON rows (memory, unit, coverage[, experience]); memories it names use its rows, "
                   "the rest the deterministic matcher.")
@_export_options
def union_command(package, export, output, product, adjudication, importer_flags, no_messages):
    """Write the union package of PACKAGE and the exported store EXPORT.

    Every exported memory becomes an `external` candidate in its own group (unless the
    adjudication file ties it to an experience), with coverage from the adjudication file or
    the matcher.  The result is an ordinary package: `memaudit solve` and `verify` accept it.
    """
    from ..package import load_package, save_package
    from . import load_any
    from .union import build_union

    _refuse_overwrite(output, package, export, adjudication)
    pkg = load_package(package)
    exp = load_any(export, product, **_import_options(importer_flags, no_messages))
    rows, sources = _rows(pkg, exp, adjudication)
    union = build_union(pkg, exp, rows, sources=sources)
    save_package(union.package, output)
    covering = len({r.memory for r in rows if r.unit is not None and r.coverage > 0})
    safe_echo(f"{exp.shape}: {len(exp.items)} memories ({covering} cover a unit)")
    for w in exp.warnings:
        safe_echo(f"warning: {w}", err=True)
    if not exp.scores_store:
        safe_echo(f"warning: {export} is a partial view of the store: a score of this union describes only the "
                   f"{len(exp.items)} memories it shows, not the store", err=True)
    safe_echo(f"union package {union.package.id} written to {output}: {len(union.package.candidates)} candidates "
               f"({len(exp.items)} external), {len(union.package.experiences)} experiences")


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _print_audit(r):
    echo = safe_echo
    echo(f"audit of {r.product} export {r.export_path} ({r.shape})")
    if not r.scored:
        echo(f"package {r.package_id}: a partial view of the store ({r.n_items} memories); coverage from "
             + ", ".join(f"{k}: {v}" for k, v in r.adjudication.items()))
        echo("ratios: not scored (a partial view cannot score the full store)")
    else:
        _print_ratios(r)
    echo("")
    _print_findings(r)
    echo("")
    echo(f"verdict: {r.verdict}")


def _print_ratios(r):
    echo = safe_echo
    echo(f"package {r.package_id}, budget {num(r.budget)} ({r.cost_model}), OPT(union, B) = {num(r.opt)} "
         f"[{r.opt_status}]")
    echo(f"{r.n_items} memories, full store cost {num(r.store_cost)}, value {num(r.store_value)}; coverage from "
         + ", ".join(f"{k}: {v}" for k, v in r.adjudication.items()))
    echo("")
    rows = [("selected store", _pct(r.selected), "the whole store as the product injects it"
             + (" (over budget: 0 as a full-store view)" if r.over_budget else "")),
            ("upper-pruned", _pct(r.upper_pruned), f"best subset of the export within B ({len(r.upper_ids)} memories; "
                                                     f"{r.upper_status}): extraction"),
            ("salience-pruned", _pct(r.salience_pruned), f"the export cut to B in the product's order "
                                                           f"({len(r.salience_ids)} memories): selection")]
    for line in table_lines(("ratio", "of OPT", "what it measures"), rows, ("<", ">", "<")):
        echo(line)


def _print_findings(r):
    echo = safe_echo
    if not r.checked_leaks:
        echo("leaks / stale: not checked (the package has no meta.store_audit)")
    else:
        echo(f"leaks (deleted values still held): {len(r.leaks)}")
        for leak in r.leaks:
            echo(f"  {leak['attribute']}: {leak['memory']} [{leak['source']}] {leak['text'][:70]!r}")
        if r.retained_leaks:
            echo(f"deleted values kept outside the served store: {len(r.retained_leaks)}")
            for leak in r.retained_leaks:
                echo(f"  {leak['attribute']}: {leak['memory']} ({leak['where']})")
        echo(f"stale (superseded value held, current one not): {len(r.stale)}")
        for s in r.stale:
            echo(f"  {s['attribute']}: {', '.join(s['memories'])}")
        echo(f"conflicts (superseded value stated as current beside the current one): "
             f"{', '.join(c['attribute'] for c in r.conflicts) or 'none'}")
    if r.uncovered:
        echo(f"units no memory covers: {', '.join(r.uncovered)}")
    for w in r.warnings:
        echo(f"warning: {w}")


@click.command("audit")
@click.argument("package", type=click.Path())
@click.argument("export", type=click.Path(), required=False)
@click.option("--product", type=_PRODUCT_CHOICE, default=None, help="Which product wrote EXPORT (default: detected).")
@click.option("--mem0", "mem0_file", type=click.Path(), default=None, metavar="FILE",
              help="Alias of EXPORT --product mem0.")
@click.option("--letta", "letta_file", type=click.Path(), default=None, metavar="FILE",
              help="Alias of EXPORT --product letta.")
@click.option("--amem", "amem_file", type=click.Path(), default=None, metavar="FILE",
              help="Alias of EXPORT --product amem.")
@click.option("--adjudication", type=click.Path(), default=None, metavar="FILE",
              help="CSV / JSON rows (memory, unit, coverage[, experience]) overriding the matcher for the "
                   "memories they name.")
@budget_options
@click.option("--backend", default="highs", show_default=True, metavar="highs|cbc|cpsat|none",
              help="Back-end that certifies OPT and the upper-pruned store ('none' skips certification).")
@click.option("--json", "as_json", is_flag=True, help="Print the audit as one JSON document.")
@click.option("-o", "--union-output", type=click.Path(), default=None, metavar="UNION.json",
              help="Also write the union package.")
@_export_options
def audit_command(package, export, product, mem0_file, letta_file, amem_file, adjudication, budget, budget_frac,
                  backend, as_json, union_output, importer_flags, no_messages):
    """Audit the exported store EXPORT against OPT of its union with PACKAGE at budget B.

    Reports the selected-store ratio (the whole store; 0 when over budget), the upper-pruned
    ratio (best subset of the export within B: extraction quality), the salience-pruned ratio
    (the export cut to B in the product's own order: selection quality), deleted values still
    held (leaks), superseded values held without the current one (stale), and a verdict.
    B defaults to the package's own budget; --budget-frac is a fraction of the package's stream cost.
    A partial view (search results, one item, an add() return, one page, a by-tag resource)
    cannot score the store: its leaks and stale values are reported, its ratios are not.
    """
    from ..package import load_package, save_package
    from ..solve import resolve_backend
    from . import load_any
    from .audit import audit_export

    check_budget_flags(budget, budget_frac)
    given = [(p, f) for p, f in (("mem0", mem0_file), ("letta", letta_file), ("amem", amem_file)) if f is not None]
    if export is not None:
        given.append((product, export))
    elif product is not None and len(given) == 1 and given[0][0] != product:
        raise click.UsageError(f"--product {product} contradicts --{given[0][0]}")
    if len(given) != 1:
        raise click.UsageError("give exactly one export: EXPORT [--product mem0|letta|amem] (or --mem0 FILE, "
                               "--letta FILE, --amem FILE)")
    product, path = given[0]
    if union_output is not None:
        _refuse_overwrite(union_output, package, path, adjudication)
    pkg = load_package(package)
    exp = load_any(path, product, **_import_options(importer_flags, no_messages))
    rows, sources = _rows(pkg, exp, adjudication)
    report, union = audit_export(pkg, exp, rows, budget=budget, budget_frac=budget_frac,
                                 backend=resolve_backend(backend), sources=sources)
    if union_output is not None:
        save_package(union.package, union_output)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False))
    else:
        _print_audit(report)
        if union_output is not None:
            safe_echo(f"union package written to {union_output}")


@click.command("adjudicate")
@click.argument("package", type=click.Path())
@click.argument("export", type=click.Path())
@click.option("-o", "--output", type=click.Path(), required=True, metavar="FILE",
              help="The adjudication file to write (.csv, or JSON for any other name).")
@click.option("--product", type=_PRODUCT_CHOICE, default=None, help="Which product wrote EXPORT (default: detected).")
@click.option("--judge-cmd", default=None, metavar="CMD",
              help="A command that reads one prompt on stdin and answers {unit id: coverage} (e.g. 'llm -m MODEL'). "
                   "Default: the deterministic matcher.")
@click.option("--cache-dir", type=click.Path(), default=".memaudit-judge-cache", show_default=True,
              help="Where the judge's answers are cached (the layout `memaudit harness run --cache-dir` shares).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=120.0, show_default=True,
              metavar="SECONDS", help="Time allowed per judge call (the command's process group is killed after).")
@click.option("--retries", type=click.IntRange(min=0), default=2, show_default=True,
              help="Extra attempts after a failed or timed-out judge call.")
@click.option("--backoff", type=click.FloatRange(min=0), default=1.0, show_default=True, metavar="SECONDS",
              help="Wait before the first retry (doubled before each further one).")
@_export_options
def adjudicate_command(package, export, output, product, judge_cmd, cache_dir, timeout, retries, backoff,
                       importer_flags, no_messages):
    """Write an adjudication file for EXPORT: one row per (memory, unit) with its coverage.

    Without --judge-cmd the rows are the deterministic matcher's (a starting point to review by
    hand); with it, every memory is put to the judge command (answers cached in --cache-dir).
    Memories that cover nothing get one row with an empty unit, so the file decides them too.
    A memory whose answer is unusable (no JSON object, an unknown unit, a coverage outside
    [0, 1]) is reported as failed and left out of the file, so the matcher decides it.
    """
    from ..clitools import progress_printer
    from ..package import load_package
    from . import load_any
    from .adjudication import judge_rows, write_adjudication
    from .matcher import CoverageRow, matcher_rows

    _refuse_overwrite(output, package, export)
    pkg = load_package(package)
    exp = load_any(export, product, **_import_options(importer_flags, no_messages))
    failed = []
    if judge_cmd is not None:
        run = judge_rows(pkg, exp, judge_cmd, cache_dir=cache_dir, timeout=timeout, retries=retries, backoff=backoff,
                         progress=progress_printer(False))
        rows, failed = run.rows, run.failed
    else:
        rows = matcher_rows(pkg, exp)
        decided = {r.memory for r in rows}
        rows += [CoverageRow(item.id, None, 0.0, "matcher") for item in exp.items if item.id not in decided]
        order = {item.id: k for k, item in enumerate(exp.items)}
        rows.sort(key=lambda r: order[r.memory])
    write_adjudication(output, rows)
    n_cover = len({r.memory for r in rows if r.unit is not None})
    safe_echo(f"{len(rows)} rows for {len(exp.items) - len(failed)} memories ({n_cover} cover a unit) from "
               f"{'judge ' + repr(judge_cmd) if judge_cmd else 'the matcher'} written to {output}")
    if failed:
        safe_echo(f"warning: the judge's answer was unusable for {len(failed)} memor"
                   f"{'y' if len(failed) == 1 else 'ies'} (left out of the file, so the matcher decides them):",
                   err=True)
        for f in failed:
            safe_echo(f"  {f['reason']}", err=True)


#: click commands / groups added to the top-level ``memaudit`` group
COMMANDS: list[click.Command] = [union_command, audit_command, adjudicate_command]
