"""Values placed on F's exact grid from their float evaluations, with a bound on the round-off."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from ..problem import Problem
from ..result import Declined, SolverError

__all__ = ["on_grid", "grid_floor", "term_errors", "row_errors"]

#: a value must sit on F's grid within this fraction of a step (after the float error bound)
GRID_SLACK = 0.25

_EPS = 2.0**-53


def term_errors(problem: Problem, units: np.ndarray, z: np.ndarray, k) -> np.ndarray:
    """A bound on the round-off of each term ``w_r h_r(z)`` computed in floats: ``4 (k + 4) eps |w_r|
    (max|slope| z + max|intercept|)``, ``k`` the amounts summed into ``z`` (the data's own decimal readings
    are within eps/2 of the floats)."""
    return 4 * (np.asarray(k) + 4) * _EPS * _sizes(problem, units, z)


def _sizes(problem: Problem, units: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``|w_r| (max|slope| |z| + max|intercept|)``: how large each term can be (only the units asked for are read)."""
    units = np.asarray(units)
    slope = np.abs(problem.h_slopes[units]).max(axis=1, initial=0.0) if units.size else np.zeros(0)
    icpt = np.abs(problem.h_intercepts[units]).max(axis=1, initial=0.0) if units.size else np.zeros(0)
    return np.abs(problem.weights[units]) * (slope * np.abs(z) + icpt)


def row_errors(problem: Problem, rows: sp.csr_array) -> np.ndarray:
    """Per row of a store incidence (stores x candidates): a bound on the round-off of its F in floats, its
    terms' (:func:`term_errors`) and the sum's, ``(terms + 2) eps`` of its absolute size."""
    z = sp.csr_array(rows @ abs(problem.coverage))
    n_in = np.asarray(rows.sum(axis=1)).reshape(-1)
    row_of = np.repeat(np.arange(rows.shape[0]), np.diff(z.indptr))
    size = _sizes(problem, z.indices, z.data)
    per_term = 4 * (n_in[row_of] + 4) * _EPS * size
    terms = np.diff(z.indptr)
    return (np.bincount(row_of, weights=per_term, minlength=rows.shape[0])
            + (terms + 2) * _EPS * np.bincount(row_of, weights=size, minlength=rows.shape[0]))


def _check_room(f: np.ndarray, err: np.ndarray, g: float) -> None:
    if f.size and (err.max() >= GRID_SLACK * g or np.abs(f).max() / g >= 2.0**52):
        raise Declined(f"F's grid step {g:g} is too fine for the size of the values in floating point: the "
                       "lattice certificate cannot place them on it exactly")


def on_grid(f: np.ndarray, err: np.ndarray, step: Fraction, what: str) -> np.ndarray:
    """``f / step`` rounded to whole steps (int64), after checking that the round-off ``err`` cannot move any
    value by a quarter step and that each value is that close to the grid (else :class:`SolverError`: the grid
    is wrong, a bug, and nothing is certified)."""
    g = float(step)
    f, err = np.asarray(f, dtype=float), np.asarray(err, dtype=float)
    _check_room(f, err, g)
    k = np.rint(f / g)
    off = np.abs(f - k * g)
    if f.size and np.any(off > err + 1e-12 * np.abs(f) + 4 * _EPS * g):
        raise SolverError(f"{what} is worth {f[np.argmax(off - err)]!r}, off F's grid of step {g:g}: the grid is "
                          "wrong (a bug), no certificate")
    return k.astype(np.int64)


def grid_floor(value: float, err: float, step: Fraction) -> int:
    """The highest whole number of grid steps at most ``value`` (``value`` within its round-off ``err`` of a
    grid point counts as that point).  A store holding a candidate dominated inside its group can be worth a
    value off the grid; a store of kept candidates beats it exactly when it is worth a step more."""
    g = float(step)
    _check_room(np.array([value]), np.array([err]), g)
    near = round(value / g)
    return int(near) if abs(value - near * g) <= err + 4 * _EPS * g else math.floor(value / g)
