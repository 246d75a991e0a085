"""Every method by name, each declared once with its settings, all with the contract ``fn(problem, budget, /, **settings)``.

A registration is one line ``"name": (function, *settings)``: the :class:`~memaudit_solvers.settings.Setting`
objects say what the function takes (type, interval or choices, default, help).  :func:`check_settings`
validates given settings against them with the one message template, :func:`run_method` runs a
method with checked settings and stamps ``Result.method`` and ``Result.settings``; the command line
builds its flags and ``--help`` lists from :data:`SETTINGS`.  ``kind:<k>`` (the online writer that always
writes kind k) is the one parametric name: :func:`get_method` builds it for any k.
"""

from __future__ import annotations

import dataclasses
import functools

from .baselines import (PICKS, density, density_global, fifo, gvt, gvt_geometric, gvt_upgrade, kind_greedy,
                        kind_writer, random_store, recency, recency_raw)
from .bnb import BNB_SETTINGS, branch_and_bound
from .bruteforce import BRUTE_SETTINGS, brute_force
from .enumeration import greedy_enum
from .greedy import greedy
from .lattice import LATTICE_SETTINGS, lattice
from .milp import BACKENDS
from .result import Result
from .settings import TIME_LIMIT, Setting, validate_settings

__all__ = ["METHODS", "EXACT_METHODS", "BASELINES", "ONLINE_METHODS", "NEEDS_KINDS", "BACKENDS", "SETTINGS",
           "CERTIFIERS", "CERTIFIER_SETTINGS", "HINTED",
           "PROGRESS_METHODS", "get_method", "run_method", "method_names", "method_settings", "check_settings",
           "method_owner", "stamp_result"]

# -- the settings methods declare (shared declarations are one object) -----------------------

THREADS = Setting("threads", int, 1, "Threads the back-end may use.", low=1)
INTEGRAL_Y = Setting("integral_y", bool, True, "State the piece variables y as integers (exact h on every piece).")
SEED = Setting("seed", int, 0, "Seed of the random store.", low=0)
EPS = Setting("eps", float, 0.1, "The threshold falls by a factor (1 - eps) per step.",
              low=0, high=1, low_open=True, high_open=True)
FLOOR = Setting("floor", float, 1e-3, "Lowest threshold, as a fraction of the first.",
                low=0, high=1, low_open=True)
BEST_SINGLE = Setting("best_single", bool, True, "Return the best single candidate instead when it is worth more.")
PICK = Setting("pick", str, "verbatim", "What the writer writes for each experience: verbatim (its largest "
               "candidate, the raw span), cheapest, or value (largest standalone value; reads the query weights).",
               choices=PICKS)
_BNB = BNB_SETTINGS   # declared beside bnb, which validates with them
_MILP = (TIME_LIMIT, THREADS, INTEGRAL_Y)

#: methods that prove optimality when they finish: name -> (function, *settings)
_EXACT = {"bnb": (branch_and_bound, *_BNB),
          "brute": (brute_force, *BRUTE_SETTINGS),   # declared beside brute force, which validates with them
          "milp-highs": (BACKENDS["milp-highs"], *_MILP),
          "milp-cbc": (BACKENDS["milp-cbc"], *_MILP),
          "cpsat": (BACKENDS["cpsat"], TIME_LIMIT, THREADS),
          "milp-scip": (BACKENDS["milp-scip"], *_MILP)}

#: certifiers: they prove a given store optimal (``hint``, the method's store) and find none themselves, so
#: they certify (``--backend``) but are no methods of their own; declared beside them
_CERTIFIERS = {"lattice": (lattice, *LATTICE_SETTINGS)}

#: heuristics that see the whole package (status ``heuristic``)
_BASELINES = {"density": (density,),
              "density-global": (density_global,),
              "greedy": (greedy,),
              "gvt": (gvt,),
              "gvt-geometric": (gvt_geometric, EPS, FLOOR, BEST_SINGLE),
              "gvt-upgrade": (gvt_upgrade, EPS, FLOOR, BEST_SINGLE),
              "fact-only": (functools.partial(kind_greedy, kind="fact"),),
              "summary-only": (functools.partial(kind_greedy, kind="summary"),),
              "recency-raw": (recency_raw,),
              "random": (random_store, SEED),
              "greedy-enum": (greedy_enum, Setting("size", int, 2, "Largest seed set enumerated.", low=0, high=3))}

