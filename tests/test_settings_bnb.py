"""bnb and brute force validate their settings with the declarations the registry registers them with: a
direct call and ``run_method(name, ...)`` (the command line's path) refuse every bad value derived from the
declarations with the same one-template message."""

from __future__ import annotations

import pytest

from memaudit_solvers.bnb import BNB_SETTINGS, branch_and_bound
from memaudit_solvers.bruteforce import BRUTE_SETTINGS, brute_force
from memaudit_solvers.random_problems import tiny_problem
from memaudit_solvers.registry import SETTINGS, run_method
from test_settings import bad_values, good_value, template

PROBLEM = tiny_problem(1, n_candidates=8)

#: methods whose declarations live beside their function: name -> (function, declarations)
DECLARED_BESIDE = {"bnb": (branch_and_bound, BNB_SETTINGS), "brute": (brute_force, BRUTE_SETTINGS)}
CASES = [(name, s) for name, (_, decl) in DECLARED_BESIDE.items() for s in decl]


@pytest.mark.parametrize("name", DECLARED_BESIDE)
def test_the_registry_registers_the_method_with_its_own_declarations(name):
    assert SETTINGS[name] == DECLARED_BESIDE[name][1]


@pytest.mark.parametrize("name, setting, value", [pytest.param(n, s, v, id=f"{n}-{s.name}-{label}")
                                                  for n, s in CASES for label, v in bad_values(s)])
def test_a_direct_call_refuses_as_the_registry_does(name, setting, value):
    fn = DECLARED_BESIDE[name][0]
    with pytest.raises(ValueError, match=template(f"method '{name}'", setting.name)) as direct:
        fn(PROBLEM, 10.0, **{setting.name: value})
    with pytest.raises(ValueError) as registered:
        run_method(name, PROBLEM, 10.0, **{setting.name: value})
    assert str(direct.value) == str(registered.value)


@pytest.mark.parametrize("name, setting", CASES, ids=[f"{n}-{s.name}" for n, s in CASES])
def test_a_good_value_is_recorded_as_checked(name, setting):
    value = good_value(setting)
    r = DECLARED_BESIDE[name][0](PROBLEM, 10.0, **{setting.name: value})
    assert r.status == "optimal" and r.settings[setting.name] == value
