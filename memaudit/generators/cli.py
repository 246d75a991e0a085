"""Command-line commands of this subpackage; ``memaudit.cli`` adds every entry of ``COMMANDS``."""

from __future__ import annotations

import click

__all__ = ["COMMANDS"]

#: click commands / groups added to the top-level ``memaudit`` group
COMMANDS: list[click.Command] = []
