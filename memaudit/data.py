"""Where the shipped data lives: ``packages_data/`` of a checkout, installed as ``memaudit_data``.

Read through :mod:`importlib.resources`, so the shipped sets, scenarios and examples are found
the same way from an editable checkout and from a regular (wheel) install.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["data_root", "data_path"]


def data_root() -> Path:
    """The directory of the shipped data (``packages_data/`` in a checkout).

    Examples
    --------
    >>> (data_root() / "examples" / "quickstart.json").is_file()
    True
    """
    return Path(str(resources.files("memaudit_data")))


def data_path(*parts: str) -> Path:
    """A path inside the shipped data, e.g. ``data_path("scenarios", "memory-bench.yaml")``."""
    return data_root().joinpath(*parts)
