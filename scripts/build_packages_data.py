#!/usr/bin/env python3
"""Regenerate the shipped package sets (packages_data/small, validity, natural) and their manifests.

Usage:  .venv/bin/python scripts/build_packages_data.py [--sets small,validity,natural] [--force] [--allow-rewrite]

Every package is generated and certified in memory; files and manifests are written only when all of
a set certified.  A generated file is rewritten only when its bytes change, and that is refused when it
was written under the current generator version (bump memaudit.generators.GENERATOR_VERSION: shipped
files change only with it) unless --allow-rewrite.  A package whose sha256 is unchanged keeps its
certified results unless --force or the memaudit / back-end versions changed.  Any other *.json in a
set directory is a hand-built package: it is never modified and enters the manifest with
"generator": "hand-built" and its certified OPTs; a generated package the set no longer lists is an error.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    from memaudit.errors import MemauditError
    from memaudit.generators import datasets

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(datasets.SETS), help="comma-separated sets (default: all)")
    parser.add_argument("--root", default=str(ROOT / "packages_data"), help="where the set directories live")
    parser.add_argument("--force", action="store_true", help="re-certify every package")
    parser.add_argument("--allow-rewrite", action="store_true",
                        help="rewrite generated files whose bytes changed under the same generator version")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
            manifest = datasets.build_set(name, args.root, force=args.force, allow_rewrite=args.allow_rewrite, say=print)
            print(f"{name}: {len(manifest['packages'])} packages")
    except MemauditError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"done in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
