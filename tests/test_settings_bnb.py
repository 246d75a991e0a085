"""bnb validates its settings with the declarations the registry registers it with: a direct call of
``branch_and_bound`` and ``run_method("bnb", ...)`` (the command line's path) refuse every bad value derived
from the declarations with the same one-template message."""

from __future__ import annotations

import pytest

from memaudit_solvers.bnb import BNB_SETTINGS, branch_and_bound
from memaudit_solvers.random_problems import tiny_problem
from memaudit_solvers.registry import SETTINGS, run_method
from test_settings import bad_values, good_value, template

PROBLEM = tiny_problem(1, n_candidates=8)


def test_the_registry_registers_bnb_with_its_own_declarations():
    assert SETTINGS["bnb"] == BNB_SETTINGS


@pytest.mark.parametrize("setting, value", [pytest.param(s, v, id=f"{s.name}-{label}")
                                            for s in BNB_SETTINGS for label, v in bad_values(s)])
def test_a_direct_call_refuses_as_the_registry_does(setting, value):
    with pytest.raises(ValueError, match=template("method 'bnb'", setting.name)) as direct:
        branch_and_bound(PROBLEM, 10.0, **{setting.name: value})
    with pytest.raises(ValueError) as registered:
        run_method("bnb", PROBLEM, 10.0, **{setting.name: value})
    assert str(direct.value) == str(registered.value)


@pytest.mark.parametrize("setting", BNB_SETTINGS, ids=lambda s: s.name)
def test_a_good_value_is_recorded_as_checked(setting):
    value = good_value(setting)
    r = branch_and_bound(PROBLEM, 10.0, **{setting.name: value})
    assert r.status == "optimal" and r.settings[setting.name] == value
