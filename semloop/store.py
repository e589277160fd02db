"""Session stores: where a session's guard state lives between steps, chosen by URL.

    memory://                 this process only (threads share it)            MemoryStore
    sqlite:///path/to/db      one machine, any number of processes (default)  SQLiteStore
    redis://host:6379/0       a fleet of machines (`pip install "semloop-guard[redis]"`) RedisStore
    rediss://...              the same over TLS

`open_store(url)` picks one: the URL given, else `$SEMLOOP_STORE`, else the SQLite file
`$SEMLOOP_DB` or `~/.cache/semloop/state.sqlite3`. Every store has the same small interface
(`SessionStore`): `load(key)`, an atomic `update(key, fn)`, `delete(key)`, `expire()` and `list()`.
`update` is the one write: it loads the session's state, calls `fn(state)` (None for a session never
seen) and saves what `fn` returns (None: save nothing), atomically with respect to every other
writer of that session — SQLite under `BEGIN IMMEDIATE`, Redis with WATCH/MULTI (retried when
another writer got there first, so `fn` may run more than once and must start from the state it
is given), memory under a lock.

States are stored in semloop's data-only format (`semloop.state_format`: numbers, strings, arrays
as bytes; never pickle). A stored state of another format or `version` reads as absent: the
session starts over instead of being misread. Sessions expire `ttl` seconds after their last write.

Standard library only at import time (sqlite3 and redis are imported where used), so the hook
client can import `default_path` for free.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from .messages import install_hint

DEFAULT_FILENAME = "state.sqlite3"
DEFAULT_TTL = 7 * 86400.0  # seconds a session is kept after its last write
PRUNE_EVERY = 3600.0  # seconds between opportunistic prunes (SQLite, memory)
MAX_STATE_BYTES = 8 << 20  # a bigger state is refused (only a raised max_clusters or window can reach it)
SESSION_BYTES_BOUND = 1_300_000  # the most a session holds with the default config (tested; docs/store.md)
REDIS_PREFIX = "semloop:session:"
UPDATE_RETRIES = 64  # Redis: optimistic attempts before giving up on a contended session

Updater = Callable[[Any], Any]
_R = TypeVar("_R")


class StoreError(RuntimeError):
    """The store cannot be used (unreachable, refused, contended): callers fail open on it."""


class UnsafeStoreError(StoreError, PermissionError):
    """A state file or directory another user could write: refused, never read."""


@dataclass(frozen=True)
class SessionInfo:
    key: str
    updated: float  # epoch seconds of the last write
    size: int  # bytes stored


class SessionStore(Protocol):
    """What every store offers (see the module docstring)."""

    url: str

    def load(self, key: str) -> Any: ...

    def update(self, key: str, fn: Updater) -> Any: ...

    def delete(self, key: str) -> bool: ...

    def expire(self, older_than: float | None = None) -> int: ...

    def list(self) -> list[SessionInfo]: ...

    def close(self) -> None: ...


# -- paths --------------------------------------------------------------------------------------


def cache_dir(app: str = "semloop") -> Path:
    """`$XDG_CACHE_HOME/<app>`, else `~/.cache/<app>`."""
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")) / app


def default_path(app: str = "semloop") -> Path:
    """`$SEMLOOP_DB`, else `<cache_dir>/state.sqlite3`."""
    env = os.environ.get("SEMLOOP_DB")
    return Path(env).expanduser() if env else cache_dir(app) / DEFAULT_FILENAME


def open_store(url: Any = None, *, db: str | os.PathLike[str] | None = None, version: str = "",
               ttl: float | None = None, timeout: float | None = None) -> Any:
    """The store for `url` (a URL string or an already open store, returned as is); else for the
    SQLite file `db`; else `$SEMLOOP_STORE`; else the default SQLite file. `timeout` bounds waits
    on the store (SQLite's lock, Redis' socket; default `$SEMLOOP_DB_TIMEOUT` or 5 s)."""
    if url is not None and not isinstance(url, (str, os.PathLike)):
        return url  # a store object already
    db = db or None  # `--db ""`: not given
    if url is None and db is None:
        url = os.environ.get("SEMLOOP_STORE") or None
    ttl = DEFAULT_TTL if ttl is None else float(ttl)
    if timeout is None:
        timeout = float(os.environ.get("SEMLOOP_DB_TIMEOUT", "5"))
    if url is None:
        return SQLiteStore(db, version=version, ttl=ttl, timeout=timeout)
    url = os.fspath(url)
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower() if sep else ""
    if scheme == "memory":
        with _MEMORY_LOCK:
            store = _MEMORY.get(url)
            if store is None:
                store = _MEMORY[url] = MemoryStore(url, version=version, ttl=ttl)
            return store
    if scheme == "sqlite":
        return SQLiteStore(rest or None, version=version, ttl=ttl, timeout=timeout)
    if scheme in ("redis", "rediss", "unix"):
        return RedisStore(url, version=version, ttl=ttl, timeout=timeout)
    if not sep:
        return SQLiteStore(url, version=version, ttl=ttl, timeout=timeout)  # a plain path
    raise ValueError(f"unknown store URL {url!r}: use memory://, sqlite:///path, redis://host:port/db "
                     f"or rediss://...")


# -- shared parts -------------------------------------------------------------------------------


class _Store:
    url = ""
    version = ""
    ttl = DEFAULT_TTL

    def _dumps(self, state: Any) -> bytes:
        from .state_format import dumps

        return dumps(state)

    def _loads(self, blob: Any) -> Any:
        from .state_format import StateFormatError, loads

        if not isinstance(blob, (bytes, bytearray, memoryview)):
            raise TypeError(f"the state is {type(blob).__name__}, not bytes")
        try:
            return loads(bytes(blob))
        except StateFormatError:
            return None  # another format or a foreign blob: the session starts over, as documented

    def _encode(self, state: Any) -> bytes:
        blob = self._dumps(state)
        if len(blob) > MAX_STATE_BYTES:
            raise StoreError(f"state of {len(blob)} bytes exceeds the {MAX_STATE_BYTES}-byte limit")
        return blob

    def _decode(self, key: str, row: Any) -> Any:
        """The stored state of `row` (version, updated, state), or None: absent, expired, another
        version, or not data we can read. An entry that is not semloop's (an `updated` that is no
        time, a state that is no bytes) reads as absent too, and is said once: the session's next
        write replaces it."""
        if row is None:
            return None
        version, updated, blob = row
        when = _when(updated)
        if when is None:
            self._foreign(key, f"its 'updated' is {_short(updated)}")
            return None
        if blob is None or version != self.version or when < time.time() - self.ttl:
            return None
        try:
            return self._loads(blob)
        except Exception as exc:
            self._foreign(key, f"its state cannot be read: {_short(exc)}")
            return None

    def _foreign(self, key: str, why: str) -> None:
        """Say once per store and session that an entry is not semloop's and is skipped."""
        with _REPORTED_LOCK:
            if (self.url, key) in _REPORTED:
                return
            _REPORTED.add((self.url, key))
        print(f"semloop: session {key!r} in {display_url(self.url)} is not a semloop session ({why}); "
              f"skipped: its next step replaces it", file=sys.stderr)

    def save(self, key: str, state: Any) -> None:
        self.update(key, lambda _old: state)

    def keys(self) -> list[str]:
        return [info.key for info in self.list()]

    def prune(self, older_than: float | None = None) -> int:
        return self.expire(older_than)

    def close(self) -> None:
        pass

    def __enter__(self) -> _Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    # what each store implements (the rest of `SessionStore`); the methods above are built on them
    def update(self, key: str, fn: Updater) -> Any:
        raise NotImplementedError

    def expire(self, older_than: float | None = None) -> int:
        raise NotImplementedError

    def list(self) -> list[SessionInfo]:
        raise NotImplementedError


