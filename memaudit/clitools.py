"""Small helpers shared by every command module: number formatting, budget flags, plain tables."""

from __future__ import annotations

import os
import sys

import click

from .formats.translate import escape_control as safe

__all__ = ["safe", "safe_echo", "num", "pct", "budget_options", "check_budget_flags", "progress_printer", "same_file", "table_lines"]


def safe_echo(line="", err: bool = False) -> None:
    """``click.echo`` of ``line`` with control characters escaped (:func:`safe`): use it for every line that
    holds text read from an input (ids, paths, texts), so an input cannot drive the terminal."""
    click.echo(safe(str(line)), err=err)


def num(x: float) -> str:
    return f"{x:.10g}"


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.3g}%" if whole else "n/a"


def budget_options(f):
    f = click.option("--budget-frac", "budget_frac", type=float, default=None, metavar="F",
                     help="Budget as a fraction of the stream cost (storing every experience verbatim).")(f)
    f = click.option("--budget", type=float, default=None, metavar="B",
                     help="Budget in the package's cost unit. Default: the package's own budget.")(f)
    return f


def check_budget_flags(budget, budget_frac):
    if budget is not None and budget_frac is not None:
        raise click.UsageError("--budget and --budget-frac are mutually exclusive: give one of them")


def progress_printer(verbose: bool):
    isatty = getattr(sys.stderr, "isatty", None)
    if verbose or (isatty is not None and isatty()):
        return lambda line: click.echo(line, err=True)
    return None


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def table_lines(headers, rows, align):
    cols = list(zip(headers, *rows)) if rows else [(h,) for h in headers]
    widths = [max(len(str(x)) for x in col) for col in cols]
    lines = []
    for row in [headers, *rows]:
        cells = [str(x).rjust(w) if a == ">" else str(x).ljust(w) for x, w, a in zip(row, widths, align)]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines
