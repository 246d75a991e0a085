"""The memaudit command line through click's CliRunner (and one real subprocess run)."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memaudit.cli import EXIT_BAD_INPUT, EXIT_NOT_CERTIFIED, EXIT_OK, EXIT_USAGE, main
from memaudit_solvers.registry import method_names

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "packages_data" / "examples" / "quickstart.json"


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def quickstart():
    return json.loads(QUICKSTART.read_text(encoding="utf-8"))


@pytest.fixture
def pkg_path(tmp_path):
    """A private copy of the quickstart package."""
    path = tmp_path / "quickstart.json"
    shutil.copyfile(QUICKSTART, path)
    return path


def run(runner, *args):
    return runner.invoke(main, [str(a) for a in args])


def assert_one_line_error(result, match: str | None = None):
    assert result.exit_code == EXIT_BAD_INPUT, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    if match:
        assert match in lines[0], lines[0]
    # a MemauditError ends in SystemExit(1), never an escaped exception
    assert isinstance(result.exception, SystemExit)


# -- solve ----------------------------------------------------------------------

def test_solve_human_output(runner, pkg_path):
    result = run(runner, "solve", pkg_path, "--budget-frac", "0.25")
    assert result.exit_code == EXIT_OK, result.output
    out = result.stdout
    assert "package quickstart" in out
    assert "budget 30.25 words = 25% of the stream cost (121 words)" in out
    assert "OPT = 10\n" in out
    assert "status: certified" in out
    assert "certified by bnb + milp-highs (values agree within 1e-06)" in out
    for cid in ("e01.fact", "e03.fact", "e05.fact", "e06.fact", "e09.update", "e10.fact"):
        assert cid in out
    assert "installer.current, installer.old_invalid" in out
    assert "units left uncovered: 1 of 8" in out
    assert "incident.detail" in out
    assert "cost 30 / budget 30.25 words" in out
    assert "times: bnb" in out and "milp-highs" in out
    assert result.stderr == ""  # no progress lines when stderr is not a terminal


def test_solve_json_and_certificate_file(runner, pkg_path, tmp_path):
    cert_path = tmp_path / "cert.json"
    before = pkg_path.read_bytes()
    result = run(runner, "solve", pkg_path, "--budget-frac", "0.25", "--json", "-o", cert_path, "--verbose")
    assert result.exit_code == EXIT_OK, result.output
    doc = json.loads(result.stdout)  # stdout holds exactly one JSON document
    assert "solving with bnb..." in result.stderr and "certifying with milp-highs..." in result.stderr
    assert doc["format"] == "memaudit-certificate/1"
    assert doc["certified"] is True and doc["reasons"] == []
    assert doc["opt"] == 10.0 and doc["budget"] == 30.25 and doc["budget_frac"] == 0.25
    assert doc["rtol"] == 1e-6
    assert doc["package"]["id"] == "quickstart" and doc["package"]["path"] == str(pkg_path)
    assert sorted(doc["store"]) == ["e01.fact", "e03.fact", "e05.fact", "e06.fact", "e09.update", "e10.fact"]
    assert [r["method"] for r in doc["results"]] == ["bnb", "milp-highs"]
    assert all(r["status"] == "optimal" and r["value"] == 10.0 for r in doc["results"])
    assert doc["results"][1]["gap_settings"] == {"gap_rel": 0.0, "gap_abs": 0.0}
    assert "highspy" in doc["backends"]["milp-highs"]["version"]
    assert doc["created"].endswith("Z")
    assert [row["experience"] for row in doc["store_rows"]] == ["e01", "e03", "e05", "e06", "e09", "e10"]
    assert doc["store_rows"][4]["units"] == {"installer.current": 1.0, "installer.old_invalid": 1.0}
    assert [u["unit"] for u in doc["uncovered_units"]] == ["incident.detail"]
    written = json.loads(cert_path.read_text())
    assert {k: v for k, v in written.items() if k != "created"} == \
        {k: v for k, v in doc.items() if k not in ("created", "store_rows", "uncovered_units")}
    assert pkg_path.read_bytes() == before


def test_solve_backend_none_is_optimal_not_certified(runner, pkg_path):
    result = run(runner, "solve", pkg_path, "--budget", "30.25", "--backend", "none")
    assert result.exit_code == EXIT_OK
    assert "status: optimal (not certified)" in result.stdout


@pytest.mark.parametrize("backend", ["cbc", "cpsat", "milp-highs"])
def test_solve_other_backends_certify(runner, pkg_path, backend):
    result = run(runner, "solve", pkg_path, "--budget-frac", "0.25", "--backend", backend)
    assert result.exit_code == EXIT_OK, result.output
    assert "status: certified" in result.stdout


def test_solve_uses_package_budget(runner, quickstart, tmp_path):
    quickstart["budget"] = 30.25
    path = tmp_path / "with_budget.json"
    path.write_text(json.dumps(quickstart))
    result = run(runner, "solve", path)
    assert result.exit_code == EXIT_OK and "OPT = 10\n" in result.stdout


def _without_budget(path):
    """The package at ``path`` rewritten without its own budget (every shipped package has one)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["budget"]
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def test_solve_no_budget_anywhere(runner, pkg_path):
    result = run(runner, "solve", _without_budget(pkg_path))
    assert_one_line_error(result, "pass --budget B")
    assert "--budget-frac" in result.stderr


