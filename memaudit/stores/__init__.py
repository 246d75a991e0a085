"""Importers for exported Mem0, Letta and A-Mem stores, adjudication and union-package audits."""

from __future__ import annotations

import os

from memaudit_solvers.settings import Setting, validate_settings

from .amem import amem_from_data, is_search_output, load_amem
from .export import DEFAULT_MAX_BYTES, PRODUCTS, VIEWS, Export, MemoryItem, StoreError
from .letta import letta_from_data, load_letta
from .mem0 import load_mem0, mem0_from_data
from .reading import read_document, read_json_file

__all__ = ["StoreError", "MemoryItem", "Export", "DEFAULT_MAX_BYTES", "PRODUCTS", "VIEWS", "load_mem0", "load_letta",
           "load_amem", "load_export", "detect_product", "load_any", "read_document", "read_json_file", "IMPORTERS",
           "IMPORTER_SETTINGS", "check_importer_settings"]

_MAX_BYTES = Setting("max_bytes", int, DEFAULT_MAX_BYTES, "Refuse an export file, and gzip / zip contents once "
                     "unpacked, larger than this many bytes (0 or none: no limit).", low=0, optional=True)

#: product -> (loader, *declared settings): the loader reads the product's export file
IMPORTERS = {"mem0": (load_mem0, _MAX_BYTES, Setting("as_of", str, None, "The export date Mem0 expiry is judged "
                                                      "against (an ISO date; none: the time the file records).",
                                                      optional=True)),
             "letta": (load_letta, _MAX_BYTES, Setting("include_messages", bool, True, "Also import the in-context user and "
                                                       "assistant messages (off: memory blocks and passages only).")),
             "amem": (load_amem, _MAX_BYTES)}

#: every importer's declared settings, by product
IMPORTER_SETTINGS = {product: tuple(row[1:]) for product, row in IMPORTERS.items()}


def check_importer_settings(product: str, options: dict) -> dict:
    """``options`` checked against what the importer of ``product`` declares (the one message template).

    Examples
    --------
    >>> check_importer_settings("letta", {"include_messages": "yes"})
    Traceback (most recent call last):
    ...
    memaudit.stores.export.StoreError: importer 'letta': setting 'include_messages' must be true or false; got 'yes'
    """
    if product not in IMPORTERS:
        raise StoreError(f"unknown product {product!r}; valid products: {', '.join(PRODUCTS)}")
    try:
        return validate_settings(f"importer {product!r}", IMPORTER_SETTINGS[product], options)
    except ValueError as exc:
        raise StoreError(str(exc)) from None


def load_export(product: str, path, *, max_bytes: int | None = DEFAULT_MAX_BYTES, **options) -> Export:
    """Read the export file of ``product`` (``mem0``, ``letta`` or ``amem``).

    ``options`` go to the product's loader (``include_messages`` for Letta, ``as_of`` for Mem0),
    checked against its declarations (:data:`IMPORTER_SETTINGS`).

    Examples
    --------
    >>> load_export("zep", "x.json")
    Traceback (most recent call last):
    ...
    memaudit.stores.export.StoreError: unknown product 'zep'; valid products: mem0, letta, amem
    """
    options = check_importer_settings(product, dict(options, max_bytes=max_bytes))
    options["max_bytes"] = _limit(options["max_bytes"])
    return IMPORTERS[product][0](path, **options)


def _limit(max_bytes: int | None) -> int | None:
    """The declared ``max_bytes`` as the readers take it: 0 (like none) is no limit."""
    return None if max_bytes == 0 else max_bytes


