"""Settings as data: a conformance suite generated from the declarations.

For every registered method, harness policy, reader and vendor importer and every setting it
declares, bad values derived from the declaration (out of range, wrong type, NaN, an unknown
setting name) are refused with the one message template, as a ValueError from the library and as
``error: ...`` with exit code 1 from the command line; a good value derived from the same
declaration runs.  No case is listed by hand: a new registration is covered by adding it.
"""

from __future__ import annotations

import math
import re
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memaudit.cli import main
from memaudit.harness.policies import POLICY_SETTINGS, parse_policy
from memaudit.harness.readers import READER_SETTINGS, make_reader
from memaudit.harness.scenario import load_scenario
from memaudit.stores import IMPORTER_SETTINGS, load_export
from memaudit_solvers.milp import BACKENDS, installed_backends
from memaudit_solvers.random_problems import tiny_problem
from memaudit_solvers.registry import METHODS, SETTINGS, run_method
from memaudit_solvers.result import Result
from memaudit_solvers.settings import Setting, describe, parse_setting_text, validate_settings

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "packages_data" / "examples" / "quickstart.json"
SCENARIO = ROOT / "packages_data" / "scenarios" / "example.yaml"
FAKE = Path(__file__).resolve().parent / "harness_fake_cli.py"
STORES = Path(__file__).resolve().parent / "fixtures" / "stores"
#: one export file per product, to show that a good importer setting reads
EXPORTS = {"mem0": STORES / "mem0_sample_a.json", "letta": STORES / "letta_sample_a.af",
           "amem": STORES / "amem_sample_a.json"}
UNKNOWN = "no_such_setting"


