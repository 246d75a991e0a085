"""The shape of a scenario file (``memaudit-scenario/1``), for ``memaudit schema --format scenario``.

The rules between fields (sessions in range, versions in time order, values occurring in their text,
probes after the fact) are checked by :func:`memaudit.harness.scenario.scenario_from_dict`; this model
states the fields and their types, and a test keeps it no stricter than that loader.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool, StrictInt

from .fields import StrictModel

__all__ = ["ScenarioVersion", "ScenarioDelete", "ScenarioFact", "ScenarioExchange", "ScenarioSession",
           "ScenarioProbe", "ScenarioFile"]


class ScenarioVersion(StrictModel):
    """One stated value of a fact: the session, the value and the user's words that contain it."""

    session: StrictInt = Field(ge=1)
    value: str = Field(min_length=1)
    text: str = Field(min_length=1)
    position: StrictInt | None = Field(default=None, ge=0)


class ScenarioDelete(StrictModel):
    """The user's request, in a later session, to forget the fact (without restating the value)."""

    session: StrictInt = Field(ge=1)
    text: str = Field(min_length=1)
    position: StrictInt | None = Field(default=None, ge=0)


class ScenarioFact(StrictModel):
    """A typed fact with its versions, oldest first, and an optional delete request."""

    key: str = Field(min_length=1)
    type: Literal["identity", "preference", "decision", "detail", "procedure"]
    salience: StrictInt = Field(default=1, ge=0)
    versions: list[ScenarioVersion] = Field(min_length=1)
    delete: ScenarioDelete | None = None


class ScenarioExchange(StrictModel):
    user: str = Field(min_length=1)
    assistant: str = ""


class ScenarioSession(StrictModel):
    """The filler exchanges of one session."""

    session: StrictInt = Field(ge=1)
    exchanges: list[ScenarioExchange]


class ScenarioProbe(StrictModel):
    """A question asked at the end of ``session`` (default: the last) about ``fact`` (null: never planted)."""

    id: str = Field(min_length=1)
    session: StrictInt | None = Field(default=None, ge=1)
    fact: str | None = None
    literal: str = Field(min_length=1)
    paraphrase: str | None = None


class ScenarioFile(StrictModel):
    """A ``memaudit-scenario/1`` file (JSON or YAML)."""

    format: Literal["memaudit-scenario/1"]
    id: str = Field(min_length=1)
    n_sessions: StrictInt = Field(ge=1, le=100_000)
    replies: StrictBool = True
    facts: list[ScenarioFact] = Field(default_factory=list)
    sessions: list[ScenarioSession] = Field(default_factory=list)
    probes: list[ScenarioProbe] = Field(min_length=1)
    meta: dict[str, Any] = Field(default_factory=dict)
