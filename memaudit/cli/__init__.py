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
from .common import EXIT_BAD_INPUT, EXIT_NOT_CERTIFIED, EXIT_OK, EXIT_USAGE, one_line

__all__ = ["main", "run", "COMMAND_MODULES", "EXIT_OK", "EXIT_BAD_INPUT", "EXIT_USAGE", "EXIT_NOT_CERTIFIED"]


class _Group(click.Group):
    """Turns every MemauditError into ``error: <message>`` on stderr and exit code 1; imports a
    command's module only when the command is asked for (see :data:`COMMAND_MODULES`)."""

    def list_commands(self, ctx):
        return sorted({*self.commands, *COMMAND_MODULES})

    def get_command(self, ctx, name):
        if name not in self.commands and name in COMMAND_MODULES:
            _load_commands(COMMAND_MODULES[name])
        return self.commands.get(name)

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


# -- the commands, each imported when it runs (``memaudit solve`` loads no harness, store importer or plotting)

#: the module (relative to this package) whose ``COMMANDS`` list holds each top-level command
COMMAND_MODULES = {
    "solve": ".solve", "verify": ".solve",
    "validate": ".package", "inspect": ".package", "schema": ".package",
    "baseline": ".baseline", "compare": ".baseline",
    "settings": ".settings",
    "generate": "..generators.cli", "ablate": "..generators.cli", "report": "..generators.cli",
    "harness": "..harness.cli",
    "union": "..stores.cli", "audit": "..stores.cli", "adjudicate": "..stores.cli",
    "import": "..locomo.cli", "locomo": "..locomo.cli",
    "diagnose": "..diagnose.cli",
    "sweep": "..results.cli",
}


def _load_commands(module: str) -> None:
    """Register every command of ``module`` (a value of :data:`COMMAND_MODULES`) on :func:`main`."""
    import importlib

    for command in importlib.import_module(module, __name__).COMMANDS:
        main.add_command(command)
    if module == "..generators.cli":      # ``report html`` lives with the results store
        from ..results.cli import html_command

        main.commands["report"].add_command(html_command)


def run() -> None:
    """The ``memaudit`` console script: :func:`main` with the default SIGPIPE action, so a
    closed pipe (``memaudit solve PKG | head``) ends the command quietly, as for any Unix tool."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()


if __name__ == "__main__":  # pragma: no cover
    run()
