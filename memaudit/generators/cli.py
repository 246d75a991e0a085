"""Command-line commands of this subpackage; ``memaudit.cli`` adds every entry of ``COMMANDS``.

``memaudit generate small|validity|natural|paper-small|paper-update-chain|paper-temporal-interval|density-trap``
(each family's flags and ``--help`` from its declared settings, :data:`memaudit.generators.GENERATOR_SETTINGS`),
``memaudit ablate``, ``memaudit report findings`` and ``memaudit report paper``.
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


def _budget_write_options(f):
    f = click.option("--budget-frac", "budget_frac", type=click.FloatRange(min=0), default=None, metavar="F",
                     help="Write budget = F x the stream cost (storing every experience verbatim) into the package.")(f)
    f = click.option("--budget", type=click.FloatRange(min=0), default=None, metavar="B",
                     help="Write this budget (in the package's cost unit) into the package. Default: none.")(f)
    return f


def _output_options(f, default_id: str = "<family>-s<seed>"):
    f = click.option("--id", "package_id", default=None, metavar="ID", help=f"Package id. Default: {default_id}.")(f)
    f = click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, metavar="FILE",
                     help="Write the package to FILE (atomically). Default: print the JSON on stdout.")(f)
    return _budget_write_options(f)


def _setting_options(f, declared):
    """One option per declared setting (help and metavar from the declaration; a bool is a
    ``--x/--no-x`` switch).  Values are only read here: :func:`memaudit.generators.generate` checks
    them with the one message template (``error: ...``, exit 1)."""
    from memaudit_solvers.settings import describe

    from ..clitools import SettingParam

    for s in reversed(declared):
        flag = "--" + s.name.replace("_", "-")
        if s.type is bool:
            f = click.option(f"{flag}/--no-{flag[2:]}", s.name, default=None, help=describe(s))(f)
        else:
            f = click.option(flag, s.name, type=SettingParam(s, flag, strict=False), default=None,
                             help=describe(s))(f)
    return f


@click.group()
def generate():
    """Generate a seeded, byte-for-byte reproducible package of one family."""


def _family_command(family: str, doc: str):
    from . import GENERATOR_SETTINGS

    declared = GENERATOR_SETTINGS[family]

    def run(output, budget, budget_frac, package_id=None, **settings):
        from ..clitools import check_budget_flags
        from . import generate as gen

        check_budget_flags(budget, budget_frac)
        given = {k: v for k, v in settings.items() if v is not None}
        pkg = gen(family, package_id=package_id, budget=budget, budget_frac=budget_frac, **given)
        if family == "density-trap":
            _write_trap(pkg, output, budget is not None or budget_frac is not None)
        else:
            _write_or_print(pkg, output)

    run.__doc__ = doc
    if family == "density-trap":
        cmd = _trap_output_options(run)
    else:
        seeded = any(s.name == "seed" for s in declared)
        cmd = _output_options(run, "<family>-s<seed>, plus -p<hash of the parameters> when they are not the "
                              "defaults" if len(declared) > 1 else "<family>-s<seed>" if seeded else family)
    return generate.command(name=family)(_setting_options(cmd, declared))


def _trap_output_options(f):
    f = click.option("--budget-frac", "budget_frac", type=click.FloatRange(min=0), default=None, metavar="F",
                     help="Write budget = F x the stream cost instead of the construction's.")(f)
    f = click.option("--budget", type=click.FloatRange(min=0), default=None, metavar="B",
                     help="Write this budget instead of the construction's (the cost of the compound updates).")(f)
    return click.option("-o", "--output", type=click.Path(), default=None, metavar="PACKAGE.json",
                        help="Write the package here (default: print it).")(f)


def _write_trap(pkg, output, budget_given: bool) -> None:
    from ..clitools import num
    from ..package import package_to_dict, save_package

    if output is None:
        click.echo(json.dumps(package_to_dict(pkg), indent=2, ensure_ascii=False, allow_nan=False))
        return
    save_package(pkg, output)
    trap = ("" if budget_given else
            f"; density keeps {pkg.meta['density_ratio_by_construction']:.3f} of OPT by construction")
    click.echo(f"wrote {output}: {len(pkg.candidates)} candidates, {len(pkg.units)} units, budget "
               f"{num(pkg.budget)}{trap}")


_DOCS = {
    "small": "MEMAUDIT-Small: a few entities, short streams, mostly current-value queries.",
    "validity": "Validity-heavy: long update chains, deletions, interval and validity queries.",
    "natural": "The 30-session, 15-fact scenario of the 30-session memory bench (8 updated, 2 deleted on request) "
               "as a package.",
    "paper-small": """MemAudit-Small, the MEMAUDIT paper's base package for one seed (arXiv 2605.02199).

    7 experiences (three facts, then two preferences: old statement and update), 25
    candidates with the paper's integer costs, 11 units; weights drawn from
    random.Random(SEED) in the paper's order.  See memaudit/generators/paper.py.
    """,
    "paper-update-chain": "The MEMAUDIT paper's update-chain stress package (deterministic: no seed).\n\n"
                          "Version 0, then three corrections, each with raw, fact, tombstone, compound_update and "
                          "summary\ncandidates: 4 experiences, 18 candidates, total candidate cost 51.",
    "paper-temporal-interval": "The MEMAUDIT paper's temporal-interval stress package (deterministic: no seed).\n\n"
                               "Five intervals (label fact, interval fact, coarse summary, raw), then two closures "
                               "of open\nintervals: 7 experiences, 30 candidates, total candidate cost 88.",
    "density-trap": """A package where density-only selection keeps about 1/K of OPT.

    Each topic is one experience that moves an attribute to a new value and retires
    K - 1 old ones.  Its fact is the densest candidate, so density stores it and the
    experience's one slot is gone: the compound update (OPT) can never follow.
    Density's ratio is 1 / (1 + w (K - 1)), w = 0.9 with words, at the package's own
    budget (the compound updates' cost; --budget / --budget-frac write another).  See
    memaudit/generators/density_trap.py for the construction.
    """,
}


def _register_families():
    from . import GENERATORS

    for family in GENERATORS:
        _family_command(family, _DOCS[family])


_register_families()


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
    """Reports: the paper's findings on the shipped sets, and the paper's own protocol."""


COMMANDS.extend([generate, ablate_command, report])


@report.command(name="findings")
@click.option("--set", "sets", multiple=True, metavar="NAME",
              help="Package set under --root (repeatable). Default: small, validity, natural.")
@click.option("--root", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Directory holding the set directories. Default: packages_data/ of this checkout.")
@click.option("--methods", default=None, metavar="M1,M2,...",
              help="Methods to compare with OPT. Default: density, density-global, greedy, gvt, gvt-geometric, "
                   "random, fifo, recency, kind:raw, kind:fact, kind:update, kind:compound_update.")
@click.option("--resolve", is_flag=True,
              help="Recompute OPT and the ablated OPT with bnb instead of reading the certified manifest values.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows and aggregates as one JSON document.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Also write the per-package rows as CSV to FILE.")
def findings(sets, root, methods, resolve, as_json, output):
    """The MEMAUDIT paper's findings on our shipped sets: baselines vs certified OPT, and the ablation.

    Prints (a) the ratio to OPT (mean, min, n) and the share of validity units' weight
    preserved, per set, budget and method; (b) OPT without tombstone and compound_update
    candidates as a share of full OPT; then ours beside the paper's figures (which the
    paper measured on its own packages: `memaudit report paper` reruns that protocol).
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


