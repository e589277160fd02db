"""The table-driven hook layer (`semloop.integrations.hook_cli`): each CLI's events and answers as
its published schema has them, the installers, and the `semloop hook <cli>` command itself (a real
process, in-process handling, a real SQLite store). The real Codex CLI runs in
tests/test_codex_cli_e2e.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from semloop.integrations import hook_cli, hook_install
from semloop.integrations.hook_cli import (
    CODEX,
    COPILOT,
    CURSOR,
    OPENHANDS,
    from_claude_reply,
    to_claude_event,
)

ROOT = Path(__file__).resolve().parent.parent
SEMLOOP = [sys.executable, "-m", "semloop"]


def _env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEMLOOP_", "CODEX_"))}
    env.update(SEMLOOP_HOOK_SERVER="0", HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    return env


def hook(target: str, event: dict, tmp_path: Path, env: dict | None = None) -> tuple[dict, str]:
    proc = subprocess.run(SEMLOOP + ["hook", target, "--db", str(tmp_path / "state.sqlite3")],
                          input=json.dumps(event), capture_output=True, text=True, env=env or _env(tmp_path),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


# -- Codex CLI (codex-rs/hooks/schema/generated/*.command.*.schema.json) ---------------------------


def codex_event(name: str, n: int = 0, command: str = "cat /etc/app.yaml", **extra) -> dict:
    event = {"session_id": "s-1", "turn_id": "t-1", "transcript_path": None, "cwd": "/tmp",
             "hook_event_name": name, "model": "gpt-5", "permission_mode": "default"}
    if name != "UserPromptSubmit":
        event.update(tool_name="Bash", tool_input={"command": command}, tool_use_id=f"call_{n}")
    else:
        event["prompt"] = "go on"
    if name == "PostToolUse":
        event["tool_response"] = "cat: /etc/app.yaml: Permission denied\n"
    event.update(extra)
    return event


def test_codex_events_become_claude_code_events_in_their_own_session():
    assert to_claude_event(CODEX, codex_event("PreToolUse")) == {
        "session_id": "codex/s-1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "cat /etc/app.yaml"}}
    post = to_claude_event(CODEX, codex_event("PostToolUse", agent_id="sub-2"))
    assert post["tool_response"] == "cat: /etc/app.yaml: Permission denied\n"
    assert post["agent_id"] == "sub-2" and post["hook_event_name"] == "PostToolUse"
    assert to_claude_event(CODEX, codex_event("UserPromptSubmit"))["hook_event_name"] == "UserPromptSubmit"
    assert to_claude_event(CODEX, {**codex_event("Stop"), "stop_hook_active": False}) is None  # not hooked
    with pytest.raises(ValueError, match="session_id"):
        to_claude_event(CODEX, {**codex_event("PreToolUse"), "session_id": ""})


def test_codex_answers_use_only_what_codex_accepts():
    deny = {"continue": False, "stopReason": "no",
            "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "semloop blocked this Bash call"}}
    # Codex rejects continue/stopReason on PreToolUse (the hook then fails and the call runs): a
    # denial must carry the decision alone
    assert from_claude_reply(CODEX, deny) == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "semloop blocked this Bash call"}}
    note = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "[semloop] x"}}
    assert from_claude_reply(CODEX, note) == note
    stop = {"continue": False, "stopReason": "semloop stopped this run", "suppressOutput": False,
            "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "semloop stopped this run"}}
    # suppressOutput is unsupported on Codex's PostToolUse: not passed on
    assert from_claude_reply(CODEX, stop) == {"continue": False, "stopReason": "semloop stopped this run"}
    assert from_claude_reply(CODEX, {}) == {}


def test_codex_hook_notes_then_refuses_then_the_next_prompt_lifts_it(tmp_path):
    answers = [hook("codex", codex_event("PostToolUse", n), tmp_path)[0] for n in range(3)]
    assert answers[:2] == [{}, {}]
    assert answers[2]["hookSpecificOutput"]["additionalContext"].startswith("[semloop] This Bash call repeats")
    # the identical call continues the loop just warned about: one warning, and the 4th is refused
    refused, _ = hook("codex", codex_event("PreToolUse", 3), tmp_path)
    assert refused["hookSpecificOutput"]["permissionDecision"] == "deny" and "continue" not in refused
    assert refused["hookSpecificOutput"]["permissionDecisionReason"].startswith("semloop blocked this Bash call")
    # the stop is kept: a different call is refused too, until the user's next prompt
    other, _ = hook("codex", codex_event("PreToolUse", 4, command="ls /"), tmp_path)
    assert other["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert hook("codex", codex_event("UserPromptSubmit"), tmp_path)[0] == {}
    assert hook("codex", codex_event("PreToolUse", 5, command="ls /"), tmp_path)[0] == {}
    # another Codex session knows nothing of it
    assert hook("codex", codex_event("PreToolUse", 6, session_id="s-2"), tmp_path)[0] == {}


def test_codex_hook_fails_open_with_one_line(tmp_path):
    proc = subprocess.run(SEMLOOP + ["hook", "codex", "--db", str(tmp_path / "s.db")], input="{not json",
                          capture_output=True, text=True, env=_env(tmp_path), timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout) == {}
    assert proc.stderr.startswith("semloop: hook error, allowing the call:") and proc.stderr.count("\n") == 1
    answer, err = hook("codex", {**codex_event("PreToolUse"), "tool_name": None}, tmp_path)
    assert answer == {} and "has no tool_name" in err


def _doc_block(page: str, tmp_path: Path) -> list[dict]:
    """Run the page's try-it-offline block as written (its demo database moved into tmp_path)."""
    text = (ROOT / "docs" / page).read_text()
    block = re.search(r"Try it without [^:]+:\n\n```bash\n(.*?)```", text, re.DOTALL).group(1)
    bindir = tmp_path / "bin"
    bindir.mkdir(parents=True)
    (bindir / "semloop").write_text(f"#!/bin/sh\nexec {sys.executable} -m semloop \"$@\"\n")
    (bindir / "semloop").chmod(0o755)
    env = {**_env(tmp_path), "PATH": f"{bindir}:{os.environ['PATH']}"}
    block = re.sub(r"/tmp/semloop-[a-z-]+\.sqlite3", str(tmp_path / "demo.sqlite3"), block)
    proc = subprocess.run(["bash", "-c", block], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_codex_doc_try_it_block_runs_as_written(tmp_path):
    answers = _doc_block("codex-cli.md", tmp_path)
    assert answers[:2] == [{}, {}] and "[semloop]" in answers[2]["hookSpecificOutput"]["additionalContext"]


# -- OpenHands (openhands/sdk/hooks: HookEvent in, HookResult's decision / reason out) --------------


def openhands_event(name: str, **extra) -> dict:
    event = {"event_type": name, "tool_name": "shell", "tool_input": {"command": "cat /etc/app.yaml", "kind": "ShellAction"},
             "tool_response": None, "message": None, "session_id": "conv-1", "working_dir": "/tmp", "metadata": {}}
    event.update(extra)
    return event


def test_openhands_events_and_answers():
    failed = {"content": [{"type": "text", "text": "[An error occurred during execution.]\n"},
                          {"type": "text", "text": "cat: /etc/app.yaml: No such file"}], "is_error": True, "kind": "X"}
    event = to_claude_event(OPENHANDS, openhands_event("PostToolUse", tool_response=failed))
    assert event["hook_event_name"] == "PostToolUseFailure" and event["session_id"] == "openhands/conv-1"
    assert event["error"] == "[An error occurred during execution.]\n\ncat: /etc/app.yaml: No such file"
    ok = to_claude_event(OPENHANDS, openhands_event("PostToolUse", tool_response={**failed, "is_error": False}))
    assert ok["hook_event_name"] == "PostToolUse" and ok["tool_response"].endswith("No such file")
    assert to_claude_event(OPENHANDS, openhands_event("UserPromptSubmit", message="go"))["hook_event_name"] == "UserPromptSubmit"
    assert to_claude_event(OPENHANDS, openhands_event("Stop")) is None
    deny = {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "semloop blocked"}}
    assert from_claude_reply(OPENHANDS, deny) == {"decision": "deny", "reason": "semloop blocked"}
    # OpenHands does not read PostToolUse output: no note, and a stop has no answer there either
    assert from_claude_reply(OPENHANDS, {"hookSpecificOutput": {"additionalContext": "[semloop] x"}}) == {}
    assert from_claude_reply(OPENHANDS, {"continue": False, "stopReason": "semloop stopped"}) == {}


