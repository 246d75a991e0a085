"""Baseline writers, scored against the certified optimum.

Every function here has the method contract ``fn(problem, budget, /, **settings) -> Result``
and returns status ``heuristic``: a store that is feasible by construction (``make_result``
re-checks it) and claims no bound.  Value and cost are recomputed by
:func:`memaudit_solvers.objective.evaluate`.

Offline baselines see the whole package.  The MEMAUDIT paper's two heuristics (arXiv
2605.02199, as its public artifact runs them) carry the names a reader of the paper expects:

* :func:`density`: the paper's density-only writer, one pass in stream order, each experience
  taking its candidate of largest marginal gain per cost that fits;
* :func:`gvt`: the paper's grouped value-threshold, one stream-order pass per threshold of the
  exact grid of singleton densities, best run;

and our own variants keep their own names:

* :func:`density_global` (``density-global``): a global sort by standalone value per cost;
* :func:`gvt_geometric` (``gvt-geometric``): exact marginal gains against a geometrically
  falling threshold, with a best-single fallback; ``gvt-upgrade`` also lets a group exchange
  its stored representation for a better one;
* :func:`kind_greedy` (``fact-only``, ``summary-only``): the greedy restricted to one kind;
* :func:`random_store`: a seeded random feasible store.

(``greedy``, the cost-benefit greedy, lives in :mod:`memaudit_solvers.greedy`.)

Online writers see the stream one experience at a time (groups in index order) and
decide before the next one arrives; their state is the store so far:

* :func:`fifo`: write each experience while it fits;
* :func:`recency`: write each experience and evict the oldest until the store fits;
* :func:`kind_writer`: always write the candidate of one kind (``kind:raw``, ``kind:fact``).

:func:`recency_raw` (``recency-raw``) is the paper's recency writer: it sees the whole stream
and takes raw spans newest first, skipping one that does not fit.

What an online writer writes for an experience is chosen by ``pick`` from that
experience's own candidates: ``verbatim`` (its largest candidate: the raw span, the default),
``cheapest``, or ``value`` (largest standalone value; this reads the unit weights, which
come from the future queries, so it is online in the stream but not blind to the queries).
:func:`online_stores` yields the store after each experience, which is how the tests show
that no writer looks ahead.

Modules: :mod:`.stream` (``density``, ``gvt``: the stream-order passes), :mod:`.geometric`
(``gvt-geometric``, ``gvt-upgrade``), :mod:`.static` (``density-global``, the one-kind greedy,
``recency-raw``, ``random``), :mod:`.online` (``fifo``, ``recency``, ``kind:<k>``) and
:mod:`.common` (the gain tolerance and the exact lexicographic pick they share).  Every name is
importable from here.
"""

from __future__ import annotations

from .common import GAIN_TOL
from .geometric import gvt_geometric, gvt_upgrade
from .online import PICKS, fifo, kind_writer, online_stores, recency
from .static import density_global, kind_greedy, random_store, recency_raw
from .stream import density, gvt, stream_passes

__all__ = ["density", "density_global", "gvt", "gvt_geometric", "gvt_upgrade", "stream_passes", "kind_greedy",
           "recency_raw", "random_store", "fifo", "recency", "kind_writer", "online_stores", "PICKS", "GAIN_TOL"]
