"""One LoCoMo conversation as a compiled scenario for ``memaudit diagnose`` (``locomo:CONV.json``).

The scenario is :func:`memaudit.locomo.scenario.build_scenario`'s; the package is the importer's
(:func:`memaudit.locomo.build.build_package`, ``link`` rule by default, session-date headers, combined
fact candidates), with its candidates restricted to ``kinds``.  Every probe asks after the last
session, so there is one checkpoint: the last session, whose package is the whole conversation.

The map from stored items to candidates (total over every item a policy can hold):

===============  ================================  =================================================
stored item      at stream position n              candidate
===============  ================================  =================================================
``turn``         exchange n (a turn, any stamp)    ``<dia_id>.raw``
``observation``  the exchange of its last linked   ``<dia_id>.fact`` (the observations anchored at
                 turn                              one turn are one candidate)
``summary``      the last exchange of its session  ``S<session>.summary``
===============  ================================  =================================================

A probe's evidence units are the units its package query requires (one per evidence turn); an
abstention probe (category 5) requires none.  ``experience_ids`` lists the package's experiences
in package order (session headers and summaries included), so the certified OPT store, which may
hold a summary, is placed in it.
"""

from __future__ import annotations

from ..diagnose.compile import CompiledScenario, from_packages
from ..diagnose.errors import DiagnoseError
from ..package import Package, package_from_dict, package_to_dict
from .build import RULES, Settings, build_package
from .reader import Conversation, conversations_from_data, read_locomo
from .scenario import build_scenario

__all__ = ["KINDS", "DEFAULT_KINDS", "DIAGNOSE_POLICIES", "compiled_from_conversation", "diagnose_compiled",
           "demo_compiled", "item_map", "parse_policies"]

#: candidate kinds a LoCoMo package may offer beside the raw turns
KINDS = ("fact", "summary")

#: the kinds offered by default: observations and summaries, so the notes policies' stores map
DEFAULT_KINDS = KINDS

#: the policies of ``memaudit diagnose locomo:...`` by default: full transcript, last-N, BM25 over
#: turns, BM25 over observations, summaries, observations only, fresh, and OPT
DIAGNOSE_POLICIES = ("full-transcript", "last-exchanges", "bm25-transcript", "bm25-notes:kind=observation",
                     "notes:kind=summary", "notes:kind=observation", "fresh", "opt")


def parse_policies(specs) -> list:
    """Policy specs as diagnose policies: ``opt[:...]`` is left to the diagnose runner, the notes policies
    (``notes``, ``bm25-notes``) and every harness policy are parsed by
    :func:`memaudit.locomo.policies.parse_any_policy`; policies sharing a name get their settings in it
    (``notes[kind=summary,stamp=True]``)."""
    from .policies import _unique_names, parse_any_policy

    out, parsed = [], []
    for s in specs:
        if isinstance(s, str) and s.strip().partition(":")[0] == "opt":
            out.append(s)
        else:
            out.append(None)
            parsed.append(parse_any_policy(s) if isinstance(s, str) else s)
    named = iter(_unique_names(parsed))
    return [s if s is not None else next(named) for s in out]


def _restrict(pkg: Package, kinds: tuple[str, ...]) -> Package:
    if set(kinds) == set(KINDS):
        return pkg
    data = package_to_dict(pkg)
    data["candidates"] = [c for c in data["candidates"] if c["kind"] == "raw" or c["kind"] in kinds]
    keep = {c["experience"] for c in data["candidates"]}
    data["experiences"] = [e for e in data["experiences"] if e["id"] in keep]
    return package_from_dict(data, source=f"package {pkg.id!r}")


def item_map(scenario, pkg: Package) -> dict[tuple[str, int], str]:
    """(stored item kind, stream position) -> candidate id, for every item the policies can hold
    whose candidate the package offers (see the module docstring)."""
    cands = {c.id for c in pkg.candidates}
    where = {e.id: n for n, e in enumerate(scenario.exchanges)}
    last = {e.session: n for n, e in enumerate(scenario.exchanges)}
    out = {}
    for n, e in enumerate(scenario.exchanges):
        if f"{e.id}.raw" in cands:
            out[("turn", n)] = f"{e.id}.raw"
    for note in scenario.notes:
        if note.kind == "observation":
            key, cid = ("observation", where[note.covers[-1]]), f"{note.covers[-1]}.fact"
        else:
            key, cid = ("summary", last[note.session]), f"S{note.session}.summary"
        if cid in cands:
            out[key] = cid
    return out


