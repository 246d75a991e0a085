"""Tests of memaudit.certificate: reading a certificate (one reader, one model) and what verify refuses to trust."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from memaudit.certificate import build_certificate, load_certificate, verify_certificate
from memaudit.errors import CertificateError
from memaudit.package import load_package, loaded_sha256, package_sha256
from memaudit.solve import solve_package

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "packages_data" / "examples" / "quickstart.json"


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    path = tmp_path_factory.mktemp("cert") / "quickstart.json"
    shutil.copyfile(QUICKSTART, path)
    pkg = load_package(path)
    report = solve_package(pkg, budget=20.0, method="bnb", backend="highs")
    assert report.certified
    return path, build_certificate(report, path)


def _verify(solved, edit=None, backend="none"):
    path, cert = solved
    cert = copy.deepcopy(cert)
    if edit is not None:
        edit(cert)
    return verify_certificate(path, cert, backend=backend)


def _outcomes(report):
    return {c.name: c.outcome for c in report.checks}


def test_the_untampered_certificate_verifies(solved):
    report = _verify(solved)
    assert report.passed, report.to_dict()
    assert _outcomes(report)["recorded results"] == "pass"


def test_certificate_records_the_sha256_of_the_bytes_solved(solved):
    path, cert = solved
    assert cert["package"]["sha256"] == package_sha256(path) == loaded_sha256(load_package(path))


def _result(cert, method):
    return next(r for r in cert["results"] if r["method"] == method)


TAMPERINGS = {
    "backend-timed-out": (lambda c: _result(c, "milp-highs").update(status="timeout"),
                          "milp-highs recorded status 'timeout', not optimal"),
    "method-not-optimal": (lambda c: _result(c, "bnb").update(status="feasible"),
                           "bnb recorded status 'feasible', not optimal"),
    "backend-value-disagrees": (lambda c: _result(c, "milp-highs").update(value=9.5),
                                "milp-highs recorded value 9.5, not opt 8.5"),
    "status-not-certified": (lambda c: c.update(status="not certified"), "status is 'not certified'"),
    "status-missing": (lambda c: c.pop("status"), "status is null, not 'certified'"),
    "reasons-recorded": (lambda c: c.update(reasons=["values disagree"]), "reasons are recorded"),
    "backend-result-removed": (lambda c: c.update(results=[_result(c, "bnb")]), "no recorded result of 'milp-highs'"),
    "backend-none": (lambda c: c.update(backend=None), "must be two different solvers"),
    "same-solver-twice": (lambda c: c.update(backend="bnb"), "must be two different solvers"),
    "loose-rtol": (lambda c: c.update(rtol=0.5), "rtol 0.5 is looser than memaudit's 1e-06"),
    "backend-store-worse": (lambda c: _result(c, "milp-highs")["chosen"].pop(), "milp-highs's recorded store "
                                                                                 "evaluates to"),
    "backend-store-unknown-id": (lambda c: _result(c, "milp-highs")["chosen"].append("zz.nope"),
                                 "names 'zz.nope', not a candidate"),
    "method-store-not-the-store": (lambda c: _result(c, "bnb")["chosen"].pop(), "the store is not the store bnb "
                                                                                 "recorded"),
}


@pytest.mark.parametrize("name", list(TAMPERINGS))
def test_each_tampering_of_the_recorded_results_fails_verify(solved, name):
    edit, detail = TAMPERINGS[name]
    report = _verify(solved, edit)
    assert not report.passed
    check = next(c for c in report.checks if c.name == "recorded results")
    assert check.outcome == "fail" and detail in check.detail, check.detail
    # the other checks still pass: the contradiction is inside the certificate only
    assert {n for n, o in _outcomes(report).items() if o == "fail"} == {"recorded results"}


def test_recorded_results_are_not_checked_when_not_claimed(solved):
    report = _verify(solved, lambda c: c.update(certified=False, status="not certified", reasons=["x"]))
    assert "recorded results" not in _outcomes(report) and _outcomes(report)["claimed certified"] == "fail"


# -- reading: one line per malformed certificate ----------------------------------------

def _write(tmp_path, text):
    p = tmp_path / "cert.json"
    p.write_text(text)
    return p


@pytest.mark.parametrize("edit, match", [
    (lambda t: t.replace('"opt": 8.5', '"opt": 99, "opt": 8.5'), r"key 'opt' appears twice in one JSON object"),
    (lambda t: t.replace('"opt": 8.5', '"opt": ' + "9" * 400), r"opt must be a finite number; got an integer of "
                                                               r"400 digits$"),
    (lambda t: t.replace('"budget": 20.0', '"budget": ' + "9" * 400), r"budget must be a finite number >= 0"),
    (lambda t: t.replace('"opt": 8.5', '"opt": ' + "9" * 5000), r"an integer of 5,000 digits"),
    (lambda t: t.replace('"opt": 8.5', '"opt": NaN'), r"opt must be a finite number; got NaN$"),
    (lambda t: t.replace('"certified": true', '"certified": "yes"'), r"certified must be true or false; got 'yes'"),
    (lambda t: t.replace('"store": [', '"store": [1, '), r"store must be a list of candidate ids \(strings\)"),
    (lambda t: t.replace('"status": "optimal"', '"status": 7', 1), r"results\[0\]\.status must be a string; got 7"),
    (lambda t: t.replace('"sha256": "', '"sha256": 5, "x": "', 1), r"package\.sha256 must be a string; got 5"),
])
def test_malformed_certificates_are_one_line(solved, tmp_path, edit, match):
    text = edit(json.dumps(solved[1], indent=1).replace('"opt": 8.5,', '"opt": 8.5,'))
    p = _write(tmp_path, text)
    with pytest.raises(CertificateError, match=match) as info:
        load_certificate(p)
    assert "\n" not in str(info.value) and str(info.value).startswith(str(p))
    assert p.read_text() == text


def test_certificate_with_extra_fields_still_loads(solved, tmp_path):
    p = _write(tmp_path, json.dumps(dict(solved[1], store_rows=[], uncovered_units=[])))
    assert load_certificate(p)["opt"] == 8.5


def test_a_package_replaced_after_loading_keeps_the_hash_of_what_was_solved(tmp_path):
    path = tmp_path / "pkg.json"
    shutil.copyfile(QUICKSTART, path)
    solved_bytes = path.read_bytes()
    pkg = load_package(path)
    report = solve_package(pkg, budget=20.0, method="bnb", backend="none")
    data = json.loads(solved_bytes)
    data["units"][0]["weight"] = 5.0
    path.write_text(json.dumps(data))  # replaced mid-solve
    cert = build_certificate(report, path)
    assert cert["package"]["sha256"] == hashlib.sha256(solved_bytes).hexdigest() != package_sha256(path)
    assert _outcomes(verify_certificate(path, cert, backend="none"))["package sha256"] == "fail"
