"""MEMAUDIT packages: load / save, budgets, and compilation to a memaudit_solvers.Problem.

The models of the format live in :mod:`memaudit.formats.package` and are re-exported here."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import weakref
from collections import Counter
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from memaudit_solvers import Problem, ProblemError
from memaudit_solvers.problem import breakpoint_pieces, check_h_cells, min_cap_pieces, stack_pieces

from .costs import COST_MODEL_UNITS, cost_of
from .errors import BudgetError, PackageError
from .fileio import atomic_write
from .formats.fields import check_magnitude, finite
from .formats.package import (CANDIDATE_KINDS, COMMON_UNIT_KINDS, FORMAT, Candidate, Experience, HBreakpoints, HCap,
                              Package, Query, Unit)
from .formats.reader import parse_json, paused_gc, read_bytes
from .formats.translate import json_kind as _json_kind
from .formats.translate import show as _show
from .formats.translate import validation_message

__all__ = ["FORMAT", "CANDIDATE_KINDS", "COMMON_UNIT_KINDS", "Experience", "Unit", "HCap", "HBreakpoints",
           "Candidate", "Query", "Package", "Compiled", "load_package", "package_from_dict", "save_package",
           "package_to_dict", "package_sha256", "candidate_costs", "stream_cost", "resolve_budget", "compile_package",
           "package_json_schema", "summarize", "loaded_sha256"]


# -- loading and saving -----------------------------------------------------

def package_from_dict(data, source: str = "<dict>") -> Package:
    """Validate plain data (as parsed from JSON) and return a :class:`Package`.

    Raises
    ------
    PackageError
        One line naming ``source``, the field (JSON path and id), the rule and the value received.

    Examples
    --------
    >>> pkg = package_from_dict({"format": "memaudit-package/1", "id": "toy", "cost_model": "words",
    ...     "experiences": [{"id": "e1", "text": "We deploy to eu-west-2."}],
    ...     "units": [{"id": "region", "kind": "current", "weight": 1}],
    ...     "candidates": [{"id": "e1.raw", "experience": "e1", "kind": "raw",
    ...                     "text": "We deploy to eu-west-2.", "coverage": {"region": 1}}]})
    >>> candidate_costs(pkg)
    {'e1.raw': 4.0}
    >>> package_from_dict({"format": "memaudit-package/1", "id": "toy", "cost_model": "words",
    ...     "experiences": [], "units": [], "candidates": []}, source="toy.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    memaudit.errors.PackageError: toy.json: experiences must not be empty: ...; got [] (and 2 more problems)
    """
    if not isinstance(data, dict):
        raise PackageError(f"{source}: a package must be a JSON object ({{...}}) at the top level; "
                           f"got {_json_kind(data)}")
    if "format" not in data:
        raise PackageError(f"{source}: format is required; expected {FORMAT!r}")
    if data["format"] != FORMAT:
        raise PackageError(f"{source}: format must be {FORMAT!r}, the only package format version this "
                           f"memaudit reads; got {_show(data['format'])}")
    try:
        return Package.model_validate(data)
    except ValidationError as exc:
        raise PackageError(validation_message(exc, data, Package, source, "the package")) from exc


def load_package(path) -> Package:
    """Read, parse and validate a package file; the file is read once, only ever for reading.

    A UTF-8 byte-order mark is accepted.  JSON ``NaN`` / ``Infinity`` literals, duplicate
    keys in one object, every limit of :mod:`memaudit.formats` and every rule of the package
    format are rejected.  The sha256 of the very bytes parsed is kept with the package
    (:func:`loaded_sha256`), so a certificate never hashes a second read of the file.

    Raises
    ------
    PackageError
        One line naming the file, the field, the rule and the value received.
    """
    source = os.fspath(path)
    raw = read_bytes(source, what="package", error=PackageError)
    with paused_gc():
        data = parse_json(raw, source, what="package object", error=PackageError, nonfinite="mark")
        pkg = package_from_dict(data, source=source)
    _LOADED[id(pkg)] = (weakref.ref(pkg, lambda _, key=id(pkg): _LOADED.pop(key, None)), source,
                        hashlib.sha256(raw).hexdigest())
    return pkg


#: id(package) -> (weak reference, path, sha256 of the bytes parsed), for packages read by load_package
_LOADED: dict[int, tuple] = {}


def loaded_sha256(pkg: Package, path=None) -> str | None:
    """SHA-256 of the bytes :func:`load_package` parsed ``pkg`` from (None for a package built
    in memory, or when ``path`` is given and is not the file it was read from)."""
    ref, source, sha = _LOADED.get(id(pkg), (None, None, None))
    if ref is None or ref() is not pkg:
        return None
    return sha if path is None or os.fspath(path) == source else None


def package_to_dict(pkg: Package) -> dict:
    """The JSON form of a package: every field written out, ``None`` (absent) fields left out."""
    try:
        return pkg.model_dump(mode="json", exclude_none=True)
    except PydanticSerializationError as exc:
        raise PackageError(f"package {pkg.id!r} cannot be written as JSON: {exc}") from None


def save_package(pkg: Package, path, *, indent: int | None = 2) -> None:
    """Write ``pkg`` as JSON (indent 2, UTF-8, trailing newline), atomically.

    The data is validated again first, so an invalid (e.g. mutated) package is never written;
    the file is replaced in one step (temporary file in the same directory, then ``os.replace``).
    ``indent=None`` writes it compact (no whitespace: 100,000 experiences take 49 MiB instead of 83,
    within the 64 MiB :func:`load_package` reads).
    """
    path = os.fspath(path)
    data = package_to_dict(pkg)
    with paused_gc():
        package_from_dict(data, source=path)
    text = json.dumps(data, indent=indent, separators=None if indent is not None else (",", ":"),
                      ensure_ascii=False, allow_nan=False) + "\n"
    atomic_write(path, text.encode("utf-8"), error=PackageError)


def package_sha256(path) -> str:
    """SHA-256 (hex) of the raw bytes of a package file."""
    return hashlib.sha256(read_bytes(path, what="package", error=PackageError)).hexdigest()


def package_json_schema() -> dict:
    """The JSON Schema of the package format, generated from the models."""
    return Package.model_json_schema()


# -- costs and budgets ------------------------------------------------------

def _cost_list(pkg: Package) -> list[float]:
    """Resolved cost of every candidate, in package order."""
    if pkg.cost_source == "given":
        return [float(c.cost) for c in pkg.candidates]
    model = pkg.cost_model
    return [float(c.cost) if c.cost is not None else float(cost_of(c.text, model)) for c in pkg.candidates]


def candidate_costs(pkg: Package) -> dict[str, float]:
    """Resolved cost of every candidate (given, or computed from its text), by candidate id."""
    return dict(zip([c.id for c in pkg.candidates], _cost_list(pkg)))


def _largest_costs(pkg: Package, costs: list[float]) -> list[float]:
    """The largest candidate cost of each experience that has a candidate, in order of its first candidate."""
    first: dict[str, int] = {}
    groups = np.fromiter((first.setdefault(c.experience, len(first)) for c in pkg.candidates), dtype=np.int64,
                         count=len(pkg.candidates))
    largest = np.zeros(len(first))
    np.maximum.at(largest, groups, np.asarray(costs, dtype=float))
    return largest.tolist()


def stream_cost(pkg: Package) -> float:
    """Cost of storing every experience verbatim: sum over experiences of the largest candidate cost."""
    return float(sum(_largest_costs(pkg, _cost_list(pkg))))


def _budget_number(v, name: str, pkg: Package, bounded: bool = True) -> float:
    f = finite(v)
    if f is None or f < 0:
        raise BudgetError(f"the {name} for package {pkg.id!r} must be a finite number >= 0; got {_show(v)}")
    problem = check_magnitude(f) if bounded else None
    if problem is not None:
        raise BudgetError(f"the {name} for package {pkg.id!r} {problem}")
    return f


def resolve_budget(pkg: Package, budget=None, budget_frac=None) -> float:
    """The budget B to use: ``budget``, or ``budget_frac`` times the stream cost, or the package's own.

    Raises
    ------
    BudgetError
        If both are given, a value is negative or not finite, or neither is given and the
        package has no budget.
    """
    if budget is not None and budget_frac is not None:
        raise BudgetError(f"give either a budget (--budget) or a budget fraction (--budget-frac), not both; "
                          f"got budget={_show(budget)} and budget_frac={_show(budget_frac)}")
    if budget is not None:
        return _budget_number(budget, "budget", pkg)
    if budget_frac is not None:
        frac = _budget_number(budget_frac, "budget fraction", pkg, bounded=False)
        value = frac * stream_cost(pkg)
        if not math.isfinite(value):
            raise BudgetError(f"the budget fraction {_show(budget_frac)} of package {pkg.id!r} times its stream "
                              f"cost {_show(stream_cost(pkg))} is not a finite number; use a smaller fraction")
        return _budget_number(value, "budget (budget fraction times the stream cost)", pkg)
    if pkg.budget is not None:
        return float(pkg.budget)
    raise BudgetError(f"package {pkg.id!r} has no budget of its own: pass --budget B (a cost in "
                      f"{COST_MODEL_UNITS[pkg.cost_model]}) or --budget-frac f (a fraction of the stream cost "
                      f"{_show(stream_cost(pkg))})")


# -- compilation ------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Compiled:
    """A package compiled to a :class:`memaudit_solvers.Problem`, with the ids behind each index.

    Candidate ``i`` of the problem is ``candidate_ids[i]``; unit ``r`` is ``unit_ids[r]``;
    group ``g`` is ``experience_ids[g]`` (stream order, as listed in the package).
    """

    problem: Problem
    candidate_ids: list[str]
    unit_ids: list[str]
    experience_ids: list[str]

    @functools.cached_property
    def _positions(self) -> dict[str, int]:
        return {cid: i for i, cid in enumerate(self.candidate_ids)}

    def ids(self, indices) -> list[str]:
        """Candidate ids of candidate indices (or of a boolean mask of shape (n_candidates,)), in order."""
        arr = np.asarray(indices)
        if arr.dtype == bool:
            arr = np.flatnonzero(arr)
        n = len(self.candidate_ids)
        flat = arr.reshape(-1)
        if flat.dtype.kind in "iu" and (not flat.size or (flat.min() >= 0 and flat.max() < n)):
            ids = self.candidate_ids
            return [ids[i] for i in flat.tolist()]
        out = []
        for i in arr.reshape(-1).tolist():
            if not isinstance(i, int) or not 0 <= i < n:
                raise IndexError(f"candidate index must be an integer in [0, {n}); got {i!r}")
            out.append(self.candidate_ids[i])
        return out

    def indices(self, ids) -> np.ndarray:
        """Candidate indices (int64, in the given order) of candidate ids; a single str is one id."""
        if isinstance(ids, str):
            ids = [ids]
        out = []
        for cid in ids:
            if cid not in self._positions:
                raise PackageError(f"unknown candidate id {cid!r}: not a candidate of this package")
            out.append(self._positions[cid])
        return np.asarray(out, dtype=np.int64)


def _h_pieces(h) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(h, HBreakpoints):
        s, b = breakpoint_pieces(h.breakpoints)
        # h(z_k) - s_k z_k >= 0 exactly; float rounding can leave -1e-17
        return s, np.maximum(b, 0.0)
    s, b = min_cap_pieces([h.cap if isinstance(h, HCap) else 1.0])
    return s[0], b[0]


def _h_arrays(units: list[Unit]) -> tuple[np.ndarray, np.ndarray]:
    """The (n_units, n_pieces) slopes and intercepts of every unit's h: one array operation for the
    ``min1`` and ``cap`` units, :func:`_h_pieces` only for the units with breakpoints."""
    caps = [u.h.cap if isinstance(u.h, HCap) else 1.0 for u in units]
    slopes, intercepts = min_cap_pieces(caps)
    listed = [r for r, u in enumerate(units) if isinstance(u.h, HBreakpoints)]
    if not listed:
        check_h_cells(len(units), 2)
        return slopes, intercepts
    pieces = list(zip(slopes, intercepts))
    for r in listed:
        pieces[r] = _h_pieces(units[r].h)
    return stack_pieces(pieces)


def compile_package(pkg: Package) -> Compiled:
    """Build the :class:`memaudit_solvers.Problem` of a package.

    Coverage is a scipy sparse (n_candidates, n_units) array; every unit's h is given by
    the same number of affine pieces (shorter lists repeat their last piece).

    Examples
    --------
    >>> pkg = package_from_dict({"format": "memaudit-package/1", "id": "toy", "cost_model": "words",
    ...     "experiences": [{"id": "e1", "text": "a b c"}],
    ...     "units": [{"id": "r", "kind": "current", "weight": 2}],
    ...     "candidates": [{"id": "e1.raw", "experience": "e1", "kind": "raw", "text": "a b c",
    ...                     "coverage": {"r": 1}}]})
    >>> c = compile_package(pkg)
    >>> c.problem.costs.tolist(), c.problem.weights.tolist(), c.ids([0])
    ([3.0], [2.0], ['e1.raw'])
    """
    candidates = pkg.candidates
    group_of = {e.id: g for g, e in enumerate(pkg.experiences)}
    unit_of = {u.id: r for r, u in enumerate(pkg.units)}
    n_cand, n_units = len(candidates), len(pkg.units)
    costs = np.array(_cost_list(pkg), dtype=float)
    groups = np.array([group_of[c.experience] for c in candidates], dtype=np.int64)
    per_candidate = np.array([len(c.coverage) for c in candidates], dtype=np.int64)
    n_entries = int(per_candidate.sum())
    rows = np.repeat(np.arange(n_cand, dtype=np.int64), per_candidate)
    cols = np.fromiter((unit_of[key] for c in candidates for key in c.coverage), dtype=np.int64, count=n_entries)
    vals = np.fromiter((a for c in candidates for a in c.coverage.values()), dtype=float, count=n_entries)
    coverage = sp.csr_array((vals, (rows, cols)), shape=(n_cand, n_units))
    weights = np.array([u.weight for u in pkg.units], dtype=float)
    try:
        slopes, intercepts = _h_arrays(pkg.units)
        problem = Problem.build(costs, groups, coverage, weights, h_slopes=slopes, h_intercepts=intercepts,
                                n_groups=len(pkg.experiences), kinds=[c.kind for c in pkg.candidates])
    except ProblemError as exc:
        raise PackageError(f"package {pkg.id!r} cannot be compiled: {exc}") from exc
    return Compiled(problem, [c.id for c in pkg.candidates], [u.id for u in pkg.units],
                    [e.id for e in pkg.experiences])


# -- inspection -------------------------------------------------------------

def summarize(pkg: Package, budget=None) -> dict:
    """Counts and costs of a package, for ``memaudit inspect``.

    ``budget`` (if given) overrides the package's own; ``budget`` and ``budget_frac``
    (budget / stream cost) are None when no budget is known.
    """
    costs = candidate_costs(pkg)
    total = stream_cost(pkg)
    if budget is not None:
        budget = resolve_budget(pkg, budget=budget)
    elif pkg.budget is not None:
        budget = float(pkg.budget)
    kinds = Counter(c.kind for c in pkg.candidates)
    cost_by_kind: dict[str, float] = {}
    for c in pkg.candidates:
        cost_by_kind[c.kind] = cost_by_kind.get(c.kind, 0.0) + costs[c.id]
    order = [k for k in CANDIDATE_KINDS if k in kinds]
    unit_kinds = Counter(u.kind for u in pkg.units)
    return {
        "id": pkg.id,
        "format": pkg.format,
        "cost_model": pkg.cost_model,
        "cost_source": pkg.cost_source,
        "n_experiences": len(pkg.experiences),
        "n_candidates": len(pkg.candidates),
        "n_units": len(pkg.units),
        "n_queries": len(pkg.queries),
        "candidates_by_kind": {k: kinds[k] for k in order},
        "units_by_kind": dict(sorted(unit_kinds.items())),
        "stream_cost": total,
        "cost_by_kind": {k: cost_by_kind[k] for k in order},
        "budget": budget,
        "budget_frac": None if budget is None else budget / total,
    }
