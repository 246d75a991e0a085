"""Matching values in text (whole-token sequences or the memory-eval-harness chapter's substrings) and counting injected tokens."""

from __future__ import annotations

from ..text import contains_value as _contains_value
from ..text import tokens

__all__ = ["MATCH_MODES", "TOKEN_COUNTERS", "value_tokens", "contains_value", "words", "count_len4",
           "token_counter"]

#: how a value is found in a text: ``tokens`` (the 30-session memory bench's whole-token-sequence match) or
#: ``substring`` (the memory-eval-harness chapter's lowercased substring test)
MATCH_MODES = ("tokens", "substring")

def value_tokens(value: str) -> tuple[str, ...]:
    """The tokens of ``value`` (:func:`memaudit.text.tokens`: NFKC, case-folded runs of letters and digits).

    Examples
    --------
    >>> value_tokens("eu-west-2"), value_tokens("k.dev@example.com")
    (('eu', 'west', '2'), ('k', 'dev', 'example', 'com'))
    """
    return tuple(tokens(value))


def contains_value(text: str, value: str, mode: str = "tokens") -> bool:
    """Whether ``value`` occurs in ``text``.

    ``tokens``: memaudit's one whole-token value matcher (:func:`memaudit.text.contains_value`):
    the value's tokens occur in ``text`` as a contiguous run of whole tokens (NFKC, case-folded;
    any non-alphanumeric characters, ``_`` included, between them), so ``Node 20`` is found in
    ``runs on Node 20.`` but not in ``Node 204``.  ``substring``: the lowercased value is a
    substring of the lowercased text (the memory-eval-harness chapter's needle test).

    Examples
    --------
    >>> contains_value("Services run on Node 20.", "Node 20"), contains_value("Node 204", "Node 20")
    (True, False)
    >>> contains_value("release/2026.3 is cut", "release/2026.3"), contains_value("cut 2026.3", "release/2026.3")
    (True, False)
    >>> contains_value("region eu_west_2", "eu west 2"), contains_value("the \ufb01le", "file")
    (True, True)
    >>> contains_value("the user prefers uv", "UV", "substring"), contains_value("uvloop", "uv", "substring")
    (True, True)
    """
    if mode == "substring":
        return value.lower() in text.lower()
    if mode != "tokens":
        raise ValueError(f"unknown match mode {mode!r}; valid: {', '.join(MATCH_MODES)}")
    return _contains_value(text, value)


def words(text: str) -> set[str]:
    """The memory-eval-harness chapter's word set: lowercase, every non-alphanumeric character a separator.

    Examples
    --------
    >>> sorted(words("The user's handle is s0x!"))
    ['handle', 'is', 's', 's0x', 'the', 'user']
    """
    return set("".join(c if c.isalnum() else " " for c in text.lower()).split())


def count_len4(text: str) -> int:
    """The memory-eval-harness chapter's token estimate: ``len(text) // 4``.

    Examples
    --------
    >>> count_len4("abcdefgh"), count_len4("abc")
    (2, 0)
    """
    return len(text) // 4


def _count_o200k(text: str) -> int:
    from ..costs import count_tokens

    return count_tokens(text)


#: token counter name -> function text -> int (``o200k_base`` is the core's cost-model tokenizer)
TOKEN_COUNTERS = {"o200k_base": _count_o200k, "len/4": count_len4}


def token_counter(name: str):
    """The token counter called ``name`` (a key of :data:`TOKEN_COUNTERS`)."""
    from .errors import HarnessError

    try:
        return TOKEN_COUNTERS[name]
    except KeyError:
        raise HarnessError(f"unknown token counter {name!r}; valid: {', '.join(TOKEN_COUNTERS)}") from None
