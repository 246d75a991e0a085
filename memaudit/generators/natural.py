"""The ``natural`` family: the 30-session, 15-fact scenario of seed 001 as a MEMAUDIT package.

One developer talks to a coding assistant for 30 working days, 12 exchanges a day.  Fifteen
facts are stated along the way on the seed's schedule: eight change later (the on-call
engineer twice), two personal details are deleted on request, five never change.  Every other
exchange is a distractor question whose reply quotes generated code, so the transcript has
real token weight (the seed quoted SDK sources; ours are synthetic lines drawn with the package seed).

The seed probes every fact stated so far at the end of days 10, 20 and 30 (40 probes).  A
package's queries come after the stream, so each probe becomes a query asked at the end:
day-30 probes ask for the current value (and, for a changed fact, that the previous value is
no longer valid); day-10 / day-20 probes ask "on day D, ...", which needs the interval of the
value held that day, or the current value when it has not changed since.  Probes of a fact
that was deleted by the end ask for abstention (they require the deletion's validity unit):
the seed's 3 deletion probes, plus the day-10 phone and day-20 e-mail probes, which the seed
scored while the value was live (35 live-value queries + 5 abstention queries).  A deleted
value's unit is never required.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from ..costs import COST_MODELS
from ..package import Package
from .events import (Event, EventGraph, GeneratorError, QuerySpec, Slot, current_unit, deleted_unit, interval_unit,
                     invalid_unit, package_id_or, render_package)

__all__ = ["NaturalParams", "FACTS", "generate_natural", "natural_graph", "PROBE_DAYS"]

#: days whose end the seed probes every fact stated so far
PROBE_DAYS = (10, 20, 30)

#: the 15 facts: key, name, question, and the timeline [(day, op, value, user statement)]
FACTS = (
    ("deploy-region", "deploy region", "Which region do we deploy production to?", (
        (1, "set", "eu-west-2", "Our production deployments run in the eu-west-2 region."),
        (14, "update", "eu-central-1", "Production now lives in eu-central-1; we finished moving it off eu-west-2 "
                                       "today."))),
    ("postgres", "Postgres version", "Which Postgres version does the main database run?", (
        (2, "set", "Postgres 15", "The main database is Postgres 15."),
        (19, "update", "Postgres 17", "We upgraded the main database from Postgres 15 to Postgres 17 last night."))),
    ("test-runner", "test runner", "Which test runner do we use?", (
        (3, "set", "Jest", "Our unit tests run with Jest."),
        (11, "update", "Vitest", "We replaced Jest with Vitest for the unit tests."))),
    ("indentation", "indentation", "Tabs or spaces?", (
        (4, "set", "tabs, not spaces", "House rule: indent with tabs, not spaces."),)),
    ("money", "money type", "How do we represent amounts of money?", (
        (5, "set", "the Money class, never a double", "Amounts go through the Money class, never a double."),)),
    ("on-call", "on-call engineer", "Who is the on-call engineer?", (
        (6, "set", "Priya", "Priya is the on-call engineer this rotation."),
        (16, "update", "Marco", "Marco took over on-call duty from Priya."),
        (27, "update", "Priya", "Priya is back on call; Marco has rotated off."))),
    ("ticket-prefix", "ticket prefix", "What prefix do our tickets use?", (
        (7, "set", "PAY", "Every ticket we file gets the PAY prefix."),)),
    ("node", "Node version", "Which Node version do the services run on?", (
        (8, "set", "Node 20", "Our services run on Node 20."),
        (22, "update", "Node 24", "All services were moved from Node 20 to Node 24."))),
    ("phone", "phone number", "What is my phone number?", (
        (9, "set", "+44 20 7946 0321", "My phone number for the test accounts is +44 20 7946 0321."),
        (20, "delete", None, "Please forget my phone number; do not keep it anywhere."))),
    ("release-branch", "release branch", "What is the current release branch?", (
        (10, "set", "release/2026.3", "The current release branch is release/2026.3."),
        (24, "update", "release/2026.4", "We cut release/2026.4; it replaces release/2026.3 as the release branch."))),
    ("commit-style", "commit style", "How should commit messages be written?", (
        (12, "set", "imperative mood", "Write commit messages in the imperative mood."),)),
    ("time-zone", "time zone", "Which time zone am I in?", (
        (13, "set", "Lisbon", "I work on Lisbon time."),
        (25, "update", "Berlin", "I relocated from Lisbon to Berlin, so use Berlin time for me."))),
    ("checkout-flag", "checkout flag in production", "Is the checkout flag on in production?", (
        (15, "set", "false", "The new checkout flag stays false in production for now."),
        (23, "update", "true", "The checkout flag is true in production as of today; it was false until now."))),
    ("email", "personal email", "What is my personal email?", (
        (17, "set", "k.dev@example.com", "You can reach me at k.dev@example.com."),
        (26, "delete", None, "Please delete my personal email address from your memory."))),
    ("api-timeout", "payment API timeout", "When do calls to the payment API time out?", (
        (18, "set", "30 seconds", "Calls to the payment provider API time out after 30 seconds."),)),
)

#: distractor questions: they share words with the facts but state none
DISTRACTORS = (
    "Why does the deploy pipeline take so long on Fridays?",
    "How do I set up phone verification in the sign-up flow?",
    "How do I write a migration that adds a column safely?",
    "How do I paginate a large result set in the orders query?",
    "Why is the production build bigger than the dev build?",
    "How do I profile a slow query in the main database?",
    "Why is this test flaky when the runner runs in parallel?",
    "What is the cleanest way to format money in the checkout page?",
    "How do I mock the payment provider API in unit tests?",
    "Can you explain what this release script does step by step?",
    "How should I name a branch for a hotfix?",
    "What does this time zone conversion bug come from?",
    "How do I send an email from the staging server without spamming users?",
    "Why do the services restart when the node pool scales down?",
    "How can I make the on-call alert less noisy at night?",
    "What is a good timeout for retries against a flaky API?",
)

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
        Lines of generated code in each distractor reply.  The seed's replies quoted 30 lines of
        SDK source; 16 of our shorter generated lines give a day-30 transcript of about the
        seed's weight (83,794 o200k_base tokens for seed 42, the seed reports 86,058).
    exchanges_per_session : int
        Exchanges per day (session), fact-bearing ones included (the seed has 12).
    cost_model : str
        ``tokens`` (o200k_base, as the seed counts) by default.
    """

    filler: bool = True
    filler_lines: int = 16
    exchanges_per_session: int = 12
    cost_model: str = "tokens"

    def check(self) -> None:
        if not isinstance(self.filler, bool):
            raise GeneratorError(f"parameter filler must be true or false; got {self.filler!r}")
        for name, lo, hi in (("filler_lines", 0, 1000), ("exchanges_per_session", 1, 200)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise GeneratorError(f"parameter {name} must be an integer in [{lo}, {hi}]; got {v!r}")
        if self.cost_model not in COST_MODELS:
            raise GeneratorError(f"parameter cost_model must be one of {', '.join(COST_MODELS)}; "
                                 f"got {self.cost_model!r}")


def _fact_text(statement: str) -> str:
    return f"user: {statement}\nassistant: Got it, I will keep that in mind."


def generate_natural(seed: int = 0, *, package_id: str | None = None, **params) -> Package:
    """The seed-001 scenario as a package; ``seed`` draws the filler and where each fact falls in its day.

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
            "scenario": "seed 001: 30 sessions, 15 facts (8 updated, 2 deleted on request), probes at days "
                        "10, 20 and 30"}
    pid = package_id_or(package_id, f"natural-s{seed}" if p.filler else f"natural-facts-s{seed}")
    return render_package(graph, queries, package_id=pid, cost_model=p.cost_model, meta=meta, minutes=minutes)


def natural_graph(p: NaturalParams, seed: int) -> tuple[EventGraph, list[QuerySpec], list[int]]:
    """The event graph, the query specs and each event's minute, before rendering."""
    p.check()
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise GeneratorError(f"parameter seed must be an integer; got {seed!r}")
    rng = random.Random(seed)
    graph = EventGraph()
    by_day: dict[int, list[tuple]] = {}
    for key, name, question, timeline in FACTS:
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
                question = rng.choice(DISTRACTORS)
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
