"""The harness's errors: each names the scenario item, policy, reader or run file at fault."""

from __future__ import annotations

from ..errors import MemauditError

__all__ = ["HarnessError", "ScenarioError", "ReaderError"]


class HarnessError(MemauditError, ValueError):
    """Bad harness input: an unknown policy / reader / setting, a bad run file, a bad option."""


class ScenarioError(HarnessError):
    """A scenario (file or dict) breaks a rule of the scenario format; the message names the fact or probe."""


class ReaderError(HarnessError):
    """A command reader or judge failed (exit status, time-out, unusable answer) after its retries."""
