"""The results store: one SQLite file (WAL mode) holding every solve, score, audit and harness row under its key."""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import sqlite3
import time
from pathlib import Path

from ..errors import MemauditError

__all__ = ["Store", "StoreError", "SCHEMA_VERSION", "KINDS", "default_db_path", "row_key", "code_version",
           "canonical_json", "open_store"]

#: the schema this memaudit writes; older files are migrated forward on open (see ``_MIGRATIONS``)
SCHEMA_VERSION = 2

#: what a row records: ``solve`` (a method's store, certified or not, by a back-end), ``score`` (a
#: method's store scored against OPT), ``audit`` (a product's exported store), ``harness`` and
#: ``diagnose`` (QA-harness outcomes per policy)
KINDS = ("solve", "score", "audit", "harness", "diagnose")

#: seconds a writer waits for another writer's lock before retrying (and how long it retries)
_BUSY_MS = 30_000
_RETRY_SECONDS = 300.0

#: every column of ``results`` after the key, in insert order
COLUMNS = ("kind", "package_sha256", "package_id", "package_family", "budget", "budget_frac", "method", "backend",
           "settings", "memaudit_version", "code_version", "backend_versions", "status", "certified", "reusable",
           "value", "opt", "ratio", "bound", "gap", "cost", "wall_time", "store", "certificate", "payload", "error",
           "created", "host")

_JSON_COLUMNS = ("settings", "backend_versions", "store", "certificate", "payload")


class StoreError(MemauditError, RuntimeError):
    """The results store cannot be opened, read or written; the message names the file."""


def default_db_path() -> Path:
    """``$MEMAUDIT_DB`` if set, else ``~/.cache/memaudit/results.sqlite`` (``$XDG_CACHE_HOME`` honoured)."""
    env = os.environ.get("MEMAUDIT_DB")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "memaudit" / "results.sqlite"


def _plain(v):
    """JSON-ready data: numpy scalars unwrapped, non-finite floats as strings (``"inf"``)."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        return _plain(v.tolist())
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def canonical_json(data) -> str:
    """Compact JSON with sorted keys: the same data always gives the same text.

    Examples
    --------
    >>> canonical_json({"b": 1, "a": [1.5, float("inf")]})
    '{"a":[1.5,"inf"],"b":1}'
    """
    return json.dumps(_plain(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def row_key(*, kind: str, package_sha256: str, budget, method: str, backend, settings: dict,
            memaudit_version: str, code_version: str, backend_versions: dict) -> str:
    """The sha256 that identifies a result: every input that can change it, versions included.

    A row is reused only under its exact key, so a row written by another memaudit version, another
    source tree or another back-end version is never found for the current one.

    Examples
    --------
    >>> k = dict(kind="solve", package_sha256="ab", budget=3.0, method="bnb", backend="milp-highs",
    ...          settings={}, memaudit_version="0.1.0", code_version="x", backend_versions={})
    >>> row_key(**k) == row_key(**k), row_key(**k) == row_key(**dict(k, memaudit_version="0.0.9"))
    (True, False)
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    body = {"kind": kind, "package_sha256": package_sha256,
            "budget": None if budget is None else repr(float(budget)), "method": method, "backend": backend,
            "settings": settings, "memaudit_version": memaudit_version, "code_version": code_version,
            "backend_versions": backend_versions}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


_CODE_VERSION: list = []


def code_version() -> str:
    """A fingerprint (16 hex digits) of the source that computes results.

    sha256 over the bytes of every module of ``solvers/`` (subpackages included), every top-level ``memaudit/*.py`` and
    ``memaudit/results/cache.py``, in path order.  ``__version__`` alone does not change while the
    code does; this does, so a cached row is never reused across an edit of the solvers.
    """
    if not _CODE_VERSION:
        import memaudit_solvers

        here = Path(__file__).resolve().parent
        files = sorted(Path(memaudit_solvers.__file__).resolve().parent.rglob("*.py"))
        files += sorted(here.parent.glob("*.py")) + [here / "cache.py"]
        h = hashlib.sha256()
        for f in files:
            h.update(f.name.encode("utf-8") + b"\0" + f.read_bytes() + b"\0")
        _CODE_VERSION.append(h.hexdigest()[:16])
    return _CODE_VERSION[0]


