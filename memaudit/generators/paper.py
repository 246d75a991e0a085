"""The MEMAUDIT paper's own packages: MemAudit-Small ("base") and the two stress packages.

The paper (arXiv 2605.02199) evaluates its writers on tiny packages with fixed integer costs
(not counted from text), defined in its public artifact.  These builders state them as
memaudit packages (``"cost_source": "given"``), so every solver, baseline and report runs on
them unchanged:

* :func:`paper_small` (``paper-small``, one package per seed): 7 experiences in stream order,
  three normal facts, then for each of two preferences its old statement and its update.
  Weights are drawn from one ``random.Random(seed)`` in exactly this order: for fact i, its
  weight ``choice([1.0, 1.2, 1.4])`` then its raw span's cost ``5 + randint(0, 1)``; after the
  three facts, for update i, the current value's weight ``2.0 + 0.25 randint(0, 2)`` then the
  invalidation unit's weight (same draw).  Context units weigh 0.35 and stale units 0.15
  (no draw).  25 candidates, 7 groups, 11 units.
* :func:`paper_update_chain` (``paper-update-chain``): a version and three successive
  corrections; 4 groups, 18 candidates, total candidate cost 51.
* :func:`paper_temporal_interval` (``paper-temporal-interval``): five intervals and two
  closures of open intervals; 7 groups, 30 candidates, total candidate cost 88.

The two stress packages are deterministic (no seed).  Every unit has the default
``h = min(1, z)``; the invalidation units have kind ``validity`` and are covered (positive
coverage), never a penalty.  Texts are short labels; the costs are the paper's.
"""

from __future__ import annotations

import random

from ..package import Package, package_from_dict
from .events import GeneratorError

__all__ = ["PAPER_FAMILIES", "PAPER_VERSION", "paper_small", "paper_update_chain", "paper_temporal_interval",
           "paper_package", "total_candidate_cost", "PAPER_SOURCE"]

#: bump when the bytes of a paper package change for the same seed
PAPER_VERSION = "1"

#: where the definitions come from, recorded in every package's meta
PAPER_SOURCE = "the MEMAUDIT paper (arXiv 2605.02199), as its public artifact defines its packages"

#: family name -> (builder, takes a seed)
PAPER_FAMILIES = ("paper-small", "paper-update-chain", "paper-temporal-interval")


class _Builder:
    """Collects experiences, units and candidates in stream order."""

    def __init__(self):
        self.experiences, self.units, self.candidates = [], [], []
        self._weights: dict[str, float] = {}

    def unit(self, uid: str, kind: str, weight: float, text: str, *, keep: bool = False) -> None:
        """Add unit ``uid`` (or, with ``keep``, leave an existing one's weight as it is)."""
        if uid in self._weights:
            if keep:
                return
            for u in self.units:
                if u["id"] == uid:
                    u["weight"] = weight
            self._weights[uid] = weight
            return
        self._weights[uid] = weight
        self.units.append({"id": uid, "kind": kind, "weight": weight, "text": text})

    def experience(self, eid: str, text: str, candidates) -> None:
        n = len(self.experiences) + 1
        self.experiences.append({"id": eid, "time": f"2026-01-01T{9 + n // 60:02d}:{n % 60:02d}:00Z",
                                 "session": 1, "text": text})
        for name, kind, cost, coverage, label in candidates:
            self.candidates.append({"id": f"{eid}.{name}", "experience": eid, "kind": kind, "text": label,
                                    "cost": cost, "coverage": dict(coverage)})

    def correction(self, eid: str, text: str, *, raw, fact, tombstone, update, summary) -> None:
        """An experience that corrects an earlier one, with the paper's five candidates of a correction, in
        this order: ``raw``, ``fact``, ``tombstone``, ``update`` (kind ``compound_update``) and ``summary``,
        each given as ``(cost, coverage, label)``."""
        self.experience(eid, text, [(kind, kind, *c) for kind, c in (
            ("raw", raw), ("fact", fact), ("tombstone", tombstone), ("compound_update", update), ("summary", summary))])

    def package(self, pid: str, meta: dict) -> Package:
        data = {"format": "memaudit-package/1", "id": pid, "cost_model": "words", "cost_source": "given",
                "experiences": self.experiences, "units": self.units, "candidates": self.candidates,
                "queries": [{"id": f"q.{u['id']}", "text": f"What does memory hold about {u['text']}?",
                             "requires": [u["id"]], "weight": u["weight"]} for u in self.units],
                "meta": {**meta, "generator_version": PAPER_VERSION, "source": PAPER_SOURCE}}
        return package_from_dict(data, source=f"<{meta['generator']}>")


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise GeneratorError(f"paper-small: seed must be an integer >= 0; got {seed!r}")
    return seed