def test_solve_budget_flags_are_exclusive(runner, pkg_path):
    result = run(runner, "solve", pkg_path, "--budget", "10", "--budget-frac", "0.1")
    assert result.exit_code == EXIT_USAGE
    assert "mutually exclusive" in result.stderr


def test_solve_bad_time_limit_is_usage_error(runner, pkg_path):
    assert run(runner, "solve", pkg_path, "--budget", "10", "--time-limit", "0").exit_code == EXIT_USAGE


def test_solve_backend_declines_is_not_certified(runner, quickstart, tmp_path):
    """CP-SAT declines non-integer coverage: the optimum is still reported, exit code 3."""
    quickstart["candidates"][13]["coverage"] = {"incident.detail": 0.3333333333}  # e08.fact
    path = tmp_path / "thirds.json"
    path.write_text(json.dumps(quickstart))
    result = run(runner, "solve", path, "--budget-frac", "0.25", "--backend", "cpsat")
    assert result.exit_code == EXIT_NOT_CERTIFIED, result.output
    assert "status: not certified" in result.stdout
    assert "cpsat declined this package" in result.stdout and "try another back-end" in result.stdout
    assert "OPT = 10\n" in result.stdout
    # the same package certifies with HiGHS
    assert run(runner, "solve", path, "--budget-frac", "0.25").exit_code == EXIT_OK


def test_solve_method_declines_is_bad_input(runner, quickstart, tmp_path):
    quickstart["candidates"][13]["coverage"] = {"incident.detail": 0.3333333333}
    path = tmp_path / "thirds.json"
    path.write_text(json.dumps(quickstart))
    result = run(runner, "solve", path, "--budget-frac", "0.25", "--method", "cpsat")
    assert_one_line_error(result, "cpsat declined this package")


def test_solve_heuristic_is_not_certified(runner, pkg_path):
    result = run(runner, "solve", pkg_path, "--budget-frac", "0.25", "--method", "greedy")
    assert result.exit_code == EXIT_NOT_CERTIFIED
    assert "greedy is a heuristic: it does not prove optimality" in result.stdout
    assert "values disagree" not in result.stdout


def test_missing_backend_says_what_to_install(runner, pkg_path, monkeypatch):
    for name in [m for m in sys.modules if m == "ortools" or m.startswith("ortools.")] + ["ortools"]:
        monkeypatch.setitem(sys.modules, name, None)
    result = run(runner, "solve", pkg_path, "--budget-frac", "0.25", "--backend", "cpsat")
    assert_one_line_error(result, "pip install ortools")


def test_output_never_overwrites_the_package(runner, pkg_path):
    before = pkg_path.read_bytes()
    result = run(runner, "solve", pkg_path, "--budget-frac", "0.25", "-o", pkg_path)
    assert_one_line_error(result, "refusing")
    assert pkg_path.read_bytes() == before