# -- schema and migrations ------------------------------------------------------------

def _migrate_1(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE results (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            package_sha256 TEXT NOT NULL,
            package_id TEXT,
            package_family TEXT,
            budget REAL,
            budget_frac REAL,
            method TEXT,
            backend TEXT,
            settings TEXT NOT NULL,
            memaudit_version TEXT NOT NULL,
            code_version TEXT NOT NULL,
            backend_versions TEXT NOT NULL,
            status TEXT NOT NULL,
            certified INTEGER NOT NULL DEFAULT 0,
            reusable INTEGER NOT NULL DEFAULT 0,
            value REAL,
            opt REAL,
            ratio REAL,
            bound REAL,
            gap REAL,
            cost REAL,
            wall_time REAL,
            store TEXT,
            certificate TEXT,
            payload TEXT,
            error TEXT,
            created REAL NOT NULL
        )""")
    conn.execute("CREATE INDEX results_kind ON results (kind, method)")


def _migrate_2(conn: sqlite3.Connection) -> None:
    # schema 2: the host that computed a row, and a lookup index by package and budget
    conn.execute("ALTER TABLE results ADD COLUMN host TEXT")
    conn.execute("CREATE INDEX results_package_budget ON results (package_sha256, budget)")


#: ``_MIGRATIONS[v]`` takes a file from schema ``v`` to ``v + 1``; a new schema adds one function here
_MIGRATIONS = {0: _migrate_1, 1: _migrate_2}
assert len(_MIGRATIONS) == SCHEMA_VERSION


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class Store:
    """An open results store.

    Parameters
    ----------
    path : str or PathLike, optional
        The SQLite file; default :func:`default_db_path`.  Its folder is created.

    Every write is one ``BEGIN IMMEDIATE`` transaction, so concurrent writers (processes, a sweep's
    client) queue on SQLite's lock instead of overwriting each other; WAL mode lets readers go on
    meanwhile.  A row is written under its key: a reusable row (certified, or a deterministic
    method's store) is never overwritten, a non-reusable one (an error, a time-out) is replaced
    by the next attempt.  WAL needs a local file system (not NFS).

    Examples
    --------
    >>> import tempfile, os
    >>> with Store(os.path.join(tempfile.mkdtemp(), "r.sqlite")) as st:
    ...     st.schema_version(), st.count()
    (2, 0)
    """

    def __init__(self, path=None, *, _target_version: int = SCHEMA_VERSION):
        self.path = Path(path).expanduser() if path is not None else default_db_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=_BUSY_MS / 1000, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"{self.path}: cannot open the results store: {exc}") from None
        self._conn.row_factory = sqlite3.Row
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            mode = self._retry(lambda: self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
            if str(mode).lower() != "wal":
                raise StoreError(f"{self.path}: SQLite refused WAL mode (journal mode {mode!r}); "
                                 "put the store on a local file system")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._migrate(_target_version)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise StoreError(f"{self.path}: not a memaudit results store (SQLite says: {exc})") from None

    # -- plumbing --
    def close(self) -> None:
        self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _retry(self, fn):
        deadline = time.monotonic() + _RETRY_SECONDS
        delay = 0.01
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise StoreError(f"{self.path}: {exc}") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _transaction(self, fn):
        def run():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                out = fn()
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return out
        return self._retry(run)

    def schema_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self, target: int) -> None:
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: results store schema {version} was written by a newer memaudit "
                             f"(this one reads up to {SCHEMA_VERSION}); upgrade memaudit or use another --db")
        if version >= target:
            return

        def step():
            current = self.schema_version()  # another process may have migrated meanwhile
            for v in range(current, target):
                _MIGRATIONS[v](self._conn)
                self._conn.execute(f"PRAGMA user_version = {v + 1}")
        self._transaction(step)

    # -- writing --
    def put(self, rows, replace: bool = False) -> int:
        """Write rows (dicts with ``key`` and any of :data:`COLUMNS`) in one transaction.

        Returns the number of rows inserted or replaced.  A reusable row already under the same
        key is kept (and not counted) unless ``replace`` and the new row is reusable too (a deliberate
        re-solve, ``--no-cache``): a failed or timed-out re-solve never displaces a certified row.
        """
        rows = [self._encode(r) for r in rows]
        if not rows:
            return 0
        cols = ("key",) + COLUMNS
        sql = (f"INSERT INTO results ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)}) "
               f"ON CONFLICT(key) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in COLUMNS)} "
               + ("WHERE results.reusable = 0 OR excluded.reusable = 1" if replace else "WHERE results.reusable = 0"))

        def write():
            before = self._conn.total_changes
            self._conn.executemany(sql, [tuple(r[c] for c in cols) for r in rows])
            return self._conn.total_changes - before
        return self._transaction(write)

    def _encode(self, row: dict) -> dict:
        if "key" not in row or row.get("kind") not in KINDS:
            raise ValueError(f"a results row needs a key and a kind in {KINDS}; got {sorted(row)}")
        out = {c: row.get(c) for c in COLUMNS}
        out["key"] = row["key"]
        for c in _JSON_COLUMNS:
            if out[c] is not None or c in ("settings", "backend_versions"):
                out[c] = canonical_json(out[c] if out[c] is not None else {})
        for c in ("value", "opt", "ratio", "bound", "gap", "cost", "wall_time", "budget", "budget_frac"):
            if out[c] is not None:
                out[c] = float(out[c])  # inf is stored as SQLite's REAL infinity
        out["certified"] = int(bool(out["certified"]))
        out["reusable"] = int(bool(out["reusable"]))
        out["created"] = out["created"] or time.time()
        out["host"] = out["host"] or f"{socket.gethostname()}:{os.getpid()}"
        out["memaudit_version"] = out["memaudit_version"] or ""
        out["code_version"] = out["code_version"] or ""
        out["status"] = out["status"] or "unknown"
        return out

    # -- reading --
    @staticmethod
    def _decode(r: sqlite3.Row) -> dict:
        d = dict(r)
        for c in _JSON_COLUMNS:
            if d.get(c) is not None:
                d[c] = json.loads(d[c])
        d["certified"] = bool(d["certified"])
        d["reusable"] = bool(d["reusable"])
        return d

    def get(self, key: str) -> dict | None:
        """The row under ``key``, or None."""
        r = self._retry(lambda: self._conn.execute("SELECT * FROM results WHERE key = ?", (key,)).fetchone())
        return None if r is None else self._decode(r)

    def get_many(self, keys) -> dict:
        """``{key: row}`` for the keys that have a row."""
        keys = list(dict.fromkeys(keys))
        out = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            sql = f"SELECT * FROM results WHERE key IN ({', '.join('?' for _ in chunk)})"
            for r in self._retry(lambda: self._conn.execute(sql, chunk).fetchall()):
                out[r["key"]] = self._decode(r)
        return out

    def rows(self, kind: str | None = None) -> list[dict]:
        """Every row (of ``kind``), in insertion order."""
        if kind is None:
            cur = self._retry(lambda: self._conn.execute("SELECT * FROM results ORDER BY id").fetchall())
        else:
            cur = self._retry(lambda: self._conn.execute("SELECT * FROM results WHERE kind = ? ORDER BY id",
                                                         (kind,)).fetchall())
        return [self._decode(r) for r in cur]

    def count(self, kind: str | None = None) -> int:
        if kind is None:
            return int(self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])
        return int(self._conn.execute("SELECT COUNT(*) FROM results WHERE kind = ?", (kind,)).fetchone()[0])

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check``: ``ok`` for a sound file."""
        return str(self._conn.execute("PRAGMA integrity_check").fetchone()[0])


def open_store(db=None) -> Store:
    """A :class:`Store` at ``db`` (a path, an open Store, or None for :func:`default_db_path`)."""
    return db if isinstance(db, Store) else Store(db)
