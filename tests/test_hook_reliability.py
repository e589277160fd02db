"""Issue 8 (1, 2, 8, 9): every step recorded exactly once under load, with or without the warm
server; bounded work for huge payloads; settings symlinks, a socket path that is a directory and a
planted log symlink. Real hook processes, a real server, real SQLite."""

from __future__ import annotations

import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from semloop.integrations import claude_code as cc
from semloop.integrations import hook_protocol as hp

from conftest import bash_event, stored
from hook_processes import SEMLOOP

pytestmark = pytest.mark.skipif(os.name == "nt", reason="Unix sockets only")


def _parallel_posts(env: dict, db: Path, n: int, session: str, *extra: str) -> list[tuple[int, bytes, bytes]]:
    events = [json.dumps(bash_event("PostToolUse", f"wc -l data/part-{i}.csv", stdout=f"{i * 37} part-{i}",
                                    session=session)) for i in range(n)]
    procs = [subprocess.Popen(SEMLOOP + ["hook", "claude-code", "--db", str(db), *extra], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(n)]
    with ThreadPoolExecutor(n) as pool:  # all stdins at once: the processes really overlap
        outs = list(pool.map(lambda pe: pe[0].communicate(pe[1].encode(), timeout=300), zip(procs, events)))
    return [(p.returncode, o, e) for p, (o, e) in zip(procs, outs)]


@pytest.mark.parametrize("n", [8, 64])
def test_parallel_hooks_through_the_server_record_every_step_once(srv, tmp_path, n):
    srv.start(idle=900)
    db = tmp_path / "state.sqlite3"
    # a generous budget: this checks that no step is lost or doubled, not the fail-open time
    results = _parallel_posts({**srv.env, "SEMLOOP_HOOK_BUDGET": "120"}, db, n, "load")
    for rc, out, err in results:
        assert rc == 0 and json.loads(out) == {}, err
        assert b"hook error" not in err
    state = stored(db, "load")
    assert state.steps_seen == n and sum(state.tool_counts.values()) == n
    # the server answered (on a loaded machine some clients give up and record in-process: once)
    assert srv.wait_for_server()["served"] >= 1


@pytest.mark.parametrize("n", [8, 64])
def test_parallel_hooks_in_process_record_every_step_once(srv, tmp_path, n):
    db = tmp_path / "state.sqlite3"
    # a generous lock wait: this checks that no step is lost or doubled, not the fail-open timeout
    env = {**srv.env, "SEMLOOP_HOOK_SERVER": "0", "SEMLOOP_DB_TIMEOUT": "120", "SEMLOOP_HOOK_BUDGET": "120"}
    results = _parallel_posts(env, db, n, "load")
    for rc, out, err in results:
        assert rc == 0 and json.loads(out) == {}, err
    errors = [err.decode() for _, _, err in results if err.strip()]
    assert errors == []  # a hook that failed open says so on stderr, and its step is lost
    state = stored(db, "load")
    assert state.steps_seen == n and sum(state.tool_counts.values()) == n


def test_an_expired_request_is_recorded_once_by_the_client(srv, tmp_path):
    srv.start()
    db = tmp_path / "state.sqlite3"
    # deadline already gone when the server looks: it answers "not handled", the client records it
    out, err = srv.hook(db, bash_event("PostToolUse", "ls /srv", stdout="a"), "--server-timeout", "0.000001")
    assert out == {} and err == ""
    assert stored(db, "sess-1").steps_seen == 1
    assert srv.ping()["expired"] == 1
    # two identical calls stay two steps: the third is the first repeat flagged, as documented
    for _ in range(2):
        srv.hook(db, bash_event("PostToolUse", "ls /srv", stdout="a"), "--server-timeout", "0.000001")
    assert stored(db, "sess-1").steps_seen == 3


def test_server_checks_the_deadline_inside_the_transaction(tmp_path):
    db = str(tmp_path / "state.sqlite3")
    event = bash_event("PostToolUse", "ls", stdout="a")
    with pytest.raises(cc.Expired):
        cc.handle_event(event, db=db, deadline=time.time() - 0.001)
    assert stored(tmp_path / "state.sqlite3", "sess-1") is None  # rolled back: nothing saved
    cc.handle_event(event, db=db, deadline=time.time() + 60)
    assert stored(tmp_path / "state.sqlite3", "sess-1").steps_seen == 1


# -- 8.9: huge payloads ------------------------------------------------------------------------


def test_bounded_keeps_small_values_and_cuts_big_ones_around_a_digest():
    small = {"command": "ls", "items": list(range(10))}
    assert cc.bounded(small) == small
    big = "x" * 5_000_000 + "MIDDLE" + "y" * 5_000_000
    cut = cc.bounded(big)
    assert len(cut) < cc.MAX_FIELD_CHARS and cut.startswith("xxx") and cut.endswith("yyy")
    assert cc.bounded(big) == cut  # the same payload gives the same text ...
    assert cc.bounded(big.replace("MIDDLE", "MIDDLF")) != cut  # ... a change in the middle another
    many = list(range(100_000))
    assert len(cc.bounded(many)) <= cc.MAX_ITEMS // 2 + 1 and cc.bounded(many) != cc.bounded(many[:-2] + [0, 0])


@pytest.mark.parametrize("mb", [15, 70])
def test_huge_tool_response_is_recorded_and_repeats_flagged(tmp_path, mb):
    db = tmp_path / "state.sqlite3"
    body = ("row " * (mb * 1024 * 256))[: mb << 20]
    event = json.dumps(bash_event("PostToolUse", "cat dump.sql", stdout=body, session="big"))
    outs, seconds = [], []
    for _ in range(3):
        start = time.monotonic()
        proc = subprocess.run(SEMLOOP + ["hook", "claude-code", "--db", str(db), "--no-server"], input=event.encode(),
                              capture_output=True, timeout=120)
        seconds.append(time.monotonic() - start)
        assert proc.returncode == 0 and b"hook error" not in proc.stderr, proc.stderr
        outs.append(json.loads(proc.stdout))
    assert outs[:2] == [{}, {}] and "additionalContext" in outs[2]["hookSpecificOutput"]  # the third call
    assert stored(db, "big").steps_seen == 3
    print(f"{mb} MB tool_response: {', '.join(f'{s:.2f}' for s in seconds)} s per hook process")


# -- 8.8: settings symlink, socket path that is a directory, planted log symlink ---------------


def test_install_edits_a_symlinked_settings_file_at_its_target(tmp_path, semloop_cmd):
    target = tmp_path / "dotfiles" / "claude-settings.json"
    target.parent.mkdir()
    target.write_text(json.dumps({"model": "opus"}))
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(target)
    proc = subprocess.run(semloop_cmd + ["install", "claude-code", "--settings", str(link), "--hooks", "command"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    data = json.loads(target.read_text())
    assert data["model"] == "opus" and "PreToolUse" in data["hooks"]
    assert subprocess.run(semloop_cmd + ["uninstall", "claude-code", "--settings", str(link)]).returncode == 0
    assert link.is_symlink() and json.loads(target.read_text()) == {"model": "opus"}


def test_socket_path_that_is_a_directory_falls_back_without_spawning(srv, tmp_path):
    os.makedirs(srv.socket)
    db = tmp_path / "state.sqlite3"
    for _ in range(3):
        out, err = srv.hook(db, bash_event("PostToolUse", "ls /srv", stdout="a"))
    assert "additionalContext" in out["hookSpecificOutput"] and err == ""  # handled in-process
    assert not os.path.exists(srv.socket + ".spawn")  # no server was started (so none crash-loops)
    proc = subprocess.run(SEMLOOP + ["hook-server", "--idle-timeout", "5"], env=srv.env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "is a directory" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_server_log_is_never_written_through_a_planted_symlink(srv, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.symlink(victim, srv.socket + ".log")
    assert hp.start_server(srv.socket, idle_timeout=5)
    srv.wait_for_server()
    assert victim.read_text() == "precious\n"
    with pytest.raises(OSError):
        hp.open_private(srv.socket + ".log", os.O_WRONLY | os.O_APPEND)


# -- http hooks: the token, another user ---------------------------------------------------------


def _post(port: int, event: dict, token: str | None, query: str = "") -> tuple[int, bytes]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers[hp.TOKEN_HEADER] = token
    conn.request("POST", "/hook" + query, body=json.dumps(event), headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.read()


def test_http_hooks_need_the_token_and_another_user_cannot_read_it(srv, tmp_path, monkeypatch):
    from urllib.parse import quote

    monkeypatch.setenv("XDG_CACHE_HOME", srv.env["XDG_CACHE_HOME"])  # the server's cache dir
    config = hp.http_config(create=True)
    srv.start()
    db = tmp_path / "state.sqlite3"
    query = f"?db={quote(str(db))}"
    event = bash_event("PostToolUse", "ls /srv", stdout="a", session="web")
    assert _post(config["port"], event, None, query)[0] == 403
    assert _post(config["port"], event, "x" * 43, query)[0] == 403
    assert stored(db, "web") is None  # neither fed ...
    outs = [_post(config["port"], event, config["token"], query) for _ in range(3)]
    assert [status for status, _ in outs] == [200, 200, 200]
    assert json.loads(outs[2][1])["hookSpecificOutput"]["additionalContext"].startswith("[semloop]")
    assert stored(db, "web").steps_seen == 3
    # ... nor can another local user read the token
    token_file = Path(srv.env["XDG_CACHE_HOME"]) / "semloop" / "hook-http.json"
    assert token_file.stat().st_mode & 0o777 == 0o600
    if os.geteuid() == 0:
        other = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat", str(token_file)],
                               capture_output=True)
        assert other.returncode != 0 and config["token"].encode() not in other.stdout
    # SessionEnd over http deletes the session's state
    end = {"session_id": "web", "hook_event_name": "SessionEnd", "reason": "other"}
    assert _post(config["port"], end, config["token"], query) == (200, b"{}")
    assert stored(db, "web") is None


def test_subagent_stop_and_session_end_forget_their_state(tmp_path):
    db = str(tmp_path / "state.sqlite3")
    for agent in (None, "a1", "a2"):
        extra = {"agent_id": agent} if agent else {}
        cc.handle_event(bash_event("PostToolUse", "ls", stdout="x", session="s", **extra), db=db)
    cc.handle_event(bash_event("PostToolUse", "ls", stdout="x", session="s-other"), db=db)
    cc.handle_event({"session_id": "s", "agent_id": "a1", "hook_event_name": "SubagentStop"}, db=db)
    path = tmp_path / "state.sqlite3"
    assert stored(path, "s/a1") is None and stored(path, "s/a2") is not None and stored(path, "s") is not None
    cc.handle_event({"session_id": "s", "hook_event_name": "SessionEnd", "reason": "exit"}, db=db)
    assert stored(path, "s") is None and stored(path, "s/a2") is None
    assert stored(path, "s-other").steps_seen == 1  # other sessions untouched
