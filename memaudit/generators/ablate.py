"""Candidate-kind ablation: the same package without some kinds of candidates."""

from __future__ import annotations

from ..errors import PackageError
from ..package import CANDIDATE_KINDS, Package, package_from_dict, package_to_dict

__all__ = ["AblationError", "ablate", "parse_kinds"]


class AblationError(PackageError):
    """An ablation would leave a group empty, or names an unknown candidate kind."""


def parse_kinds(text: str) -> tuple[str, ...]:
    """Candidate kinds from a comma-separated list, checked against :data:`CANDIDATE_KINDS`.

    Examples
    --------
    >>> parse_kinds("tombstone, compound_update")
    ('tombstone', 'compound_update')
    >>> parse_kinds("tombstones")
    Traceback (most recent call last):
    ...
    memaudit.generators.ablate.AblationError: unknown candidate kind 'tombstones' in --drop-kinds; valid kinds: raw, fact, update, tombstone, compound_update, summary, external
    """
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    if not kinds:
        raise AblationError(f"--drop-kinds needs at least one candidate kind; got {text!r}")
    for k in kinds:
        if k not in CANDIDATE_KINDS:
            raise AblationError(f"unknown candidate kind {k!r} in --drop-kinds; valid kinds: "
                                f"{', '.join(CANDIDATE_KINDS)}")
    return tuple(dict.fromkeys(kinds))


def ablate(pkg: Package, drop_kinds, *, package_id: str | None = None, source_sha256: str | None = None) -> Package:
    """``pkg`` without its candidates of the kinds in ``drop_kinds``.

    Units, queries and weights are kept as they are, so a unit only the dropped candidates
    covered still counts in the objective and OPT can only fall.  ``meta["ablation"]`` is a
    list with one record per ablation (an ablated package ablated again keeps the earlier
    records): the dropped kinds, how many candidates went, the source package id and (if
    given) its sha256.  Dropping ``raw`` (or any group's most expensive candidate) lowers the
    stream cost, so ``--budget-frac`` budgets of the result differ from the source's: compare
    at an absolute budget.

    Raises
    ------
    AblationError
        When an experience would keep no candidate (its group would be empty): the message
        names the experiences; or ``package_id`` is empty.

    Examples
    --------
    >>> from memaudit.generators import generate
    >>> pkg = generate("validity", 1)
    >>> out = ablate(pkg, ["tombstone", "compound_update"])
    >>> sorted({c.kind for c in out.candidates}), out.id
    (['fact', 'raw', 'update'], 'validity-s1-no-tombstone-compound_update')
    >>> ablate(pkg, ["raw"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    memaudit.generators.ablate.AblationError: dropping raw would leave the group of experience 'e...
    """
    drop = tuple(dict.fromkeys(drop_kinds))
    for k in drop:
        if k not in CANDIDATE_KINDS:
            raise AblationError(f"unknown candidate kind {k!r}; valid kinds: {', '.join(CANDIDATE_KINDS)}")
    data = package_to_dict(pkg)
    kept = [c for c in data["candidates"] if c["kind"] not in drop]
    left = {c["experience"] for c in kept}
    empty = [e["id"] for e in data["experiences"] if e["id"] not in left]
    if empty:
        more = f" (and {len(empty) - 1} more)" if len(empty) > 1 else ""
        raise AblationError(f"dropping {', '.join(drop)} would leave the group of experience {empty[0]!r}{more} "
                            "empty: every experience needs at least one candidate")
    data["candidates"] = kept
    data["id"] = package_id if package_id is not None else f"{pkg.id}-no-{'-'.join(drop)}"
    if package_id is not None and (not isinstance(package_id, str) or not package_id.strip()):
        raise AblationError(f"package id must not be empty; got {package_id!r} (leave --id out for the default)")
    meta = dict(data.get("meta", {}))
    record = {"dropped_kinds": list(drop), "n_dropped": len(pkg.candidates) - len(kept), "source_id": pkg.id}
    if source_sha256 is not None:
        record["source_sha256"] = source_sha256
    previous = meta.get("ablation")
    previous = [] if previous is None else list(previous) if isinstance(previous, list) else [previous]
    meta["ablation"] = [*previous, record]
    data["meta"] = meta
    return package_from_dict(data, source=f"ablation of package {pkg.id!r}")