@report.command(name="paper")
@click.option("--seeds", "n_seeds", type=click.IntRange(min=1), default=500, show_default=True,
              help="Base seeds 0..N-1 (the paper: 500).")
@click.option("--audit-seeds", type=click.IntRange(min=1), default=100, show_default=True,
              help="Seeds per distribution and budget in the certification audit (the paper: 100).")
@click.option("--no-audit", is_flag=True, help="Skip the certification audit.")
@click.option("--certify", is_flag=True,
              help="Also certify every base and stress OPT with bnb and HiGHS (minutes), besides the exhaustive "
                   "enumeration that computes it.")
@click.option("--json", "as_json", is_flag=True,
              help='Print one JSON document: {"base": {B: {method: ratio}}, "stress_b6": {distribution: '
                   '{method: ratio}}, "audit": {"rows", "agree", "max_abs_diff"}, "paper": {...}}.')
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Write ratio_vs_budget.png and stress_heatmap_b6.png to DIR.")
@click.option("--rows", "rows_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Also write every per-seed row (base, stress, audit) as JSON to FILE.")
@click.option("--stability", "stability", multiple=True, type=click.Path(dir_okay=False), metavar="PACKAGE",
              help="Instead of the experiments: certified OPT of each PACKAGE (repeatable) with at most 1 and 2 "
                   "candidates per experience, and under its own vs byte-overhead costs (the paper's Tables 6-7).")
@click.option("--budget-frac", "stability_frac", type=click.FloatRange(min=0), default=None, metavar="F",
              help="With --stability: budget = F x the stream cost. Default: each package's own budget.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Worker processes (the numbers do not depend on it). Default: the usable CPUs, at most 4.")
@click.option("-v", "--verbose", is_flag=True, help="Progress lines on stderr even when it is not a terminal.")
def paper_command(n_seeds, audit_seeds, no_audit, certify, as_json, plot_dir, rows_path, stability, stability_frac,
                  jobs, verbose):
    """The MEMAUDIT paper's experiments on its own packages, each number beside the published one.

    \b
    base: MemAudit-Small (generate paper-small) over --seeds seeds at the paper's
      budgets B = max(1, round(f x mean total candidate cost)), f = 0.02, 0.05,
      0.10, 0.20 (B = 2, 4, 8, 16 at 500 seeds): ratio to the certified OPT of
      density, gvt, density-global, gvt-geometric, greedy and OPT without
      tombstone and compound_update candidates, with bootstrap 95 % intervals,
      and the mean invalidation units covered;
    stress: the same at B = 6 on base, paper-update-chain, paper-temporal-interval;
    audit: bnb against HiGHS on --audit-seeds seeds x the four f x the three
      distributions.
    Every OPT is exact: exhaustive enumeration of every store (at most 36,864 per
    package); the audit checks bnb and HiGHS against it, and --certify certifies every
    row with both.  A disagreement stops the report (exit 1).
    """
    from ..clitools import progress_printer
    from ..reports.paper import default_jobs, format_paper, paper_json, plot_paper, run_paper, write_rows

    if stability:
        from ..package import load_package
        from ..reports.stability import format_stability, stability_rows

        rows = stability_rows([load_package(p) for p in stability], budget_frac=stability_frac)
        click.echo(json.dumps(rows, indent=2) if as_json else format_stability(rows))
        return
    rep = run_paper(n_seeds=n_seeds, audit_seeds=audit_seeds, audit=not no_audit, certify=certify,
                    jobs=jobs or default_jobs(), progress=progress_printer(verbose))
    if rows_path is not None:
        write_rows(rep, rows_path)
    if plot_dir is not None:
        for path in plot_paper(rep, plot_dir):
            click.echo(f"wrote {path}", err=True)
    if as_json:
        click.echo(json.dumps(paper_json(rep), indent=2))
    else:
        click.echo(format_paper(rep))
