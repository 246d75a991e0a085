"""``memaudit settings``: every declared setting of every registered method, policy, reader, importer and
generator."""

from __future__ import annotations

import click

from memaudit_solvers.registry import SETTINGS

from ..clitools import settings_lines

__all__ = ["COMMANDS"]


@click.command("settings")
@click.argument("what", type=click.Choice(["methods", "policies", "readers", "importers", "generators", "all"]), default="all")
def settings_command(what):
    """Every registered method, harness policy, reader, vendor importer and generator family with its
    declared settings.

    Give them as NAME:key=value,... (--method, --policy, --reader) or with the flags of the
    command (generators: the flags of `memaudit generate FAMILY`); every line below is read from the declarations beside the registry entries.
    """
    from ..diagnose.run import OPT_SETTINGS
    from ..generators import GENERATOR_SETTINGS
    from ..harness.policies import POLICY_SETTINGS
    from ..harness.readers import READER_SETTINGS
    from ..stores import IMPORTER_SETTINGS

    tables = {"methods": {**SETTINGS, "kind:<k>": ()}, "policies": {**POLICY_SETTINGS, "opt (diagnose)": OPT_SETTINGS}, "readers": READER_SETTINGS,
              "importers": IMPORTER_SETTINGS,
              "generators": GENERATOR_SETTINGS}
    for name, table in tables.items():
        if what in (name, "all"):
            click.echo(f"{name}:")
            for line in settings_lines(table):
                click.echo("  " + line)


COMMANDS = [settings_command]
