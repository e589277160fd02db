"""semloop's smolagents integration on real `ToolCallingAgent` runs: smolagents' own agent loop and
its `OpenAIModel`, whose `openai.OpenAI` client sends chat completions to an `httpx.MockTransport`
serving scripted answers (no network, no API key)."""

from __future__ import annotations

import json
from typing import Any

import pytest

smolagents = pytest.importorskip("smolagents")
httpx = pytest.importorskip("httpx")

from scripted_chat import CLEAN_SCRIPT, LOOP, ScriptedChat, read_file_fn  # noqa: E402
from smolagents import AgentError, OpenAIModel, ToolCallingAgent, tool  # noqa: E402

from semloop.integrations.smolagents import SemloopSmolagents  # noqa: E402


def model(server: ScriptedChat) -> OpenAIModel:
    client = httpx.Client(transport=httpx.MockTransport(server.handler))
    return OpenAIModel("gpt-4o-mini", api_base="https://api.example.test/v1", api_key="sk-test",
                       client_kwargs={"http_client": client, "max_retries": 0})


def tools(ran: list) -> list:
    return [tool(read_file_fn(ran))]


def agent_for(server: ScriptedChat, ran: list, loops: SemloopSmolagents) -> ToolCallingAgent:
    return loops.protect(ToolCallingAgent(tools=tools(ran), model=model(server), max_steps=12, verbosity_level=0))


def observations(server: ScriptedChat, request: int) -> list[str]:
    """The tool results the agent sent back to the model in request `request`."""
    texts = []
    for m in server.requests[request]["messages"]:
        if m["role"] in ("tool", "user") and isinstance(m.get("content"), list):
            texts += [part.get("text", "") for part in m["content"] if isinstance(part, dict)]
        elif m["role"] == "tool":
            texts.append(m.get("content") or "")
    return [t for t in texts if "Observation" in t or "Permission denied" in t or "semloop" in t]


def test_identical_loop_is_hinted_then_refused_and_the_run_is_interrupted():
    server, ran, loops = ScriptedChat(LOOP), [], SemloopSmolagents()
    agent = agent_for(server, ran, loops)
    with pytest.raises(AgentError, match="interrupted"):
        agent.run("Fix the build.")

    # the repeat after the warning continues the very loop warned about: one warning, then the stop
    assert [(v.step, v.action) for v in loops.verdicts] == [(2, "warn"), (3, "stop")]
    assert len(ran) == 3 and len(server.requests) == 4  # the fourth call was refused, no model call after it
    seen = json.dumps(server.requests[3]["messages"])
    assert "[semloop] This read_file call repeats earlier step(s)" in seen  # the hint after the real output
    steps = [s for s in agent.memory.steps if isinstance(s, smolagents.ActionStep)]
    assert "semloop blocked this read_file call" in str(steps[-1].observations)
    assert loops.last_stop is not None and loops.last_stop.action == "stop"


def test_a_clean_run_is_never_touched_and_each_run_gets_a_fresh_guard():
    script = [*CLEAN_SCRIPT[:-1], [("final_answer", {"answer": "All modules read."})]]
    for _ in range(2):  # the same agent twice: the second run does not remember the first
        server, ran, loops = ScriptedChat(script), [], SemloopSmolagents()
        agent = agent_for(server, ran, loops)
        assert agent.run("Review the code.") == "All modules read."
        assert len(ran) == 6 and loops.verdicts == []


def test_tool_errors_are_recorded_and_still_reach_the_model():
    boom: list[Any] = []

    @tool
    def deploy(env: str) -> str:
        """Deploy the service.

        Args:
            env: where to deploy.
        """
        boom.append(env)
        raise PermissionError(f"deploy to {env} failed: 403 Forbidden")

    server = ScriptedChat([[("deploy", {"env": "prod"})]] * 8)
    loops = SemloopSmolagents()
    agent = loops.protect(ToolCallingAgent(tools=[deploy], model=model(server), max_steps=10, verbosity_level=0))
    with pytest.raises(AgentError, match="interrupted"):
        agent.run("Deploy.")
    assert [v.action for v in loops.verdicts][-1] == "stop" and len(boom) < 8
    errors = [s.error for s in agent.memory.steps if isinstance(s, smolagents.ActionStep) and s.error]
    assert errors and "403 Forbidden" in str(errors[0])  # smolagents' own error handling is unchanged


def test_parallel_calls_in_one_step_share_the_run_guard():
    """ToolCallingAgent runs the calls of one model turn in threads: all six reach the one guard."""
    server, ran, loops = ScriptedChat([[("read_file", {"path": "config/settings.yaml"})] * 6]), [], SemloopSmolagents()
    agent = agent_for(server, ran, loops)
    with pytest.raises(AgentError, match="interrupted"):
        agent.run("Fix the build.")
    assert len(server.requests) == 1  # interrupted after the step: the model was not asked again
    # each call was either run and recorded, or refused by its check (the order across threads varies)
    refused = [v for v in loops.verdicts if v.message.startswith("semloop blocked")]
    assert len(ran) + len(refused) == 6 and len(ran) >= 3
    # the third recorded call gets the run's one warning, and the next would be refused; a call that
    # passed its check before that warning was recorded ran anyway, and its record is a stop
    recorded = [(v.step, v.action) for v in loops.verdicts if v not in refused]
    assert sorted(recorded) == [(2, "warn")] + [(step, "stop") for step in range(3, len(ran))]
    assert loops.last_stop is not None and loops.last_stop.action == "stop"
