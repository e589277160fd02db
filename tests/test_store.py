"""The data-only state format and the session stores (memory, real SQLite files, a real
redis-server): round trips field by field, atomic updates, expiry, thread safety, secrets, corrupt
and foreign-owned state files, and the `semloop sessions` command."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys
import threading
import time
from collections import Counter, OrderedDict, deque
from pathlib import Path

import numpy as np
import pytest

from conftest import bash_event
from redis_server import redis_server_fixture  # noqa: F401  (the redis_server fixture)
from semloop import LoopGuard, state
from semloop import state_format as sf
from semloop.state import Cluster, SessionState, StepRecord
from semloop.store import MemoryStore, SQLiteStore, StoreError, UnsafeStoreError, open_store

PY = sys.executable


def busy_state() -> SessionState:
    """A state with every kind of content: vectors, clusters, errors, flags, counters."""
    guard = LoopGuard(embedding="hashing")
    steps = [("Bash", {"command": "make test"}, "FAILED test_x\n" * 3, False),
             ("Read", {"file_path": "src/app.py"}, "def main():\n    return 1\n" * 40, False),
             ("Bash", {"command": "make test"}, "FAILED test_x\n" * 3, False),
             ("Bash", {"command": "cat /etc/shadow"}, "cat: /etc/shadow: Permission denied", True),
             ("Bash", {"command": "make test"}, "FAILED test_x\n" * 3, False),
             ("Grep", {"pattern": "TODO", "path": "src"}, "", False)]
    for tool, tool_input, output, err in steps * 3:
        guard.record(tool, tool_input, output, is_error=err)
    return guard.state


def assert_same(a, b, where="state"):
    """Equal value *and* type, recursively; dataclasses field by field over `dataclasses.fields`
    (a field added later is compared without touching this test)."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), where
        assert b.flags.writeable, where
    elif isinstance(a, deque):
        assert a.maxlen == b.maxlen, f"{where}: maxlen"
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys/order"
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


# -- the format --------------------------------------------------------------------------------


def test_a_real_state_round_trips_field_by_field():
    original = busy_state()
    assert original.clusters and original.flagged_sigs and original.warnings  # the content is there
    assert any(s.call_vec is not None for s in original.window) and any(s.is_error for s in original.window)
    restored = sf.loads(sf.dumps(original))
    assert_same(original, restored)
    step_fields = {f.name for f in dataclasses.fields(StepRecord)}
    # every field of every dataclass took part in the comparison above
    assert step_fields == set(StepRecord.__dataclass_fields__)


def _sample(annotation_type):
    """A non-default value of each plain type a state field may have."""
    return {
        "str": "héllo\n\x00 wörld", "int": -(1 << 40), "float": 0.1 + 0.2, "bool": True, "None": None,
        "tuple[str]": ("a", "b", ""), "tuple[int]": tuple(range(-5, 70)), "tuple[big]": (1 << 70, 3),
        "frozenset[str]": frozenset({"x", "y/z"}), "frozenset[int]": frozenset({1, 2, 3}),
        "deque": deque([("h", (1, 2), 3), ("g", (), 0)], maxlen=8), "deque[int]": deque([1, 2], maxlen=None),
        "vec32": np.arange(256, dtype=np.float32) / 7, "vec16": np.ones(3, dtype=np.float16),
        "counter": Counter({"Bash": 3, "Read": 1}), "od": OrderedDict([(3, "c"), (1, "a")]),
        "dict": {"sig": 4, 5: "int key"}, "nested": (frozenset({"a"}), [deque([1]), {"k": (None, 1.5)}]),
        "np scalar": np.float32(0.25), "nan": float("inf"), "bytes": b"\x00\xff",
    }[annotation_type]


SAMPLES = ["str", "int", "float", "bool", "None", "tuple[str]", "tuple[int]", "tuple[big]", "frozenset[str]",
           "frozenset[int]", "deque", "deque[int]", "vec32", "vec16", "counter", "od", "dict", "nested",
           "np scalar", "nan", "bytes"]


