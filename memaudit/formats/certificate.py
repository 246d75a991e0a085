"""The model of a certificate file (``memaudit-certificate/1``): its shape, not its claims."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from .fields import FiniteNonNegative, FiniteNumber, Id, NonNegativeNumber, PositiveNumber

__all__ = ["CERTIFICATE_FORMAT", "CertifiedPackage", "RecordedResult", "Certificate"]

#: the certificate format version memaudit writes and reads
CERTIFICATE_FORMAT = "memaudit-certificate/1"


def _strings(rule: str):
    def check(v):
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ValueError(rule)
        return v
    return BeforeValidator(check)


def _boolean(v):
    if not isinstance(v, bool):
        raise ValueError("must be true or false")
    return v


CandidateIds = Annotated[list[str], _strings("must be a list of candidate ids (strings)")]


class _Open(BaseModel):
    # a certificate may carry more than memaudit reads (``solve --json`` adds store_rows, ...)
    model_config = ConfigDict(extra="allow")


class CertifiedPackage(_Open):
    """Which package the certificate is about: its id and the sha256 of its bytes."""

    id: Id
    sha256: Id
    path: str | None = None
    cost_model: str | None = None


class RecordedResult(_Open):
    """One solver's result as recorded: its status, its value and the store it chose."""

    method: Id
    status: str
    value: FiniteNumber
    chosen: CandidateIds
    message: str = ""


class Certificate(_Open):
    """A ``memaudit-certificate/1`` document; ``memaudit verify`` checks its claims against the package."""

    format: Literal["memaudit-certificate/1"]
    package: CertifiedPackage
    budget: NonNegativeNumber
    budget_frac: FiniteNonNegative | None = None
    rtol: PositiveNumber | None = None
    opt: FiniteNumber
    store: CandidateIds
    certified: Annotated[bool, BeforeValidator(_boolean)]
    status: str | None = None
    reasons: Annotated[list[str], _strings("must be a list of strings")] = Field(default_factory=list)
    method: str | None = None
    backend: str | None = None
    results: list[RecordedResult]
    backends: dict[str, Any] = Field(default_factory=dict)