def test_subprocess_console_script():
    exe = Path(sys.executable).parent / "memaudit"
    if not exe.exists():
        pytest.skip("the memaudit console script is not installed next to this Python")
    proc = subprocess.run([str(exe), "solve", "packages_data/examples/quickstart.json", "--budget-frac", "0.25"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "certified" in proc.stdout


def test_version(runner):
    result = run(runner, "--version")
    assert result.exit_code == 0 and "0.1.0" in result.stdout


def test_help_documents_exit_codes(runner):
    out = run(runner, "--help").stdout
    for code in ("0 ", "1 ", "2 ", "3 "):
        assert f"  {code}" in out


# -- verify ---------------------------------------------------------------------

@pytest.fixture
def certified(runner, pkg_path, tmp_path):
    cert_path = tmp_path / "cert.json"
    result = run(runner, "solve", pkg_path, "--budget-frac", "0.25", "-o", cert_path)
    assert result.exit_code == EXIT_OK
    return pkg_path, cert_path


def test_verify_passes(runner, certified):
    pkg_path, cert_path = certified
    before = cert_path.read_bytes(), pkg_path.read_bytes()
    result = run(runner, "verify", pkg_path, cert_path)
    assert result.exit_code == EXIT_OK, result.output
    assert "FAIL" not in result.stdout
    for check in ("package sha256", "store ids", "feasible", "value", "optimum"):
        assert check in result.stdout
    assert "verdict: verified" in result.stdout
    assert (cert_path.read_bytes(), pkg_path.read_bytes()) == before


def test_verify_json_and_backend_none(runner, certified):
    pkg_path, cert_path = certified
    result = run(runner, "verify", pkg_path, cert_path, "--json", "--backend", "none")
    assert result.exit_code == EXIT_OK
    doc = json.loads(result.stdout)
    assert doc["passed"] is True
    assert {c["name"]: c["outcome"] for c in doc["checks"]}["optimum"] == "skip"


def _tamper(cert_path, edit):
    cert = json.loads(cert_path.read_text())
    edit(cert)
    cert_path.write_text(json.dumps(cert))


def test_verify_changed_opt_fails(runner, certified):
    pkg_path, cert_path = certified
    _tamper(cert_path, lambda c: c.update(opt=11.0))
    result = run(runner, "verify", pkg_path, cert_path)
    assert result.exit_code == EXIT_NOT_CERTIFIED
    assert "FAIL  value" in result.stdout and "FAIL  optimum" in result.stdout
    assert "verdict: FAILED" in result.stdout


def test_verify_changed_store_id_fails(runner, certified):
    pkg_path, cert_path = certified
    _tamper(cert_path, lambda c: c["store"].__setitem__(0, "e01.nonsense"))
    result = run(runner, "verify", pkg_path, cert_path)
    assert result.exit_code == EXIT_NOT_CERTIFIED
    assert "FAIL  store ids" in result.stdout and "'e01.nonsense'" in result.stdout


def test_verify_swapped_store_candidate_fails(runner, certified):
    """A real candidate that changes the value: the value check catches it."""
    pkg_path, cert_path = certified
    _tamper(cert_path, lambda c: c["store"].__setitem__(c["store"].index("e09.update"), "e09.fact"))
    result = run(runner, "verify", pkg_path, cert_path)
    assert result.exit_code == EXIT_NOT_CERTIFIED
    assert "FAIL  value" in result.stdout


def test_verify_package_edited_after_certification(runner, certified, quickstart):
    pkg_path, cert_path = certified
    quickstart["units"][0]["weight"] = 5.0
    pkg_path.write_text(json.dumps(quickstart, indent=2))
    result = run(runner, "verify", pkg_path, cert_path)
    assert result.exit_code == EXIT_NOT_CERTIFIED
    assert "FAIL  package sha256" in result.stdout


@pytest.mark.parametrize("edit", [{"budget": 1000.0}, {"budget_frac": 1e308}],
                         ids=["raised-budget", "overflowing-budget-frac"])
def test_verify_wrong_budget_fails(runner, certified, edit):
    pkg_path, cert_path = certified
    _tamper(cert_path, lambda c: c.update(edit))
    result = run(runner, "verify", pkg_path, cert_path)
    assert result.exit_code == EXIT_NOT_CERTIFIED
    assert "FAIL  budget" in result.stdout


@pytest.mark.parametrize("content, match", [
    ("{not json", "not valid JSON"),
    ("[]", "must be a JSON object"),
    ('{"format": "memaudit-certificate/9"}', "format must be 'memaudit-certificate/1'"),
])
def test_verify_malformed_certificate_is_bad_input(runner, pkg_path, tmp_path, content, match):
    cert_path = tmp_path / "bad_cert.json"
    cert_path.write_text(content)
    assert_one_line_error(run(runner, "verify", pkg_path, cert_path), match)
    assert cert_path.read_text() == content


def test_verify_certificate_missing_field(runner, certified):
    pkg_path, cert_path = certified
    _tamper(cert_path, lambda c: c.pop("opt"))
    assert_one_line_error(run(runner, "verify", pkg_path, cert_path), "opt is required")


# -- bad input: one line, exit 1, file untouched ---------------------------------

def _raw(text):
    return lambda pkg: text


def _edit(fn):
    def make(pkg):
        pkg = copy.deepcopy(pkg)
        fn(pkg)
        return json.dumps(pkg, indent=1)
    return make


def _given(fn):
    def both(p):
        p["cost_source"] = "given"
        fn(p)
    return _edit(both)


def _cand(i, **kw):
    return _edit(lambda p: p["candidates"][i].update(kw))


def _replace(make, old, new):
    return lambda p: make(p).replace(old, new)


BAD_PACKAGES = {
    "not_json": (_raw("{this is not json"), "not valid JSON"),
    "empty_file": (_raw(""), "the file is empty"),
    "wrong_shape_list": (_raw("[1, 2, 3]"), "must be a JSON object"),
    "wrong_shape_field": (_edit(lambda p: p.update(experiences="e01")), "experiences"),
    "unknown_format": (_edit(lambda p: p.update(format="memaudit-package/9")), "format must be"),
    "duplicate_ids": (_cand(1, id="e01.raw"), "must be unique"),
    "missing_experience": (_cand(0, experience="e99"), "must name an experience"),
    "unknown_unit": (_cand(0, coverage={"no.such.unit": 1.0}), "must name a unit"),
    "negative_cost": (_given(lambda p: p["candidates"][0].update(cost=-1)), "cost"),
    "zero_cost": (_given(lambda p: p["candidates"][0].update(cost=0)), "cost"),
    "nan_cost": (_replace(_given(lambda p: p["candidates"][0].update(cost=1.5)), "1.5", "NaN"), "cost"),
    "infinite_cost": (_replace(_given(lambda p: p["candidates"][0].update(cost=1.5)), "1.5", "Infinity"), "cost"),
    "negative_coverage": (_cand(0, coverage={"user.identity": -0.5}), "coverage"),
    "nan_coverage": (_replace(_cand(0, coverage={"user.identity": 0.125}), "0.125", "NaN"), "coverage"),
    "zero_weight": (_edit(lambda p: p["units"][0].update(weight=0)), "weight"),
    "negative_weight": (_edit(lambda p: p["units"][0].update(weight=-2)), "weight"),
    "negative_budget": (_edit(lambda p: p.update(budget=-1)), "budget"),
    "non_concave_h": (_edit(lambda p: p["units"][0].update(h={"breakpoints": [[1, 1], [2, 3]]})), "concave"),
    "decreasing_h": (_edit(lambda p: p["units"][0].update(h={"breakpoints": [[1, 1], [2, 0.5]]})),
                     "non-decreasing"),
    "empty_package": (_edit(lambda p: p.update(experiences=[], units=[], candidates=[])), "must not be empty"),
    "cost_text_disagree": (_cand(0, cost=99), "must equal the cost of its text"),
}


@pytest.mark.parametrize("name", sorted(BAD_PACKAGES))
@pytest.mark.parametrize("command", ["solve", "validate"])
def test_bad_package_is_one_line_exit_1(runner, quickstart, tmp_path, name, command):
    make, match = BAD_PACKAGES[name]
    path = tmp_path / f"{name}.json"
    path.write_text(make(quickstart), encoding="utf-8")
    before = path.read_bytes()
    args = [command, path] + (["--budget", "20"] if command == "solve" else [])
    result = run(runner, *args)
    assert_one_line_error(result, match)
    assert str(path) in result.stderr
    assert path.read_bytes() == before


@pytest.mark.parametrize("args, match", [
    (["--budget", "-1"], "must be a finite number >= 0; got -1"),
    (["--budget-frac", "-0.5"], "budget fraction"),
    (["--budget", "nan"], "finite number"),
    (["--budget", "10", "--method", "simplex"], f"unknown method 'simplex'; valid methods: {method_names()}"),
    (["--budget", "10", "--backend", "gurobi"], "unknown back-end 'gurobi'; valid back-ends: cbc, cpsat, highs"),
    (["--budget", "10", "--method", "milp-highs", "--backend", "highs"], "must differ from the method"),
    (["--budget", "10", "--method", "greedy", "--time-limit", "5"], "method 'greedy': setting 'time_limit' must be one of the declared settings (none); got 5.0"),
])
def test_bad_options_are_one_line_exit_1(runner, pkg_path, args, match):
    before = pkg_path.read_bytes()
    assert_one_line_error(run(runner, "solve", pkg_path, *args), match)
    assert pkg_path.read_bytes() == before


def test_missing_package_file(runner, tmp_path):
    assert_one_line_error(run(runner, "solve", tmp_path / "nope.json", "--budget", "1"), "no such file")


# -- validate, inspect, schema ----------------------------------------------------

def test_validate_ok_and_mixed(runner, pkg_path, tmp_path):
    result = run(runner, "validate", pkg_path)
    assert result.exit_code == EXIT_OK
    assert result.stdout.strip() == (f"ok: {pkg_path} (12 experiences, 23 candidates, 8 units, 11 queries)")
    bad = tmp_path / "bad.json"
    bad.write_text("nope")
    result = run(runner, "validate", pkg_path, bad)
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stdout.startswith("ok: ")
    assert result.stderr.startswith(f"error: {bad}: not valid JSON")


def test_inspect_human(runner, pkg_path):
    result = run(runner, "inspect", pkg_path, "--budget-frac", "0.25")
    assert result.exit_code == EXIT_OK
    out = result.stdout
    assert "12 experiences, 23 candidates, 8 units, 11 queries" in out
    assert "raw 12" in out and "update 1" in out and "tombstone 1" in out
    assert "stream cost: 121 words" in out
    assert "budget: 30.25 words = 25% of the stream cost" in out
    assert "preference 1" in out


def test_inspect_json(runner, pkg_path):
    result = run(runner, "inspect", pkg_path, "--json", "--budget", "60.5")
    doc = json.loads(result.stdout)
    assert doc["stream_cost"] == 121 and doc["budget_frac"] == 0.5
    assert doc["candidates_by_kind"] == {"raw": 12, "fact": 9, "update": 1, "tombstone": 1}


def test_inspect_without_budget(runner, pkg_path):
    result = run(runner, "inspect", _without_budget(pkg_path))
    assert result.exit_code == EXIT_OK and "budget: none" in result.stdout


def test_schema(runner, tmp_path):
    result = run(runner, "schema")
    assert result.exit_code == EXIT_OK
    schema = json.loads(result.stdout)
    assert "properties" in schema and "candidates" in schema["properties"]
    out = tmp_path / "schema.json"
    assert run(runner, "schema", "-o", out).exit_code == EXIT_OK
    assert json.loads(out.read_text()) == schema


# -- inputs found by review: each is one line and exit 1, never a traceback ---------------------

def test_directory_as_package_is_bad_input(runner, tmp_path):
    result = run(runner, "solve", tmp_path, "--budget", "3")
    assert result.exit_code == EXIT_BAD_INPUT
    assert_one_line_error(result, "is a directory")


def test_budget_frac_overflowing_the_stream_cost(runner, pkg_path):
    before = pkg_path.read_bytes()
    result = run(runner, "solve", pkg_path, "--budget-frac", "1e308")
    assert result.exit_code == EXIT_BAD_INPUT
    assert_one_line_error(result, "not a finite number")
    assert pkg_path.read_bytes() == before


def test_verify_reasons_must_be_a_list(runner, certified):
    pkg_path, cert_path = certified
    _tamper(cert_path, lambda c: c.update(certified=False, reasons=5))
    result = run(runner, "verify", pkg_path, cert_path)
    assert result.exit_code == EXIT_BAD_INPUT
    assert_one_line_error(result, "reasons must be a list of strings")


def test_solve_freezes_the_collector_only_while_it_runs(runner, pkg_path, monkeypatch):
    import gc

    import memaudit.cli.solve as solve_cli

    seen = []
    real = solve_cli.build_certificate
    monkeypatch.setattr(solve_cli, "build_certificate", lambda *a, **k: seen.append(gc.get_freeze_count()) or real(*a, **k))
    assert gc.get_freeze_count() == 0
    assert run(runner, "solve", pkg_path, "--budget-frac", "0.25").exit_code == EXIT_OK
    assert seen[0] > 0 and gc.get_freeze_count() == 0           # frozen during the command, not after
    gc.freeze()                                                  # someone else's freeze is left as it was
    try:
        before = gc.get_freeze_count()
        assert run(runner, "solve", pkg_path, "--budget-frac", "0.25").exit_code == EXIT_OK
        assert gc.get_freeze_count() > before // 2     # not unfrozen (a frozen object that dies leaves the count)
    finally:
        gc.unfreeze()