def _num_text(x: float) -> str:
    return repr(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def bad_values(s: Setting) -> list[tuple[str, object]]:
    """``(label, value)`` pairs that break the declaration of ``s`` (library form)."""
    out: list[tuple[str, object]] = []
    if s.type in (int, float, tuple):
        wrap = (lambda v: [v] * s.length) if s.type is tuple else (lambda v: v)
        if s.low is not None:
            out.append(("below", wrap(s.low if s.low_open else s.low - 1)))
        if s.high is not None:
            out.append(("above", wrap(s.high if s.high_open else s.high + 1)))
        out.append(("nan", wrap(math.nan)))
        out.append(("type", wrap("abc")))
        if s.type is int:
            out.append(("fraction", (s.low or 0) + 1.5))
        if s.type is tuple:
            out.append(("length", [s.low or 0] * (s.length + 1)))
        if not s.optional:
            out.append(("none", None))
    elif s.type is bool:
        out += [("type", "maybe"), ("int", 2)]
    else:
        out.append(("type", 3))
        if s.choices:
            out.append(("choice", "not-a-choice"))
    return out


def bad_texts(s: Setting) -> list[tuple[str, str]]:
    """The command-line forms of the bad values (a free string has no bad text)."""
    out = []
    for label, v in bad_values(s):
        if label in ("none", "length") or (s.type is str and not s.choices):
            continue
        if isinstance(v, list):
            text = "/".join(str(x) if isinstance(x, str) else _num_text(x) for x in v)
        elif isinstance(v, float) and math.isnan(v):
            text = "nan"
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            text = _num_text(v) if label != "fraction" else repr(float(v))
        else:
            text = str(v)
        out.append((label, text))
    return out


def good_value(s: Setting):
    """A value inside the declaration: the default, else a point of the interval or the first choice."""
    if s.default is not None:
        return s.default
    if s.choices:
        return s.choices[0]
    if s.type is tuple:
        return tuple([s.low if s.low is not None else 0.5] * s.length)
    if s.type in (int, float):
        lo = s.low if s.low is not None else 0
        return s.type(lo + 1) if s.high is None or lo + 1 <= s.high else s.type(lo)
    return None


def good_text(s: Setting, value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return "/".join(_num_text(x) for x in value)
    return _num_text(value) if isinstance(value, (int, float)) else str(value)


def template(owner: str, name: str) -> str:
    return "^" + re.escape(f"{owner}: setting {name!r} must be ") + r".+; got .+$"


def cases(tables: dict) -> list:
    """``(owner name, setting or None for the unknown name)`` for every declaration of ``tables``."""
    out = []
    for owner, declared in tables.items():
        out += [pytest.param(owner, s, id=f"{owner}-{s.name}") for s in declared]
        out.append(pytest.param(owner, None, id=f"{owner}-{UNKNOWN}"))
    return out


def bad_cases(tables: dict, texts: bool = False) -> list:
    out = []
    for owner, declared in tables.items():
        for s in declared:
            for label, v in (bad_texts(s) if texts else bad_values(s)):
                out.append(pytest.param(owner, s.name, v, id=f"{owner}-{s.name}-{label}"))
        out.append(pytest.param(owner, UNKNOWN, "1", id=f"{owner}-{UNKNOWN}"))
    return out


_RUNNABLE = {n: d for n, d in SETTINGS.items() if n not in BACKENDS or n in installed_backends()}
_PROBLEM = tiny_problem(1, n_candidates=8)
_KINDS = tiny_problem(1, n_candidates=8)
_PROBLEM_WITH_KINDS = type(_KINDS).build(_KINDS.costs, _KINDS.groups, _KINDS.coverage.toarray(), _KINDS.weights,
                                         kinds=["raw", "fact"] * 4)


# -- the declarations themselves ---------------------------------------------------------------------------

def test_every_registered_method_has_a_declaration():
    assert set(SETTINGS) == set(METHODS)
    for table in (SETTINGS, POLICY_SETTINGS, READER_SETTINGS, IMPORTER_SETTINGS):
        for owner, declared in table.items():
            names = [s.name for s in declared]
            assert len(names) == len(set(names)), owner
            for s in declared:
                assert s.help.strip() and describe(s).startswith(s.help), (owner, s.name)


def test_validate_settings_grammar():
    eps = Setting("eps", float, 0.1, "step", low=0, high=1, low_open=True, high_open=True)
    with pytest.raises(ValueError, match=r"^method 'x': setting 'eps' must be a number in \(0, 1\); got 1$"):
        validate_settings("method 'x'", [eps], {"eps": 1})
    with pytest.raises(ValueError, match=r"setting 'eps' must be a number in \(0, 1\); got inf$"):
        validate_settings("method 'x'", [eps], {"eps": math.inf})
    assert validate_settings("method 'x'", [eps], {"eps": 0.5}) == {"eps": 0.5}
    assert parse_setting_text(" 7 ") == 7 and parse_setting_text("a/b") == ["a", "b"]
    with pytest.raises(TypeError):
        Setting("k", list, 0, "bad type")
    with pytest.raises(ValueError, match="the declaration: setting 'k' must be an integer >= 1; got 0"):
        Setting("k", int, 0, "a default outside its own rule", low=1)


# -- methods ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, setting, value", bad_cases(_RUNNABLE))
def test_method_refuses_bad_setting(name, setting, value):
    with pytest.raises(ValueError, match=template(f"method {name!r}", setting)):
        run_method(name, _PROBLEM_WITH_KINDS, 10.0, **{setting: value})


@pytest.mark.parametrize("name, setting", [p for p in cases(_RUNNABLE) if p.values[1] is not None])
def test_method_runs_with_good_setting(name, setting):
    value = good_value(setting)
    r = run_method(name, _PROBLEM_WITH_KINDS, 10.0, **{setting.name: value})
    assert isinstance(r, Result) and r.method == name
    assert r.settings[setting.name] == value


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _one_line(result, pattern):
    assert result.exit_code == 1, (result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert re.search(pattern.replace("^", "^error: ", 1), lines[0]), lines[0]


@pytest.mark.parametrize("name, setting, text", bad_cases(_RUNNABLE, texts=True))
def test_cli_method_setting_is_one_line_error(name, setting, text):
    r = _cli("baseline", QUICKSTART, "--budget-frac", "0.25", "--backend", "none", "--method", f"{name}:{setting}={text}")
    _one_line(r, template(f"method {name!r}", setting))


@pytest.mark.parametrize("name, setting", [p for p in cases(_RUNNABLE) if p.values[1] is not None])
def test_cli_method_runs_with_good_setting(name, setting, tmp_path):
    import json

    text = good_text(setting, good_value(setting))
    r = _cli("baseline", QUICKSTART, "--budget-frac", "0.25", "--db", tmp_path / "r.sqlite", "--json",
             "--method", f"{name}:{setting.name}={text}")
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)["methods"]
    assert row["method"] == name and row["settings"][setting.name] == good_value(setting)


# -- harness policies and readers ------------------------------------------------------------------------

@pytest.mark.parametrize("name, setting, text", bad_cases(POLICY_SETTINGS, texts=True))
def test_policy_refuses_bad_setting(name, setting, text):
    with pytest.raises(ValueError, match=template(f"policy {name!r}", setting)):
        parse_policy(f"{name}:{setting}={text}")
    _one_line(_cli("harness", "run", SCENARIO, "--policy", f"{name}:{setting}={text}"),
              template(f"policy {name!r}", setting))


@pytest.mark.parametrize("name, setting", [p for p in cases(POLICY_SETTINGS) if p.values[1] is not None])
def test_policy_runs_with_good_setting(name, setting):
    value = good_value(setting)
    pol = parse_policy(f"{name}:{setting.name}={good_text(setting, value)}")
    memory = pol.build(load_scenario(SCENARIO), len)
    assert isinstance(memory.inject(1, "where do we deploy?"), list)


def _fake(mode="reader"):
    return shlex.join([sys.executable, str(FAKE), mode])


@pytest.mark.parametrize("name, setting, text", bad_cases(READER_SETTINGS, texts=True))
def test_reader_refuses_bad_setting(name, setting, text):
    cmd = _fake() if name == "command" else None
    with pytest.raises(ValueError, match=template(f"reader {name!r}", setting)):
        make_reader(f"{name}:{setting}={text}", cmd)
    extra = ["--reader-cmd", cmd] if cmd else []
    _one_line(_cli("harness", "run", SCENARIO, "--policy", "fresh", "--reader", f"{name}:{setting}={text}", *extra),
              template(f"reader {name!r}", setting))


@pytest.mark.parametrize("name, setting", [p for p in cases(READER_SETTINGS) if p.values[1] is not None])
def test_reader_runs_with_good_setting(name, setting, tmp_path):
    value = good_value(setting) if setting.name != "cache_dir" else str(tmp_path / "cache")
    reader = make_reader(f"{name}:{setting.name}={good_text(setting, value)}",
                         _fake() if name == "command" else None)
    answer = reader.read(["we deploy to eu-west-2"], "where do we deploy?")
    assert answer.text is None or isinstance(answer.text, str)


# -- vendor importers (library: the store commands' flags belong to the stores command module) ---------

@pytest.mark.parametrize("product, setting, value", bad_cases(IMPORTER_SETTINGS))
def test_importer_refuses_bad_setting(product, setting, value):
    options = {setting: value}
    with pytest.raises(ValueError, match=template(f"importer {product!r}", setting)):
        load_export(product, EXPORTS[product], **options)


@pytest.mark.parametrize("product, setting", [p for p in cases(IMPORTER_SETTINGS) if p.values[1] is not None])
def test_importer_reads_with_good_setting(product, setting):
    value = good_value(setting) if setting.name != "as_of" else "2026-09-15"
    export = load_export(product, EXPORTS[product], **{setting.name: value})
    assert export.items


# -- the generated flags -----------------------------------------------------------------------------

def _scored_flags():
    from memaudit_solvers.registry import BASELINES, ONLINE_METHODS

    seen: dict = {}
    for name in sorted({**BASELINES, **ONLINE_METHODS}):
        for s in SETTINGS[name]:
            seen.setdefault(s.name, (name, s))
    return seen


@pytest.mark.parametrize("setting, name, text",
                         [pytest.param(sname, owner, t, id=f"{sname}-{label}")
                          for sname, (owner, s) in _scored_flags().items() for label, t in bad_texts(s)])
def test_flag_of_a_declared_setting_refuses_bad_values(setting, name, text):
    flag = "--" + setting.replace("_", "-")
    r = _cli("baseline", QUICKSTART, "--budget-frac", "0.25", "--method", name, flag, text)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert re.search(re.escape(f"option {flag!r}: setting {setting!r} must be ") + r".+; got ", r.output), r.output


@pytest.mark.parametrize("setting, name", [pytest.param(k, v[0], id=k) for k, v in _scored_flags().items()])
def test_flag_of_a_declared_setting_reaches_the_method(setting, name, tmp_path):
    import json

    from memaudit_solvers.registry import SETTINGS as ALL

    s = next(x for x in ALL[name] if x.name == setting)
    value = good_value(s)
    if s.type is int and s.high is None:
        value = value + 1  # not the default, so the flag visibly reaches the method
    r = _cli("baseline", QUICKSTART, "--budget-frac", "0.25", "--db", tmp_path / "r.sqlite", "--json",
             "--method", name, "--" + setting.replace("_", "-"), good_text(s, value))
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)["methods"]
    assert row["settings"][setting] == value
    help_text = _cli("baseline", "--help").output
    assert "--" + setting.replace("_", "-") in help_text


# -- the declarations and the functions agree ------------------------------------------

#: keyword parameters a method takes that are not user settings (given by the caller, not the user)
_NOT_SETTINGS = {"progress", "deadline", "kind", "hint"}   # hint: a MIP start (data, not a setting)
#: keywords a method leaves undeclared on purpose, with the registered name that sets them
_REGISTERED_APART = {"gvt-geometric": {"upgrade"}}  # upgrade=True is registered as gvt-upgrade


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_keyword_of_a_method_is_declared_with_its_default(name):
    """A method's declared settings are exactly its keyword parameters, with the same defaults, so a
    new keyword (a new limit of bnb, say) cannot be unreachable from the command line or differ in
    default between the library and the CLI."""
    import functools
    import inspect

    fn = METHODS[name]
    fixed = dict(fn.keywords) if isinstance(fn, functools.partial) else {}
    params = inspect.signature(fn).parameters
    keywords = {p.name: p.default for p in params.values()
                if p.kind is p.KEYWORD_ONLY and p.name not in _NOT_SETTINGS | _REGISTERED_APART.get(name, set())
                and p.name not in fixed}
    declared = {s.name: s.default for s in SETTINGS[name]}
    assert set(declared) == set(keywords), name
    for key, default in keywords.items():
        assert declared[key] == default, (name, key)
