"""The budget price and the reachability programme of the lattice certificate (integers throughout)."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from ..result import Declined

__all__ = ["best_price", "exact_bound", "prove"]

#: the most cell updates the reachability programme may make
_MAX_WORK = 300_000_000


def _lagrangian(values: np.ndarray, cost: np.ndarray, starts: np.ndarray, budget: int, lam: float) -> float:
    return lam * budget + float(np.maximum.reduceat(values - lam * cost, starts[:-1]).sum())


def best_price(values: np.ndarray, cost: np.ndarray, starts: np.ndarray, budget: int) -> Fraction:
    """The budget price (whole grid steps of F per step of cost) minimising the Lagrangian bound, exact.

    The bound is convex and piecewise linear in the price, with kinks at ratios of a component's
    value and cost differences; a golden-section search in floats finds the minimiser and
    :meth:`fractions.Fraction.limit_denominator` the kink it sits at (any price gives a valid bound;
    among the candidates the one with the smallest exact bound is kept).
    """
    if values.size == 0 or starts.size < 2:
        return Fraction(0)
    pos = cost > 0
    hi = float((values[pos] / cost[pos]).max()) if pos.any() else 0.0
    if hi <= 0:
        return Fraction(0)
    lo, hi = 0.0, hi
    phi = (math.sqrt(5) - 1) / 2
    a, b = hi - phi * (hi - lo), lo + phi * (hi - lo)
    fa, fb = _lagrangian(values, cost, starts, budget, a), _lagrangian(values, cost, starts, budget, b)
    for _ in range(64):                  # the bracket shrinks to 1e-13 of its width
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - phi * (hi - lo)
            fa = _lagrangian(values, cost, starts, budget, a)
        else:
            lo, a, fa = a, b, fb
            b = lo + phi * (hi - lo)
            fb = _lagrangian(values, cost, starts, budget, b)
    lam = (lo + hi) / 2
    span = int(cost.max()) or 1
    candidates = {Fraction(0)} | {Fraction(lam).limit_denominator(d) for d in (span, 10 * span, span * span)}
    bounds = {}
    for f in sorted(candidates, key=lambda f: f.denominator):
        try:
            bounds[f] = exact_bound(values, cost, starts, budget, f)[0]
        except Declined:                     # a denominator too large for 64-bit arithmetic: not this one
            continue
    return min(bounds, key=lambda f: (bounds[f], f.denominator))


def exact_bound(values, cost, starts, budget: int, lam: Fraction):
    """``(D, M, R, q)``: the Lagrangian bound at ``lam = p / q`` in units of ``1 / q`` grid steps, each
    component's best ``M`` and each store's ``R = q * value - p * cost`` (int64, checked)."""
    p, q = lam.numerator, lam.denominator
    top = q * float(np.abs(values).max(initial=0)) + p * float(np.abs(cost).max(initial=0))
    if top * max(1, starts.size) >= 2.0**62:
        raise Declined("the price's denominator makes the numbers too large for exact 64-bit arithmetic")
    r = q * values - p * cost
    best = np.maximum.reduceat(r, starts[:-1]) if r.size else np.zeros(0, dtype=np.int64)
    d = p * budget + int(best.sum())
    return Fraction(d, q), best, r, q


def prove(values, cost, starts, budget: int, v_hint: int, lam: Fraction, max_window: int, deadline: float):
    """The reachability programme.  Returns None on the deadline, else ``(bound, window, losses, D, q,
    followed)``: ``bound`` None when no store beats the hint, else the highest value (grid steps) one might
    reach; ``window``, ``D`` in units ``1 / q`` grid steps; ``losses`` the distinct component losses within the
    window with how many components offer each; ``followed`` True when the second stage (the unspent budget
    followed exactly, :func:`_with_costs`) decided.

    The first stage lets the unspent budget be any amount (``p`` per step): a relaxation, cheap.  When it
    finds a shortfall within reach, the second stage follows the cost each component's store spends."""
    _, best, r, q = exact_bound(values, cost, starts, budget, lam)
    p = lam.numerator
    d_units = p * budget + int(best.sum())
    window = d_units - q * (v_hint + 1)          # the shortfall of a store one grid step better
    if window < 0:
        return None if time.perf_counter() > deadline else (None, window, (), d_units, q, False)
    if window > max_window:
        return (d_units // q, window, (), d_units, q, False)
    comp = np.repeat(np.arange(starts.size - 1), np.diff(starts))
    loss = best[comp] - r
    small = (loss > 0) & (loss <= window)
    pairs = np.unique(np.column_stack([comp[small], loss[small]]), axis=0) if small.any() else np.zeros((0, 2), np.int64)
    counts = np.unique(pairs[:, 1], return_counts=True) if pairs.size else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    losses = tuple(zip(counts[0].tolist(), counts[1].tolist()))
    # components grouped by the set of losses they offer: each picks one of its set, or 0
    sets: dict[tuple, int] = {}
    if pairs.size:
        cut = np.flatnonzero(np.r_[True, pairs[1:, 0] != pairs[:-1, 0]])
        for a, b in zip(cut.tolist(), np.r_[cut[1:], len(pairs)].tolist()):
            key = tuple(pairs[a:b, 1].tolist())
            sets[key] = sets.get(key, 0) + 1
    reach = np.zeros(window + 1, dtype=bool)
    reach[0] = True
    work = 0
    for key, count in sorted(sets.items()):
        for _ in range(count):
            new = reach.copy()
            for v in key:
                new[v:] |= reach[:window + 1 - v]
            work += (len(key) + 1) * (window + 1)
            if np.array_equal(new, reach):
                break
            reach = new
            if work > _MAX_WORK or time.perf_counter() > deadline:
                return None if time.perf_counter() > deadline else (d_units // q, window, losses, d_units, q, False)
    shift = p
    while 0 < shift <= window:                    # any number of unspent budget steps, p each
        reach[shift:] |= reach[:window + 1 - shift].copy()
        shift *= 2
    targets = window - q * np.arange(window // q + 1)      # shortfalls of stores 1, 2, ... steps better
    hit = np.flatnonzero(reach[targets])
    followed = False
    if hit.size:
        # the unspent budget is no free amount: it is what the components' stores leave; follow it exactly
        exact = _with_costs(loss, cost, comp, starts.size - 1, window, budget, p, targets, deadline)
        if exact is not None:
            hit, followed = exact, True
    if hit.size == 0:
        return (None, window, losses, d_units, q, followed)
    return (v_hint + 1 + int(hit.max()), window, losses, d_units, q, followed)


#: the most cells the second stage's table (losses x cost) may have
_MAX_CELLS = 50_000_000


def _with_costs(loss, cost, comp, n_comp: int, window: int, budget: int, p: int, targets, deadline: float):
    """The second stage: which of the ``targets`` shortfalls a store can make when the unspent budget is what
    its components' stores leave, ``budget - sum of their costs`` (the first stage lets it be any amount).
    Every component picks one of its stores within the window; one with a single such store spends its cost
    whatever the store.  A table over (loss so far, cost so far) decides it exactly.  Returns the indices of
    the reachable targets, or None when the table or its work would be too large or the deadline passes."""
    within = loss <= window
    ell, c, k = loss[within], cost[within], comp[within]
    options = np.bincount(k, minlength=n_comp)
    single = options[k] == 1
    room = budget - int(c[single].sum())
    if room < 0:                                  # the stores every component must keep already overspend
        return np.zeros(0, dtype=np.int64)
    ell, c, k = ell[~single], c[~single], k[~single]
    cells = (window + 1) * (room + 1)
    if cells > _MAX_CELLS or cells * max(ell.size, 1) > _MAX_WORK:
        return None
    table = np.zeros((window + 1, room + 1), dtype=bool)
    table[0, 0] = True
    cut = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if k.size else np.zeros(0, np.int64)
    for a, b in zip(cut.tolist(), np.r_[cut[1:], k.size].tolist()):
        if time.perf_counter() > deadline:
            return None
        new = np.zeros_like(table)
        for li, ci in zip(ell[a:b].tolist(), c[a:b].tolist()):
            if time.perf_counter() > deadline:
                return None
            if ci <= room:
                new[li:, ci:] |= table[:window + 1 - li, :room + 1 - ci]
        table = new
    targets = np.asarray(targets, dtype=np.int64)
    if p == 0:                           # unspent budget loses nothing: the loss alone, at any cost spent
        return np.flatnonzero(np.asarray(table.any(axis=1), dtype=bool)[targets])     # (targets lie in the window)
    # a loss l of the components and s unspent steps with l + p s = short, s = room - (cost spent) >= 0:
    # one array operation per s (or per target, when there are fewer), never a loop over both (with a
    # window of 61,559 and as many targets that loop ran 266 s on summary_problem(20, 0) at 10 %)
    hit = np.zeros(targets.size, dtype=bool)
    if room + 1 <= targets.size:
        for s in range(room + 1):
            if time.perf_counter() > deadline:
                return None
            li = targets - p * s
            ok = (li >= 0) & (li <= window)
            hit[ok] |= table[li[ok], room - s]
    else:
        steps = np.arange(room + 1)
        for i, short in enumerate(targets.tolist()):
            if time.perf_counter() > deadline:
                return None
            li = short - p * steps
            ok = (li >= 0) & (li <= window)
            hit[i] = bool(table[li[ok], room - steps[ok]].any())
    return np.flatnonzero(hit)
