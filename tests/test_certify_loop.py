"""Tests of the one fall-through loop over the certifying back-ends (memaudit_solvers.fallthrough), as
``certify()`` and ``memaudit solve`` use it: order, time boxes, the shared time limit, the retry of the
closest time-out, the attempt records, and certify()'s own options.  The runners here are stand-ins that
say what a back-end did, so every case is fast and does not depend on this machine's speed."""

import math
import time

import pytest

import memaudit_solvers.fallthrough as fallthrough
import memaudit_solvers.registry as registry
from memaudit.certification import attempt_text, certify_store
from memaudit_solvers.bnb import branch_and_bound
from memaudit_solvers.certify import certify
from memaudit_solvers.fallthrough import (FALL_THROUGH, Overran, certify_result, default_time_box, explain_attempt,
                                          run_backend)
from memaudit_solvers.problem import Problem
from memaudit_solvers.result import BackendUnavailable, Declined, SolverError, make_result

P = Problem.build([2, 3, 1], [0, 0, 1], [[1, 0], [0, 1], [0.5, 0.5]], [1.0, 2.0])
B = 4.0
METHOD = branch_and_bound(P, B)
OPT = METHOD.value   # 2.5


def timed_out(name, value_store, bound):
    return make_result(P, B, method=name, settings={}, chosen=value_store, status="timeout", bound=bound,
                       started=time.perf_counter())


class Script:
    """A runner that plays what each back-end does, in turn, and records every call's time limit."""

    def __init__(self, **plays):
        self.plays = {name: list(v) if isinstance(v, list) else [v] for name, v in plays.items()}
        self.calls = []

    def __call__(self, name, problem, budget, limit, hint):
        self.calls.append((name, limit, None if hint is None else list(hint)))
        play = self.plays[name].pop(0) if len(self.plays[name]) > 1 else self.plays[name][0]
        if isinstance(play, BaseException):
            raise play
        if play == "proves":
            return run_backend("brute", problem, budget)
        if callable(play):
            return play(limit)
        return play


def loop(script, backends, **kw):
    return certify_result(P, B, METHOD, backends, runner=script, **kw)


def test_a_decline_a_failure_and_an_overrun_fall_through_to_the_back_end_that_proves():
    script = Script(a=Declined("not integers"), b=SolverError("model status Infeasible"),
                    c=Overran("c did not stop"), d="proves")
    out = loop(script, ["a", "b", "c", "d"], time_box=3.0)
    assert out.backend == "d" and out.certification.certified and out.backend_result.value == OPT
    assert [(a.backend, a.outcome, a.counted) for a in out.attempts] == [
        ("a", "declined", False), ("b", "failed", False), ("c", "overran", False), ("d", "proved", True)]
    assert [c[1] for c in script.calls] == [3.0] * 4                    # every attempt in its box
    assert all(c[2] == METHOD.chosen.tolist() for c in script.calls)   # warm-started from the method's store
    assert [a.line() for a in out.attempts[:3]] == ["a declined: not integers", "b failed: model status Infeasible",
                                                    "c did not stop"]
    assert isinstance(out.attempts[0].error, Declined) and out.declined == ""


def wrong_proof(name):
    """A back-end that claims OPT = 1.5 for the store [2]: the method's store (2.5) refutes it."""
    return make_result(P, B, method=name, settings={}, chosen=[2], status="optimal", bound=None,
                       started=time.perf_counter())


def test_a_proof_the_methods_store_refutes_is_a_failure_and_the_next_back_end_runs():
    out = loop(Script(a=wrong_proof("a"), b="proves"), ["a", "b"])
    assert out.backend == "b" and out.certification.certified
    assert [(a.backend, a.outcome, a.counted) for a in out.attempts] == [("a", "failed", False), ("b", "proved", True)]
    assert out.attempts[0].line() == ("a failed: a's proof is refuted: bnb's store, feasible on the exact numbers, "
                                      "is worth 2.5, more than the bound a proves (1.5)")
    assert isinstance(out.attempts[0].error, SolverError)


def test_a_refuted_proof_left_alone_fails_the_certification_and_says_which_proof_is_wrong():
    out = loop(Script(a=wrong_proof("a")), ["a"])
    assert out.backend == "a" and not out.certification.certified
    assert out.certification.reasons == ["values disagree: bnb=2.5, a=1.5",
                                         "a's proof is refuted: bnb's store, feasible on the exact numbers, is worth "
                                         "2.5, more than the bound a proves (1.5)"]


def test_a_method_proof_the_back_ends_store_refutes_is_named():
    out = certify_result(P, B, wrong_proof("bnb"), ["a"], runner=Script(a="proves"))
    assert not out.certification.certified and out.attempts[0].outcome == "proved"
    assert out.certification.reasons[-1].startswith("bnb's proof is refuted: brute's store")


