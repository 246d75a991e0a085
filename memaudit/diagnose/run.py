"""The diagnose runner: per policy and checkpoint, the write-time store against the certified OPT;
per probe, what was injected and answered, and where a wrong answer failed.

Attribution of one probe (one form), in this order:

* ``ok``: the answer is right (a live fact: ``current``; a deleted fact: ``clean``; a fact never
  planted: ``abstained``, or ``unscored`` with the classifier);
* ``write``: the evidence was never stored: the policy's store at the checkpoint does not fully
  cover every unit the probe requires;
* ``retrieval``: stored but not injected cleanly: the injected items do not cover every
  evidence unit, or the injected context holds a superseded or deleted value (its outcome is
  not ``current`` / ``clean``; not tested for a value stated by reference to an exchange, as
  LoCoMo's annotated answers are, which need not occur in the text: there the evidence units
  alone decide);
* ``reader``: the evidence was injected cleanly and the answer is still wrong.

The optimum's view (``opt_holds``): whether the certified OPT store of the checkpoint's package at
the same budget fully covers the probe's evidence units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import __version__
from ..harness.match import contains_value
from ..harness.policies import BM25Index, Policy, StoredItem, _Memory, parse_policy, policy_label
from ..harness.readers import Judge, Reader, mechanical_reader
from ..harness.trial import Plant, ProbeSet, Score, Trial, classify, probe_kind
from ..package import resolve_budget
from ..solve import fully_covered, solve_package
from memaudit_solvers.objective import evaluate, infeasibility, is_feasible, total_cost
from memaudit_solvers.settings import Setting, parse_spec, setting_error, validate_settings
from .compile import Checkpoint, CompiledScenario
from .errors import DiagnoseError

__all__ = ["DIAGNOSE_FORMAT", "ATTRIBUTIONS", "RIGHT_OUTCOMES", "OPT_SETTINGS", "OptSpec", "parse_diagnose_policy", "opt_policy", "diagnose",
           "cut_in_order"]

#: the ``format`` value of a diagnose document
DIAGNOSE_FORMAT = "memaudit-diagnose/1"

#: where a probe's answer went wrong (or ``ok``), in the order they are tested after ``ok``
ATTRIBUTIONS = ("write", "retrieval", "reader", "ok")

#: outcomes of a right answer: a live fact's current value, a deleted fact kept clean, an abstention
#: on a fact never planted (``unscored``: the classifier, which cannot abstain, on such a probe)
RIGHT_OUTCOMES = ("current", "clean", "abstained", "unscored")

#: retrievers of the ``opt`` policy
OPT_RETRIEVERS = ("all", "bm25")

#: the ``opt`` policy's settings, declared as the harness policies' are (``POLICY_SETTINGS``) and read by the
#: same ``NAME:key=value`` parser, so a bad value is refused with the one template
OPT_SETTINGS: tuple[Setting, ...] = (
    Setting("retriever", str, "all", "What reaches the reader: all of the OPT store, or BM25's top k of it.",
            choices=OPT_RETRIEVERS),
    Setting("k", int, 5, "How many items BM25 returns (with retriever=bm25).", low=0))
_OPT = {s.name: s for s in OPT_SETTINGS}


@dataclass(frozen=True)
class OptSpec:
    """``opt[:retriever=all|bm25,k=K]``: the certified OPT store, retrieved from by ``retriever``."""

    retriever: str = _OPT["retriever"].default
    k: int = _OPT["k"].default

    @property
    def settings(self) -> dict:
        s = {"retriever": self.retriever}
        if self.retriever == "bm25":
            s.update(k=self.k, bm25=BM25Index.SETTINGS)
        return s

    @property
    def name(self) -> str:
        """The row name: ``opt`` (all injected), ``opt+bm25``, or ``opt+bm25[k=K]`` for another k, so
        the OPT store under several retrievers can sit in one run.

        Examples
        --------
        >>> OptSpec().name, OptSpec("bm25").name, OptSpec("bm25", 3).name
        ('opt', 'opt+bm25', 'opt+bm25[k=3]')
        """
        if self.retriever == "all":
            return "opt"
        return "opt+bm25" if self.k == OptSpec.k else f"opt+bm25[k={self.k}]"

    @property
    def label(self) -> str:
        return "OPT store, all injected" if self.retriever == "all" else f"OPT store, BM25 top-{self.k}"


def parse_diagnose_policy(spec: str):
    """A harness :class:`Policy` (``parse_policy``) or, for ``opt[:...]``, an :class:`OptSpec` whose
    settings are read and checked by their declarations (:data:`OPT_SETTINGS`).

    Examples
    --------
    >>> parse_diagnose_policy("opt:retriever=bm25,k=3")
    OptSpec(retriever='bm25', k=3)
    >>> parse_diagnose_policy("opt:retriever=bm25,k=x")
    Traceback (most recent call last):
    ...
    memaudit.diagnose.errors.DiagnoseError: policy 'opt': setting 'k' must be an integer >= 0; got 'x'
    >>> parse_diagnose_policy("opt:k=3")
    Traceback (most recent call last):
    ...
    memaudit.diagnose.errors.DiagnoseError: policy 'opt': setting 'k' must be given with retriever=bm25; got 3
    """
    if not isinstance(spec, str):
        raise DiagnoseError(f"a policy must be given as a string NAME[:key=value,...]; got {spec!r}")
    if spec.strip().partition(":")[0] != "opt":
        return parse_policy(spec)
    owner = "policy 'opt'"
    try:
        _, given = parse_spec(spec, lambda name: owner, lambda name: OPT_SETTINGS)
        given = validate_settings(owner, OPT_SETTINGS, given)
        if "k" in given and given.get("retriever") != "bm25":
            raise setting_error(owner, "k", "given with retriever=bm25", given["k"])
    except ValueError as exc:
        raise DiagnoseError(str(exc)) from None
    return OptSpec(**given)


class _OptMemory(_Memory):
    """The certified OPT store of each checkpoint, as items that name their candidates."""

    def __init__(self, scenario, count, stores: dict[int, list[StoredItem]], spec: OptSpec):
        super().__init__(scenario, count)
        self.stores, self.spec = stores, spec

    def items(self, session):
        return list(self.stores[session])

    def inject_items(self, session, question):
        items = self.stores[session]
        if self.spec.retriever == "all":
            return list(items)
        index = self._cached(("index", session), lambda: BM25Index([it.text for it in items]))
        return [items[i] for i in index.top(question, self.spec.k)]


def opt_policy(spec: OptSpec, stores: dict[int, list[StoredItem]]) -> Policy:
    """The ``opt`` policy: writes the given OPT stores (checkpoint -> items) and retrieves by ``spec``."""
    return Policy(spec.name, spec.settings, lambda sc, count: _OptMemory(sc, count, stores, spec))


def cut_in_order(problem, order: list[int], budget: float) -> list[int]:
    """The store cut to the budget in its own order: candidates are taken in ``order`` while the
    store stays feasible; a candidate whose group is already held is skipped, and the cut stops at
    the first candidate that does not fit (the salience-pruned rule of ``memaudit audit``)."""
    taken, groups = [], set()
    for i in order:
        g = int(problem.groups[i])
        if g in groups:
            continue
        if not is_feasible(problem, taken + [i], budget):
            break
        taken.append(i)
        groups.add(g)
    return taken


def _not_a_store(problem, cp: Checkpoint, cids: list[str], order: list[int]) -> str:
    """Why the mapped items are not a store of the package (a candidate or an experience held twice), or ""."""
    if len(order) < len(cids):
        return f"{len(cids) - len(order)} item(s) repeat a candidate the store already holds"
    groups = [int(problem.groups[i]) for i in order]
    if len(set(groups)) < len(groups):
        seen, twice = set(), []
        for g in groups:
            if g in seen and g not in twice:
                twice.append(g)
            seen.add(g)
        eid = cp.package.experiences[twice[0]].id
        return (f"{len(twice)} experience(s) stored twice, e.g. {eid} (a store holds one candidate per "
                "experience)")
    return ""


def _ratio(value: float, opt: float) -> float:
    r = value / opt
    return 1.0 if 1.0 < r <= 1.0 + 1e-9 else r


def _held(problem, compiled, chosen, unit_ids) -> dict[str, bool]:
    covered = fully_covered(problem, chosen)
    pos = {u: r for r, u in enumerate(compiled.unit_ids)}
    return {u: bool(covered[pos[u]]) for u in unit_ids}


def _leaks(scenario, session: int, texts: list[str], match: str) -> list[str]:
    """Keys of facts deleted by ``session`` whose stated value some text still holds."""
    out = []
    joined = "\n".join(texts)
    for f in scenario.facts:
        if f.deleted_by(session) and any(contains_value(joined, v.value, match) for v in f.versions):
            out.append(f.key)
    return out


def _budget_of(cp: Checkpoint, budget, budget_frac) -> float:
    if budget is None and budget_frac is None:
        budget_frac = 1.0
    return resolve_budget(cp.package, budget=budget, budget_frac=budget_frac)


def diagnose(compiled: CompiledScenario, policies, *, budget=None, budget_frac=None, reader: Reader | None = None,
             judge: Judge | None = None, forms=("literal", "paraphrase"), match: str = "tokens",
             tokens: str = "o200k_base", backend: str | None = "milp-highs", plant: Plant | None = None,
             progress=None) -> dict:
    """Diagnose ``policies`` on ``compiled``: the diagnose document (``memaudit-diagnose/1``).

    Parameters
    ----------
    compiled : CompiledScenario
    policies : list
        Harness policy specs (``"profile"``, ``"bm25-transcript:k=3"``), :class:`Policy` objects,
        ``"opt[:retriever=all|bm25,k=K]"`` or :class:`OptSpec`.
    budget, budget_frac : float, optional
        The store budget B of every checkpoint: ``budget`` (tokens) or ``budget_frac`` times the
        checkpoint's stream cost; neither: the whole stream (``budget_frac=1``).
    reader, judge
        Who answers the probes (default: the mechanical reader) and grades free text (optional).
    backend : str or None
        Certifying back-end of OPT (:func:`memaudit.solve.solve_package`).

    Raises
    ------
    DiagnoseError
        A stored item maps to no candidate, two policies share a name, no policy given.
    """
    say = progress or (lambda line: None)
    sc = compiled.scenario
    specs = [parse_diagnose_policy(p) if isinstance(p, str) else p for p in policies]
    if not specs:
        raise DiagnoseError("no policy given; name at least one (e.g. --policy profile --policy opt)")
    names = [s.name for s in specs]
    for i, n in enumerate(names):
        if n in names[:i]:
            raise DiagnoseError(f"policy {n!r} is given twice; a diagnose run holds one row per policy name")
    reader = reader or mechanical_reader()
    score = Score(match=match, tokens=tokens)
    probe = ProbeSet(reader, forms=tuple(forms), judge=judge)
    plant = plant or Plant("scenario", {}, sc)

    # OPT at every checkpoint, certified through the one solve path
    opt_info = {}
    for s, cp in compiled.checkpoints.items():
        b = _budget_of(cp, budget, budget_frac)
        say(f"checkpoint {s}: solving OPT at budget {b:g}...")
        report = solve_package(cp.package, budget=b, backend=backend)
        if report.value <= 0:
            raise DiagnoseError(f"OPT of checkpoint {s} ({cp.package.id!r}) is 0 at budget {b:g}: no store can cover "
                                "any evidence unit, so there is nothing to score against; raise the budget")
        problem = report.compiled.problem
        ids = report.compiled.ids(report.result.chosen)
        cand = {c.id: c for c in cp.package.candidates}
        pos = {eid: n for n, eid in enumerate(cp.experience_ids)}
        items = [StoredItem("candidate", pos[cand[c].experience], cand[c].text, ref=c) for c in ids]
        opt_info[s] = {"budget": b, "report": report, "problem": problem, "chosen": report.result.chosen,
                       "items": items}

    checkpoints_out = [{"session": s, "package_id": cp.package.id, "n_experiences": len(cp.package.experiences),
                        "n_candidates": len(cp.package.candidates), "n_units": len(cp.package.units),
                        "n_queries": len(cp.package.queries), "stream_cost": cp.stream_cost,
                        "budget": opt_info[s]["budget"], "opt": opt_info[s]["report"].value,
                        "opt_status": opt_info[s]["report"].status,
                        "opt_store": [it.ref for it in opt_info[s]["items"]]}
                       for s, cp in compiled.checkpoints.items()]

    policy_rows, store_rows, probe_rows = [], [], []
    for spec, name in zip(specs, names):
        say(f"policy {name}...")
        if isinstance(spec, OptSpec):
            pol = opt_policy(spec, {s: info["items"] for s, info in opt_info.items()})
            label = spec.label
        else:
            pol = spec
            label = policy_label(pol.name, pol.settings)
        trial = Trial(plant, pol, probe, score).run()
        memory = pol.build(sc, score.count)
        stores = {}
        for s, cp in compiled.checkpoints.items():
            info = opt_info[s]
            problem, rc = info["problem"], info["report"].compiled
            items = memory.items(s)
            cids = [cp.candidate_of(it, policy=name) for it in items]
            order = list(dict.fromkeys(int(i) for i in rc.indices(cids))) if cids else []
            idx = np.array(order, dtype=np.int64)
            all_idx = rc.indices(cids) if cids else np.array([], dtype=np.int64)
            cost = total_cost(problem, all_idx)  # every item: a candidate held twice is paid twice
            value = evaluate(problem, idx)
            why = _not_a_store(problem, cp, cids, order) or infeasibility(problem, idx, info["budget"])
            opt = info["report"].value
            cut = cut_in_order(problem, order, info["budget"])
            required = sorted({u for units in cp.probe_units.values() for u in units})
            held = _held(problem, rc, idx, required)
            texts = [it.text for it in items]
            stores[s] = (problem, rc, held)
            store_rows.append({
                "policy": name, "session": s, "n_items": len(items), "store_cost": cost, "budget": info["budget"],
                "over_budget": bool(why), "why_not_feasible": why, "value": value, "opt": opt,
                "write_ratio": 0.0 if why else _ratio(value, opt),
                "write_ratio_cut": _ratio(evaluate(problem, cut), opt), "n_items_cut": len(cut),
                "stored_tokens": score.count("\n".join(texts)),
                "units_kept": [u for u in required if held[u]], "n_units": len(required),
                "leaks_held": _leaks(sc, s, texts, match)})
        opt_held = {s: _held(info["problem"], info["report"].compiled, info["chosen"],
                             sorted({u for us in compiled.at(s).probe_units.values() for u in us}))
                    for s, info in opt_info.items()}
        counts = dict.fromkeys(ATTRIBUTIONS, 0)
        probes = {p.id: p for p in sc.probes}
        for r in trial["rows"]:
            p = probes[r["probe"]]
            cp = compiled.at(p.session)
            problem, rc, held = stores[p.session]
            units = cp.probe_units[p.id]
            inj = memory.inject_items(p.session, r["question"])
            inj_ids = [cp.candidate_of(it, policy=name) for it in inj]
            inj_held = _held(problem, rc, rc.indices(inj_ids) if inj_ids else np.array([], dtype=np.int64), units)
            kind = probe_kind(sc, p)
            context = "\n".join(it.text for it in inj)
            injected_outcome = classify(sc.fact(p.fact), p.session, context, match) if p.fact is not None else None
            kept = all(held[u] for u in units)
            # a value stated by reference (LoCoMo's annotated answers) need not occur in its turn, so the
            # injected context's outcome says nothing there: retrieval is the evidence units alone
            by_reference = p.fact is not None and any(v.exchange is not None for v in sc.fact(p.fact).versions)
            injected = all(inj_held[u] for u in units)
            if r["outcome"] in RIGHT_OUTCOMES:
                where = "ok"
            elif not kept:
                where = "write"
            elif not injected or (injected_outcome is not None and not by_reference
                                  and injected_outcome not in RIGHT_OUTCOMES):
                where = "retrieval"
            else:
                where = "reader"
            counts[where] += 1
            n_units = len(units)
            probe_rows.append({
                "policy": name, "probe": p.id, "session": p.session, "fact": p.fact, "kind": kind, "form": r["form"],
                "evidence": list(units),
                "evidence_kept": sum(held[u] for u in units) / n_units if n_units else None,
                "evidence_injected": sum(inj_held[u] for u in units) / n_units if n_units else None,
                "tokens_injected": r["tokens_injected"], "n_injected": len(inj),
                "injected_outcome": injected_outcome, "outcome": r["outcome"], "answer": r["answer"],
                "attribution": where, "opt_holds": all(opt_held[p.session][u] for u in units)})
        mine = [x for x in store_rows if x["policy"] == name]
        rows = [x for x in probe_rows if x["policy"] == name]
        with_units = [x for x in rows if x["evidence"]]
        policy_rows.append({
            "policy": name, "label": label, "disturb": pol.spec(),
            "write_ratio": sum(x["write_ratio"] for x in mine) / len(mine),
            "write_ratio_cut": sum(x["write_ratio_cut"] for x in mine) / len(mine),
            "n_probes": len(rows), "attribution": counts,
            "evidence_kept": sum(x["evidence_kept"] == 1 for x in with_units),
            "evidence_injected": sum(x["evidence_injected"] == 1 for x in with_units),
            "opt_holds": sum(bool(x["opt_holds"]) for x in with_units), "n_with_evidence": len(with_units),
            "mean_tokens_injected": sum(x["tokens_injected"] for x in rows) / len(rows) if rows else 0.0,
            "stored_tokens": mine[-1]["stored_tokens"], "store_cost": mine[-1]["store_cost"],
            "over_budget_at": [x["session"] for x in mine if x["over_budget"]],
            "leaks_held": mine[-1]["leaks_held"]})
    first = next(iter(opt_info.values()))
    cost_model = next(iter(compiled.checkpoints.values())).package.cost_model
    return {"format": DIAGNOSE_FORMAT, "memaudit_version": __version__, "plant": plant.spec(),
            "probe": probe.spec(), "score": score.spec(),
            "budget": {"budget": budget, "budget_frac": 1.0 if budget is None and budget_frac is None else budget_frac,
                       "cost_model": cost_model},
            "kinds": ["raw", "statement", *compiled.kinds],
            "certify": {"method": "bnb", "backend": first["report"].backend},
            "checkpoints": checkpoints_out, "policies": policy_rows, "stores": store_rows, "rows": probe_rows}
