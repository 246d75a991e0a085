"""The deterministic matcher: normalised whole-token matching of unit values and aliases against memory texts."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["CUES", "tokens", "sentences", "find_phrase", "mentions", "invalidated_mention", "plain_mention",
           "unit_phrases", "match_unit", "CoverageRow", "matcher_rows"]

#: invalidation cues: a validity unit is matched only when its old value and one of these share a sentence
CUES = ("no longer", "not anymore", "moved", "switched", "migrated", "upgraded", "replaced", "replacing", "took over",
        "taking over", "takes over", "instead of", "formerly", "previously", "used to", "retired", "deprecated",
        "deleted", "deleting", "delete", "removed", "removing", "remove", "forget", "forgotten", "forgetting", "erase",
        "erased", "was replaced", "superseded")

_CUE_TOKENS = None
_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
#: how many tokens may sit between "from" and the old value ("from AWS eu-west-2", "from PostgreSQL 15")
_FROM_WINDOW = 3


def tokens(text: str) -> list[str]:
    """Normalised tokens: NFKC, case-folded, runs of word characters (letters, digits, underscore).

    Examples
    --------
    >>> tokens("Deploys to EU-West-2 (London)!")
    ['deploys', 'to', 'eu', 'west', '2', 'london']
    >>> tokens("+44 7700 900461"), tokens("Zoë")
    (['44', '7700', '900461'], ['zoë'])
    """
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def sentences(text: str) -> list[str]:
    """Split on sentence ends (``.``, ``!``, ``?``, ``;`` followed by white space) and on line breaks.

    Examples
    --------
    >>> sentences("Prod moved to eu-central-1. Priya is on call; see docs/a.md\\nnext")
    ['Prod moved to eu-central-1.', 'Priya is on call;', 'see docs/a.md', 'next']
    """
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def find_phrase(toks: list[str], phrase: list[str]) -> list[int]:
    """Start positions where ``phrase`` occurs in ``toks`` as whole tokens.

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
    return [i for i in range(len(toks) - n + 1) if toks[i:i + n] == phrase]


def _cue_tokens():
    global _CUE_TOKENS
    if _CUE_TOKENS is None:
        _CUE_TOKENS = [tokens(c) for c in CUES]
    return _CUE_TOKENS


def _has_cue(toks: list[str]) -> bool:
    return any(find_phrase(toks, cue) for cue in _cue_tokens())


def mentions(text: str, aliases) -> bool:
    """True when any alias occurs in ``text`` as whole normalised tokens.

    Examples
    --------
    >>> mentions("Call +44 7700 900461 if needed", ["+44 7700 900461"]), mentions("PG170", ["PG17"])
    (True, False)
    """
    toks = tokens(text)
    return any(find_phrase(toks, tokens(a)) for a in aliases)


def _invalidated_in(sentence: str, aliases) -> bool:
    toks = tokens(sentence)
    hits = [(i, len(tokens(a))) for a in aliases for i in find_phrase(toks, tokens(a))]
    if not hits:
        return False
    if _has_cue(toks):
        return True
    return any("from" in toks[max(0, i - _FROM_WINDOW):i] for i, _ in hits)


def invalidated_mention(text: str, aliases) -> bool:
    """True when one sentence of ``text`` holds an alias *and* an invalidation cue.

    A cue is one of :data:`CUES`, or the word "from" at most three tokens before the alias
    ("switched the runner from Jest", "moved from AWS eu-west-2").

    Examples
    --------
    >>> invalidated_mention("Tests moved from Jest to Vitest.", ["Jest"])
    True
    >>> invalidated_mention("Priya is on call. Tests moved to Vitest.", ["Priya"])
    False
    """
    return any(_invalidated_in(s, aliases) for s in sentences(text))


def plain_mention(text: str, aliases) -> bool:
    """True when some sentence states an alias *without* an invalidation cue (the old value as if current).

    Examples
    --------
    >>> plain_mention("Priya is on call.", ["Priya"]), plain_mention("Marco took over from Priya.", ["Priya"])
    (True, False)
    """
    return any(mentions(s, aliases) and not _invalidated_in(s, aliases) for s in sentences(text))


def unit_phrases(unit) -> list[str]:
    """What the matcher looks for: the unit's aliases, or its text when it has no aliases."""
    return [a for a in unit.aliases if a.strip()] or ([unit.text] if unit.text.strip() else [])


def match_unit(unit, text: str) -> bool:
    """Whether ``text`` covers ``unit`` under the deterministic rules.

    A ``validity`` unit (an old value is no longer true) is matched only by a sentence that holds
    one of its phrases together with an invalidation cue (see :func:`invalidated_mention`); any
    other unit is matched when one of its phrases occurs as whole normalised tokens.

    Examples
    --------
    >>> from memaudit.package import Unit
    >>> old = Unit(id="r.v", kind="validity", weight=1, aliases=["eu-west-2"])
    >>> match_unit(old, "Deploys to eu-west-2."), match_unit(old, "Moved from eu-west-2 to eu-central-1.")
    (False, True)
    """
    phrases = unit_phrases(unit)
    if unit.kind == "validity":
        return invalidated_mention(text, phrases)
    return mentions(text, phrases)


@dataclass(frozen=True)
class CoverageRow:
    """One adjudicated coverage entry: memory ``memory`` covers unit ``unit`` by ``coverage`` (a[u, r] >= 0).

    ``unit`` is None for a row that only records that a memory was adjudicated (it covers nothing,
    or it is tied to an ``experience``).  ``source`` says who decided: ``matcher``, a file path or
    ``judge``.
    """

    memory: str
    unit: str | None
    coverage: float
    source: str
    experience: str | None = None


def matcher_rows(pkg, export) -> list[CoverageRow]:
    """Coverage rows of every item of ``export`` against every unit of ``pkg`` (coverage 1.0 per match)."""
    rows = []
    for item in export.items:
        for unit in pkg.units:
            if match_unit(unit, item.text):
                rows.append(CoverageRow(item.id, unit.id, 1.0, "matcher"))
    return rows
