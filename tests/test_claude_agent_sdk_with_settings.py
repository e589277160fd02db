"""The Claude Agent SDK hooks next to semloop's Claude Code settings hook, and what a `query()` user
sees after a stop: the real SDK `query()` over its control protocol (the scripted CLI of
tests/test_claude_agent_sdk.py), with the real `semloop hook claude-code` command run for each
event the way the CLI runs settings-file hooks (a new process, event JSON on stdin)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

sdk = pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query  # noqa: E402

from semloop.integrations import hook_install as cc  # noqa: E402
from semloop.integrations.claude_agent_sdk import SemloopHooks  # noqa: E402

from test_claude_agent_sdk import SESSION, FakeCLI, bash  # noqa: E402


@pytest.fixture(autouse=True)
def _own_settings(tmp_path, monkeypatch):
    """A private user settings dir and cache: the machine's own Claude Code settings play no part."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SEMLOOP_DB", raising=False)
    monkeypatch.setenv("SEMLOOP_HOOK_SERVER", "0")


class CLIWithSettingsHooks(FakeCLI):
    """The scripted CLI, plus the command hooks of a settings file, run for every event next to
    the SDK's callbacks (as Claude Code runs both); their answers are obeyed alike. The result
    message is the real CLI's after a hook stop: `subtype="success"`, `result=""`."""

    def __init__(self, calls, commands: list[str], cwd: str) -> None:
        super().__init__(calls)
        self.commands = commands
        self.cwd = cwd

    async def hook(self, event: str, data: dict) -> list[dict]:
        data = {**data, "cwd": self.cwd}
        answers = await super().hook(event, data)
        for command in self.commands:
            proc = await asyncio.to_thread(subprocess.run, command, shell=True, input=json.dumps(data).encode(),
                                           capture_output=True, timeout=120)
            assert proc.returncode == 0, proc.stderr
            answers.append(json.loads(proc.stdout))
        return answers

    async def run(self) -> None:
        await super().run()  # puts the FakeCLI's result; replaced below by the real CLI's shape

    async def read_messages(self):
        async for msg in super().read_messages():
            if msg["type"] == "result":
                msg = {**msg, "result": "", "subtype": "success", "stop_reason": None}
            yield msg


def notes(answers: list[dict]) -> list[str]:
    return [a["hookSpecificOutput"]["additionalContext"] for a in answers
            if "additionalContext" in a.get("hookSpecificOutput", {})]


def run(hooks: SemloopHooks, calls, commands: list[str], cwd: Path, watch: bool = False):
    cli = CLIWithSettingsHooks(calls, commands, str(cwd))

    async def go():
        options = ClaudeAgentOptions(hooks=hooks.hooks())
        messages = query(prompt="Build the project.", options=options, transport=cli.transport())
        if watch:
            messages = hooks.watch(messages)
        return [m async for m in messages]

    return cli, asyncio.run(asyncio.wait_for(go(), 120))


def installed(tmp_path: Path, scope: str = "user", db: Path | None = None) -> str:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    command = cc.hook_command(db=str(db) if db else None)
    cc.install(cc.settings_path(scope, project), command)
    return command


MAKE = ("Bash", {"command": "make"}, bash("", "make: *** No rule to make target 'all'.  Stop."))


def test_settings_hook_and_sdk_hooks_give_each_note_once(tmp_path):
    command = installed(tmp_path)
    hooks = SemloopHooks()
    cli, messages = run(hooks, [MAKE] * 6, [command], tmp_path / "project")
    per_call = [notes(answers) for _, _, answers in cli.log]
    assert any(per_call), "no note at all"
    assert all(len(n) <= 1 for n in per_call), per_call  # never the same note twice
    assert hooks.deferred == {(SESSION, None): True}  # the SDK callbacks stepped aside
    # the settings hook alone still refuses the loop (and, since issue 9.1, ends the run)
    assert "denied" in [kind for kind, _, _ in cli.log]


