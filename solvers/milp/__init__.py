"""Exact MILP back-ends for the same model: HiGHS (highspy), CBC (through PuLP), OR-Tools CP-SAT and SCIP (PySCIPOpt)."""

from .cbc import _cbc_log_bound, _cbc_problem, milp_cbc
from .cpsat import cpsat
from .highs import milp_highs
from .model import RANDOM_SEED, _check_settings, _reduced_model
from .scaling import _grid, _scale_for_cpsat, _try_grid
from .scip import milp_scip
from .versions import backend_versions

__all__ = ["milp_highs", "milp_cbc", "cpsat", "milp_scip", "BACKENDS", "backend_versions", "installed_backends"]

#: every exact MILP back-end by its method name
BACKENDS = {"milp-highs": milp_highs, "milp-cbc": milp_cbc, "cpsat": cpsat, "milp-scip": milp_scip}


#: the module each back-end imports (found without importing it)
_MODULES = {"milp-highs": ("highspy",), "milp-cbc": ("pulp", "cbcbox"), "cpsat": ("ortools",),
            "milp-scip": ("pyscipopt",)}


def installed_backends() -> dict:
    """The back-ends of :data:`BACKENDS` whose packages are installed (nothing heavy is imported).

    Examples
    --------
    >>> "milp-highs" in installed_backends()
    True
    """
    from importlib.util import find_spec
    return {name: fn for name, fn in BACKENDS.items() if all(find_spec(m) is not None for m in _MODULES[name])}
