"""``python -m memaudit.cli``: the ``memaudit`` command line."""

from . import run

run()
