"""A scripted stand-in for a model judge, for tests of ``memaudit adjudicate --judge-cmd`` (no network).

Usage: ``python stores_fake_judge.py RULES.json [--log FILE] [--fail] [--garbage] [--bad-unit] [--bad-bytes]
[--sleep SECONDS]``

Reads the prompt on stdin, takes the memory text (a JSON string between the ``<memory ...>`` and
``</memory>`` lines), and answers
one JSON object: the union of the ``units`` of every rule whose ``contains`` string occurs in the
memory (case-insensitive).  ``--log`` appends one line per call (to count calls and test the
cache); ``--fail`` exits 3 with a message on stderr; ``--garbage`` answers prose without JSON;
``--bad-unit`` answers a unit id that no package has; ``--bad-bytes`` answers bytes that are not
UTF-8; ``--sleep`` waits before answering (to test the timeout).
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    rules_path, flags = argv[0], argv[1:]
    prompt = sys.stdin.read()
    if "--log" in flags:
        with open(flags[flags.index("--log") + 1], "a", encoding="utf-8") as fh:
            fh.write("call\n")
    if "--sleep" in flags:
        time.sleep(float(flags[flags.index("--sleep") + 1]))
    if "--bad-bytes" in flags:
        sys.stdout.buffer.write(b"\xff\xfe {}")
        return 0
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
    start = next(k for k, line in enumerate(lines) if line.startswith("<memory id="))
    memory = json.loads(lines[start + 1]).casefold()
    assert lines[start + 2] == "</memory>"
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
