"""Read LoCoMo files of either shape, check them, and repair the dataset's known quirks (each repair logged).

The conversation it builds (and the names of the repairs) is in :mod:`memaudit.locomo.conversation`;
every name is imported from here."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime

from ..errors import MemauditError
from .conversation import QA, REPAIRS, Conversation, Observation, Session, Turn

__all__ = ["LocomoError", "SHAPES", "REPAIRS", "Turn", "Observation", "Session", "QA", "Conversation",
           "read_locomo", "conversations_from_data", "parse_session_date", "normalise_turn_id"]

#: the two documented file shapes
SHAPES = ("release", "list")

_SESSION = re.compile(r"session_(\d+)")
_SESSION_KEY = re.compile(r"(?:session_(\d+)_(date_time|observation|summary)|events_session_(\d+))")
_TURN_ID = re.compile(r"D(\d+):(\d+)")
_LOOSE_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)
_ID_SEPARATORS = re.compile(r"[;,\s]+")
_DATE = re.compile(r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*",
                   re.IGNORECASE)
_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"), start=1)}


class LocomoError(MemauditError, ValueError):
    """A LoCoMo file cannot be read: the message names the file, the key and what is wrong."""


# -- small checks -----------------------------------------------------------------------

def _show(v) -> str:
    s = json.dumps(v, ensure_ascii=False, default=repr)
    return s if len(s) <= 60 else s[:57] + "..."


def parse_session_date(text, where: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> ``datetime(2023, 5, 8, 13, 56)``.

    Examples
    --------
    >>> parse_session_date("1:56 pm on 8 May, 2023", "x")
    datetime.datetime(2023, 5, 8, 13, 56)
    >>> parse_session_date("12:09 am on 13 September 2023", "x").isoformat()
    '2023-09-13T00:09:00'
    """
    m = _DATE.fullmatch(text) if isinstance(text, str) else None
    month = _MONTHS.get(m.group(5).lower()) if m else None
    if m is None or month is None:
        raise LocomoError(f"{where} must be a session date such as '1:56 pm on 8 May, 2023'; got {_show(text)}")
    hour, minute = int(m.group(1)), int(m.group(2))
    if not 1 <= hour <= 12:
        raise LocomoError(f"{where} has hour {hour}, not 1-12 (a 12-hour clock); got {_show(text)}")
    hour = hour % 12 + (12 if m.group(3).lower() == "p" else 0)
    try:
        return datetime(int(m.group(6)), month, int(m.group(4)), hour, minute)
    except ValueError as exc:
        raise LocomoError(f"{where} is not a calendar date ({exc}); got {_show(text)}") from None


def normalise_turn_id(raw: str) -> str | None:
    """The canonical ``D<session>:<index>`` of a possibly misspelt id, or None when it is not one.

    Examples
    --------
    >>> normalise_turn_id("D:11:26"), normalise_turn_id("D30:05"), normalise_turn_id("D1:3"), normalise_turn_id("x")
    ('D11:26', 'D30:5', 'D1:3', None)
    """
    m = _LOOSE_ID.fullmatch(raw.strip())
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else None


def _req(d: dict, key: str, where: str):
    if key not in d:
        raise LocomoError(f"{where} {'the conversation ' if where.endswith(':') else ''}has no key {key!r}")
    return d[key]


def _string(v, where: str, *, empty: bool = False) -> str:
    if not isinstance(v, str) or (not empty and not v.strip()):
        raise LocomoError(f"{where} must be a {'' if empty else 'non-empty '}string; got {_show(v)}")
    return v


# -- one conversation -------------------------------------------------------------------

class _Repairs:
    def __init__(self):
        self.log: dict[str, list[str]] = {}

    def add(self, name: str, what: str) -> None:
        assert name in REPAIRS, name
        self.log.setdefault(name, []).append(what)


