"""The ``natural`` family: the 30-session memory bench as a MEMAUDIT package.

The facts, their schedule, wording and probes, and the distractor questions come from the
bench's scenario file, ``packages_data/scenarios/memory-bench.yaml``, the file the harness bench
(:mod:`memaudit.harness.bench`) reads too.  One developer talks to a coding assistant for 30
working days, 12 exchanges a day.  Fifteen facts are stated along the way: eight change later
(the on-call engineer twice), two personal details are deleted on request, five never change.
The user's statements are the file's words (the assistant answers "Got it, I will keep that in
mind."; the harness bench answers "Noted: <value>.").  Every other exchange is a distractor question whose reply quotes generated code, so
the transcript has real token weight (the harness bench quotes standard-library source instead;
generated lines keep the package the same on every Python).

The bench probes every fact stated so far at the end of days 10, 20 and 30 (40 probes).  A
package's queries come after the stream, so each probe becomes a query asked at the end:
day-30 probes ask for the current value (and, for a changed fact, that the previous value is
no longer valid); day-10 / day-20 probes ask "on day D, ...", which needs the interval of the
value held that day, or the current value when it has not changed since.  Probes of a fact
that was deleted by the end ask for abstention (they require the deletion's validity unit):
the bench's 3 deletion probes, plus the day-10 phone and day-20 e-mail probes, which the bench
scores while the value was live (35 live-value queries + 5 abstention queries).  A deleted
value's unit is never required.  (``memaudit diagnose`` instead compiles the bench to one
package per probe day; see :mod:`memaudit.diagnose.compile`.)
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from memaudit_solvers.settings import setting_error, validate_settings

from ..package import Package
from .events import (Event, EventGraph, GeneratorError, QuerySpec, Slot, current_unit, deleted_unit, interval_unit,
                     invalid_unit, package_id_or, render_package)

__all__ = ["NaturalParams", "bench_timelines", "distractors", "fact_name", "generate_natural", "natural_graph",
           "PROBE_DAYS"]

#: days whose end the bench probes every fact stated so far
PROBE_DAYS = (10, 20, 30)

def fact_name(key: str) -> str:
    """The short name of a fact in stored texts: its key with ``_`` and ``-`` read as spaces.

    >>> fact_name("deploy_region")
    'deploy region'
    """
    return key.replace("_", " ").replace("-", " ")


def bench_timelines() -> tuple[tuple, ...]:
    """The facts of the 30-session memory bench's scenario file (the one the harness bench reads):
    ``(key, name, question, ((day, op, value, user statement), ...))`` with op ``set``, ``update``,
    ``restate`` (a value said again) or ``delete``; the question is the fact's literal probe."""
    from ..harness.bench import bench_facts

    out = []
    for key, _, _, versions, delete, literal, _ in bench_facts():
        timeline = []
        for j, (day, value, text) in enumerate(versions):
            op = "set" if j == 0 else ("restate" if value == versions[j - 1][1] else "update")
            timeline.append((day, op, value, text))
        if delete is not None:
            timeline.append((delete[0], "delete", None, delete[1]))
        out.append((key, fact_name(key), literal, tuple(timeline)))
    return tuple(out)


def distractors() -> tuple[str, ...]:
    """The distractor questions of the bench's scenario file."""
    from ..harness.bench import bench_distractors

    return tuple(bench_distractors())


_WORDS = ("order", "ledger", "amount", "customer", "region", "config", "cache", "token", "payload", "session",
          "retry", "buffer", "result", "handler", "request", "response", "client", "record", "index", "batch")
_TYPES = ("int", "String", "bool", "double", "List<int>", "Map<String, Object?>", "Future<void>", "Duration")


def _code_line(rng: random.Random) -> str:
    a, b, c = rng.choice(_WORDS), rng.choice(_WORDS), rng.choice(_WORDS)
    shape = rng.randrange(6)
    if shape == 0:
        return f"  final {a}{b.title()} = {c}.{rng.choice(('read', 'parse', 'lookup', 'decode'))}({b});"
    if shape == 1:
        return f"  if ({a}.length > {rng.randint(2, 512)}) return {b}Default;"
    if shape == 2:
        return f"  {rng.choice(_TYPES)} {a}{c.title()}({rng.choice(_TYPES)} {b}) => {b}.{c};"
    if shape == 3:
        return f"  // {a} and {b} must agree before the {c} is written."
    if shape == 4:
        return f"  for (var i = 0; i < {a}s.length; i++) {{ {b}.add({a}s[i]); }}"
    return f"  throw StateError('{a} {b} missing for {c}');"


