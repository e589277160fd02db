"""The OpenHands SDK (`openhands-sdk`, Python >= 3.12: `.ci/run` runs this file in a venv of its own,
SEMLOOP_OPENHANDS_VENV=1; tests/conftest.py leaves it out otherwise) with semloop's hooks from
`.openhands/hooks.json`, as `semloop install openhands --scope project` writes it: a real
`Conversation` whose `LLM` talks, through its own client (LiteLLM), to a scripted local Chat
Completions API, with a shell tool that really runs the commands.

What OpenHands honours: a PreToolUse `{"decision": "deny", "reason": ...}` keeps the action from
running (the SDK records the reason as the action's block reason and gives the model the refusal);
PostToolUse output is not read, so semloop's notes cannot reach the model — the calls are recorded,
and the refusal at the limit is what the model sees."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from loopback import ModelAPIHandler, ScriptedModelServer, read_json, reply_json
from openhands.sdk import LLM, Agent, Conversation
from openhands.sdk.hooks import HookConfig
from openhands.sdk.tool import (
    Action,
    Observation,
    Tool,
    ToolDefinition,
    ToolExecutor,
    register_tool,
)
from pydantic import Field, SecretStr

BLOCKED = "semloop blocked this shell call"


class ShellAction(Action):
    command: str = Field(description="The shell command to run.")


class ShellObservation(Observation):
    pass


class ShellExecutor(ToolExecutor):
    def __init__(self, cwd: Path):
        self.cwd = cwd

    def __call__(self, action: ShellAction, conversation: Any = None) -> ShellObservation:
        proc = subprocess.run(["bash", "-c", action.command], cwd=self.cwd, capture_output=True, text=True,
                              timeout=30, check=False)
        text = proc.stdout + proc.stderr + f"\n[exit code {proc.returncode}]"
        return ShellObservation.from_text(text=text, is_error=proc.returncode != 0)


class ShellTool(ToolDefinition[ShellAction, ShellObservation]):
    @classmethod
    def create(cls, conv_state: Any = None, cwd: str = ".", **params: Any) -> Sequence[ShellTool]:
        return [cls(description="Run a shell command.", action_type=ShellAction, observation_type=ShellObservation,
                    executor=ShellExecutor(Path(cwd)))]


register_tool("ShellTool", ShellTool)


class ScriptedChat(ScriptedModelServer):
    """`POST /v1/chat/completions`: the next scripted `shell` call (by the count of tool results the
    request carries), then a final text."""

    def tool_results(self) -> list[str]:
        reqs = self.main_requests()
        if not reqs:
            return []
        messages = max(reqs, key=lambda r: len(r.get("messages") or [])).get("messages") or []
        out = []
        for m in messages:
            if m.get("role") == "tool":
                content = m.get("content")
                out.append(content if isinstance(content, str) else json.dumps(content))
        return out

    def __enter__(self) -> ScriptedChat:
        api = self

        class Handler(ModelAPIHandler):
            def do_POST(self) -> None:
                body = read_json(self)
                api.record(body)
                done = sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")
                call = api.next_call(done)
                if call is not None:
                    message = {"role": "assistant", "content": None, "tool_calls": [
                        {"id": f"call_{done}", "type": "function",
                         "function": {"name": "shell", "arguments": json.dumps({"command": call["command"]})}}]}
                    finish = "tool_calls"
                else:
                    message, finish = {"role": "assistant", "content": api.final_text}, "stop"
                reply_json(self, {"id": f"chatcmpl-{done}", "object": "chat.completion", "created": 0,
                                  "model": "gpt-4o-mini", "choices": [{"index": 0, "message": message,
                                                                       "finish_reason": finish}],
                                  "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

        return self._serve(Handler)


def _semloop() -> list[str]:
    script = Path(sys.executable).parent / "semloop"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "semloop"]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project whose `.openhands/hooks.json` holds semloop's hooks (and a hook of the user's)."""
    monkeypatch.setenv("SEMLOOP_HOOK_SERVER", "0")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of LiteLLM's price list
    monkeypatch.setenv("OPENHANDS_SUPPRESS_BANNER", "1")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    work = tmp_path / "work"
    (work / ".openhands").mkdir(parents=True)
    log = tmp_path / "user-hook.log"
    theirs = {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": f"cat >> {log}"}]}]}}
    (work / ".openhands" / "hooks.json").write_text(json.dumps(theirs))
    proc = subprocess.run(_semloop() + ["install", "openhands", "--scope", "project", "--db", str(tmp_path / "s.db")],
                          cwd=work, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (work / ".openhands" / "hooks.json.bak").exists()
    return work, log


def run_conversation(work: Path, script: list[dict], message: str = "Do the task.",
                     **options: Any) -> tuple[Any, ScriptedChat]:
    with ScriptedChat(script) as api:
        llm = LLM(usage_id="agent", model="openai/gpt-4o-mini", base_url=api.url + "/v1",
                  api_key=SecretStr("test-dummy-key"), num_retries=0)
        agent = Agent(llm=llm, tools=[Tool(name="ShellTool", params={"cwd": str(work)})])
        conversation = Conversation(agent=agent, workspace=str(work), hook_config=HookConfig.load(working_dir=work),
                                    max_iteration_per_run=30, visualizer=None, **options)
        conversation.send_message(message)
        conversation.run()
    return conversation, api


FAILING = "echo attempt >> attempts.log; cat /etc/semloop-e2e/app.yaml"


def _attempts(work: Path) -> int:
    log = work / "attempts.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def _refused(result: str) -> bool:
    return f"Action rejected: {BLOCKED}" in result and "The call was not run" in result


def test_repeated_failing_call_is_refused_at_the_limit(project):
    # OpenHands' own stuck detector off (see the next test): calls 1-3 run (semloop warns on call 3,
    # a note the model cannot see), call 4 continues the loop warned about, so it and every later
    # one are refused before they run
    work, user_log = project
    _, api = run_conversation(work, [{"command": FAILING}] * 10, stuck_detection=False)
    results = api.tool_results()
    assert _attempts(work) == 3 and len(results) == 10
    assert all("No such file or directory" in r for r in results[:3])  # the tool's own text
    assert [_refused(r) for r in results] == [False] * 3 + [True] * 7
    assert user_log.read_text().count('"PreToolUse"') == 10  # the user's own hook ran for every call


def test_with_openhands_defaults_semloop_refuses_an_exact_repeat_before_its_stuck_detector(project):
    # OpenHands ends a run itself after four identical action/observation pairs; semloop refuses the
    # 4th identical call before it runs, so that detector never fires: the refusals are what the
    # model gets, and the run ends with the model's own answer
    work, _ = project
    conversation, api = run_conversation(work, [{"command": FAILING}] * 10)
    results = api.tool_results()
    assert _attempts(work) == 3 and len(results) == 10
    assert [_refused(r) for r in results] == [False] * 3 + [True] * 7
    assert str(conversation.state.execution_status.value) == "finished"


def test_same_error_from_varied_calls_is_refused_where_the_stuck_detector_sees_nothing(project):
    work, _ = project
    script = [{"command": f"echo attempt >> attempts.log; echo 'error: config service unreachable' >&2; "
                          f"exit 3  # try {i}"} for i in range(10)]
    conversation, api = run_conversation(work, script)
    results = api.tool_results()
    # call 4 (a new wording, so PreToolUse cannot refuse it) ran and completed the loop (PostToolUse
    # stops the run), call 5 and every later one were refused
    assert _attempts(work) == 4
    assert [_refused(r) for r in results] == [False] * 4 + [True] * 6
    assert str(conversation.state.execution_status.value) != "stuck"


def test_the_next_message_lifts_the_stop(project):
    work, _ = project
    with ScriptedChat([{"command": FAILING}] * 40) as api:
        llm = LLM(usage_id="agent", model="openai/gpt-4o-mini", base_url=api.url + "/v1",
                  api_key=SecretStr("test-dummy-key"), num_retries=0)
        agent = Agent(llm=llm, tools=[Tool(name="ShellTool", params={"cwd": str(work)})])
        conversation = Conversation(agent=agent, workspace=str(work), hook_config=HookConfig.load(working_dir=work),
                                    max_iteration_per_run=8, visualizer=None, stuck_detection=False)
        conversation.send_message("Do the task.")
        conversation.run()
        assert _attempts(work) == 3
        conversation.send_message("Try once more.")  # UserPromptSubmit: the stop is lifted, the memory kept
        conversation.run()
    assert _attempts(work) == 4  # one more ran, then the loop was refused again


def test_varied_work_stays_quiet(project):
    work, _ = project
    for i in range(6):
        (work / f"part-{i}.csv").write_text(f"id,value\n{i},{i * 37}\n")
    _, api = run_conversation(work, [{"command": f"cat part-{i}.csv"} for i in range(6)])
    results = api.tool_results()
    assert [f"{i},{i * 37}" in r for i, r in enumerate(results)] == [True] * 6
    assert "semloop" not in api.everything_sent().replace(str(work), "")
