"""bnb's restart test: would the candidates left after reduced-cost fixing split the coupled components?"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..problem import Problem

__all__ = ["coupled_groups", "SPLIT_RATIO"]

#: a restart pays when the groups left in components too large to enumerate fall to at most this share
SPLIT_RATIO = 0.75


def coupled_groups(problem: Problem, keep: np.ndarray, max_combos: int) -> int:
    """Groups of ``keep``'s candidates in components with more than ``max_combos`` stores.

    Components are those of the bipartite group--unit graph over the candidates kept, the same
    graph :func:`memaudit_solvers.bnb.decompose.decompose` splits; a component of one group or
    of at most ``max_combos`` stores would be enumerated there, the rest stay coupled.  It models
    enumeration only: a component the tree DP (:mod:`memaudit_solvers.bnb.treedp`) would collapse
    still counts as coupled, so the split test may decline a restart, never make one wrong.

    Examples
    --------
    >>> p = Problem.build([1, 1, 1], [0, 1, 2], [[1, 0], [1, 1], [0, 1]], [1.0, 1.0])
    >>> coupled_groups(p, np.ones(3, dtype=bool), 4), coupled_groups(p, np.array([True, False, True]), 4)
    (3, 0)
    """
    from scipy.sparse.csgraph import connected_components

    cand = np.flatnonzero(keep)
    if cand.size == 0:
        return 0
    cov = problem.coverage[cand]
    g_of = problem.groups[cand]
    n_g, n = problem.n_groups, problem.n_groups + problem.n_units
    edges = sp.csr_array((np.ones(cov.nnz), (np.repeat(g_of, np.diff(cov.indptr)), n_g + cov.indices)),
                         shape=(n, n))
    _, label = connected_components(edges, directed=False)
    n_opts = np.bincount(g_of, minlength=n_g)
    present = n_opts > 0
    lab = label[:n_g][present]
    log_stores = np.bincount(lab, weights=np.log(n_opts[present] + 1.0), minlength=int(label.max()) + 1)
    size = np.bincount(lab, minlength=int(label.max()) + 1)
    big = (log_stores > np.log(max_combos) + 1e-9) & (size > 1)
    return int(size[big].sum())
