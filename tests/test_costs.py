"""Tests of memaudit.costs: the five cost models on strings whose cost is known by hand."""

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit.costs import COST_MODELS, cost_of, count_tokens
from memaudit.errors import PackageError


def test_cost_model_names():
    assert list(COST_MODELS) == ["words", "chars", "bytes", "tokens", "byte-overhead"]


@pytest.mark.parametrize("text, cost", [
    ("", 8),                 # the fixed overhead alone
    ("a" * 24, 9),           # one full 24-byte unit
    ("a" * 25, 10),          # a started unit counts
    ("é" * 12, 9),           # 24 UTF-8 bytes
    ("🚀" * 7, 10),          # 28 bytes
])
def test_byte_overhead_is_8_plus_started_24_byte_units(text, cost):
    assert cost_of(text, "byte-overhead") == cost == max(1, 8 + -(-len(text.encode("utf-8")) // 24))


def test_a_package_can_use_the_byte_overhead_cost_model():
    from memaudit.package import compile_package, package_from_dict
    pkg = package_from_dict({"format": "memaudit-package/1", "id": "b", "cost_model": "byte-overhead",
                             "experiences": [{"id": "e1", "text": "x"}], "units": [{"id": "r", "kind": "current",
                                                                                    "weight": 1}],
                             "candidates": [{"id": "e1.raw", "experience": "e1", "kind": "raw", "text": "x" * 50,
                                             "coverage": {"r": 1}}]})
    assert compile_package(pkg).problem.costs.tolist() == [11.0]


@pytest.mark.parametrize("text, words, chars, n_bytes", [
    ("", 0, 0, 0),
    ("We deploy to eu-west-2.", 4, 23, 23),
    ("  spaced\tout\nwords  ", 3, 20, 20),
    ("café", 1, 4, 5),                      # é is one code point, two UTF-8 bytes
    ("e\u0301", 1, 2, 3),                   # e + combining acute: two code points
    ("🚀 launch", 2, 8, 11),                # the rocket is one code point, four bytes
    ("München Zürich", 2, 14, 16),
])
def test_words_chars_bytes(text, words, chars, n_bytes):
    assert cost_of(text, "words") == words
    assert cost_of(text, "chars") == chars
    assert cost_of(text, "bytes") == n_bytes


@pytest.mark.parametrize("text, n_tokens", [
    ("", 0),
    ("hello world", 2),                  # "hello" + " world"
    ("hello world hello world", 4),      # words with their leading space are single tokens
    (" the the the", 3),                 # " the" is one token
])
def test_tokens_known(text, n_tokens):
    assert count_tokens(text) == n_tokens
    assert cost_of(text, "tokens") == n_tokens


def test_special_token_text_is_ordinary_text():
    # "<|endoftext|>" in stored text must not raise and is not the one special token
    assert count_tokens("<|endoftext|>") > 1


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=60))
def test_tokens_between_one_and_bytes(text):
    # every token covers at least one byte of the UTF-8 text, and a non-empty text has a token
    assert 1 <= count_tokens(text) <= len(text.encode("utf-8"))


def test_tokens_load_without_deprecation_warning():
    code = "from memaudit.costs import count_tokens; assert count_tokens('hello world') == 2"
    root = os.path.dirname(os.path.dirname(__file__))
    subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], check=True, cwd=root)


def test_unknown_cost_model():
    with pytest.raises(PackageError, match=r"unknown cost model 'lines'; valid cost models: 'words', 'chars', "
                                           r"'bytes', 'tokens'"):
        cost_of("a b", "lines")


def test_text_must_be_a_string():
    with pytest.raises(TypeError):
        cost_of(b"a b", "words")
    with pytest.raises(TypeError):
        count_tokens(None)
