"""Seeded, reproducible package generators (small, validity, natural) and candidate-kind ablation."""

from __future__ import annotations

__all__ = ["GENERATOR_VERSION", "GENERATORS", "generate", "write_package"]

#: version of every generator's output: bump it whenever a generator's bytes change for the same
#: parameters and seed (shipped files record it in their manifests)
GENERATOR_VERSION = "1"


def _generators() -> dict:
    from .natural import generate_natural
    from .synthetic import generate_small, generate_validity

    return {"small": generate_small, "validity": generate_validity, "natural": generate_natural}


#: the families :func:`generate` knows (``density-trap`` is a separate command)
GENERATORS = ("small", "validity", "natural")


def generate(family: str, seed: int = 0, *, package_id: str | None = None, **params):
    """Generate one package of ``family`` (``small``, ``validity`` or ``natural``).

    Examples
    --------
    >>> generate("small", 3).meta["generator"]
    'small'
    >>> generate("huge", 3)
    Traceback (most recent call last):
    ...
    memaudit.generators.events.GeneratorError: unknown generator family 'huge'; valid families: small, validity, natural
    """
    from .events import GeneratorError

    table = _generators()
    if family not in table:
        raise GeneratorError(f"unknown generator family {family!r}; valid families: {', '.join(GENERATORS)}")
    return table[family](seed, package_id=package_id, **params)


def write_package(pkg, path) -> None:
    """Write a generated package atomically, byte-for-byte reproducibly.

    :func:`memaudit.package.save_package` writes deterministic JSON (indent 2, UTF-8, fields in
    model order, dict keys in insertion order, which the generators fix) and validates the data first.
    """
    from ..package import save_package

    save_package(pkg, path)
