"""The synthetic families ``small`` (MEMAUDIT-Small) and ``validity`` (validity-heavy stress tests).

Both draw an event graph from one seeded ``random.Random``: entities (services) with attributes
whose values change along update chains, personal details the user later asks to forget,
incident details, release procedures and distractor chatter that shares their vocabulary.
They differ only in their defaults: ``small`` has a few entities, short streams and mostly
current-value queries; ``validity`` has long update chains, several deletions and interval
and validity queries on most superseded values, so that validity state carries the value.
"""

from __future__ import annotations

import hashlib
import json

import random
from dataclasses import asdict, dataclass, fields

from memaudit_solvers.settings import setting_error, validate_settings

from ..package import Package
from .events import (Event, EventGraph, GeneratorError, QuerySpec, Slot, current_unit, deleted_unit, detail_unit,
                     interval_unit, invalid_unit, package_id_or, procedure_unit, render_package)

__all__ = ["SyntheticParams", "SMALL_DEFAULTS", "VALIDITY_DEFAULTS", "generate_small", "generate_validity",
           "params_id_suffix",
           "generate_synthetic", "synthetic_graph", "params_for"]

ENTITIES = ("billing-api", "search-worker", "docs-site", "auth-service", "mobile-app", "data-pipeline",
            "ledger", "notifier")

#: attribute -> pool of values (a chain of u updates needs u + 1 distinct values)
ATTRIBUTES = {
    "region": ("eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1", "eu-north-1", "us-east-1", "us-east-2",
               "us-west-2", "ap-south-1", "ap-northeast-1"),
    "database": ("Postgres 13", "Postgres 14", "Postgres 15", "Postgres 16", "Postgres 17", "MySQL 8.0",
                 "MySQL 8.4", "MariaDB 11", "CockroachDB 24", "SQLite 3.46"),
    "runtime": ("Node 18", "Node 20", "Node 22", "Node 24", "Bun 1.1", "Deno 2", "Python 3.11", "Python 3.12",
                "Python 3.13", "Go 1.23"),
    "owner": ("Priya", "Marco", "Ana", "Tomasz", "Leila", "Kenji", "Ruth", "Sipho", "Ines", "Oskar"),
    "queue": ("SQS", "RabbitMQ", "Kafka", "NATS", "Redis Streams", "Pulsar", "Google Pub/Sub", "ActiveMQ",
              "Beanstalkd", "ZeroMQ"),
    "CI provider": ("GitHub Actions", "GitLab CI", "Buildkite", "CircleCI", "Jenkins", "Drone", "Woodpecker",
                    "TeamCity", "Azure Pipelines", "Travis CI"),
    "log retention": ("7 days", "14 days", "30 days", "45 days", "60 days", "90 days", "120 days", "180 days",
                      "365 days", "400 days"),
    "release branch": ("release/2026.1", "release/2026.2", "release/2026.3", "release/2026.4", "release/2026.5",
                       "release/2026.6", "release/2026.7", "release/2026.8", "release/2026.9", "release/2026.10"),
}

#: personal details the user later asks to forget
PERSONAL = {
    "phone number": ("+44 20 7946 0018", "+44 20 7946 0342", "+44 20 7946 0571", "+44 20 7946 0903"),
    "personal email": ("k.dev@example.com", "kdev.home@example.org", "k.dev.2026@example.net", "kd@example.com"),
    "home address": ("12 Alder Road, Leeds", "4 Quay Street, Bristol", "88 Mill Lane, York", "7 Park Row, Bath"),
    "date of birth": ("1990-04-12", "1988-11-03", "1993-07-21", "1985-01-30"),
}

CAUSES = ("an expired TLS certificate", "a full disk on the primary", "a bad symlink in build.sh",
          "a missing index on orders.created_at", "a retry storm from the webhook client",
          "clock skew between two workers", "a leaked connection pool", "a typo in the DNS record")

ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")

STEPS = ("run the migrations", "build the image", "tag the commit", "run the smoke tests", "flip the feature flag",
         "announce it in the release channel", "bump the changelog", "warm the cache")