def test_openhands_doc_try_it_block_runs_as_written(tmp_path):
    answers = _doc_block("openhands.md", tmp_path)
    assert answers[-1]["decision"] == "deny" and answers[-1]["reason"].startswith("semloop blocked this shell call")


# -- Copilot CLI (docs.github.com Copilot CLI hooks reference, camelCase payloads) -----------------


def test_copilot_events_take_their_name_from_the_entry_env(monkeypatch):
    pre = {"sessionId": "c-1", "timestamp": 1, "cwd": "/w", "toolName": "bash",
           "toolArgs": json.dumps({"command": "ls", "description": "list"})}
    monkeypatch.setenv("SEMLOOP_HOOK_EVENT", "preToolUse")
    assert to_claude_event(COPILOT, pre) == {"session_id": "copilot/c-1", "hook_event_name": "PreToolUse",
                                             "tool_name": "bash", "tool_input": {"command": "ls", "description": "list"}}
    monkeypatch.setenv("SEMLOOP_HOOK_EVENT", "postToolUse")
    done = {**pre, "toolResult": {"resultType": "success", "textResultForLlm": "a\n<shellId: 7 completed with exit code 1>"}}
    assert to_claude_event(COPILOT, done)["tool_response"] == "a\n<shell completed with exit code 1>"  # the id varies
    failed = {**pre, "toolResult": {"resultType": "failure", "textResultForLlm": "boom"}}
    assert to_claude_event(COPILOT, failed)["error"] == "boom"
    monkeypatch.setenv("SEMLOOP_HOOK_EVENT", "postToolUseFailure")
    assert to_claude_event(COPILOT, {**pre, "error": "timed out"})["error"] == "timed out"
    monkeypatch.delenv("SEMLOOP_HOOK_EVENT")
    assert to_claude_event(COPILOT, pre) is None  # an entry without the env: not ours to guess
    deny = {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "semloop blocked"}}
    assert from_claude_reply(COPILOT, deny) == {"permissionDecision": "deny", "permissionDecisionReason": "semloop blocked"}
    assert from_claude_reply(COPILOT, {"continue": False, "stopReason": "semloop stopped"}) == {
        "additionalContext": "semloop stopped"}  # postToolUse cannot end a run: the stop is said as a note
    # permissionRequest (its payload says toolInput) refuses with an interrupt, which ends the run;
    # so preToolUse leaves the refusal of a tool that asks for permission to it, and refuses the others
    monkeypatch.setenv("SEMLOOP_HOOK_EVENT", "permissionRequest")
    ask = {"hookName": "permissionRequest", "sessionId": "c-1", "toolName": "bash", "toolInput": {"command": "ls"}}
    assert to_claude_event(COPILOT, ask)["tool_input"] == {"command": "ls"}
    assert from_claude_reply(COPILOT, deny, "permissionRequest", "bash") == {
        "behavior": "deny", "message": "semloop blocked", "interrupt": True}
    assert from_claude_reply(COPILOT, deny, "preToolUse", "bash") == {}
    assert from_claude_reply(COPILOT, deny, "preToolUse", "view")["permissionDecision"] == "deny"


