"""semloop's Strands Agents hooks on real `strands.Agent` invocations: Strands' own event loop and
its `OpenAIModel`, whose `openai.AsyncOpenAI` client streams chat completions from an
`httpx.MockTransport` serving scripted answers (no network, no API key).

strands-agents pins mcp<2.2, the main venv has mcp 2.3+: this file runs in a venv of its own
(SEMLOOP_STRANDS_VENV=1, as .ci/run does; tests/conftest.py leaves it out otherwise)."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import scripted_chat as chat
from scripted_chat import ScriptedChat, read_file_fn, shell_fn
from strands import Agent, tool
from strands.models.openai import OpenAIModel

from semloop import LoopGuard
from semloop.integrations.strands import SemloopHooks


def model(server: ScriptedChat) -> OpenAIModel:
    client = openai.AsyncOpenAI(api_key="sk-test", base_url="https://api.example.test/v1", max_retries=0,
                                http_client=httpx.AsyncClient(transport=httpx.MockTransport(server.handler)))
    return OpenAIModel(client=client, model_id="gpt-4o-mini")


def read_file_tool(ran: list) -> Any:
    return tool(read_file_fn(ran))


def test_identical_loop_is_hinted_then_refused_and_the_event_loop_ends():
    server, ran, loops = ScriptedChat(chat.LOOP), [], SemloopHooks()
    agent = Agent(model=model(server), tools=[read_file_tool(ran)], hooks=[loops], callback_handler=None)
    result = agent("Fix the build.")

    # calls 1-2 run quietly, call 3 runs with the hint, call 4 continues the loop just warned about
    assert [(v.step, v.action) for v in loops.verdicts] == [(2, "warn"), (3, "stop")]
    assert len(ran) == 3 and len(server.requests) == 4  # the fourth call was refused; no model call after it
    results = server.tool_messages(3)
    assert len(results) == 3
    assert results[:2] == [chat.DENIED, chat.DENIED] or all(chat.DENIED in r for r in results[:2])
    assert chat.DENIED in results[2] and "[semloop] This read_file call repeats" in results[2]
    assert result.stop_reason == "cancelled"
    assert str(result).strip().startswith("semloop blocked this read_file call")


def test_varied_calls_with_the_same_error_stop_after_the_call_ran():
    ran: list[str] = []
    shell = tool(shell_fn(ran))

    server = ScriptedChat(chat.NPM_SCRIPT)
    loops = SemloopHooks()
    result = Agent(model=model(server), tools=[shell], hooks=[loops], callback_handler=None)("Install the deps.")
    assert loops.verdicts[-1].action == "stop" and len(ran) == loops.verdicts[-1].step + 1 < len(chat.NPM_SCRIPT) - 1
    assert len(server.requests) == len(ran)  # the stopping call ran, then no model call
    assert result.stop_reason == "cancelled" and str(result).strip().startswith("semloop stopped this run")


def test_a_clean_run_is_untouched_and_each_invocation_gets_a_fresh_guard():
    ran: list[str] = []
    loops = SemloopHooks()
    for _ in range(2):
        agent = Agent(model=model(ScriptedChat(chat.CLEAN_SCRIPT)), tools=[read_file_tool(ran)], hooks=[loops],
                      callback_handler=None)
        assert str(agent("Review the code.")).strip() == "All modules read."
    assert len(ran) == 12 and loops.verdicts == []


def test_one_guard_across_the_invocations_of_a_conversation():
    loops, ran = SemloopHooks(guard=LoopGuard()), []
    for _ in range(3):
        server = ScriptedChat([[("read_file", {"path": "config/settings.yaml"})], "It is not readable."])
        Agent(model=model(server), tools=[read_file_tool(ran)], hooks=[loops], callback_handler=None)("Load it.")
    assert [(v.step, v.action) for v in loops.verdicts] == [(2, "warn")]


def test_the_try_it_offline_example_in_the_docs_prints_what_the_page_says():
    import re
    import subprocess
    import sys
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "strands.md").read_text(encoding="utf-8")
    [example] = re.findall(r"```python\n(.*?)```", page.split("## Try it offline", 1)[1], re.DOTALL)
    printed = page.split("It prints:\n\n```text\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run([sys.executable, "-c", example], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == printed
