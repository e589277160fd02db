"""A small SQLite store for per-session guard state, shared by short-lived processes.

Hook processes (one per tool call) load a session's state, record one step and save it back.
`SessionStore.transaction(key)` does that under `BEGIN IMMEDIATE`, so concurrent writers (parallel
tool calls) serialize on the database lock and no step is lost; WAL mode keeps readers (e.g.
PreToolUse checks) from blocking on writers and vice versa.

    store = SessionStore("/tmp/state.sqlite3")
    with store.transaction("session-1") as txn:
        state = txn.state or new_state()   # None for a session never seen (or expired)
        ...                                # mutate it
        txn.state = state                  # saved on a clean exit; an exception rolls back

States are pickled (they hold numpy arrays). Rows written by another `version` of the caller are
treated as absent, so an upgrade never unpickles an incompatible layout. Sessions not touched for
`ttl_days` are deleted opportunistically (at most once an hour, by whichever process writes).
The database file is created private to the user (0600): states contain short call excerpts.
Only open databases you own: unpickling trusts the file.

Standard library only; sqlite3 and pickle are imported where used, so the hook client can import
`default_path` for free.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

DEFAULT_FILENAME = "state.sqlite3"
PRUNE_EVERY = 3600.0  # seconds between opportunistic prunes

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    key      TEXT PRIMARY KEY,
    version  TEXT NOT NULL,
    updated  REAL NOT NULL,
    state    BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions (updated);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value REAL NOT NULL);
"""


def cache_dir(app: str = "semloop") -> Path:
    """`$XDG_CACHE_HOME/<app>`, else `~/.cache/<app>`."""
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")) / app


def default_path(app: str = "semloop") -> Path:
    """`$SEMLOOP_DB`, else `<cache_dir>/state.sqlite3`."""
    env = os.environ.get("SEMLOOP_DB")
    return Path(env).expanduser() if env else cache_dir(app) / DEFAULT_FILENAME


def _dumps(state: Any) -> bytes:
    import pickle

    return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)


class Transaction:
    """The handle `SessionStore.transaction` yields: `.state` as loaded (None if absent); set it
    to the state to save, or call `discard()` to save nothing."""

    __slots__ = ("key", "state", "existed", "_save")

    def __init__(self, key: str, state: Any):
        self.key = key
        self.state = state
        self.existed = state is not None
        self._save = True

    def discard(self) -> None:
        self._save = False


class SessionStore:
    """Pickled per-key state in one SQLite file (see the module docstring).

    `timeout` bounds how long a process waits for the write lock before `sqlite3.OperationalError`
    ("database is locked"); callers that must never block for long should catch it and fail open.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, version: str = "",
                 ttl_days: float = 7.0, timeout: float = 5.0):
        self.path = Path(path).expanduser() if path else default_path()
        self.version = version
        self.ttl = float(ttl_days) * 86400.0
        self.timeout = float(timeout)
        self._conn: sqlite3.Connection | None = None

    # -- connection --------------------------------------------------------------------------

    def connect(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not self.path.exists():  # create it private before SQLite does (umask 022 → 0644)
                try:
                    os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
                except FileExistsError:  # pragma: no cover - lost a harmless race
                    pass
            import sqlite3

            conn = sqlite3.connect(str(self.path), timeout=self.timeout, isolation_level=None)
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")  # persistent: done once per file
                conn.execute("PRAGMA synchronous = NORMAL")  # safe with WAL; a crash loses one step at most
                if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
                    conn.executescript(_SCHEMA)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "SessionStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- access ------------------------------------------------------------------------------

    def load(self, key: str) -> Any:
        """The saved state for `key`, or None (absent, expired, other version, unreadable).
        A plain read: never waits for writers (WAL)."""
        row = self.connect().execute("SELECT version, updated, state FROM sessions WHERE key = ?",
                                     (key,)).fetchone()
        return self._decode(row)

    @contextmanager
    def transaction(self, key: str) -> Iterator[Transaction]:
        """Load → (caller mutates) → save, atomically with respect to other processes."""
        conn = self.connect()
        conn.execute("BEGIN IMMEDIATE")  # takes the write lock now: concurrent writers queue here
        try:
            row = conn.execute("SELECT version, updated, state FROM sessions WHERE key = ?", (key,)).fetchone()
            txn = Transaction(key, self._decode(row))
            yield txn
            if txn._save and txn.state is not None:
                now = time.time()
                conn.execute("INSERT OR REPLACE INTO sessions (key, version, updated, state) VALUES (?, ?, ?, ?)",
                             (key, self.version, now, _dumps(txn.state)))
                self._maybe_prune(conn, now)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def save(self, key: str, state: Any) -> None:
        with self.transaction(key) as txn:
            txn.state = state

    def delete(self, key: str) -> bool:
        return self.connect().execute("DELETE FROM sessions WHERE key = ?", (key,)).rowcount > 0

    def keys(self) -> list[str]:
        return [k for (k,) in self.connect().execute("SELECT key FROM sessions ORDER BY updated")]

    def prune(self, older_than: float | None = None) -> int:
        """Delete sessions not touched for `older_than` seconds (default: the TTL). Returns count."""
        cutoff = time.time() - (self.ttl if older_than is None else older_than)
        return self.connect().execute("DELETE FROM sessions WHERE updated < ?", (cutoff,)).rowcount

    # -- internals ---------------------------------------------------------------------------

    def _decode(self, row: tuple | None) -> Any:
        if row is None:
            return None
        version, updated, blob = row
        if version != self.version or updated < time.time() - self.ttl:
            return None
        try:
            import pickle

            return pickle.loads(blob)
        except Exception:  # written by an incompatible build: start over rather than fail
            return None

    def _maybe_prune(self, conn: sqlite3.Connection, now: float) -> None:
        row = conn.execute("SELECT value FROM meta WHERE name = 'last_prune'").fetchone()
        if row is not None and now - row[0] < PRUNE_EVERY:
            return
        conn.execute("DELETE FROM sessions WHERE updated < ?", (now - self.ttl,))
        conn.execute("INSERT OR REPLACE INTO meta (name, value) VALUES ('last_prune', ?)", (now,))
