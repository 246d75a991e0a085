"""Baselines scored as a ratio to the certified optimum.

:func:`score_methods` runs a list of registered methods on one package and budget and
scores each store against OPT(package, B), certified by :func:`memaudit.solve.solve_package`.
:func:`compare` does the same over several budgets and returns one flat row per
(budget, method), ready for pandas, CSV or JSON.

A ratio is ``F(store) / OPT``.  When OPT is 0 (nothing can be preserved within the budget)
the ratio is None and reported as ``n/a``.  When OPT could not be certified (a time-out or
a disagreement), the ratios are taken against the best value found and every row says so
(``opt_certified`` False), since they may then overstate the baselines.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np

from memaudit_solvers.registry import method_settings as registered_settings

from .errors import MethodError
from .package import Package, resolve_budget, stream_cost
from .solve import checked_settings, fully_covered, method_time_limit, resolve_method, run_solver, solve_package

__all__ = ["DEFAULT_METHODS", "MethodScore", "BaselineReport", "score_methods", "compare", "parse_methods",
           "method_settings", "check_method_settings", "parse_method_specs"]

#: what ``memaudit baseline`` and ``memaudit compare`` run when no --method is given
DEFAULT_METHODS = ("density", "density-global", "greedy", "gvt", "gvt-geometric", "gvt-upgrade", "random", "fifo",
                   "recency", "kind:raw", "kind:fact")


@dataclass
class MethodScore:
    """One method's store on one package and budget, scored against OPT."""

    method: str
    settings: dict
    value: float
    ratio: float | None
    cost: float
    budget: float
    units_covered: int
    units_total: int
    validity_covered: int
    validity_total: int
    kinds: dict
    wall_time: float
    chosen: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class BaselineReport:
    """Every method's score on one package and budget, and the OPT they are scored against."""

    package_id: str
    budget: float
    budget_frac: float
    opt: float
    opt_status: str
    opt_certified: bool
    opt_store: MethodScore
    scores: list

    def to_dict(self) -> dict:
        return {"package": self.package_id, "budget": self.budget, "budget_frac": self.budget_frac,
                "opt": self.opt, "opt_status": self.opt_status, "opt_certified": self.opt_certified,
                "opt_store": self.opt_store.to_dict(), "methods": [s.to_dict() for s in self.scores]}


def parse_methods(text) -> list[str]:
    """Split a comma-separated method list and check every name; duplicates are dropped.

    Examples
    --------
    >>> parse_methods("density, gvt,density,kind:fact")
    ['density', 'gvt', 'kind:fact']
    >>> parse_methods("kind:fatc")
    Traceback (most recent call last):
    ...
    memaudit.errors.MethodError: unknown candidate kind 'fatc' in method 'kind:fatc'; kinds: raw, fact, update, tombstone, compound_update, summary, external
    >>> parse_methods("density,nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    memaudit.errors.MethodError: unknown method 'nope'; valid methods: bnb, brute, ..., kind:<k>
    """
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text)]
    names = [n for n in names if n]
    if not names:
        raise MethodError("no method given: pass a comma-separated list such as density,greedy,gvt")
    out = []
    for name in names:
        resolve_method(name)
        if name not in out:
            out.append(name)
    return out


#: old keyword names of :func:`method_settings` (the command line's ``--gvt-eps`` / ``--gvt-floor``)
_OLD_NAMES = {"gvt_eps": "eps", "gvt_floor": "floor"}


def method_settings(name: str, *, seed: int = 0, **values) -> dict:
    """The settings method ``name`` declares, taken from ``values`` (one value per setting name, for
    every method at once; None = not given; names a method does not declare are ignored).

    ``seed`` defaults to 0 so the random baseline's key names its seed; ``gvt_eps`` / ``gvt_floor``
    are accepted for ``eps`` / ``floor``.

    Examples
    --------
    >>> method_settings("random", seed=3), method_settings("gvt-geometric", gvt_eps=0.05), method_settings("gvt", eps=0.05)
    ({'seed': 3}, {'eps': 0.05}, {})
    """
    values = {_OLD_NAMES.get(k, k): v for k, v in dict(values, seed=seed).items()}
    declared = registered_settings(resolve_method(name))
    return {s.name: values[s.name] for s in declared if values.get(s.name) is not None}


