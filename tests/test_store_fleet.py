"""A fleet sharing sessions through the store, with real processes and a real redis-server:

- load: 8 worker processes × 3 sessions × 40 steps, interleaved at random, each step through the
  hook CLI in-process (`semloop hook claude-code --no-server`): every step recorded exactly once,
  and each session's hook outputs equal a single-process replay in the order the store took them;
- crash: a worker killed (-9) in the middle of an update; the session stays readable and goes on;
- Redis down mid-session: the hook fails open with one stderr line; detection resumes when it is back.

The same suite runs on SQLite (one machine) and, with threads in one process, on memory://.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import bash_event
from redis_server import redis_server_fixture  # noqa: F401  (the redis_server fixture)
from semloop.guard import LoopGuard
from semloop.integrations import claude_code as cc
from semloop.store import open_store

PY = sys.executable
WORKERS, SESSIONS, STEPS = 8, 3, 40

# The worker: hook events from a plan file, each through the real CLI entry point in this process;
# LoopGuard.record is wrapped only to log the step index the store assigned to the event.
WORKER = r"""
import io, json, sys
from semloop import cli
from semloop.guard import LoopGuard

plan, log_path = json.load(open(sys.argv[1])), sys.argv[2]
seen = {}
original = LoopGuard.record
def record(self, *args, **kwargs):
    verdict = original(self, *args, **kwargs)
    seen.update(step=verdict.step, error=verdict.error)
    return verdict
LoopGuard.record = record
with open(log_path, "w") as log:
    for item in plan:
        seen.clear()
        sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps(item["event"]).encode()))
        out, err = io.StringIO(), io.StringIO()
        sys.stdout, sys.stderr = out, err
        try:
            rc = cli.main(["hook", "claude-code", "--no-server"])
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        log.write(json.dumps({"session": item["session"], "n": item["n"], "rc": rc, "stdout": out.getvalue(),
                              "stderr": err.getvalue(), **seen}) + "\n")
        log.flush()