@pytest.mark.parametrize("kind", SAMPLES)
def test_every_plain_field_type_round_trips(kind):
    """Whatever field a later change adds to StepRecord / SessionState / Cluster, if its value is of
    one of these types it is stored without a change to the codec: shown here by putting the value
    into every field of a real state's dataclasses in turn."""
    value = _sample(kind)
    assert_same(value, sf.loads(sf.dumps(value)), kind)
    base = busy_state()
    for obj in [base, base.window[0], next(iter(base.clusters.values()))]:
        for f in dataclasses.fields(obj):
            copy = sf.loads(sf.dumps(base))
            target = {SessionState: copy, StepRecord: copy.window[0],
                      Cluster: next(iter(copy.clusters.values()))}[type(obj)]
            setattr(target, f.name, value)
            assert_same(copy, sf.loads(sf.dumps(copy)), f"{type(obj).__name__}.{f.name}={kind}")


def test_new_fields_with_defaults_and_unknown_fields_are_tolerated(monkeypatch: pytest.MonkeyPatch) -> None:
    blob = sf.dumps(busy_state())

    @dataclasses.dataclass(slots=True)
    class StepRecordPlus(StepRecord):
        added: tuple = ("default",)

    StepRecordPlus.__module__ = state.__name__
    monkeypatch.setattr(state, "StepRecord", StepRecordPlus)
    restored = sf.loads(blob)  # an older blob: the new field takes its default
    assert restored.window[0].added == ("default",)


@pytest.mark.parametrize("blob", [b"", b"SLST", b"garbage" * 10, pickle.dumps({"a": 1}),
                                  b"SLST\x09\x02\x00\x00\x00\x00\x00",  # another codec format
                                  ])
def test_foreign_bytes_are_refused(blob):
    with pytest.raises(sf.StateFormatError):
        sf.loads(blob)
    with pytest.raises(ValueError):
        LoopGuard().from_bytes(blob)


def test_another_state_format_is_refused(monkeypatch):
    blob = sf.dumps(busy_state())
    monkeypatch.setattr(state, "STATE_FORMAT", state.STATE_FORMAT + 1)
    with pytest.raises(sf.StateFormatError, match="format"):
        sf.loads(blob)


def test_crafted_content_cannot_name_other_classes_or_dtypes():
    good = sf.dumps({"x": 1})
    header = good[:sf._HEADER.size]
    for body in ('{"$dc":"Popen","f":{}}', '{"$nd":0,"dt":"|O","sh":[1]}', '{"$np":"|O","v":1}', '{"$x":1}'):
        raw = body.encode()
        blob = sf._HEADER.pack(sf.MAGIC, sf.CODEC_FORMAT, state.STATE_FORMAT, len(raw)) + raw
        with pytest.raises(sf.StateFormatError):
            sf.loads(blob)
    assert header.startswith(sf.MAGIC)


def test_a_pickle_planted_in_the_database_is_never_unpickled(tmp_path):
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    db = tmp_path / "state.sqlite3"
    store = SQLiteStore(db)
    store.save("s", busy_state())
    store.connect().execute("UPDATE sessions SET state = ?", (pickle.dumps(Exploit()),))
    assert store.load("s") is None  # unreadable: absent, the session starts over
    assert LoopGuard(embedding="hashing", store=store, session="s").record("Bash", {"command": "ls"}, "a").step == 0
    assert not marker.exists()
    store.close()


# -- secrets -----------------------------------------------------------------------------------


SECRET = "sk-proj-Zx81bQ2mN4vR7tY0wP3sK6dF"


