"""Exact rational arithmetic on a problem's numbers: the one place floats become fractions."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .result import Declined

__all__ = []

#: CP-SAT data: largest denominator tried for each number, and largest scaled integer accepted
_MAX_DENOMINATOR = 10**6
_MAX_SCALED = 2**40


def _fractions(values: np.ndarray, describe) -> dict[float, Fraction]:
    """Each distinct value as a small-integer ratio, or raise :class:`Declined` naming the first that is not."""
    out = {}
    uniq, first = np.unique(np.asarray(values, dtype=float), return_index=True)
    for v, i in zip(uniq.tolist(), first.tolist()):
        f = Fraction(v).limit_denominator(_MAX_DENOMINATOR)
        if float(f) != v:   # exact: the nearest float of the ratio must be v itself
            raise Declined(f"{describe(i, v)} is not a ratio of small integers; CP-SAT needs data that scale "
                           "exactly to integers — use milp-highs or milp-cbc")
        out[v] = f
    return out


def _lcm_of_denominators(fracs) -> int:
    scale = 1
    for f in fracs:
        scale = math.lcm(scale, f.denominator)
    return scale


def _scaled_ints(values: np.ndarray, as_int, what: str) -> np.ndarray:
    """Map each distinct value through ``as_int`` (exact Python ints) and check the magnitude."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    uniq, inverse = np.unique(values, return_inverse=True)
    ints = [as_int(v) for v in uniq.tolist()]
    big = max(abs(i) for i in ints)
    if big > _MAX_SCALED:
        raise Declined(f"{what} scale to integers as large as {big} > 2**40; CP-SAT would risk overflow "
                       "— use milp-highs or milp-cbc")
    return np.array(ints, dtype=np.int64)[inverse.reshape(-1)]
