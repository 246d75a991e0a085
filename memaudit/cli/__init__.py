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
   back-end declined the package: the store is reported with the reason); ``baseline`` /
   ``compare``: OPT, the denominator, is not certified (at some budget);
   ``verify``: a check failed.

Any other exception is a bug and keeps its traceback.  Input files are never modified.
"""

from __future__ import annotations

import signal

import click

from .. import __version__
from ..errors import MemauditError
from ..fileio import guard_inputs
from .common import EXIT_BAD_INPUT, EXIT_NOT_CERTIFIED, EXIT_OK, EXIT_USAGE
from .package import one_line

__all__ = ["main", "run", "EXIT_OK", "EXIT_BAD_INPUT", "EXIT_USAGE", "EXIT_NOT_CERTIFIED"]


class _Group(click.Group):
    """Turns every MemauditError into ``error: <message>`` on stderr and exit code 1."""

    def invoke(self, ctx):
        try:
            with guard_inputs():
                return super().invoke(ctx)
        except MemauditError as exc:
            click.echo(f"error: {one_line(exc)}", err=True)
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
         baseline / compare: OPT not certified; verify: a check failed
    """


# -- the commands: this package's modules, then the subpackages' (each keeps its heavy imports inside its commands)

def _add_commands() -> None:
    from ..diagnose.cli import COMMANDS as diagnose_commands
    from ..generators.cli import COMMANDS as generator_commands
    from ..harness.cli import COMMANDS as harness_commands
    from ..locomo.cli import COMMANDS as locomo_commands
    from ..results.cli import COMMANDS as results_commands
    from ..results.cli import html_command
    from ..stores.cli import COMMANDS as store_commands
    from .baseline import COMMANDS as baseline_commands
    from .package import COMMANDS as package_commands
    from .settings import COMMANDS as settings_commands
    from .solve import COMMANDS as solve_commands

    for command in (*solve_commands, *package_commands, *baseline_commands, *settings_commands,
                    *generator_commands, *harness_commands, *store_commands, *locomo_commands,
                    *diagnose_commands, *results_commands):
        main.add_command(command)
    main.commands["report"].add_command(html_command)


_add_commands()


def run() -> None:
    """The ``memaudit`` console script: :func:`main` with the default SIGPIPE action, so a
    closed pipe (``memaudit solve PKG | head``) ends the command quietly, as for any Unix tool."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()


if __name__ == "__main__":  # pragma: no cover
    run()