def test_stored_state_keeps_no_readable_secret_and_still_detects_the_loop(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    guard = LoopGuard(embedding="hashing", store=store, session="s")
    call = {"command": f'curl -s -H "Authorization: Bearer {SECRET}" https://api.example.com/v1/jobs?token=Q9x7Lm2Vb8Nc4Rt6'}
    verdicts = [guard.record("Bash", call, f'{{"error": "unauthorized", "key": "{SECRET}"}}') for _ in range(3)]
    assert [v.action for v in verdicts] == ["allow", "allow", "warn"]
    assert SECRET not in verdicts[2].message
    raw = b"".join(bytes(row[0]) for row in store.connect().execute("SELECT state FROM sessions"))
    assert raw and SECRET.encode() not in raw and b"Q9x7Lm2Vb8Nc4Rt6".lower() not in raw.lower()
    assert SECRET[8:20].lower().encode() not in raw.lower()  # not even its lower-cased words
    for path in tmp_path.iterdir():  # nor in the WAL or anywhere else on disk
        assert SECRET.encode() not in path.read_bytes(), path
    assert store.connect().execute("PRAGMA secure_delete").fetchone()[0] == 1
    store.close()


# -- the stores --------------------------------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite", "redis"])
def any_store(request, tmp_path):
    if request.param == "memory":
        store = open_store(f"memory://{tmp_path.name}")
    elif request.param == "sqlite":
        store = open_store(f"sqlite://{tmp_path / 'state.sqlite3'}")
    else:
        server = request.getfixturevalue("redis_server")
        store = open_store(server.url, timeout=5)
    yield store
    store.close()


def test_store_interface(any_store):
    store = any_store
    assert store.load("k") is None and store.list() == []
    assert store.update("k", lambda s: None) is None and store.load("k") is None  # None: nothing written
    first = busy_state()
    store.update("k", lambda s: first if s is None else pytest.fail("not new"))
    assert_same(first, store.load("k"))

    def bump(s):
        s.steps_seen += 1
        return s

    assert store.update("k", bump).steps_seen == first.steps_seen + 1
    with pytest.raises(RuntimeError):  # an exception in fn writes nothing
        store.update("k", lambda s: (bump(s), (_ for _ in ()).throw(RuntimeError("boom"))))
    assert store.load("k").steps_seen == first.steps_seen + 1
    store.save("other", SessionState.new(4))
    listed = store.list()
    assert [i.key for i in listed] == ["k", "other"] and all(i.size > 0 and i.updated > 0 for i in listed)
    assert store.expire(older_than=3600) == 0
    assert store.expire(older_than=0) == 2 and store.list() == []
    store.save("k", first)
    assert store.delete("k") and not store.delete("k") and store.load("k") is None


def test_another_version_reads_as_absent(any_store):
    any_store.save("k", busy_state())
    other = type(any_store).__new__(type(any_store))
    other.__dict__.update(any_store.__dict__)
    other.version = "v2"
    assert other.load("k") is None and any_store.load("k") is not None


def test_sessions_expire_after_their_ttl(tmp_path, redis_server):
    import time

    for store in (open_store("memory://ttl", ttl=1), open_store(f"sqlite://{tmp_path}/t.db", ttl=1),
                  open_store(redis_server.url, ttl=1)):
        store.save("k", SessionState.new(4))
        assert store.load("k") is not None
    redis_store = store
    assert 0 < redis_store.client.ttl(redis_store.prefix + "k") <= 1  # Redis drops it itself
    time.sleep(1.6)
    for store in (open_store("memory://ttl", ttl=1), open_store(f"sqlite://{tmp_path}/t.db", ttl=1), redis_store):
        assert store.load("k") is None, store
    assert redis_store.client.exists(redis_store.prefix + "k") == 0


def test_store_urls(tmp_path, monkeypatch):
    monkeypatch.delenv("SEMLOOP_STORE", raising=False)
    monkeypatch.setenv("SEMLOOP_DB", str(tmp_path / "env.db"))
    assert isinstance(open_store(), SQLiteStore) and open_store().path == tmp_path / "env.db"
    monkeypatch.setenv("SEMLOOP_STORE", "memory://x")
    assert open_store() is open_store("memory://x") and isinstance(open_store(), MemoryStore)
    assert open_store(db=tmp_path / "d.db").path == tmp_path / "d.db"  # an explicit --db wins
    assert open_store(f"sqlite://{tmp_path}/a.db").path == tmp_path / "a.db"
    assert type(open_store("redis://127.0.0.1:1/0")).__name__ == "RedisStore"  # lazy: no connection yet
    with pytest.raises(ValueError, match="unknown store URL"):
        open_store("mongodb://x")


def test_guard_with_a_store_shares_the_session_between_guards(any_store):
    a = LoopGuard(embedding="hashing", store=any_store, session="fleet")
    b = LoopGuard(embedding="hashing", store=any_store, session="fleet")
    loop = ("Bash", {"command": "make test"}, "FAILED test_x")
    assert [g.record(*loop).action for g in (a, b, a, b)] == ["allow", "allow", "warn", "stop"]
    assert a.check("Bash", {"command": "ls"}).action == "stop" and any_store.load("fleet").steps_seen == 4
    fresh = LoopGuard(embedding="hashing")
    assert [fresh.record(*loop).action for _ in range(4)] == ["allow", "allow", "warn", "stop"]
    a.reset()
    assert any_store.load("fleet") is None
    with pytest.raises(ValueError, match="session"):
        LoopGuard(store=any_store)


def test_a_store_that_is_down_fails_open():
    guard = LoopGuard(embedding="hashing", store="redis://127.0.0.1:1/0", session="s")
    verdict = guard.record("Bash", {"command": "ls"}, "a")
    assert verdict.action == "allow" and "unavailable" in verdict.error
    assert guard.check("Bash", {"command": "ls"}).action == "allow"
    with pytest.raises(StoreError, match="unavailable"):
        LoopGuard(embedding="hashing", store="redis://127.0.0.1:1/0", session="s", fail_open=False).record("x", {}, "")


# -- threads (issue 8.5) -----------------------------------------------------------------------


def _store_url(kind, tmp_path, redis_server=None):
    return {"none": None, "memory": f"memory://threads-{tmp_path.name}",
            "sqlite": f"sqlite://{tmp_path}/threads.sqlite3",
            "redis": None if redis_server is None else redis_server.url}[kind]


@pytest.mark.parametrize("kind", ["none", "memory", "sqlite", "redis"])
def test_one_guard_shared_by_16_threads_counts_every_step_once(kind, tmp_path, request):
    """One guard, 16 threads x 500 `record` + `check`: every step recorded once, in the store too.
    (A SQLite connection used to be usable only by the thread that opened it: 0 of 8000 recorded,
    every step failing open on `ProgrammingError`.)"""
    server = request.getfixturevalue("redis_server") if kind == "redis" else None
    url = _store_url(kind, tmp_path, server)
    guard = LoopGuard(embedding="hashing", **({"store": url, "session": "t"} if url else {}))
    seen, errors = [], []
    lock = threading.Lock()

    def worker(n):
        for i in range(500):
            call = ("Bash", {"command": f"echo {n} {i % 7}"}, f"{n} {i % 7}") if i % 3 else \
                   ("Read", {"file_path": f"src/{n}.py"}, "x = 1\n" * 5)
            v = guard.record(*call)
            c = guard.check(*call[:2]) if i % 10 == 0 else v
            with lock:
                errors.extend(e for e in (v.error, c.error) if e is not None)
                seen.append(v.step)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(seen) == list(range(8000))  # every step counted exactly once
    stored = guard.state if url is None else open_store(url).load("t")
    assert stored.steps_seen == 8000
    if guard.store is not None:
        guard.store.close()


def test_sqlite_store_shared_by_threads_and_guards(tmp_path):
    """One SQLiteStore object used by 8 threads directly (update, load, list, transaction) and
    8 more guards with their own connections to the same file: no update lost."""
    store = SQLiteStore(tmp_path / "s.sqlite3")
    others = [LoopGuard(embedding="hashing", store=f"sqlite://{tmp_path}/s.sqlite3", session="g")
              for _ in range(4)]
    errors = []

    def bump(state):
        state = state or Counter()
        state["n"] += 1
        return state

    def direct():
        try:
            for _ in range(150):
                store.update("k", bump)
                store.load("k")
                store.list()
                with store.transaction("k") as txn:
                    txn.state["n"] += 1
        except Exception as exc:  # pragma: no cover - the failure this test looks for
            errors.append(repr(exc))

    def guarded(guard):
        for i in range(150):
            v = guard.record("Bash", {"command": f"echo {i}"}, str(i))
            if v.error is not None:
                errors.append(v.error)

    threads = [threading.Thread(target=direct) for _ in range(8)]
    threads += [threading.Thread(target=guarded, args=(g,)) for g in others for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.load("k")["n"] == 8 * 150 * 2
    assert store.load("g").steps_seen == 4 * 2 * 150
    store.close()


# -- SQLite robustness (issue 8.3, 8.4, 8.7) ---------------------------------------------------


def _hook(env, db, event, user=None):
    argv = [PY, "-m", "semloop", "hook", "claude-code", "--no-server"] + (["--db", str(db)] if db else [])
    if user is not None:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] + argv
    proc = subprocess.run(argv, input=json.dumps(event).encode(), capture_output=True, timeout=120,
                          env={**os.environ, "SEMLOOP_HOOK_SERVER": "0", "SEMLOOP_CONFIG": "", **env})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr.decode()


def _loop(db, n=3, env=None):
    outs = [_hook(env or {}, db, bash_event("PostToolUse", "make test", stdout="FAILED test_x")) for _ in range(n)]
    return outs


@pytest.mark.parametrize("damage", ["random", "truncated", "page"])
def test_a_corrupt_database_is_moved_aside_and_detection_goes_on(tmp_path, damage):
    db = tmp_path / "state.sqlite3"
    store = SQLiteStore(db)
    for i in range(30):
        store.save(f"s{i}", busy_state())
    store.connect().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    data = bytearray(db.read_bytes())
    if damage == "random":
        data = bytearray(os.urandom(len(data)))
    elif damage == "truncated":
        data = data[: len(data) // 3 + 100]
    else:  # scribble over the interior of the file: pages of the table and its index
        for offset in range(4096, len(data) - 4096, 4096 * 3):
            data[offset:offset + 200] = os.urandom(200)
    db.write_bytes(bytes(data))
    outs, errs = zip(*[_hook({}, db, bash_event("PostToolUse", "make test", stdout="FAILED test_x"))
                       for _ in range(3)], strict=True)
    said = [e for e in errs if "corrupt" in e]
    assert len(said) == 1 and len(said[0].strip().splitlines()) == 1, errs  # said once, on one line
    assert "additionalContext" in json.dumps(outs[2])  # detection works again
    kept = list(tmp_path.glob("state.sqlite3.corrupt-*"))
    assert kept and any(p.read_bytes()[:100] == bytes(data[:100]) for p in kept)  # kept for inspection
    assert SQLiteStore(db).load("sess-1").steps_seen == 3


def test_a_failed_commit_shows_the_real_error(tmp_path):
    """COMMIT fails writing the WAL (the file size limit stands in for a full disk): the error the
    caller sees is the I/O error, not "no transaction is active" from a ROLLBACK after it."""
    db = tmp_path / "state.sqlite3"
    code = f"""
import resource, signal, sys
from semloop.store import SQLiteStore
from semloop.state import SessionState
import numpy as np
store = SQLiteStore({str(db)!r})
store.save("k", SessionState.new(4))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
size = max(p.stat().st_size for p in store.path.parent.iterdir())
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 8192, size + 8192))
def grow(s):
    s.last_kind = "x" * 2_000_000
    return s
try:
    store.update("k", grow)
except Exception as exc:
    print(type(exc).__name__, exc)
"""
    proc = subprocess.run([PY, "-c", code], capture_output=True, timeout=120)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr
    assert "no transaction is active" not in out and ("disk" in out or "full" in out or "I/O" in out), out


def test_a_new_file_opened_while_another_process_creates_it_waits_instead_of_failing(tmp_path):
    """Parallel hooks on a new database all switch it to WAL at once. SQLite refuses the switch
    at once, without the busy wait, to a connection that holds a read lock while another holds the
    write lock: the hook failed open and its step was lost (CI: 7 of 8 parallel steps recorded).
    Here a real second connection holds the write lock for 0.3 s; the store waits it out."""
    import sqlite3

    db = tmp_path / "state.sqlite3"
    other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # the other process, mid-way through creating the file
    release = threading.Timer(0.3, other.execute, ("COMMIT",))
    release.start()
    try:
        store = SQLiteStore(db, timeout=30)
        store.save("k", SessionState.new(4))
        assert store.connect().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.load("k").steps_seen == 0
    finally:
        release.join()
        other.close()


def test_a_database_that_cannot_be_wal_keeps_its_mode_and_does_not_hang(tmp_path):
    """SQLite answers a WAL switch it cannot make (an in-memory database here; some network file
    systems) with the mode it keeps, not an error: the store takes that answer once, as before the
    retry above, instead of asking again until its timeout."""
    import sqlite3

    conn = sqlite3.connect(":memory:", check_same_thread=False)
    opener = threading.Thread(target=SQLiteStore(tmp_path / "unused.sqlite3", timeout=600)._ensure_wal, args=(conn,))
    opener.start()
    opener.join(30)
    assert not opener.is_alive()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "memory"


def test_state_files_other_users_can_write_are_refused(tmp_path):
    db = tmp_path / "state.sqlite3"
    _loop(db, 1)
    os.chmod(db, 0o666)  # a file anyone can write
    out, err = _hook({}, db, bash_event("PostToolUse", "ls", stdout="a"))
    assert out == {} and err.count("\n") == 1 and "not private" in err
    os.chmod(db, 0o600)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o1777)  # like /tmp: others can plant the -wal / -shm files
    out, err = _hook({}, shared / "state.sqlite3", bash_event("PostToolUse", "ls", stdout="a"))
    assert out == {} and err.count("\n") == 1 and "writable by other users" in err
    assert not (shared / "state.sqlite3").exists()


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(), reason="needs root and setpriv")
def test_a_database_planted_by_another_user_is_refused(tmp_path):
    """Two users: `nobody` (the victim) points its hook at a directory it owns, where root (standing
    in for the attacker) has planted a state file. The victim refuses it; its own file works."""
    import shutil
    import tempfile

    victim = 65534
    base = Path(tempfile.mkdtemp(prefix="slstore-", dir="/tmp"))  # tmp_path is root-only (0700)
    try:
        os.chmod(base, 0o755)
        home = base / "victim"
        home.mkdir()
        os.chown(home, victim, victim)
        planted = home / "state.sqlite3"
        SQLiteStore(tmp_path / "plant.db").save("sess-1", busy_state())  # written as root: owned by root
        os.replace(tmp_path / "plant.db", planted)
        env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
        out, err = _hook(env, planted, bash_event("PostToolUse", "ls", stdout="a"), user=victim)
        assert out == {} and err.count("\n") == 1 and "not private to this user" in err
        own = home / "own" / "state.sqlite3"
        outs = [_hook(env, own, bash_event("PostToolUse", "make", stdout="FAILED"), user=victim)[0]
                for _ in range(3)]
        assert "additionalContext" in json.dumps(outs[2]) and own.stat().st_uid == victim
        assert own.stat().st_mode & 0o077 == 0 and own.parent.stat().st_mode & 0o077 == 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- `semloop sessions` ------------------------------------------------------------------------


