"""The package format (``memaudit-package/1``) as pydantic models, with every rule between its fields."""

from __future__ import annotations

import itertools
from typing import Annotated, Any, Literal, Union, get_args

from pydantic import BeforeValidator, Field, Strict, field_validator, model_validator

from memaudit_solvers import ProblemError
from memaudit_solvers.problem import breakpoint_pieces

from ..costs import COST_MODEL_UNITS, COST_MODELS, cost_of
from .fields import Id, NonNegativeNumber, PositiveNumber, StrictModel, _in_range, finite
from .reader import NonFinite
from .translate import more as _more
from .translate import show as _show

__all__ = ["FORMAT", "CANDIDATE_KINDS", "COMMON_UNIT_KINDS", "Experience", "Unit", "HCap", "HBreakpoints",
           "Candidate", "Query", "Package"]

#: the package format version this module reads and writes
FORMAT = "memaudit-package/1"

#: every candidate kind, in the order used by reports
CANDIDATE_KINDS = ("raw", "fact", "update", "tombstone", "compound_update", "summary", "external")

#: the usual unit kinds; any string is allowed
COMMON_UNIT_KINDS = ("current", "detail", "procedure", "validity", "interval", "preference", "identity")

CostModelName = Literal["words", "chars", "bytes", "tokens", "byte-overhead"]
CandidateKind = Literal["raw", "fact", "update", "tombstone", "compound_update", "summary", "external"]
assert set(get_args(CostModelName)) == set(COST_MODELS)
assert get_args(CandidateKind) == CANDIDATE_KINDS


_finite = finite


class _Model(StrictModel):
    pass


# -- h: the concave saturation of a unit ------------------------------------

class HCap(_Model):
    """``h(z) = min(cap, z)``."""

    cap: PositiveNumber


class HBreakpoints(_Model):
    """Concave, non-decreasing piecewise-linear ``h`` through (0, 0) and the breakpoints
    ``[z, h(z)]`` (z strictly increasing, > 0), constant after the last one."""

    breakpoints: list[tuple[float, float]] = Field(min_length=1)


_H_RULE = ('must be "min1", {"cap": c} with c a finite number > 0, or {"breakpoints": [[z, h(z)], ...]}'
           " describing a concave, non-decreasing h with h(0) = 0")


def _check_h(v):
    if isinstance(v, (HCap, HBreakpoints)):
        v = v.model_dump()
    if v == "min1":
        return v
    if isinstance(v, dict) and set(v) == {"cap"}:
        if (c := _finite(v["cap"])) is None or c <= 0:
            raise ValueError("cap must be a finite number > 0")
        return {"cap": _in_range(c)}
    if isinstance(v, dict) and set(v) == {"breakpoints"}:
        pts = v["breakpoints"]
        if not isinstance(pts, (list, tuple)) or not pts:
            raise ValueError("breakpoints must be a non-empty list of [z, h(z)] pairs")
        pairs = []
        for pt in pts:
            if not (isinstance(pt, (list, tuple)) and len(pt) == 2) or None in (zv := [_finite(x) for x in pt]):
                raise ValueError("each breakpoint must be a pair [z, h(z)] of finite numbers")
            pairs.append([_in_range(x) for x in zv])
        try:
            breakpoint_pieces(pairs)
        except ProblemError as exc:
            raise ValueError(f"breakpoints must describe a concave, non-decreasing h with h(0) = 0 ({exc})") from None
        return {"breakpoints": pairs}
    raise ValueError(_H_RULE)


HSpec = Annotated[Union[Literal["min1"], HCap, HBreakpoints], BeforeValidator(_check_h)]


# -- the records ------------------------------------------------------------

class Experience(_Model):
    """One item of the frozen stream."""

    id: Id
    time: str | None = None
    session: Annotated[int, Strict()] | None = None
    text: str


class Unit(_Model):
    """One evidence unit: a piece of value a future query needs."""

    id: Id
    kind: str = Field(description="free string; usually one of " + ", ".join(COMMON_UNIT_KINDS))
    weight: PositiveNumber
    text: str = ""
    h: HSpec = Field(default="min1", description='"min1", {"cap": c} or {"breakpoints": [[z, h(z)], ...]}')
    aliases: list[str] = Field(default_factory=list)


class Candidate(_Model):
    """One way to store an experience."""

    id: Id
    experience: Id
    kind: CandidateKind
    text: str = ""
    cost: PositiveNumber | None = Field(default=None, description="omitted: computed from text under cost_model")
    coverage: dict[str, NonNegativeNumber] = Field(default_factory=dict, description="unit id -> a[u, r] >= 0")


class Query(_Model):
    """A future question; the units it requires give them their value."""

    id: Id
    text: str
    answer: str | None = None
    requires: list[Id]
    weight: PositiveNumber = 1.0


