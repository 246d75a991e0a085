"""A LoCoMo conversation as the reader builds it: turns, observations, sessions, QA items, and the names of
the repairs the reader may make (each one logged in ``Conversation.repairs``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["REPAIRS", "Turn", "Observation", "Session", "QA", "Conversation"]

#: every repair the reader may make: name -> what it does (the import log and ``meta.repairs`` use the names)
REPAIRS = {
    "evidence_split": "an evidence string holding several turn ids was split into its ids",
    "evidence_respelt": "a misspelt evidence id was normalised (e.g. D:11:26 -> D11:26, D30:05 -> D30:5)",
    "evidence_unknown_dropped": "an evidence id that names no turn was dropped",
    "evidence_duplicate_dropped": "an id listed twice in one question's evidence was kept once",
    "question_without_evidence": "a question of category 1-4 has no usable evidence: it gets no units",
    "qa_duplicate_dropped": "an exact duplicate of an earlier QA item was dropped",
    "answer_not_string": "a non-string answer (e.g. the integer 2022) was turned into its string",
    "key_without_session": "a session key (date, observation, summary, events) names no session: ignored",
    "observation_links_parsed": "observation turn ids given as a list or a comma-separated string were parsed",
    "observation_respelt": "a misspelt observation turn id was normalised",
    "observation_unknown_dropped": "an observation turn id that names no turn was dropped (the observation "
                                   "too when none was left)",
    "observation_empty_dropped": "an observation with an empty text was dropped",
    "observation_other_speaker": "an observation filed under the speaker who did not say its turn(s) was "
                                 "attributed to the turn's speaker",
    "observations_missing": "a session has no observation key: it has no fact candidates",
    "summary_missing": "a session has no summary key: it has no summary experience",
}


@dataclass(frozen=True)
class Turn:
    """One turn of a conversation: ``id`` is its dia_id (``D<session>:<index>``)."""

    id: str
    session: int
    speaker: str
    text: str
    caption: str | None = None

    def render(self) -> str:
        """``Speaker: text``, with a shared image as ``[shares <caption>]`` (the image query is never shown).

        Examples
        --------
        >>> Turn("D1:2", 1, "Mel", "Look!", "a photo of a lake").render()
        'Mel: Look! [shares a photo of a lake]'
        """
        body = f"{self.speaker}: {self.text}"
        return f"{body} [shares {self.caption}]" if self.caption else body


@dataclass(frozen=True)
class Observation:
    """A model-written observation of a session, linked to the turns it was drawn from (stream order)."""

    id: str
    session: int
    speaker: str
    text: str
    turns: tuple[str, ...]


@dataclass(frozen=True)
class Session:
    """One session: its number, its date (parsed and as written), turns, observations and summary."""

    number: int
    date: datetime
    date_text: str
    turns: tuple[Turn, ...]
    observations: tuple[Observation, ...]
    summary: str | None


@dataclass(frozen=True)
class QA:
    """One question-answer item; ``id`` is ``q<position in the file, from 1>`` (3 digits at least)."""

    id: str
    question: str
    answer: str | None
    category: int
    evidence: tuple[str, ...]
    adversarial_answer: str | None = None

    @property
    def abstention(self) -> bool:
        """Category 5: adversarial; the correct behaviour is to abstain."""
        return self.category == 5

    @property
    def answerable(self) -> bool:
        """Categories 1-4 with at least one evidence turn: the questions that get units."""
        return not self.abstention and bool(self.evidence)


@dataclass
class Conversation:
    """One conversation, checked and repaired; ``repairs`` maps a repair name to the ids it touched."""

    id: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    qa: tuple[QA, ...]
    source: dict
    repairs: dict[str, list[str]] = field(default_factory=dict)

    def turns(self) -> list[Turn]:
        """Every turn in session and turn order."""
        return [t for s in self.sessions for t in s.turns]

    def repair_counts(self) -> dict:
        """``{repair: {"count": n, "ids": [...]}}`` for every repair made, in :data:`REPAIRS` order."""
        return {k: {"count": len(self.repairs[k]), "ids": list(self.repairs[k])}
                for k in REPAIRS if self.repairs.get(k)}

