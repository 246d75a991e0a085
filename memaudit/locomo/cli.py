"""Command-line commands of this subpackage; ``memaudit.cli`` adds every entry of ``COMMANDS``.

``memaudit import locomo FILE...`` (packages, scenarios, manifest), ``memaudit locomo recall
SCENARIO`` (evidence recall of harness policies on an imported scenario) and ``memaudit locomo
adjudicate PACKAGE...`` (an adjudication file for the observations and summaries, from a judge).
"""

from __future__ import annotations

import click

from ..clitools import safe_echo

__all__ = ["COMMANDS", "import_group", "locomo_group"]


@click.group("import", context_settings={"help_option_names": ["-h", "--help"]})
def import_group():
    """Import public benchmarks as MEMAUDIT packages and harness scenarios.

    \b
    locomo  LoCoMo conversations (both file shapes)
    """


@import_group.command("locomo")
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", "out", type=click.Path(file_okay=False), default="locomo", show_default=True,
              metavar="DIR", help="Directory for the packages, scenarios, import-log.txt and manifest.json.")
@click.option("--certify/--no-certify", default=True, show_default=True,
              help="Certify OPT at 5, 10 and 25 % of the stream cost under each coverage rule (manifest.json).")
@click.option("--rules", default="link,answer", show_default=True, metavar="R1,R2",
              help="Coverage rules of observations and summaries, one package each: link (an upper bound), "
                   "answer (a lower bound).")
@click.option("--adjudication", type=click.Path(), default=None, metavar="FILE",
              help="Adds the adjudication rule: coverage rows (memory, unit, coverage; CSV or JSON) from a judge "
                   "that is not the reader; memory = <conversation>/<candidate id>.")
@click.option("--cost-model", type=click.Choice(["tokens", "words", "chars", "bytes"]), default="tokens",
              show_default=True, help="Cost model of the packages (tokens: o200k_base).")
@click.option("--session-date", type=click.Choice(["header", "candidate"]), default="header", show_default=True,
              help="The session date as a header experience per session, or as a prefix of every raw candidate.")
@click.option("--facts", type=click.Choice(["combined", "separate"]), default="combined", show_default=True,
              help="Several observations at one turn: one combined fact candidate, or one candidate each.")
@click.option("--summaries/--no-summaries", default=True, show_default=True,
              help="Session summaries as summary experiences after each session's last turn.")
@click.option("--budget-frac", type=click.FloatRange(0, 1, min_open=True), default=0.10, show_default=True,
              help="The package's own budget, as a fraction of its stream cost (rounded down to a whole cost).")
@click.option("--backend", type=click.Choice(["highs", "cbc"]), default="highs", show_default=True,
              help="The MILP back-end that certifies bnb's optimum.")
def locomo_import(files, out, certify, rules, adjudication, cost_model, session_date, facts, summaries, budget_frac,
                  backend):
    """Read LoCoMo FILES (the release's conversation objects or the Mem0 list of samples; the shape is
    detected) and write, per conversation, one package per coverage rule, a harness scenario
    (memaudit-scenario/2), import-log.txt (every quirk repaired, with ids) and manifest.json.
    """
    from .build import RULES, Settings
    from .importer import import_locomo
    from .reader import LocomoError

    names = [r.strip() for r in rules.split(",") if r.strip()]
    for r in names:
        if r not in RULES or r == "adjudication":
            raise LocomoError(f"--rules: unknown coverage rule {r!r}; give link and/or answer (the adjudication "
                              "rule comes with --adjudication FILE)")
    settings = Settings(cost_model=cost_model, session_date=session_date, facts=facts, summaries=summaries,
                        budget_frac=budget_frac)
    res = import_locomo(files, out, settings=settings, rules=names, adjudication=adjudication, certify=certify,
                        backend={"highs": "milp-highs", "cbc": "milp-cbc"}[backend], say=safe_echo)
    n_pkg = sum(len(p) for p in res.packages.values())
    safe_echo(f"wrote {n_pkg} packages and {len(res.scenarios)} scenarios for {len(res.conversations)} "
               f"conversations to {out}, with manifest.json" + ("" if certify else " (not certified)"))


@click.group("locomo", context_settings={"help_option_names": ["-h", "--help"]})
def locomo_group():
    """Work with imported LoCoMo scenarios."""


