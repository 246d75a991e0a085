"""LoCoMo (Maharana et al., ACL 2024) as natural MEMAUDIT packages and as QA-harness scenarios.

``reader.read_locomo`` reads both file shapes (the release's per-conversation object and the Mem0
repository's list of samples) and repairs the dataset's known quirks, logging each repair;
``build.build_packages`` turns one conversation into one package per coverage rule (``dates``
holds the date rule of the ``answer`` rule); ``scenario.build_scenario`` turns it into a
``memaudit-scenario/2`` scenario; ``policies`` adds harness policies over observations and
summaries; ``importer.import_locomo`` does all of it for files (``memaudit import locomo``);
``diagnose.diagnose_compiled`` compiles a conversation for ``memaudit diagnose locomo:FILE``.
See docs/locomo.md.
"""

from __future__ import annotations

#: version of the importer's output: bump it whenever the packages or scenarios it writes change
IMPORTER_VERSION = "1"

__all__ = ["IMPORTER_VERSION"]
