"""Back-end versions and the message for a missing one (reads metadata only)."""

from __future__ import annotations

from importlib import metadata

from ..result import BackendUnavailable

_INSTALL = {
    "milp-highs": "pip install highspy",
    "milp-cbc": "pip install 'pulp[cbc]'",
    "cpsat": "pip install ortools",
    "milp-scip": "pip install pyscipopt",
}


def _dist_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def backend_versions() -> dict[str, str]:
    """Installed version of the package behind each back-end.

    Reads package metadata only: nothing heavy is imported.

    Returns
    -------
    dict
        ``{method name: version string}``; a missing package reads ``"not installed"``.

    Examples
    --------
    >>> sorted(backend_versions())
    ['cpsat', 'milp-cbc', 'milp-highs', 'milp-scip']
    """
    return {
        "milp-highs": f"highspy {_dist_version('highspy')}",
        "milp-cbc": f"pulp {_dist_version('pulp')}, cbcbox {_dist_version('cbcbox')}",
        "cpsat": f"ortools {_dist_version('ortools')}",
        "milp-scip": f"pyscipopt {_dist_version('pyscipopt')}",
    }


def _unavailable(method: str, what: str, err: Exception) -> BackendUnavailable:
    return BackendUnavailable(f"{method} needs {what}, which is not installed ({err}): {_INSTALL[method]}")
