"""Results that last: the SQLite results store, cached solves, ``memaudit sweep`` and the HTML report.

``memaudit.results.load(db)`` gives the store as a pandas DataFrame; see docs/results.md.
"""

from .api import family_table, kinds_table, load, ratio_intervals, ratio_table, scores, validity_table
from .cache import ResultsCache, cached_solve, package_digest
from .store import SCHEMA_VERSION, Store, StoreError, default_db_path, open_store

__all__ = ["load", "ratio_table", "ratio_intervals", "kinds_table", "validity_table", "family_table", "scores",
           "cached_solve", "ResultsCache", "package_digest", "Store", "StoreError", "open_store", "default_db_path",
           "SCHEMA_VERSION", "record", "run_sweep"]


def run_sweep(*args, **kwargs):
    """See :func:`memaudit.results.sweep.run_sweep` (imported on first use)."""
    from .sweep import run_sweep as _run

    return _run(*args, **kwargs)


def record(kind: str, *, package_sha256: str, method: str, payload: dict, db=None, package_id=None,
           package_family=None, budget=None, budget_frac=None, settings=None, status: str = "recorded",
           value=None, ratio=None, backend=None) -> str:
    """Write one audit / harness / diagnose row (``kind``) to the store; returns its key.

    ``method`` is the product (audit) or the policy (harness, diagnose); ``payload`` holds the
    outcome, shown as-is by ``memaudit report html``: for ``audit`` e.g. ``{"product": ...,
    "verdict": ..., "selected_ratio": ...}``; for ``harness`` ``{"outcomes": {name: count}}``; for
    ``diagnose`` ``{"attribution": {stage: share}}``.  The key holds every argument and the versions.
    """
    from .. import __version__
    from .store import code_version, row_key

    ident = dict(kind=kind, package_sha256=package_sha256, budget=budget, method=method, backend=backend,
                 settings=dict(settings or {}), memaudit_version=__version__, code_version=code_version(),
                 backend_versions={})
    key = row_key(**ident)
    store = open_store(db)
    try:
        store.put([{"key": key, **ident, "package_id": package_id, "package_family": package_family,
                    "budget_frac": budget_frac, "status": status, "value": value, "ratio": ratio,
                    "payload": payload}], replace=True)
    finally:
        if store is not db:
            store.close()
    return key