@dataclass(frozen=True)
class NaturalParams:
    """Parameters of the ``natural`` family.

    Attributes
    ----------
    filler : bool
        Include the distractor exchanges (the whole transcript); False keeps only the 26
        fact-bearing exchanges (the append-only fact log's view of the stream).
    filler_lines : int
        Lines of generated code in each distractor reply.  The bench's replies quoted 30 lines of
        SDK source; 16 of our shorter generated lines give a day-30 transcript of about the
        bench's weight (83,605 o200k_base tokens for seed 42; the bench reports 86,058).
    exchanges_per_session : int
        Exchanges per day (session), fact-bearing ones included (the bench has 12).
    cost_model : str
        ``tokens`` (o200k_base, as the bench counts) by default.
    """

    filler: bool = True
    filler_lines: int = 16
    exchanges_per_session: int = 12
    cost_model: str = "tokens"

    def check(self, owner: str = "NaturalParams") -> None:
        """Raise :class:`GeneratorError` naming the first parameter out of range, in the one message
        template; each rule is its declaration in :data:`memaudit.generators.GENERATOR_SETTINGS`."""
        from . import _registry

        declared = [s for s in _registry()["natural"][1:] if s.name != "seed"]
        try:
            validate_settings(owner, declared, asdict(self))
        except ValueError as exc:
            raise GeneratorError(str(exc)) from None


def _fact_text(statement: str) -> str:
    return f"user: {statement}\nassistant: Got it, I will keep that in mind."


def generate_natural(seed: int = 0, *, package_id: str | None = None, **params) -> Package:
    """The 30-session memory bench as a package; ``seed`` draws the filler and where each fact falls in its day.

    Examples
    --------
    >>> pkg = generate_natural(1, filler=False)
    >>> len(pkg.experiences), len(pkg.queries), sorted({u.kind for u in pkg.units})
    (26, 40, ['current', 'interval', 'validity'])
    """
    from . import GENERATOR_VERSION

    unknown = sorted(set(params) - set(NaturalParams.__dataclass_fields__))
    if unknown:
        raise GeneratorError(f"unknown parameter {unknown[0]!r}; valid parameters: "
                             f"{', '.join(sorted(NaturalParams.__dataclass_fields__))}")
    p = NaturalParams(**params)
    graph, queries, minutes = natural_graph(p, seed)
    meta = {"generator": "natural", "generator_version": GENERATOR_VERSION, "seed": seed, "params": asdict(p),
            "scenario": "the 30-session memory bench (packages_data/scenarios/memory-bench.yaml): 15 facts "
                        "(8 updated, 2 deleted on request), probes at days 10, 20 and 30"}
    pid = package_id_or(package_id, f"natural-s{seed}" if p.filler else f"natural-facts-s{seed}")
    return render_package(graph, queries, package_id=pid, cost_model=p.cost_model, meta=meta, minutes=minutes)


def natural_graph(p: NaturalParams, seed: int) -> tuple[EventGraph, list[QuerySpec], list[int]]:
    """The event graph, the query specs and each event's minute, before rendering."""
    owner = "generator 'natural'"
    p.check(owner)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise GeneratorError(str(setting_error(owner, "seed", "an integer", seed)))
    rng = random.Random(seed)
    graph = EventGraph()
    by_day: dict[int, list[tuple]] = {}
    chatter = distractors()
    for key, name, question, timeline in bench_timelines():
        graph.add_slot(Slot(key, name, "value", question))
        for day, op, value, statement in timeline:
            by_day.setdefault(day, []).append((op, key, value, statement))
    n_days = 30
    minutes = []
    for day in range(1, n_days + 1):
        facts_today = by_day.get(day, [])
        if len(facts_today) > p.exchanges_per_session:
            raise GeneratorError(f"parameter exchanges_per_session ({p.exchanges_per_session}) is smaller than the "
                                 f"{len(facts_today)} facts stated on day {day}")
        if p.filler:
            slots = sorted(rng.sample(range(p.exchanges_per_session), len(facts_today)))
        else:
            slots = list(range(len(facts_today)))
        at = dict(zip(slots, facts_today))
        n = p.exchanges_per_session if p.filler else len(facts_today)
        for position in range(n):
            minutes.append(position * 5)
            if position in at:
                op, key, value, statement = at[position]
                graph.add(Event(day, op, _fact_text(statement), key, value))
            else:
                question = rng.choice(chatter)
                code = "\n".join(_code_line(rng) for _ in range(p.filler_lines))
                reply = "assistant: Here is the relevant code:" + (f"\n{code}" if code else "")
                graph.add(Event(day, "chatter", f"user: {question}\n{reply}"))
    return graph, _probes(graph), minutes


def _probes(graph: EventGraph) -> list[QuerySpec]:
    out = []
    for probe_day in PROBE_DAYS:
        for key, slot in graph.slots.items():
            tl = graph.timelines[key]
            if tl.values[0][1] > probe_day:
                continue
            q = slot.question if probe_day == PROBE_DAYS[-1] else (
                f"On day {probe_day}: {slot.question[0].lower()}{slot.question[1:]}")
            if tl.deleted is not None:
                out.append(QuerySpec(q, f"not kept: deleted at the user's request on day {tl.deleted[0]}",
                                     (deleted_unit(key),)))
                continue
            i, k = tl.value_on(probe_day), len(tl.values) - 1
            if i == k:
                requires = (current_unit(key),)
                if k >= 1 and tl.values[k - 1][0] != tl.final:
                    requires += (invalid_unit(key, k - 1),)
                out.append(QuerySpec(q, tl.final, requires))
            else:
                out.append(QuerySpec(q, tl.values[i][0], (interval_unit(key, i),)))
    return out
