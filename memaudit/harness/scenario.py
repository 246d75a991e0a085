"""Plant: scenarios (typed facts with versions and delete requests, filler exchanges, probes) and their file format.

Two format versions load: ``memaudit-scenario/1`` and ``memaudit-scenario/2``.  Version 2 adds
what real conversations need (LoCoMo): a calendar ``date`` per session (the stamp shows it instead
of ``day N``), an ``id`` per exchange, fact versions stated by reference to an exchange
(``exchange: ID`` instead of ``text``: several facts may name one exchange, and the value need
not occur in it), probes with ``evidence`` (exchange ids), ``category`` and ``abstain``, and
model-written ``notes`` (observations, summaries) with the exchanges they cover.  A scenario is
written as version 1 when it uses none of these, so old files keep their bytes and sha256.

The model and its written form live in :mod:`~memaudit.harness.scenario_model`, the checks in
:mod:`~memaudit.harness.scenario_check`; this module is where every name is imported from.
"""

from __future__ import annotations

import os

from .errors import ScenarioError
from .scenario_check import scenario_from_dict
from .scenario_model import (FACT_TYPES, MAX_SESSIONS, NOTE_KINDS, SCENARIO_FORMAT, SCENARIO_FORMATS, DeleteRequest,
                             Exchange, Fact, Note, Probe, Scenario, Version, format_date, scenario_to_dict)

__all__ = ["SCENARIO_FORMAT", "SCENARIO_FORMATS", "FACT_TYPES", "NOTE_KINDS", "MAX_SESSIONS", "ScenarioError",
           "Version", "DeleteRequest", "Fact", "Exchange", "Probe", "Note", "Scenario", "scenario_from_dict",
           "load_scenario", "scenario_to_dict", "format_date"]


def load_scenario(path) -> Scenario:
    """Read a scenario file: JSON (``.json``) or YAML (``.yaml`` / ``.yml``); the file is only read.

    Read once through :func:`memaudit.formats.read_document` (size limit, duplicate keys refused,
    YAML safe loading with bounded alias expansion, bounded nesting).
    """
    from ..formats import read_document

    path = os.fspath(path)
    if not os.path.lexists(path):
        raise ScenarioError(f"{path}: cannot read: no such file")
    data = read_document(path, what="scenario", error=ScenarioError).data
    return scenario_from_dict(data, source=path)