_REPORTED: set[tuple[str, str]] = set()  # (store URL, session) already said to be foreign
_REPORTED_LOCK = threading.Lock()


def _when(updated: Any) -> float | None:
    """`updated` as epoch seconds, or None when it is not a finite number (a foreign entry)."""
    import math

    if isinstance(updated, (bytes, bytearray)):
        updated = updated.decode("ascii", errors="replace")
    try:
        when = float(updated)
    except (TypeError, ValueError, OverflowError):
        return None
    return when if math.isfinite(when) else None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- memory -------------------------------------------------------------------------------------

_MEMORY: dict[str, MemoryStore] = {}
_MEMORY_LOCK = threading.Lock()


class MemoryStore(_Store):
    """Sessions in this process (one shared store per `memory://` URL). Kept as bytes, like the
    other stores, so a state read back is a copy that behaves as one read from disk. The bytes
    are pickle's, not `state_format`'s: they never leave this process and only ever come from this
    store's own `pickle.dumps`, so nothing foreign is unpickled, and a copy costs less than half
    as much (the data-only codec round trip is most of a step's cost on a session with many
    clusters; benchmarks/store_overhead.py)."""

    def __init__(self, url: str = "memory://", *, version: str = "", ttl: float = DEFAULT_TTL):
        self.url, self.version, self.ttl = url, version, float(ttl)
        self._rows: dict[str, tuple[str, float, bytes]] = {}
        self._lock = threading.RLock()
        self._last_prune = time.time()

    def _dumps(self, state: Any) -> bytes:
        import pickle

        return pickle.dumps(state, protocol=4)  # 5 would keep read-only arrays read-only; disk gives writable ones

    def _loads(self, blob: Any) -> Any:
        import pickle

        return pickle.loads(blob)  # bytes this store pickled itself, in this process

    def load(self, key: str) -> Any:
        with self._lock:
            row = self._rows.get(key)
        return self._decode(key, row)

    def update(self, key: str, fn: Updater) -> Any:
        with self._lock:
            new = fn(self._decode(key, self._rows.get(key)))
            if new is not None:
                now = time.time()
                self._rows[key] = (self.version, now, self._encode(new))
                if now - self._last_prune > PRUNE_EVERY:
                    self.expire()
            return new

    def delete(self, key: str) -> bool:
        with self._lock:
            return self._rows.pop(key, None) is not None

    def expire(self, older_than: float | None = None) -> int:
        cutoff = time.time() - (self.ttl if older_than is None else older_than)
        with self._lock:
            old = [k for k, (_v, updated, _b) in self._rows.items() if updated < cutoff]
            for k in old:
                del self._rows[k]
            self._last_prune = time.time()
        return len(old)

    def list(self) -> list[SessionInfo]:
        with self._lock:
            rows = sorted(self._rows.items(), key=lambda kv: kv[1][1])
        return [SessionInfo(k, updated, len(blob)) for k, (_v, updated, blob) in rows]


