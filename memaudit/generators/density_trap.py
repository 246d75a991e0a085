"""The density trap as a family: packages where density-only selection keeps about 1/K of OPT.

Construction (``k`` >= 2, ``topics`` = M >= 1).  The family is deterministic: it has no
seed, since nothing in it is drawn at random.  Each topic is one experience in which the user
moves an attribute to a new value and retires k - 1 old ones at once::

    We moved the test runner to vitest; jest is retired; mocha is retired; ava is retired.

Its candidates:

* ``fact``       ``test runner: vitest``                      covers the current value;
* ``tombstone``  ``jest is retired; mocha is retired; ...``   covers the k - 1 validity units;
* ``compound_update``  the fact and the tombstone together    covers all k units;
* ``raw``        the whole statement                           covers all k units, costs most.

Units: the current value (weight 1, required by "which test runner do we use?") and one
validity unit per retired value (weight ``w_v``, required by "do we still use jest?", whose
answer is no).  ``w_v = 0.9 * c_clause / c_fact``, where ``c_clause`` is the cost of the
cheapest "X is retired" clause and ``c_fact`` the cost of the fact, so that under any cost
model the fact has the strictly largest standalone value per cost (checked when building).
The budget is the total cost of the M compound updates.

Density-only selection stores each topic's fact first; that uses the experience's one slot,
so neither the compound update nor the tombstone can follow, whatever the budget.  Its value
is M, while OPT stores the M compound updates, worth ``M * (1 + w_v * (k - 1))``: with the
word cost model ``w_v = 0.9`` and the ratio is ``1 / (1 + 0.9 (k - 1))``, about 1/k.  Every
validity unit is lost.  Marginal-gain greedy and GVT take the same fact first; their
best-single-candidate fallback rescues one topic, so with M = 1 they are optimal and with
M topics they keep about ``max(1, 1 + w_v (k - 1)) / (M (1 + w_v (k - 1)))``: the trap
catches any rule that spends an experience's slot on density.
"""

from __future__ import annotations

from ..costs import cost_of
from ..errors import MemauditError
from ..package import Package, package_from_dict

__all__ = ["density_trap", "GENERATOR_VERSION", "TOPICS", "MAX_K"]

#: largest k accepted (the package grows like k^2 words per topic)
MAX_K = 1000

#: bump when the output of :func:`density_trap` changes for the same parameters
GENERATOR_VERSION = "1"

#: (attribute, new value, retired values) for each topic, used in this order
TOPICS = (
    ("test runner", "vitest", ("jest", "mocha", "ava", "tape", "jasmine", "karma", "qunit", "cypress")),
    ("deploy region", "eu-central-1", ("eu-west-2", "eu-west-1", "us-east-1", "us-west-2", "ap-south-1")),
    ("primary database", "postgres17", ("postgres15", "mysql8", "mariadb", "sqlite", "mongodb", "cockroachdb")),
    ("package manager", "uv", ("pip", "pipenv", "poetry", "conda", "pdm", "hatch", "rye")),
    ("ci service", "buildkite", ("jenkins", "travis", "circleci", "drone", "teamcity", "bamboo")),
    ("python linter", "ruff", ("flake8", "pylint", "pyflakes", "pycodestyle", "bandit", "prospector")),
)


def _retired(olds: tuple, k: int) -> list[str]:
    """k - 1 retired values: the topic's own names first, then numbered ones."""
    names = list(olds[: k - 1])
    while len(names) < k - 1:
        names.append(f"{olds[0]}{len(names) + 1}")
    return names


