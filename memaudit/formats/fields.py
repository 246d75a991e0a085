"""Field types shared by every document model: finite numbers, non-empty ids, strict models."""

from __future__ import annotations

import math
import numbers
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

__all__ = ["MAX_MAGNITUDE", "MIN_MAGNITUDE", "check_magnitude", "finite", "PositiveNumber", "NonNegativeNumber", "FiniteNumber", "FiniteNonNegative", "Id",
           "StrictModel"]


#: the largest magnitude of a number in a document (costs, weights, coverage, budgets): far beyond any real
#: data, and small enough that sums and products of them stay finite in every solver
MAX_MAGNITUDE = 1e100

#: the smallest magnitude of a non-zero number in a document: far below any real data, and large enough
#: that quotients (value per cost) and products (weight times coverage) stay finite and normal in every solver
MIN_MAGNITUDE = 1e-100


def check_magnitude(f: float) -> str | None:
    """What is wrong with a finite number's magnitude, or None (0 is always fine).

    Examples
    --------
    >>> check_magnitude(2.5), check_magnitude(0.0)
    (None, None)
    >>> check_magnitude(1e-310)
    "must be 0 or at least 1e-100 in magnitude (memaudit's smallest non-zero number, so that quotients and products stay finite); got 1e-310"
    """
    if abs(f) > MAX_MAGNITUDE:
        return (f"must be at most {MAX_MAGNITUDE:g} in magnitude (memaudit's largest number, so that "
                f"sums and products stay finite); got {f:g}")
    if f != 0 and abs(f) < MIN_MAGNITUDE:
        return (f"must be 0 or at least {MIN_MAGNITUDE:g} in magnitude (memaudit's smallest non-zero number, so "
                f"that quotients and products stay finite); got {f:g}")
    return None


def _in_range(f: float) -> float:
    problem = check_magnitude(f)
    if problem is not None:
        raise ValueError(problem)
    return f


def finite(v) -> float | None:
    """``float(v)`` when ``v`` is a finite real number (not a bool), else None (also for integers past 1e308)."""
    if type(v) is float:            # what JSON numbers parse to: no abstract-class check (it was most of a load)
        return v if math.isfinite(v) else None
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _positive(v):
    f = finite(v)
    if f is None or f <= 0:
        raise ValueError("must be a finite number > 0")
    return _in_range(f)


def _non_negative(v):
    f = finite(v)
    if f is None or f < 0:
        raise ValueError("must be a finite number >= 0")
    return _in_range(f)


def _finite_non_negative(v):
    f = finite(v)
    if f is None or f < 0:
        raise ValueError("must be a finite number >= 0")
    return f


def _any_finite(v):
    f = finite(v)
    if f is None:
        raise ValueError("must be a finite number")
    return _in_range(f)


PositiveNumber = Annotated[float, Field(gt=0), BeforeValidator(_positive)]
NonNegativeNumber = Annotated[float, Field(ge=0), BeforeValidator(_non_negative)]
FiniteNumber = Annotated[float, BeforeValidator(_any_finite)]
#: a ratio checked elsewhere against the package (e.g. a certificate's budget_frac): finite, not bounded
FiniteNonNegative = Annotated[float, Field(ge=0), BeforeValidator(_finite_non_negative)]
Id = Annotated[str, Field(min_length=1)]


class StrictModel(BaseModel):
    """A document part: unknown fields are refused (with a did-you-mean hint from the translator)."""

    model_config = ConfigDict(extra="forbid")
