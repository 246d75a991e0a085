"""Numeric core of memaudit: the problem, its objective, exact and MILP solvers, certification.

This package knows nothing of JSON, ids or memory products; ``memaudit`` calls it,
never the reverse.  Importing it does not import pulp or OR-Tools: the MILP
back-ends load them when they run.
"""

from .coverage import Coverage
from .objective import coverage_sums, evaluate, is_feasible, marginal_gains, total_cost
from .problem import Problem, ProblemError
from .result import BackendUnavailable, Declined, Result, SolverError

__all__ = ["Problem", "ProblemError", "Result", "SolverError", "BackendUnavailable", "Declined",
           "evaluate", "is_feasible", "coverage_sums", "marginal_gains", "total_cost", "Coverage"]
