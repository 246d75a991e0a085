"""Checking a scenario given as plain data (a parsed ``memaudit-scenario/1`` or ``/2`` file) and building it.

Every rule broken raises :class:`~memaudit.harness.errors.ScenarioError` naming the fact, version,
delete request, session, probe or note at fault (see :func:`scenario_from_dict`).
"""

from __future__ import annotations

from datetime import datetime

from .errors import ScenarioError
from .match import contains_value
from .scenario_model import (FACT_TYPES, MAX_SESSIONS, NOTE_KINDS, SCENARIO_FORMATS, DeleteRequest, Exchange, Fact,
                             Note, Probe, Scenario, Version)

__all__ = ["scenario_from_dict"]


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


def _check_keys(d: dict, allowed: set[str], what: str, v2_fields: tuple[str, ...] = (), v2: bool = True) -> None:
    """Refuse a field outside ``allowed`` and ``v2_fields``, and a field of ``v2_fields`` in a version-1 file."""
    for name in v2_fields:
        if name in d:
            _v2_only(v2, what, name)
    extra = sorted(map(str, set(d) - allowed - set(v2_fields)))
    if extra:
        raise ScenarioError(f"{what} has unknown field(s) {', '.join(map(repr, extra))}; "
                            f"allowed: {', '.join(sorted(allowed))}")


def _v2_only(v2: bool, what: str, name: str) -> None:
    if not v2:
        raise ScenarioError(f"{what}: field '{name}' needs format {SCENARIO_FORMATS[1]!r} (this file says "
                            f"{SCENARIO_FORMATS[0]!r})")


def _exchange_ids(ids, what: str, name: str, link: str, owner: str, session: int, exchanges: dict) -> list:
    """``ids`` (field ``name`` of a probe or a note, the ``owner``) checked as a list of ids of exchanges
    said by the end of ``session``; a message reads ``<name> 'D2:1' <link> session 2``."""
    if not isinstance(ids, list):
        raise ScenarioError(f"{what}: {name} must be a list of exchange ids; got {ids!r}")
    for k, e in enumerate(ids):
        if not isinstance(e, str) or e not in exchanges:
            raise ScenarioError(f"{what}: {name}[{k}] must be the id of an exchange of this scenario; got {e!r}")
        if exchanges[e][0] > session:
            raise ScenarioError(f"{what}: {name} {e!r} {link} session {exchanges[e][0]}, after the {owner}'s "
                                f"session {session}")
    return ids


def _fact(d, i: int, n_sessions: int, v2: bool = False, exchanges: dict | None = None) -> Fact:
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
        if "exchange" in v:
            _v2_only(v2, vw, "exchange")
            _check_keys(v, {"session", "value", "exchange"}, f"{vw} (stated by reference to an exchange)")
        else:
            _check_keys(v, {"session", "value", "text", "position"}, vw)
        session = _int(_req(v, "session", vw), f"{vw}: session", 1, n_sessions)
        value = _text(_req(v, "value", vw), f"{vw}: value")
        position = exchange = None
        if "exchange" in v:
            exchange = _text(v["exchange"], f"{vw}: exchange")
            if exchange not in exchanges:
                raise ScenarioError(f"{vw}: exchange {exchange!r} is not the id of an exchange of this scenario")
            at, text = exchanges[exchange]
            if at != session:
                raise ScenarioError(f"{vw}: exchange {exchange!r} is in session {at}, not in the version's "
                                    f"session {session}")
        else:
            text = _text(_req(v, "text", vw), f"{vw}: text")
            position = v.get("position")
            if position is not None:
                position = _int(position, f"{vw}: position", 0)
            if not contains_value(text, value, "tokens"):
                raise ScenarioError(f"{vw}: value {value!r} does not occur (as whole words) in its text {text!r}")
        if versions and session <= versions[-1].session:
            raise ScenarioError(f"{vw}: session {session} must come after the previous version's session "
                                f"{versions[-1].session} (versions are listed oldest first, one per session)")
        versions.append(Version(session, value, text, position, exchange))
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