SET_TEXTS = (
    "For {entity} we use {value} as the {attr}; please keep that in mind when you write code for it.",
    "Quick context on {entity}: its {attr} is {value}, and that is what every config should assume.",
    "Something to remember about {entity}: the {attr} there is {value} for the time being.",
)
UPDATE_TEXTS = (
    "Heads-up about {entity}: the {attr} changed from {old} to {new} today, so anything still pointing at {old} "
    "is out of date.",
    "We just switched the {attr} of {entity} from {old} to {new}; please use {new} from now on in every example.",
    "Change of plan for {entity}: {old} is out as its {attr}, and {new} replaces it starting today for good.",
)
RESTATE_TEXTS = (
    "Just confirming that the {attr} of {entity} is still {value}; nothing changed there this week.",
    "As a reminder for the new teammate, {entity} still uses {value} as the {attr}.",
)
PERSONAL_SET_TEXTS = (
    "My {attr} is {value}, in case you need it for the test accounts.",
    "For the sign-up form you can use my {attr}, which is {value}.",
)
PERSONAL_UPDATE_TEXTS = (
    "My {attr} changed from {old} to {new}; please use the new one for the test accounts from now on.",
)
DELETE_TEXTS = (
    "Please forget my {attr}; I do not want it kept anywhere, not even in your notes.",
    "Can you delete the {attr} I gave you earlier? Do not store it or repeat it.",
)
CHATTER_TEXTS = (
    "How can I make the {attr} checks in {entity} faster without skipping any of them?",
    "Why does the {entity} test suite fail only on Monday mornings?",
    "Can you explain what the {attr} setting in the {entity} README actually does?",
    "What is a good way to log errors from {entity} without leaking secrets into the logs?",
    "The {entity} build feels slow again; where should I start looking for the {attr} problem?",
    "Could you review this pull request for {entity} and tell me if the {attr} handling looks right?",
)


@dataclass(frozen=True)
class SyntheticParams:
    """Parameters of the synthetic families (defaults: ``small``; see :data:`VALIDITY_DEFAULTS`).

    Attributes
    ----------
    entities : int
        Services whose attributes are tracked (at most 8).
    attributes : int
        Attributes per entity (at most 8).
    min_updates, max_updates : int
        Each attribute is updated a number of times drawn uniformly from this range (at most 9).
    restate_prob : float
        Chance that a restatement of the current value follows a set / update.
    deletions : int
        Personal details (phone number, e-mail, ...) the user states and later asks to forget (at most 4).
    deletion_updates : int
        Updates of each personal detail before it is deleted (at most 3).
    details, procedures : int
        Incident details and release procedures (at most one procedure per entity).
    chatter : int
        Distractor experiences that share vocabulary with the facts and cover nothing.
    validity_prob : float
        Chance that a superseded value gets a query "is it still valid?" (requires its validity unit).
    interval_prob : float
        Chance that a superseded value gets a query "what was it on day d?" (requires its interval unit).
    events_per_day : int
        Experiences per day (session).
    cost_model : str
        ``words``, ``chars``, ``bytes`` or ``tokens``.
    """

    entities: int = 3
    attributes: int = 2
    min_updates: int = 0
    max_updates: int = 2
    restate_prob: float = 0.3
    deletions: int = 1
    deletion_updates: int = 0
    details: int = 2
    procedures: int = 1
    chatter: int = 4
    validity_prob: float = 0.5
    interval_prob: float = 0.25
    events_per_day: int = 2
    cost_model: str = "words"

    def check(self, owner: str = "SyntheticParams") -> None:
        """Raise :class:`GeneratorError` naming the first parameter out of range, in the one message
        template (``<owner>: setting 'entities' must be an integer in [1, 8]; got 0``).

        Each parameter's rule is its declaration in :data:`memaudit.generators.GENERATOR_SETTINGS` (the
        one statement of it); two rules tie parameters together: ``min_updates <= max_updates`` and
        ``procedures <= entities`` (at most one release procedure per entity).
        """
        from . import _registry

        declared = [s for s in _registry()["small"][1:] if s.name != "seed"]
        try:
            validate_settings(owner, declared, asdict(self))
            if self.min_updates > self.max_updates:
                raise setting_error(owner, "min_updates", f"<= max_updates ({self.max_updates})", self.min_updates)
            if self.procedures > self.entities:
                raise setting_error(owner, "procedures", f"<= entities ({self.entities}): at most one per entity",
                                    self.procedures)
        except ValueError as exc:
            raise GeneratorError(str(exc)) from None


SMALL_DEFAULTS = SyntheticParams()

VALIDITY_DEFAULTS = SyntheticParams(entities=2, attributes=2, min_updates=5, max_updates=5, restate_prob=0.2,
                                    deletions=2, deletion_updates=1, details=1, procedures=0, chatter=8,
                                    validity_prob=1.0, interval_prob=0.75, events_per_day=2)


def _interleave(rng: random.Random, sequences: list[list]) -> list:
    """A uniformly random interleaving of the sequences that keeps each one's order."""
    seqs = [list(s) for s in sequences if s]
    out = []
    while seqs:
        total = sum(len(s) for s in seqs)
        pick = rng.randrange(total)
        for s in seqs:
            if pick < len(s):
                out.append(s.pop(0))
                break
            pick -= len(s)
        seqs = [s for s in seqs if s]
    return out


