"""Gemini CLI hooks, end to end: hook JSON shaped as Gemini CLI sends it (its hooks reference and
`packages/core/src/hooks/hookEventHandler.ts`: base fields + tool_name / tool_input /
tool_response {llmContent, returnDisplay, error?}) piped into the installed `semloop` command, a
new process per event, state in a SQLite file under tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import bash_event, stored
from hook_processes import SEMLOOP
from semloop.integrations import gemini_cli

pytestmark = pytest.mark.usefixtures("in_process_hooks")  # these tests exercise the in-process hook


def run(args: list[str], stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(SEMLOOP + args, input=stdin.encode(), capture_output=True, timeout=120, env=os.environ)


def hook(db: Path, event: dict | str, target: str = "gemini-cli") -> dict:
    proc = run(["hook", target, "--db", str(db)], event if isinstance(event, str) else json.dumps(event))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().strip().splitlines()
    assert len(lines) == 1, proc.stdout  # exactly one JSON object on stdout
    return json.loads(lines[0])


def event(name: str, tool: str = "", tool_input: dict | None = None, session: str = "gem-1", **more) -> dict:
    base = {"session_id": session, "transcript_path": "/home/u/.gemini/tmp/chats/session.json",
            "cwd": "/home/u/project", "hook_event_name": name, "timestamp": "2026-11-30T10:00:00.000Z"}
    if tool:
        base.update(tool_name=tool, tool_input=tool_input or {})
    return {**base, **more}


def shell(command: str, output: str, pgid: int, exit_code: int = 1) -> tuple[dict, dict]:
    """BeforeTool and AfterTool for run_shell_command, with its llmContent layout (shell.ts)."""
    tool_input = {"command": command, "description": "Read the app config"}
    content = f"Output: {output}\nExit Code: {exit_code}\nProcess Group PGID: {pgid}"
    return (event("BeforeTool", "run_shell_command", tool_input),
            event("AfterTool", "run_shell_command", tool_input,
                  tool_response={"llmContent": content, "returnDisplay": output}))


def test_a_shell_loop_gets_notes_then_ends_the_agent_loop(tmp_path):
    db = tmp_path / "state.sqlite3"
    seen = []
    for attempt in range(6):
        before, after = shell("cat /etc/app.yaml", "cat: /etc/app.yaml: Permission denied", pgid=4100 + attempt)
        pre = hook(db, before)
        if pre:
            assert pre == {"continue": False, "stopReason": pre["stopReason"]}
            assert pre["stopReason"].startswith("semloop blocked this run_shell_command call")
            seen.append("stop")
            break
        post = hook(db, after)
        if post:
            assert set(post) == {"hookSpecificOutput"}
            assert post["hookSpecificOutput"]["hookEventName"] == "AfterTool"
            assert post["hookSpecificOutput"]["additionalContext"].startswith(
                "[semloop] This run_shell_command call repeats earlier step(s)")
            seen.append("warn")
        else:
            seen.append("allow")
    # the PGID differs on every run: it is not news, so the loop is still seen; the 4th identical
    # call continues the loop just warned about, so it is refused after that one warning
    assert seen == ["allow", "allow", "warn", "stop"]
    state = stored(db, "gemini-cli/gem-1")
    assert state.stopped and state.warnings == 1 and state.steps_seen == 3
    assert stored(db, "gem-1") is None  # apart from a Claude Code session with the same id


def test_varied_reads_stay_quiet(tmp_path):
    db = tmp_path / "state.sqlite3"
    for i, name in enumerate(["setup.py", "README.md", "src/app.py", "src/db.py", "src/api.py",
                              "tests/test_app.py", "docs/index.md", "Makefile"]):
        tool_input = {"file_path": f"/home/u/project/{name}"}
        if i == 7:  # nothing has been flagged, so nothing is refused
            assert hook(db, event("BeforeTool", "read_file", tool_input)) == {}
        response = {"llmContent": f"# {name}\n" + "\n".join(f"line {j} of {name}: value_{i}_{j}" for j in range(20)),
                    "returnDisplay": ""}
        assert hook(db, event("AfterTool", "read_file", tool_input, tool_response=response)) == {}
    assert stored(db, "gemini-cli/gem-1").steps_seen == 8


def test_failed_calls_count_as_errors_and_keep_their_text(tmp_path):
    db = tmp_path / "state.sqlite3"
    outs = []
    for path in ("/srv/a.yaml", "/srv/b.yaml", "/srv/c.yaml", "/srv/d.yaml"):
        tool_input = {"file_path": path}
        error = {"message": f"EACCES: permission denied, open '{path}'", "type": "read_content_failure"}
        response = {"llmContent": f"Error reading file {path}: EACCES", "returnDisplay": "Error", "error": error}
        outs.append(hook(db, event("AfterTool", "read_file", tool_input, tool_response=response)))
    # different files, the same permission error each time: the repeated-error signal
    assert outs[:2] == [{}, {}]
    assert "the same error or result from varied attempts" in outs[2]["hookSpecificOutput"]["additionalContext"]


def test_a_new_prompt_lifts_the_stop_and_the_loop_is_flagged_again_at_once(tmp_path):
    db = tmp_path / "state.sqlite3"
    for attempt in range(4):
        before, after = shell("make deploy", "make: *** No rule to make target 'deploy'.  Stop.", pgid=attempt)
        hook(db, before)
        hook(db, after)
    before, after = shell("make deploy", "make: *** No rule to make target 'deploy'.  Stop.", pgid=9)
    assert hook(db, before)["continue"] is False
    assert hook(db, event("BeforeAgent", prompt="try the release target instead")) == {}
    assert hook(db, before) == {}  # the user stepped in: allowed again
    post = hook(db, after)
    assert post["hookSpecificOutput"]["additionalContext"].startswith("[semloop]")


def test_bad_input_fails_open(tmp_path):
    db = tmp_path / "state.sqlite3"
    for payload in ("not json", "[]", json.dumps(event("BeforeTool")), json.dumps({"hook_event_name": "AfterTool"})):
        proc = run(["hook", "gemini-cli", "--db", str(db)], payload)
        assert proc.returncode == 0 and json.loads(proc.stdout) == {}
        assert proc.stderr.decode().startswith("semloop: hook error, allowing the call:")
    for other in ("SessionStart", "AfterModel", "Notification"):  # events semloop does not handle
        proc = run(["hook", "gemini-cli", "--db", str(db)], json.dumps(event(other)))
        assert json.loads(proc.stdout) == {} and proc.stderr == b""


def test_response_text_reads_every_llm_content_shape():
    text, failed = gemini_cli.response_text({"llmContent": [{"text": "a"}, {"text": "b"}], "returnDisplay": "x"})
    assert (text, failed) == ("a\nb", False)
    blob = {"llmContent": [{"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo" * 500}}]}
    text, _ = gemini_cli.response_text(blob)
    assert "iVBORw0KGgo" not in text and len(text) < 500  # blobs digested
    assert gemini_cli.response_text({"llmContent": "Command moved to background (PID: 4242)."})[0] == \
        "Command moved to background (PID)."


def test_install_and_uninstall_keep_other_settings(tmp_path):
    settings = tmp_path / "settings.json"
    mine = {"matcher": "write_file", "hooks": [{"type": "command", "command": "./lint.sh"}]}
    settings.write_text(json.dumps({"theme": "GitHub", "hooks": {"BeforeTool": [mine]}}))
    proc = run(["install", "gemini-cli", "--settings", str(settings), "--db", str(tmp_path / "s.db")])
    assert proc.returncode == 0, proc.stderr
    data = json.loads(settings.read_text())
    assert data["theme"] == "GitHub" and data["hooks"]["BeforeTool"][0] == mine
    for name in ("BeforeTool", "AfterTool", "BeforeAgent"):
        (entry,) = [e for g in data["hooks"][name] for e in g["hooks"] if "semloop" in e["command"]]
        assert entry["type"] == "command" and entry["timeout"] == 15000
        assert entry["command"].split()[1:3] == ["hook", "gemini-cli"]
    assert [g.get("matcher") for g in data["hooks"]["AfterTool"]] == ["*"]
    assert "matcher" not in data["hooks"]["BeforeAgent"][0]
    assert b"already installed" in run(["install", "gemini-cli", "--settings", str(settings),
                                        "--db", str(tmp_path / "s.db")]).stdout

    # the command written there runs as Gemini CLI would run it (through a shell)
    command = data["hooks"]["AfterTool"][0]["hooks"][0]["command"]
    ran = subprocess.run(command, shell=True, input=json.dumps(event("BeforeTool", "ls", {})).encode(),
                         capture_output=True, timeout=120)
    assert ran.returncode == 0 and json.loads(ran.stdout) == {}

    assert run(["uninstall", "gemini-cli", "--settings", str(settings)]).returncode == 0
    assert json.loads(settings.read_text()) == {"theme": "GitHub", "hooks": {"BeforeTool": [mine]}}


def test_claude_code_targets_still_work(tmp_path):
    settings = tmp_path / "claude.json"
    assert run(["install", "claude-code", "--settings", str(settings)]).returncode == 0
    assert "PreToolUse" in json.loads(settings.read_text())["hooks"]
    assert hook(tmp_path / "s.db", bash_event("PreToolUse", "ls"), target="claude-code") == {}
    bad = run(["install", "gemini-cli", "--scope", "local"])
    assert bad.returncode == 2 and b"user or project" in bad.stderr


def test_the_module_imports_only_the_standard_library():
    code = ("import sys, semloop.integrations.gemini_cli; "
            "print([m for m in ('numpy', 'semloop.guard') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