def paper_small(seed: int = 0, *, package_id: str | None = None) -> Package:
    """MemAudit-Small for one seed: the paper's 7-experience base template.

    Examples
    --------
    >>> pkg = paper_small(0)
    >>> len(pkg.experiences), len(pkg.candidates), len(pkg.units), total_candidate_cost(pkg)
    (7, 25, 11, 83.0)
    """
    seed = _check_seed(seed)
    rng = random.Random(seed)
    b = _Builder()
    for i in range(3):
        fact, context = f"fact{i}", f"context{i // 2}"
        b.unit(fact, "fact", rng.choice([1.0, 1.2, 1.4]), f"normal fact {i}")
        b.unit(context, "context", 0.35, f"the context of facts {2 * (i // 2)}-{2 * (i // 2) + 1}", keep=True)
        raw_cost = 5 + rng.randint(0, 1)
        b.experience(f"f{i}", f"The user states normal fact {i}.", [
            ("raw", "raw", raw_cost, {fact: 1.0, context: 0.4}, f"raw span of fact {i}"),
            ("fact", "fact", 2, {fact: 1.0}, f"atomic fact {i}"),
            ("summary", "summary", 3, {fact: 0.7, context: 0.5}, f"summary of fact {i}"),
        ])
    for i in range(2):
        stale, current, invalid = f"stale{i}", f"current{i}", f"invalid{i}"
        b.unit(stale, "stale", 0.15, f"the old value of preference {i}")
        b.unit(current, "current", 2.0 + 0.25 * rng.randint(0, 2), f"the current value of preference {i}")
        b.unit(invalid, "validity", 2.0 + 0.25 * rng.randint(0, 2), f"the old value of preference {i} no longer holds")
        b.experience(f"p{i}", f"The user states preference {i}.", [
            ("raw", "raw", 4, {stale: 1.0}, f"raw span of old preference {i}"),
            ("fact", "fact", 2, {stale: 1.0}, f"atomic fact: old preference {i}"),
            ("summary", "summary", 3, {stale: 0.75}, f"summary of old preference {i}"),
        ])
        b.correction(f"u{i}", f"The user corrects preference {i}.",
                     raw=(6, {current: 1.0, invalid: 0.45, stale: 0.2}, f"raw span of the correction of {i}"),
                     fact=(2, {current: 1.0}, f"atomic fact: current preference {i}"),
                     tombstone=(1, {invalid: 1.0}, f"tombstone: old preference {i} no longer holds"),
                     update=(3, {current: 1.0, invalid: 1.0}, f"update: preference {i} changed from old to current"),
                     summary=(4, {current: 0.75, invalid: 0.75, stale: 0.1}, f"summary of the correction of {i}"))
    return b.package(package_id or f"paper-small-s{seed}",
                     {"generator": "paper-small", "seed": seed, "params": {"normal_facts": 3, "updates": 2}})