def _turns(raw, n: int, where: str) -> tuple[Turn, ...]:
    if not isinstance(raw, list) or not raw:
        raise LocomoError(f"{where} must be a non-empty list of turns; got {_show(raw)}")
    out = []
    for j, t in enumerate(raw):
        tw = f"{where}[{j}]"
        if not isinstance(t, dict):
            raise LocomoError(f"{tw} must be a turn object {{speaker, dia_id, text}}; got {_show(t)}")
        dia = _string(_req(t, "dia_id", tw), f"{tw}.dia_id")
        m = _TURN_ID.fullmatch(dia)
        if m is None or int(m.group(1)) != n:
            raise LocomoError(f"{tw}.dia_id must be 'D{n}:<index>' (a turn of session {n}); got {_show(dia)}")
        speaker = _string(_req(t, "speaker", tw), f"{tw}.speaker")
        text = _string(_req(t, "text", tw), f"{tw}.text", empty=True)
        caption = t.get("blip_caption")
        if caption is not None:
            caption = _string(caption, f"{tw}.blip_caption", empty=True).strip() or None
        out.append(Turn(dia, n, speaker, text, caption))
    return tuple(out)


def _turn_ids(parts, ids: list[str], turns: dict[str, Turn], rep: _Repairs, kind: str, owner: str, *,
              repeats: str | None = None) -> list[str]:
    """Append to ``ids`` the turn id each of ``parts`` names, once each, and return ``ids``; a misspelt id
    is respelt (``<kind>_respelt``), one that names no turn dropped (``<kind>_unknown_dropped``), a repeat
    dropped (logged as ``repeats`` when given), each repair logged under ``owner``."""
    for p in parts:
        tid = normalise_turn_id(p)
        if tid is not None and tid != p:
            rep.add(f"{kind}_respelt", f"{owner}: {p} -> {tid}")
        if tid is None or tid not in turns:
            rep.add(f"{kind}_unknown_dropped", f"{owner}: {p}")
        elif tid not in ids:
            ids.append(tid)
        elif repeats is not None:
            rep.add(repeats, f"{owner}: {tid}")
    return ids


def _observations(raw, n: int, where: str, turns: dict[str, Turn], rep: _Repairs) -> tuple[Observation, ...]:
    if not isinstance(raw, dict):
        raise LocomoError(f"{where} must be an object {{speaker: [[fact, dia_id], ...]}}; got {_show(raw)}")
    order = {tid: k for k, tid in enumerate(turns)}
    out, position = [], 0
    for speaker, rows in raw.items():
        sw = f"{where}[{speaker!r}]"
        if not isinstance(rows, list):
            raise LocomoError(f"{sw} must be a list of [fact, dia_id] pairs; got {_show(rows)}")
        for j, row in enumerate(rows):
            rw = f"{sw}[{j}]"
            position += 1
            oid = f"S{n}.o{position}"  # its position among the session's observations, dropped ones included
            if not (isinstance(row, list) and len(row) == 2):
                raise LocomoError(f"{rw} must be a pair [fact text, dia_id]; got {_show(row)}")
            text = _string(row[0], f"{rw}[0]", empty=True).strip()
            if not text:
                rep.add("observation_empty_dropped", oid)
                continue
            links = row[1]
            if isinstance(links, list):
                rep.add("observation_links_parsed", f"{oid}: list {_show(links)}")
                parts = [_string(x, f"{rw}[1]") for x in links]
            elif isinstance(links, str):
                parts = [p for p in _ID_SEPARATORS.split(links) if p]
                if len(parts) > 1:
                    rep.add("observation_links_parsed", f"{oid}: string {_show(links)}")
            else:
                raise LocomoError(f"{rw}[1] must be a dia_id, a list of them or a comma-separated string; "
                                  f"got {_show(links)}")
            ids = _turn_ids(parts, [], turns, rep, "observation", oid)
            if not ids:
                continue
            ids.sort(key=order.__getitem__)
            said_by = {turns[t].speaker for t in ids}
            filed = _string(speaker, f"{sw} (the speaker key)")
            if filed not in said_by:
                real = turns[ids[-1]].speaker
                rep.add("observation_other_speaker", f"{oid}: filed under {filed}, said by {real}")
                filed = real
            out.append(Observation(oid, n, filed, text, tuple(ids)))
    return tuple(out)


