"""Every method by name, in one plain dict, all with the contract ``fn(problem, budget, /, **settings)``.

``kind:<k>`` (the online writer that always writes kind k) is the one parametric name:
:func:`get_method` builds it for any k.
"""

from __future__ import annotations

import functools

from .baselines import (density, density_global, fifo, gvt, gvt_geometric, gvt_upgrade, kind_greedy, kind_writer,
                        random_store, recency, recency_raw)
from .bnb import branch_and_bound
from .bruteforce import brute_force
from .greedy import greedy
from .milp import BACKENDS

__all__ = ["METHODS", "EXACT_METHODS", "BASELINES", "ONLINE_METHODS", "NEEDS_KINDS", "BACKENDS", "get_method", "run_method",
           "method_names"]

#: methods that prove optimality when they finish
EXACT_METHODS = {"bnb": branch_and_bound, "brute": brute_force, **BACKENDS}

#: heuristics that see the whole package (status ``heuristic``)
BASELINES = {"density": density, "density-global": density_global, "greedy": greedy, "gvt": gvt,
             "gvt-geometric": gvt_geometric, "gvt-upgrade": gvt_upgrade,
             "fact-only": functools.partial(kind_greedy, kind="fact"),
             "summary-only": functools.partial(kind_greedy, kind="summary"),
             "recency-raw": recency_raw, "random": random_store}

#: the methods that read candidate kinds (``problem.kinds``) and refuse a problem without them, besides ``kind:<k>``
NEEDS_KINDS = ("fact-only", "summary-only", "recency-raw")

#: writers that decide as each experience arrives (status ``heuristic``); plus ``kind:<k>``
ONLINE_METHODS = {"fifo": fifo, "recency": recency}

#: every registered method with a fixed name
METHODS = {**EXACT_METHODS, **BASELINES, **ONLINE_METHODS}

#: parametric names: ``prefix:argument``
_PARAMETRIC = {"kind": ("kind", kind_writer)}


def method_names() -> str:
    """The valid method names, for messages."""
    return ", ".join([*sorted(METHODS), "kind:<k>"])


def get_method(name: str):
    """The method registered under ``name``; a ValueError lists the valid names.

    Examples
    --------
    >>> get_method("bnb").__name__
    'branch_and_bound'
    >>> get_method("kind:fact").keywords
    {'kind': 'fact'}
    >>> get_method("simplex")
    Traceback (most recent call last):
    ...
    ValueError: unknown method 'simplex'; valid methods: bnb, brute, cpsat, density, density-global, fact-only, fifo, greedy, gvt, gvt-geometric, gvt-upgrade, milp-cbc, milp-highs, milp-scip, random, recency, recency-raw, summary-only, kind:<k>
    """
    if name in METHODS:
        return METHODS[name]
    prefix, sep, arg = name.partition(":")
    if sep and prefix in _PARAMETRIC:
        if not arg:
            raise ValueError(f"method {name!r} needs an argument after the colon, e.g. {prefix}:fact")
        keyword, fn = _PARAMETRIC[prefix]
        return functools.partial(fn, **{keyword: arg})
    raise ValueError(f"unknown method {name!r}; valid methods: {method_names()}")


def run_method(name: str, problem, budget: float, /, **settings):
    """Run the method registered under ``name``."""
    return get_method(name)(problem, budget, **settings)