def test_without_deferring_every_note_came_twice(tmp_path):
    """What the deferral prevents (and what users saw before it)."""
    command = installed(tmp_path)
    cli, _ = run(SemloopHooks(defer_to_settings_hooks=False), [MAKE] * 3, [command], tmp_path / "project")
    assert any(len(notes(answers)) == 2 for _, _, answers in cli.log)


def test_settings_hook_with_its_own_db_in_the_project_settings_is_found(tmp_path):
    command = installed(tmp_path, scope="project", db=tmp_path / "elsewhere.sqlite3")
    hooks = SemloopHooks()
    cli, _ = run(hooks, [MAKE] * 4, [command], tmp_path / "project")
    assert any(notes(answers) for _, _, answers in cli.log)
    assert all(len(notes(answers)) <= 1 for _, _, answers in cli.log)
    assert hooks.deferred == {(SESSION, None): True}


def test_installed_but_not_run_the_sdk_hooks_keep_guarding(tmp_path):
    """A settings file with the hook that the CLI does not load (`setting_sources=[]`): the
    database never sees the session, so the SDK callbacks do the work."""
    installed(tmp_path)
    hooks = SemloopHooks()
    cli, _ = run(hooks, [MAKE] * 10, [], tmp_path / "project")
    assert hooks.deferred == {(SESSION, None): False}
    assert any(notes(answers) for _, _, answers in cli.log) and cli.stop_reason


def test_no_settings_hook_means_no_database_is_touched(tmp_path):
    hooks = SemloopHooks()
    run(hooks, [MAKE] * 6, [], tmp_path)
    assert hooks.deferred == {(SESSION, None): False}
    assert not (tmp_path / "cache").exists()


# -- why the run ended ------------------------------------------------------------------------------


def test_watch_puts_the_stop_message_in_the_result_message(tmp_path):
    hooks = SemloopHooks()
    cli, messages = run(hooks, [MAKE] * 10, [], tmp_path, watch=True)
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "success"
    assert result.result == cli.stop_reason == hooks.stop_message(SESSION)
    assert result.result.startswith("semloop blocked this Bash call")
    assert result.stop_reason == "semloop_stopped"


def test_without_watch_the_result_is_as_the_cli_sent_it(tmp_path):
    hooks = SemloopHooks()
    _, messages = run(hooks, [MAKE] * 10, [], tmp_path)
    assert messages[-1].result == ""  # the gap `watch` fills
    assert hooks.stop_message(SESSION).startswith("semloop blocked this Bash call")


def test_watch_leaves_a_run_that_was_not_stopped_alone(tmp_path):
    calls = [("Bash", {"command": f"cat src/m{i}.py"}, bash(f"VALUE_{i} = {i * 97}\n")) for i in range(5)]
    hooks = SemloopHooks()
    _, messages = run(hooks, calls, [], tmp_path, watch=True)
    assert messages[-1].result == "" and messages[-1].stop_reason is None
    assert hooks.stop_message(SESSION) is None


def test_final_messages_before_any_tool_call_do_not_decide_the_deferral(tmp_path):
    """Two turns that ended with a message (the Stop hook records them as message steps) and no
    tool call yet: the settings hook still gets the session's tool calls to itself. Only tool steps
    count towards "the settings hook would have recorded this by now"."""
    command = installed(tmp_path)
    hooks = SemloopHooks()
    for text in ("Which target should I build?", "Do you want a debug or a release build?"):
        asyncio.run(hooks.stop({"session_id": SESSION, "last_assistant_message": text}, None, None))
    assert hooks.guards[(SESSION, None)].state.steps_seen == 2
    cli, _ = run(hooks, [MAKE] * 4, [command], tmp_path / "project")
    assert hooks.deferred == {(SESSION, None): True}
    assert all(len(notes(answers)) <= 1 for _, _, answers in cli.log)
