"""The memory-eval-harness chapter's lab: eight typed facts over two sessions, six probes in a fresh third session, five
conditions, the mechanical reader, the memory-eval-harness chapter's substring needles and its len/4 token count."""

from __future__ import annotations

from .policies import LAB_POLICIES, parse_policy, policy_label
from .readers import mechanical_reader
from .scenario import Scenario, scenario_from_dict
from .trial import Plant, ProbeSet, Score, run

__all__ = ["LAB_SCENARIO", "lab_scenario", "run_lab", "lab_scorecard", "lab_by_type", "lab_lines"]


def _v(session, value, text, position):
    return {"session": session, "value": value, "text": text, "position": position}


#: the memory-eval-harness chapter's facts and probes in the scenario file format (sessions 1 and 2 plant, session 3 probes)
LAB_SCENARIO = {
    "format": "memaudit-scenario/1",
    "id": "seed000-lab",
    "n_sessions": 3,
    "replies": False,
    "facts": [
        {"key": "handle", "type": "identity", "salience": 2, "versions": [
            _v(1, "s0x", "the user's handle is s0x and the timezone is America/Toronto", 0)]},
        {"key": "deploy_target", "type": "decision", "salience": 2, "versions": [
            _v(1, "cloudflare", "the deploy target we chose is Cloudflare Pages", 1)]},
        {"key": "python_installer", "type": "preference", "salience": 2, "versions": [
            _v(1, "pip", "the user prefers pip for Python installs", 2),
            _v(2, "uv", "the user prefers uv for Python installs", 1)]},
        {"key": "ci_budget", "type": "detail", "salience": 1, "versions": [
            _v(1, "15", "the CI budget is 15 minutes per run", 3)]},
        {"key": "release_procedure", "type": "procedure", "salience": 1, "versions": [
            _v(1, "build all", "release procedure: build all books, check links, then push to main", 4)]},
        {"key": "incident_cause", "type": "detail", "salience": 1, "versions": [
            _v(2, "bad symlink", "the 2026-03 incident was caused by a bad symlink in build.sh", 0)]},
        {"key": "books_tool", "type": "decision", "salience": 2, "versions": [
            _v(2, "mdBook", "we chose mdBook over Sphinx for the books", 2)]},
    ],
    "probes": [
        {"id": "handle", "session": 3, "fact": "handle", "literal": "what is the user's handle?"},
        {"id": "deploy_target", "session": 3, "fact": "deploy_target", "literal": "what is our deploy target?"},
        {"id": "python_installer", "session": 3, "fact": "python_installer",
         "literal": "which installer does the user prefer for Python?"},
        {"id": "ci_budget", "session": 3, "fact": "ci_budget", "literal": "what is the CI budget per run?"},
        {"id": "release_procedure", "session": 3, "fact": "release_procedure",
         "literal": "what is the release procedure for the books?"},
        {"id": "database", "session": 3, "fact": None, "literal": "which database did we choose?"},
    ],
    "meta": {"source": "the memory-eval-harness chapter (the memory eval harness), its lab"},
}


def lab_scenario() -> Scenario:
    """The memory-eval-harness chapter's plant as a :class:`Scenario`."""
    return scenario_from_dict(LAB_SCENARIO)


def run_lab(policies=LAB_POLICIES, *, min_overlap: int = 2, match: str = "substring", tokens: str = "len/4") -> dict:
    """Run the memory-eval-harness chapter's lab: its five conditions, mechanical reader, needles and len/4 tokens.

    Returns the run document (see :func:`memaudit.harness.trial.run`).
    """
    plant = Plant("seed000-lab", {}, lab_scenario())
    probe = ProbeSet(mechanical_reader(min_overlap=min_overlap), forms=("literal",))
    return run(plant, [parse_policy(p) for p in policies], probe, Score(match=match, tokens=tokens))


def lab_scorecard(doc: dict) -> list[dict]:
    """The memory-eval-harness chapter's scorecard: recall (current, or both values in the answer, as the memory-eval-harness chapter counts it)
    of the answerable probes, stale answers, abstentions on never-planted probes, tokens carried."""
    out = []
    for t in doc["trials"]:
        s = t["summary"]["literal"]
        out.append({"policy": t["disturb"]["name"], "recall": s["current"] + s["conflict"], "n_live": s["n_live"],
                    "stale": s["stale"], "abstained": s["abstained"], "n_absent": s["n_absent"],
                    "tokens": round(s["mean_tokens_injected"])})
    return out


def lab_by_type(doc: dict, policy: str = "compacted") -> dict:
    """What ``policy`` kept, by fact type: {type: (kept, total)} over the current facts."""
    for t in doc["trials"]:
        if t["disturb"]["name"] == policy:
            return {k: (v["kept"], v["total"]) for k, v in t["by_type"].items()}
    raise KeyError(policy)


def lab_lines(doc: dict) -> list[str]:
    """The scorecard and the by-type compaction table as text lines."""
    labels = [policy_label(t["disturb"]["name"], t["disturb"]["settings"]) for t in doc["trials"]]
    w = max([16] + [len(label) + 2 for label in labels])
    lines = ["=== The scorecard: five conditions, one probe set ===",
             f"{'condition':<{w}}{'recall':>8}{'stale':>7}{'abstain':>9}{'tokens':>8}", "-" * (w + 32)]
    for label, r in zip(labels, lab_scorecard(doc)):
        recall = f"{r['recall']}/{r['n_live']}"
        abstain = f"{r['abstained']}/{r['n_absent']}"
        lines.append(f"{label:<{w}}{recall:>8}{r['stale']:>7}{abstain:>9}{r['tokens']:>8}")
    lines.append("-" * (w + 32))
    if any(t["disturb"]["name"] == "compacted" for t in doc["trials"]):
        lines += ["", "=== What the compaction kept, by fact type ==="]
        for typ, (kept, total) in lab_by_type(doc).items():
            lines.append(f"  {typ:<11} {kept}/{total}  {'kept' if kept == total else 'LOST'}")
    return lines
