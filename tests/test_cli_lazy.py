"""The command line imports a command's module only when that command runs: ``memaudit solve`` starts fast."""

from __future__ import annotations

import importlib
import subprocess
import sys

from click.testing import CliRunner

from memaudit.cli import COMMAND_MODULES, main

#: what ``memaudit solve`` never needs: the harness, the store importers, plotting, tables, Dask, YAML,
#: networkx (bnb imports it itself for a tree decomposition), scipy's optimisers
NOT_FOR_SOLVE = ("memaudit.harness", "memaudit.stores", "memaudit.generators", "memaudit.locomo", "memaudit.diagnose",
                 "memaudit.coupling", "pandas", "matplotlib", "dask", "distributed", "yaml", "networkx",
                 "scipy.optimize", "memaudit_solvers.random_problems")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_the_map_names_every_command_and_its_module():
    for module in dict.fromkeys(COMMAND_MODULES.values()):
        names = {c.name for c in importlib.import_module(module, "memaudit.cli").COMMANDS}
        assert names == {n for n, m in COMMAND_MODULES.items() if m == module}, module
    help_text = CliRunner().invoke(main, ["--help"]).output
    listed = {line.split()[0] for line in help_text.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(COMMAND_MODULES)


def test_solve_imports_only_what_it_needs():
    loaded = _modules_after("import memaudit.cli; memaudit.cli.main.get_command(None, 'solve')")
    assert "memaudit.cli.solve" in loaded
    heavy = sorted(m for m in loaded if any(m == x or m.startswith(x + ".") for x in NOT_FOR_SOLVE))
    assert not heavy, heavy


def test_a_command_loads_with_its_siblings_and_report_html_is_there():
    result = CliRunner().invoke(main, ["report", "html", "--help"])
    assert result.exit_code == 0 and "Usage: main report html" in result.output
    assert "ablate" in main.commands       # the module of 'report' registered its other commands too