def check_method_settings(names, settings) -> dict:
    """``{method: settings}`` for every method of ``names``: the given ones checked (the one message
    template) over the declared defaults (those not None), so every caller keys a method's run the
    same way; settings for a method not in ``names`` are ignored.

    Examples
    --------
    >>> check_method_settings(["random", "fifo", "density"], {"random": {"seed": 3}})
    {'random': {'seed': 3}, 'fifo': {'pick': 'verbatim'}, 'density': {}}
    """
    settings = settings or {}
    out = {}
    for name in names:
        full = resolve_method(name)
        given = checked_settings(full, dict(settings.get(name) or {}))
        out[name] = {s.name: given.get(s.name, s.default) for s in registered_settings(full)
                     if s.name in given or s.default is not None}
    return out


def parse_method_specs(text) -> tuple[list[str], dict]:
    """``(names, {name: settings})`` from a method list whose items may carry settings:
    ``density,gvt-geometric:eps=0.05,floor=0.01,random:seed=3`` (an item ``key=value`` with no
    colon continues the method before it).  Values are read by each setting's declared type and
    checked with the one message template.

    Examples
    --------
    >>> parse_method_specs("density,gvt-geometric:eps=0.05,floor=0.01,kind:fact")
    (['density', 'gvt-geometric', 'kind:fact'], {'gvt-geometric': {'eps': 0.05, 'floor': 0.01}})
    >>> parse_method_specs("random:seed=-1")
    Traceback (most recent call last):
    ...
    memaudit.errors.MethodError: method 'random': setting 'seed' must be an integer >= 0; got '-1'
    """
    from memaudit_solvers.registry import method_owner
    from memaudit_solvers.settings import parse_spec

    items = [n.strip() for n in (text.split(",") if isinstance(text, str) else text)]
    specs: list[list[str]] = []
    for item in filter(None, items):
        if "=" in item and ":" not in item and specs:
            specs[-1].append(item)
        else:
            specs.append([item])
    names, settings = [], {}
    for parts in specs:
        head, sep, rest = parts[0].partition(":")
        if sep and "=" in rest:
            name = parse_methods([head])[0]
            try:
                _, given = parse_spec(",".join([head + ":" + rest, *parts[1:]]), method_owner,
                                      lambda n: registered_settings(resolve_method(n)))
                given = checked_settings(resolve_method(name), given)
            except ValueError as exc:
                raise MethodError(str(exc)) from None
        else:
            if len(parts) > 1:
                raise MethodError(f"method {parts[0]!r}: setting {parts[1]!r} must follow NAME:key=value; "
                                  f"got {','.join(parts)!r}")
            name, given = parse_methods([parts[0]])[0], {}
        if name in names and settings.get(name, {}) != given:
            raise MethodError(f"method {name!r}: setting list must be given once; got {text!r}")
        if name not in names:
            names.append(name)
        if given:
            settings[name] = given
    if not names:
        parse_methods([])  # the one "no method given" message
    return names, settings


def _score(pkg: Package, compiled, result, opt: float) -> MethodScore:
    problem = compiled.problem
    covered = fully_covered(problem, result.chosen)
    validity = np.array([u.kind == "validity" for u in pkg.units], dtype=bool)
    kinds = Counter(pkg.candidates[i].kind for i in result.chosen.tolist())
    ratio = None if opt <= 0 else float(result.value / opt)
    return MethodScore(method=result.method, settings=dict(result.settings), value=float(result.value), ratio=ratio,
                       cost=float(result.cost), budget=float(result.budget), units_covered=int(covered.sum()),
                       units_total=int(problem.n_units), validity_covered=int((covered & validity).sum()),
                       validity_total=int(validity.sum()), kinds=dict(sorted(kinds.items())),
                       wall_time=float(result.wall_time), chosen=compiled.ids(result.chosen))