# -- SQLite -------------------------------------------------------------------------------------

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
# expired, or an `updated` that is no time (a foreign row would otherwise never expire)
_EXPIRED = "DELETE FROM sessions WHERE updated < ? OR typeof(updated) NOT IN ('integer', 'real')"
_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB


def _uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else 0


def check_private(path: Path) -> None:
    """Raise `UnsafeStoreError` unless `path` (if it exists) and its directory are safe to trust:
    owned by this user (the directory may also be root's) and not writable by group or others,
    and not a symlink. Another user able to write them could plant or alter the state."""
    if not hasattr(os, "getuid"):  # pragma: no cover - no POSIX ownership to check
        return
    me = _uid()
    directory = path.parent
    st = os.stat(directory)
    if st.st_uid not in (me, 0) or st.st_mode & 0o022:
        why = "writable by other users" if st.st_mode & 0o022 else "owned by another user"
        raise UnsafeStoreError(f"state directory {directory} is {why} "
                               f"(owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}); refusing to use it")
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            st = os.lstat(candidate)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
            raise UnsafeStoreError(f"state file {candidate} is not a regular file; refusing to use it")
        if st.st_uid != me or st.st_mode & 0o022:
            raise UnsafeStoreError(f"state file {candidate} is not private to this user "
                                   f"(owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}); refusing to use it")


def _tighten(directory: Path) -> None:
    try:
        st = os.lstat(directory)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == _uid() and st.st_mode & 0o077:
            os.chmod(directory, 0o700)
    except OSError:
        pass


def display_url(url: str) -> str:
    """`url` without its password (`redis://:secret@host` → `redis://***@host`), for messages."""
    import re

    return re.sub(r"//[^/@]*@", "//***@", url)


def _is_corrupt(exc: BaseException) -> bool:
    import sqlite3

    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _CORRUPT_CODES
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