def compiled_from_conversation(conv: Conversation, *, kinds=None, rule: str = "link",
                               settings: Settings = Settings()) -> CompiledScenario:
    """The compiled scenario of ``conv``: its scenario and its one checkpoint package.

    Raises
    ------
    DiagnoseError
        An unknown or repeated kind, or an unknown rule (``link`` and ``answer``; ``adjudication``
        needs a judge's file and is not offered here).
    """
    kinds = DEFAULT_KINDS if kinds is None else tuple(kinds)
    for k in kinds:
        if k not in KINDS:
            raise DiagnoseError(f"conversation {conv.id!r}: unknown candidate kind {k!r} for a LoCoMo package; "
                                f"valid: {', '.join(KINDS)}")
    if len(set(kinds)) != len(kinds):
        raise DiagnoseError(f"candidate kinds must be distinct; got {', '.join(kinds)}")
    if rule not in RULES or rule == "adjudication":
        raise DiagnoseError(f"conversation {conv.id!r}: coverage rule must be link or answer; got {rule!r}")
    if settings.facts != "combined" or settings.session_date != "header":
        raise DiagnoseError("the diagnose adapter maps observations to combined fact candidates after session "
                            "headers; use facts='combined' and session_date='header'")
    scenario = build_scenario(conv)
    pkg = _restrict(build_package(conv, settings, rule), kinds)
    session = scenario.n_sessions
    sessions = {p.session for p in scenario.probes}
    if sessions != {session}:
        raise DiagnoseError(f"scenario {scenario.id!r}: probes ask at sessions {sorted(sessions)}; the LoCoMo "
                            f"adapter expects every probe after the last session ({session})")
    requires = {q.id: tuple(q.requires) for q in pkg.queries}
    units = {p.id: requires.get(p.id, ()) for p in scenario.probes}
    return from_packages(scenario, {session: pkg}, probe_units=units,
                         item_map={session: item_map(scenario, pkg)},
                         experience_ids={session: [e.id for e in pkg.experiences]}, kinds=kinds)


def diagnose_compiled(path: str, kinds=None) -> CompiledScenario:
    """The hook of ``memaudit diagnose locomo:PATH[#CONV][@RULE]``: the compiled scenario of the
    conversation in ``PATH`` (a LoCoMo file of either shape; ``#CONV`` picks one conversation of a
    file that holds several, e.g. ``locomo10.json#conv-26``; ``@answer`` scores observations and
    summaries by the ``answer`` coverage rule instead of ``link``, docs/locomo.md).  ``kinds``: any of :data:`KINDS` (None: both; (): raw
    turns only).

    Raises
    ------
    LocomoError
        The file cannot be read or is not LoCoMo.
    DiagnoseError
        The file holds several conversations and none (or an unknown one) is picked.
    """
    rule = "link"
    for r in ("link", "answer"):
        if path.endswith(f"@{r}"):
            path, rule = path[: -len(r) - 1], r
    file, _, want = path.partition("#")
    if not file:
        raise DiagnoseError("locomo: give the path of a LoCoMo file, e.g. locomo:26.json")
    _, convs = read_locomo(file)
    if want:
        picked = [c for c in convs if c.id == want]
        if not picked:
            raise DiagnoseError(f"{file}: no conversation {want!r}; it holds {', '.join(c.id for c in convs)}")
        conv = picked[0]
    elif len(convs) == 1:
        conv = convs[0]
    else:
        raise DiagnoseError(f"{file}: holds {len(convs)} conversations; pick one with locomo:{file}#ID "
                            f"(ids: {', '.join(c.id for c in convs)})")
    return compiled_from_conversation(conv, kinds=kinds, rule=rule)


def demo_compiled(kinds=None, rule: str = "link") -> CompiledScenario:
    """The compiled scenario of :func:`memaudit.locomo.demo.demo_conversation` (made-up text)."""
    from .demo import demo_conversation

    _, (conv,) = conversations_from_data(demo_conversation(), path="demo.json")
    return compiled_from_conversation(conv, kinds=kinds, rule=rule)
