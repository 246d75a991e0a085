"""Seeded, reproducible package generators (small, validity, natural, the paper's own packages, density-trap)
and ablation.

Each family is registered once as ``family: (function, *settings)``: its
:class:`~memaudit_solvers.settings.Setting` declarations (:data:`GENERATOR_SETTINGS`) say what it
takes; :func:`generate` checks given settings against them with the one message template, and
``memaudit generate FAMILY`` builds its flags and ``--help`` from them.
"""

from __future__ import annotations

import functools

from memaudit_solvers.settings import Setting, validate_settings

__all__ = ["GENERATOR_VERSION", "GENERATORS", "GENERATOR_SETTINGS", "DEFAULT_BUDGET_FRAC", "generate", "with_budget",
           "write_package", "generator_owner"]

#: version of every generator's output: bump it whenever a generator's bytes change for the same
#: parameters and seed (shipped files record it in their manifests).  2: packages carry a budget.
GENERATOR_VERSION = "2"

#: the default budget of every shipped generated package, as a fraction of its stream cost
DEFAULT_BUDGET_FRAC = 0.25


def __getattr__(name: str):
    if name == "GENERATOR_SETTINGS":  # built on first use: the limits live beside each family's code
        return {family: tuple(row[1:]) for family, row in _registry().items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _registry() -> dict:
    """``family: (function, *settings)``: each family's :class:`~memaudit_solvers.settings.Setting`
    declarations, defaults equal to the function's own; ``function(package_id=..., **settings)``."""
    from ..costs import COST_MODELS
    from .density_trap import MAX_K, TOPICS, density_trap
    from .natural import NaturalParams, generate_natural
    from .paper import paper_small, paper_temporal_interval, paper_update_chain
    from .synthetic import (ATTRIBUTES, CAUSES, ENTITIES, PERSONAL, SMALL_DEFAULTS, VALIDITY_DEFAULTS, generate_small,
                            generate_validity)

    def cost(default: str) -> Setting:
        return Setting("cost_model", str, default, "Cost model of the candidate texts.", choices=tuple(COST_MODELS))

    def synthetic(d) -> tuple:
        def i(name, low, high, text):
            return Setting(name, int, getattr(d, name), text, low=low, high=high)

        def p(name, text):
            return Setting(name, float, getattr(d, name), text, low=0, high=1)

        return (SEED, i("entities", 1, len(ENTITIES), "Entities (services) whose attributes are tracked."),
                i("attributes", 1, len(ATTRIBUTES), "Attributes per entity."),
                i("min_updates", 0, 9, "Fewest updates of an attribute."),
                i("max_updates", 0, 9, "Most updates of an attribute (at least min_updates)."),
                p("restate_prob", "Chance of a restatement after each set / update."),
                i("deletions", 0, len(PERSONAL), "Personal details stated and later deleted on request."),
                i("deletion_updates", 0, 3, "Updates of each personal detail before its deletion."),
                i("details", 0, len(CAUSES), "Incident details."),
                i("procedures", 0, len(ENTITIES), "Release procedures (at most one per entity)."),
                i("chatter", 0, 10_000, "Distractor experiences that cover nothing."),
                p("validity_prob", "Chance that a superseded value gets a 'still valid?' query."),
                p("interval_prob", "Chance that a superseded value gets a 'what was it on day d?' query."),
                i("events_per_day", 1, 1000, "Experiences per day (session): 5 minutes apart from 09:00, closer "
                  "past 288 a day."),
                cost(d.cost_model))

    nat = NaturalParams()
    return {
        "small": (generate_small, *synthetic(SMALL_DEFAULTS)),
        "validity": (generate_validity, *synthetic(VALIDITY_DEFAULTS)),
        "natural": (generate_natural, SEED,
                    Setting("filler", bool, nat.filler, "Keep the distractor exchanges (whole transcript) or only "
                            "the 26 fact-bearing ones."),
                    Setting("filler_lines", int, nat.filler_lines, "Lines of generated code in each distractor "
                            "reply.", low=0, high=1000),
                    Setting("exchanges_per_session", int, nat.exchanges_per_session, "Exchanges per day (the "
                            "30-session memory bench has 12).", low=1, high=200),
                    cost(nat.cost_model)),
        "paper-small": (paper_small, Setting("seed", int, 0, "Seed of the paper's weights (random.Random(SEED)).",
                                             low=0)),
        "paper-update-chain": (paper_update_chain,),
        "paper-temporal-interval": (paper_temporal_interval,),
        "density-trap": (_no_id(density_trap),
                         Setting("k", int, 10, "Units per topic: the current value and K - 1 retired values; "
                                 "density keeps about 1/K.", low=2, high=MAX_K),
                         Setting("topics", int, 1, "Number of topics (experiences).", low=1, high=len(TOPICS)),
                         cost("words")),
    }


def _no_id(fn):
    def build(*, package_id=None, **settings):
        if package_id is not None:
            from .events import GeneratorError
            raise GeneratorError(f"generator family 'density-trap' takes no package id; got {package_id!r}")
        return fn(**settings)

    return build


#: the seed of the seeded families
SEED = Setting("seed", int, 0, "Seed of the generator.")

#: the families :func:`generate` knows, each with its settings in :data:`GENERATOR_SETTINGS`
GENERATORS = ("small", "validity", "natural", "paper-small", "paper-update-chain", "paper-temporal-interval",
              "density-trap")


#: ``seed`` not given: the family's own default
_NOT_GIVEN = object()


def generator_owner(family: str) -> str:
    """How messages name generator ``family``: ``generator 'small'``."""
    return f"generator {family!r}"


def with_budget(pkg, *, budget=None, budget_frac=None):
    """``pkg`` with its own ``budget`` set: ``budget``, or ``budget_frac`` times its stream cost.

    With neither, ``pkg`` is returned unchanged.  A fraction is recorded in ``meta.budget_frac``.
    Raises :class:`memaudit.errors.BudgetError` on a bad value or on both given.

    Examples
    --------
    >>> from memaudit.generators.paper import paper_update_chain
    >>> pkg = with_budget(paper_update_chain(), budget_frac=0.5)
    >>> pkg.budget, pkg.meta["budget_frac"]
    (9.5, 0.5)
    """
    from ..package import package_from_dict, package_to_dict, resolve_budget

    if budget is None and budget_frac is None:
        return pkg
    b = resolve_budget(pkg, budget=budget, budget_frac=budget_frac)
    data = package_to_dict(pkg)
    data["budget"] = b
    if budget_frac is not None:
        data["meta"] = {**data["meta"], "budget_frac": float(budget_frac)}
    return package_from_dict(data, source=f"<{pkg.id} with budget {b:g}>")


def generate(family: str, seed=_NOT_GIVEN, *, package_id: str | None = None, budget=None, budget_frac=None,
             **settings):
    """Generate one package of ``family`` (see :data:`GENERATORS`), with its own budget if asked.

    ``seed`` and ``settings`` are checked against the family's declarations
    (:data:`GENERATOR_SETTINGS`) with the one message template; ``seed`` is ignored by the
    deterministic families, which declare none.  ``budget`` (a cost) or ``budget_frac`` (a fraction of
    the stream cost) is written as the package's ``budget``; with neither the package keeps its own.

    Examples
    --------
    >>> generate("small", 3).meta["generator"]
    'small'
    >>> generate("paper-small", 3, budget=8).budget
    8.0
    >>> generate("small", 3, entities=0)
    Traceback (most recent call last):
    ...
    memaudit.generators.events.GeneratorError: generator 'small': setting 'entities' must be an integer in [1, 8]; got 0
    >>> generate("huge", 3)
    Traceback (most recent call last):
    ...
    memaudit.generators.events.GeneratorError: unknown generator family 'huge'; valid families: small, validity, natural, paper-small, paper-update-chain, paper-temporal-interval, density-trap
    """
    from .events import GeneratorError

    table = _registry()
    if family not in table:
        raise GeneratorError(f"unknown generator family {family!r}; valid families: {', '.join(GENERATORS)}")
    fn, *declared = table[family]
    if seed is not _NOT_GIVEN and any(s.name == "seed" for s in declared):
        settings = {"seed": seed, **settings}
    try:
        checked = validate_settings(generator_owner(family), declared, settings)
    except ValueError as exc:
        raise GeneratorError(str(exc)) from None
    pkg = fn(package_id=package_id, **checked)
    return with_budget(pkg, budget=budget, budget_frac=budget_frac)


def write_package(pkg, path) -> None:
    """Write a generated package atomically, byte-for-byte reproducibly.

    :func:`memaudit.package.save_package` writes deterministic JSON (indent 2, UTF-8, fields in
    model order, dict keys in insertion order, which the generators fix) and validates the data first.
    """
    from ..package import save_package

    save_package(pkg, path)