def generate_synthetic(params: SyntheticParams, seed: int, *, family: str, package_id: str | None = None,
                       version: str) -> Package:
    """Draw an event graph with ``params`` from ``random.Random(seed)`` and render it.

    The default id is ``<family>-s<seed>``, plus :func:`params_id_suffix` when the parameters are
    not the family's defaults.

    Examples
    --------
    >>> generate_validity(1).id, generate_validity(1, entities=3).id.startswith("validity-s1-p")
    ('validity-s1', True)
    """
    suffix = params_id_suffix(family, **{k: v for k, v in asdict(params).items()})
    pid = package_id_or(package_id, f"{family}-s{seed}{suffix}")
    graph, queries = synthetic_graph(params, seed, owner=f"generator {family!r}")
    meta = {"generator": family, "generator_version": version, "seed": seed, "params": asdict(params)}
    return render_package(graph, queries, package_id=pid, cost_model=params.cost_model, meta=meta)


def params_id_suffix(family: str, **overrides) -> str:
    """``""`` for the family's default parameters, else ``-p`` and 8 hex digits of the sha256 of
    the parameters that differ, appended to the default id, so a package
    with other parameters never takes a shipped package's id (the generator functions use it
    for their default id).

    Examples
    --------
    >>> params_id_suffix("validity"), params_id_suffix("validity", entities=8).startswith("-p")
    ('', True)
    """
    defaults = asdict(params_for(family))
    changed = {k: v for k, v in asdict(params_for(family, **overrides)).items() if defaults.get(k) != v}
    if not changed:
        return ""
    digest = hashlib.sha256(json.dumps(changed, sort_keys=True).encode("utf-8")).hexdigest()
    return f"-p{digest[:8]}"


def synthetic_graph(params: SyntheticParams, seed: int, *, owner: str = "SyntheticParams"
                    ) -> tuple[EventGraph, list[QuerySpec]]:
    """The hidden event graph and the query specs of a synthetic package (before rendering);
    ``owner`` names the caller in refusals of ``params`` (:meth:`SyntheticParams.check`)."""
    params.check(owner)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise GeneratorError(str(setting_error(owner, "seed", "an integer", seed)))
    rng = random.Random(seed)
    entities = rng.sample(ENTITIES, params.entities)
    slots: list[Slot] = []
    sequences: list[list[tuple]] = []  # items: (op, slot key, value, text)

    for entity in entities:
        for attr in rng.sample(sorted(ATTRIBUTES), params.attributes):
            key = f"{entity}.{attr.replace(' ', '-')}"
            slots.append(Slot(key, f"{entity} {attr}", "value", f"What is the {attr} of {entity} now?"))
            n_updates = rng.randint(params.min_updates, params.max_updates)
            values = rng.sample(ATTRIBUTES[attr], n_updates + 1)
            fmt = {"entity": entity, "attr": attr}
            seq = [("set", key, values[0], rng.choice(SET_TEXTS).format(value=values[0], **fmt))]
            for old, new in zip(values, values[1:]):
                if rng.random() < params.restate_prob:
                    seq.append(("restate", key, old, rng.choice(RESTATE_TEXTS).format(value=old, **fmt)))
                seq.append(("update", key, new, rng.choice(UPDATE_TEXTS).format(old=old, new=new, **fmt)))
            if rng.random() < params.restate_prob:
                seq.append(("restate", key, values[-1], rng.choice(RESTATE_TEXTS).format(value=values[-1], **fmt)))
            sequences.append(seq)

    for attr in rng.sample(sorted(PERSONAL), params.deletions):
        key = f"user.{attr.replace(' ', '-')}"
        slots.append(Slot(key, f"user {attr}", "value", f"What is my {attr}?"))
        values = rng.sample(PERSONAL[attr], params.deletion_updates + 1)
        seq = [("set", key, values[0], rng.choice(PERSONAL_SET_TEXTS).format(attr=attr, value=values[0]))]
        for old, new in zip(values, values[1:]):
            seq.append(("update", key, new, rng.choice(PERSONAL_UPDATE_TEXTS).format(attr=attr, old=old, new=new)))
        seq.append(("delete", key, None, rng.choice(DELETE_TEXTS).format(attr=attr)))
        sequences.append(seq)

    detail_specs = []
    for n, cause in enumerate(rng.sample(CAUSES, params.details)):
        entity = rng.choice(entities)
        detail_specs.append((f"{entity}.incident-{n + 1}", entity, cause))
    procedure_entities = rng.sample(entities, params.procedures)
    procedure_steps = [rng.sample(STEPS, 3) for _ in procedure_entities]
    for _ in range(params.chatter):
        entity = rng.choice(entities)
        attr = rng.choice(sorted(ATTRIBUTES))
        sequences.append([("chatter", None, None, rng.choice(CHATTER_TEXTS).format(entity=entity, attr=attr))])
    for key, entity, cause in detail_specs:
        sequences.append([("detail", key, cause, entity)])
    for entity, steps in zip(procedure_entities, procedure_steps):
        key = f"{entity}.release"
        slots.append(Slot(key, f"{entity} release steps", "procedure", f"How do we release {entity}?"))
        text = (f"To release {entity}, first {steps[0]}, then {steps[1]}, and only after that {steps[2]}; "
                "never skip a step.")
        sequences.append([("procedure", key, "; ".join(steps), text)])

    stream = _interleave(rng, sequences)
    graph = EventGraph()
    detail_days, detail_order = {}, []
    for index, (op, key, value, text) in enumerate(stream):
        if op == "detail":
            detail_days[key] = 1 + index // params.events_per_day
            detail_order.append((key, text))
    # two incidents of one entity on one day are told apart as its first, second, ... outage that day
    ordinal, seen = {}, {}
    for key, entity in detail_order:
        same_day = [k for k, e in detail_order if e == entity and detail_days[k] == detail_days[key]]
        if len(same_day) > 1:
            n = seen[(entity, detail_days[key])] = seen.get((entity, detail_days[key]), 0) + 1
            ordinal[key] = ORDINALS[n - 1] + " "
    for key, entity, cause in detail_specs:
        day, nth = detail_days[key], ordinal.get(key, "")
        slots.append(Slot(key, f"{entity} day-{day} {nth}outage cause", "detail",
                          f"What caused the {nth}{entity} outage on day {day}?"))
    for slot in slots:
        graph.add_slot(slot)
    for index, (op, key, value, text) in enumerate(stream):
        day = 1 + index // params.events_per_day
        if op == "detail":
            entity = text
            text = (f"Postmortem note for {entity}: the {ordinal.get(key, '')}outage on day {day} was caused by "
                    f"{value}, and we added an alert for it.")
        graph.add(Event(day, op, text, key, value))

    return graph, _queries(graph, rng, params)


