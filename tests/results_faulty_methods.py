"""Methods that fail on purpose, for the sweep's failure tests: registered in this process and, through a
Dask worker plugin, in every worker (a restarted one too)."""

from __future__ import annotations

import os
import time

from memaudit_solvers import registry

from distributed.diagnostics.plugin import WorkerPlugin


def crash(problem, budget, /):
    raise RuntimeError("simulated back-end crash")


def die(problem, budget, /):
    os._exit(17)  # the worker process dies on the spot


def slow(problem, budget, /):
    time.sleep(30)
    raise AssertionError("slow should have been abandoned by the task timeout")


FAULTY = {"crash-test": crash, "die-test": die, "slow-test": slow}


def install() -> None:
    registry.METHODS.update(FAULTY)


def uninstall() -> None:
    for name in FAULTY:
        registry.METHODS.pop(name, None)


class InstallFaulty(WorkerPlugin):
    name = "memaudit-faulty-methods"

    def setup(self, worker):
        install()
