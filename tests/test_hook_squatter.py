"""Another local user against semloop's hook transport, with a real second user (created with
`useradd`, its processes run with `setpriv`: tests/other_user.py, tests/squatter.py): it takes the
http hook port or the hook socket, steals the token, or floods the port. No tool call may reach
it, a stolen token must buy nothing, and the user is told. Loopback only, bounded in count and time.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import bash_event, stored
from hook_processes import SEMLOOP
from other_user import OtherUser, ensure_user, received

from semloop.integrations import claude_code as cc
from semloop.integrations import gemini_cli
from semloop.integrations import hook_protocol as hp
from semloop.integrations import hook_server as hs

USER = ensure_user()
pytestmark = pytest.mark.skipif(USER is None, reason="needs root, useradd and setpriv (a real second user)")


@pytest.fixture
def other():
    assert USER is not None
    user = OtherUser(*USER)
    try:
        yield user
    finally:
        user.cleanup()


@pytest.fixture
def http(srv, monkeypatch):
    """The server's http config (port, token) in the private cache of `srv`."""
    monkeypatch.setenv("XDG_CACHE_HOME", srv.env["XDG_CACHE_HOME"])
    return hp.http_config(create=True)


def _session_start(srv, env: dict | None = None) -> tuple[dict, str]:
    event = {"session_id": "s", "hook_event_name": "SessionStart", "source": "startup"}
    proc = subprocess.run(SEMLOOP + ["hook", "claude-code"], input=json.dumps(event).encode(), capture_output=True,
                          timeout=120, env={**srv.env, **(env or {})}, check=False)
    assert proc.returncode == 0
    return json.loads(proc.stdout), proc.stderr.decode()


def _post(port: int, token: str, event: dict, query: str = "") -> int:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/hook" + query, body=json.dumps(event), headers={hp.TOKEN_HEADER: token})
    return conn.getresponse().status


def _threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^Threads:\s+(\d+)", status, re.MULTILINE).group(1))


# -- item 1: the port and the socket of another user ---------------------------------------------


def test_session_start_tells_the_user_when_another_user_holds_the_http_port(srv, http, other):
    log = other.listen("tcp", str(http["port"]))  # there first: our server cannot bind the port
    out, err = _session_start(srv)
    message = out.get("systemMessage", "")
    assert f"127.0.0.1:{http['port']} is held by another user (uid {other.uid})" in message
    assert "semloop install claude-code --hooks command" in message and message in err
    assert srv.ping() is not None  # the server runs (command hooks work), without the port
    status = subprocess.run(SEMLOOP + ["hook-server", "--status"], capture_output=True, text=True, timeout=60,
                            env=srv.env, check=False)
    assert f"http 127.0.0.1:{http['port']}: 127.0.0.1:{http['port']} is held by another user" in status.stdout
    assert received(log) == b""  # no challenge, no token, no event


def test_session_start_verifies_its_own_server_with_a_challenge(srv, http):
    out, err = _session_start(srv)
    assert out == {} and err == ""  # our server holds the port and answered the HMAC challenge
    status = subprocess.run(SEMLOOP + ["hook-server", "--status"], capture_output=True, text=True, timeout=60,
                            env=srv.env, check=False)
    assert "this user's server (challenge answered)" in status.stdout
    assert hp.verify_http(http) is None
    assert "not this user's semloop server" in hp.verify_http({**http, "token": "x" * 43})


def test_session_start_says_http_hooks_go_unanswered_when_the_server_is_disabled(srv, http):
    out, err = _session_start(srv, {"SEMLOOP_HOOK_SERVER": "0"})
    assert "loop detection is off in this session" in out["systemMessage"] and "--hooks command" in err


def test_a_stolen_token_is_useless_to_another_user(srv, http, other, tmp_path):
    srv.start()
    db = tmp_path / "state.sqlite3"
    query = f"?db={quote(str(db))}"
    assert _post(http["port"], http["token"], bash_event("PostToolUse", "ls", stdout="a", session="me"), query) == 200
    # the other user has the token (say it saw a header): closed at accept, unread, unanswered
    assert other.run("post", str(http["port"]), http["token"]) == "closed"
    assert stored(db, "stolen") is None and stored(db, "me").steps_seen == 1


def test_a_socket_of_another_user_is_sent_nothing(srv, other, tmp_path):
    shared = other.dir  # a directory anyone can write, as /tmp is
    socket_path = str(shared / "hook.sock")
    log = other.listen("unix", socket_path)
    env = {"SEMLOOP_SOCKET": socket_path}
    db = tmp_path / "state.sqlite3"
    outs = [srv.hook(db, bash_event("PostToolUse", "make", stdout="FAILED"), env=env) for _ in range(3)]
    assert received(log) == b""
    assert all("belongs to another user: nothing was sent to it" in err for _, err in outs)
    assert "additionalContext" in outs[2][0]["hookSpecificOutput"]  # handled in-process: detection works
    assert stored(db, "sess-1").steps_seen == 3


# -- item 3: a bounded http server --------------------------------------------------------------


def test_partial_requests_of_another_user_cost_nothing(srv, http, other, tmp_path):
    pid = srv.start()
    before = _threads(pid)
    result = json.loads(other.run("flood", str(http["port"]), "300", "10"))
    assert result == {"opened": 300, "closed_by_server": 300}  # each closed at accept, unread
    assert _threads(pid) <= before + 2
    db = tmp_path / "state.sqlite3"
    assert _post(http["port"], http["token"], bash_event("PreToolUse", "ls"), f"?db={quote(str(db))}") == 200