def test_without_warm_start_no_hint_reaches_the_back_ends():
    script = Script(a="proves")
    loop(script, ["a"], warm_start=False)
    assert script.calls == [("a", None, None)]


def test_an_outcome_outside_fall_through_ends_the_loop():
    script = Script(a=timed_out("a", [2], 3.0), b="proves")
    out = loop(script, ["a", "b"], time_box=2.0, fall_through=frozenset({"declined", "failed", "unavailable"}))
    assert out.backend == "a" and not out.certification.certified and [c[0] for c in script.calls] == ["a"]
    assert out.attempts[0].line().startswith("a timed out after ") and "(time box 2 s): store 1.5, bound 3 (gap 50 %)" in \
        out.attempts[0].line()


def test_a_decline_ends_the_loop_when_the_caller_says_so():
    script = Script(a=Declined("not integers"), b="proves")
    out = loop(script, ["a", "b"], first_decline_final=True)
    assert out.backend == "a" and out.backend_result is None and out.declined == "a declined: not integers"
    out = loop(script, ["a", "b"], fall_through=FALL_THROUGH - {"declined"})
    assert out.declined and [a.backend for a in out.attempts] == ["a"]


def test_the_shared_time_limit_shortens_the_boxes_and_stops_the_loop():
    def slow(limit):
        time.sleep(0.3)
        return timed_out("x", [2], 3.0)

    script = Script(a=slow, b=slow, c="proves")
    out = loop(script, ["a", "b", "c"], time_box=5.0, time_limit=0.5)
    limits = [c[1] for c in script.calls]
    assert [c[0] for c in script.calls] == ["a", "b"] and limits[0] <= 0.5 and limits[1] < 0.25
    assert out.backend in ("a", "b") and not out.certification.certified


def test_when_every_box_times_out_the_closest_runs_again_with_the_time_left():
    far, near = timed_out("a", [2], 3.0), timed_out("b", [1, 2], 2.6)
    script = Script(a=far, b=[near, "proves"])
    out = loop(script, ["a", "b"], time_box=1.0, time_limit=30.0, retry=True)
    assert [c[0] for c in script.calls] == ["a", "b", "b"] and 25 < script.calls[2][1] <= 30
    first, second, again = out.attempts
    assert (again.backend, again.outcome, again.retry, again.counted) == ("b", "proved", True, True)
    assert out.certification.certified and not first.counted and not second.counted
    # no retry asked for: the time-out that left the smallest gap counts, not the last one run
    script = Script(a=near, b=far)
    out = loop(script, ["a", "b"], time_box=1.0)
    assert out.backend == "a" and [a.counted for a in out.attempts] == [True, False]
    assert "did not prove optimality" in " ".join(out.certification.reasons)


def test_an_overrun_is_retried_when_no_time_out_left_a_result():
    script = Script(a=[Overran("a did not stop"), "proves"])
    out = loop(script, ["a"], time_box=1.0, time_limit=20.0, retry=True)
    assert [a.outcome for a in out.attempts] == ["overran", "proved"] and out.certification.certified


def test_a_back_end_that_is_not_installed_is_tried_in_this_process(monkeypatch):
    def missing(problem, budget, **settings):
        raise BackendUnavailable("milp-scip needs pyscipopt, which is not installed: pip install pyscipopt")

    monkeypatch.setattr(fallthrough, "installed_backends", lambda: {})
    monkeypatch.setitem(registry.METHODS, "milp-scip", missing)
    script = Script(b="proves")
    out = loop(script, ["milp-scip", "b"], time_box=1.0)
    assert [c[0] for c in script.calls] == ["b"]      # the missing one never reached the runner
    assert out.attempts[0].outcome == "unavailable" and "pip install pyscipopt" in out.attempts[0].line()
    with pytest.raises(BackendUnavailable, match="pip install pyscipopt"):
        certify(P, B, backend="milp-scip")
    c = certify(P, B, backend=("milp-scip", "brute"))     # in a sequence the next one runs, as in solve
    assert c.certified and c.attempts == ["milp-scip is not installed (milp-scip needs pyscipopt, which is not "
                                          "installed: pip install pyscipopt)"]


def test_the_report_texts_are_the_callers(monkeypatch):
    def declines(problem, budget, **settings):
        raise Declined("the data do not scale to integers")

    monkeypatch.setitem(registry.METHODS, "cpsat", declines)
    assert explain_attempt("milp-cbc", "failed", SolverError("x")) == "milp-cbc failed: x"
    assert attempt_text("milp-cbc", "failed", SolverError("x")) == \
        "milp-cbc failed on this package (a solver failure, not bad input): x"
    out = certify_store(P, B, METHOD, ["cpsat", "brute"], time_box=None, time_limit=None, rtol=1e-6)
    assert out.backend == "brute" and out.certification.certified
    assert out.attempts[0].line() == ("cpsat declined this package: the data do not scale to integers; try another "
                                      "back-end (lattice, milp-cbc, milp-highs, milp-scip)")
    c = certify(P, B, backend=("cpsat", "brute"))                   # the library's own text, same loop
    assert c.certified and c.attempts == ["cpsat declined: the data do not scale to integers"]