def _queries(graph: EventGraph, rng: random.Random, params: SyntheticParams) -> list[QuerySpec]:
    out: list[QuerySpec] = []
    for key, slot in graph.slots.items():
        tl = graph.timelines[key]
        if slot.kind == "detail":
            out.append(QuerySpec(slot.question, tl.values[0][0], (detail_unit(key),)))
            continue
        if slot.kind == "procedure":
            out.append(QuerySpec(slot.question, tl.values[0][0], (procedure_unit(key),)))
            continue
        if tl.deleted is not None:
            out.append(QuerySpec(slot.question, f"not kept: deleted at the user's request on day {tl.deleted[0]}",
                                 (deleted_unit(key),)))
            continue
        k = len(tl.values) - 1
        requires = (current_unit(key),) + ((invalid_unit(key, k - 1),) if k >= 1 else ())
        out.append(QuerySpec(slot.question, tl.final, requires))
        for i in range(k):
            value, day, _ = tl.values[i]
            new_value, end_day, _ = tl.values[i + 1]
            if rng.random() < params.validity_prob:
                out.append(QuerySpec(f"Is {value} still the {slot.name}?",
                                     f"no: replaced by {new_value} on day {end_day}", (invalid_unit(key, i),)))
            if end_day > day and rng.random() < params.interval_prob:
                m = rng.randint(day, end_day - 1)
                out.append(QuerySpec(f"What was the {slot.name} on day {m}?", value, (interval_unit(key, i),)))
    return out


def params_for(family: str, **overrides) -> SyntheticParams:
    """The parameters of ``family`` (``small`` or ``validity``) with ``overrides`` applied."""
    return _with({"small": SMALL_DEFAULTS, "validity": VALIDITY_DEFAULTS}[family], overrides)


def _with(defaults: SyntheticParams, overrides: dict) -> SyntheticParams:
    names = {f.name for f in fields(SyntheticParams)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise GeneratorError(f"unknown parameter {unknown[0]!r}; valid parameters: {', '.join(sorted(names))}")
    return SyntheticParams(**{**asdict(defaults), **overrides})


def generate_small(seed: int = 0, *, package_id: str | None = None, **params) -> Package:
    """A MEMAUDIT-Small package: a few entities, short streams (see :class:`SyntheticParams`).

    Examples
    --------
    >>> pkg = generate_small(7)
    >>> pkg.id, pkg.meta["generator"], generate_small(7) == pkg
    ('small-s7', 'small', True)
    """
    from . import GENERATOR_VERSION
    return generate_synthetic(_with(SMALL_DEFAULTS, params), seed, family="small", package_id=package_id,
                              version=GENERATOR_VERSION)


def generate_validity(seed: int = 0, *, package_id: str | None = None, **params) -> Package:
    """A validity-heavy package: long update chains, deletions, interval and validity queries."""
    from . import GENERATOR_VERSION
    return generate_synthetic(_with(VALIDITY_DEFAULTS, params), seed, family="validity", package_id=package_id,
                              version=GENERATOR_VERSION)
