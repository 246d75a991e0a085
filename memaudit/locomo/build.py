"""One LoCoMo conversation as MEMAUDIT packages: one per coverage rule, everything else identical."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

from ..harness.match import contains_value
from ..package import Package, package_from_dict, stream_cost
from . import IMPORTER_VERSION
from .dates import answer_interval, carries_date
from .reader import Conversation, LocomoError

__all__ = ["Settings", "RULES", "SESSION_DATE_MODES", "FACT_MODES", "DEFAULT_BUDGET_FRAC", "carries_answer",
           "build_package", "build_packages", "Adjudication"]

#: the coverage rules of model-written candidates (observations and session summaries)
RULES = ("link", "answer", "adjudication")

#: where the session date goes: a header experience per session, or a prefix on every raw candidate
SESSION_DATE_MODES = ("header", "candidate")

#: several observations at one turn: one combined fact candidate, or one candidate each
FACT_MODES = ("combined", "separate")

#: the default budget, as a fraction of the stream cost (evidence turns are about 31 % of the stream)
DEFAULT_BUDGET_FRAC = 0.10


@dataclass(frozen=True)
class Settings:
    """Every setting of the importer (recorded in each package's ``meta.settings``)."""

    cost_model: str = "tokens"
    session_date: str = "header"
    facts: str = "combined"
    summaries: bool = True
    budget_frac: float = DEFAULT_BUDGET_FRAC

    def __post_init__(self):
        if self.session_date not in SESSION_DATE_MODES:
            raise LocomoError(f"setting session_date must be one of {', '.join(SESSION_DATE_MODES)}; "
                              f"got {self.session_date!r}")
        if self.facts not in FACT_MODES:
            raise LocomoError(f"setting facts must be one of {', '.join(FACT_MODES)}; got {self.facts!r}")
        if (isinstance(self.budget_frac, bool) or not isinstance(self.budget_frac, (int, float))
                or not math.isfinite(self.budget_frac) or not 0 < self.budget_frac <= 1):
            raise LocomoError(f"setting budget_frac must be a fraction in (0, 1]; got {self.budget_frac!r}")

    def to_dict(self) -> dict:
        return asdict(self)


_PARTS = re.compile(r"\s*(?:,|;|\band\b|\bor\b)\s*", re.IGNORECASE)


def carries_answer(text: str, answer: str, said_on) -> bool:
    """The ``answer`` rule's test: ``text`` holds the answer as whole tokens (the project's value
    matcher), or every part of a listed answer ("yoga, running and hiking"), or, for a temporal
    answer, pins its date when read on ``said_on`` (:func:`memaudit.locomo.dates.carries_date`).

    Examples
    --------
    >>> from datetime import date
    >>> carries_answer("Mel took up pottery and yoga.", "yoga, pottery", date(2023, 5, 8))
    True
    >>> carries_answer("Caroline went to the group yesterday.", "7 May 2023", date(2023, 5, 8))
    True
    >>> carries_answer("Caroline went to the group.", "7 May 2023", date(2023, 5, 8))
    False
    """
    if contains_value(text, answer, "tokens"):
        return True
    parts = [p for p in _PARTS.split(answer) if p and p.strip()]
    if len(parts) > 1 and all(contains_value(text, p, "tokens") for p in parts):
        return True
    return answer_interval(answer) is not None and carries_date(text, answer, said_on)


@dataclass(frozen=True)
class Adjudication:
    """Coverage of model-written candidates read from a judge's file: ``rows[(candidate, unit)] = a``;
    ``decided`` holds every candidate the file names (the others cover nothing under this rule)."""

    path: str
    rows: dict
    decided: frozenset


def _unit_id(qid: str, turn: str) -> str:
    return f"{qid}@{turn}"


def _units(conv: Conversation) -> tuple[list[dict], list[dict], dict[str, list[tuple[str, str]]]]:
    """Units, queries, and by turn the (unit id, qid) pairs whose evidence is that turn."""
    units, queries, by_turn = [], [], {}
    for q in conv.qa:
        ids = []
        if q.answerable:
            w = 1.0 / len(q.evidence)
            for t in q.evidence:
                uid = _unit_id(q.id, t)
                units.append({"id": uid, "kind": f"category-{q.category}", "weight": w,
                              "text": f"{q.question} Answer: {q.answer}", "aliases": [q.answer] if q.answer else []})
                by_turn.setdefault(t, []).append((uid, q.id))
                ids.append(uid)
        query = {"id": q.id, "text": q.question, "requires": ids}
        if q.answer is not None and not q.abstention:
            query["answer"] = q.answer
        queries.append(query)
    return units, queries, by_turn


def _rule_coverage(conv: Conversation, rule: str, adjudication: Adjudication | None, by_turn: dict):
    """``cover(candidate id, text, session, turns) -> {unit: a}`` for model-written candidates under ``rule``."""
    answers = {q.id: q.answer for q in conv.qa}
    dates = {s.number: s.date.date() for s in conv.sessions}

    def cover(candidate_id: str, text: str, session: int, turns) -> dict[str, float]:
        if rule == "adjudication":
            return {u: a for (c, u), a in adjudication.rows.items() if c == candidate_id and a > 0}
        out = {}
        for t in turns:
            for uid, qid in by_turn.get(t, []):
                if rule == "link" or carries_answer(text, answers[qid], dates[session]):
                    out[uid] = 1.0
        return out

    return cover


def _header_text(s) -> str:
    return f"Session {s.number}: {s.date_text}"


def _package_dict(conv: Conversation, settings: Settings, rule: str, adjudication: Adjudication | None) -> dict:
    units, queries, by_turn = _units(conv)
    order = {u["id"]: i for i, u in enumerate(units)}

    def ordered(cov: dict) -> dict:
        return dict(sorted(cov.items(), key=lambda kv: order[kv[0]]))

    if not units:
        raise LocomoError(f"conversation {conv.id!r}: no question of category 1-4 has evidence, so the package "
                          "would have no unit")
    cover = _rule_coverage(conv, rule, adjudication, by_turn)
    experiences, candidates = [], []
    by_turn_obs: dict[str, list] = {}
    for s in conv.sessions:
        for o in s.observations:
            by_turn_obs.setdefault(o.turns[-1], []).append(o)  # a multi-turn observation at its last turn
    for s in conv.sessions:
        time = s.date.isoformat()
        if settings.session_date == "header":
            eid = f"S{s.number}.date"
            experiences.append({"id": eid, "time": time, "session": s.number, "text": _header_text(s)})
            candidates.append({"id": eid, "experience": eid, "kind": "raw", "text": _header_text(s), "coverage": {}})
        for t in s.turns:
            text = t.render()
            experiences.append({"id": t.id, "time": time, "session": s.number, "text": text})
            raw_text = f"[{s.date_text}] {text}" if settings.session_date == "candidate" else text
            own = {uid: 1.0 for uid, _ in by_turn.get(t.id, [])}
            candidates.append({"id": f"{t.id}.raw", "experience": t.id, "kind": "raw", "text": raw_text,
                               "coverage": own})
            obs = by_turn_obs.get(t.id, [])
            if not obs:
                continue
            if settings.facts == "combined":
                cid = f"{t.id}.fact"
                text_c = " ".join(o.text for o in obs)
                cov: dict[str, float] = {}
                if rule == "adjudication":
                    cov = cover(cid, text_c, s.number, ())
                else:
                    for o in obs:
                        cov.update(cover(cid, o.text, s.number, o.turns))
                candidates.append({"id": cid, "experience": t.id, "kind": "fact", "text": text_c,
                                   "coverage": ordered(cov)})
            else:
                for k, o in enumerate(obs, start=1):
                    cid = f"{t.id}.fact{k}"
                    cov = cover(cid, o.text, s.number, o.turns)
                    candidates.append({"id": cid, "experience": t.id, "kind": "fact", "text": o.text,
                                       "coverage": ordered(cov)})
        if settings.summaries and s.summary is not None:
            eid = f"S{s.number}.summary"
            experiences.append({"id": eid, "time": time, "session": s.number, "text": s.summary})
            cov = cover(eid, s.summary, s.number, [t.id for t in s.turns])
            candidates.append({"id": eid, "experience": eid, "kind": "summary", "text": s.summary,
                               "coverage": ordered(cov)})
    n_answerable = sum(1 for q in conv.qa if q.answerable)
    meta = {
        "importer": "memaudit.locomo", "importer_version": IMPORTER_VERSION,
        "dataset": "LoCoMo (Maharana et al., ACL 2024)", "conversation": conv.id, "speakers": list(conv.speakers),
        "source": dict(conv.source), "coverage_rule": rule, "settings": settings.to_dict(),
        "budget_rule": f"{settings.budget_frac:g} of the stream cost",
        "counts": {"sessions": len(conv.sessions), "turns": sum(len(s.turns) for s in conv.sessions),
                   "observations": sum(len(s.observations) for s in conv.sessions),
                   "summaries": sum(1 for s in conv.sessions if s.summary is not None),
                   "qa": len(conv.qa), "qa_by_category": {str(c): sum(1 for q in conv.qa if q.category == c)
                                                         for c in range(1, 6)},
                   "answerable_with_evidence": n_answerable,
                   "abstention": sum(1 for q in conv.qa if q.abstention)},
        "categories": {q.id: q.category for q in conv.qa},
        "repairs": conv.repair_counts(),
    }
    if rule == "adjudication":
        meta["adjudication"] = {"file": adjudication.path,
                                "candidates_decided": sum(1 for c in candidates if c["id"] in adjudication.decided)}
    data = {"format": "memaudit-package/1", "id": f"locomo-{conv.id}-{rule}", "cost_model": settings.cost_model,
            "experiences": experiences, "units": units, "candidates": candidates, "queries": queries, "meta": meta}
    return data


def build_package(conv: Conversation, settings: Settings = Settings(), rule: str = "link",
                  adjudication: Adjudication | None = None) -> Package:
    """The package of ``conv`` under coverage ``rule`` (``link``, ``answer`` or ``adjudication``).

    One experience per turn in session and turn order (id = dia_id, time = the parsed session
    date), each with its ``raw`` candidate (``Speaker: text``, covering the units of the questions
    whose evidence is that turn) and its ``fact`` candidates (the observations whose last linked
    turn it is); per session a header experience (``session_date="header"``) before its turns and
    the session summary as a ``summary`` experience after them.  Units: one per (question,
    evidence turn), weight 1 / |evidence|.  The package budget is ``budget_frac`` of the stream
    cost.
    """
    if rule not in RULES:
        raise LocomoError(f"unknown coverage rule {rule!r}; valid rules: {', '.join(RULES)}")
    if rule == "adjudication" and adjudication is None:
        raise LocomoError("the adjudication rule needs an adjudication file (--adjudication FILE)")
    data = _package_dict(conv, settings, rule, adjudication)
    pkg = package_from_dict(data, source=f"package of {conv.id}")
    data["budget"] = float(math.floor(settings.budget_frac * stream_cost(pkg)))
    return package_from_dict(data, source=f"package of {conv.id}")


def build_packages(conv: Conversation, settings: Settings = Settings(), rules=("link", "answer"),
                   adjudication: Adjudication | None = None) -> dict[str, Package]:
    """``{rule: package}`` for every rule in ``rules``."""
    return {rule: build_package(conv, settings, rule, adjudication) for rule in rules}
