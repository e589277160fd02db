"""semloop's Microsoft Agent Framework middleware on real `agent_framework.Agent` runs: the
framework's own function-invocation loop and its `OpenAIChatCompletionClient`, whose
`openai.AsyncOpenAI` client sends chat completions to an `httpx.MockTransport` serving scripted
answers (no network, no API key)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agent_framework")
pytest.importorskip("agent_framework_openai")
httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")

import scripted_chat as chat  # noqa: E402
from agent_framework import Agent, tool  # noqa: E402
from agent_framework.openai import OpenAIChatCompletionClient  # noqa: E402
from scripted_chat import ScriptedChat, read_file_fn, shell_fn  # noqa: E402

from semloop.integrations.agent_framework import SemloopMiddleware  # noqa: E402


def client(server: ScriptedChat) -> OpenAIChatCompletionClient:
    async_client = openai.AsyncOpenAI(api_key="sk-test", base_url="https://api.example.test/v1", max_retries=0,
                                      http_client=httpx.AsyncClient(transport=httpx.MockTransport(server.handler)))
    return OpenAIChatCompletionClient("gpt-4o-mini", async_client=async_client)


def run(agent: Agent, prompt: str = "Fix the build.") -> Any:
    return asyncio.run(asyncio.wait_for(agent.run(prompt), 30))


def read_file_tool(ran: list) -> Any:
    return tool(approval_mode="never_require")(read_file_fn(ran))


def tool_results(server: ScriptedChat) -> list[str]:
    """Every tool result the agent sent to the model, in order (the last request has them all)."""
    return [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]


def test_identical_loop_is_hinted_then_refused_and_the_loop_ends():
    server, ran, loops = ScriptedChat(chat.LOOP), [], SemloopMiddleware()
    agent = Agent(client=client(server), instructions="You fix builds.", tools=[read_file_tool(ran)],
                  middleware=[loops])
    response = run(agent)

    # the repeat after the warning continues the very loop warned about: one warning, then the stop
    assert [(v.step, v.action) for v in loops.verdicts] == [(2, "warn"), (3, "stop")]
    assert len(ran) == 3 and len(server.requests) == 4  # the fourth call was refused; no model call after it
    results = tool_results(server)
    assert len(results) == 3 and results[:2] == [chat.DENIED, chat.DENIED]
    assert results[2].startswith(chat.DENIED + "\n\n[semloop] This read_file call repeats")
    assert loops.last_stop is not None and loops.last_stop.action == "stop"
    last = response.messages[-1]  # the refusal is the run's last message, as the tool's result
    assert "semloop blocked this read_file call" in str(last.contents[-1].result)


def test_varied_calls_with_the_same_error_stop_after_the_call_ran():
    ran: list[str] = []
    shell = tool(approval_mode="never_require")(shell_fn(ran))

    server = ScriptedChat(chat.NPM_SCRIPT)
    loops = SemloopMiddleware()
    response = run(Agent(client=client(server), tools=[shell], middleware=[loops]))
    assert loops.verdicts[-1].action == "stop" and len(ran) == loops.verdicts[-1].step + 1 < len(chat.NPM_SCRIPT) - 1
    assert len(server.requests) == len(ran)  # the stopping call ran, then no model call
    assert "semloop stopped this run" in str(response.messages[-1].contents[-1].result)


def test_a_clean_run_is_never_touched_and_each_run_has_its_own_guard():
    loops, ran = SemloopMiddleware(), []
    for _ in range(2):
        server = ScriptedChat(chat.CLEAN_SCRIPT)
        agent = Agent(client=client(server), tools=[read_file_tool(ran)], middleware=[loops])
        assert run(agent).text == "All modules read."
    assert len(ran) == 12 and loops.verdicts == []  # the second run repeats the first: not a loop


def test_one_guard_across_the_runs_of_a_conversation():
    from semloop import LoopGuard

    loops, ran = SemloopMiddleware(guard=LoopGuard()), []
    for _ in range(3):  # the user asks again; the agent reads the same file again
        server = ScriptedChat([[("read_file", {"path": "config/settings.yaml"})], "It is not readable."])
        run(Agent(client=client(server), tools=[read_file_tool(ran)], middleware=[loops]))
    assert [(v.step, v.action) for v in loops.verdicts] == [(2, "warn")]
