"""The diagnose errors: each names the scenario, policy, stored item or option at fault."""

from __future__ import annotations

from ..errors import MemauditError

__all__ = ["DiagnoseError"]


class DiagnoseError(MemauditError, ValueError):
    """Bad diagnose input: a stored item with no candidate, an unknown policy or setting, a bad budget."""
