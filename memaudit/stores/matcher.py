"""The deterministic matcher: unit values and aliases found in memory texts (:mod:`memaudit.text`), plus the invalidation cues."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text import find_phrase, mentions, tokens

__all__ = ["CUES", "CHANGE_VERBS", "tokens", "sentences", "find_phrase", "mentions", "invalidated_mention",
           "plain_mention", "unit_phrases", "match_unit", "CoverageRow", "matcher_rows"]

#: invalidation cues: a validity unit is matched when one of these sits within :data:`WINDOW` words of the old
#: value (either side) in the same sentence, and is not negated ("not", "never", "n't" just before it)
CUES = ("no longer", "anymore", "replaced", "replacing", "instead of", "formerly", "previously", "used to", "retired",
        "deprecated", "deleted", "deleting", "delete", "removed", "removing", "remove", "forget", "forgotten",
        "forgetting", "erase", "erased", "superseded", "dropped", "moved off", "switched off", "moved away",
        "switched away")

#: change verbs: they invalidate the value *after* them only through "from" ("switched the runner from Jest",
#: "took over on-call from Priya"), and the value *before* them when in the past tense ("eu-west-2 until June,
#: then moved to eu-central-1"); "moved to X" names the new value, so it never invalidates X
CHANGE_VERBS = ("moved", "moving", "move", "switched", "switching", "switch", "migrated", "migrating", "migration",
                "upgraded", "upgrading", "upgrade", "changed", "changing", "went", "transitioned", "took over",
                "taking over", "takes over", "take over")

_PAST_CHANGE = ("moved", "switched", "migrated", "upgraded", "changed")
#: cues that carry their own negation (a "not" before them does not cancel them)
_NEGATIVE_CUES = ("no longer", "anymore")
_NEGATIONS = frozenset({"not", "never", "t", "cannot", "nor"})  # "haven't" gives the tokens "haven", "t"
_BE = frozenset({"is", "are", "was", "were", "be", "been", "being", "s", "re", "get", "gets", "got", "getting"})
_FROM_WORDS = frozenset({"from"})

#: most words (number tokens such as dates do not count) between a cue and the value
WINDOW = 4
#: most words between "from" and the old value ("from AWS eu-west-2", "from PostgreSQL 15")
_FROM_WINDOW = 3
#: most words between a change verb and its "from" ("took over on-call duty for Ledgerline from Priya")
_VERB_WINDOW = 8

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_PHRASES: dict[str, list[str]] = {}


def sentences(text: str) -> list[str]:
    """Split on sentence ends (``.``, ``!``, ``?``, ``;`` followed by white space) and on line breaks.

    Examples
    --------
    >>> sentences("Prod moved to eu-central-1. Priya is on call; see docs/a.md\\nnext")
    ['Prod moved to eu-central-1.', 'Priya is on call;', 'see docs/a.md', 'next']
    """
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _toks(phrase: str) -> list[str]:
    if phrase not in _PHRASES:
        _PHRASES[phrase] = tokens(phrase)
    return _PHRASES[phrase]


def _words(toks: list[str], lo: int, hi: int) -> int:
    """Words in ``toks[lo:hi]``, not counting number tokens (dates, versions)."""
    return sum(1 for t in toks[max(lo, 0):hi] if not t.isdigit())


def _negated(toks: list[str], start: int) -> bool:
    """A negation among the three words before ``start``."""
    k, seen = start - 1, 0
    while k >= 0 and seen < 3:
        if toks[k] in _NEGATIONS:
            return True
        seen += not toks[k].isdigit()
        k -= 1
    return False


def _spans(toks: list[str], phrases, *, negatable: bool = True) -> list[tuple[int, int]]:
    """(start, end) of every un-negated occurrence of ``phrases`` in ``toks``."""
    out = []
    for phrase in phrases:
        p = _toks(phrase)
        for s in find_phrase(toks, p):
            if phrase == "used to" and s > 0 and toks[s - 1] in _BE:
                continue  # "Jest is used to run the tests" states a use, not a past one
            if negatable and phrase not in _NEGATIVE_CUES and _negated(toks, s):
                continue
            out.append((s, s + len(p)))
    return out


def _self_invalidating(alias_toks: list[str]) -> bool:
    """An alias that holds its own cue, such as "upgraded from 15"."""
    if _spans(alias_toks, CUES, negatable=False):
        return True
    return any(w in _FROM_WORDS for s, e in _spans(alias_toks, CHANGE_VERBS, negatable=False) for w in alias_toks[e:])


def _invalidated_at(toks: list[str], i: int, n: int, cues, verbs, past) -> bool:
    """Whether the value at ``toks[i:i+n]`` is invalidated by a nearby cue."""
    end = i + n
    for s, e in cues:
        if (e <= i and _words(toks, e, i) <= WINDOW) or (s >= end and _words(toks, end, s) <= WINDOW):
            return True
    for s, e in past:
        if s >= end and _words(toks, end, s) <= WINDOW:
            return True
    for f in range(i - 1, -1, -1):
        if _words(toks, f + 1, i) > _FROM_WINDOW:
            break
        if toks[f] in _FROM_WORDS and any(e <= f and _words(toks, e, f) <= _VERB_WINDOW for s, e in verbs):
            return True
    return False


def _invalidated_in(sentence: str, aliases) -> bool:
    toks = tokens(sentence)
    hits = [(i, a) for a in aliases for i in find_phrase(toks, _toks(a))]
    if not hits:
        return False
    cues = _spans(toks, CUES)
    verbs = _spans(toks, CHANGE_VERBS)
    past = _spans(toks, _PAST_CHANGE)
    for i, alias in hits:
        at = _toks(alias)
        if _self_invalidating(at) and not _negated(toks, i):
            return True
        if _invalidated_at(toks, i, len(at), cues, verbs, past):
            return True
    return False


def invalidated_mention(text: str, aliases) -> bool:
    """True when one sentence of ``text`` holds an alias invalidated by a cue near it.

    The alias is invalidated by

    - one of :data:`CUES` at most :data:`WINDOW` words before or after it ("Jest is no longer
      used", "replaced Jest"), not negated ("not", "never" or "n't" among the three words before
      the cue; "no longer" and "anymore" carry their own negation), "used to" not after a form of
      "be" ("Jest is used to run the tests" is a current use);
    - "from" at most three words before it, with one of :data:`CHANGE_VERBS` (not negated) at
      most eight words before that "from" ("switched the runner from Jest", "took over on-call
      from Priya"); "Escalations come from Priya" has no change verb;
    - a past-tense change verb (moved, switched, migrated, upgraded, changed) at most
      :data:`WINDOW` words after it ("eu-west-2 until 2026-06-15, then moved to eu-central-1");
    - itself, when the alias holds a cue ("upgraded from 15").

    Number tokens (dates, versions) do not count as words.  "We moved to eu-west-2" does not
    invalidate eu-west-2: a change verb before the value names the new value unless "from" says
    otherwise.

    Examples
    --------
    >>> invalidated_mention("Tests moved from Jest to Vitest.", ["Jest"])
    True
    >>> invalidated_mention("Priya is on call. Tests moved to Vitest.", ["Priya"])
    False
    >>> invalidated_mention("We have not moved off Jest.", ["Jest"])
    False
    >>> invalidated_mention("Jest is used to run the tests.", ["Jest"])
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
    """Coverage rows of every item of ``export`` against every unit of ``pkg`` (coverage 1.0 per match).

    A memory that still holds a deleted value (an alias of ``meta.store_audit.deleted[].value_aliases``)
    is not credited with that value's ``validity_unit``: it leaks the value it says was deleted.
    """
    from .audit import store_audit_spec

    spec = store_audit_spec(pkg) or {}
    leaked_by = [(e["validity_unit"], e["value_aliases"]) for e in spec.get("deleted", []) if "validity_unit" in e]
    rows = []
    for item in export.items:
        for unit in pkg.units:
            if match_unit(unit, item.text):
                if any(unit.id == u and mentions(item.text, aliases) for u, aliases in leaked_by):
                    continue
                rows.append(CoverageRow(item.id, unit.id, 1.0, "matcher"))
    return rows