def test_copilot_failed_call_notes_go_to_stderr_with_exit_code_2(tmp_path):
    env = {**_env(tmp_path), "SEMLOOP_HOOK_EVENT": "postToolUseFailure"}
    event = {"sessionId": "c-9", "timestamp": 1, "cwd": "/w", "toolName": "view",
             "toolArgs": {"path": "/w/missing.yaml"}, "error": "Path does not exist"}
    procs = [subprocess.run(SEMLOOP + ["hook", "copilot", "--db", str(tmp_path / "s.db")], input=json.dumps(event),
                            capture_output=True, text=True, env=env, timeout=60) for _ in range(3)]
    assert [p.returncode for p in procs] == [0, 0, 2]
    assert [json.loads(p.stdout) for p in procs[:2]] == [{}, {}] and procs[2].stdout == ""
    assert procs[2].stderr.startswith("[semloop] This view call repeats")


def test_copilot_install_writes_its_own_file_with_an_event_per_entry(tmp_path):
    env = {**_env(tmp_path), "COPILOT_HOME": str(tmp_path / "cp")}
    proc = subprocess.run(SEMLOOP + ["install", "copilot"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "cp" / "hooks" / "semloop.json").read_text())
    assert data["version"] == 1
    for event, entries in data["hooks"].items():
        assert len(entries) == 1 and entries[0]["env"] == {"SEMLOOP_HOOK_EVENT": event}
        assert entries[0]["bash"].endswith("hook copilot") and entries[0]["type"] == "command"
    proc = subprocess.run(SEMLOOP + ["install", "copilot", "--scope", "project"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=60)
    assert (tmp_path / ".github" / "hooks" / "semloop.json").exists(), proc.stderr


# -- Cursor (cursor.com/docs/hooks; the schema only: Cursor does not run here) ---------------------


def test_cursor_events_and_answers():
    base = {"conversation_id": "k-1", "generation_id": "g", "model": "m", "hook_event_name": "preToolUse",
            "cursor_version": "2.0", "workspace_roots": ["/w"], "tool_name": "Shell",
            "tool_input": {"command": "npm test", "working_directory": "/w"}, "tool_use_id": "t1", "cwd": "/w"}
    assert to_claude_event(CURSOR, base)["session_id"] == "cursor/k-1"
    post = {**base, "hook_event_name": "postToolUse", "tool_output": json.dumps({"exitCode": 1, "stdout": "FAIL x"})}
    assert to_claude_event(CURSOR, post)["tool_response"] == {"exitCode": 1, "stdout": "FAIL x"}
    failure = {**base, "hook_event_name": "postToolUseFailure", "error_message": "timeout", "failure_type": "timeout"}
    assert to_claude_event(CURSOR, failure)["error"] == "timeout"
    prompt = {**base, "hook_event_name": "beforeSubmitPrompt", "prompt": "again"}
    assert to_claude_event(CURSOR, prompt)["hook_event_name"] == "UserPromptSubmit"
    deny = {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "semloop blocked"}}
    assert from_claude_reply(CURSOR, deny) == {"permission": "deny", "agent_message": "semloop blocked",
                                               "user_message": "semloop blocked"}
    note = {"hookSpecificOutput": {"additionalContext": "[semloop] x"}}
    assert from_claude_reply(CURSOR, note) == {"additional_context": "[semloop] x"}


