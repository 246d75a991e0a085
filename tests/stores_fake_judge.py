"""A scripted stand-in for a model judge, for tests of ``memaudit adjudicate --judge-cmd`` (no network).

Usage: ``python stores_fake_judge.py RULES.json [--log FILE] [--fail] [--garbage] [--bad-unit]``

Reads the prompt on stdin, takes the memory text between the ``<<<`` and ``>>>`` lines, and answers
one JSON object: the union of the ``units`` of every rule whose ``contains`` string occurs in the
memory (case-insensitive).  ``--log`` appends one line per call (to count calls and test the
cache); ``--fail`` exits 3 with a message on stderr; ``--garbage`` answers prose without JSON;
``--bad-unit`` answers a unit id that no package has.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    rules_path, flags = argv[0], argv[1:]
    prompt = sys.stdin.read()
    if "--log" in flags:
        with open(flags[flags.index("--log") + 1], "a", encoding="utf-8") as fh:
            fh.write("call\n")
    if "--fail" in flags:
        print("fake judge: model overloaded", file=sys.stderr)
        return 3
    if "--garbage" in flags:
        print("I think this memory is about deployments.")
        return 0
    if "--bad-unit" in flags:
        print(json.dumps({"no.such.unit": 1}))
        return 0
    lines = prompt.split("\n")
    memory = "\n".join(lines[lines.index("<<<") + 1:lines.index(">>>")]).casefold()
    with open(rules_path, encoding="utf-8") as fh:
        rules = json.load(fh)
    answer: dict[str, float] = {}
    for rule in rules:
        if rule["contains"].casefold() in memory:
            answer.update(rule["units"])
    print("Here is my judgement:", json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
