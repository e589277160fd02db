"""Claude Code hooks, end to end: real hook payloads piped into the installed `semloop` command
(new process per event, as Claude Code runs it), state in a SQLite file under tmp_path."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from semloop.integrations import claude_code as cc
from semloop.integrations import hook_install as hi
from semloop.integrations.store import SessionStore

from conftest import bash_event, stored
from hook_processes import SEMLOOP

pytestmark = pytest.mark.usefixtures("in_process_hooks")  # these tests exercise the in-process hook


def run(args: list[str], stdin: str | bytes = b"", env: dict | None = None) -> subprocess.CompletedProcess:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run(SEMLOOP + args, input=data, capture_output=True, timeout=120,
                          env={**os.environ, **(env or {})})


def hook(db: Path, event: dict | str, *extra: str) -> tuple[dict, subprocess.CompletedProcess]:
    payload = event if isinstance(event, str) else json.dumps(event)
    proc = run(["hook", "claude-code", "--db", str(db), *extra], payload)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().strip().splitlines()
    assert len(lines) == 1, proc.stdout  # exactly one JSON object on stdout
    return json.loads(lines[0]), proc


# -- the hook ---------------------------------------------------------------------------------


def test_repeated_bash_goes_allow_warn_then_pretooluse_deny(tmp_path):
    db = tmp_path / "state.sqlite3"
    cmd, out = "python run_migrations.py", "Traceback (most recent call last):\nKeyError: 'DATABASE_URL'"
    seen = []
    for attempt in range(6):
        pre, _ = hook(db, bash_event("PreToolUse", cmd))
        if pre:  # denied before running
            seen.append("deny")
            decision = pre["hookSpecificOutput"]
            assert decision["hookEventName"] == "PreToolUse"
            assert decision["permissionDecision"] == "deny"
            assert "semloop blocked this Bash call" in decision["permissionDecisionReason"]
            break
        post, _ = hook(db, bash_event("PostToolUse", cmd, stderr=out, description=f"attempt {attempt}"))
        if post:
            assert post["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
            assert post["hookSpecificOutput"]["additionalContext"].startswith("[semloop] This Bash call repeats")
            seen.append("warn")
        else:
            seen.append("allow")
    assert seen == ["allow", "allow", "warn", "deny"]  # the 4th identical call continues the warned loop
    assert pre["continue"] is False and pre["stopReason"] == decision["permissionDecisionReason"]  # ends the run
    state = stored(db, "sess-1")
    assert state.steps_seen == 3 and state.warnings == 1 and state.stopped  # saved: a new prompt lifts it
    prompt = {"session_id": "sess-1", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit", "prompt": "go on"}
    assert hook(db, prompt)[0] == {} and not stored(db, "sess-1").stopped
    assert hook(db, bash_event("PreToolUse", cmd))[0] == {}  # the user decided: the call may run again


def test_posttooluse_stop_ends_the_turn_and_user_prompt_lifts_it(tmp_path):
    db = tmp_path / "state.sqlite3"
    cmd = "curl -s http://localhost:8080/health"
    outs = []
    for _ in range(5):  # PostToolUse only (e.g. PreToolUse not installed): escalates to stop
        out, _ = hook(db, bash_event("PostToolUse", cmd, stdout="curl: (7) Failed to connect: Connection refused"))
        outs.append(out)
    assert outs[:2] == [{}, {}]
    assert "additionalContext" in outs[2]["hookSpecificOutput"] and "continue" not in outs[2]
    stop = outs[4]
    assert stop["continue"] is False
    assert stop["stopReason"].startswith("semloop stopped this run")
    assert stop["hookSpecificOutput"]["additionalContext"] == stop["stopReason"]
    assert stored(db, "sess-1").stopped
    # once stopped, any tool call is denied up front ...
    pre, _ = hook(db, bash_event("PreToolUse", "ls"))
    assert pre["hookSpecificOutput"]["permissionDecision"] == "deny"
    # ... until the user writes a new prompt: the stop is lifted, the loop memory kept
    prompt = {"session_id": "sess-1", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit", "prompt": "try port 9090"}
    assert hook(db, prompt)[0] == {}
    state = stored(db, "sess-1")
    assert not state.stopped and state.warnings == 0 and state.steps_seen == 5
    assert hook(db, bash_event("PreToolUse", "ls"))[0] == {}
    assert hook(db, bash_event("PreToolUse", cmd))[0] == {}
    again, _ = hook(db, bash_event("PostToolUse", cmd, stdout="curl: (7) Failed to connect: Connection refused"))
    assert "additionalContext" in again["hookSpecificOutput"]  # the same loop is flagged at once


def test_parallel_posttooluse_processes_lose_no_step(tmp_path):
    db = tmp_path / "state.sqlite3"
    n = 10
    events = [json.dumps(bash_event("PostToolUse", f"wc -l data/part-{i}.csv", stdout=f"{i * 37} data/part-{i}.csv",
                                    session="par")) for i in range(n)]
    procs = [subprocess.Popen(SEMLOOP + ["hook", "claude-code", "--db", str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(n)]
    with ThreadPoolExecutor(n) as pool:  # feed all stdins at once so the processes really overlap
        results = list(pool.map(lambda pe: pe[0].communicate(pe[1].encode(), timeout=120), zip(procs, events)))
    for proc, (out, err) in zip(procs, results):
        assert proc.returncode == 0
        assert json.loads(out) == {}, err  # distinct calls: all allowed, none failed open
        assert b"hook error" not in err
    state = stored(db, "par")
    assert state.steps_seen == n
    assert sum(state.tool_counts.values()) == n


def test_subagents_have_their_own_state(tmp_path):
    db = tmp_path / "state.sqlite3"
    hook(db, bash_event("PostToolUse", "ls", stdout="a"))
    hook(db, bash_event("PostToolUse", "ls", stdout="a", agent_id="agent-7", agent_type="Explore"))
    hook(db, bash_event("PostToolUse", "ls", stdout="a", agent_id="agent-7", agent_type="Explore"))
    assert stored(db, "sess-1").steps_seen == 1
    assert stored(db, "sess-1/agent-7").steps_seen == 2


def test_posttoolusefailure_is_recorded_as_error(tmp_path):
    db = tmp_path / "state.sqlite3"
    event = {"session_id": "fail", "cwd": "/tmp", "hook_event_name": "PostToolUseFailure", "tool_name": "Edit",
             "tool_input": {"file_path": "/src/app.py", "old_string": "foo(", "new_string": "bar("},
             "tool_use_id": "toolu_9", "error": "String to replace not found in file.", "is_interrupt": False}
    outs = [hook(db, event)[0] for _ in range(3)]
    assert outs[:2] == [{}, {}]
    assert outs[2]["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    assert "additionalContext" in outs[2]["hookSpecificOutput"]
    state = stored(db, "fail")
    assert state.steps_seen == 3 and all(step.is_error for step in state.window)
    # an interrupt (the user pressed Esc) is not the agent repeating itself
    assert hook(db, {**event, "is_interrupt": True})[0] == {}
    assert stored(db, "fail").steps_seen == 3


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"hook_event_name": "PostToolUse"}',
                                   '{"session_id": "x", "hook_event_name": "PostToolUse", "tool_input": '])
def test_bad_stdin_fails_open(tmp_path, stdin):
    out, proc = hook(tmp_path / "state.sqlite3", stdin)
    assert out == {}
    assert proc.stderr.decode().count("\n") == 1 and "semloop: hook error" in proc.stderr.decode()


def test_unusable_db_and_config_fail_open(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out, proc = hook(blocker / "sub" / "state.sqlite3", bash_event("PostToolUse", "ls", stdout="a"))
    assert out == {} and "hook error" in proc.stderr.decode()
    bad_config = tmp_path / "bad.json"
    bad_config.write_text('{"call_threshhold": 0.5}')
    out, proc = hook(tmp_path / "db.sqlite3", bash_event("PostToolUse", "ls", stdout="a"), "--config", str(bad_config))
    assert out == {} and "call_threshhold" in proc.stderr.decode()


def test_locked_db_fails_open_after_the_busy_timeout(tmp_path):
    db = tmp_path / "state.sqlite3"
    hook(db, bash_event("PostToolUse", "ls", stdout="a"))
    store = SessionStore(db, version="x", timeout=1)
    with store.transaction("someone-else"):  # holds the write lock
        start = time.monotonic()
        proc = run(["hook", "claude-code", "--db", str(db)], json.dumps(bash_event("PostToolUse", "ls", stdout="a")),
                   env={"SEMLOOP_DB_TIMEOUT": "0.5"})
        elapsed = time.monotonic() - start
    store.close()
    assert proc.returncode == 0 and json.loads(proc.stdout) == {}
    assert "locked" in proc.stderr.decode()
    assert elapsed < 30


def test_config_file_and_db_env(tmp_path):
    config = tmp_path / "semloop.toml"
    config.write_text('[semloop]\nmax_warnings = 0\nwindow = 8\n')
    db = tmp_path / "env.sqlite3"
    env = {"SEMLOOP_DB": str(db)}
    outs = []
    for _ in range(3):
        proc = run(["hook", "claude-code", "--config", str(config)],
                   json.dumps(bash_event("PostToolUse", "make test", stdout="FAILED test_x")), env=env)
        outs.append(json.loads(proc.stdout))
    assert db.exists()
    assert outs[2]["continue"] is False  # max_warnings = 0: the first flag stops


def test_user_prompt_mid_loop_keeps_the_warnings(tmp_path):
    db = tmp_path / "state.sqlite3"
    for _ in range(3):
        hook(db, bash_event("PostToolUse", "git push", stderr="rejected: non-fast-forward"))
    assert stored(db, "sess-1").warnings == 1
    hook(db, {"session_id": "sess-1", "hook_event_name": "UserPromptSubmit", "prompt": "also update the docs"})
    assert stored(db, "sess-1").warnings == 1


def test_unrelated_events_are_ignored(tmp_path):
    out, _ = hook(tmp_path / "db.sqlite3", {"session_id": "s", "hook_event_name": "Notification", "message": "hi"})
    assert out == {}


# -- response normalization -------------------------------------------------------------------


def test_normalize_response_shapes():
    bash = {"stdout": "ok\n", "stderr": "warn: x", "interrupted": False, "isImage": False}
    assert cc.normalize_response("Bash", bash) == "ok\n\nwarn: x"
    read = {"type": "text", "file": {"filePath": "/a.py", "content": "print(1)", "numLines": 1, "startLine": 1,
                                     "totalLines": 1}}
    assert "content: print(1)" in cc.normalize_response("Read", read)
    edit1 = {"filePath": "/a.py", "oldString": "a", "newString": "b", "originalFile": "x = a\n" * 1000,
             "structuredPatch": [{"oldStart": 1, "lines": ["-x = a", "+x = b"]}], "userModified": False}
    edit2 = {**edit1, "originalFile": "something else"}
    assert cc.normalize_response("Edit", edit1) == cc.normalize_response("Edit", edit2)  # pre-edit copy dropped
    assert "originalFile" not in cc.normalize_response("Edit", edit1)
    glob1 = {"filenames": ["a.py"], "durationMs": 12, "numFiles": 1, "truncated": False}
    assert cc.normalize_response("Glob", glob1) == cc.normalize_response("Glob", {**glob1, "durationMs": 99})
    mcp = [{"type": "text", "text": "row 1"}, {"type": "text", "text": "row 2"}]
    assert cc.normalize_response("mcp__db__query", mcp) == "row 1\nrow 2"
    image = {"type": "image", "file": {"base64": "A" * 5000, "type": "image/png"}}
    assert len(cc.normalize_response("Read", image)) < 200
    assert cc.normalize_response("X", None) == "" and cc.normalize_response("X", "plain") == "plain"


# -- the state store --------------------------------------------------------------------------


def test_store_roundtrip_versions_and_expiry(tmp_path):
    store = SessionStore(tmp_path / "s.db", version="v1", ttl_days=7)
    assert store.load("k") is None
    with store.transaction("k") as txn:
        assert txn.state is None
        txn.state = {"n": 1}
    with store.transaction("k") as txn:
        txn.state["n"] += 1
    assert store.load("k") == {"n": 2}
    with store.transaction("k") as txn:  # discard: nothing saved
        txn.state["n"] = 99
        txn.discard()
    with pytest.raises(RuntimeError):  # an exception rolls back
        with store.transaction("k") as txn:
            txn.state["n"] = 100
            raise RuntimeError
    assert store.load("k") == {"n": 2}
    assert SessionStore(tmp_path / "s.db", version="v2").load("k") is None  # other version: absent
    old = time.time() - 8 * 86400
    store.connect().execute("UPDATE sessions SET updated = ? WHERE key = 'k'", (old,))
    assert store.load("k") is None  # expired
    assert store.prune() == 1 and store.keys() == []
    assert store.connect().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert (tmp_path / "s.db").stat().st_mode & 0o077 == 0  # private to the user
    store.close()


def test_store_default_path(monkeypatch, tmp_path):
    from semloop.integrations import store as store_mod

    monkeypatch.delenv("SEMLOOP_DB", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert store_mod.default_path() == tmp_path / "cache" / "semloop" / "state.sqlite3"
    monkeypatch.setenv("SEMLOOP_DB", str(tmp_path / "x.db"))
    assert store_mod.default_path() == tmp_path / "x.db"


def test_store_state_is_the_guard_state(tmp_path):
    from semloop import LoopGuard

    guard = LoopGuard(embedding="hashing")
    guard.record("bash", {"command": "ls"}, "a")
    store = SessionStore(tmp_path / "s.db")
    store.save("g", guard.state)
    restored = LoopGuard(embedding="hashing")
    restored.state = store.load("g")
    assert restored.steps == 1 and restored.to_bytes() == guard.to_bytes()


# -- install / uninstall ----------------------------------------------------------------------

EXISTING = {
    "permissions": {"allow": ["Bash(npm run test:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard.sh"}]}],
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "npx prettier --write"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


def test_install_is_idempotent_keeps_other_hooks_and_uninstall_restores(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps(EXISTING, indent=2))
    original = copy.deepcopy(EXISTING)

    proc = run(["install", "claude-code", "--settings", str(settings), "--hooks", "command"])
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "settings.json.bak").exists()
    assert json.loads((tmp_path / "settings.json.bak").read_text()) == original
    data = json.loads(settings.read_text())
    assert data["permissions"] == original["permissions"]
    assert data["hooks"]["Stop"] == original["hooks"]["Stop"]
    for event in cc.EVENTS:
        ours = [h for g in data["hooks"][event] for h in g["hooks"] if hi.is_semloop_command(h["command"])]
        assert len(ours) == 1 and ours[0]["type"] == "command"
        assert ours[0]["command"].endswith("hook claude-code")
    assert data["hooks"]["PreToolUse"][0] == original["hooks"]["PreToolUse"][0]  # theirs first, untouched
    assert data["hooks"]["PreToolUse"][1]["matcher"] == "*"

    again = run(["install", "claude-code", "--settings", str(settings), "--hooks", "command"])
    assert again.returncode == 0 and b"already installed" in again.stdout
    assert json.loads(settings.read_text()) == data  # nothing added

    # the installed command really is a working hook
    command = data["hooks"]["PostToolUse"][1]["hooks"][0]["command"]
    out = subprocess.run(command + f" --db {tmp_path / 'h.db'}", shell=True, capture_output=True,
                         input=json.dumps(bash_event("PostToolUse", "ls", stdout="a")).encode(), timeout=120)
    assert out.returncode == 0 and json.loads(out.stdout) == {}

    proc = run(["uninstall", "claude-code", "--settings", str(settings)])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(settings.read_text()) == original
    assert b"no semloop hooks" in run(["uninstall", "claude-code", "--settings", str(settings)]).stdout


def test_install_into_missing_file_and_scopes(tmp_path, monkeypatch):
    settings = tmp_path / "new" / ".claude" / "settings.local.json"
    assert run(["install", "claude-code", "--settings", str(settings), "--hooks", "command"]).returncode == 0
    data = json.loads(settings.read_text())
    assert set(data["hooks"]) == {"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit",
                                  "SessionEnd", "SubagentStop"}
    assert all("matcher" not in data["hooks"][e][0] for e in ("UserPromptSubmit", "SessionEnd", "SubagentStop"))
    run(["uninstall", "claude-code", "--settings", str(settings)])
    assert json.loads(settings.read_text()) == {}

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    assert hi.settings_path("user") == tmp_path / "home" / ".claude" / "settings.json"
    assert hi.settings_path("project", tmp_path) == tmp_path / ".claude" / "settings.json"
    assert hi.settings_path("local", tmp_path) == tmp_path / ".claude" / "settings.local.json"
    proc = subprocess.run(SEMLOOP + ["install", "claude-code", "--scope", "project"], cwd=tmp_path,
                          capture_output=True, env={**os.environ})
    assert proc.returncode == 0 and (tmp_path / ".claude" / "settings.json").exists()
    # a project file is usually committed: command hooks by default, never the http token
    project = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert "env" not in project and project["hooks"]["PreToolUse"][0]["hooks"][0]["type"] == "command"


def test_default_install_writes_command_hooks_and_no_port_or_token(tmp_path):
    settings = tmp_path / "settings.json"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run(SEMLOOP + ["install", "claude-code", "--settings", str(settings)], capture_output=True,
                          env=env, text=True)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(settings.read_text())
    assert "env" not in data and "SessionStart" not in data["hooks"]
    assert {h["type"] for e in cc.EVENTS for g in data["hooks"][e] for h in g["hooks"]} == {"command"}
    assert not (tmp_path / "cache" / "semloop" / "hook-http.json").exists()  # no port was picked


def test_http_install_switches_modes_and_uninstall_removes_token(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({**EXISTING, "env": {"FOO": "1"}}, indent=2))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "SEMLOOP_HOOK_SERVER": "1"}
    http = subprocess.run(SEMLOOP + ["install", "claude-code", "--settings", str(settings), "--hooks", "http"],
                          capture_output=True, env=env, text=True)
    assert http.returncode == 0, http.stderr
    assert "another local user can take port" in http.stdout  # the trade-off, said at install
    data = json.loads(settings.read_text())
    assert data["env"]["FOO"] == "1" and len(data["env"]["SEMLOOP_HOOK_TOKEN"]) >= 32
    assert set(cc.EVENTS) | {"SessionStart"} <= set(data["hooks"])
    ours = [h for g in data["hooks"]["PreToolUse"] for h in g["hooks"] if hi.is_semloop_hook(h)]
    assert len(ours) == 1 and ours[0]["type"] == "http"
    assert data["hooks"]["PreToolUse"][0] == EXISTING["hooks"]["PreToolUse"][0]
    # switching to command hooks replaces ours (no http entry, no token, no PostToolBatch left)
    cmd = subprocess.run(SEMLOOP + ["install", "claude-code", "--settings", str(settings), "--hooks", "command"],
                         capture_output=True, env=env)
    assert cmd.returncode == 0
    data = json.loads(settings.read_text())
    assert "SEMLOOP_HOOK_TOKEN" not in data["env"] and "PostToolBatch" not in data["hooks"]
    assert "SessionStart" not in data["hooks"]
    assert [h["type"] for g in data["hooks"]["PreToolUse"] for h in g["hooks"] if hi.is_semloop_hook(h)] == ["command"]
    subprocess.run(SEMLOOP + ["install", "claude-code", "--settings", str(settings), "--hooks", "http"], env=env,
                   capture_output=True)
    assert subprocess.run(SEMLOOP + ["uninstall", "claude-code", "--settings", str(settings)], env=env).returncode == 0
    assert json.loads(settings.read_text()) == {**EXISTING, "env": {"FOO": "1"}}


def test_http_install_with_the_server_disabled_writes_command_hooks_and_says_so(tmp_path):
    settings = tmp_path / "settings.json"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "SEMLOOP_HOOK_SERVER": "0"}
    proc = subprocess.run(SEMLOOP + ["install", "claude-code", "--settings", str(settings), "--hooks", "http"],
                          capture_output=True, env=env, text=True)
    assert proc.returncode == 0 and "SEMLOOP_HOOK_SERVER=0" in proc.stdout and "command hooks written" in proc.stdout
    data = json.loads(settings.read_text())
    assert "env" not in data and data["hooks"]["PreToolUse"][0]["hooks"][0]["type"] == "command"


@pytest.mark.parametrize("target", ["claude-code", "gemini-cli"])
def test_project_install_is_portable(tmp_path, target):
    """A committed project file names no path of this machine: `semloop` from PATH, and a config
    inside the project relative to the project directory variable the agent sets for hooks."""
    (tmp_path / "semloop.toml").write_text("[semloop]\nmax_warnings = 0\nwindow = 8\n")
    proc = subprocess.run(SEMLOOP + ["install", target, "--scope", "project", "--config", "semloop.toml"],
                          cwd=tmp_path, capture_output=True, text=True, env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    assert "semloop-guard installed" in proc.stdout  # the trade-off, said
    folder = ".claude" if target == "claude-code" else ".gemini"
    text = (tmp_path / folder / "settings.json").read_text()
    assert str(tmp_path) not in text and sys.prefix not in text
    data = json.loads(text)
    event = "PreToolUse" if target == "claude-code" else "BeforeTool"
    command = data["hooks"][event][0]["hooks"][0]["command"]
    var = "CLAUDE_PROJECT_DIR" if target == "claude-code" else "GEMINI_PROJECT_DIR"
    assert command == f'semloop hook {target} --config "${var}"/semloop.toml'
    # the command as the agent's shell runs it, from another directory, with semloop on PATH
    shell_env = {**os.environ, var: str(tmp_path), "PATH": f"{Path(SEMLOOP[0]).parent}:{os.environ['PATH']}",
                 "SEMLOOP_HOOK_SERVER": "0", "SEMLOOP_DB": str(tmp_path / "state.sqlite3")}
    event_json = (bash_event("PostToolUse", "make", stdout="FAILED") if target == "claude-code" else
                  {"hook_event_name": "AfterTool", "session_id": "s", "tool_name": "run_shell_command",
                   "tool_input": {"command": "make"}, "tool_response": {"llmContent": "FAILED"}})
    outs = [subprocess.run(["sh", "-c", command], input=json.dumps(event_json), capture_output=True, text=True,
                           env=shell_env, cwd="/", timeout=120) for _ in range(3)]
    assert all(o.returncode == 0 and "hook error" not in o.stderr for o in outs), outs[-1].stderr
    assert json.loads(outs[2].stdout)["continue"] is False  # max_warnings = 0 from the project's config


def test_install_updates_a_moved_command_in_place_and_refuses_bad_json(tmp_path):
    settings = tmp_path / "settings.json"
    stale = {"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "/old/venv/bin/semloop hook claude-code"}]}]}}
    settings.write_text(json.dumps(stale))
    assert run(["install", "claude-code", "--settings", str(settings), "--hooks", "command"]).returncode == 0
    groups = json.loads(settings.read_text())["hooks"]["PostToolUse"]
    assert len(groups) == 1 and groups[0]["hooks"][0]["command"] != "/old/venv/bin/semloop hook claude-code"

    settings.write_text("{not json")
    proc = run(["install", "claude-code", "--settings", str(settings), "--hooks", "command"])
    assert proc.returncode != 0 and b"not valid JSON" in proc.stderr
    assert settings.read_text() == "{not json"


def test_python_dash_m_semloop_works(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "semloop", "hook", "claude-code", "--db", str(tmp_path / "d.db")],
                          input=json.dumps(bash_event("PreToolUse", "ls")).encode(), capture_output=True, timeout=120)
    assert proc.returncode == 0 and json.loads(proc.stdout) == {}
