"""Plant: scenarios (typed facts with versions and delete requests, filler exchanges, probes) and their file format."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

from .errors import ScenarioError
from .match import contains_value

__all__ = ["SCENARIO_FORMAT", "FACT_TYPES", "MAX_SESSIONS", "ScenarioError", "Version", "DeleteRequest", "Fact", "Exchange",
           "Probe", "Scenario", "scenario_from_dict", "load_scenario", "scenario_to_dict"]

#: the ``format`` value of a scenario file
SCENARIO_FORMAT = "memaudit-scenario/1"

#: the fact types of seed 000; a scenario may use only these
FACT_TYPES = ("identity", "preference", "decision", "detail", "procedure")

#: the largest ``n_sessions`` a scenario may declare (every session is walked when the stream is built)
MAX_SESSIONS = 100_000


@dataclass(frozen=True)
class Version:
    """One stated value of a fact: said by the user in ``session`` with the words ``text``."""

    session: int
    value: str
    text: str
    position: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class DeleteRequest:
    """The user asks, in ``session``, to forget a fact (``text`` is the request, without the value)."""

    session: int
    text: str
    position: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Fact:
    """A typed fact: its versions in time order and an optional delete request after the last one."""

    key: str
    type: str
    salience: int
    versions: tuple[Version, ...]
    delete: DeleteRequest | None = None

    def live_versions(self, session: int) -> list[Version]:
        """The versions stated by the end of ``session``, oldest first."""
        return [v for v in self.versions if v.session <= session]

    def deleted_by(self, session: int) -> bool:
        """True when the delete request was made by the end of ``session``."""
        return self.delete is not None and self.delete.session <= session

    @property
    def first_session(self) -> int:
        return self.versions[0].session


@dataclass(frozen=True)
class Exchange:
    """One user message and the assistant's reply.

    ``fact`` names the fact the user message states (``event`` ``"state"``) or asks to forget
    (``event`` ``"delete"``); both are None for filler.  ``index`` is the position in its session.
    """

    session: int
    index: int
    user: str
    assistant: str = ""
    fact: str | None = None
    event: str | None = None
    version: int | None = None


@dataclass(frozen=True)
class Probe:
    """A question asked at the end of ``session`` about ``fact`` (None: a fact never planted)."""

    id: str
    session: int
    fact: str | None
    literal: str
    paraphrase: str | None = None

    def question(self, form: str) -> str | None:
        return self.literal if form == "literal" else self.paraphrase


@dataclass(frozen=True)
class Scenario:
    """What is planted: facts, the exchange stream (stream order) and the probes."""

    id: str
    n_sessions: int
    facts: tuple[Fact, ...]
    exchanges: tuple[Exchange, ...]
    probes: tuple[Probe, ...]
    meta: dict = field(default_factory=dict, compare=False)
    replies: bool = True

    def fact(self, key: str) -> Fact:
        return self._facts_by_key[key]

    @property
    def _facts_by_key(self) -> dict[str, Fact]:
        cached = self.__dict__.get("_by_key")
        if cached is None:
            cached = {f.key: f for f in self.facts}
            object.__setattr__(self, "_by_key", cached)
        return cached

    def exchanges_until(self, session: int) -> list[Exchange]:
        """Every exchange of sessions 1..``session``, in stream order."""
        return [e for e in self.exchanges if e.session <= session]

    def sha256(self) -> str:
        """sha256 of the canonical JSON form (what a run records to be replayable)."""
        data = json.dumps(scenario_to_dict(self), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(data.encode("utf-8")).hexdigest()


# -- building and checking ------------------------------------------------------------

def _where(ctx: str) -> str:
    return f"{ctx}: " if ctx else ""


def _req(d: dict, name: str, what: str):
    if not isinstance(d, dict):
        raise ScenarioError(f"{what} must be an object (mapping); got {type(d).__name__}")
    if name not in d:
        raise ScenarioError(f"{what} has no '{name}' field")
    return d[name]


def _text(v, what: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ScenarioError(f"{what} must be a non-empty string; got {v!r}")
    return v


def _int(v, what: str, lo: int, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        rule = f"an integer in {lo}..{hi}" if hi is not None else f"an integer >= {lo}"
        raise ScenarioError(f"{what} must be {rule}; got {v!r}")
    return v


def _check_keys(d: dict, allowed: set[str], what: str) -> None:
    extra = sorted(map(str, set(d) - allowed))
    if extra:
        raise ScenarioError(f"{what} has unknown field(s) {', '.join(map(repr, extra))}; "
                            f"allowed: {', '.join(sorted(allowed))}")


def _fact(d, i: int, n_sessions: int) -> Fact:
    key = _text(_req(d, "key", f"facts[{i}]"), f"facts[{i}].key")
    what = f"fact '{key}'"
    _check_keys(d, {"key", "type", "salience", "versions", "delete"}, what)
    typ = _req(d, "type", what)
    if typ not in FACT_TYPES:
        raise ScenarioError(f"{what}: type must be one of {', '.join(FACT_TYPES)}; got {typ!r}")
    salience = _int(d.get("salience", 1), f"{what}: salience", 0)
    raw_versions = _req(d, "versions", what)
    if not isinstance(raw_versions, list) or not raw_versions:
        raise ScenarioError(f"{what}: versions must be a non-empty list; got {raw_versions!r}")
    versions = []
    for j, v in enumerate(raw_versions):
        vw = f"{what} version {j + 1}"
        if not isinstance(v, dict):
            raise ScenarioError(f"{vw} must be an object with session, value and text; got {v!r}")
        _check_keys(v, {"session", "value", "text", "position"}, vw)
        session = _int(_req(v, "session", vw), f"{vw}: session", 1, n_sessions)
        value = _text(_req(v, "value", vw), f"{vw}: value")
        text = _text(_req(v, "text", vw), f"{vw}: text")
        position = v.get("position")
        if position is not None:
            position = _int(position, f"{vw}: position", 0)
        if not contains_value(text, value, "tokens"):
            raise ScenarioError(f"{vw}: value {value!r} does not occur (as whole words) in its text {text!r}")
        if versions and session <= versions[-1].session:
            raise ScenarioError(f"{vw}: session {session} must come after the previous version's session "
                                f"{versions[-1].session} (versions are listed oldest first, one per session)")
        versions.append(Version(session, value, text, position))
    delete = None
    if d.get("delete") is not None:
        dd = d["delete"]
        dw = f"{what} delete request"
        if not isinstance(dd, dict):
            raise ScenarioError(f"{dw} must be an object with session and text; got {dd!r}")
        _check_keys(dd, {"session", "text", "position"}, dw)
        session = _int(_req(dd, "session", dw), f"{dw}: session", 1, n_sessions)
        if session <= versions[-1].session:
            raise ScenarioError(f"{dw}: session {session} must come after the last version's session "
                                f"{versions[-1].session}")
        text = _text(_req(dd, "text", dw), f"{dw}: text")
        for v in versions:
            if contains_value(text, v.value, "tokens"):
                raise ScenarioError(f"{dw}: the request text repeats the value {v.value!r}; "
                                    "a delete request must not restate what it deletes")
        position = dd.get("position")
        if position is not None:
            position = _int(position, f"{dw}: position", 0)
        delete = DeleteRequest(session, text, position)
    return Fact(key, typ, salience, tuple(versions), delete)


def _probe(d, i: int, n_sessions: int, facts: dict[str, Fact]) -> Probe:
    pid = _text(_req(d, "id", f"probes[{i}]"), f"probes[{i}].id")
    what = f"probe '{pid}'"
    _check_keys(d, {"id", "session", "fact", "literal", "paraphrase"}, what)
    session = _int(d.get("session", n_sessions), f"{what}: session", 1, n_sessions)
    fact = d.get("fact")
    if fact is not None and not isinstance(fact, str):
        raise ScenarioError(f"{what}: fact must be a fact key (a string) or null for a never-planted fact; "
                            f"got {fact!r}")
    if fact is not None:
        if fact not in facts:
            near = ", ".join(sorted(facts)) or "(none)"
            raise ScenarioError(f"{what}: fact {fact!r} is not a fact key of this scenario (keys: {near}); "
                                "use fact: null for a fact that is never planted")
        first = facts[fact].first_session
        if first > session:
            raise ScenarioError(f"{what}: asks at session {session} about fact {fact!r}, which is first stated in "
                                f"session {first}; probe later, or use fact: null for a never-planted fact")
    literal = _text(_req(d, "literal", what), f"{what}: literal")
    paraphrase = d.get("paraphrase")
    if paraphrase is not None:
        paraphrase = _text(paraphrase, f"{what}: paraphrase")
    return Probe(pid, session, fact, literal, paraphrase)


def _exchanges(facts: list[Fact], sessions: dict[int, list[tuple[str, str]]],
               n_sessions: int, replies: bool = True) -> tuple[Exchange, ...]:
    """Place the statements and delete requests among each session's filler exchanges.

    With ``replies`` the assistant acknowledges a statement with ``Noted: <value>.`` and a delete
    request with ``Done: I will forget it.``; without, the statement stands alone (seed 000).
    """
    placed: dict[int, list[tuple[int, int, str, str, str, str, int | None]]] = {}
    order = 0
    for f in facts:
        for j, v in enumerate(f.versions):
            pos = v.position if v.position is not None else 1 << 30
            placed.setdefault(v.session, []).append((pos, order, v.text, f"Noted: {v.value}." if replies else "", f.key, "state", j))
            order += 1
        if f.delete is not None:
            pos = f.delete.position if f.delete.position is not None else 1 << 30
            placed.setdefault(f.delete.session, []).append(
                (pos, order, f.delete.text, "Done: I will forget it." if replies else "", f.key, "delete", None))
            order += 1
    out = []
    for s in range(1, n_sessions + 1):
        stream: list[tuple] = [(u, a, None, None, None) for u, a in sessions.get(s, [])]
        for pos, _, user, reply, key, event, version in sorted(placed.get(s, [])):
            stream.insert(min(pos, len(stream)), (user, reply, key, event, version))
        out.extend(Exchange(s, i, u, a, k, ev, ver) for i, (u, a, k, ev, ver) in enumerate(stream))
    return tuple(out)


def scenario_from_dict(data, *, source: str = "") -> Scenario:
    """Check a scenario given as plain data (the parsed JSON / YAML file) and build it.

    Raises
    ------
    ScenarioError
        Naming the fact, version, delete request, session or probe at fault and the rule broken.

    Examples
    --------
    >>> s = scenario_from_dict({"format": "memaudit-scenario/1", "id": "tiny", "n_sessions": 2,
    ...     "facts": [{"key": "db", "type": "decision", "versions": [
    ...         {"session": 1, "value": "Postgres 15", "text": "We use Postgres 15."}]}],
    ...     "probes": [{"id": "q1", "fact": "db", "literal": "Which database do we use?"}]})
    >>> [e.user for e in s.exchanges], s.probes[0].session
    (['We use Postgres 15.'], 2)
    >>> scenario_from_dict({"format": "memaudit-scenario/1", "id": "x", "n_sessions": 1, "facts": [],
    ...     "probes": [{"id": "q1", "fact": "db", "literal": "?"}]})
    Traceback (most recent call last):
    ...
    memaudit.harness.errors.ScenarioError: probe 'q1': fact 'db' is not a fact key of this scenario (keys: (none)); use fact: null for a fact that is never planted
    """
    pre = _where(source)
    try:
        if not isinstance(data, dict):
            raise ScenarioError(f"a scenario must be an object (mapping) at the top level; got {type(data).__name__}")
        _check_keys(data, {"format", "id", "n_sessions", "replies", "facts", "sessions", "probes", "meta"},
                    "the scenario")
        fmt = data.get("format")
        if fmt != SCENARIO_FORMAT:
            raise ScenarioError(f"format must be {SCENARIO_FORMAT!r}; got {fmt!r}")
        sid = _text(_req(data, "id", "the scenario"), "id")
        n_sessions = _int(_req(data, "n_sessions", "the scenario"), "n_sessions", 1, MAX_SESSIONS)
        raw_facts = data.get("facts", [])
        if not isinstance(raw_facts, list):
            raise ScenarioError(f"facts must be a list; got {type(raw_facts).__name__}")
        facts: dict[str, Fact] = {}
        for i, d in enumerate(raw_facts):
            f = _fact(d, i, n_sessions)
            if f.key in facts:
                raise ScenarioError(f"fact '{f.key}' is defined twice (facts[{i}]); fact keys must be unique")
            facts[f.key] = f
        raw_sessions = data.get("sessions", [])
        if not isinstance(raw_sessions, list):
            raise ScenarioError(f"sessions must be a list; got {type(raw_sessions).__name__}")
        sessions: dict[int, list[tuple[str, str]]] = {}
        for i, d in enumerate(raw_sessions):
            what = f"sessions[{i}]"
            if not isinstance(d, dict):
                raise ScenarioError(f"{what} must be an object with session and exchanges; got {d!r}")
            _check_keys(d, {"session", "exchanges"}, what)
            s = _int(_req(d, "session", what), f"{what}: session", 1, n_sessions)
            if s in sessions:
                raise ScenarioError(f"{what}: session {s} is listed twice")
            exs = _req(d, "exchanges", what)
            if not isinstance(exs, list):
                raise ScenarioError(f"{what}: exchanges must be a list; got {type(exs).__name__}")
            rows = []
            for j, e in enumerate(exs):
                ew = f"session {s} exchange {j}"
                if not isinstance(e, dict):
                    raise ScenarioError(f"{ew} must be an object with user and assistant; got {e!r}")
                _check_keys(e, {"user", "assistant"}, ew)
                user = _text(_req(e, "user", ew), f"{ew}: user")
                assistant = e.get("assistant", "")
                if not isinstance(assistant, str):
                    raise ScenarioError(f"{ew}: assistant must be a string; got {assistant!r}")
                rows.append((user, assistant))
            sessions[s] = rows
        raw_probes = _req(data, "probes", "the scenario")
        if not isinstance(raw_probes, list) or not raw_probes:
            raise ScenarioError("probes must be a non-empty list")
        probes = []
        seen = set()
        for i, d in enumerate(raw_probes):
            p = _probe(d, i, n_sessions, facts)
            if p.id in seen:
                raise ScenarioError(f"probe '{p.id}' is defined twice (probes[{i}]); probe ids must be unique")
            seen.add(p.id)
            probes.append(p)
        replies = data.get("replies", True)
        if not isinstance(replies, bool):
            raise ScenarioError(f"replies must be true or false; got {replies!r}")
        meta = data.get("meta", {})
        if not isinstance(meta, dict):
            raise ScenarioError(f"meta must be an object; got {type(meta).__name__}")
    except ScenarioError as exc:
        if pre:
            raise ScenarioError(pre + str(exc)) from None
        raise
    fact_list = list(facts.values())
    return Scenario(sid, n_sessions, tuple(fact_list), _exchanges(fact_list, sessions, n_sessions, replies),
                    tuple(probes), dict(meta), replies)


def load_scenario(path) -> Scenario:
    """Read a scenario file: JSON (``.json``) or YAML (``.yaml`` / ``.yml``); the file is only read.

    Read once through :func:`memaudit.formats.read_document` (size limit, duplicate keys refused,
    YAML safe loading with bounded alias expansion, bounded nesting).
    """
    from ..formats import read_document

    path = os.fspath(path)
    if not os.path.lexists(path):
        raise ScenarioError(f"{path}: cannot read: no such file")
    data = read_document(path, what="scenario", error=ScenarioError).data
    return scenario_from_dict(data, source=path)


def scenario_to_dict(scenario: Scenario) -> dict:
    """The scenario as plain data in the file format (filler exchanges grouped by session)."""
    facts = []
    for f in scenario.facts:
        d = {"key": f.key, "type": f.type, "salience": f.salience,
             "versions": [{"session": v.session, "value": v.value, "text": v.text} for v in f.versions]}
        if f.delete is not None:
            d["delete"] = {"session": f.delete.session, "text": f.delete.text}
        facts.append(d)
    # record where each statement landed, so the dict rebuilds the same stream
    pos = {(e.fact, e.event, e.version): e.index for e in scenario.exchanges if e.fact is not None}
    for f, d in zip(scenario.facts, facts):
        for j, v in enumerate(d["versions"]):
            v["position"] = pos[(f.key, "state", j)]
        if "delete" in d:
            d["delete"]["position"] = pos[(f.key, "delete", None)]
    by_session: dict[int, list[dict]] = {}
    for e in scenario.exchanges:  # stream order is session order
        if e.fact is None:
            by_session.setdefault(e.session, []).append({"user": e.user, "assistant": e.assistant})
    sessions = [{"session": s, "exchanges": rows} for s, rows in by_session.items()]
    probes = []
    for p in scenario.probes:
        d = {"id": p.id, "session": p.session, "fact": p.fact, "literal": p.literal}
        if p.paraphrase is not None:
            d["paraphrase"] = p.paraphrase
        probes.append(d)
    return {"format": SCENARIO_FORMAT, "id": scenario.id, "n_sessions": scenario.n_sessions,
            "replies": scenario.replies, "facts": facts,
            "sessions": sessions, "probes": probes, "meta": dict(scenario.meta)}