def test_cursor_hook_notes_then_refuses(tmp_path):
    event = {"conversation_id": "k-1", "generation_id": "g", "hook_event_name": "postToolUse", "tool_name": "Shell",
             "tool_input": {"command": "cat /etc/app.yaml"}, "tool_use_id": "t1",
             "tool_output": json.dumps({"exitCode": 1, "stderr": "cat: /etc/app.yaml: Permission denied"})}
    answers = [hook("cursor", event, tmp_path)[0] for _ in range(3)]
    assert answers[:2] == [{}, {}] and answers[2]["additional_context"].startswith("[semloop] This Shell call repeats")
    # one warning, then the 4th identical call is refused before it runs
    refused, _ = hook("cursor", {**event, "hook_event_name": "preToolUse"}, tmp_path)
    assert refused["permission"] == "deny" and refused["agent_message"].startswith("semloop blocked this Shell call")


def test_copilot_and_cursor_doc_try_it_blocks_run_as_written(tmp_path):
    copilot = _doc_block("copilot-cli.md", tmp_path / "copilot")
    assert copilot[:2] == [{}, {}] and copilot[2]["additionalContext"].startswith("[semloop] This bash call repeats")
    cursor = _doc_block("cursor.md", tmp_path / "cursor")
    assert cursor[:2] == [{}, {}] and cursor[2]["additional_context"].startswith("[semloop] This Shell call repeats")