#: writers that decide as each experience arrives (status ``heuristic``); plus ``kind:<k>``
_ONLINE = {"fifo": (fifo, PICK),
           "recency": (recency, PICK)}

EXACT_METHODS = {name: row[0] for name, row in _EXACT.items()}
CERTIFIERS = {name: row[0] for name, row in _CERTIFIERS.items()}
BASELINES = {name: row[0] for name, row in _BASELINES.items()}
ONLINE_METHODS = {name: row[0] for name, row in _ONLINE.items()}

#: the methods that read candidate kinds (``problem.kinds``) and refuse a problem without them, besides ``kind:<k>``
NEEDS_KINDS = ("fact-only", "summary-only", "recency-raw")

#: every registered method with a fixed name
METHODS = {**EXACT_METHODS, **BASELINES, **ONLINE_METHODS}

#: every method's declared settings, by name (``kind:<k>`` takes none)
SETTINGS: dict[str, tuple[Setting, ...]] = {name: tuple(s for s in row[1:] if isinstance(s, Setting))
                                           for name, row in {**_EXACT, **_BASELINES, **_ONLINE}.items()}
#: every certifier's declared settings, by name
CERTIFIER_SETTINGS: dict[str, tuple[Setting, ...]] = {name: tuple(row[1:]) for name, row in _CERTIFIERS.items()}

#: the exact names that take the method's store as ``hint``: the MILP back-ends (a MIP start) and the
#: certifiers (the store they prove)
HINTED = frozenset(BACKENDS) | frozenset(CERTIFIERS)

#: methods that take a ``progress`` callable (a hook, not a setting): bnb reports about once a second
PROGRESS_METHODS = frozenset({"bnb"})

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
    >>> get_method("simplex")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown method 'simplex'; valid methods: bnb, brute, ..., kind:<k>

    A certifier (:data:`CERTIFIERS`) is found too, so it runs wherever a back-end does.
    """
    if name in METHODS:
        return METHODS[name]
    if name in CERTIFIERS:
        return CERTIFIERS[name]
    prefix, sep, arg = name.partition(":")
    if sep and prefix in _PARAMETRIC:
        if not arg:
            raise ValueError(f"method {name!r} needs an argument after the colon, e.g. {prefix}:fact")
        keyword, fn = _PARAMETRIC[prefix]
        return functools.partial(fn, **{keyword: arg})
    raise ValueError(f"unknown method {name!r}; valid methods: {method_names()}")


def method_settings(name: str) -> tuple[Setting, ...]:
    """The settings method ``name`` declares (a ValueError for an unknown name).

    Examples
    --------
    >>> [s.name for s in method_settings("gvt-geometric")], method_settings("kind:fact")
    (['eps', 'floor', 'best_single'], ())
    """
    get_method(name)
    return SETTINGS.get(name) or CERTIFIER_SETTINGS.get(name, ())


def method_owner(name: str) -> str:
    """How messages name method ``name``: ``method 'gvt-geometric'``."""
    return f"method {name!r}"


def check_settings(name: str, settings: dict) -> dict:
    """``settings`` checked against what method ``name`` declares (the one message template).

    Examples
    --------
    >>> check_settings("random", {"seed": 3})
    {'seed': 3}
    >>> check_settings("random", {"seed": -1})
    Traceback (most recent call last):
    ...
    ValueError: method 'random': setting 'seed' must be an integer >= 0; got -1
    """
    return validate_settings(method_owner(name), method_settings(name), settings)


def stamp_result(name: str, result: Result, settings: dict) -> Result:
    """``result`` with ``method = name`` and every declared setting recorded (given, else default)."""
    stamped = dict(result.settings)
    for s in method_settings(name):
        stamped.setdefault(s.name, settings.get(s.name, s.default))
    if result.method == name and stamped == result.settings:
        return result
    return dataclasses.replace(result, method=name, settings=stamped)


def run_method(name: str, problem, budget: float, /, *, progress=None, **settings) -> Result:
    """Run the method registered under ``name`` with checked settings; ``progress`` goes to the
    methods of :data:`PROGRESS_METHODS` only."""
    fn = get_method(name)
    checked = check_settings(name, settings)
    extra = {"progress": progress} if progress is not None and name in PROGRESS_METHODS else {}
    return stamp_result(name, fn(problem, budget, **checked, **extra), checked)
