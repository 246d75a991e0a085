"""Command-line command of this subpackage; ``memaudit.cli`` adds every entry of ``COMMANDS``.

``memaudit diagnose SCENARIO --policy P ...``: heavy imports stay inside the command.
"""

from __future__ import annotations

import json

import click

from ..clitools import safe_echo

from ..harness.cli import _FORMS, _build_reader, _forms, _reader_options

__all__ = ["COMMANDS", "HOOKS", "load_compiled"]

#: SCENARIO names that are built in rather than read from a file
BUILT_IN = ("bench",)

#: SCENARIO prefixes served by another subpackage: prefix -> (module, function); the function takes
#: the path after the prefix and the candidate kinds and returns a CompiledScenario (see
#: memaudit.diagnose.compile.from_packages).  The module may also offer ``parse_policies(specs)``
#: (policy specs -> policies, for policies of its own) and ``DIAGNOSE_POLICIES`` (the default list).
HOOKS = {"locomo": ("memaudit.locomo.diagnose", "diagnose_compiled")}


def _hook_module(name: str):
    """The module serving SCENARIO's prefix, or None for a scenario this package compiles itself."""
    import importlib

    prefix, sep, _ = name.partition(":")
    if not (sep and prefix in HOOKS):
        return None
    try:
        return importlib.import_module(HOOKS[prefix][0])
    except ImportError:
        return None


def load_compiled(name: str, kinds):
    """SCENARIO as (plant name, settings, CompiledScenario).

    ``bench`` is the 30-session memory bench with its standard-library filler (seed 42); ``PREFIX:PATH``
    goes to the hook of :data:`HOOKS` (``locomo:conv.json``); anything else is a scenario file
    (``memaudit-scenario/1``, JSON or YAML) compiled by :func:`~memaudit.diagnose.compile.compile_scenario`.
    """
    from .compile import DEFAULT_KINDS, compile_scenario
    from .errors import DiagnoseError

    prefix, sep, rest = name.partition(":")
    if sep and prefix in HOOKS:
        module, func = HOOKS[prefix]
        try:
            hook = getattr(_hook_module(name), func)
        except AttributeError:
            raise DiagnoseError(f"{name}: {module} offers no {func}(path, kinds) in this checkout, so a {prefix} "
                                "conversation cannot be diagnosed yet") from None
        compiled = hook(rest, kinds=kinds)
        return prefix, {"path": rest}, compiled
    kinds = DEFAULT_KINDS if kinds is None else kinds
    if name == "bench":
        from ..harness.bench import bench_scenario

        settings = {"n_sessions": 30, "exchanges_per_session": 12, "seed": 42}
        return "memory-bench", settings, compile_scenario(bench_scenario(**settings), kinds=kinds)
    from ..harness.scenario import load_scenario

    return "scenario-file", {"path": name}, compile_scenario(load_scenario(name), kinds=kinds)