def test_cursor_install_keeps_other_hooks(tmp_path):
    settings = {"version": 1, "hooks": {"afterFileEdit": [{"command": "fmt.sh"}], "preToolUse": [{"command": "audit.sh"}]}}
    before = json.loads(json.dumps(settings))
    assert hook_install.add_dialect_hooks(CURSOR, settings, "/v/bin/semloop hook cursor")
    assert settings["hooks"]["preToolUse"] == [{"command": "audit.sh"}, {"command": "/v/bin/semloop hook cursor", "timeout": 15}]
    assert not hook_install.add_dialect_hooks(CURSOR, settings, "/v/bin/semloop hook cursor")
    assert hook_install.remove_dialect_hooks(CURSOR, settings) and settings == before


# -- installers -------------------------------------------------------------------------------------


def test_codex_install_keeps_other_hooks_backs_up_and_is_idempotent(tmp_path):
    path = tmp_path / ".codex" / "hooks.json"
    path.parent.mkdir()
    theirs = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}],
                        "Stop": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]}}
    path.write_text(json.dumps(theirs))
    env = {**_env(tmp_path), "CODEX_HOME": str(tmp_path / ".codex")}
    run = lambda *args: subprocess.run(SEMLOOP + list(args), capture_output=True, text=True, env=env, timeout=60)
    first = run("install", "codex")
    assert first.returncode == 0 and "trust" in first.stdout
    assert json.loads((path.parent / "hooks.json.bak").read_text()) == theirs
    data = json.loads(path.read_text())
    assert data["hooks"]["Stop"] == theirs["hooks"]["Stop"]
    assert data["hooks"]["PreToolUse"][0] == theirs["hooks"]["PreToolUse"][0]
    ours = data["hooks"]["PreToolUse"][1]
    assert ours["matcher"] == "*" and ours["hooks"][0]["command"].endswith("hook codex")
    assert "matcher" not in data["hooks"]["UserPromptSubmit"][0]
    assert run("install", "codex").stdout.startswith("semloop: already installed")
    assert json.loads(path.read_text()) == data
    assert run("uninstall", "codex").returncode == 0
    assert json.loads(path.read_text()) == theirs
    bad = run("install", "codex", "--scope", "local")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "user or project" in bad.stderr
    bad = run("install", "codex", "--hooks", "http")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "command hooks only" in bad.stderr


def test_uninstall_of_one_cli_leaves_the_other_clis_hooks(tmp_path):
    settings: dict = {}
    hook_install.add_dialect_hooks(CODEX, settings, "/venv/bin/semloop hook codex")
    settings["hooks"]["PreToolUse"][0]["hooks"].append({"type": "command", "command": "/venv/bin/semloop hook claude-code"})
    assert hook_install.remove_dialect_hooks(CODEX, settings)
    assert settings == {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "/venv/bin/semloop hook claude-code"}]}]}}
    assert not hook_install.remove_dialect_hooks(CODEX, settings)


# -- Claude Code and Gemini CLI on the same tables ----------------------------------------------


