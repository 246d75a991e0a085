"""A scripted stand-in for a model CLI (``claude -p``, ``llm``): reads the prompt on standard input.

    python harness_fake_cli.py reader [--log FILE] [--fail-first N --state FILE] [--sleep S] [--garbage]
                                      [--say TEXT] [--spawn-sleep S --pid-file FILE]
    python harness_fake_cli.py judge  [--log FILE] [--garbage]

reader: answers with the memory line sharing the most words with the question (at least 2), else
"I don't know."; judge: applies the yes / no / STALE rubric by plain substring tests.  ``--say``
prints TEXT whatever the prompt; ``--spawn-sleep`` starts a grandchild that sleeps S seconds with
the same standard output (writing its pid to FILE) before answering.  No network.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time


def _words(s: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", s.lower()))


def reader(prompt: str) -> str:
    memory = prompt.split("Memory:\n", 1)[1].split("\n\nQuestion: ", 1)[0]
    question = prompt.split("\n\nQuestion: ", 1)[1].splitlines()[0]
    q = _words(question)
    best, score = None, 1
    for line in memory.splitlines():
        n = len(_words(line) & q)
        if n > score:
            best, score = line, n
    return best if best is not None else "I don't know."


def judge(prompt: str) -> str:
    answer = re.search(r"^Answer: (.*)$", prompt, re.M).group(1).lower()
    m = re.search(r"Does the answer state '(.*?)'\? If it states an older, superseded value instead \((.*?)\)", prompt)
    if m:
        if m.group(1).lower() in answer:
            return "yes"
        olds = re.findall(r"'(.*?)'", m.group(2))
        return "STALE" if any(o.lower() in answer for o in olds) else "no"
    m = re.search(r"asked the assistant to forget (.*)\. Does", prompt)
    if m:
        return "yes" if any(v.lower() in answer for v in re.findall(r"'(.*?)'", m.group(1))) else "no"
    return "yes" if "don't know" in answer else "no"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["reader", "judge"])
    ap.add_argument("--log")
    ap.add_argument("--fail-first", type=int, default=0)
    ap.add_argument("--state")
    ap.add_argument("--sleep", type=float, default=0.0)
    ap.add_argument("--garbage", action="store_true")
    ap.add_argument("--say")
    ap.add_argument("--spawn-sleep", type=float, default=0.0)
    ap.add_argument("--pid-file")
    args = ap.parse_args()
    prompt = sys.stdin.read()
    if args.log:
        with open(args.log, "a", encoding="utf-8") as fh:
            fh.write(args.mode + "\n")
    if args.fail_first:
        try:
            with open(args.state, encoding="utf-8") as fh:
                calls = int(fh.read() or 0)
        except FileNotFoundError:
            calls = 0
        with open(args.state, "w", encoding="utf-8") as fh:
            fh.write(str(calls + 1))
        if calls < args.fail_first:
            print("boom: simulated failure", file=sys.stderr)
            return 3
    if args.spawn_sleep:
        child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({args.spawn_sleep})"])
        if args.pid_file:
            with open(args.pid_file, "w", encoding="utf-8") as fh:
                fh.write(str(child.pid))
    if args.sleep:
        time.sleep(args.sleep)
    if args.garbage:
        print("maybe, hard to say")
        return 0
    if args.say is not None:
        print(args.say)
        return 0
    print(reader(prompt) if args.mode == "reader" else judge(prompt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
