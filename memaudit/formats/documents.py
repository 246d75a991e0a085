"""Models of the other documents memaudit writes and reads back: dataset manifests and harness runs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .fields import FiniteNumber, Id, NonNegativeNumber

__all__ = ["MANIFEST_FORMAT", "RUN_FORMAT", "ManifestResult", "ManifestAblation", "ManifestEntry", "Manifest",
           "RunPart", "RunRow", "RunTrial", "RunDocument"]

MANIFEST_FORMAT = "memaudit-manifest/1"
RUN_FORMAT = "memaudit-harness-run/1"


class _Open(BaseModel):
    # written by memaudit with more fields than it reads back; the model names what is read
    model_config = ConfigDict(extra="allow")


class ManifestResult(_Open):
    """The certified optimum of one package at one budget fraction."""

    budget_frac: NonNegativeNumber
    budget: NonNegativeNumber
    opt: NonNegativeNumber
    store: list[str]


class ManifestAblation(_Open):
    dropped_kinds: list[str]
    results: list[ManifestResult]


class ManifestEntry(_Open):
    """One package of a shipped set: its file, id, sha256, provenance and certified results."""

    file: Id
    id: Id
    sha256: Id
    generator: Id
    results: list[ManifestResult]
    ablation: ManifestAblation


class Manifest(_Open):
    """``manifest.json`` of a shipped package set (``memaudit-manifest/1``)."""

    format: Literal["memaudit-manifest/1"]
    budget_fracs: list[NonNegativeNumber] = Field(min_length=1)
    packages: list[ManifestEntry]


class RunPart(_Open):
    """One named part of a trial (plant, disturb, probe, score) with its settings."""

    name: str
    settings: dict[str, Any] = Field(default_factory=dict)


class RunRow(_Open):
    """The outcome of one probe in one form."""

    probe: str
    form: str
    outcome: str
    tokens_injected: FiniteNumber


class RunTrial(_Open):
    """One policy's trial: its parts, its summary (form -> counts) and its rows."""

    disturb: RunPart
    summary: dict[str, dict[str, FiniteNumber]]
    rows: list[RunRow]


class RunDocument(_Open):
    """``run.json`` of ``memaudit harness run`` (``memaudit-harness-run/1``)."""

    format: Literal["memaudit-harness-run/1"]
    trials: list[RunTrial] = Field(min_length=1)
