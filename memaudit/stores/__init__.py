"""Importers for exported Mem0, Letta and A-Mem stores, adjudication and union-package audits."""

from __future__ import annotations

import os

from .amem import amem_from_data, load_amem
from .export import DEFAULT_MAX_BYTES, PRODUCTS, Export, MemoryItem, StoreError, read_json_file
from .letta import letta_from_data, load_letta
from .mem0 import load_mem0, mem0_from_data

__all__ = ["StoreError", "MemoryItem", "Export", "DEFAULT_MAX_BYTES", "PRODUCTS", "load_mem0", "load_letta",
           "load_amem", "load_export", "detect_product", "load_any"]


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


def detect_product(data) -> str | None:
    """Which product an already-parsed export looks like, or None.

    Examples
    --------
    >>> detect_product({"results": [{"id": "a", "memory": "x"}]}), detect_product({"agents": []})
    ('mem0', 'letta')
    >>> detect_product({"status": "success", "notes": {}}), detect_product(42)
    ('amem', None)
    """
    if isinstance(data, dict):
        if "agents" in data or "core_memory" in data:
            return "letta"
        if isinstance(data.get("memories"), list) and ("export_meta" in data or "status_history" in data):
            return "mem0"  # OpenMemory backup memories.json
        if any(k in data for k in ("notes", "note", "memories")) or ("ids" in data and "metadatas" in data):
            return "amem"
        if data.get("kind") == "mem0_oss_qdrant_export":
            return "mem0"
        rows = data.get("results")
        if isinstance(rows, list):
            first = rows[0] if rows else {}
            if isinstance(first, dict) and "content" in first and "memory" not in first:
                return "letta"  # archival search results
            return "mem0"
        return None
    if isinstance(data, list):
        first = next((r for r in data if isinstance(r, dict)), None)
        if first is None:
            return None
        if "memory" in first or "memory_id" in first:
            return "mem0"
        if "text" in first and str(first.get("id", "")).startswith("passage-"):
            return "letta"
        if "content" in first:
            return "amem"
    return None


def load_any(path, product: str | None = None, *, max_bytes: int | None = DEFAULT_MAX_BYTES,
             include_messages: bool = True) -> Export:
    """Read an export of ``product``, or of the product its content shows when ``product`` is None.

    Raises
    ------
    StoreError
        Unknown product, or content that matches no product (the message says to pass the product).
    """
    if product is not None and product not in PRODUCTS:
        raise StoreError(f"unknown product {product!r}; valid products: {', '.join(PRODUCTS)}")
    path = os.fspath(path)
    data = read_json_file(path, max_bytes=max_bytes, product=product or "store")
    if product is None:
        product = detect_product(data)
        if product is None:
            raise StoreError(f"{path}: cannot tell which product wrote this export; pass --product "
                             f"({', '.join(PRODUCTS)})")
    if product == "mem0":
        return mem0_from_data(data, path)
    if product == "letta":
        return letta_from_data(data, path, include_messages=include_messages)
    return amem_from_data(data, path)
