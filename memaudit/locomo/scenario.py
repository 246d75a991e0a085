"""One LoCoMo conversation as a ``memaudit-scenario/2`` scenario for the QA harness."""

from __future__ import annotations

from ..harness.scenario import Scenario, scenario_from_dict
from . import IMPORTER_VERSION
from .reader import Conversation

__all__ = ["scenario_dict", "build_scenario"]


def scenario_dict(conv: Conversation) -> dict:
    """The scenario of ``conv`` as plain data (the file format).

    Sessions keep their calendar dates (the context stamp shows them); every turn is one exchange
    (id = dia_id, user = ``Speaker: text``, no assistant reply).  Each answerable question (category
    1-4 with evidence) is a fact stated by reference at its last evidence turn, value = the
    annotated answer (usually not a literal substring of the turn), and a probe asked after the last
    session with its ``evidence`` and ``category``; category 5 items are ``abstain`` probes.
    Category 1-4 questions without evidence (or with an empty answer) have no probe (listed in
    ``meta.probes_skipped``).
    Observations and session summaries are ``notes`` covering the turns they were drawn from (a
    summary: every turn of its session).
    """
    n = len(conv.sessions)
    session_of = {t.id: s.number for s in conv.sessions for t in s.turns}
    sessions = [{"session": s.number, "date": s.date.isoformat(),
                 "exchanges": [{"id": t.id, "user": t.render(), "assistant": ""} for t in s.turns]}
                for s in conv.sessions]
    facts, probes, skipped, abstention_evidence = [], [], [], {}
    for q in conv.qa:
        if q.abstention:
            probes.append({"id": q.id, "session": n, "fact": None, "literal": q.question, "category": q.category,
                           "abstain": True})
            if q.evidence:
                abstention_evidence[q.id] = list(q.evidence)
            continue
        if not q.evidence or not q.answer:
            skipped.append(q.id)
            continue
        last = q.evidence[-1]
        facts.append({"key": q.id, "type": "detail", "salience": 1,
                      "versions": [{"session": session_of[last], "value": q.answer, "exchange": last}]})
        probes.append({"id": q.id, "session": n, "fact": q.id, "literal": q.question, "evidence": list(q.evidence),
                       "category": q.category})
    notes = []
    for s in conv.sessions:
        notes += [{"id": o.id, "session": s.number, "kind": "observation", "text": o.text, "covers": list(o.turns)}
                  for o in s.observations]
        if s.summary is not None:
            notes.append({"id": f"S{s.number}.summary", "session": s.number, "kind": "summary", "text": s.summary,
                          "covers": [t.id for t in s.turns]})
    meta = {"importer": "memaudit.locomo", "importer_version": IMPORTER_VERSION,
            "dataset": "LoCoMo (Maharana et al., ACL 2024)", "conversation": conv.id, "speakers": list(conv.speakers),
            "source": dict(conv.source), "probes_skipped": skipped, "abstention_evidence": abstention_evidence,
            "repairs": conv.repair_counts()}
    return {"format": "memaudit-scenario/2", "id": f"locomo-{conv.id}", "n_sessions": n, "replies": False,
            "facts": facts, "sessions": sessions, "probes": probes, "notes": notes, "meta": meta}


def build_scenario(conv: Conversation) -> Scenario:
    """The checked :class:`~memaudit.harness.scenario.Scenario` of ``conv``."""
    return scenario_from_dict(scenario_dict(conv), source=f"scenario of {conv.id}")