class SQLiteStore(_Store):
    """Per-session state in one SQLite file, shared by any number of processes on one machine.

    WAL mode keeps readers (PreToolUse checks) from waiting for writers. The file is created
    private (0600) in a private directory (0700); a file or directory another user could write is
    refused (`UnsafeStoreError`). A corrupt file is moved aside to `<name>.corrupt-<time>` (kept
    for inspection), a fresh one started, and that said once on stderr. Deleted rows are
    overwritten (`secure_delete`). `timeout` bounds the wait for the write lock
    (`sqlite3.OperationalError: database is locked` after it: callers fail open).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, version: str = "",
                 ttl: float = DEFAULT_TTL, timeout: float = 5.0, ttl_days: float | None = None):
        self.path = Path(path).expanduser() if path else default_path()
        self.url = f"sqlite://{self.path.absolute()}"
        self.version = version
        self.ttl = float(ttl_days) * 86400.0 if ttl_days is not None else float(ttl)
        self.timeout = float(timeout)
        self._conn: Any = None
        self._pid = os.getpid()
        # one connection for every thread of this process (check_same_thread=False), each use of it
        # under this lock: a statement or a whole transaction at a time. Threads of one process
        # queue here in microseconds instead of on SQLite's file lock (its busy wait sleeps ms).
        self._lock = threading.RLock()

    # -- connection --------------------------------------------------------------------------

    def connect(self) -> Any:
        with self._lock:
            if self._conn is not None and self._pid != os.getpid():
                self._conn = None  # inherited through fork: never used here (SQLite forbids it); reopen
            if self._conn is None:
                self._pid = os.getpid()
                try:
                    self._conn = self._open()
                except Exception as exc:
                    if not _is_corrupt(exc):
                        raise
                    self._quarantine(exc)
                    self._conn = self._open()
            return self._conn

    def _open(self) -> Any:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.path.parent == cache_dir():  # semloop's own directory: make it private if it is not
            _tighten(self.path.parent)
        check_private(self.path)
        if not self.path.exists():  # create it private before SQLite does (umask 022 → 0644)
            try:
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                                 0o600))
            except FileExistsError:  # pragma: no cover - lost a harmless race
                pass
        import sqlite3

        conn = sqlite3.connect(str(self.path), timeout=self.timeout, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            conn.execute("PRAGMA secure_delete = ON")  # deleted states are overwritten, not left in free pages
            self._ensure_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")  # safe with WAL; a crash loses one step at most
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
                conn.executescript(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    def _ensure_wal(self, conn: Any) -> None:
        """Switch the file to WAL (persistent: done once per file). Processes that open a new file
        at the same moment all try to switch it; SQLite refuses all but one at once with "database
        is locked", without the busy wait (waiting could deadlock). The switch takes milliseconds,
        so the others retry until `timeout`. Where WAL is not available (some network file systems)
        SQLite keeps the old mode without an error, and so does the store, as it always did."""
        import random
        import sqlite3

        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
            return
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(random.uniform(0.002, 0.02))  # jittered: the refused ones do not collide again

    def _quarantine(self, exc: BaseException) -> None:
        """Move a corrupt database (and its WAL files) aside, keeping it for inspection."""
        self.close()
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
        for suffix in ("", "-wal", "-shm"):
            try:
                os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
            except FileNotFoundError:
                pass
        print(f"semloop: state database {self.path} was corrupt ({exc}); moved it to {aside} and "
              f"started a fresh one", file=sys.stderr)

    def _recovering(self, op: Callable[[Any], _R]) -> _R:
        """Run `op(conn)` under the store's lock; on a corrupt database, quarantine it and run
        `op` once more."""
        with self._lock:
            try:
                return op(self.connect())
            except Exception as exc:
                if not _is_corrupt(exc):
                    raise
                self._quarantine(exc)
                return op(self.connect())

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                try:
                    if self._pid == os.getpid():
                        self._conn.close()
                finally:
                    self._conn = None

    def __getstate__(self) -> dict[str, Any]:  # a pickled store reopens its file: no connection, a new lock
        data = self.__dict__.copy()
        data["_conn"], data["_lock"] = None, None
        return data

    def __setstate__(self, data: dict[str, Any]) -> None:
        self.__dict__.update(data)
        self._lock = threading.RLock()

    # -- access ------------------------------------------------------------------------------

    def load(self, key: str) -> Any:
        """The saved state for `key`, or None. A plain read: never waits for writers (WAL)."""
        row = self._recovering(lambda conn: conn.execute(
            "SELECT version, updated, state FROM sessions WHERE key = ?", (key,)).fetchone())
        return self._decode(key, row)

    def update(self, key: str, fn: Updater) -> Any:
        return self._recovering(lambda conn: self._update(conn, key, fn))

    def _update(self, conn: Any, key: str, fn: Updater) -> Any:
        with self._immediate(conn):
            row = conn.execute("SELECT version, updated, state FROM sessions WHERE key = ?", (key,)).fetchone()
            new = fn(self._decode(key, row))
            if new is not None:
                now = time.time()
                conn.execute("INSERT OR REPLACE INTO sessions (key, version, updated, state) VALUES (?, ?, ?, ?)",
                             (key, self.version, now, self._encode(new)))
                self._maybe_prune(conn, now)
        return new

    @contextmanager
    def transaction(self, key: str) -> Iterator[Transaction]:
        """Load → (caller mutates `txn.state`) → save, atomically with respect to other processes.
        Kept for callers written against the SQLite store; new code uses `update`."""
        with self._lock, self._immediate(self.connect()) as conn:
            row = conn.execute("SELECT version, updated, state FROM sessions WHERE key = ?", (key,)).fetchone()
            txn = Transaction(key, self._decode(key, row))
            yield txn
            if txn._save and txn.state is not None:
                now = time.time()
                conn.execute("INSERT OR REPLACE INTO sessions (key, version, updated, state) VALUES (?, ?, ?, ?)",
                             (key, self.version, now, self._encode(txn.state)))
                self._maybe_prune(conn, now)

    @contextmanager
    def _immediate(self, conn: Any) -> Iterator[Any]:
        conn.execute("BEGIN IMMEDIATE")  # takes the write lock now: concurrent writers queue here
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            # a failed COMMIT may already have rolled back: roll back only a live transaction, so
            # the error the caller sees is the real one, not "no transaction is active"
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except Exception:
                    pass
            raise

    def delete(self, key: str) -> bool:
        return self._recovering(lambda conn: self._scrub(conn, conn.execute(
            "DELETE FROM sessions WHERE key = ?", (key,)).rowcount)) > 0

    def expire(self, older_than: float | None = None) -> int:
        """Delete sessions not written for `older_than` seconds (default: the TTL). Returns count."""
        cutoff = time.time() - (self.ttl if older_than is None else older_than)
        return self._recovering(lambda conn: self._scrub(conn, conn.execute(_EXPIRED, (cutoff,)).rowcount))

    def _scrub(self, conn: Any, deleted: int) -> int:
        """After a delete: copy the WAL into the file and empty it (`wal_checkpoint(TRUNCATE)`), so
        the deleted states, overwritten in the file by `secure_delete`, do not live on in the WAL's
        earlier frames for as long as any connection stays open. Deletes are rare (a forgotten or
        expired session), so this costs nothing per step; a checkpoint another connection holds up
        is left to SQLite's next one."""
        if deleted:
            import sqlite3

            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.OperationalError:  # pragma: no cover - busy: the next checkpoint does it
                pass
        return deleted

    def list(self) -> list[SessionInfo]:
        rows = self._recovering(lambda conn: conn.execute(
            "SELECT key, updated, length(state) FROM sessions").fetchall())
        out = []
        for key, updated, size in rows:
            when = _when(updated)
            if not isinstance(key, str):
                continue  # no session of semloop's (keys are text): nothing to name or replace
            if when is None:
                self._foreign(key, f"its 'updated' is {_short(updated)}")
                continue
            out.append(SessionInfo(key, when, int(size or 0)))
        return sorted(out, key=lambda info: info.updated)

    def _maybe_prune(self, conn: Any, now: float) -> None:
        row = conn.execute("SELECT value FROM meta WHERE name = 'last_prune'").fetchone()
        if row is not None and now - row[0] < PRUNE_EVERY:
            return
        conn.execute(_EXPIRED, (now - self.ttl,))
        conn.execute("INSERT OR REPLACE INTO meta (name, value) VALUES ('last_prune', ?)", (now,))


