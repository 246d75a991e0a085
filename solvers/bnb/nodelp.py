"""bnb's node LP: one persistent HiGHS model of the reduced problem's LP relaxation.

Each node only changes column and row bounds (candidates fixed in or out, groups that must take
an option) and re-solves with the dual simplex from the last basis.  The LP only *proposes* unit
prices and a fractional point: every bound bnb reports is recomputed from those prices by
:mod:`memaudit_solvers.bnb.bound`, valid whatever the LP engine returns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..objective import h_values
from ..problem import Problem

__all__ = ["NodeLP", "column_lp"]

#: HiGHS's default ``simplex_iteration_limit`` (no limit)
_NO_LIMIT = 2**31 - 1

#: seconds the dual simplex gets for a model's first solve (from no basis); an LP it has not solved by
#: then is solved from scratch by HiGHS's interior-point method with crossover (which leaves a basis
#: for the later dual simplex re-solves and the tableau cuts).  None: the dual simplex alone.  The
#: first LP of bnb's root, dual simplex / interior point, one thread: ``summary_problem(10000, s)``
#: at 5 % 1.0-1.3 / 4.4-5.8 s, at 25 % 15.5-18.5 / 3.4-4.1 s; ``summary_problem(10000, 0,
#: restate=0.8)`` at 5 % and 25 % 13.4 and 21.2 / 4.6 and 4.0 s; at 3,000 experiences 0.2-1.2 /
#: 0.6-1.7 s.  Only a basis changes with it, never a bound (every bound bnb reports is recomputed
#: from the prices the LP proposes).  A model that has cut rows at its first solve (a restart's, which
#: keeps its root's cuts) is left to the dual simplex: the tableau cuts are dense rows, and the
#: interior-point method's normal equations fill with them (5.7 s on a restart of
#: ``summary_problem(10000, 0)`` at 25 %, 21,021 columns, where the dual simplex took 3.9 s).  Whole
#: solves side by side, ``summary_problem(10000, s)``: with 2 s the 2.45 s first LP at 10 % went to the
#: interior point (time 1.21 of the dual simplex alone) and at 25 % 0.83 (48.6 -> 40.4 s); with 3 s,
#: seed 0 at 10 % 0.92, at 25 % 0.87 (36.2 -> 31.5 s); seed 2 at 25 % timed out at 120 s either way.
FIRST_SOLVE_SECONDS: float | None = 3.0


def column_lp(highspy, matrix: sp.csc_array, cost, col_lower, col_upper, row_lower, row_upper):
    """A ``highspy.HighsLp`` of the column-wise ``matrix`` with these costs and bounds (HiGHS's own
    infinity where a bound is infinite)."""
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = matrix.shape[1], matrix.shape[0]
    lp.col_cost_ = np.asarray(cost, dtype=float)
    lp.col_lower_ = np.asarray(col_lower, dtype=float)
    lp.col_upper_ = np.asarray(col_upper, dtype=float)
    lp.row_lower_ = np.asarray(row_lower, dtype=float)
    lp.row_upper_ = np.asarray(row_upper, dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = matrix.shape[1], matrix.shape[0]
    lp.a_matrix_.start_ = matrix.indptr.astype(np.int32)
    lp.a_matrix_.index_ = matrix.indices.astype(np.int32)
    lp.a_matrix_.value_ = matrix.data.astype(float)
    return lp


class NodeLP:
    """``max sum_r w_r y_r`` s.t. ``y_r <= a_rk * (sum_u a_ur x_u) + b_rk`` per piece, the budget, one per group.

    Columns: ``x_u`` (one per candidate, in [0, 1]) then ``y_r`` (one per unit).  Rows: the
    pieces with a positive slope, the budget, one row per group.  Weights and costs are handed to
    HiGHS at scale 1 (its tolerances are absolute).  With ``budget_steps`` (costs multiples of
    ``cost_step > 0``, and no store spending more than ``budget_steps`` steps) the budget row states
    that many steps, the budget rounded down to the costs' grid (the same stores fit), and the
    tableau cuts round its activity as an integer number of steps
    (:mod:`memaudit_solvers.bnb.tableau`).
    """

    def __init__(self, problem: Problem, budget: float, budget_steps: int | None = None, cost_step: float = 0.0):
        import highspy

        self.hs = highspy
        p = problem
        n_x, n_y = p.n_candidates, p.n_units
        a, b = p.h_slopes, p.h_intercepts
        flat = a <= 0
        y_cap = np.where(flat, b, np.inf).min(axis=1)
        # no store covers a unit more than all its candidates together: h there bounds its y
        y_top = h_values(p, np.arange(n_y), np.asarray(p.coverage.sum(axis=0)).ravel()) if n_y else np.zeros(0)
        self.rows_r, rows_k = np.nonzero(~flat)
        self.slope = a[self.rows_r, rows_k]
        n_pieces = self.rows_r.size
        self.w_scale = float(p.weights.max()) if n_y and p.weights.max() > 0 else 1.0
        self.c_scale = max(float(budget), float(p.costs.max()) if n_x else 0.0) or 1.0
        # costs on a grid: every store spends K cost steps, K an integer of at most budget_steps
        self.budget_steps = budget_steps if budget_steps is not None and cost_step > 0 else None
        self.budget_sigma = cost_step / self.c_scale
        if self.budget_steps is not None:
            budget = min(budget, self.budget_steps * cost_step)
        cov_t = sp.csr_array(p.coverage.T)                                       # (n_y, n_x)
        piece_x = sp.csr_array(cov_t[self.rows_r].multiply((-self.slope)[:, None]))
        piece_y = sp.csr_array((np.ones(n_pieces), (np.arange(n_pieces), self.rows_r)), shape=(n_pieces, n_y))
        budget_row = sp.csr_array(p.costs[None, :] / self.c_scale)
        group_rows = sp.csr_array((np.ones(n_x), (p.groups, np.arange(n_x))), shape=(p.n_groups, n_x))
        matrix = sp.vstack([sp.hstack([piece_x, piece_y]),
                            sp.hstack([budget_row, sp.csr_array((1, n_y))]),
                            sp.hstack([group_rows, sp.csr_array((p.n_groups, n_y))])]).tocsc()
        inf = highspy.kHighsInf
        lp = column_lp(highspy, matrix, np.concatenate([np.zeros(n_x), -p.weights / self.w_scale]),
                       np.zeros(n_x + n_y), np.concatenate([np.ones(n_x), np.where(np.isinf(y_cap), inf, y_cap)]),
                       np.full(matrix.shape[0], -inf),
                       np.concatenate([b[self.rows_r, rows_k], [budget / self.c_scale], np.ones(p.n_groups)]))
        # the model as we built it, with every row's global bounds (a group row's lower bound is 0):
        # the tableau cuts (:mod:`memaudit_solvers.bnb.tableau`) combine these rows themselves
        self.matrix = sp.csr_array(matrix)
        self.row_lo = np.full(matrix.shape[0], -np.inf)
        self.row_lo[n_pieces + 1:] = 0.0
        self.row_hi = np.asarray(lp.row_upper_, dtype=float).copy()
        self.col_hi = np.concatenate([np.ones(n_x), np.minimum(y_cap, y_top)])
        cls = getattr(getattr(highspy, "_core", None), "_Highs", None) or highspy.Highs   # no banner
        h: Any = cls()    # the banner-free core class when present: the same methods, no stubs
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.passModel(lp)
        self.h = h
        self.n_x, self.n_y, self.n_pieces = n_x, n_y, n_pieces
        self.group_row0 = n_pieces + 1
        self.n_groups = p.n_groups
        self.x_idx = np.arange(n_x, dtype=np.int32)
        self.g_idx = np.arange(self.group_row0, self.group_row0 + p.n_groups, dtype=np.int32)
        self.cut_row0 = self.group_row0 + p.n_groups
        self.n_cuts = 0
        self.first_solve: str | None = None     # how the first solve went: "dual simplex" or "interior point"

    def add_cuts(self, ycoef: sp.csr_array, gamma: np.ndarray, alpha: sp.csr_array) -> None:
        """Add the rows ``ycoef . y - alpha . x <= gamma`` (cuts of :class:`memaudit_solvers.bnb.cuts.Cuts`)."""
        n = int(gamma.size)
        if n == 0:
            return
        rows = sp.csr_array(sp.hstack([-alpha, ycoef]))
        self.h.addRows(n, np.full(n, -self.hs.kHighsInf), np.asarray(gamma, dtype=float),
                       rows.nnz, rows.indptr.astype(np.int32), rows.indices.astype(np.int32),
                       rows.data.astype(float))
        self.matrix = sp.csr_array(sp.vstack([self.matrix, rows]))
        self.row_lo = np.concatenate([self.row_lo, np.full(n, -np.inf)])
        self.row_hi = np.concatenate([self.row_hi, np.asarray(gamma, dtype=float)])
        self.n_cuts += n

    def keep_cuts(self, mask: np.ndarray) -> None:
        """Delete the cut rows where ``mask`` is False (the rows of :meth:`add_cuts`, in order)."""
        mask = np.asarray(mask, dtype=bool)
        gone = self.cut_row0 + np.flatnonzero(~mask)
        if gone.size == 0:
            return
        self.h.deleteRows(int(gone.size), gone.astype(np.int32))
        rows = np.ones(self.matrix.shape[0], dtype=bool)
        rows[gone] = False
        self.matrix = sp.csr_array(self.matrix[rows])
        self.row_lo, self.row_hi = self.row_lo[rows], self.row_hi[rows]
        self.n_cuts = int(mask.sum())

    def tableau_rows(self, columns: np.ndarray) -> list[np.ndarray]:
        """For each of ``columns`` that is basic, its row ``lambda`` of the basis inverse.

        ``lambda^T A`` is the column's tableau row (1 on it, 0 on the other basic columns) as far as
        HiGHS's basis goes; whoever uses it must not rely on that (see :mod:`memaudit_solvers.bnb.tableau`).
        """
        status, basic = self.h.getBasicVariables()
        if status != self.hs.HighsStatus.kOk:
            return []
        position = {int(v): i for i, v in enumerate(np.asarray(basic).tolist()) if v >= 0}
        out = []
        for j in np.asarray(columns, dtype=np.int64).tolist():
            if j not in position:
                continue
            status, lam = self.h.getBasisInverseRow(position[j])
            if status == self.hs.HighsStatus.kOk:
                out.append(np.asarray(lam, dtype=float))
        return out

    def trial(self, column: int, lower: float, upper: float, restore: tuple[float, float],
              iterations: int) -> float | None:
        """The LP value with candidate ``column``'s bounds set to ``[lower, upper]``, then ``restore`` d.

        A strong-branching probe: the dual simplex starts from the current basis (a bound change
        keeps it dual feasible) and stops after ``iterations``; an LP HiGHS finds infeasible is
        -inf, one it does not finish is the value where it stopped (the dual simplex's objective,
        at least the child's LP value), and None is returned when HiGHS reports neither.  Only a
        branching choice uses it, never a bound.
        """
        h = self.h
        h.setOptionValue("simplex_iteration_limit", int(iterations))
        h.changeColBounds(int(column), float(lower), float(upper))
        try:
            h.run()
            status = h.getModelStatus()
            ms = self.hs.HighsModelStatus
            if status == ms.kInfeasible:
                return -np.inf
            if status not in (ms.kOptimal, ms.kIterationLimit):
                return None
            return -h.getInfo().objective_function_value * self.w_scale
        finally:
            h.changeColBounds(int(column), float(restore[0]), float(restore[1]))
            h.setOptionValue("simplex_iteration_limit", _NO_LIMIT)

    def _run(self):
        h = self.h
        status = h.run()
        if status.name == "kError" and h.getModelStatus().name == "kNotset":
            h.resetGlobalScheduler(True)        # another HiGHS user started the scheduler differently
            status = h.run()
        return status

    def _first_run(self):
        """The first solve: the dual simplex for :data:`FIRST_SOLVE_SECONDS`, then, if it has not
        finished, the interior-point method with crossover; the options are put back after."""
        h, seconds = self.h, FIRST_SOLVE_SECONDS
        self.first_solve = "dual simplex"
        if seconds is None:
            self._run()
            return
        h.setOptionValue("time_limit", float(seconds))
        try:
            self._run()
        finally:
            h.setOptionValue("time_limit", self.hs.kHighsInf)
        if h.getModelStatus() != self.hs.HighsModelStatus.kTimeLimit:
            return
        self.first_solve = "interior point"
        h.setOptionValue("solver", "ipm")
        try:
            self._run()
        finally:
            h.setOptionValue("solver", "choose")
        # once more by the simplex, from the crossover's basis (no iteration when it is optimal): the
        # simplex then holds that basis factorised.  Without it HiGHS 1.16 may have no factorisation
        # after an interior-point run, and getBasisInverseRow (the tableau cuts) crashed the process
        self._run()

    def solve(self, lower: np.ndarray, upper: np.ndarray, group_lower: np.ndarray):
        """Re-solve with these candidate bounds and group-row lower bounds.

        Returns ``(mu, pi, x, y, value)``: unit prices (from the piece rows' duals), the cut rows'
        multipliers (their duals), the candidates' and the units' LP values and the LP value, or
        None when HiGHS does not report an optimum.
        """
        h = self.h
        h.changeColsBounds(self.n_x, self.x_idx, lower.astype(float), upper.astype(float))
        h.changeRowsBounds(self.n_groups, self.g_idx, group_lower.astype(float), np.ones(self.n_groups))
        if self.first_solve is None and self.n_cuts == 0:
            self._first_run()
        else:
            self.first_solve = self.first_solve or "dual simplex"
            self._run()
        if h.getModelStatus() != self.hs.HighsModelStatus.kOptimal:
            return None
        sol = h.getSolution()
        row_dual = np.asarray(sol.row_dual)
        duals = np.maximum(-row_dual[: self.n_pieces], 0.0) * self.w_scale
        mu = np.zeros(self.n_y)
        np.add.at(mu, self.rows_r, self.slope * duals)
        pi = np.maximum(-row_dual[self.cut_row0:self.cut_row0 + self.n_cuts], 0.0) * self.w_scale
        value = -h.getInfo().objective_function_value * self.w_scale
        col = np.asarray(sol.col_value)
        return mu, pi, col[: self.n_x], col[self.n_x:], value
