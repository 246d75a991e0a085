#!/usr/bin/env python3
"""Regenerate the shipped package sets (packages_data/small, validity, natural) and their manifests.

Usage:  .venv/bin/python scripts/build_packages_data.py [--sets small,validity,natural] [--force]

Generated packages are rewritten only when their bytes change (they change only with the generator
version); a package whose sha256 is unchanged keeps its certified results unless --force.  Any other
*.json in a set directory is a hand-built package: it is never modified and enters the manifest with
"generator": "hand-built" and its certified OPTs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    from memaudit.errors import MemauditError
    from memaudit.generators.datasets import SETS, build_set

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated sets (default: all)")
    parser.add_argument("--root", default=str(ROOT / "packages_data"), help="where the set directories live")
    parser.add_argument("--force", action="store_true", help="re-certify every package")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
            manifest = build_set(name, args.root, force=args.force, say=print)
            print(f"{name}: {len(manifest['packages'])} packages")
    except MemauditError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"done in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