"""

POOL = [("make test", "FAILED test_x: assert 1 == 2", ""), ("ls src", "a.py\nb.py\nc.py", ""),
        ("git status", "nothing to commit, working tree clean", ""),
        ("cat src/a.py", "def f():\n    return 1\n" * 4, ""),
        ("git push", "", "rejected: non-fast-forward"), ("pytest -k slow", "1 failed, 3 passed", "")]


def session_events(session: str, rng: random.Random) -> list[dict]:
    events = []
    for i in range(STEPS):
        if rng.random() < 0.25:  # some progress in between the repeats
            command, stdout, stderr = f"grep -n todo{i} src", f"src/a.py:{i}: todo{i}", ""
        else:
            command, stdout, stderr = rng.choice(POOL)
        events.append(bash_event("PostToolUse", command, stdout=stdout, stderr=stderr, session=session))
    return events


@pytest.fixture
def hashing_config(tmp_path):
    path = tmp_path / "semloop.json"
    path.write_text(json.dumps({"embedding": "hashing"}))
    return path


def _plan(seed: int) -> tuple[dict, list[list[dict]]]:
    rng = random.Random(seed)
    events = {f"fleet-{s}": session_events(f"fleet-{s}", rng) for s in range(SESSIONS)}
    items = [{"session": key, "n": n, "event": event} for key, evs in events.items() for n, event in enumerate(evs)]
    rng.shuffle(items)  # any step of any session on any worker, in any order
    return events, [items[w::WORKERS] for w in range(WORKERS)]


def _replay(events: dict, logs: list[dict], config: Path, monkeypatch) -> None:
    """Every step recorded exactly once; hook outputs equal one process replaying the steps in the
    order the store took them (the step index each got)."""
    assert all(entry["rc"] == 0 and entry.get("error") is None and entry["stderr"] == "" for entry in logs), \
        [e for e in logs if e["rc"] or e.get("error") or e["stderr"]][:3]
    monkeypatch.setenv("SEMLOOP_CONFIG", str(config))
    for key, evs in events.items():
        mine = sorted((e for e in logs if e["session"] == key), key=lambda e: e["step"])
        assert [e["step"] for e in mine] == list(range(STEPS)), key  # each step once, none lost
        assert sorted(e["n"] for e in mine) == list(range(STEPS))
        monkeypatch.setenv("SEMLOOP_STORE", f"memory://replay-{os.getpid()}-{id(logs)}-{key}")
        replayed = [cc.run_hook(json.dumps(evs[e["n"]])) + "\n" for e in mine]
        assert replayed == [e["stdout"] for e in mine], key
        assert any('"continue": false' in out for out in replayed)  # the sessions did loop and stop


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_load_8_processes_3_sessions_40_steps(backend, tmp_path, hashing_config, request, monkeypatch):
    url = f"sqlite://{tmp_path}/fleet.db" if backend == "sqlite" else request.getfixturevalue("redis_server").url
    events, plans = _plan(seed=11)
    env = {**os.environ, "SEMLOOP_STORE": url, "SEMLOOP_CONFIG": str(hashing_config), "SEMLOOP_HOOK_SERVER": "0",
           "SEMLOOP_DB_TIMEOUT": "60"}
    procs = []
    for w, plan in enumerate(plans):
        (tmp_path / f"plan{w}.json").write_text(json.dumps(plan))
        procs.append(subprocess.Popen(
            [PY, "-c", WORKER, str(tmp_path / f"plan{w}.json"), str(tmp_path / f"log{w}.jsonl")],
            env=env, stderr=subprocess.PIPE))
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-3000:]
    logs = [json.loads(line) for w in range(WORKERS) for line in (tmp_path / f"log{w}.jsonl").read_text().splitlines()]
    assert len(logs) == SESSIONS * STEPS
    store = open_store(url)
    assert sorted(store.keys()) == sorted(events) and all(store.load(k).steps_seen == STEPS for k in events)
    _replay(events, logs, hashing_config, monkeypatch)


def test_load_8_threads_on_the_memory_store(hashing_config, monkeypatch):
    """memory:// lives in one process: the same load, with 8 threads handling the hook events."""
    url = f"memory://load-{os.getpid()}"
    monkeypatch.setenv("SEMLOOP_STORE", url)
    monkeypatch.setenv("SEMLOOP_CONFIG", str(hashing_config))
    events, plans = _plan(seed=12)
    local, logs, lock = threading.local(), [], threading.Lock()
    original = LoopGuard.record

    def record(self, *args, **kwargs):
        verdict = original(self, *args, **kwargs)
        local.seen = {"step": verdict.step, "error": verdict.error}
        return verdict

    monkeypatch.setattr(LoopGuard, "record", record)

    def worker(plan):
        for item in plan:
            local.seen = {}
            out = cc.run_hook(json.dumps(item["event"])) + "\n"
            with lock:
                logs.append({"session": item["session"], "n": item["n"], "rc": 0, "stdout": out, "stderr": "",
                             **local.seen})

    threads = [threading.Thread(target=worker, args=(plan,)) for plan in plans]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    monkeypatch.setattr(LoopGuard, "record", original)
    assert len(logs) == SESSIONS * STEPS
    _replay(events, logs, hashing_config, monkeypatch)


# -- crash -------------------------------------------------------------------------------------

CRASHER = r"""
import sys, time
from semloop.store import open_store

def stuck(state):
    state.steps_seen += 1000  # never saved: the process dies first
    print("inside", flush=True)
    time.sleep(600)
    return state

open_store(sys.argv[1]).update(sys.argv[2], stuck)
"""


def _hook(env: dict, event: dict) -> tuple[dict, str]:
    proc = subprocess.run([PY, "-m", "semloop", "hook", "claude-code", "--no-server"], input=json.dumps(event).encode(),
                          capture_output=True, timeout=120, env={**os.environ, "SEMLOOP_HOOK_SERVER": "0", **env})
    assert proc.returncode == 0 and len(proc.stdout.decode().splitlines()) == 1, proc
    return json.loads(proc.stdout), proc.stderr.decode()


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_a_worker_killed_mid_update_leaves_the_session_readable(backend, tmp_path, hashing_config, request):
    url = f"sqlite://{tmp_path}/crash.db" if backend == "sqlite" else request.getfixturevalue("redis_server").url
    env = {"SEMLOOP_STORE": url, "SEMLOOP_CONFIG": str(hashing_config), "SEMLOOP_DB_TIMEOUT": "30"}
    loop = bash_event("PostToolUse", "make test", stdout="FAILED test_x", session="crash")
    assert _hook(env, loop)[0] == {}
    worker = subprocess.Popen([PY, "-c", CRASHER, url, "crash"], stdout=subprocess.PIPE, env={**os.environ, **env})
    assert worker.stdout.readline().strip() == b"inside"  # it holds the session mid-update (SQLite: the write lock)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait(timeout=60)
    assert open_store(url).load("crash").steps_seen == 1  # readable, the half-done update is not there
    outs = [_hook(env, loop)[0] for _ in range(2)]
    assert outs[0] == {} and "additionalContext" in json.dumps(outs[1])  # and it goes on: 3rd repeat flagged
    assert open_store(url).load("crash").steps_seen == 3


