"""Cost models: the storage cost of a text in words, characters, bytes, o200k_base tokens or byte-overhead units."""

from __future__ import annotations

import functools
import math
import warnings

from .errors import PackageError

__all__ = ["COST_MODELS", "COST_MODEL_UNITS", "cost_of", "count_words", "count_chars", "count_bytes",
           "count_tokens", "count_byte_overhead"]

#: name of the tokenizer behind the ``tokens`` cost model
TOKEN_ENCODING = "o200k_base"


def count_words(text: str) -> int:
    """Number of whitespace-separated words.

    Examples
    --------
    >>> count_words("We deploy to eu-west-2."), count_words("  a\\tb\\n"), count_words("")
    (4, 2, 0)
    """
    return len(text.split())


def count_chars(text: str) -> int:
    """Number of Unicode code points.

    Examples
    --------
    >>> count_chars("café"), count_chars("")
    (4, 0)
    """
    return len(text)


def count_bytes(text: str) -> int:
    """Number of bytes of the UTF-8 encoding.

    Examples
    --------
    >>> count_bytes("café"), count_bytes("abc")
    (5, 3)
    """
    return len(text.encode("utf-8"))


def count_byte_overhead(text: str) -> int:
    """The MEMAUDIT paper's byte-overhead cost: ``max(1, 8 + ceil(utf8_bytes / 24))``.

    A fixed overhead of 8 per stored memory plus one unit per started 24 bytes of UTF-8 text
    (the paper's stability check against word costs, arXiv 2605.02199).

    Examples
    --------
    >>> count_byte_overhead(""), count_byte_overhead("x" * 24), count_byte_overhead("x" * 25), count_byte_overhead("é" * 12)
    (8, 9, 10, 9)
    """
    return max(1, 8 + math.ceil(count_bytes(text) / 24))


@functools.cache
def _encoding():
    """The o200k_base encoding, loaded once (bpe-openai ships the vocabulary; no network)."""
    with warnings.catch_warnings():
        # bpe-openai 0.1.4 loads its vocabularies (on import and here) with importlib.resources.open_binary
        warnings.filterwarnings("ignore", message="open_binary is deprecated", category=DeprecationWarning)
        try:
            import bpe_openai
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise ImportError("the 'tokens' cost model needs bpe-openai: pip install bpe-openai") from exc
        return bpe_openai.get_encoding(TOKEN_ENCODING)


@functools.lru_cache(maxsize=1 << 16)
def _count_tokens_cached(text: str) -> int:
    # disallowed_special=(): text that spells a special token ("<|endoftext|>") is stored text,
    # counted as ordinary text instead of raising
    return len(_encoding().encode(text, disallowed_special=()))


def count_tokens(text: str) -> int:
    """Number of o200k_base tokens (special-token strings count as ordinary text).

    Examples
    --------
    >>> count_tokens("hello world"), count_tokens("")
    (2, 0)
    """
    if not isinstance(text, str):
        raise TypeError(f"count_tokens needs a str; got {type(text).__name__}")
    return _count_tokens_cached(text)


#: cost model name -> function text -> int cost
COST_MODELS = {"words": count_words, "chars": count_chars, "bytes": count_bytes, "tokens": count_tokens,
               "byte-overhead": count_byte_overhead}

#: cost model name -> what its cost counts, for messages
COST_MODEL_UNITS = {"words": "words", "chars": "characters", "bytes": "UTF-8 bytes",
                    "tokens": f"{TOKEN_ENCODING} tokens", "byte-overhead": "byte-overhead units"}


def cost_of(text: str, model: str) -> int:
    """Storage cost of ``text`` under the cost model named ``model``.

    Raises
    ------
    PackageError
        If ``model`` is not a key of :data:`COST_MODELS`.

    Examples
    --------
    >>> [cost_of("We deploy to eu-west-2.", m) for m in ("words", "chars", "bytes", "tokens")][:3]
    [4, 23, 23]
    >>> cost_of("x", "lines")
    Traceback (most recent call last):
    ...
    memaudit.errors.PackageError: unknown cost model 'lines'; valid cost models: 'words', 'chars', 'bytes', 'tokens', 'byte-overhead'
    """
    try:
        fn = COST_MODELS[model]
    except (KeyError, TypeError):
        valid = ", ".join(repr(m) for m in COST_MODELS)
        raise PackageError(f"unknown cost model {model!r}; valid cost models: {valid}") from None
    if not isinstance(text, str):
        raise TypeError(f"cost_of needs a str text; got {type(text).__name__}")
    return fn(text)