def _sessions(env, *args):
    return subprocess.run([PY, "-m", "semloop", "sessions", *args], capture_output=True, timeout=120,
                          env={**os.environ, **env})


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_sessions_command(tmp_path, backend, request):
    url = f"sqlite://{tmp_path}/s.db" if backend == "sqlite" else request.getfixturevalue("redis_server").url
    env = {"SEMLOOP_STORE": url}
    outs = [_hook(env | {"SEMLOOP_DB": str(tmp_path / "unused.db")}, "", bash_event(
        "PostToolUse", "git push", stderr="rejected: non-fast-forward"))[0] for _ in range(4)]
    assert [out.get("continue", True) for out in outs] == [True, True, True, False]
    listed = _sessions(env, "list")
    assert listed.returncode == 0 and "sess-1" in listed.stdout.decode() and "yes" in listed.stdout.decode()
    shown = json.loads(_sessions(env, "show", "sess-1", "--json").stdout)
    assert shown["steps"] == 4 and isinstance(shown["steps"], int) and shown["stopped"] is True
    assert shown["warnings"] == 2 and shown["last_signal"] and shown["tools"] == {"Bash": 4}
    assert "git push" in _sessions(env, "show", "sess-1").stdout.decode()
    assert _sessions(env, "reset", "sess-1").returncode == 0
    shown = json.loads(_sessions(env, "show", "sess-1", "--json").stdout)
    assert shown["stopped"] is False and shown["warnings"] == 0 and shown["steps"] == 4
    assert not (tmp_path / "unused.db").exists()  # SEMLOOP_STORE wins over SEMLOOP_DB
    missing = _sessions(env, "show", "nope")
    assert missing.returncode == 1 and "no session" in missing.stderr.decode()
    assert _sessions(env, "reset", "sess-1", "--forget").returncode == 0
    assert _sessions(env, "list", "--json").stdout == b""


