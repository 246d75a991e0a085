"""Settings as data for the generator families: the conformance suite of tests/test_settings.py,
generated from :data:`memaudit.generators.GENERATOR_SETTINGS`.

For every family and every setting it declares, bad values derived from the declaration are refused
with the one message template (a GeneratorError from the library, ``error: ...`` with exit code 1 from
``memaudit generate FAMILY``); a good value writes a valid package, the same from the library and the
command line.  No case is listed by hand: a new family or setting is covered by declaring it.
"""

from __future__ import annotations

import pytest

from memaudit_solvers.settings import describe

# the conformance suite's own derivations of bad and good values from a declaration
from test_settings import UNKNOWN, _cli, _one_line, bad_cases, cases, good_text, good_value, template


def _generators():
    from memaudit.generators import GENERATOR_SETTINGS
    return GENERATOR_SETTINGS


#: a speed knob only (the full natural transcript takes seconds): the setting under test overrides it
_FAST = {"natural": {"filler": False}}


def _fast(family: str, name: str) -> dict:
    return {k: v for k, v in _FAST.get(family, {}).items() if k != name}


def test_every_generator_family_has_a_declaration_and_a_command():
    from memaudit.generators import GENERATORS
    from memaudit.generators.cli import generate as group

    assert set(_generators()) == set(GENERATORS) == set(group.commands)
    for family, declared in _generators().items():
        names = [s.name for s in declared]
        assert len(names) == len(set(names)), family
        help_text = _cli("generate", family, "--help").output
        for s in declared:
            assert s.help.strip() and "--" + s.name.replace("_", "-") in help_text, (family, s.name)


@pytest.mark.parametrize("family", sorted(_generators()))
def test_generator_declared_defaults_are_the_family_defaults(family):
    """Giving every declared default explicitly writes the same package as giving none."""
    from memaudit.generators import generate
    from memaudit.package import package_to_dict

    fast = _FAST.get(family, {})
    explicit = {s.name: s.default for s in _generators()[family]}
    assert package_to_dict(generate(family, **{**explicit, **fast})) == package_to_dict(generate(family, **fast))


@pytest.mark.parametrize("family, setting, value", bad_cases(_generators()))
def test_generator_refuses_bad_setting(family, setting, value):
    from memaudit.generators import generate
    from memaudit.generators.events import GeneratorError

    with pytest.raises(GeneratorError, match=template(f"generator {family!r}", setting)):
        generate(family, **{setting: value})


@pytest.mark.parametrize("family, setting", [p for p in cases(_generators()) if p.values[1] is not None])
def test_generator_writes_a_valid_package_with_good_setting(family, setting, tmp_path):
    from memaudit.generators import generate, write_package
    from memaudit.package import load_package

    value = good_value(setting)
    pkg = generate(family, **{**_fast(family, setting.name), setting.name: value})
    write_package(pkg, tmp_path / "p.json")  # validates the data
    assert load_package(tmp_path / "p.json") == pkg


def _flag_texts(family: str, name: str) -> list[str]:
    return [f"--{k.replace('_', '-')}" if v else f"--no-{k.replace('_', '-')}" for k, v in _fast(family, name).items()]


def _switch(family: str, name: str) -> bool:
    return any(s.name == name and s.type is bool for s in _generators()[family])


@pytest.mark.parametrize("family, setting, text",  # a bool is a --x/--no-x switch: it has no bad text
                         [p for p in bad_cases(_generators(), texts=True)
                          if p.values[1] != UNKNOWN and not _switch(*p.values[:2])])
def test_cli_generator_setting_is_one_line_error(family, setting, text):
    r = _cli("generate", family, "--" + setting.replace("_", "-"), text)
    _one_line(r, template(f"generator {family!r}", setting))
    assert r.stdout == ""


@pytest.mark.parametrize("family", sorted(_generators()))
def test_cli_generator_unknown_flag_is_a_usage_error(family):
    r = _cli("generate", family, "--" + UNKNOWN.replace("_", "-"), "1")
    assert r.exit_code == 2 and "No such option" in r.output, r.output


@pytest.mark.parametrize("family, setting", [p for p in cases(_generators()) if p.values[1] is not None])
def test_cli_generator_writes_a_valid_package_with_good_setting(family, setting, tmp_path):
    from memaudit.generators import generate
    from memaudit.package import load_package, package_to_dict

    value = good_value(setting)
    flag = "--" + setting.name.replace("_", "-")
    args = ([flag if value else "--no-" + flag[2:]] if setting.type is bool else [flag, good_text(setting, value)])
    out = tmp_path / "p.json"
    r = _cli("generate", family, *args, *_flag_texts(family, setting.name), "-o", out)
    assert r.exit_code == 0, r.output
    lib = generate(family, **{**_fast(family, setting.name), setting.name: value})
    assert package_to_dict(load_package(out)) == package_to_dict(lib)


def test_settings_command_lists_every_generator_setting():
    r = _cli("settings", "generators")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "generators:"
    for family, declared in _generators().items():
        at = lines.index("  " + family + ("" if declared else "  (no settings)"))
        for i, s in enumerate(declared, 1):
            assert lines[at + i] == f"    {s.name}: {describe(s)}", (family, s.name)
    assert "generators:" in _cli("settings").output
