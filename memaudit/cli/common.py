"""What every command module of the top-level command line shares: exit codes, back-end names, default time limits."""

from __future__ import annotations

import click

from ..clitools import safe

__all__ = ["EXIT_OK", "EXIT_BAD_INPUT", "EXIT_USAGE", "EXIT_NOT_CERTIFIED", "BACKEND_CHOICES", "FLAG_ALIASES",
           "DEFAULT_METHOD_TIME_LIMIT", "DEFAULT_BACKEND_TIME_LIMIT", "exit_with", "one_line"]

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_NOT_CERTIFIED = 3

BACKEND_CHOICES = "auto|lattice|highs|cbc|cpsat|scip|none"

#: default time limits of ``solve`` (seconds): the method, then the certifying back-end
DEFAULT_METHOD_TIME_LIMIT = 60.0
DEFAULT_BACKEND_TIME_LIMIT = 300.0

#: flag names older than the ones generated from the declared settings, kept working
FLAG_ALIASES = {"eps": ("--gvt-eps",), "floor": ("--gvt-floor",)}


def exit_with(ok: bool) -> None:
    """End the command: exit code 0 when ``ok``, else 3 (not certified / a check failed)."""
    click.get_current_context().exit(EXIT_OK if ok else EXIT_NOT_CERTIFIED)


def one_line(exc: BaseException) -> str:
    """An error message on one line, control characters escaped."""
    return safe(" ".join(str(exc).split()))