def score_methods(pkg: Package, *, budget=None, budget_frac=None, methods=DEFAULT_METHODS, settings=None,
                  backend: str | None = "milp-highs", time_limit: float | None = None,
                  progress=None, cache=None) -> BaselineReport:
    """Run ``methods`` on ``pkg`` at one budget and score each against the certified OPT.

    Parameters
    ----------
    pkg : Package
    budget, budget_frac : float, optional
        As for :func:`memaudit.package.resolve_budget` (default: the package's own budget).
    methods : sequence of str
        Registered method names (``kind:<k>`` included).
    settings : dict, optional
        ``{method name: {setting: value}}`` passed to each method.
    backend : str or None
        Back-end that certifies OPT (bnb finds it); None skips certification.
    time_limit : float, optional
        Seconds for each of bnb and the back-end.
    cache : memaudit.results.ResultsCache, optional
        Takes a certified OPT from the results store when one checks out, and stores OPT and the scores.

    Examples
    --------
    >>> from memaudit.package import load_package
    >>> pkg = load_package("packages_data/examples/quickstart.json")
    >>> rep = score_methods(pkg, budget_frac=0.25, methods=["density", "gvt"])
    >>> rep.opt_certified, rep.opt, [(s.method, s.value <= rep.opt) for s in rep.scores]
    (True, 10.0, [('density', True), ('gvt', True)])
    """
    names = parse_methods(methods)
    settings = check_method_settings(names, settings)
    time_limit = method_time_limit(time_limit)
    b = resolve_budget(pkg, budget=budget, budget_frac=budget_frac)
    say = progress or (lambda line: None)
    say(f"OPT at budget {b:g}: bnb" + (f", certified by {backend}" if backend else "") + "...")
    report = (cache.solve_package if cache is not None else solve_package)(pkg, budget=b, method="bnb",
                                                                         backend=backend, time_limit=time_limit)
    compiled = report.compiled
    opt = report.value if report.result.status == "optimal" else max(r.value for r in report.results)
    scores = []
    for name in names:
        say(f"{name}...")
        result = run_solver(name, compiled.problem, b, dict(settings.get(name, {})))
        scores.append(_score(pkg, compiled, result, opt))
    total = stream_cost(pkg)
    opt_certified = report.certified or (backend is None and report.result.status == "optimal")
    rep = BaselineReport(package_id=pkg.id, budget=b, budget_frac=b / total if total else 0.0, opt=float(opt),
                         opt_status=report.status, opt_certified=opt_certified,
                         opt_store=_score(pkg, compiled, report.result, opt), scores=scores)
    if cache is not None:
        cache.record_scores(pkg, rep, settings)
    return rep


def compare(pkg: Package, budget_fracs, *, methods=DEFAULT_METHODS, settings=None,
            backend: str | None = "milp-highs", time_limit: float | None = None, progress=None,
            cache=None) -> list[dict]:
    """Every method at every budget fraction: one flat row per (budget, method), OPT rows included.

    Row keys: ``package``, ``budget_frac``, ``budget``, ``method`` (``OPT`` for the optimum),
    ``value``, ``opt``, ``ratio`` (None when OPT is 0), ``opt_certified``, ``cost``,
    ``units_covered``, ``units_total``, ``validity_covered``, ``validity_total``, ``wall_time``,
    and ``kinds`` (``kind:count`` pairs joined by spaces).
    """
    fracs = list(budget_fracs)
    if not fracs:
        raise MethodError("no budget fraction given: pass e.g. --budget-frac 0.1,0.25,0.5")
    rows = []
    say = progress or (lambda line: None)
    for i, f in enumerate(fracs, 1):
        say(f"[{i}/{len(fracs)}] budget fraction {f:g}")
        rep = score_methods(pkg, budget_frac=f, methods=methods, settings=settings, backend=backend,
                            time_limit=time_limit, progress=progress, cache=cache)
        for s in [rep.opt_store, *rep.scores]:
            rows.append({"package": rep.package_id, "budget_frac": float(f), "budget": rep.budget,
                         "method": "OPT" if s is rep.opt_store else s.method, "value": s.value, "opt": rep.opt,
                         "ratio": s.ratio, "opt_certified": rep.opt_certified, "cost": s.cost,
                         "units_covered": s.units_covered, "units_total": s.units_total,
                         "validity_covered": s.validity_covered, "validity_total": s.validity_total,
                         "wall_time": s.wall_time, "kinds": " ".join(f"{k}:{n}" for k, n in s.kinds.items())})
    return rows