def _probe(d, i: int, n_sessions: int, facts: dict[str, Fact], v2: bool = False,
           exchanges: dict | None = None) -> Probe:
    pid = _text(_req(d, "id", f"probes[{i}]"), f"probes[{i}].id")
    what = f"probe '{pid}'"
    _check_keys(d, {"id", "session", "fact", "literal", "paraphrase", "evidence", "category", "abstain"}, what)
    for name in ("evidence", "category", "abstain"):
        if name in d:
            _v2_only(v2, what, name)
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
    evidence = _exchange_ids(d.get("evidence", []), what, "evidence", "is in", "probe", session, exchanges)
    if len(set(evidence)) != len(evidence):
        raise ScenarioError(f"{what}: evidence lists an exchange twice; got {evidence!r}")
    category = d.get("category")
    if category is not None and (isinstance(category, bool) or not isinstance(category, (int, str))):
        raise ScenarioError(f"{what}: category must be an integer or a string; got {category!r}")
    abstain = d.get("abstain", False)
    if not isinstance(abstain, bool):
        raise ScenarioError(f"{what}: abstain must be true or false; got {abstain!r}")
    if abstain and fact is not None:
        raise ScenarioError(f"{what}: abstain is true, so the probe must not name a fact (fact: null); got {fact!r}")
    return Probe(pid, session, fact, literal, paraphrase, tuple(evidence), category, abstain)


def _note(d, i: int, n_sessions: int, exchanges: dict) -> Note:
    nid = _text(_req(d, "id", f"notes[{i}]"), f"notes[{i}].id")
    what = f"note '{nid}'"
    _check_keys(d, {"id", "session", "kind", "text", "covers"}, what)
    session = _int(_req(d, "session", what), f"{what}: session", 1, n_sessions)
    kind = _req(d, "kind", what)
    if kind not in NOTE_KINDS:
        raise ScenarioError(f"{what}: kind must be one of {', '.join(NOTE_KINDS)}; got {kind!r}")
    text = _text(_req(d, "text", what), f"{what}: text")
    covers = _exchange_ids(d.get("covers", []), what, "covers", "of", "note", session, exchanges)
    return Note(nid, session, kind, text, tuple(covers))