def test_partial_requests_and_early_hangups_are_bounded(srv, http, tmp_path):
    pid = srv.start()
    before = _threads(pid)
    held = []
    for _ in range(hs.HTTP_MAX_CONNECTIONS + 40):  # more than the server serves at once
        s = socket.create_connection(("127.0.0.1", http["port"]), timeout=5)
        s.sendall(b"POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Semloop-")
        held.append(s)
    time.sleep(1.0)
    assert _threads(pid) <= before + hs.HTTP_MAX_CONNECTIONS + 2
    # every held connection is closed by the server: the extra ones at once, the others at the read timeout
    closed, end = 0, time.monotonic() + hs.HTTP_READ_TIMEOUT + 20
    for s in held:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            closed += s.recv(1024) == b""
        except ConnectionResetError:
            closed += 1
        except OSError:
            pass
        s.close()
    assert closed == len(held)
    log = Path(srv.socket + ".log")
    size = log.stat().st_size
    for _ in range(2000):  # early hang-ups: the head of a request with a body, then gone
        s = socket.create_connection(("127.0.0.1", http["port"]), timeout=5)
        s.sendall(b"POST /hook HTTP/1.1\r\nContent-Length: 100\r\nX-Semloop-Token: x\r\n\r\nabc")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
        s.close()
    time.sleep(1.0)
    grown = log.read_text()[size:]
    assert "Traceback" not in grown and grown.count("\n") <= 4, grown[:2000]
    assert _threads(pid) <= before + 2
    db = tmp_path / "state.sqlite3"
    assert _post(http["port"], http["token"], bash_event("PreToolUse", "ls"), f"?db={quote(str(db))}") == 200


# -- item 4: one time budget, whatever is stuck -----------------------------------------------------


@pytest.mark.parametrize("target", ["claude-code", "gemini-cli"])
def test_a_frozen_server_and_a_locked_database_still_get_an_answer_in_time(srv, tmp_path, target):
    """The warm server frozen (SIGSTOP) while the database's write lock is held: the hook waits
    for the server, then for the lock, and answers (fail open) before the host kills it."""
    import signal
    import sqlite3

    pid = srv.start()
    db = tmp_path / "state.sqlite3"
    srv.hook(db, bash_event("PostToolUse", "ls", stdout="a"))  # the database exists; the server is warm
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    event = (bash_event("PostToolUse", "make", stdout="FAILED") if target == "claude-code" else
             {"hook_event_name": "AfterTool", "session_id": "g", "tool_name": "run_shell_command",
              "tool_input": {"command": "make"}, "tool_response": {"llmContent": "FAILED"}})
    host_timeout = cc.HOOK_TIMEOUT if target == "claude-code" else gemini_cli.HOOK_TIMEOUT_MS / 1000
    os.kill(pid, signal.SIGSTOP)
    start = time.monotonic()
    try:  # the host kills a hook at its timeout: so does this
        proc = subprocess.run(SEMLOOP + ["hook", target, "--db", str(db)], input=json.dumps(event).encode(),
                              capture_output=True, timeout=host_timeout, env=srv.env, check=False)
    finally:
        os.kill(pid, signal.SIGCONT)
        holder.rollback()
        holder.close()
    print(f"{target}: answered after {time.monotonic() - start:.1f} s (host timeout {host_timeout:g} s)")
    assert proc.returncode == 0 and json.loads(proc.stdout) == {}
    assert "allowing the call" in proc.stderr.decode() and "locked" in proc.stderr.decode()


# -- the real Claude Code CLI ---------------------------------------------------------------------


def test_the_real_cli_with_the_default_install_sends_nothing_to_a_port_squatter(other, tmp_path):
    """An earlier http install left its port in the cache; another user now holds that port. With
    `semloop install claude-code` as it is now, the real CLI's run is guarded (notes, then the
    stop) and not one byte reaches the squatter."""
    import tempfile

    from claude_cli import ScriptedAPI, claude_binary, clean_env, run_claude, tool_call

    binary = claude_binary()
    if binary is None:
        pytest.skip("the Claude Code CLI bundled in claude-agent-sdk is not installed")
    root = Path(tempfile.mkdtemp(prefix="slq-", dir="/tmp"))  # short: AF_UNIX path limit
    home, work, settings, db = root / "h", root / "w", root / "settings.json", root / "state.sqlite3"
    env = clean_env(home, "http://unused")
    old = subprocess.run(SEMLOOP + ["install", "claude-code", "--settings", str(root / "old.json"), "--hooks", "http"],
                         env=env, capture_output=True, text=True, check=False)
    assert old.returncode == 0, old.stderr
    port = json.loads((home / ".cache" / "semloop" / "hook-http.json").read_text())["port"]
    log = other.listen("tcp", str(port))
    try:
        proc = subprocess.run(SEMLOOP + ["install", "claude-code", "--settings", str(settings), "--db", str(db)],
                              env=env, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        with ScriptedAPI([tool_call("Bash", command="ls /nonexistent-dir", description="list")] * 14) as api:
            run = run_claude(binary, api, home, work, settings)
        assert received(log) == b""
        assert run.result.get("terminal_reason") == "hook_stopped", run.stderr[-2000:]
        assert len(run.tool_uses()) <= 5
    finally:
        subprocess.run(SEMLOOP + ["hook-server", "--stop"], env=env, capture_output=True, timeout=30, check=False)
        import shutil

        shutil.rmtree(root, ignore_errors=True)
