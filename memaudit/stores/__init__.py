"""Importers for exported Mem0, Letta and A-Mem stores, adjudication and union-package audits."""

from __future__ import annotations

from .amem import load_amem
from .export import DEFAULT_MAX_BYTES, PRODUCTS, Export, MemoryItem, StoreError
from .letta import load_letta
from .mem0 import load_mem0

__all__ = ["StoreError", "MemoryItem", "Export", "DEFAULT_MAX_BYTES", "PRODUCTS", "load_mem0", "load_letta",
           "load_amem", "load_export"]


def load_export(product: str, path, *, max_bytes: int | None = DEFAULT_MAX_BYTES, **options) -> Export:
    """Read the export file of ``product`` (``mem0``, ``letta`` or ``amem``).

    ``options`` go to the product's loader (``include_messages`` for Letta).

    Examples
    --------
    >>> load_export("zep", "x.json")
    Traceback (most recent call last):
    ...
    memaudit.stores.export.StoreError: unknown product 'zep'; valid products: mem0, letta, amem
    """
    loaders = {"mem0": load_mem0, "letta": load_letta, "amem": load_amem}
    if product not in loaders:
        raise StoreError(f"unknown product {product!r}; valid products: {', '.join(PRODUCTS)}")
    return loaders[product](path, max_bytes=max_bytes, **options)
