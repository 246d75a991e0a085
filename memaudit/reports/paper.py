"""``memaudit report paper``: the MEMAUDIT paper's own experiments, each figure beside the published one.

The paper (arXiv 2605.02199) reports, on its MemAudit-Small packages (:mod:`memaudit.generators.paper`):

* **base**: seeds 0 .. n-1 at the budgets the paper's rule gives for f = 0.02, 0.05, 0.10, 0.20
  (B = 2, 4, 8, 16 over 500 seeds): the mean ratio to the certified OPT of ``density``, ``gvt``,
  our ``density-global`` and ``gvt-geometric``, ``greedy``, and OPT without tombstone and
  compound_update candidates (``no_tombstone``); the mean invalidation units covered
  (``sum over validity units of min(1, coverage)``) per method; bootstrap 95 % intervals
  of each mean over seeds;
* **stress_b6**: the same ratios at B = 6 for base, update_chain and temporal_interval;
* **audit**: bnb against an independent MILP (HiGHS) on audit-seeds x f x the three
  distributions, with B from the same rule over the three (rows, agreements, largest difference).

Every OPT is certified: bnb and HiGHS must both prove it and agree (:func:`memaudit_solvers.certify.compare_results`);
a row that does not certify raises :class:`PaperReportError`.  Budgets follow the paper's rule
(:func:`paper_budgets`): ``B = max(1, round(f x M))`` with M the mean total candidate cost over the
run's seeds and distributions (not the stream cost).

The protocol (methods, distributions, published figures, budget rule, measures) is in
:mod:`~memaudit.reports.paper_protocol`, the exhaustive enumeration in :mod:`~memaudit.reports.enumeration`,
the run in :mod:`~memaudit.reports.paper_run`, the tables and figures in :mod:`~memaudit.reports.paper_output`;
this module is where every name is imported from.
"""

from __future__ import annotations

from .enumeration import MAX_STORES, Enumeration, enumerate_stores
from .paper_output import figure_ratio_vs_budget, figure_stress, format_paper, plot_paper, write_rows
from .paper_protocol import (BACKEND, BASE_METHODS, DISTRIBUTIONS, DROPPED, FRACS, NO_TOMBSTONE, PAPER, STRESS_METHODS,
                             PaperReportError, bootstrap_ci, invalidation_covered, paper_budgets, stream_budgets)
from .paper_run import PaperReport, default_jobs, paper_json, run_paper

__all__ = ["PAPER", "BASE_METHODS", "STRESS_METHODS", "DISTRIBUTIONS", "FRACS", "PaperReport", "PaperReportError",
           "paper_budgets", "stream_budgets", "invalidation_covered", "bootstrap_ci", "run_paper", "format_paper",
           "plot_paper", "figure_ratio_vs_budget", "figure_stress", "paper_json", "enumerate_stores", "Enumeration",
           "write_rows", "default_jobs"]
