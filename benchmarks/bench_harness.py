"""Time the 30-session memory bench's whole bench: build the scenario (30 sessions x 12 exchanges, stdlib filler), run
the ten policies on both probe forms with the context classifier, count o200k_base tokens.

    .venv/bin/python benchmarks/bench_harness.py [--repeats 5] [--extra]

Every repetition starts with cold caches (token counts, standard-library file reads), so each one
pays for the whole bench; interpreter start-up and imports are excluded.  Prints each time and the
median.  Target: under 3 s (the 30-session memory bench's own Dart run took about 13 s).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memaudit import costs  # noqa: E402
from memaudit.harness import bench  # noqa: E402
from memaudit.harness.policies import BENCH_POLICIES, EXTRA_POLICIES  # noqa: E402


def cold_caches() -> None:
    costs._count_tokens_cached.cache_clear()
    bench._file_lines.cache_clear()
    bench.stdlib_files.cache_clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--extra", action="store_true", help="also run the GA and bi-temporal policies")
    args = ap.parse_args()
    policies = BENCH_POLICIES + (EXTRA_POLICIES if args.extra else ())
    costs._encoding()  # load the tokenizer vocabulary once (a one-off start-up cost, not bench work)
    times = []
    for _ in range(args.repeats):
        cold_caches()
        t0 = time.perf_counter()
        doc = bench.run_bench(policies)
        times.append(time.perf_counter() - t0)
    n_probes = sum(s["n_probes"] for t in doc["trials"] for f, s in t["summary"].items() if f != "combined")
    print(f"python {platform.python_version()} on {platform.machine()}, {len(policies)} policies, "
          f"{n_probes} probe contexts")
    print("runs (s): " + ", ".join(f"{t:.2f}" for t in times))
    print(f"median: {statistics.median(times):.2f} s")


if __name__ == "__main__":
    main()
