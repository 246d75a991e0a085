"""Models of the other documents memaudit writes and reads back: dataset manifests and harness runs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from .fields import FiniteNumber, Id, NonNegativeNumber

__all__ = ["MANIFEST_FORMAT", "RUN_FORMAT", "ManifestResult", "ManifestAblation", "ManifestEntry", "Manifest",
           "RunPart", "RunRow", "RunTrial", "RunDocument", "Superseded", "Deleted", "StoreAuditSpec"]

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


def _aliases(v):
    if not isinstance(v, list) or not v or not all(isinstance(a, str) and a.strip() for a in v):
        raise ValueError("must be a non-empty list of strings")
    return v


Aliases = Annotated[list[str], BeforeValidator(_aliases)]


class Superseded(_Open):
    """A value that was replaced: the words it went by, the unit of the current value, the unit of its validity."""

    attribute: str
    old_aliases: Aliases
    current_unit: str
    validity_unit: str | None = None


class Deleted(_Open):
    """A value the user asked to forget: the words it went by and the unit of its validity."""

    attribute: str
    value_aliases: Aliases
    validity_unit: str | None = None


class StoreAuditSpec(_Open):
    """``meta.store_audit`` of a package: what a store audit counts as stale or leaked.

    The unit ids it names are checked against the package by the caller (they are not in this document).
    """

    superseded: list[Superseded] = Field(default_factory=list)
    deleted: list[Deleted] = Field(default_factory=list)
