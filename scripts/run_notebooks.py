#!/usr/bin/env python3
"""Execute every notebook in notebooks/ in place, so the committed copies show their tables and figures.

Usage:  .venv/bin/python scripts/run_notebooks.py [NOTEBOOK ...]      (or: make notebooks)

Each notebook runs top to bottom in a fresh kernel with notebooks/ as its working directory;
a cell that raises stops the run with the cell's traceback and leaves the file unchanged.  The
outputs are written atomically.  Timing metadata is dropped so a rerun changes only what the
code changed.  tests/test_notebooks.py executes each notebook again from scratch.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import nbclient
import nbformat

ROOT = Path(__file__).resolve().parents[1]


def run_notebook(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=900,
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    for cell in nb.cells:
        cell.get("metadata", {}).pop("execution", None)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        nbformat.write(nb, fh)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for i, path in enumerate(paths, 1):
        print(f"[{i}/{len(paths)}] {path.name}", flush=True)
        run_notebook(path.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