def _exchanges(facts: list[Fact], sessions: dict[int, list[tuple]],
               n_sessions: int, replies: bool = True, dates: dict[int, str] | None = None) -> tuple[Exchange, ...]:
    """Place the statements and delete requests among each session's filler exchanges.

    With ``replies`` the assistant acknowledges a statement with ``Noted: <value>.`` and a delete
    request with ``Done: I will forget it.``; without, the statement stands alone (the memory-eval-harness chapter).
    """
    placed: dict[int, list[tuple[int, int, str, str, str, str, int | None]]] = {}
    order = 0
    for f in facts:
        for j, v in enumerate(f.versions):
            if v.exchange is not None:  # stated by reference: the exchange is already in the stream
                continue
            pos = v.position if v.position is not None else 1 << 30
            placed.setdefault(v.session, []).append((pos, order, v.text, f"Noted: {v.value}." if replies else "", f.key, "state", j))
            order += 1
        if f.delete is not None:
            pos = f.delete.position if f.delete.position is not None else 1 << 30
            placed.setdefault(f.delete.session, []).append(
                (pos, order, f.delete.text, "Done: I will forget it." if replies else "", f.key, "delete", None))
            order += 1
    out = []
    dates = dates or {}
    for s in range(1, n_sessions + 1):
        stream: list[tuple] = [(u, a, None, None, None, x) for u, a, x in sessions.get(s, [])]
        for pos, _, user, reply, key, event, version in sorted(placed.get(s, [])):
            stream.insert(min(pos, len(stream)), (user, reply, key, event, version, None))
        out.extend(Exchange(s, i, u, a, k, ev, ver, x, dates.get(s))
                   for i, (u, a, k, ev, ver, x) in enumerate(stream))
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
        fmt = data.get("format")
        if fmt == "memaudit-package/1":
            raise ScenarioError("this is a MEMAUDIT package (memaudit-package/1), not a scenario: the harness takes a "
                                "scenario file (memaudit-scenario/1 or /2, e.g. packages_data/scenarios/example.yaml); "
                                "solve, baseline and compare take packages")
        if fmt not in SCENARIO_FORMATS:
            raise ScenarioError(f"format must be one of {', '.join(map(repr, SCENARIO_FORMATS))}; got {fmt!r}")
        v2 = fmt == SCENARIO_FORMATS[1]
        _check_keys(data, {"format", "id", "n_sessions", "replies", "facts", "sessions", "probes", "meta"},
                    "the scenario", ("notes",), v2)
        sid = _text(_req(data, "id", "the scenario"), "id")
        n_sessions = _int(_req(data, "n_sessions", "the scenario"), "n_sessions", 1, MAX_SESSIONS)
        raw_sessions = data.get("sessions", [])
        if not isinstance(raw_sessions, list):
            raise ScenarioError(f"sessions must be a list; got {type(raw_sessions).__name__}")
        sessions: dict[int, list[tuple[str, str, str | None]]] = {}
        dates: dict[int, str] = {}
        ids: dict[str, tuple[int, str]] = {}
        for i, d in enumerate(raw_sessions):
            what = f"sessions[{i}]"
            if not isinstance(d, dict):
                raise ScenarioError(f"{what} must be an object with session and exchanges; got {d!r}")
            _check_keys(d, {"session", "exchanges"}, what, ("date",), v2)
            s = _int(_req(d, "session", what), f"{what}: session", 1, n_sessions)
            if s in sessions:
                raise ScenarioError(f"{what}: session {s} is listed twice")
            if d.get("date") is not None:
                date = d["date"]
                try:
                    if not isinstance(date, str):
                        raise ValueError
                    datetime.fromisoformat(date)
                except ValueError:
                    raise ScenarioError(f"{what}: date must be an ISO 8601 date or date-time such as '2023-05-08' "
                                        f"or '2023-05-08T13:56:00'; got {date!r}") from None
                dates[s] = date
            exs = d.get("exchanges", []) if v2 else _req(d, "exchanges", what)
            if not isinstance(exs, list):
                raise ScenarioError(f"{what}: exchanges must be a list; got {type(exs).__name__}")
            rows = []
            for j, e in enumerate(exs):
                ew = f"session {s} exchange {j}"
                if not isinstance(e, dict):
                    raise ScenarioError(f"{ew} must be an object with user and assistant; got {e!r}")
                _check_keys(e, {"user", "assistant"}, ew, ("id",), v2)
                user = _text(_req(e, "user", ew), f"{ew}: user")
                assistant = e.get("assistant", "")
                if not isinstance(assistant, str):
                    raise ScenarioError(f"{ew}: assistant must be a string; got {assistant!r}")
                xid = e.get("id")
                if xid is not None:
                    xid = _text(xid, f"{ew}: id")
                    if xid in ids:
                        raise ScenarioError(f"{ew}: id {xid!r} is already the id of an exchange of session "
                                            f"{ids[xid][0]}; exchange ids must be unique")
                    ids[xid] = (s, user)
                rows.append((user, assistant, xid))
            sessions[s] = rows
        raw_facts = data.get("facts", [])
        if not isinstance(raw_facts, list):
            raise ScenarioError(f"facts must be a list; got {type(raw_facts).__name__}")
        facts: dict[str, Fact] = {}
        for i, d in enumerate(raw_facts):
            f = _fact(d, i, n_sessions, v2, ids)
            if f.key in facts:
                raise ScenarioError(f"fact '{f.key}' is defined twice (facts[{i}]); fact keys must be unique")
            facts[f.key] = f
        raw_probes = _req(data, "probes", "the scenario")
        if not isinstance(raw_probes, list) or not raw_probes:
            raise ScenarioError("probes must be a non-empty list")
        probes = []
        seen = set()
        for i, d in enumerate(raw_probes):
            p = _probe(d, i, n_sessions, facts, v2, ids)
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
        raw_notes = data.get("notes", [])
        if not isinstance(raw_notes, list):
            raise ScenarioError(f"notes must be a list; got {type(raw_notes).__name__}")
        notes, seen_notes = [], set()
        for i, d in enumerate(raw_notes):
            n = _note(d, i, n_sessions, ids)
            if n.id in seen_notes:
                raise ScenarioError(f"note '{n.id}' is defined twice (notes[{i}]); note ids must be unique")
            seen_notes.add(n.id)
            notes.append(n)
    except ScenarioError as exc:
        if pre:
            raise ScenarioError(pre + str(exc)) from None
        raise
    fact_list = list(facts.values())
    return Scenario(sid, n_sessions, tuple(fact_list), _exchanges(fact_list, sessions, n_sessions, replies, dates),
                    tuple(probes), dict(meta), replies, tuple(sorted(dates.items())), tuple(notes))
