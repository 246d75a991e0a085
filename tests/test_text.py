"""memaudit.text: one normalisation and one whole-token value matcher for stores/ and harness/."""

from __future__ import annotations

import random

import pytest

from memaudit.harness.match import contains_value as harness_contains
from memaudit.stores.matcher import mentions as store_mentions
from memaudit.text import contains_value, find_phrase, mentions, normalise, tokens


@pytest.mark.parametrize("text, value, expected", [
    ("prod runs in eu west 2", "eu_west_2", True),
    ("prod runs in eu_west_2", "eu-west-2", True),
    ("prod runs in EU-WEST-2.", "eu west 2", True),
    ("prod runs in eu-west-20", "eu-west-2", False),
    ("the \ufb01le is here", "file", True),          # the ligature fi reads as "fi"
    ("Stra\u00dfe 5", "strasse 5", True),             # case folding
    ("\uff25\uff35-west-2", "eu-west-2", True),      # full-width letters (NFKC)
    ("node20", "node 20", False),
    ("x", "--", False),                               # a value without tokens is never found
])
def test_one_answer_everywhere(text, value, expected):
    # the stores matcher and the harness's token mode give the shared module's answer
    assert contains_value(text, value) is expected
    assert store_mentions(text, [value]) is expected
    assert harness_contains(text, value, "tokens") is expected


def test_regex_scan_agrees_with_token_lists_on_random_text():
    # contains_value (one regex scan) against the plain definition: the value's tokens as a contiguous run
    rng = random.Random(7)
    alphabet = ["a", "b", "ab", "1", "_", "-", " ", ".", "\ufb01", "A", "\u00df", "é"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 5)))
        t, v = tokens(text), tokens(value)
        brute = bool(v) and any(t[i:i + len(v)] == v for i in range(len(t) - len(v) + 1))
        assert contains_value(text, value) is brute, (text, value)
        assert bool(find_phrase(t, v)) is brute


def test_tokens_and_normalise():
    assert tokens("Deploys_to eu-west-2!") == ["deploys", "to", "eu", "west", "2"]
    assert normalise("\ufb01X") == "fix"
    assert mentions("call +44 7700 900461", ["07700 900461", "+44 7700 900461"])
    assert not mentions("call 447700900461", ["+44 7700 900461"])