# -- certify(): one loop, the library's options ------------------------------------------------

@pytest.fixture
def broken(monkeypatch):
    def install(name, fn):
        monkeypatch.setitem(registry.EXACT_METHODS, name, fn)
        monkeypatch.setitem(registry.METHODS, name, fn)
    return install


def test_one_named_back_end_propagates_its_refusal_and_a_sequence_falls_through(broken):
    def declines(problem, budget, **settings):
        raise Declined("the data do not scale to integers")

    broken("cpsat", declines)
    with pytest.raises(Declined, match="scale to integers"):
        certify(P, B, backend="cpsat")
    c = certify(P, B, backend=("cpsat", "brute"))
    assert c.certified and c.attempts == ["cpsat declined: the data do not scale to integers"]
    c = certify(P, B, backend=("cpsat",))
    assert not c.certified and c.results == (c.results[0],)
    assert c.reasons == ["no back-end could check the result: cpsat declined: the data do not scale to integers"]


def test_a_back_end_that_stops_without_a_proof_hands_over_in_a_sequence(broken):
    def feasible_only(problem, budget, **settings):
        return make_result(problem, budget, method="milp-highs", settings={}, chosen=[2], status="feasible",
                           bound=3.0, started=time.perf_counter())

    broken("milp-highs", feasible_only)
    c = certify(P, B, backend=("milp-highs", "brute"))
    assert c.certified and c.results[1].method == "brute"
    assert c.attempts[0].startswith("milp-highs stopped without a proof after ")
    c = certify(P, B, backend="milp-highs")               # alone: its result is compared, and not certified
    assert not c.certified and "milp-highs did not prove optimality (status feasible)" in c.reasons


def test_certify_gives_each_back_end_its_time_box():
    c = certify(P, B, backend=("milp-highs",), time_box=7.5, time_limit=100)
    assert c.certified and c.results[1].settings["time_limit"] == 7.5
    c = certify(P, B, backend=("milp-highs",), time_box="default")
    assert c.results[1].settings["time_limit"] == default_time_box(c.results[0].wall_time) == 10.0
    c = certify(P, B, backend="milp-highs", time_limit=9.0)          # no box: the time limit, as before
    assert c.results[1].settings["time_limit"] == 9.0 and c.results[0].settings["time_limit"] == 9.0
    assert c.results[1].settings["threads"] == 1     # every declared setting is stamped, as in memaudit solve


@pytest.mark.parametrize("box", [0, -1, math.inf, math.nan, "auto", True])
def test_certify_refuses_a_bad_time_box(box):
    with pytest.raises(ValueError, match="time_box must be None, 'default' or a number of seconds > 0"):
        certify(P, B, time_box=box)


@pytest.mark.parametrize("limit", [0, -1, math.nan, "5"])
def test_certify_refuses_a_bad_backend_time_limit(limit):
    with pytest.raises(ValueError, match=r"^certify: setting 'backend_time_limit' must be none or a number > 0; got "):
        certify(P, B, time_box=1.0, backend_time_limit=limit)


def test_certify_retries_the_closest_time_out_with_the_time_left(broken):
    """A stand-in for CBC that times out under a 5 s limit and proves with more: boxed at 1 s with 30 s
    to share, the retry certifies, as ``memaudit solve --backend cbc,cbc --backend-time-box 1`` does."""
    from memaudit_solvers.milp import milp_cbc

    def needs_five_seconds(problem, budget, *, time_limit=None, hint=None, **settings):
        if time_limit is not None and time_limit < 5:
            return make_result(problem, budget, method="milp-cbc", settings={}, chosen=[], status="timeout",
                               bound=math.inf, started=time.perf_counter())
        return milp_cbc(problem, budget, time_limit=time_limit, hint=hint, **settings)

    broken("milp-cbc", needs_five_seconds)
    c = certify(P, B, backend=("milp-cbc",), time_box=1.0, backend_time_limit=30)
    assert c.certified and len(c.attempts) == 1 and c.attempts[0].startswith("milp-cbc timed out after ")
    assert "(time box 1 s)" in c.attempts[0] and 25 < c.results[1].settings["time_limit"] <= 30
    c = certify(P, B, backend=("milp-cbc",), time_box=1.0, backend_time_limit=30, retry=False)
    assert not c.certified and c.results[1].status == "timeout"
    c = certify(P, B, backend="milp-cbc", time_limit=1.0)           # no box: no retry, as before
    assert not c.certified and c.attempts == []