def detect_product(data) -> str | None:
    """Which product an already-parsed export looks like, or None.

    Examples
    --------
    >>> detect_product({"results": [{"id": "a", "memory": "x"}]}), detect_product({"agents": []})
    ('mem0', 'letta')
    >>> detect_product({"status": "success", "notes": {}}), detect_product(42)
    ('amem', None)
    >>> detect_product({"status": "success", "results": [{"id": "n", "context": "c", "keywords": [], "score": 1.2}]})
    'amem'
    >>> detect_product([{"id": "p", "payload": {"data": "x"}, "vector": None}]), detect_product({"id": "a", "memory": "x"})
    ('mem0', 'mem0')
    """
    if isinstance(data, dict):
        if "agents" in data or "core_memory" in data:
            return "letta"
        if isinstance(data.get("memories"), list) and ("export_meta" in data or "status_history" in data):
            return "mem0"  # OpenMemory backup memories.json
        if isinstance(data.get("items"), list) and any(k in data for k in ("total", "pages", "page")):
            return "mem0"  # OpenMemory list-API page
        if isinstance(data.get("points"), list) or (isinstance(data.get("result"), dict)
                                                    and isinstance(data["result"].get("points"), list)):
            return "mem0"  # Qdrant scroll points
        if is_search_output(data):
            return "amem"
        if any(k in data for k in ("notes", "note", "memories")) or ("ids" in data and "metadatas" in data) \
                or "tag_distribution" in data:
            return "amem"
        if data.get("kind") == "mem0_oss_qdrant_export":
            return "mem0"
        rows = data.get("results")
        if isinstance(rows, list):
            first = rows[0] if rows else {}
            if isinstance(first, dict) and "content" in first and "memory" not in first:
                return "letta"  # archival search results
            return "mem0"
        if isinstance(data.get("memory"), str) and "id" in data:
            return "mem0"  # get() of one memory
        if data and all(isinstance(v, list) and v and all(isinstance(r, dict) and "event" in r for r in v)
                        for v in data.values()):
            return "mem0"  # {memory_id: history rows}
        return None
    if isinstance(data, list):
        if len(data) == 2 and isinstance(data[0], list) and data[0] and isinstance(data[0][0], dict) \
                and "payload" in data[0][0]:
            return "mem0"  # qdrant-client scroll() pair (records, next offset)
        first = next((r for r in data if isinstance(r, dict)), None)
        if first is None:
            return None
        if "memory" in first or "memory_id" in first:
            return "mem0"
        if isinstance(first.get("payload"), dict):
            return "mem0"  # raw Qdrant records
        if "text" in first and str(first.get("id", "")).startswith("passage-"):
            return "letta"
        if "label" in first and "value" in first:
            return "letta"  # core memory blocks
        if "content" in first and "state" in first and "keywords" not in first:
            return "mem0"  # OpenMemory memories.jsonl rows
        if "content" in first:
            return "amem"
    return None


def load_any(path, product: str | None = None, *, max_bytes: int | None = DEFAULT_MAX_BYTES,
             include_messages: bool = True, as_of: str | None = None) -> Export:
    """Read an export of ``product``, or of the product its content shows when ``product`` is None.

    ``as_of`` (a date) is the export time Mem0 expiry is judged against (see :func:`load_mem0`).

    Raises
    ------
    StoreError
        Unknown product, or content that matches no product (the message says to pass the product
        and names the shape seen).
    """
    if product is not None:
        check_importer_settings(product, {"max_bytes": max_bytes})
    else:  # checked before reading; every importer declares max_bytes alike
        try:
            _MAX_BYTES.check("importer", max_bytes)
        except ValueError as exc:
            raise StoreError(str(exc)) from None
    path = os.fspath(path)
    doc = read_document(path, max_bytes=_limit(max_bytes), product=product or "store")
    data = doc.data
    if product is None:
        product = detect_product(data)
        if product is None:
            raise StoreError(f"{path}: cannot tell which product wrote this export ({_describe(data)}); pass "
                             f"--product ({', '.join(PRODUCTS)})")
    given = {"max_bytes": max_bytes, "as_of": as_of, "include_messages": include_messages}
    check_importer_settings(product, {s.name: given[s.name] for s in IMPORTER_SETTINGS[product]})
    if product == "mem0":
        return mem0_from_data(data, path, as_of=as_of, container=doc.container)
    if product == "letta":
        return letta_from_data(data, path, include_messages=include_messages)
    return amem_from_data(data, path)


def _describe(data) -> str:
    """The shape seen, in a few words: ``a JSON object with keys [...]``, ``a list of 3 objects with keys [...]``."""
    if isinstance(data, dict):
        return f"a JSON object with keys {sorted(data)[:8]}"
    if isinstance(data, list):
        first = next((r for r in data if isinstance(r, dict)), None)
        keys = f" with keys {sorted(first)[:8]}" if first is not None else ""
        return f"a list of {len(data)} item(s){keys}"
    return f"a JSON {type(data).__name__}"
