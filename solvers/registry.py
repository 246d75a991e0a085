"""Every method by name, in one plain dict, all with the contract ``fn(problem, budget, /, **settings)``."""

from __future__ import annotations

from .bnb import branch_and_bound
from .bruteforce import brute_force
from .greedy import greedy
from .milp import BACKENDS

__all__ = ["METHODS", "EXACT_METHODS", "BACKENDS", "get_method", "run_method"]

#: methods that prove optimality when they finish
EXACT_METHODS = {"bnb": branch_and_bound, "brute": brute_force, **BACKENDS}

#: every registered method
METHODS = {**EXACT_METHODS, "greedy": greedy}


def get_method(name: str):
    """The method registered under ``name``; a ValueError lists the valid names.

    Examples
    --------
    >>> get_method("bnb").__name__
    'branch_and_bound'
    >>> get_method("simplex")
    Traceback (most recent call last):
    ...
    ValueError: unknown method 'simplex'; valid methods: bnb, brute, cpsat, greedy, milp-cbc, milp-highs
    """
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; valid methods: {', '.join(sorted(METHODS))}") from None


def run_method(name: str, problem, budget: float, /, **settings):
    """Run the method registered under ``name``."""
    return get_method(name)(problem, budget, **settings)