class Transaction:
    """The handle `SQLiteStore.transaction` yields: `.state` as loaded (None if absent); set it to
    the state to save, or call `discard()` to save nothing."""

    __slots__ = ("key", "state", "existed", "_save")

    def __init__(self, key: str, state: Any):
        self.key = key
        self.state = state
        self.existed = state is not None
        self._save = True

    def discard(self) -> None:
        self._save = False


# -- Redis --------------------------------------------------------------------------------------


class RedisStore(_Store):
    """Per-session state in Redis, for fleets: one hash per session (`semloop:session:<key>`:
    version, updated, state) with a TTL renewed on every write. `update` is optimistic
    (WATCH the key, read, compute, MULTI/EXEC the write; retried if another writer changed the key
    in between), so a worker killed mid-update leaves the previous state intact and holds no lock.
    Connection problems raise `StoreError` after `timeout` seconds, without retries: the caller
    fails open and the next step tries again."""

    def __init__(self, url: str, *, version: str = "", ttl: float = DEFAULT_TTL, timeout: float = 5.0,
                 prefix: str = REDIS_PREFIX):
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError:
            raise ImportError(f"the Redis store needs the redis client: {install_hint('redis')}") from None
        self.url, self.version, self.ttl, self.prefix = url, version, float(ttl), prefix
        self._redis = redis
        timeout = float(timeout)
        self.client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=min(timeout, 2.0),
                                           retry=Retry(NoBackoff(), 0), retry_on_timeout=False)

    def _key(self, key: str) -> str:
        return self.prefix + key

    def _errors(self) -> tuple[type[BaseException], ...]:
        return (self._redis.ConnectionError, self._redis.TimeoutError)

    def _row(self, values: list[Any]) -> tuple[Any, Any, Any] | None:
        version, updated, blob = values
        if blob is None:
            return None
        version = version.decode("utf-8", errors="replace") if version is not None else None
        return version, updated, blob

    def _wrong_type(self, exc: BaseException) -> bool:
        """The key holds no hash (a string, a list... someone else's value under our prefix)."""
        return isinstance(exc, self._redis.ResponseError) and str(exc).startswith("WRONGTYPE")

    def load(self, key: str) -> Any:
        try:
            row = self._row(self.client.hmget(self._key(key), "version", "updated", "state"))
        except self._errors() as exc:
            raise StoreError(f"redis store {self._where()} unavailable: {exc}") from exc
        except self._redis.ResponseError as exc:
            if not self._wrong_type(exc):
                raise
            self._foreign(key, "the key holds no hash")
            return None
        return self._decode(key, row)

    def update(self, key: str, fn: Updater) -> Any:
        name = self._key(key)
        try:
            with self.client.pipeline(transaction=True) as pipe:
                for _ in range(UPDATE_RETRIES):
                    try:
                        pipe.watch(name)
                        try:
                            row, foreign = self._row(pipe.hmget(name, "version", "updated", "state")), False
                        except self._redis.ResponseError as exc:
                            if not self._wrong_type(exc):
                                raise
                            self._foreign(key, "the key holds no hash")
                            row, foreign = None, True
                        new = fn(self._decode(key, row))
                        if new is None:
                            pipe.unwatch()
                            return None
                        blob = self._encode(new)
                        pipe.multi()
                        if foreign:
                            pipe.delete(name)  # replaced by the session's state
                        pipe.hset(name, mapping={"version": self.version, "updated": repr(time.time()),
                                                 "state": blob})
                        pipe.expire(name, max(1, int(self.ttl)))
                        pipe.execute()
                        return new
                    except self._redis.WatchError:
                        continue  # another worker wrote this session first: redo from its state
        except self._errors() as exc:
            raise StoreError(f"redis store {self._where()} unavailable: {exc}") from exc
        raise StoreError(f"session {key!r} changed under {UPDATE_RETRIES} attempts in a row; giving up on this step")

    def delete(self, key: str) -> bool:
        try:
            return bool(self.client.delete(self._key(key)))
        except self._errors() as exc:
            raise StoreError(f"redis store {self._where()} unavailable: {exc}") from exc

    def expire(self, older_than: float | None = None) -> int:
        """Redis expires sessions itself (TTL); with `older_than`, delete those idle that long."""
        if older_than is None:
            return 0
        cutoff, count = time.time() - older_than, 0
        for info in self.list():
            if info.updated < cutoff:
                count += self.delete(info.key)
        return count

    def list(self) -> list[SessionInfo]:
        out = []
        try:
            for name in self.client.scan_iter(match=self.prefix + "*", count=500):
                key = name.decode("utf-8", errors="replace")[len(self.prefix):]
                try:
                    updated, size = self.client.hget(name, "updated"), self.client.hstrlen(name, "state")
                except self._redis.ResponseError as exc:
                    if not self._wrong_type(exc):
                        raise
                    self._foreign(key, "the key holds no hash")
                    continue
                if updated is None:
                    continue
                when = _when(updated)
                if when is None:
                    self._foreign(key, f"its 'updated' is {_short(updated)}")
                    continue
                out.append(SessionInfo(key, when, int(size)))
        except self._errors() as exc:
            raise StoreError(f"redis store {self._where()} unavailable: {exc}") from exc
        return sorted(out, key=lambda info: info.updated)

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # pragma: no cover
            pass

    def _where(self) -> str:
        kwargs = self.client.connection_pool.connection_kwargs
        if "path" in kwargs:
            return str(kwargs["path"])
        return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"
