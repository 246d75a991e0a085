"""The exceptions memaudit raises for bad input: each names what went wrong."""

from __future__ import annotations

__all__ = ["MemauditError", "InputError", "PackageError", "BudgetError", "MethodError", "CertificateError"]


class MemauditError(Exception):
    """Base of every error caused by the user's input; the CLI prints it as one line."""


class InputError(MemauditError, ValueError):
    """An input file cannot be read as a document: missing, not a regular file or pipe, too large,
    not UTF-8, not valid JSON / YAML, or beyond a limit of :mod:`memaudit.formats`."""


class PackageError(MemauditError, ValueError):
    """A package (file or dict) breaks a rule of the package format, or cannot be read."""


class BudgetError(MemauditError, ValueError):
    """A budget is missing, ambiguous, negative or not finite."""


class MethodError(MemauditError, ValueError):
    """An unknown method or back-end name; the message lists the valid ones."""


class CertificateError(MemauditError, ValueError):
    """A certificate is malformed or does not check out."""
