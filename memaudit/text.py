"""Text normalisation, tokens and the one whole-token value matcher shared by stores/ and harness/.

Every "does this text hold this value" question in memaudit is answered here, the same way:
both texts are normalised (Unicode NFKC, then case-folded), cut into *tokens* (maximal runs of
letters and digits; everything else, the underscore included, separates), and the value is
found when its tokens occur in the text's tokens as one contiguous run.  So ``eu-west-2``,
``EU West 2`` and ``eu_west_2`` are one value, ``eu-west-20`` is another, and the ligature
``ﬁ`` reads as ``fi``.  The invalidation-cue rules of the store matcher
(:mod:`memaudit.stores.matcher`) and the harness's word sets are built on these tokens.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["normalise", "tokens", "find_phrase", "contains_value", "mentions"]

#: a token: a maximal run of letters and digits (``_`` and punctuation separate tokens)
_TOKEN = re.compile(r"[^\W_]+")
_TOKEN_CHAR = re.compile(r"[^\W_]")


@functools.lru_cache(maxsize=256)
def normalise(text: str) -> str:
    """``text`` in Unicode NFKC, case-folded: the form every match is made in.

    Examples
    --------
    >>> normalise("ﬁle EU-West-2 Straße")
    'file eu-west-2 strasse'
    """
    return unicodedata.normalize("NFKC", text).casefold()


def tokens(text: str) -> list[str]:
    """The normalised tokens of ``text``: runs of letters and digits of :func:`normalise` (text).

    Examples
    --------
    >>> tokens("Deploys to EU-West-2 (London)!")
    ['deploys', 'to', 'eu', 'west', '2', 'london']
    >>> tokens("+44 7700 900461"), tokens("eu_west_2"), tokens("Zoë ﬁx")
    (['44', '7700', '900461'], ['eu', 'west', '2'], ['zoë', 'fix'])
    """
    return _TOKEN.findall(normalise(text))


def find_phrase(toks: list[str], phrase: list[str]) -> list[int]:
    """Start positions where the token list ``phrase`` occurs in ``toks`` as whole tokens.

    Examples
    --------
    >>> find_phrase(tokens("moved from eu-west-2 to eu-central-1"), tokens("eu-west-2"))
    [2]
    >>> find_phrase(tokens("eu-west-20"), tokens("eu-west-2"))
    []
    """
    n = len(phrase)
    if n == 0:
        return []
    first = phrase[0]
    return [i for i in range(len(toks) - n + 1) if toks[i] == first and toks[i:i + n] == phrase]


@functools.lru_cache(maxsize=4096)
def _pattern(value_tokens: tuple[str, ...]) -> re.Pattern:
    # the value's tokens separated by non-token characters, not glued to a token character on the right;
    # the left boundary is checked by the caller (a look-behind would slow the scan down)
    return re.compile(r"[\W_]+".join(re.escape(t) for t in value_tokens) + r"(?![^\W_])")


def contains_value(text: str, value: str) -> bool:
    """Whether the tokens of ``value`` occur in ``text`` as one contiguous run of whole tokens.

    Same answer as ``find_phrase(tokens(text), tokens(value)) != []``, found with one regular
    expression scan of the normalised text.  A value without tokens is never found.

    Examples
    --------
    >>> contains_value("Services run on Node 20.", "Node 20"), contains_value("Node 204", "Node 20")
    (True, False)
    >>> contains_value("region eu_west_2", "eu west 2"), contains_value("the ﬁle", "file")
    (True, True)
    >>> contains_value("ba a a", "a a"), contains_value("xnode 20", "Node 20"), contains_value("x", "--")
    (True, False, False)
    """
    value_tokens = tuple(tokens(value))
    if not value_tokens:
        return False
    low, pattern, pos = normalise(text), _pattern(value_tokens), 0
    while (m := pattern.search(low, pos)) is not None:
        start = m.start()
        if start == 0 or not _TOKEN_CHAR.match(low, start - 1):
            return True
        pos = start + 1  # glued to a token on its left: look again one character later
    return False


def mentions(text: str, values) -> bool:
    """True when any of ``values`` occurs in ``text`` (see :func:`contains_value`).

    Examples
    --------
    >>> mentions("Call +44 7700 900461 if needed", ["+44 7700 900461"]), mentions("PG170", ["PG17"])
    (True, False)
    """
    return any(contains_value(text, v) for v in values)