def test_claude_code_table_holds_the_answers_its_hook_gives(tmp_path):
    # Claude Code's events are the layer's own: its table's answers are the shapes the core gives,
    # so a reply of the core read back through the table comes out the same
    from semloop.integrations import claude_code
    from semloop.integrations.hook_cli import CLAUDE_CODE

    db = str(tmp_path / "s.sqlite3")
    event = {"session_id": "cc-1", "tool_name": "Bash", "tool_input": {"command": "cat /etc/app.yaml"},
             "tool_response": {"stdout": "", "stderr": "cat: /etc/app.yaml: Permission denied"}}
    seen = {}
    for _ in range(5):
        for name in ("PreToolUse", "PostToolUse"):
            reply = claude_code.handle_event({**event, "hook_event_name": name}, db=db)
            verdict = hook_cli.verdict_of(reply)
            if verdict is not None:
                seen.setdefault(verdict[0], (name, reply))
    assert set(seen) == {"note", "deny", "stop"}
    for kind, (name, reply) in seen.items():
        assert hook_cli.from_claude_reply(CLAUDE_CODE, reply, name) == reply, kind
    assert set(CLAUDE_CODE.events) >= set(claude_code.EVENTS)


def test_gemini_cli_events_and_answers():
    from semloop.integrations.hook_cli import GEMINI

    failed = {"session_id": "g-1", "hook_event_name": "AfterTool", "tool_name": "run_shell_command",
              "tool_input": {"command": "ls"}, "tool_response": {"llmContent": "x", "error": {"message": "boom"}}}
    assert to_claude_event(GEMINI, failed) == {"session_id": "gemini-cli/g-1", "hook_event_name": "PostToolUseFailure",
                                               "tool_name": "run_shell_command", "tool_input": {"command": "ls"},
                                               "error": "boom"}
    ok = {**failed, "tool_response": {"llmContent": [{"text": "a"}, {"text": "b"}]}}
    assert to_claude_event(GEMINI, ok)["tool_response"] == "a\nb"
    assert to_claude_event(GEMINI, {"session_id": "g-1", "hook_event_name": "BeforeAgent"}) == {
        "session_id": "gemini-cli/g-1", "hook_event_name": "UserPromptSubmit"}
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "no"}}
    assert from_claude_reply(GEMINI, deny, "BeforeTool") == {"continue": False, "stopReason": "no"}
    note = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "n"}}
    assert from_claude_reply(GEMINI, note, "AfterTool") == {
        "hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": "n"}}
    assert GEMINI.refusal_stops and GEMINI.session_event == "SessionStart"


def test_every_installed_target_is_a_table_and_the_light_parser_knows_them():
    from semloop.integrations import hook_entry

    assert list(hook_install.install_targets()) == list(hook_cli.DIALECTS)
    args = hook_entry.parse(["codex", "--db=/tmp/x.db", "--config", "c.toml", "--no-server", "--server-timeout", "2"])
    assert (args.target, args.db, args.config, args.no_server, args.server_timeout, args.guidance) == (
        "codex", "/tmp/x.db", "c.toml", True, 2.0, False)
    # anything else goes to argparse: its help and its one-line errors
    for argv in ([], ["nope"], ["codex", "--help"], ["codex", "--db"], ["codex", "--server-timeout", "x"],
                 ["codex", "--no-s"], ["codex", "--db", "--guidance"]):
        assert hook_entry.parse(argv) is None, argv


def test_the_client_finds_the_stores_default_paths_without_importing_it(monkeypatch, tmp_path):
    from semloop import store
    from semloop.integrations import hook_protocol

    for env in ({}, {"XDG_CACHE_HOME": str(tmp_path / "c")}, {"SEMLOOP_DB": "~/x/state.db"}):
        for key in ("XDG_CACHE_HOME", "SEMLOOP_DB"):
            monkeypatch.delenv(key, raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        assert hook_protocol.cache_dir() == str(store.cache_dir())
        assert hook_protocol._default_db() == str(store.default_path())


def test_a_bad_hook_command_line_is_left_to_the_argument_parser(tmp_path):
    proc = subprocess.run(SEMLOOP + ["hook", "codex", "--server-timeout", "soon"], input="{}", capture_output=True,
                          text=True, env=_env(tmp_path), timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == "semloop hook: error: argument --server-timeout: invalid float value: 'soon'"
    help_text = subprocess.run(SEMLOOP + ["hook", "--help"], capture_output=True, text=True, env=_env(tmp_path),
                               timeout=60).stdout
    assert all(target in help_text for target in hook_cli.DIALECTS)