def density_trap(k: int = 10, *, topics: int = 1, cost_model: str = "words") -> Package:
    """Build the density-trap package with ``k`` units per topic (see the module docstring).

    Parameters
    ----------
    k : int >= 2
        Units per topic: the current value and k - 1 retired values.
    topics : int in [1, 6]
        Number of topics (experiences).
    cost_model : str
        ``words`` (default), ``chars``, ``bytes`` or ``tokens``.

    Examples
    --------
    >>> pkg = density_trap(4)
    >>> [c.kind for c in pkg.candidates], pkg.budget
    (['raw', 'fact', 'tombstone', 'compound_update'], 12.0)
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 2 <= k <= MAX_K:
        raise MemauditError(f"density-trap: k must be an integer from 2 to {MAX_K}; got {k!r}")
    if isinstance(topics, bool) or not isinstance(topics, int) or not 1 <= topics <= len(TOPICS):
        raise MemauditError(f"density-trap: topics must be an integer from 1 to {len(TOPICS)}; got {topics!r}")
    experiences, units, candidates, queries = [], [], [], []
    budget, opt_value = 0.0, 0.0
    for t, (attr, new, olds) in enumerate(TOPICS[:topics], 1):
        eid = f"e{t:02d}"
        key = attr.replace(" ", "_")
        retired = _retired(olds, k)
        clauses = [f"{old} is retired" for old in retired]
        fact = f"{attr}: {new}"
        tomb = "; ".join(clauses)
        compound = f"{fact}; {tomb}"
        raw = f"Heads-up: we moved the {attr} to {new}; {tomb}."
        c_fact = cost_of(fact, cost_model)
        w_v = round(0.9 * min(cost_of(c, cost_model) for c in clauses) / c_fact, 6)
        experiences.append({"id": eid, "time": f"2026-03-{t:02d}T10:00:00Z", "session": t, "text": raw})
        cur = f"{key}.current"
        units.append({"id": cur, "kind": "current", "weight": 1.0, "text": f"the {attr} is {new}"})
        queries.append({"id": f"q{t:02d}.current", "text": f"Which {attr} do we use?", "answer": new,
                        "requires": [cur], "weight": 1.0})
        vids = []
        for j, old in enumerate(retired, 1):
            vid = f"{key}.retired.{old}"
            vids.append(vid)
            units.append({"id": vid, "kind": "validity", "weight": w_v, "text": f"{old} is no longer the {attr}"})
            queries.append({"id": f"q{t:02d}.retired{j:02d}", "text": f"Do we still use {old} as the {attr}?",
                            "answer": "no", "requires": [vid], "weight": w_v})
        every = {u: 1.0 for u in [cur, *vids]}
        candidates += [
            {"id": f"{eid}.raw", "experience": eid, "kind": "raw", "text": raw, "coverage": every},
            {"id": f"{eid}.fact", "experience": eid, "kind": "fact", "text": fact, "coverage": {cur: 1.0}},
            {"id": f"{eid}.tombstone", "experience": eid, "kind": "tombstone", "text": tomb,
             "coverage": {v: 1.0 for v in vids}},
            {"id": f"{eid}.compound", "experience": eid, "kind": "compound_update", "text": compound,
             "coverage": every},
        ]
        budget += cost_of(compound, cost_model)
        opt_value += 1 + w_v * (k - 1)
        dens = {kind: (w / cost_of(text, cost_model)) for kind, w, text in
                (("fact", 1.0, fact), ("tombstone", w_v * (k - 1), tomb), ("compound", 1 + w_v * (k - 1), compound),
                 ("raw", 1 + w_v * (k - 1), raw))}
        if not all(dens["fact"] > d for kind, d in dens.items() if kind != "fact"):  # pragma: no cover
            raise MemauditError(f"density-trap: under cost model {cost_model!r} the fact of topic {attr!r} is not "
                                f"the densest candidate ({dens}); the trap does not hold")
    data = {"format": "memaudit-package/1", "id": f"density-trap-k{k}-m{topics}", "cost_model": cost_model,
            "budget": budget, "experiences": experiences, "units": units, "candidates": candidates,
            "queries": queries,
            "meta": {"generator": "density-trap", "generator_version": GENERATOR_VERSION,
                     "params": {"k": k, "topics": topics, "cost_model": cost_model},
                     "density_ratio_by_construction": topics / opt_value}}
    return package_from_dict(data, source=f"<density-trap k={k}>")