def test_an_update_that_fails_midway_leaves_the_memory_store_intact():
    store = open_store(f"memory://crash-{os.getpid()}")
    guard = LoopGuard(embedding="hashing", store=store, session="s")
    guard.record("Bash", {"command": "make"}, "FAILED")

    def broken(state):
        state.steps_seen += 1000
        raise KeyboardInterrupt  # the thread dies mid-update

    with pytest.raises(KeyboardInterrupt):
        store.update("s", broken)
    assert store.load("s").steps_seen == 1
    assert [guard.record("Bash", {"command": "make"}, "FAILED").action for _ in range(2)] == ["allow", "warn"]


# -- Redis down and back -----------------------------------------------------------------------


def test_redis_down_mid_session_fails_open_and_detection_resumes(redis_server, hashing_config):
    env = {"SEMLOOP_STORE": redis_server.url, "SEMLOOP_CONFIG": str(hashing_config), "SEMLOOP_DB_TIMEOUT": "2"}
    loop = bash_event("PostToolUse", "make test", stdout="FAILED test_x", session="down")
    assert [_hook(env, loop)[0] for _ in range(2)] == [{}, {}]
    redis_server.kill()  # crash: nothing saved, connections refused
    for event in (loop, bash_event("PreToolUse", "make test", session="down"),
                  {"session_id": "down", "hook_event_name": "UserPromptSubmit", "prompt": "go on"}):
        out, err = _hook(env, event)
        assert out == {} and err.count("\n") == 1 and "semloop:" in err, err  # fail open, one line
    listed = subprocess.run([PY, "-m", "semloop", "sessions", "list"], capture_output=True, timeout=120,
                            env={**os.environ, **env})
    assert listed.returncode == 2 and listed.stderr.decode().count("\n") == 1
    redis_server.start()  # back (empty: it saved nothing)
    outs = [_hook(env, loop) for _ in range(3)]
    assert all(err == "" for _, err in outs) and "additionalContext" in json.dumps(outs[2][0])
    assert open_store(redis_server.url).load("down").steps_seen == 3


def test_the_warm_hook_server_honours_semloop_store(redis_server, hashing_config, tmp_path):
    import tempfile
    import time

    from semloop.integrations import hook_protocol as hp

    sock_dir = Path(tempfile.mkdtemp(prefix="sls-", dir="/tmp"))  # AF_UNIX paths are short
    socket_path = str(sock_dir / "s.sock")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMLOOP_")}
    env.update(SEMLOOP_SOCKET=socket_path, SEMLOOP_STORE=redis_server.url, SEMLOOP_CONFIG=str(hashing_config),
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    server = subprocess.Popen([PY, "-m", "semloop", "hook-server", "--socket", socket_path, "--idle-timeout", "60"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while hp.ping(socket_path) is None:
            assert time.monotonic() < deadline and server.poll() is None, "hook server did not start"
            time.sleep(0.1)
        loop = bash_event("PostToolUse", "make test", stdout="FAILED test_x", session="warm")
        outs = []
        for _ in range(3):
            proc = subprocess.run([PY, "-m", "semloop", "hook", "claude-code", "--server-timeout", "60"],
                                  input=json.dumps(loop).encode(),
                                  capture_output=True, timeout=120, env=env)
            assert proc.returncode == 0 and proc.stderr == b"", proc
            outs.append(json.loads(proc.stdout))
        assert "additionalContext" in json.dumps(outs[2])
        assert hp.ping(socket_path)["served"] == 3  # the server handled them ...
        assert open_store(redis_server.url).load("warm").steps_seen == 3  # ... in Redis
        assert not (tmp_path / "cache" / "semloop" / "state.sqlite3").exists()  # not in the default file
    finally:
        server.kill()
        server.wait(timeout=30)
        import shutil

        shutil.rmtree(sock_dir, ignore_errors=True)
