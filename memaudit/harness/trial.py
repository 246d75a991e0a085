"""A trial composes the four parts: plant (a scenario), disturb (a policy), probe (questions + a
reader) and score (outcomes + token count); a run is one plant, probe and score over several policies.

Every run document records each part's name and settings (and the scenario's sha256), so a run
can be replayed; ``diff_runs`` compares two runs probe by probe (the memory-eval-harness chapter's before / after recipe).

A probe with ``evidence`` (a ``memaudit-scenario/2`` scenario, e.g. LoCoMo's human-annotated
evidence turns) also gets a deterministic **evidence recall**: the share of its evidence
exchanges that are inside what the policy injects, an exchange counting as inside when its line
is injected (with any stamp) or when an injected note covers it (see :func:`evidence_recall`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .. import __version__
from .errors import HarnessError
from .match import MATCH_MODES, contains_value, token_counter
from .policies import Policy, render_exchange
from .readers import Judge, Reader
from .runs import OUTCOMES, PROBE_FORMS, RUN_FORMAT, diff_runs, load_run, rows_csv, summary_csv, write_run
from .scenario import Fact, Probe, Scenario

__all__ = ["RUN_FORMAT", "OUTCOMES", "PROBE_FORMS", "Plant", "ProbeSet", "Score", "Trial", "run", "classify",
           "probe_kind", "evidence_recall", "summarize_rows", "write_run", "load_run", "diff_runs", "rows_csv",
           "summary_csv"]


@dataclass(frozen=True)
class Plant:
    """The plant part: a scenario with the name and settings of what produced it."""

    name: str
    settings: dict
    scenario: Scenario

    def spec(self) -> dict:
        return {"name": self.name, "settings": dict(self.settings), "scenario_id": self.scenario.id,
                "scenario_sha256": self.scenario.sha256()}


@dataclass(frozen=True)
class ProbeSet:
    """The probe part: which forms are asked, and the reader that answers."""

    reader: Reader
    forms: tuple[str, ...] = PROBE_FORMS
    judge: Judge | None = None

    def __post_init__(self):
        if not self.forms or any(f not in PROBE_FORMS for f in self.forms) or len(set(self.forms)) != len(self.forms):
            raise HarnessError(f"probe forms must be distinct values of {', '.join(PROBE_FORMS)}; got {self.forms!r}")
        if self.judge is not None and not self.reader.answers:
            raise HarnessError("a judge grades free-text answers; the classifier reader gives none "
                               "(use --reader command or mechanical)")

    def spec(self) -> dict:
        return {"name": "probes", "settings": {"forms": list(self.forms)}, "reader": self.reader.spec(),
                "judge": self.judge.spec() if self.judge else None}


@dataclass(frozen=True)
class Score:
    """The score part: how values are matched and how injected tokens are counted."""

    match: str = "tokens"
    tokens: str = "o200k_base"
    count: object = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.match not in MATCH_MODES:
            raise HarnessError(f"unknown match mode {self.match!r}; valid: {', '.join(MATCH_MODES)}")
        object.__setattr__(self, "count", token_counter(self.tokens))

    def spec(self) -> dict:
        return {"name": "outcomes", "settings": {"match": self.match, "tokens": self.tokens}}


def probe_kind(scenario: Scenario, probe: Probe) -> str:
    """``live``, ``deleted`` (the delete request came by the probe's session) or ``absent`` (never planted,
    or a probe whose correct answer is to abstain)."""
    if probe.fact is None:
        return "absent"
    return "deleted" if scenario.fact(probe.fact).deleted_by(probe.session) else "live"


def _values(fact: Fact, session: int) -> tuple[str, list[str], list[str]]:
    live = fact.live_versions(session)
    cur = live[-1].value
    old = []
    for v in reversed(live[:-1]):
        if v.value not in cur and v.value not in old:
            old.append(v.value)
    return cur, old, [v.value for v in live]


def classify(fact: Fact, session: int, text: str, match: str = "tokens") -> str:
    """The 30-session memory bench's outcome of one probe about ``fact`` at the end of ``session`` given ``text``
    (an injected context or an answer).

    Deleted fact: ``leaked`` if any stated value is in the text, else ``clean``.  Live fact: with
    the current value and the superseded values that the current one does not contain,
    ``conflict`` (both present), ``current``, ``stale`` (only an old one) or ``missing``.

    Examples
    --------
    >>> from memaudit.harness.scenario import Fact, Version
    >>> f = Fact("node", "decision", 1, (Version(8, "Node 20", "Services run on Node 20."),
    ...                                  Version(22, "Node 24", "Every service runs on Node 24 now.")))
    >>> [classify(f, 30, t) for t in ("Node 24", "Node 20 and Node 24", "Node 20", "Node 204")]
    ['current', 'conflict', 'stale', 'missing']
    >>> classify(f, 10, "Node 20")
    'current'
    """
    cur, old, every = _values(fact, session)
    if fact.deleted_by(session):
        return "leaked" if any(contains_value(text, v, match) for v in every) else "clean"
    c = contains_value(text, cur, match)
    o = any(contains_value(text, v, match) for v in old)
    if c and o:
        return "conflict"
    if c:
        return "current"
    return "stale" if o else "missing"


def evidence_recall(scenario: Scenario, probe: Probe, lines: list[str]) -> float | None:
    """The share of ``probe``'s evidence exchanges inside the injected ``lines``; None without evidence.

    An evidence exchange is inside when one line is exactly its rendering (``render_exchange``,
    stamped with its session's stamp or not), or the text of a scenario note drawn from it (an
    observation or a summary, stamped with the note's session or not).  Deterministic: no reader
    is involved.
    """
    if not probe.evidence:
        return None
    injected = set(lines)

    def has(text: str, session: int) -> bool:
        return text in injected or f"[{scenario.stamp(session)}] {text}" in injected

    kept = 0
    for x in probe.evidence:
        e = scenario.exchange(x)
        if has(render_exchange(e, False), e.session) or any(has(n.text, n.session)
                                                             for n in scenario.notes_covering(x)):
            kept += 1
    return kept / len(probe.evidence)


@dataclass(frozen=True)
class Trial:
    """One trial: plant x disturb x probe x score (inspect_ai's Task = dataset + solver + scorer)."""

    plant: Plant
    disturb: Policy
    probe: ProbeSet
    score: Score

    def run(self) -> dict:
        """Probe every question in every form; one row per (probe, form), a summary per form."""
        sc = self.plant.scenario
        memory = self.disturb.build(sc, self.score.count)
        reader, judge, match = self.probe.reader, self.probe.judge, self.score.match
        rows = []
        for p in sc.probes:
            kind = probe_kind(sc, p)
            fact = sc.fact(p.fact) if p.fact is not None else None
            for form in self.probe.forms:
                q = p.question(form)
                if q is None:
                    continue
                lines = memory.inject(p.session, q)
                context = "\n".join(lines)
                recall = evidence_recall(sc, p, lines)
                item = f"probe '{p.id}' ({form}, policy {self.disturb.name})"
                ans = reader.read(lines, q, item=item)
                text = ans.text or ""
                if kind == "absent":
                    if not reader.answers:
                        outcome = "unscored"
                    elif ans.abstained:
                        outcome = "abstained"
                    elif judge is not None:
                        outcome = judge.grade_absent(q, text, item)
                    else:
                        outcome = "answered"
                else:
                    # the values decide first: a hedged answer that states one is not an abstention
                    outcome = classify(fact, p.session, text, match)
                    if judge is not None and not (ans.abstained and outcome in ("missing", "clean")):
                        cur, old, every = _values(fact, p.session)
                        outcome = (judge.grade_deleted(q, text, every, item) if kind == "deleted"
                                   else judge.grade_live(q, text, cur, old, item))
                rows.append({"probe": p.id, "session": p.session, "fact": p.fact,
                             "fact_type": fact.type if fact else None, "kind": kind, "form": form, "question": q,
                             "outcome": outcome, "tokens_injected": self.score.count(context),
                             "answer": text if reader.answers else None, "abstained": ans.abstained,
                             "cached": ans.cached, "category": p.category, "evidence_recall": recall})
        last = max((p.session for p in sc.probes), default=sc.n_sessions)
        stored = memory.stored(last)
        stored_text = "\n".join(stored)
        by_type: dict[str, list[int]] = {}
        # facts in the order their current version was stated (the memory-eval-harness chapter's table order)
        where = sc.statement_positions()
        alive = [f for f in sc.facts if not f.deleted_by(last) and f.first_session <= last]
        alive.sort(key=lambda f: where[(f.key, len(f.live_versions(last)) - 1)])
        for f in alive:
            cur = f.live_versions(last)[-1].value
            kept, total = by_type.setdefault(f.type, [0, 0])
            by_type[f.type] = [kept + contains_value(stored_text, cur, match), total + 1]
        summary = {form: summarize_rows([r for r in rows if r["form"] == form]) for form in self.probe.forms}
        if len(self.probe.forms) > 1:
            summary["combined"] = summarize_rows(rows)
        return {"disturb": self.disturb.spec(), "stored_session": last,
                "stored_tokens": self.score.count(stored_text), "n_stored_lines": len(stored),
                "summary": summary, "by_type": {t: {"kept": k, "total": n} for t, (k, n) in by_type.items()},
                "rows": rows}


def summarize_rows(rows: list[dict]) -> dict:
    """Counts per outcome and probe kind, the mean injected tokens, and over the ``n_evidence`` rows
    with evidence the mean evidence recall and the share with any evidence inside (0 when none)."""
    counts = Counter(r["outcome"] for r in rows)
    kinds = Counter(r["kind"] for r in rows)
    mean = sum(r["tokens_injected"] for r in rows) / len(rows) if rows else 0.0
    recalls = [r["evidence_recall"] for r in rows if r.get("evidence_recall") is not None]
    return {"n_probes": len(rows), "n_live": kinds["live"], "n_deleted": kinds["deleted"], "n_absent": kinds["absent"],
            **{o: counts[o] for o in OUTCOMES}, "mean_tokens_injected": mean, "n_evidence": len(recalls),
            "evidence_recall": sum(recalls) / len(recalls) if recalls else 0.0,
            "evidence_hit": sum(1 for x in recalls if x > 0) / len(recalls) if recalls else 0.0}


def run(plant: Plant, policies: list[Policy], probe: ProbeSet, score: Score, *, progress=None) -> dict:
    """Run one trial per policy; the run document (``memaudit-harness-run/1``).

    Policy names must be distinct (a trial is known by its policy's name in the tables, the CSV
    files and :func:`diff_runs`).
    """
    if not policies:
        raise HarnessError("no policy given; name at least one")
    names = [p.name for p in policies]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise HarnessError(f"policy {name!r} is given twice; a run holds one trial per policy name (compare "
                               "two settings of one policy in two runs, with diff)")
    trials = []
    for pol in policies:
        if progress:
            progress(f"policy {pol.name}...")
        trials.append(Trial(plant, pol, probe, score).run())
    return {"format": RUN_FORMAT, "memaudit_version": __version__, "plant": plant.spec(), "probe": probe.spec(),
            "score": score.spec(), "policies": names, "trials": trials}

