"""Seeded, reproducible package generators (small, validity, natural, the paper's own packages) and ablation."""

from __future__ import annotations

__all__ = ["GENERATOR_VERSION", "GENERATORS", "DEFAULT_BUDGET_FRAC", "generate", "with_budget", "write_package"]

#: version of every generator's output: bump it whenever a generator's bytes change for the same
#: parameters and seed (shipped files record it in their manifests).  2: packages carry a budget.
GENERATOR_VERSION = "2"

#: the default budget of every shipped generated package, as a fraction of its stream cost
DEFAULT_BUDGET_FRAC = 0.25


def _generators() -> dict:
    from .natural import generate_natural
    from .paper import paper_small, paper_temporal_interval, paper_update_chain
    from .synthetic import generate_small, generate_validity

    return {"small": generate_small, "validity": generate_validity, "natural": generate_natural,
            "paper-small": lambda seed, package_id=None: paper_small(seed, package_id=package_id),
            "paper-update-chain": lambda seed, package_id=None: paper_update_chain(package_id=package_id),
            "paper-temporal-interval": lambda seed, package_id=None: paper_temporal_interval(package_id=package_id)}


#: the families :func:`generate` knows (``density-trap`` is a separate command)
GENERATORS = ("small", "validity", "natural", "paper-small", "paper-update-chain", "paper-temporal-interval")


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


def generate(family: str, seed: int = 0, *, package_id: str | None = None, budget=None, budget_frac=None,
             **params):
    """Generate one package of ``family`` (see :data:`GENERATORS`), with its own budget if asked.

    ``budget`` (a cost) or ``budget_frac`` (a fraction of the stream cost) is written as the
    package's ``budget``; with neither the package has none.

    Examples
    --------
    >>> generate("small", 3).meta["generator"]
    'small'
    >>> generate("paper-small", 3, budget=8).budget
    8.0
    >>> generate("huge", 3)
    Traceback (most recent call last):
    ...
    memaudit.generators.events.GeneratorError: unknown generator family 'huge'; valid families: small, validity, natural, paper-small, paper-update-chain, paper-temporal-interval
    """
    from .events import GeneratorError

    table = _generators()
    if family not in table:
        raise GeneratorError(f"unknown generator family {family!r}; valid families: {', '.join(GENERATORS)}")
    if family.startswith("paper-") and params:
        raise GeneratorError(f"generator family {family!r} takes no parameters; got {', '.join(sorted(params))}")
    pkg = table[family](seed, package_id=package_id, **params)
    return with_budget(pkg, budget=budget, budget_frac=budget_frac)


def write_package(pkg, path) -> None:
    """Write a generated package atomically, byte-for-byte reproducibly.

    :func:`memaudit.package.save_package` writes deterministic JSON (indent 2, UTF-8, fields in
    model order, dict keys in insertion order, which the generators fix) and validates the data first.
    """
    from ..package import save_package

    save_package(pkg, path)