def test_the_default_directory_is_made_private_and_shown_urls_hide_passwords(tmp_path, monkeypatch):
    from semloop.store import display_url

    monkeypatch.delenv("SEMLOOP_STORE", raising=False)
    monkeypatch.delenv("SEMLOOP_DB", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    own = tmp_path / "cache" / "semloop"
    own.mkdir(parents=True)
    os.chmod(own, 0o775)  # e.g. made under umask 002
    store = open_store()
    store.save("k", SessionState.new(4))
    assert store.load("k") is not None and own.stat().st_mode & 0o077 == 0
    elsewhere = tmp_path / "team"
    elsewhere.mkdir(mode=0o775)
    os.chmod(elsewhere, 0o775)
    with pytest.raises(UnsafeStoreError):  # a directory the user chose is never changed: refused
        open_store(db=elsewhere / "s.db").load("k")
    assert display_url("rediss://:s3cret@redis.internal:6380/0") == "rediss://***@redis.internal:6380/0"
    assert display_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


# -- foreign entries (issue 31.7) --------------------------------------------------------------


def _plant_foreign(backend, url, tmp_path):
    """Entries of another program (or a broken write) beside a real session: names of the bad ones."""
    if backend == "sqlite":
        import sqlite3

        conn = sqlite3.connect(f"{tmp_path}/s.db")
        conn.execute("INSERT INTO sessions VALUES ('text-updated', '', 'yesterday', x'00')")
        conn.execute("INSERT INTO sessions VALUES ('text-state', '', ?, 'not bytes')", (time.time(),))
        conn.commit()
        conn.close()
        return ["text-updated", "text-state"]
    import redis

    client = redis.Redis.from_url(url)
    client.set("semloop:session:a-string", "hello")
    client.rpush("semloop:session:a-list", "x")
    client.hset("semloop:session:bad-time", mapping={"version": "", "updated": "soon", "state": b"\0"})
    return ["a-string", "a-list", "bad-time"]


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_a_foreign_entry_is_skipped_said_once_and_replaced(tmp_path, backend, request):
    url = f"sqlite://{tmp_path}/s.db" if backend == "sqlite" else request.getfixturevalue("redis_server").url
    env = {"SEMLOOP_STORE": url}
    LoopGuard(embedding="hashing", store=url, session="good").record("Bash", {"command": "ls"}, "a b")
    bad = _plant_foreign(backend, url, tmp_path)

    listed = _sessions(env, "list", "--json")  # the other sessions are listed: no traceback
    err = listed.stderr.decode()
    assert listed.returncode == 0 and "Traceback" not in err, err
    rows = {row["session"]: row for row in map(json.loads, listed.stdout.decode().splitlines())}
    assert rows.pop("good")["steps"] == 1
    # a row with a time but a state that is no bytes is listed as unreadable, like another version's
    assert rows == ({} if backend == "redis" else {"text-state": rows["text-state"]})
    assert all(row["readable"] is False for row in rows.values())
    for key in bad:
        assert err.count(repr(key)) == 1, err  # said once, naming the entry
    assert len(err.splitlines()) <= len(bad), err
    shown = _sessions(env, "show", "good", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["steps"] == 1 and "Traceback" not in shown.stderr.decode()
    for key in bad:
        missing = _sessions(env, "show", key)
        assert missing.returncode == 1 and "Traceback" not in missing.stderr.decode()
        assert "no session" in missing.stderr.decode()

    # the session's own steps replace the foreign entry: recorded, not failing open forever
    for key in bad:
        guard = LoopGuard(embedding="hashing", store=url, session=key, fail_open=False)
        verdicts = [guard.record("Bash", {"command": "make"}, "FAILED x") for _ in range(3)]
        assert [v.error for v in verdicts] == [None] * 3 and verdicts[-1].action == "warn"
        assert open_store(url).load(key).steps_seen == 3
    assert sorted(json.loads(line)["session"] for line in _sessions(env, "list", "--json").stdout.decode()
                  .splitlines()) == sorted(["good", *bad])


def test_a_foreign_memory_value_reads_as_absent_and_expiry_removes_foreign_sqlite_rows(tmp_path):
    store = open_store(f"sqlite://{tmp_path}/s.db")
    store.save("ok", SessionState.new(4))
    store.connect().execute("INSERT INTO sessions VALUES ('forever', '', 'never', x'00')")
    assert store.expire() == 1 and [i.key for i in store.list()] == ["ok"]  # a text time never expired before
    guard = LoopGuard(embedding="hashing", store=f"memory://foreign-{tmp_path.name}", session="x")
    guard.store.save("x", {"not": "a session"})  # someone else's value under the session's key
    assert guard.record("Bash", {"command": "ls"}, "a").error is None and guard.store.load("x").steps_seen == 1


# -- the size bound (issue 31.9) ---------------------------------------------------------------


def test_the_fullest_session_stays_within_the_documented_bound(monkeypatch):
    """docs/store.md: a session is at most SESSION_BYTES_BOUND bytes, whatever its length. The
    fullest session the default config can hold (every cluster's memory full, more distinct long
    tool names than are counted, 80+ character paths and words) stays under it, and more steps of
    new tools and longer words do not grow it. (Before: tool counts and words were kept whole.)"""
    import importlib.util

    from semloop.store import SESSION_BYTES_BOUND

    benchmarks = Path(__file__).resolve().parent.parent / "benchmarks"
    monkeypatch.syspath_prepend(str(benchmarks))  # its `timing` helper
    spec = importlib.util.spec_from_file_location("store_overhead", benchmarks / "store_overhead.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    guard = bench.worst_session(visits=10)
    full = len(guard.to_bytes())
    for i in range(600):  # new tools, and words 10x longer, forever
        guard.record(f"tool-{i}-" + "n" * 2000, {"command": f"run-{i % 256} " + " ".join(
            f"/x/{'w' * 900}{i}{j}.py" for j in range(70))}, " ".join(f"{'y' * 900}{i}{j}" for j in range(20)))
    size = len(guard.to_bytes())
    assert len(guard.state.clusters) == 256 and len(guard.state.tool_counts) <= 256
    assert full <= SESSION_BYTES_BOUND and size <= SESSION_BYTES_BOUND, (full, size)
    assert size <= full * 1.05, (full, size)  # bounded: new tools and longer words do not grow it
