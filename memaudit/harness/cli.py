"""Command-line commands of this subpackage; ``memaudit.cli`` adds every entry of ``COMMANDS``.

``memaudit harness lab | bench | run | diff``: heavy imports stay inside the commands.
"""

from __future__ import annotations

import json

import click

__all__ = ["COMMANDS"]

_FORMS = click.Choice(["literal", "paraphrase", "both"])


def _forms(value: str) -> tuple[str, ...]:
    return ("literal", "paraphrase") if value == "both" else (value,)


def _emit(doc: dict, lines: list[str], as_json: bool, out: str | None) -> None:
    """Print the run (JSON escapes control characters itself; every table line goes through
    ``safe_echo``: scenario ids, policy and probe names are read from inputs)."""
    from ..clitools import safe_echo
    from .trial import write_run

    if out is not None:
        paths = write_run(doc, out)
    if as_json:
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False))
    else:
        for line in lines:
            safe_echo(line)
        if out is not None:
            safe_echo("")
            safe_echo("wrote " + ", ".join(paths))


def _reader_options(f):
    from ..clitools import setting_flags
    from .readers import READER_SETTINGS, READERS

    f = setting_flags(READER_SETTINGS, dest="reader_flags", kind="readers", usage_errors=False)(f)
    opts = [
        click.option("--reader", default=None, metavar="NAME[:k=v,...]",
                     help="What answers the probes: " + ", ".join(READERS) + " (the context classifier: no model, "
                          "the 30-session memory bench; the mechanical word-overlap reader: the memory-eval-harness "
                          "chapter; command: --reader-cmd), optionally with its settings, e.g. "
                          "mechanical:min_overlap=1."),
        click.option("--reader-cmd", default=None, metavar="CMD",
                     help='Command that gets each prompt on standard input and prints the answer, e.g. "claude -p" '
                          '(implies --reader command).'),
        click.option("--judge-cmd", default=None, metavar="CMD",
                     help="Command that grades free-text answers (yes / no / STALE rubric); must differ from "
                          "--reader-cmd."),
        click.option("--allow-same-judge", is_flag=True, help="Accept a judge command identical to the reader's."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _build_reader(reader, reader_cmd, judge_cmd, allow_same_judge, reader_flags, default="classifier"):
    from ..clitools import settings_for
    from .errors import HarnessError
    from .readers import COMMAND_SETTINGS, READER_SETTINGS, judge_command, make_reader

    name = (reader or "").partition(":")[0] or None
    if reader_cmd is not None and name not in (None, "command"):
        raise HarnessError(f"--reader-cmd goes with --reader command, not --reader {reader}")
    spec = reader or ("command" if reader_cmd is not None else default)
    name = spec.partition(":")[0]
    if name == "command" and reader_cmd is None:
        raise HarnessError("--reader command needs --reader-cmd CMD (e.g. --reader-cmd \"claude -p\")")
    r = make_reader(spec, reader_cmd, **settings_for(READER_SETTINGS.get(name, ()), reader_flags))
    judge = None
    if judge_cmd is not None:
        from memaudit_solvers.settings import validate_settings
        try:
            given = validate_settings("judge command", COMMAND_SETTINGS, settings_for(COMMAND_SETTINGS, reader_flags))
        except ValueError as exc:
            raise HarnessError(str(exc)) from None
        judge = judge_command(judge_cmd, reader=r, allow_same_judge=allow_same_judge, **given)
    return r, judge


def _summary_lines(doc: dict) -> list[str]:
    from ..clitools import table_lines

    rows = []
    for t in doc["trials"]:
        for form, s in t["summary"].items():
            rows.append((t["disturb"]["name"], form, s["n_probes"], s["current"], s["conflict"], s["stale"],
                         s["missing"], s["leaked"], s["clean"], s["abstained"], s["answered"], s["unscored"],
                         f"{s['mean_tokens_injected']:.0f}", t["stored_tokens"]))
    headers = ("policy", "form", "probes", "current", "conflict", "stale", "missing", "leaked", "clean", "abstained",
               "answered", "unscored", "mean injected", "stored")
    return table_lines(headers, rows, ("<", "<") + (">",) * 12)


@click.group("harness", context_settings={"help_option_names": ["-h", "--help"]})
def harness():
    """The plant / disturb / probe / score QA harness (the memory-eval-harness chapter and the 30-session memory bench).

    \b
    lab    the memory-eval-harness chapter's five conditions, exactly
    bench  the 30-session memory bench of ten memory policies
    run    your own scenario file under chosen policies and a reader
    diff   compare two runs probe by probe (same probes, one change)
    list   the policies and readers with their settings
    """


@harness.command("list")
def list_command():
    """Every policy and reader with its declared settings (NAME:key=value in --policy / --reader)."""
    from ..clitools import settings_lines
    from .policies import POLICY_SETTINGS
    from .readers import READER_SETTINGS

    click.echo("policies (--policy NAME[:key=value,...]):")
    for line in settings_lines(POLICY_SETTINGS):
        click.echo("  " + line)
    click.echo("readers (--reader NAME[:key=value,...]):")
    for line in settings_lines(READER_SETTINGS):
        click.echo("  " + line)


@harness.command()
@click.option("--policy", "policies", multiple=True, metavar="NAME[:k=v,...]",
              help="Conditions to run (repeatable). Default: fresh, replay-full, replay-capped, compacted, store.")
@click.option("--json", "as_json", is_flag=True, help="Print the run document as JSON.")
@click.option("--out", type=click.Path(), default=None, metavar="DIR", help="Write run.json, summary.csv, rows.csv.")
def lab(policies, as_json, out):
    """The memory-eval-harness chapter's lab: five conditions, the mechanical reader, len/4 tokens.

    Prints the scorecard (recall, stale, abstain, tokens) and what the compaction kept by fact type.
    """
    from .lab import lab_lines, run_lab
    from .policies import LAB_POLICIES

    doc = run_lab(policies or LAB_POLICIES)
    _emit(doc, lab_lines(doc), as_json, out)


@harness.command()
@click.option("--sessions", "n_sessions", type=click.IntRange(min=1), default=30, show_default=True,
              help="Number of sessions (one per working day).")
@click.option("--exchanges", "exchanges_per_session", type=click.IntRange(min=1), default=12, show_default=True,
              help="Exchanges per session.")
@click.option("--seed", type=int, default=42, show_default=True, help="Seed of the schedule positions and filler.")
@click.option("--policy", "policies", multiple=True, metavar="NAME[:k=v,...]",
              help="Policies (repeatable). Default: the 30-session memory bench's ten.")
@click.option("--extra", is_flag=True, help="Also run ga-paper, ga-code, bitemporal and bitemporal-history (those not already "
                   "given with --policy).")
@click.option("--forms", type=_FORMS, default="both", show_default=True, help="Probe forms to ask.")
@_reader_options
@click.option("--json", "as_json", is_flag=True, help="Print the run document as JSON.")
@click.option("--out", type=click.Path(), default=None, metavar="DIR", help="Write run.json, summary.csv, rows.csv.")
@click.option("-v", "--verbose", is_flag=True, help="Progress lines on stderr.")
def bench(n_sessions, exchanges_per_session, seed, policies, extra, forms, reader, reader_cmd, judge_cmd,
          allow_same_judge, reader_flags, as_json, out, verbose):
    """The 30-session memory bench: 15 facts over N sessions, probes at days 10/20/30, ten policies.

    Prints the 30-session memory bench's two tables: per probe form, and both forms combined (stored tokens are
    counted at the last probe day).
    """
    from ..clitools import progress_printer
    from .bench import combined_lines, per_form_lines, run_bench
    from .policies import BENCH_POLICIES, EXTRA_POLICIES, parse_policy

    r, judge = _build_reader(reader, reader_cmd, judge_cmd, allow_same_judge, reader_flags)
    pols = [parse_policy(p) for p in (policies or BENCH_POLICIES)]
    if extra:  # --extra adds the extra policies not already named with --policy
        pols += [p for p in map(parse_policy, EXTRA_POLICIES) if p.name not in {q.name for q in pols}]
    doc = run_bench(pols, n_sessions=n_sessions, exchanges_per_session=exchanges_per_session, seed=seed,
                    forms=_forms(forms), reader=r, judge=judge, progress=progress_printer(verbose))
    sc = doc["plant"]
    lines = [f"scenario {sc['scenario_id']} (sha256 {sc['scenario_sha256'][:12]}), reader "
             f"{doc['probe']['reader']['name']}, tokens {doc['score']['settings']['tokens']}", ""]
    lines += per_form_lines(doc) + [""] + combined_lines(doc)
    if r.answers:
        lines += ["", "answers:"] + _summary_lines(doc)
    _emit(doc, lines, as_json, out)


@harness.command("run")
@click.argument("scenario", type=click.Path())
@click.option("--policy", "policies", multiple=True, required=True, metavar="NAME[:k=v,...]",
              help="Policy to run (repeatable), e.g. profile, bm25-transcript:k=3, last-exchanges:n=8; "
                   "`memaudit harness list` shows every policy's settings.")
@click.option("--forms", type=_FORMS, default="both", show_default=True,
              help="Probe forms (a probe without a paraphrase is asked in literal form only).")
@_reader_options
@click.option("--match", type=click.Choice(["tokens", "substring"]), default="tokens", show_default=True,
              help="Value matching: whole-token sequences (the 30-session memory bench) or lowercased substrings (the memory-eval-harness chapter).")
@click.option("--tokens", "token_counter", type=click.Choice(["o200k_base", "len/4"]), default="o200k_base",
              show_default=True, help="How injected and stored tokens are counted.")
@click.option("--json", "as_json", is_flag=True, help="Print the run document as JSON.")
@click.option("--out", type=click.Path(), default=None, metavar="DIR", help="Write run.json, summary.csv, rows.csv.")
@click.option("-v", "--verbose", is_flag=True, help="Progress lines on stderr.")
def run_command(scenario, policies, forms, reader, reader_cmd, judge_cmd, allow_same_judge, reader_flags, match,
                token_counter, as_json, out, verbose):
    """Run SCENARIO (a memaudit-scenario/1 or /2 JSON or YAML file) under each --policy.

    The default reader is the context classifier; --reader mechanical or --reader-cmd CMD
    answer in free text (optionally graded by --judge-cmd).  Prints one line per policy and
    form; --out DIR writes run.json (replayable: every part's name and settings), summary.csv
    and rows.csv.
    """
    from ..clitools import progress_printer
    from .policies import parse_policy
    from .scenario import load_scenario
    from .trial import Plant, ProbeSet, Score, run

    sc = load_scenario(scenario)
    pols = [parse_policy(p) for p in policies]
    r, judge = _build_reader(reader, reader_cmd, judge_cmd, allow_same_judge, reader_flags)
    probe = ProbeSet(r, forms=_forms(forms), judge=judge)
    doc = run(Plant("scenario-file", {"path": scenario}, sc), pols, probe, Score(match=match, tokens=token_counter),
              progress=progress_printer(verbose))
    lines = [f"scenario {sc.id} ({len(sc.facts)} facts, {len(sc.exchanges)} exchanges, {len(sc.probes)} probes); "
             f"reader {r.name}" + (", judge command" if judge else "") + f"; match {match}; tokens {token_counter}",
             ""] + _summary_lines(doc)
    _emit(doc, lines, as_json, out)


@harness.command()
@click.argument("run_a", type=click.Path())
@click.argument("run_b", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def diff(run_a, run_b, as_json):
    """Compare RUN_B (after) with RUN_A (before), probe by probe.

    RUN_A and RUN_B are run.json files or the --out directories of runs.  Lists the parts whose
    settings differ (the memory-eval-harness chapter's recipe: one change), the outcome counts before -> after per
    policy and form, and every probe whose outcome changed.
    """
    from ..clitools import safe_echo, table_lines
    from .trial import diff_runs, load_run

    d = diff_runs(load_run(run_a), load_run(run_b))
    if as_json:
        click.echo(json.dumps(d, indent=2, ensure_ascii=False))  # JSON escapes control characters
        return
    parts = d["changed_parts"]
    safe_echo("changed parts: " + (", ".join(parts) if parts else "none (the runs have the same settings)"))
    if len(parts) > 1:
        safe_echo("warning: more than one part changed; the difference cannot be pinned on one change")
    keys = ("current", "conflict", "stale", "missing", "leaked", "clean", "abstained", "answered")
    rows = []
    for p in d["pairs"]:
        label = p["before"]["name"] if p["before"]["name"] == p["after"]["name"] else \
            f"{p['before']['name']} -> {p['after']['name']}"
        for form, sa in p["summary_before"].items():
            sb = p["summary_after"].get(form, {})
            cells = [f"{sa.get(k, 0)}->{sb.get(k, 0)}" if sa.get(k, 0) != sb.get(k, 0) else str(sa.get(k, 0))
                     for k in keys]
            ta, tb = round(sa.get("mean_tokens_injected", 0)), round(sb.get("mean_tokens_injected", 0))
            rows.append((label, form, *cells, f"{ta}->{tb}" if ta != tb else str(ta)))
    for line in table_lines(("policy", "form", *keys, "mean injected"), rows, ("<", "<") + (">",) * 9):
        safe_echo(line)
    safe_echo("")
    ch = d["changed_probes"]
    safe_echo(f"probes whose outcome changed: {len(ch)}")
    for c in ch:
        safe_echo(f"  {c['policy']}  {c['probe']} ({c['form']}): {c['before']} -> {c['after']}")


#: click commands / groups added to the top-level ``memaudit`` group
COMMANDS: list[click.Command] = [harness]