def _evidence(raw, where: str, qid: str, turns: dict[str, Turn], rep: _Repairs) -> tuple[str, ...]:
    if not isinstance(raw, list):
        raise LocomoError(f"{where} must be a list of dia_ids; got {_show(raw)}")
    ids: list[str] = []
    for k, item in enumerate(raw):
        item = _string(item, f"{where}[{k}]", empty=True)
        parts = [p for p in _ID_SEPARATORS.split(item) if p]
        if len(parts) > 1:
            rep.add("evidence_split", f"{qid}: {item!r}")
        _turn_ids(parts, ids, turns, rep, "evidence", qid, repeats="evidence_duplicate_dropped")
    return tuple(ids)


def _answer(v, where: str, qid: str, rep: _Repairs, key: str) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise LocomoError(f"{where} must be a string or a number; got {_show(v)}")
    if not isinstance(v, str):
        rep.add("answer_not_string", f"{qid}: {key} {v!r}")
        v = str(v)
    return v.strip()


def _qa(raw, where: str, turns: dict[str, Turn], rep: _Repairs) -> tuple[QA, ...]:
    if not isinstance(raw, list):
        raise LocomoError(f"{where} must be a list of QA items; got {_show(raw)}")
    width = max(3, len(str(len(raw))))
    out, seen = [], {}
    for i, item in enumerate(raw):
        iw = f"{where}[{i}]"
        qid = f"q{i + 1:0{width}d}"
        if not isinstance(item, dict):
            raise LocomoError(f"{iw} must be a QA object {{question, answer, evidence, category}}; got {_show(item)}")
        canon = json.dumps(item, sort_keys=True, ensure_ascii=False)
        if canon in seen:
            rep.add("qa_duplicate_dropped", f"{qid} (= {seen[canon]})")
            continue
        seen[canon] = qid
        question = _string(_req(item, "question", iw), f"{iw}.question")
        category = _req(item, "category", iw)
        if isinstance(category, bool) or not isinstance(category, int) or not 1 <= category <= 5:
            raise LocomoError(f"{iw}.category must be an integer 1-5; got {_show(category)}")
        answer = _answer(item.get("answer"), f"{iw}.answer", qid, rep, "answer")
        adversarial = _answer(item.get("adversarial_answer"), f"{iw}.adversarial_answer", qid, rep,
                              "adversarial_answer")
        if category != 5 and answer is None:
            raise LocomoError(f"{iw} (category {category}) has no key 'answer'")
        evidence = _evidence(item.get("evidence", []), f"{iw}.evidence", qid, turns, rep)
        if category != 5 and not evidence:
            rep.add("question_without_evidence", qid)
        out.append(QA(qid, question, answer, category, evidence, adversarial))
    return tuple(out)


def _conversation(conv: dict, extra: dict, qa, cid: str, source: dict, where: str) -> Conversation:
    """Build one conversation from its session keys (``conv``), observation / summary keys (``extra``)."""
    rep = _Repairs()

    def at(key: str) -> str:
        return f"{where} {key}" if where.endswith(":") else f"{where}.{key}"

    speakers = (_string(_req(conv, "speaker_a", where), at("speaker_a")),
                _string(_req(conv, "speaker_b", where), at("speaker_b")))
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION.fullmatch(k)))
    if not numbers:
        raise LocomoError(f"{where} has no key 'session_1' (no session at all)")
    if numbers != list(range(1, len(numbers) + 1)):
        missing = next(k for k in range(1, numbers[-1] + 1) if k not in numbers)
        raise LocomoError(f"{where.rstrip(':')}: sessions must be numbered 1..n; key 'session_{missing}' is missing "
                          f"(found {len(numbers)} sessions up to session_{numbers[-1]})")
    known = set(numbers)
    for k in sorted({**conv, **extra}, key=lambda k: (len(k), k)):
        m = _SESSION_KEY.fullmatch(k)
        if m and int(m.group(1) or m.group(3)) not in known:
            rep.add("key_without_session", k)
    turns: dict[str, Turn] = {}
    parsed = []
    for n in numbers:
        sw = at(f"session_{n}")
        ts = _turns(conv[f"session_{n}"], n, sw)
        for t in ts:
            if t.id in turns:
                raise LocomoError(f"{sw}: turn id {t.id!r} appears twice; dia_ids must be unique")
            turns[t.id] = t
        date_text = _string(_req(conv, f"session_{n}_date_time", where), at(f"session_{n}_date_time"))
        parsed.append((n, ts, date_text, parse_session_date(date_text, at(f"session_{n}_date_time"))))
    sessions = []
    for n, ts, date_text, date in parsed:
        key = f"session_{n}_observation"
        if key in extra:
            obs = _observations(extra[key], n, at(key), turns, rep)
        else:
            rep.add("observations_missing", f"session_{n}")
            obs = ()
        key = f"session_{n}_summary"
        summary = None
        if key in extra:
            summary = _string(extra[key], at(key), empty=True).strip() or None
        if summary is None:
            rep.add("summary_missing", f"session_{n}")
        sessions.append(Session(n, date, date_text, ts, obs, summary))
    qas = _qa(qa, at("qa"), turns, rep)
    return Conversation(cid, speakers, tuple(sessions), qas, source, rep.log)