@locomo_group.command("recall")
@click.argument("scenario", type=click.Path())
@click.option("--policy", "policies", multiple=True, metavar="NAME[:k=v,...]",
              help="Harness policies or notes policies (notes:kind=summary, bm25-notes:kind=observation,k=5). "
                   "Default: the transcript-only set.")
@click.option("--budget-tokens", "budgets", type=click.IntRange(min=1), multiple=True, metavar="T",
              help="Instead of --policy: capped replay, last-n, BM25 over turns and over observations, each set "
                   "to inject about T tokens (repeatable).")
@click.option("--tokens", "token_counter", type=click.Choice(["o200k_base", "len/4"]), default="o200k_base",
              show_default=True, help="How injected tokens are counted.")
def recall_command(scenario, policies, budgets, token_counter):
    """Evidence recall of each policy on SCENARIO: the share of each probe's evidence turns inside
    what the policy injects (no reader involved), with the mean injected tokens."""
    from ..clitools import table_lines
    from ..harness.errors import HarnessError
    from ..harness.match import token_counter as counter
    from ..harness.scenario import load_scenario
    from .policies import DEFAULT_RECALL_POLICIES, evidence_recall_table, parse_any_policy, policies_at_budget

    if policies and budgets:
        raise HarnessError("give either --policy or --budget-tokens, not both")
    sc = load_scenario(scenario)
    runs = ([(T, policies_at_budget(sc, T, counter(token_counter))) for T in budgets] if budgets
            else [(None, [parse_any_policy(p) for p in (policies or DEFAULT_RECALL_POLICIES)])])
    table, n_evidence = [], 0
    for T, pols in runs:
        for r in evidence_recall_table(sc, pols, tokens=token_counter):
            n_evidence = r["n_evidence"]
            table.append(((T,) if budgets else ()) + (r["policy"], r["n_evidence"], f"{r['evidence_recall']:.3f}",
                                                       f"{r['evidence_hit']:.3f}", f"{r['mean_tokens_injected']:.0f}"))
    safe_echo(f"scenario {sc.id}: {len(sc.probes)} probes, {n_evidence} with evidence")
    head = ("policy", "probes", "evidence recall", "any evidence", "mean injected")
    head, align = (("budget",) + head, (">", "<") + (">",) * 4) if budgets else (head, ("<",) + (">",) * 4)
    for line in table_lines(head, table, align):
        safe_echo(line)


@locomo_group.command("adjudicate")
@click.argument("packages", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", type=click.Path(), required=True, metavar="FILE",
              help="The adjudication file to write (.csv, or JSON for any other name).")
@click.option("--judge-cmd", default=None, metavar="CMD",
              help="A command that reads one prompt on stdin and answers {unit id: coverage} (e.g. 'llm -m MODEL'); "
                   "it must not be the reader. Default: each package's own coverage (a starting point to review).")
@click.option("--cache-dir", type=click.Path(), default=".memaudit-judge-cache", show_default=True,
              help="Where the judge's answers are cached (keyed by command and prompt).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True,
              metavar="SECONDS", help="Time allowed per judge call.")
def adjudicate_command(packages, output, judge_cmd, cache_dir, timeout):
    """Write an adjudication file for the observations and summaries of imported LoCoMo PACKAGES,
    to be read back with ``memaudit import locomo FILE --adjudication OUTPUT``."""
    from ..clitools import progress_printer, same_file
    from ..package import load_package
    from ..stores.adjudication import write_adjudication
    from .importer import adjudication_rows
    from .reader import LocomoError

    for p in packages:
        if same_file(output, p):
            raise LocomoError(f"{output}: refusing to write the adjudication file over a package; choose another -o")
    rows = adjudication_rows([load_package(p) for p in packages], judge_cmd=judge_cmd, cache_dir=cache_dir,
                             timeout=timeout, progress=progress_printer(False))
    write_adjudication(output, rows)
    n_memories = len({r.memory for r in rows})
    n_cover = len({r.memory for r in rows if r.unit is not None})
    safe_echo(f"{len(rows)} rows for {n_memories} candidates ({n_cover} cover a unit) from "
               f"{'judge ' + repr(judge_cmd) if judge_cmd else 'the packages own coverage'} written to {output}")


#: click commands / groups added to the top-level ``memaudit`` group
COMMANDS: list[click.Command] = [import_group, locomo_group]
