"""The LoCoMo importer on the real conversations, when a copy is present (skipped otherwise).

Every ``*.json`` in the data directory is read (either shape; any number of conversations).  The
expected counts are worked out here from the raw JSON with plain ``json`` and ``re``, independently
of the importer; the figures for conv-26, conv-30 and the ten-conversation totals were measured on
the data by hand and are checked whenever those conversations are present.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from memaudit.harness.policies import parse_policy
from memaudit.locomo.build import build_packages
from memaudit.locomo.importer import certify_package
from memaudit.locomo.policies import evidence_recall_table
from memaudit.locomo.reader import read_locomo
from memaudit.locomo.scenario import build_scenario
from memaudit.package import package_from_dict, package_to_dict, stream_cost


def _data_dir() -> Path | None:
    root = Path(__file__).resolve().parents[1]
    for d in (os.environ.get("MEMAUDIT_LOCOMO_DIR"), root.parent / "shared" / "data" / "locomo",
              root.parents[1] / "shared" / "data" / "locomo" if len(root.parents) > 1 else None):
        if d and Path(d).is_dir() and list(Path(d).glob("*.json")):
            return Path(d)
    return None


DATA = _data_dir()
FILES = sorted(DATA.glob("*.json")) if DATA else []
pytestmark = pytest.mark.skipif(not FILES, reason="no LoCoMo copy (set MEMAUDIT_LOCOMO_DIR)")

#: measured on the raw files by hand: sessions, turns, QA per category 1-5, observations, summaries
GOLDEN = {"conv-26": (19, 419, (32, 37, 13, 70, 47), 184, 19),
          "conv-30": (19, 369, (11, 26, 0, 44, 24), 169, 19)}
#: the whole dataset (the data README): ten conversations
TOTALS = (272, 5882, (282, 321, 96, 841, 446), 2541, 272)

_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)


def _raw_conversations():
    """(conversation id, file, session dict, observation dict, summary dict, qa list) straight from the JSON."""
    out = []
    for f in FILES:
        data = json.loads(f.read_text(encoding="utf-8"))
        if isinstance(data, list):
            for s in data:
                extra = {**s.get("observation", {}), **s.get("session_summary", {})}
                out.append((s["sample_id"], f, s["conversation"], extra, s["qa"]))
        else:
            out.append((f"conv-{f.stem}" if f.stem.isdigit() else f.stem, f, data, data, data["qa"]))
    return out


RAW = _raw_conversations() if FILES else []
IDS = sorted({r[0] for r in RAW})


def _expected(conv, extra, qa):
    numbers = sorted(int(k[8:]) for k in conv if re.fullmatch(r"session_\d+", k))
    order = {t["dia_id"]: i for i, t in enumerate(t for n in numbers for t in conv[f"session_{n}"])}
    obs_rows = [row for n in numbers for rows in extra.get(f"session_{n}_observation", {}).values() for row in rows]
    valid_obs = []
    for text, links in obs_rows:
        ids = [f"D{int(a)}:{int(b)}" for a, b in _ID.findall(json.dumps(links))]
        ids = [i for i in ids if i in order]
        if ids and str(text).strip():
            valid_obs.append(max(ids, key=order.__getitem__))
    unique_qa, seen = [], set()
    for q in qa:
        key = json.dumps(q, sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique_qa.append(q)
    evidence = {}
    for i, q in enumerate(unique_qa):
        found = _ID.findall(" ".join(map(str, q.get("evidence", []))))
        ids = list(dict.fromkeys(f"D{int(a)}:{int(b)}" for a, b in found))
        ids = [x for x in ids if x in order]
        if q["category"] != 5 and ids:
            evidence[i] = ids
    summaries = sum(1 for n in numbers if str(extra.get(f"session_{n}_summary") or "").strip())
    cats = Counter(q["category"] for q in unique_qa)
    raw_cats = Counter(q["category"] for q in qa)
    return {"sessions": len(numbers), "turns": len(order), "qa": tuple(cats[c] for c in range(1, 6)),
            "observations": len(valid_obs), "fact_turns": len(set(valid_obs)), "summaries": summaries,
            "answerable": len(evidence), "units": sum(len(v) for v in evidence.values()),
            "n_qa": len(unique_qa), "qa_rows": tuple(raw_cats[c] for c in range(1, 6)),
            "observation_rows": len(obs_rows)}


@pytest.fixture(scope="module")
def imported():
    """conversation id -> (file, conversation, {rule: package}) for the first file holding it."""
    out = {}
    for f in FILES:
        _, convs = read_locomo(f)
        for c in convs:
            out.setdefault(c.id, (f, c, build_packages(c)))
    return out


@pytest.mark.parametrize("raw", RAW, ids=[f"{r[0]}-{r[1].name}" for r in RAW])
def test_counts_match_an_independent_reading(raw, imported):
    cid, f, conv_data, extra, qa = raw
    exp = _expected(conv_data, extra, qa)
    _, shape_convs = read_locomo(f)
    conv = next(c for c in shape_convs if c.id == cid)
    pk = build_packages(conv)
    for pkg in pk.values():
        kinds = Counter(c.kind for c in pkg.candidates)
        assert len(pkg.experiences) == exp["sessions"] + exp["turns"] + exp["summaries"]
        assert kinds["raw"] == exp["turns"] + exp["sessions"]  # + one date header per session
        assert kinds["fact"] == exp["fact_turns"] and kinds["summary"] == exp["summaries"]
        assert len(pkg.units) == exp["units"] and len(pkg.queries) == exp["n_qa"]
        # sum of weights = answerable questions with evidence
        assert sum(u.weight for u in pkg.units) == pytest.approx(exp["answerable"], abs=1e-9)
        counts = pkg.meta["counts"]
        assert (counts["sessions"], counts["turns"], tuple(counts["qa_by_category"][str(c)] for c in range(1, 6)),
                counts["observations"], counts["summaries"]) == (exp["sessions"], exp["turns"], exp["qa"],
                                                                   exp["observations"], exp["summaries"])
        assert 0 < pkg.budget < 0.25 * stream_cost(pkg)
    if cid in GOLDEN:
        assert (exp["sessions"], exp["turns"], exp["qa_rows"], exp["observation_rows"], exp["summaries"]) == GOLDEN[cid]


def test_ten_conversation_totals_when_all_are_present():
    if len(IDS) < 10:
        pytest.skip(f"{len(IDS)} of the ten conversations present")
    per = {}
    for cid, f, conv, extra, qa in RAW:
        per.setdefault(cid, _expected(conv, extra, qa))
    # the data README counts the rows as given (before any repair)
    tot = (sum(e["sessions"] for e in per.values()), sum(e["turns"] for e in per.values()),
           tuple(sum(e["qa_rows"][k] for e in per.values()) for k in range(5)),
           sum(e["observation_rows"] for e in per.values()), sum(e["summaries"] for e in per.values()))
    assert tot == TOTALS


def test_shapes_give_identical_packages_apart_from_the_source():
    by_id: dict[str, list] = {}
    for f in FILES:
        shape, convs = read_locomo(f)
        for c in convs:
            by_id.setdefault(c.id, []).append((shape, c))
    pairs = [v for v in by_id.values() if len({s for s, _ in v}) > 1]
    if not pairs:
        pytest.skip("no conversation is present in both shapes")
    for group in pairs:
        dumps = []
        for _, c in group:
            ds = [package_to_dict(p) for p in build_packages(c).values()]
            for d in ds:
                d["meta"].pop("source")
            dumps.append(ds)
        assert all(d == dumps[0] for d in dumps[1:])


def test_every_package_validates_from_its_json(imported):
    for _, _, pk in imported.values():
        for pkg in pk.values():
            package_from_dict(json.loads(json.dumps(package_to_dict(pkg))))


@pytest.mark.slow
@pytest.mark.parametrize("cid", IDS)
def test_opt_is_certified_monotone_full_at_the_stream_budget_and_link_bounds_answer(cid, imported):
    _, conv, pk = imported[cid]
    fracs = (0.05, 0.1, 0.25, 0.5, 1.0)
    opts = {}
    for rule, pkg in pk.items():
        rows = certify_package(pkg, fracs)
        assert all(r["certified"] for r in rows)
        opts[rule] = [r["opt"] for r in rows]
        assert all(a <= b + 1e-9 for a, b in zip(opts[rule], opts[rule][1:])), opts[rule]
        assert opts[rule][-1] == pytest.approx(sum(u.weight for u in pkg.units), rel=1e-9)
    assert all(l >= a - 1e-9 for l, a in zip(opts["link"], opts["answer"])), opts


def test_certified_at_the_manifest_budgets_for_one_conversation(imported):
    cid = IDS[0]
    _, conv, pk = imported[cid]
    link = [r["opt"] for r in certify_package(pk["link"])]
    answer = [r["opt"] for r in certify_package(pk["answer"])]
    assert link == sorted(link) and answer == sorted(answer)
    assert all(l >= a - 1e-9 for l, a in zip(link, answer))


@pytest.mark.parametrize("cid", IDS[:2])
def test_full_transcript_recalls_every_evidence_turn_and_fresh_none(cid, imported):
    _, conv, _ = imported[cid]
    sc = build_scenario(conv)
    rows = {r["policy"]: r for r in evidence_recall_table(sc, [parse_policy("fresh"), parse_policy("full-transcript")],
                                                          tokens="len/4")}
    n = sum(1 for q in conv.qa if q.answerable)
    assert rows["full-transcript"]["n_evidence"] == n
    assert rows["full-transcript"]["evidence_recall"] == 1.0 and rows["fresh"]["evidence_recall"] == 0.0