def _release_id(path: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    return f"conv-{stem}" if stem.isdigit() else stem


def conversations_from_data(data, *, path: str, sha256: str = "") -> tuple[str, list[Conversation]]:
    """Detect the shape of parsed LoCoMo data and build its conversations.

    Returns ``(shape, conversations)``; ``shape`` is ``release`` (one conversation object: its id
    is ``conv-<file stem>`` for a numbered file such as ``26.json``, else the stem) or ``list``
    (the Mem0 repository's list of samples, ids from ``sample_id``).

    Raises
    ------
    LocomoError
        A file of another shape, or a conversation that breaks a rule (naming the file and key).
    """
    name = os.path.basename(path)
    if isinstance(data, dict) and "session_1" in data or (isinstance(data, dict) and "speaker_a" in data
                                                           and "qa" in data):
        extra = {k: v for k, v in data.items() if k.endswith(("_observation", "_summary"))}
        conv = {k: v for k, v in data.items() if k not in extra and k != "qa"}
        source = {"file": name, "sha256": sha256, "shape": "release"}
        cid = _release_id(path)
        return "release", [_conversation(conv, extra, _req(data, "qa", f"{path}:"), cid, source, f"{path}:")]
    if isinstance(data, list) and data and all(isinstance(s, dict) and "conversation" in s for s in data):
        out, ids = [], set()
        for i, s in enumerate(data):
            where = f"{path}: [{i}]"
            cid = _string(_req(s, "sample_id", where), f"{where}.sample_id")
            if cid in ids:
                raise LocomoError(f"{where}.sample_id {cid!r} appears twice in the file; sample ids must be unique")
            ids.add(cid)
            conv = _req(s, "conversation", where)
            if not isinstance(conv, dict):
                raise LocomoError(f"{where}.conversation must be an object; got {_show(conv)}")
            extra = {}
            for key in ("observation", "session_summary", "event_summary"):
                part = s.get(key, {})
                if not isinstance(part, dict):
                    raise LocomoError(f"{where}.{key} must be an object; got {_show(part)}")
                extra.update(part)
            source = {"file": name, "sha256": sha256, "shape": "list", "position": i}
            out.append(_conversation(conv, extra, _req(s, "qa", where), cid, source, f"{where} ({cid})"))
        return "list", out
    if isinstance(data, list):
        bad = next((i for i, s in enumerate(data) if not (isinstance(s, dict) and "conversation" in s)), None)
        detail = "it is empty" if not data else f"item [{bad}] has no key 'conversation'"
    elif isinstance(data, dict):
        detail = "the object has no key 'session_1' (keys: " + ", ".join(sorted(map(str, data))[:6]) + ")"
    else:
        detail = f"the file holds {type(data).__name__}"
    raise LocomoError(f"{path}: not a LoCoMo file: expected the release's conversation object (keys speaker_a, "
                      f"session_1, ..., qa) or the Mem0 list of samples (each with 'conversation'); {detail}")


def read_locomo(path) -> tuple[str, list[Conversation]]:
    """Read a LoCoMo file (either shape; the file is only read); see :func:`conversations_from_data`.

    Read once through :func:`memaudit.formats.read_json` (size limit, BOM, duplicate keys and NaN
    literals refused, every failure one line naming the file).
    """
    from ..formats import read_json

    path = os.fspath(path)
    doc = read_json(path, what="LoCoMo", error=LocomoError)
    return conversations_from_data(doc.data, path=path, sha256=doc.sha256)
