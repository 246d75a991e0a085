"""Policies over a scenario's model-written notes (observations, summaries) and the evidence-recall table.

The harness's transcript-only policies (``full-transcript``, ``last-exchanges``, ``bm25-transcript``,
``replay-capped``, ``session-buffer``, ``fresh``) run on LoCoMo scenarios as they are; the two
policies here read the ``notes`` of a ``memaudit-scenario/2`` scenario: ``notes`` injects every
note of a kind made so far (``kind=summary``: the session summaries), ``bm25-notes`` the BM25 top-k
of them (``kind=observation``: BM25 over observations).  They use the harness's :class:`Policy`
contract, so :func:`memaudit.harness.trial.run` runs them beside the others, and expose their store
as stored items for ``memaudit diagnose`` (:mod:`memaudit.locomo.diagnose`): an ``observation`` item
per exchange that observations are anchored at (the exchange of an observation's last linked turn;
the observations of one exchange form one item, as they form one ``fact`` candidate of the
package) and a ``summary`` item per session, at the session's last exchange.
"""

from __future__ import annotations

from ..harness.errors import HarnessError
from ..harness.policies import BM25Index, Policy, StoredItem, _Memory, parse_policy
from ..harness.scenario import Scenario

__all__ = ["NOTES_POLICIES", "DEFAULT_RECALL_POLICIES", "notes", "bm25_notes", "parse_any_policy",
           "policies_at_budget", "evidence_recall_table"]

_KINDS = ("observation", "summary", "all")

#: transcript-only harness policies and the notes policies, for ``memaudit locomo recall``
DEFAULT_RECALL_POLICIES = ("fresh", "session-buffer", "last-exchanges", "replay-capped:cap_tokens=2000",
                           "bm25-transcript", "full-transcript", "notes:kind=summary", "bm25-notes:kind=observation")


class _NotesMemory(_Memory):
    def __init__(self, scenario: Scenario, count, kind: str, k: int | None, stamp: bool):
        super().__init__(scenario, count)
        self.kind, self.k, self.stamp = kind, k, stamp

    def _line(self, n) -> str:
        return f"[{self.scenario.stamp(n.session)}] {n.text}" if self.stamp else n.text

    def _notes(self, session: int):
        """(notes, their lines, BM25 index or None) of the notes of this kind made by ``session``."""
        def build():
            mine = [n for n in self.scenario.notes
                    if n.session <= session and (self.kind == "all" or n.kind == self.kind)]
            docs = [self._line(n) for n in mine]
            return mine, docs, BM25Index(docs) if self.k is not None else None
        return self._cached(("notes", session), build)

    def _position(self, note) -> int:
        """The stream position of the exchange a note sits at (see the module docstring)."""
        where = self._cached("where", lambda: {e.id: n for n, e in enumerate(self.scenario.exchanges)})
        if note.kind == "summary":
            last = self._cached("last", lambda: {e.session: n for n, e in enumerate(self.scenario.exchanges)})
            return last[note.session]
        return where[note.covers[-1]]

    def _picked(self, session: int, question: str) -> list[int]:
        notes, _, index = self._notes(session)
        return list(range(len(notes))) if index is None else list(index.top(question, self.k))

    def stored(self, session: int) -> list[str]:
        return list(self._notes(session)[1])

    def inject(self, session: int, question: str) -> list[str]:
        docs = self._notes(session)[1]
        return [docs[i] for i in self._picked(session, question)]

    def items(self, session: int) -> list[StoredItem]:
        """The store as items: one per (kind, exchange), its notes' lines joined, in first-note order."""
        notes, docs, _ = self._notes(session)
        grouped: dict[tuple[str, int], list[str]] = {}
        for n, line in zip(notes, docs):
            grouped.setdefault((n.kind, self._position(n)), []).append(line)
        return [StoredItem(kind, pos, "\n".join(lines)) for (kind, pos), lines in grouped.items()]

    def inject_items(self, session: int, question: str) -> list[StoredItem]:
        notes, docs, _ = self._notes(session)
        return [StoredItem(notes[i].kind, self._position(notes[i]), docs[i]) for i in self._picked(session, question)]


def _check(kind, stamp, name):
    if kind not in _KINDS:
        raise HarnessError(f"policy '{name}': setting kind must be one of {', '.join(_KINDS)}; got {kind!r}")
    if not isinstance(stamp, bool):
        raise HarnessError(f"policy '{name}': setting stamp must be true or false; got {stamp!r}")


def notes(*, kind: str = "summary", stamp: bool = True) -> Policy:
    """Every note of ``kind`` (``summary``, ``observation`` or ``all``) made by the probe's session, all injected."""
    _check(kind, stamp, "notes")
    return Policy("notes", {"kind": kind, "stamp": stamp}, lambda sc, count: _NotesMemory(sc, count, kind, None, stamp))