def paper_update_chain(*, package_id: str | None = None) -> Package:
    """The paper's update-chain stress package: version 0, then three corrections.

    Examples
    --------
    >>> pkg = paper_update_chain()
    >>> len(pkg.experiences), len(pkg.candidates), total_candidate_cost(pkg)
    (4, 18, 51.0)
    """
    b = _Builder()
    b.unit("v0", "stale", 0.1, "version 0")
    b.experience("v0", "The user states version 0.", [
        ("raw", "raw", 4, {"v0": 1.0}, "raw span of version 0"),
        ("fact", "fact", 2, {"v0": 1.0}, "atomic fact: version 0"),
        ("summary", "summary", 3, {"v0": 0.7}, "summary of version 0"),
    ])
    for s in range(1, 4):
        v, prev, inv = f"v{s}", f"v{s - 1}", f"inv{s - 1}"
        b.unit(v, "current" if s == 3 else "stale", 2.3 if s == 3 else 0.1, f"version {s}")
        b.unit(inv, "validity", 1.85, f"version {s - 1} no longer holds")
        b.correction(f"c{s}", f"The user corrects version {s - 1} to version {s}.",
                     raw=(5, {v: 1.0, inv: 0.35, prev: 0.15}, f"raw span of correction {s}"),
                     fact=(2, {v: 1.0}, f"atomic fact: version {s}"),
                     tombstone=(1, {inv: 1.0}, f"tombstone: version {s - 1}"),
                     update=(3, {v: 0.95, inv: 1.0}, f"update: version {s - 1} to {s}"),
                     summary=(3, {v: 0.65, inv: 0.65}, f"summary of correction {s}"))
    return b.package(package_id or "paper-update-chain",
                     {"generator": "paper-update-chain", "seed": None, "params": {"corrections": 3}})


def paper_temporal_interval(*, package_id: str | None = None) -> Package:
    """The paper's temporal-interval stress package: five intervals, then two closures.

    Examples
    --------
    >>> pkg = paper_temporal_interval()
    >>> len(pkg.experiences), len(pkg.candidates), total_candidate_cost(pkg)
    (7, 30, 88.0)
    """
    b = _Builder()
    for i in range(5):
        label, start, end, dur = (f"i{i}.{k}" for k in ("label", "start", "end", "duration"))
        b.unit(label, "current", 0.9, f"interval {i} happened")
        b.unit(start, "interval", 0.75, f"the start of interval {i}")
        b.unit(end, "interval", 0.85, f"the end of interval {i}")
        b.unit(dur, "interval", 0.55, f"the duration of interval {i}")
        b.experience(f"i{i}", f"The user describes interval {i}.", [
            ("label_fact", "fact", 2, {label: 1.0}, f"atomic fact: interval {i} happened"),
            ("interval_fact", "fact", 3, {start: 1.0, end: 1.0, dur: 0.7}, f"atomic fact: start and end of {i}"),
            ("summary", "summary", 2, {label: 0.85, start: 0.35, end: 0.35}, f"coarse summary of interval {i}"),
            ("raw", "raw", 5, {label: 1.0, start: 1.0, end: 1.0, dur: 1.0}, f"raw span of interval {i}"),
        ])
    for i in range(2):
        old, closed, inv = f"open{i}", f"closed{i}", f"open{i}.invalid"
        b.unit(old, "stale", 0.1, f"interval {i} is open")
        b.unit(closed, "current", 1.4, f"interval {i} is closed")
        b.unit(inv, "validity", 1.6, f"interval {i} is no longer open")
        b.correction(f"k{i}", f"The user closes open interval {i}.",
                     raw=(5, {closed: 1.0, inv: 0.45, old: 0.15}, f"raw span of closure {i}"),
                     fact=(2, {closed: 1.0}, f"atomic fact: interval {i} closed"),
                     tombstone=(1, {inv: 1.0}, f"tombstone: open interval {i}"),
                     update=(3, {closed: 1.0, inv: 1.0}, f"update: interval {i} open to closed"),
                     summary=(3, {closed: 0.7, inv: 0.7}, f"summary of closure {i}"))
    return b.package(package_id or "paper-temporal-interval",
                     {"generator": "paper-temporal-interval", "seed": None, "params": {"intervals": 5, "closures": 2}})


def paper_package(distribution: str, seed: int = 0) -> Package:
    """One package of the paper's distribution ``base``, ``update_chain`` or ``temporal_interval``."""
    if distribution == "base":
        return paper_small(seed)
    if distribution == "update_chain":
        return paper_update_chain()
    if distribution == "temporal_interval":
        return paper_temporal_interval()
    raise GeneratorError(f"unknown paper distribution {distribution!r}; valid: base, update_chain, temporal_interval")


def total_candidate_cost(pkg: Package) -> float:
    """Sum of every candidate's cost (the paper's budget rule averages this, not the stream cost)."""
    from ..package import candidate_costs

    return float(sum(candidate_costs(pkg).values()))
