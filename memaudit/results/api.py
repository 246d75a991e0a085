"""The results store as pandas: :func:`load` and the usual pivots (ratio by method and budget, kinds kept, validity kept)."""

from __future__ import annotations

import math

import numpy as np

from .store import COLUMNS, canonical_json, open_store

__all__ = ["load", "frame", "scores", "ratio_table", "ratio_intervals", "kinds_table", "validity_table",
           "family_table", "write_rows"]

#: payload fields of score rows lifted into their own columns
_PAYLOAD_COLUMNS = ("opt_certified", "opt_status", "units_covered", "units_total", "validity_covered",
                    "validity_total", "command")


def frame(rows):
    """A DataFrame of store rows (as :meth:`Store.rows` returns them): one row per result.

    Columns: the store's columns (``store``, ``certificate`` and ``payload`` kept as Python
    objects), ``settings.<name>`` for every setting, the score fields of the payload
    (``units_covered``, ``validity_covered``, ``opt_certified``, ...), and ``kinds.<kind>`` (how
    many candidates of each kind the store keeps).
    """
    import pandas as pd

    records = []
    for r in rows:
        rec = {c: r.get(c) for c in ("id", "key", *COLUMNS)}
        rec["settings_text"] = canonical_json(r.get("settings") or {})
        for k, v in (r.get("settings") or {}).items():
            rec[f"settings.{k}"] = v
        payload = r.get("payload") or {}
        for k in _PAYLOAD_COLUMNS:
            if k in payload:
                rec[k] = payload[k]
        for k, n in (payload.get("kinds") or {}).items():
            rec[f"kinds.{k}"] = n
        records.append(rec)
    df = pd.DataFrame.from_records(records, columns=None if records else ["id", "key", *COLUMNS, "settings_text"])
    if len(df):
        # B / stream cost is the requested fraction up to round-off (0.1 may come back as 0.10000000000000002)
        df["budget_frac"] = df["budget_frac"].astype(float).round(9)
    for c in df.columns:
        if c.startswith("kinds."):
            df[c] = df[c].fillna(0).astype(int)
    return df


def load(db=None, kind: str | None = None):
    """Every row of the store at ``db`` (default: the default store) as a pandas DataFrame.

    Examples
    --------
    >>> import os, tempfile
    >>> df = load(os.path.join(tempfile.mkdtemp(), "empty.sqlite"))
    >>> len(df), "ratio" in df.columns
    (0, True)
    """
    store = open_store(db)
    try:
        return frame(store.rows(kind))
    finally:
        if store is not db:
            store.close()


def scores(df, *, certified_only: bool = True, current_only: bool = True):
    """The score rows of ``df`` (one per package, budget, method), with a ratio.

    ``certified_only`` keeps rows scored against a certified OPT; ``current_only`` keeps, for each
    (package, budget, method, settings), the row of the newest memaudit/source version.
    """
    out = df[(df["kind"] == "score") & df["ratio"].notna()]
    if certified_only and "opt_certified" in out.columns:
        out = out[out["opt_certified"].fillna(False).astype(bool)]
    if current_only and len(out):
        out = out.sort_values(["created", "id"]).drop_duplicates(
            ["package_sha256", "budget", "method", "settings_text"], keep="last")
    return out


def ratio_table(df, *, index="method", columns="budget_frac", aggfunc="mean", family=None):
    """Mean ratio to OPT: one row per method, one column per budget fraction (``family`` filters)."""
    s = scores(df)
    if family is not None:
        s = s[s["package_family"] == family]
    return s.pivot_table(index=index, columns=columns, values="ratio", aggfunc=aggfunc)


def family_table(df):
    """Mean ratio to OPT per (package family, method) and budget fraction."""
    return ratio_table(df, index=["package_family", "method"])


def _bootstrap(values, n_boot: int = 2000, seed: int = 0, level: float = 0.95):
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return float(values.mean()), float(values.mean())
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(n_boot, len(values)))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def ratio_intervals(df, *, by=("package_family", "method", "budget_frac")):
    """Per group: ``n``, ``mean``, a 95 % bootstrap interval of the mean (``lo``, ``hi``; 2000
    resamples, seed 0), ``min`` and ``max`` of the ratio to OPT over the packages."""
    import pandas as pd

    s = scores(df).copy()
    s["package_family"] = s["package_family"].fillna("-")
    out = []
    for keys, g in s.groupby(list(by), sort=True):
        vals = g["ratio"].astype(float).to_numpy()
        lo, hi = _bootstrap(vals)
        out.append({**dict(zip(by, keys)), "n": len(vals), "mean": float(vals.mean()), "lo": lo, "hi": hi,
                    "min": float(vals.min()), "max": float(vals.max())})
    return pd.DataFrame(out, columns=[*by, "n", "mean", "lo", "hi", "min", "max"])


def kinds_table(df):
    """Mean number of stored candidates of each kind, per method (over every package and budget)."""
    s = scores(df)
    cols = sorted(c for c in s.columns if c.startswith("kinds."))
    if not cols:
        import pandas as pd

        return pd.DataFrame()
    t = s.groupby("method")[cols].mean()
    t.columns = [c.split(".", 1)[1] for c in cols]
    return t


def validity_table(df):
    """Validity units fully covered / validity units present, per method and budget fraction."""
    s = scores(df)
    s = s[s["validity_total"].fillna(0) > 0]
    g = s.groupby(["method", "budget_frac"])[["validity_covered", "validity_total"]].sum()
    return (g["validity_covered"] / g["validity_total"]).unstack("budget_frac")


def write_rows(df, path) -> None:
    """Write ``df`` to ``path`` atomically: Parquet for ``.parquet`` (needs pyarrow), else CSV.

    Object columns (stores, certificates, payloads) are written as JSON text.
    """
    import io
    import json
    import os

    from ..errors import MemauditError
    from ..fileio import atomic_write

    path = os.fspath(path)
    out = df.copy()
    for c in ("store", "certificate", "payload", "backend_versions", "settings"):
        if c in out.columns:
            out[c] = [None if v is None or (isinstance(v, float) and math.isnan(v)) else
                      json.dumps(v, sort_keys=True, allow_nan=False) for v in out[c]]
    if path.lower().endswith(".parquet"):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise MemauditError(f"{path}: writing Parquet needs pyarrow: pip install 'memaudit[parquet]' "
                                "(or pyarrow), or write --out rows.csv") from None
        buf = io.BytesIO()
        out.to_parquet(buf, index=False)
        atomic_write(path, buf.getvalue())
    elif path.lower().endswith(".csv"):
        atomic_write(path, out.to_csv(index=False).encode("utf-8"))
    else:
        raise MemauditError(f"{path}: --out must end in .parquet or .csv")