def bm25_notes(*, kind: str = "observation", k: int = 5, stamp: bool = True) -> Policy:
    """BM25 top-``k`` over the notes of ``kind`` made by the probe's session."""
    _check(kind, stamp, "bm25-notes")
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise HarnessError(f"policy 'bm25-notes': setting k must be an integer >= 0; got {k!r}")
    return Policy("bm25-notes", {"kind": kind, "k": k, "stamp": stamp, "bm25": BM25Index.SETTINGS},
                  lambda sc, count: _NotesMemory(sc, count, kind, k, stamp))


#: the notes policies by name
NOTES_POLICIES = {"notes": notes, "bm25-notes": bm25_notes}


def _value(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text)
    except ValueError:
        return text


def parse_any_policy(spec: str) -> Policy:
    """A notes policy (``notes:kind=summary``, ``bm25-notes:k=3``) or any harness policy (:func:`parse_policy`).

    Examples
    --------
    >>> parse_any_policy("bm25-notes:k=3").settings["k"], parse_any_policy("full-transcript").name
    (3, 'full-transcript')
    """
    name, _, rest = spec.strip().partition(":")
    if name not in NOTES_POLICIES:
        return parse_policy(spec)
    kwargs = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key in kwargs:
            raise HarnessError(f"policy '{name}': setting {item!r} must be written key=value, once")
        kwargs[key] = _value(value)
    try:
        return NOTES_POLICIES[name](**kwargs)
    except TypeError:
        raise HarnessError(f"policy '{name}': bad setting in {spec!r}; valid settings: "
                           + ("kind, stamp" if name == "notes" else "kind, k, stamp")) from None


def policies_at_budget(scenario: Scenario, tokens: int, count) -> list[Policy]:
    """Transcript-only policies and BM25 over observations set to inject about ``tokens`` tokens each.

    ``replay-capped`` with cap ``tokens`` (whole sessions evicted, oldest first); ``last-exchanges``
    and ``bm25-transcript`` with n = k = ``tokens`` / (mean tokens of a stamped turn line);
    ``bm25-notes`` over observations with k = ``tokens`` / (mean tokens of a stamped observation
    line); each at least 1.  ``count`` is the token counter (text -> int) the run will use.
    """
    from ..harness.policies import render_exchange

    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise HarnessError(f"the injection budget must be a whole number of tokens >= 1; got {tokens!r}")
    turns = [count(render_exchange(e, True)) for e in scenario.exchanges]
    obs = [count(f"[{scenario.stamp(n.session)}] {n.text}") for n in scenario.notes if n.kind == "observation"]
    per_turn = max(1, round(tokens / (sum(turns) / len(turns)))) if turns else 1
    per_obs = max(1, round(tokens / (sum(obs) / len(obs)))) if obs else 1
    return [parse_policy(f"replay-capped:cap_tokens={tokens},stamp=true"), parse_policy(f"last-exchanges:n={per_turn}"),
            parse_policy(f"bm25-transcript:k={per_turn}"), bm25_notes(kind="observation", k=per_obs)]


def _unique_names(policies: list[Policy]) -> list[Policy]:
    """Give policies that share a name (``notes:kind=summary`` and ``notes:kind=observation``) distinct names."""
    seen: dict[str, int] = {}
    out = []
    for p in policies:
        n = seen.get(p.name, 0)
        seen[p.name] = n + 1
        if n or sum(q.name == p.name for q in policies) > 1:
            label = p.name + "[" + ",".join(f"{k}={v}" for k, v in p.settings.items() if k != "bm25") + "]"
            p = Policy(label, p.settings, p.build)
        out.append(p)
    return out


def evidence_recall_table(scenario: Scenario, policies: list[Policy], *, tokens: str = "o200k_base") -> list[dict]:
    """One row per policy: ``policy``, ``settings``, ``n_evidence`` (probes with evidence),
    ``evidence_recall`` (mean share of their evidence turns injected), ``evidence_hit`` (share with
    any), ``mean_tokens_injected`` (over every probe), ``stored_tokens`` and ``by_category``
    (category -> mean evidence recall of its probes); computed by a harness run with the
    classifier reader on the literal questions."""
    from ..harness.readers import classifier_reader
    from ..harness.trial import Plant, ProbeSet, Score, run

    doc = run(Plant("locomo-scenario", {}, scenario), _unique_names(list(policies)),
              ProbeSet(classifier_reader(), forms=("literal",)), Score(tokens=tokens))
    rows = []
    for t in doc["trials"]:
        s = t["summary"]["literal"]
        per: dict[str, list[float]] = {}
        for r in t["rows"]:
            if r["evidence_recall"] is not None:
                per.setdefault(str(r["category"]), []).append(r["evidence_recall"])
        rows.append({"policy": t["disturb"]["name"], "settings": t["disturb"]["settings"],
                     "n_evidence": s["n_evidence"],
                     "evidence_recall": s["evidence_recall"], "evidence_hit": s["evidence_hit"],
                     "mean_tokens_injected": s["mean_tokens_injected"], "stored_tokens": t["stored_tokens"],
                     "by_category": {c: sum(v) / len(v) for c, v in sorted(per.items())}})
    return rows