@click.command("diagnose", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("scenario", metavar="SCENARIO")
@click.option("--policy", "policies", multiple=True, metavar="NAME[:k=v,...]",
              help="Policy to diagnose (repeatable): a harness policy (profile, bm25-transcript:k=3, ...) or "
                   "opt[:retriever=all|bm25,k=K], the certified OPT store (`memaudit settings policies` lists every "
                   "policy's settings).  Default: the bench's ten policies and opt.")
@click.option("--budget", type=float, default=None, metavar="B",
              help="Store budget B of every checkpoint, in o200k_base tokens.")
@click.option("--budget-frac", type=float, default=None, metavar="F",
              help="Store budget as a fraction of each checkpoint's stream cost.  Default (neither given): 1, the "
                   "whole stream.")
@click.option("--kinds", default=None, metavar="K1,K2",
              help="Candidate kinds offered beside raw turns and statements (fact, update, tombstone, "
                   "compound_update; 'none' for none; default fact).  For locomo: fact (observations) and "
                   "summary; default both.")
@click.option("--forms", type=_FORMS, default="both", show_default=True, help="Probe forms.")
@_reader_options
@click.option("--backend", default="highs", show_default=True,
              help="Back-end that certifies OPT (highs, scip, cbc, cpsat, lattice, auto, none).")
@click.option("--json", "as_json", is_flag=True, help="Print the diagnose document as JSON.")
@click.option("--out", type=click.Path(), default=None, metavar="DIR",
              help="Write run.json, summary.csv, rows.csv and stores.csv.")
@click.option("--plot", type=click.Path(dir_okay=False), default=None, metavar="PATH",
              help="Save the attribution bars and the write-ratio scatter (PNG, or by suffix).")
@click.option("-v", "--verbose", is_flag=True, help="Progress lines on stderr.")
def diagnose_command(scenario, policies, budget, budget_frac, kinds, forms, reader, reader_cmd, judge_cmd,
                     allow_same_judge, reader_flags, backend, as_json, out, plot, verbose):
    """Locate each failure on SCENARIO: write time beside read time, per policy.

    SCENARIO is a memaudit-scenario/1 file, `bench` (the 30-session memory bench with its
    standard-library filler) or PREFIX:PATH for a scenario another subpackage compiles
    (locomo:CONV.json[#ID][@answer]: a LoCoMo conversation; its default policies: full transcript,
    last-N, BM25 over turns, BM25 over observations, summaries, observations only, fresh, opt).
    At every probe checkpoint the scenario compiles to a package; each policy's store is scored
    against the certified OPT at budget B (0 when over budget or
    not one candidate per experience; and cut to B in its own order), and each probe is
    attributed to write (evidence never stored), retrieval (stored, not injected cleanly),
    reader (injected, answered wrong) or ok.  The reader is the mechanical word-overlap reader
    unless --reader / --reader-cmd says otherwise.
    """
    from ..clitools import progress_printer
    from ..harness.policies import BENCH_POLICIES
    from ..harness.trial import Plant
    from .errors import DiagnoseError
    from .run import diagnose
    from .tables import checkpoint_lines, summary_lines, write_diagnose

    if budget is not None and budget_frac is not None:
        raise DiagnoseError(f"give either --budget or --budget-frac, not both; got {budget:g} and {budget_frac:g}")
    kind_list = (None if kinds is None else () if kinds.strip() == "none"
                 else tuple(k.strip() for k in kinds.split(",") if k.strip()))
    say = progress_printer(verbose)
    if say:
        say(f"compiling {scenario} to one package per checkpoint...")
    name, settings, compiled = load_compiled(scenario, kind_list)
    sc = compiled.scenario
    r, judge = _build_reader(reader, reader_cmd, judge_cmd, allow_same_judge, reader_flags, default="mechanical")
    hook = _hook_module(scenario)
    specs = list(policies) or list(getattr(hook, "DIAGNOSE_POLICIES", ())) or [*BENCH_POLICIES, "opt"]
    if hook is not None and hasattr(hook, "parse_policies"):
        specs = hook.parse_policies(specs)
    doc = diagnose(compiled, specs, budget=budget, budget_frac=budget_frac,
                   reader=r, judge=judge, forms=_forms(forms), backend=None if backend == "none" else backend,
                   plant=Plant(name, settings, sc), progress=say)
    paths = write_diagnose(doc, out) if out is not None else []
    if plot is not None:
        from .plots import save_plot

        paths.append(save_plot(doc, plot))
    if as_json:
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False))
        return
    b = doc["budget"]
    what = f"budget {b['budget']:g} tokens" if b["budget"] is not None else f"budget {b['budget_frac']:g} x stream cost"
    n_forms = sum(any(p.question(f) is not None for p in sc.probes) for f in _forms(forms))
    safe_echo(f"scenario {sc.id}: {len(sc.exchanges)} exchanges, {len(sc.probes)} probes x "
               f"{n_forms} form(s); {what}; reader {r.name}" + (", judge command" if judge else ""))
    for line in checkpoint_lines(doc):
        safe_echo(line)
    safe_echo("")
    for line in summary_lines(doc):
        safe_echo(line)
    if paths:
        safe_echo("")
        safe_echo("wrote " + ", ".join(paths))


#: click commands added to the top-level ``memaudit`` group
COMMANDS: list[click.Command] = [diagnose_command]
