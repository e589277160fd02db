"""The warm hook server, end to end with real processes: a `semloop hook-server` on a temporary
socket, real hook payloads piped into the installed `semloop hook claude-code` script."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from semloop.integrations import hook_protocol as hp

from conftest import bash_event, stored
from hook_processes import SEMLOOP

pytestmark = pytest.mark.skipif(not hasattr(__import__("socket"), "AF_UNIX") or os.name == "nt",
                                reason="Unix sockets only")


def loop_sequence(run) -> list[dict]:
    """Pre/Post pairs of the same failing command until denied, then a prompt and one more Post."""
    cmd, out = "python run_migrations.py", "Traceback (most recent call last):\nKeyError: 'DATABASE_URL'"
    outs = []
    for _ in range(6):
        pre = run(bash_event("PreToolUse", cmd))
        outs.append(pre)
        if pre:
            break
        outs.append(run(bash_event("PostToolUse", cmd, stderr=out)))
    outs.append(run({"session_id": "sess-1", "hook_event_name": "UserPromptSubmit", "prompt": "go on"}))
    outs.append(run("not json"))
    return outs


def test_server_gives_the_in_process_answers(srv, tmp_path):
    cold = loop_sequence(lambda e: srv.hook(tmp_path / "cold.db", e, env={"SEMLOOP_HOOK_SERVER": "0"})[0])
    assert any("permissionDecision" in json.dumps(o) for o in cold)  # warn → deny happened
    assert any("additionalContext" in json.dumps(o) for o in cold)
    srv.start()
    before = srv.ping()["served"]
    stderr: list[str] = []

    def warm(event):
        out, err = srv.hook(tmp_path / "warm.db", event)
        stderr.append(err)
        return out

    assert loop_sequence(warm) == cold
    assert srv.ping()["served"] == before + len(cold)  # every event went through the server
    assert stderr[-1].count("\n") == 1 and "semloop: hook error" in stderr[-1]  # its stderr is relayed
    assert stored(tmp_path / "warm.db", "sess-1").steps_seen == stored(tmp_path / "cold.db", "sess-1").steps_seen


def test_parallel_clients_through_the_server_lose_no_step(srv, tmp_path):
    srv.start()
    db, n = tmp_path / "state.sqlite3", 10
    before = srv.ping()["served"]
    events = [json.dumps(bash_event("PostToolUse", f"wc -l data/part-{i}.csv", stdout=f"{i * 37} part-{i}",
                                    session="par")) for i in range(n)]
    procs = [subprocess.Popen(SEMLOOP + ["hook", "claude-code", "--db", str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=srv.env) for _ in range(n)]
    with ThreadPoolExecutor(n) as pool:
        results = list(pool.map(lambda pe: pe[0].communicate(pe[1].encode(), timeout=60), zip(procs, events)))
    for proc, (out, err) in zip(procs, results):
        assert proc.returncode == 0 and json.loads(out) == {}, err
    state = stored(db, "par")
    assert state.steps_seen == n and sum(state.tool_counts.values()) == n
    assert srv.ping()["served"] == before + n


def test_killed_server_falls_back_in_process_and_respawns(srv, tmp_path):
    pid = srv.start()
    db = tmp_path / "state.sqlite3"
    cmd = "make test"
    srv.hook(db, bash_event("PostToolUse", cmd, stdout="FAILED"))
    os.kill(pid, signal.SIGKILL)  # leaves a stale socket file behind
    srv.procs[0].wait(timeout=10)
    assert os.path.exists(srv.socket)
    # the next hooks still answer (in-process) and count, and one of them starts a server
    assert srv.hook(db, bash_event("PostToolUse", cmd, stdout="FAILED"))[0] == {}
    third, _ = srv.hook(db, bash_event("PostToolUse", cmd, stdout="FAILED"))
    assert "additionalContext" in third["hookSpecificOutput"]
    reply = srv.wait_for_server(not_pid=pid)
    assert reply["pid"] != pid
    before = reply["served"]
    fourth, _ = srv.hook(db, bash_event("PostToolUse", cmd, stdout="FAILED"))
    assert "additionalContext" in fourth["hookSpecificOutput"]
    assert srv.ping()["served"] == before + 1  # served by the new server
    assert stored(db, "sess-1").steps_seen == 4
    assert os.stat(srv.socket).st_mode & 0o777 == 0o600


def test_idle_timeout_exits_and_removes_the_socket(srv):
    srv.start(idle=0.5)
    proc = srv.procs[0]
    assert proc.wait(timeout=15) == 0
    assert not os.path.exists(srv.socket)
    assert "idle timeout: exiting" in Path(srv.socket + ".log").read_text()


def test_one_server_per_socket(srv):
    pid = srv.start()
    second = subprocess.run([sys.executable, "-m", "semloop", "hook-server", "--socket", srv.socket],
                            env=srv.env, capture_output=True, timeout=30)
    assert second.returncode == 0
    assert srv.ping()["pid"] == pid


def test_disabled_server_is_never_started(srv, tmp_path):
    db = tmp_path / "state.sqlite3"
    for i in range(2):
        out, _ = srv.hook(db, bash_event("PostToolUse", f"ls {i}", stdout="a"), env={"SEMLOOP_HOOK_SERVER": "0"})
        assert out == {}
        assert srv.hook(db, bash_event("PreToolUse", "ls"), "--no-server")[0] == {}
    time.sleep(1.0)
    assert os.listdir(srv.dir) == []  # no socket, lock, log or spawn stamp
    assert stored(db, "sess-1").steps_seen == 2


def test_client_imports_no_numpy_and_mismatched_env_goes_in_process(srv, tmp_path):
    srv.start()
    db = tmp_path / "state.sqlite3"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "semloop", "hook", "claude-code", "--db", str(db)],
                          input=json.dumps(bash_event("PostToolUse", "ls", stdout="a")).encode(),
                          capture_output=True, timeout=60, env=srv.env)
    assert proc.returncode == 0 and json.loads(proc.stdout) == {}
    imported = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines() if "import time" in line}
    assert "semloop.integrations.hook_protocol" in imported  # the client
    assert not {m for m in imported if m.split(".")[0] in ("numpy", "sqlite3", "pickle")}, imported
    # a client whose SEMLOOP_* settings differ from the server's is handled in-process
    before = srv.ping()["served"]
    out, _ = srv.hook(db, bash_event("PostToolUse", "ls", stdout="a"), env={"SEMLOOP_DB_TIMEOUT": "4"})
    assert out == {} and srv.ping()["served"] == before
    assert stored(db, "sess-1").steps_seen == 2


def test_every_cli_hook_is_a_light_client_served_by_the_server(srv, tmp_path):
    # `semloop hook <target>` builds no argument parser and imports neither the core nor typing /
    # dataclasses (a process per event: its imports are paid on every tool call)
    srv.start()
    db = tmp_path / "state.sqlite3"
    copilot = {"sessionId": "c-1", "toolName": "bash", "toolArgs": {"command": "ls"},
               "toolResult": {"resultType": "success", "textResultForLlm": "a"}}
    codex = {"session_id": "x-1", "hook_event_name": "PostToolUse", "tool_name": "Bash",
             "tool_input": {"command": "ls"}, "tool_response": "a"}
    before = srv.ping()["served"]
    for target, event, extra in (("copilot", copilot, {"SEMLOOP_HOOK_EVENT": "postToolUse"}), ("codex", codex, {})):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "semloop", "hook", target, "--db", str(db)],
                              input=json.dumps(event).encode(), capture_output=True, timeout=60,
                              env={**srv.env, **extra})
        assert proc.returncode == 0 and json.loads(proc.stdout) == {}, proc.stderr[-2000:]
        imported = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines() if "import time" in line}
        assert "semloop.integrations.hook_protocol" in imported
        assert not {m for m in imported if m.split(".")[0] in ("numpy", "sqlite3", "argparse", "typing", "dataclasses",
                                                               "logging")}, imported
    # the Copilot entry's SEMLOOP_HOOK_EVENT is the client's own: the server answered both
    assert srv.ping()["served"] == before + 2
    assert stored(db, "copilot/c-1").steps_seen == 1 and stored(db, "codex/x-1").steps_seen == 1


def test_a_request_the_client_gave_up_on_is_not_recorded(srv, tmp_path):
    srv.start()
    db = tmp_path / "state.sqlite3"
    message = {"v": hp.PROTOCOL, "op": "hook", "id": hp.identity(), "env": {}, "config": None, "db": str(db),
               "event": json.dumps(bash_event("PostToolUse", "ls", stdout="a")), "deadline": time.time() - 1}
    reply = hp.call(srv.socket, message, 10)
    assert reply == {"ok": False, "handled": False, "error": "deadline passed"}  # the client records it
    assert stored(db, "sess-1") is None
    assert srv.ping()["expired"] == 1
    message["deadline"] = time.time() + 10
    assert hp.call(srv.socket, message, 10)["stderr"] == ""
    assert stored(db, "sess-1").steps_seen == 1


def test_relative_config_is_resolved_by_the_client_and_reloaded_when_changed(srv, tmp_path):
    srv.start()
    config, db = tmp_path / "semloop.toml", tmp_path / "state.sqlite3"
    before = srv.ping()["served"]

    def posts(session: str) -> list[dict]:
        outs = []
        for _ in range(3):
            proc = subprocess.run(SEMLOOP + ["hook", "claude-code", "--config", "semloop.toml", "--db", str(db)],
                                  input=json.dumps(bash_event("PostToolUse", "make", stdout="FAILED",
                                                              session=session)).encode(),
                                  capture_output=True, timeout=60, env=srv.env, cwd=tmp_path)
            outs.append(json.loads(proc.stdout))
        return outs

    config.write_text("[semloop]\nmax_warnings = 3\n")
    assert "continue" not in posts("a")[2]
    config.write_text("[semloop]\nmax_warnings = 0\nwindow = 8\n")
    assert posts("b")[2]["continue"] is False  # the first flag stops: the new file was read
    assert srv.ping()["served"] == before + 6