class Package(_Model):
    """A MEMAUDIT package (``"format": "memaudit-package/1"``); see DESIGN.md "Package format"."""

    format: Literal["memaudit-package/1"]
    id: Id
    cost_model: CostModelName
    cost_source: Literal["text", "given"] = "text"
    budget: NonNegativeNumber | None = None
    experiences: list[Experience]
    units: list[Unit]
    candidates: list[Candidate]
    queries: list[Query] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("experiences", "units", "candidates")
    @classmethod
    def _non_empty(cls, v, info):
        if not v:
            raise ValueError(f"must not be empty: a package needs at least one {info.field_name[:-1]}")
        return v

    @model_validator(mode="after")
    def _check_cross_references(self):
        problems = _cross_reference_problems(self)
        if problems:
            raise ValueError(problems[0] + _more(len(problems) - 1))
        return self


def _cross_reference_problems(pkg: Package) -> list[str]:
    """Every broken rule between records, in the order: duplicate ids, then each candidate's experience,
    coverage keys and cost, then empty groups, then queries, then meta.  Set operations rule out the
    common case (nothing wrong) at C speed; a message is only built where a rule fails."""
    problems = []
    for field in ("experiences", "units", "candidates", "queries"):
        items = getattr(pkg, field)
        if len({item.id for item in items}) == len(items):
            continue
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            if item.id in seen:
                problems.append(f"{field}[{i}].id must be unique among the {field}; got {item.id!r}, "
                                f"already the id of {field}[{seen[item.id]}]")
            else:
                seen[item.id] = i
    experience_ids = {e.id for e in pkg.experiences}
    unit_ids = {u.id for u in pkg.units}
    candidates = pkg.candidates
    given = pkg.cost_source == "given" and all(c.cost is not None for c in candidates)   # nothing to compute
    if not (given and experience_ids.issuperset([c.experience for c in candidates])
            and unit_ids.issuperset(itertools.chain.from_iterable(c.coverage for c in candidates))):
        for i, c in enumerate(candidates):
            cost = "" if given else _cost_problem(pkg, i, c)
            if not cost and c.experience in experience_ids and unit_ids.issuperset(c.coverage):
                continue
            at = _at(i, c)
            if c.experience not in experience_ids:
                problems.append(f"{at}.experience must name an experience of this package; got {c.experience!r}")
            problems.extend(f"{at}.coverage key must name a unit of this package; got {key!r}"
                            for key in c.coverage if key not in unit_ids)
            if cost:
                problems.append(cost)
    grouped = {c.experience for c in candidates}
    if not grouped.issuperset(experience_ids):
        problems.extend(f"experiences[{i}] ({e.id!r}) must have at least one candidate (its group is empty); got none"
                        for i, e in enumerate(pkg.experiences) if e.id not in grouped)
    for i, q in enumerate(pkg.queries):
        problems.extend(f"queries[{i}] ({q.id!r}).requires[{j}] must name a unit of this package; got {r!r}"
                        for j, r in enumerate(q.requires) if r not in unit_ids)
    if (p := _json_value_problem(pkg.meta, "meta")):
        problems.append(p)
    return problems


def _at(i: int, c: Candidate) -> str:
    return f"candidates[{i}] ({c.id!r})"


def _cost_problem(pkg: Package, i: int, c: Candidate) -> str:
    if pkg.cost_source == "given":
        if c.cost is None:
            return f'{_at(i, c)}.cost is required because the package says "cost_source": "given"; got none'
        return ""
    computed = cost_of(c.text, pkg.cost_model)
    if c.cost is None:
        if computed <= 0:
            return (f"{_at(i, c)}.cost is not given and its text costs 0 {COST_MODEL_UNITS[pkg.cost_model]}, but a "
                    'cost must be > 0: give the candidate a non-empty text, or a cost together with "cost_source": '
                    f'"given"; got text {c.text!r}')
        return ""
    if c.cost != computed:
        return (f"{_at(i, c)}.cost must equal the cost of its text under cost_model {pkg.cost_model!r} "
                f'({computed} {COST_MODEL_UNITS[pkg.cost_model]}); got {_show(c.cost)}. To keep given costs, set '
                '"cost_source": "given" at the top level of the package')
    return ""


def _json_value_problem(v, path: str) -> str:
    if v is None or isinstance(v, (str, bool, int)):
        return ""
    if isinstance(v, float) or isinstance(v, NonFinite):
        return "" if _finite(v) is not None else f"{path} must be a finite number; got {_show(v)}"
    if isinstance(v, list):
        return next((p for i, x in enumerate(v) if (p := _json_value_problem(x, f"{path}[{i}]"))), "")
    if isinstance(v, dict):
        for k, x in v.items():
            if not isinstance(k, str):
                return f"{path} keys must be strings; got {k!r}"
            if (p := _json_value_problem(x, f"{path}[{k!r}]")):
                return p
        return ""
    return f"{path} must hold only JSON values (null, boolean, number, string, list, object); got {_show(v)}"
