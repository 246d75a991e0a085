"""Every test gets its own results store, so cached solves never leak between tests (or into ~/.cache)."""

import pytest


@pytest.fixture(autouse=True)
def _private_results_store(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("MEMAUDIT_DB", str(tmp_path_factory.mktemp("results") / "results.sqlite"))
