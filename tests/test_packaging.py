"""The distribution: every package folder is listed, and a regular (wheel) install runs the README's commands."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _listed() -> set[str]:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return set(conf["packages"])


def _folders() -> set[str]:
    names = {"memaudit_data"}
    for top, name in (("memaudit", "memaudit"), ("solvers", "memaudit_solvers")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top).parts
            names.add(".".join((name, *rel)))
    return names


def test_every_package_folder_is_listed():
    assert _listed() == _folders()


def test_no_top_level_solvers_import_left():
    """The numeric core is imported as memaudit_solvers everywhere (the folder keeps its name)."""
    offenders = []
    for path in [*ROOT.glob("memaudit/**/*.py"), *ROOT.glob("solvers/**/*.py"), *ROOT.glob("tests/*.py"),
                 *ROOT.glob("scripts/*.py"), *ROOT.glob("benchmarks/*.py")]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            stripped = line.strip()
            if stripped.startswith(("from solvers", "import solvers")):
                offenders.append(f"{path.relative_to(ROOT)}:{n}")
    assert not offenders, offenders


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory):
    """A fresh venv with the wheel installed (no editable finder); dependencies come from this venv."""
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
                           capture_output=True, text=True, timeout=900)
    if build.returncode != 0:
        pytest.fail(f"wheel build failed: {build.stderr[-2000:]}")
    wheel = next(dist.glob("memaudit-*.whl"))
    env_dir = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=300)
    purelib = Path(subprocess.run([str(env_dir / "bin" / "python"), "-c",
                                   "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    # the dependencies of this venv, as a plain path entry: its .pth files (the editable finder) stay off
    (purelib / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"), "install", "--no-deps",
                    "-q", str(wheel)], check=True, capture_output=True, timeout=600)
    return wheel, env_dir


def _run(env_dir, *args, cwd=ROOT):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    return subprocess.run([str(env_dir / "bin" / "memaudit"), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=env)


@pytest.mark.slow
def test_wheel_contents(wheel_env):
    wheel, _ = wheel_env
    names = zipfile.ZipFile(wheel).namelist()
    assert "memaudit_data/examples/quickstart.json" in names
    assert any(n.startswith("memaudit_data/small/") and n.endswith("manifest.json") for n in names)
    assert any(n.startswith("memaudit_solvers/bnb/") for n in names)
    assert not any(n.startswith("solvers/") for n in names)


@pytest.mark.slow
def test_wheel_install_imports_from_site_packages(wheel_env):
    _, env_dir = wheel_env
    proc = subprocess.run([str(env_dir / "bin" / "python"), "-c",
                           "import memaudit, memaudit_solvers, importlib.util as u; "
                           "print(memaudit.__file__); print(memaudit_solvers.__file__); "
                           "print(u.find_spec('solvers'))"], cwd="/", capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    mem, core, solvers = proc.stdout.split()
    assert str(env_dir) in mem and str(env_dir) in core
    assert solvers == "None"                      # no top-level 'solvers' is installed


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["solve", "packages_data/examples/quickstart.json"],
    ["inspect", "packages_data/examples/quickstart.json", "--budget-frac", "0.1"],
    ["validate", "packages_data/examples/quickstart.json", "packages_data/small/manifest.json"],
    ["baseline", "packages_data/examples/quickstart.json", "--budget-frac", "0.1"],
    ["report", "findings"],
    ["schema"],
])
def test_wheel_install_runs_readme_commands(wheel_env, args, tmp_path):
    _, env_dir = wheel_env
    proc = _run(env_dir, *args)
    assert proc.returncode == 0, (args, proc.stdout[-1500:], proc.stderr[-1500:])


@pytest.mark.slow
def test_wheel_install_finds_its_data_away_from_the_checkout(wheel_env, tmp_path):
    _, env_dir = wheel_env
    proc = _run(env_dir, "report", "findings", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
