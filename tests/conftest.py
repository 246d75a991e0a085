"""Every test gets its own results store, so cached solves never leak between tests (or into ~/.cache).

Hypothesis: with ``HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) every property test draws the same
examples on every run (``derandomize``), so a landing cannot fail on an example a random draw happened
to find; a local ``make test`` draws new examples each run, and a failure it finds is kept in
``.hypothesis/`` and replayed until it passes (add it as an ``@example`` when it was a real case).
"""

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True)
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])


@pytest.fixture(autouse=True)
def _private_results_store(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("MEMAUDIT_DB", str(tmp_path_factory.mktemp("results") / "results.sqlite"))
