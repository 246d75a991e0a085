"""What the baseline writers share: the gain tolerance, exact lexicographic picks, and the kinds check."""

from __future__ import annotations

import numpy as np

from ..problem import Problem

__all__ = ["GAIN_TOL", "lexmax", "kind_mask"]

#: a marginal gain at or below this is no gain (the paper's artifact uses the same 1e-12)
GAIN_TOL = 1e-12


def lexmax(mask: np.ndarray, keys) -> np.ndarray:
    """Per row, the column of the lexicographically largest ``keys`` among ``mask``; -1 for an empty row.

    ``mask`` has shape (T, C); each key is (T, C) or (C,).  Ties are compared exactly, as a
    Python tuple comparison would; the last key must break every tie.
    """
    tie = mask.copy()
    for key in keys:
        k = np.broadcast_to(key, mask.shape)
        best = np.max(np.where(tie, k, -np.inf), axis=1, keepdims=True)
        tie &= k == best
    pick = np.where(tie.any(axis=1), np.argmax(tie, axis=1), -1)
    return pick


def kind_mask(problem: Problem, kind: str, who: str) -> np.ndarray:
    """Boolean mask of the candidates of ``kind``; a ValueError naming ``who`` when the problem has no kinds."""
    if problem.kinds is None:
        raise ValueError(f"{who} needs candidate kinds, and this problem has none "
                         "(packages always have them; build a Problem with kinds=...)")
    return np.array([k == kind for k in problem.kinds], dtype=bool)
