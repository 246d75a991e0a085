"""One scenario, two views: a harness scenario compiled to one MEMAUDIT package per probe checkpoint,
with the total map from every item a policy can store to a package candidate.

At checkpoint *s* (a session some probe asks at the end of) the package's stream is every
exchange of sessions 1..s, one experience each, rendered through the generators' event graph
(:mod:`memaudit.generators.events`): a fact's first version is a ``set``, a changed value an
``update``, a repeated value a ``restate``, a delete request a ``delete``, filler ``chatter``.
Its queries are the probes asked at *s*: a live fact's probe requires the fact's current value
(``<key>.current``) and, when the value changed, that the previous value is no longer valid
(``<key>.v<i>.invalid``); a deleted fact's probe requires the deletion (``<key>.deleted``); a
probe about a fact never planted requires nothing and is not a query.  Units and weights follow
(a unit weighs the number of probes that require it).

Candidates of an exchange, and the stored items that map to them:

==============  ================================  ==============================================
candidate       text (cost: o200k_base tokens)    stored items that map to it
==============  ================================  ==============================================
``<e>.raw``     ``[day d] user: ... / assistant:  a transcript ``turn`` of the exchange
                ...`` (the stamped turn)
``<e>.statement``  ``[day d] <the user's words>``  a ``fact_line``, ``profile_entry`` or bi-temporal
                (fact-bearing exchanges only)     ``record`` of the exchange
``<e>.fact``    ``<fact name>: <value>``          none (a writer that extracts; ``opt`` may store it)
==============  ================================  ==============================================

``raw`` and ``statement`` cover everything the statement says (its value, the invalidation of
the value it replaced, the deletion it asks for); ``fact`` covers the value only.  ``update``,
``tombstone`` and ``compound_update`` can be added with ``kinds``; they are off by default because
their texts name the superseded value ("(was eu-west-2)", "eu-west-2 no longer valid"), which the
harness's value matching scores as a conflict.  An item is mapped by its kind and the exchange
it came from, whatever its day stamp; its cost in the package is its candidate's cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..harness.policies import StoredItem, render_exchange
from ..harness.scenario import Scenario
from ..harness.trial import probe_kind
from ..package import Package, package_from_dict, package_to_dict, stream_cost
from .errors import DiagnoseError

__all__ = ["COST_MODEL", "ITEM_CANDIDATE", "EXTRA_KINDS", "DEFAULT_KINDS", "Checkpoint", "CompiledScenario",
           "compile_scenario", "probe_units", "from_packages"]

#: the package cost model: o200k_base tokens, as the harness counts injected tokens
COST_MODEL = "tokens"

#: stored item kind -> the suffix of the candidate it maps to (``<experience id>.<suffix>``)
ITEM_CANDIDATE = {"turn": "raw", "fact_line": "statement", "profile_entry": "statement", "record": "statement"}

#: candidate kinds a compiled package may offer beside ``raw`` and ``statement``
EXTRA_KINDS = ("fact", "update", "tombstone", "compound_update")

#: the extra kinds offered by default (see the module docstring for why not the others)
DEFAULT_KINDS = ("fact",)


@dataclass(frozen=True, eq=False)
class Checkpoint:
    """The package of one checkpoint and what the runner needs to read it.

    Attributes
    ----------
    session : int
        The checkpoint: probes asked at the end of this session.
    package : Package
        Stream = the exchanges of sessions 1..session; queries = this checkpoint's probes.
    experience_ids : list of str
        ``experience_ids[n]`` is the experience of stream position n (``scenario.exchanges[n]``).
    probe_units : dict
        Probe id -> the unit ids it requires (its evidence); () for a fact never planted.
    """

    session: int
    package: Package
    experience_ids: list[str]
    probe_units: dict[str, tuple[str, ...]]
    _candidate_ids: frozenset = field(repr=False, default=frozenset())
    explicit_map: dict | None = field(repr=False, default=None)

    @property
    def stream_cost(self) -> float:
        return stream_cost(self.package)

    def candidate_of(self, item: StoredItem, *, policy: str = "") -> str:
        """The candidate id ``item`` maps to.

        Raises
        ------
        DiagnoseError
            The item maps to no candidate of this package (the message names the item).
        """
        if item.ref is not None:
            cid = item.ref
        elif self.explicit_map is not None:
            cid = self.explicit_map.get((item.kind, item.position))
        else:
            suffix = ITEM_CANDIDATE.get(item.kind)
            if not 0 <= item.position < len(self.experience_ids):
                cid = None
            else:
                cid = f"{self.experience_ids[item.position]}.{suffix}" if suffix else None
        if cid is None or cid not in self._candidate_ids:
            who = f"policy {policy!r}: " if policy else ""
            text = item.text if len(item.text) <= 60 else item.text[:57] + "..."
            raise DiagnoseError(f"{who}stored item {item.kind!r} of exchange {item.position} ({text!r}) maps to no "
                                f"candidate of package {self.package.id!r} (item kinds with a candidate: "
                                f"{', '.join(ITEM_CANDIDATE)}); the map from stored items to candidates must be total")
        return cid

    def item_map(self) -> dict[tuple[str, int], str]:
        """The whole map: (item kind, stream position) -> candidate id, for every item a policy can hold."""
        if self.explicit_map is not None:
            return dict(self.explicit_map)
        out = {}
        for n, eid in enumerate(self.experience_ids):
            for kind, suffix in ITEM_CANDIDATE.items():
                cid = f"{eid}.{suffix}"
                if cid in self._candidate_ids:
                    out[(kind, n)] = cid
        return out


@dataclass(frozen=True, eq=False)
class CompiledScenario:
    """A scenario and its package at every probe checkpoint (in session order)."""

    scenario: Scenario
    checkpoints: dict[int, Checkpoint]
    kinds: tuple[str, ...]

    def at(self, session: int) -> Checkpoint:
        return self.checkpoints[session]


def _name(key: str) -> str:
    return key.replace("_", " ").replace("-", " ")


def probe_units(scenario: Scenario, probe) -> tuple[str, ...]:
    """The unit ids a probe requires at its session (its evidence; see the module docstring)."""
    from ..generators.events import current_unit, deleted_unit, invalid_unit

    kind = probe_kind(scenario, probe)
    if kind == "absent":
        return ()
    if kind == "deleted":
        return (deleted_unit(probe.fact),)
    live = scenario.fact(probe.fact).live_versions(probe.session)
    values = [v.value for v in live]
    # the value held before the current one (a restatement does not start a new value)
    distinct = [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]
    units = (current_unit(probe.fact),)
    if len(distinct) > 1 and distinct[-2] != distinct[-1]:
        units += (invalid_unit(probe.fact, len(distinct) - 2),)
    return units


def _graph(scenario: Scenario, session: int):
    from ..generators.events import Event, EventGraph, Slot

    g = EventGraph()
    for f in scenario.facts:
        question = next((p.literal for p in scenario.probes if p.fact == f.key), f"What is the {_name(f.key)}?")
        g.add_slot(Slot(f.key, _name(f.key), "value", question))
    for e in scenario.exchanges:
        if e.session > session:
            break
        text = render_exchange(e, False)
        if e.fact is None:
            g.add(Event(e.session, "chatter", text))
        elif e.event == "delete":
            g.add(Event(e.session, "delete", text, e.fact))
        else:
            f = scenario.fact(e.fact)
            value = f.versions[e.version].value
            tl = g.timelines[e.fact]
            op = "set" if not tl.values else ("restate" if tl.values[-1][0] == value else "update")
            g.add(Event(e.session, op, text, e.fact, value))
    return g


def _checkpoint(scenario: Scenario, session: int, kinds: tuple[str, ...]) -> Checkpoint:
    from ..generators.events import GeneratorError, QuerySpec, render_package

    probes = [p for p in scenario.probes if p.session == session]
    units = {p.id: probe_units(scenario, p) for p in probes}
    queries = [QuerySpec(p.literal, "", units[p.id]) for p in probes if units[p.id]]
    if not queries:
        raise DiagnoseError(f"scenario {scenario.id!r}: the probes of session {session} ask only about facts never "
                            "planted, so its package has no evidence unit to score a store by")
    pid = f"{scenario.id}@{session}"
    graph = _graph(scenario, session)
    try:
        pkg = render_package(graph, queries, package_id=pid, cost_model=COST_MODEL,
                             meta={"compiled_from": scenario.id, "checkpoint": session,
                                   "scenario_sha256": scenario.sha256(), "kinds": ["raw", "statement", *kinds]})
    except GeneratorError as exc:
        raise DiagnoseError(f"scenario {scenario.id!r} at session {session} does not compile to a package: "
                            f"{exc}") from None
    data = package_to_dict(pkg)
    keep = {"raw", *kinds}
    candidates = []
    exchanges = [e for e in scenario.exchanges if e.session <= session]
    for exp, e in zip(data["experiences"], exchanges):
        mine = [c for c in data["candidates"] if c["experience"] == exp["id"]]
        raw = next(c for c in mine if c["kind"] == "raw")
        for c in mine:
            if c["kind"] in keep:
                candidates.append(c)
            if c is raw and e.fact is not None:
                text = f"[day {e.session}] {e.user}"
                candidates.append({"id": f"{exp['id']}.statement", "experience": exp["id"], "kind": "raw",
                                   "text": text, "coverage": dict(raw["coverage"])})
    for c in candidates:
        c.pop("cost", None)  # computed from the text under the cost model
    data["candidates"] = candidates
    data["queries"] = [{**q, "answer": None} for q in data["queries"]]
    pkg = package_from_dict(data, source=f"package {pid!r}")
    ids = [e.id for e in pkg.experiences]
    return Checkpoint(session, pkg, ids, units, frozenset(c.id for c in pkg.candidates))


def compile_scenario(scenario: Scenario, *, kinds=DEFAULT_KINDS) -> CompiledScenario:
    """Compile ``scenario`` to one package per probe checkpoint (see the module docstring).

    Parameters
    ----------
    scenario : Scenario
        A harness scenario (``memaudit.harness.scenario``).
    kinds : sequence of str
        Candidate kinds offered beside ``raw`` and ``statement``: any of :data:`EXTRA_KINDS`
        (default ``fact``).

    Raises
    ------
    DiagnoseError
        An unknown kind, or a checkpoint whose probes require no unit.

    Examples
    --------
    >>> from memaudit.harness.scenario import scenario_from_dict
    >>> sc = scenario_from_dict({"format": "memaudit-scenario/1", "id": "tiny", "n_sessions": 2,
    ...     "facts": [{"key": "db", "type": "decision", "versions": [
    ...         {"session": 1, "value": "Postgres 15", "text": "We use Postgres 15."},
    ...         {"session": 2, "value": "Postgres 17", "text": "We moved to Postgres 17."}]}],
    ...     "probes": [{"id": "q1", "fact": "db", "literal": "Which database do we use?"}]})
    >>> cp = compile_scenario(sc).at(2)
    >>> [c.id for c in cp.package.candidates]
    ['e1.raw', 'e1.statement', 'e1.fact', 'e2.raw', 'e2.statement', 'e2.fact']
    >>> cp.probe_units["q1"]
    ('db.current', 'db.v0.invalid')
    """
    kinds = tuple(kinds)
    for k in kinds:
        if k not in EXTRA_KINDS:
            raise DiagnoseError(f"unknown candidate kind {k!r} for a compiled scenario; valid: {', '.join(EXTRA_KINDS)}")
    if len(set(kinds)) != len(kinds):
        raise DiagnoseError(f"candidate kinds must be distinct; got {', '.join(kinds)}")
    sessions = sorted({p.session for p in scenario.probes})
    return CompiledScenario(scenario, {s: _checkpoint(scenario, s, kinds) for s in sessions}, kinds)


def from_packages(scenario: Scenario, packages: dict[int, Package], *, probe_units: dict[str, tuple[str, ...]],
                  item_map: dict[int, dict[tuple[str, int], str]], experience_ids: dict[int, list[str]],
                  kinds=()) -> CompiledScenario:
    """A compiled scenario from packages built elsewhere (e.g. an importer that writes a package and
    a scenario from one conversation): the hook for scenarios this module does not compile itself.

    Parameters
    ----------
    packages : dict
        Checkpoint session -> its package; every probe of the scenario must ask at one of them.
    probe_units : dict
        Probe id -> the unit ids it requires (() for an abstention probe).
    item_map : dict
        Checkpoint -> {(stored item kind, stream position): candidate id}: every item any policy
        can hold at that checkpoint (turns, observations, summaries, ...).
    experience_ids : dict
        Checkpoint -> the experience id of each stream position (``experience_ids[s][n]``).

    Raises
    ------
    DiagnoseError
        A probe asks at a session with no package, names a unit its package lacks, or the map
        names a candidate or experience that does not exist.
    """
    checkpoints = {}
    for s in sorted(packages):
        pkg = packages[s]
        cands = {c.id: c for c in pkg.candidates}
        units = {u.id for u in pkg.units}
        exps = {e.id for e in pkg.experiences}
        ids = list(experience_ids[s])
        for eid in ids:
            if eid not in exps:
                raise DiagnoseError(f"package {pkg.id!r}: experience_ids names {eid!r}, not an experience of it")
        for key, cid in item_map[s].items():
            if cid not in cands:
                raise DiagnoseError(f"package {pkg.id!r}: the item map sends {key[0]!r} of exchange {key[1]} to "
                                    f"{cid!r}, not a candidate of it")
        mine = {}
        for p in scenario.probes:
            if p.session != s:
                continue
            req = tuple(probe_units.get(p.id, ()))
            missing = [u for u in req if u not in units]
            if missing:
                raise DiagnoseError(f"probe {p.id!r}: unit {missing[0]!r} is not a unit of package {pkg.id!r}")
            mine[p.id] = req
        checkpoints[s] = Checkpoint(s, pkg, ids, mine, frozenset(cands), dict(item_map[s]))
    for p in scenario.probes:
        if p.session not in checkpoints:
            raise DiagnoseError(f"probe {p.id!r} asks at session {p.session}, which has no package "
                                f"(packages at: {', '.join(map(str, checkpoints)) or 'none'})")
    return CompiledScenario(scenario, checkpoints, tuple(kinds))
