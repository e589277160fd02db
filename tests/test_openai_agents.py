"""The OpenAI Agents SDK guardrails, run through the SDK's real `Runner.run` and its real
`OpenAIChatCompletionsModel` / `openai.AsyncOpenAI` client, whose HTTP transport is an
`httpx.MockTransport` serving scripted chat completions (no network, no API key)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from typing import Any

import pytest

agents = pytest.importorskip("agents")
httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool  # noqa: E402
from agents import ToolGuardrailFunctionOutput, tool_output_guardrail  # noqa: E402
from scripted_chat import ScriptedChat  # noqa: E402

from semloop import Config  # noqa: E402
from semloop.integrations.openai_agents import LoopStopped, SemloopGuardrails, protect  # noqa: E402

NO_TRACING = RunConfig(tracing_disabled=True)


class ScriptedModel(ScriptedChat):
    """The scripted endpoint (tests/scripted_chat.py) behind the Agents SDK's chat-completions model."""

    def model(self) -> OpenAIChatCompletionsModel:
        client = openai.AsyncOpenAI(api_key="sk-test", base_url="https://api.example.test/v1", max_retries=0,
                                    http_client=httpx.AsyncClient(transport=httpx.MockTransport(self.handler)))
        return OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)


def run(agent: Any, prompt: str = "Fix the build.", **kwargs: Any) -> Any:
    return asyncio.run(asyncio.wait_for(Runner.run(agent, prompt, run_config=NO_TRACING, **kwargs), 30))


def make_agent(server: ScriptedModel, tools: list[Any], **kwargs: Any) -> Agent:
    return Agent(name="coder", instructions="You fix builds.", model=server.model(), tools=tools, **kwargs)


def loop_tools(calls: list[str]) -> list[Any]:
    @function_tool
    def read_file(path: str) -> str:
        """Read a file from the workspace."""
        calls.append(path)
        return f"cat: {path}: Permission denied"

    return [read_file]


LOOP = [[("read_file", {"path": "config/settings.yaml"})]] * 10


def test_identical_loop_warns_in_the_tool_result_then_ends_the_run():
    server, calls = ScriptedModel(LOOP), []
    loops = SemloopGuardrails()
    result = run(loops.protect(make_agent(server, loop_tools(calls))))

    # calls 0-2 ran, the third warned; call 3 repeated it exactly, a loop the second view is sure
    # of, after that one warning: refused, and the run ended there
    assert len(calls) == 3 and len(server.requests) == 4
    sent = [server.tool_messages(n)[-1] for n in range(1, 4)]
    assert sent[0] == sent[1] == "cat: config/settings.yaml: Permission denied"
    head, hint = sent[2].split("\n\n", 1)  # warned: the real output is kept, the hint appended
    assert head == "cat: config/settings.yaml: Permission denied"
    assert hint.startswith("[semloop] This read_file call repeats earlier step(s)")
    assert "SYSTEM" not in hint and "must" not in hint.lower()

    # the run ends gracefully: Runner.run returns, the final output is the explanation
    assert result.final_output.startswith("semloop blocked this read_file call")
    assert "The call was not run." in result.final_output
    stop = loops.stop_verdict(result.context_wrapper)
    assert stop is not None and stop.action == "stop" and stop.message == result.final_output
    assert [v.action for v in loops.verdicts] == ["warn", "stop"]

    # the refused call has its tool result in the history, so the conversation can go on
    history = result.to_input_list()
    outputs = [item for item in history if item.get("type") == "function_call_output"]
    assert len(outputs) == 4 and outputs[-1]["call_id"] == "call_3_0"
    assert outputs[-1]["output"].startswith("semloop blocked this read_file call")


def test_on_stop_raise_ends_the_run_with_loop_stopped():
    server, calls = ScriptedModel(LOOP), []
    agent = protect(make_agent(server, loop_tools(calls)), on_stop="raise")
    with pytest.raises(LoopStopped) as stopped:
        run(agent)
    assert stopped.value.message.startswith("semloop blocked this read_file call")
    assert stopped.value.verdict.action == "stop" and str(stopped.value) == stopped.value.message
    assert len(calls) == 3 and len(server.requests) == 4


def test_streamed_run_ends_with_the_message_as_its_final_output():
    server, calls = ScriptedModel(LOOP), []
    agent = protect(make_agent(server, loop_tools(calls)))

    async def go() -> tuple[Any, list[str]]:
        streamed = Runner.run_streamed(agent, "Fix the build.", run_config=NO_TRACING)
        kinds = [event.item.type async for event in streamed.stream_events() if event.type == "run_item_stream_event"]
        return streamed, kinds

    streamed, kinds = asyncio.run(asyncio.wait_for(go(), 30))
    assert streamed.is_complete and streamed.final_output.startswith("semloop blocked this read_file call")
    assert kinds.count("tool_call_item") == kinds.count("tool_call_output_item") == 4
    assert "message_output_item" not in kinds and len(calls) == 3


def test_parallel_identical_calls_in_one_turn():
    server, calls = ScriptedModel([[("read_file", {"path": "config/settings.yaml"})] * 6, "unused"]), []
    result = run(protect(make_agent(server, loop_tools(calls))))
    # the six calls are checked before any of them has run, so all run; their records warn once
    # (the third), then stop (the other three), and the run ends after that turn
    assert result.final_output.startswith("semloop stopped this run")
    assert len(calls) == 6 and len(server.requests) == 1
    outputs = [i["output"] for i in result.to_input_list() if i.get("type") == "function_call_output"]
    assert len(outputs) == 6 and all(o.startswith("cat: config/settings.yaml") for o in outputs)
    assert sum("[semloop]" in o for o in outputs) == 1 and sum("semloop stopped this run" in o for o in outputs) == 3


def test_varied_calls_with_the_same_error_are_stopped_after_they_ran():
    err = ("npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\n"
           "npm ERR! Could not resolve dependency: peer react@\"^17\" from react-dom@17.0.2")
    commands = ["npm install", "npm install --legacy-peer-deps", "npm i", "npm install --force", "npm ci",
                "npm install --no-audit", "npm install --prefer-offline", "yarn install"]
    ran: list[str] = []

    @function_tool
    def shell(command: str) -> str:
        """Run a shell command."""
        ran.append(command)
        return err

    server = ScriptedModel([[("shell", {"command": c})] for c in commands] + ["I could not install it."])
    loops = SemloopGuardrails()
    result = run(loops.protect(make_agent(server, [shell])))
    assert result.final_output.startswith("semloop stopped this run")
    assert len(ran) < len(commands) and len(server.requests) == len(ran)
    assert loops.stop_verdict(result.context_wrapper).signals  # stopped on record, with its evidence
    # the stopping call ran: its real output is in the history, the explanation appended
    last = [i for i in result.to_input_list() if i.get("type") == "function_call_output"][-1]
    assert last["output"].startswith("npm ERR! code ERESOLVE") and "semloop stopped this run" in last["output"]


def test_well_behaved_agent_is_never_interrupted():
    read: list[str] = []

    @function_tool
    def read_file(path: str) -> str:
        """Read a file from the workspace."""
        read.append(path)
        number = int(path.rsplit("h", 1)[1].split(".")[0])
        return f"def handle_{number}(event):\n    return {number * 41}\n"

    @function_tool
    def git_log(skip: int, n: int = 20) -> str:
        """Show commits."""
        return "\n".join(f"{c:07x} commit {c}" for c in range(skip, skip + n))

    script: list[Any] = [[("read_file", {"path": f"src/handlers/h{i}.py"})] for i in range(6)]
    script += [[("git_log", {"skip": page * 20, "n": 20})] for page in range(5)]
    script += ["All six handlers return multiples of 41; history looks clean."]
    server = ScriptedModel(script)
    loops = SemloopGuardrails()
    result = run(loops.protect(make_agent(server, [read_file, git_log])), max_turns=20)
    assert result.final_output == script[-1]
    assert len(read) == 6 and len(server.requests) == 12
    assert not any("[semloop]" in m for n in range(len(server.requests)) for m in server.tool_messages(n))
    assert loops.verdicts == [] and loops.stop_verdict(result.context_wrapper) is None
    assert loops.message_verdict(result.context_wrapper) is None
    # eleven tool calls and the final message (a message step: the agent hooks' `on_end`)
    assert loops.guard_for(result.context_wrapper).steps == 12


def test_a_tool_that_raises_is_recorded_as_an_error():
    attempts: list[str] = []

    @function_tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        attempts.append(url)
        raise ConnectionError(f"connection refused: {url}")

    server = ScriptedModel([[("fetch", {"url": "http://localhost:8080/health"})]] * 8)
    loops = SemloopGuardrails()
    result = run(loops.protect(make_agent(server, [fetch])))
    # the SDK turns the exception into its standard error text; semloop records it as an error,
    # warns once with the error text kept, and ends the run on the refused repeat (the 4th call)
    guard = loops.guard_for(result.context_wrapper)
    assert guard.state.window[0].is_error
    warned = server.tool_messages(3)[-1]
    assert warned.startswith("An error occurred while running the tool") and "\n\n[semloop]" in warned
    assert result.final_output.startswith("semloop blocked this fetch call") and len(attempts) == 3
    assert len(server.requests) == 4


def test_guardrails_fail_open(caplog):
    calls: list[str] = []

    def broken_key(ctx: Any) -> Any:
        raise RuntimeError("boom")

    server = ScriptedModel(LOOP[:6] + ["Gave up."])
    agent = make_agent(server, loop_tools(calls))
    with caplog.at_level(logging.WARNING, logger="semloop"):
        result = run(SemloopGuardrails(key=broken_key).protect(agent))
    assert result.final_output == "Gave up." and len(calls) == 6  # every call ran, untouched
    assert all(server.tool_messages(n)[-1] == "cat: config/settings.yaml: Permission denied" for n in range(1, 7))
    assert "semloop: guardrail error, allowing the call" in caplog.text

    strict = SemloopGuardrails(Config(fail_open=False), key=broken_key)
    with pytest.raises(Exception, match="boom"):  # the SDK wraps it: "Error running tool read_file: boom"
        run(strict.protect(make_agent(ScriptedModel(LOOP), loop_tools([]))))


def test_each_run_gets_its_own_guard_unless_keyed():
    loops = SemloopGuardrails()
    agent = loops.protect(make_agent(ScriptedModel((LOOP[:2] + ["ok"]) * 2), loop_tools([])))
    first, second = run(agent), run(agent)  # two calls each: neither run reaches a third repeat
    assert first.final_output == second.final_output == "ok" and loops.verdicts == []
    assert loops.guard_for(first.context_wrapper) is not loops.guard_for(second.context_wrapper)

    # keyed by conversation: the loop memory spans runs, and a new run lifts a stop
    convo = SemloopGuardrails(key=lambda ctx: ctx.context["conversation"])
    ctx = {"conversation": "c-1"}
    stopped = run(convo.protect(make_agent(ScriptedModel(LOOP), loop_tools([]))), context=ctx)
    assert convo.stop_verdict(stopped.context_wrapper) is not None
    again = run(convo.protect(make_agent(ScriptedModel(LOOP[:1] + ["Blocked on permissions."]), loop_tools([]))),
                context=ctx)
    assert again.final_output == "Blocked on permissions." and convo.stop_verdict(again.context_wrapper) is None
    assert convo.verdicts[-1].action == "warn"  # the same loop again: flagged at once, but it ran


def test_protect_keeps_your_guardrails_first_and_your_tool_use_behavior():
    seen: list[str] = []

    @tool_output_guardrail
    def redact(data: Any) -> Any:
        seen.append(data.output)
        return ToolGuardrailFunctionOutput.allow()

    @function_tool(tool_output_guardrails=[redact])
    def read_file(path: str) -> str:
        """Read a file from the workspace."""
        return f"contents of {path}"

    server = ScriptedModel([[("read_file", {"path": "README.md"})], "unused"])
    loops = SemloopGuardrails()
    agent = make_agent(server, [read_file, agents.WebSearchTool()], tool_use_behavior="stop_on_first_tool",
                       handoffs=[Agent(name="reviewer", tools=[read_file])])
    guarded = loops.protect(agent)
    tool = guarded.tools[0]
    assert tool.tool_output_guardrails == [redact, loops.output_guardrail]
    assert tool.tool_input_guardrails == [loops.input_guardrail]
    assert read_file.tool_output_guardrails == [redact]  # the original tool is untouched
    assert guarded.tools[1] is agent.tools[1]  # hosted tools: as they are
    assert guarded.handoffs[0].tools[0].tool_output_guardrails[-1] is loops.output_guardrail
    assert loops.guard_tool(tool) is tool and loops.protect(guarded).tools[0] is tool  # idempotent

    result = run(loops.protect(make_agent(server, [read_file], tool_use_behavior="stop_on_first_tool")))
    assert result.final_output == "contents of README.md" and seen == ["contents of README.md"]
    assert len(server.requests) == 1  # "stop_on_first_tool" still decides


def test_a_conversation_whose_runs_keep_asking_for_the_same_thing_is_a_conversation_loop():
    """The final output of each run is recorded as a message step (agent hooks, `on_end`): three runs
    of one conversation (`key=`) asking the user for the reservation ID, however worded, get a
    `conversation` verdict on the third; the outputs are untouched, and the agent's own hooks still
    run (after semloop's, so they can read the verdict). A conversation that moves from one question
    to the next gets none."""
    asks = ["Could you please provide your reservation ID?",
            "I need your reservation ID to continue. Could you please provide it?",
            "Please provide your reservation ID so I can continue."]
    replies = ["I don't have it.", "I told you, I don't have it.", "Can't you look it up by my name?"]
    seen: list[tuple[str, Any]] = []

    class Mine(agents.AgentHooks):
        async def on_end(self, context: Any, agent: Any, output: Any) -> None:
            seen.append((output, loops.message_verdict(context)))

    def conversation(loops: SemloopGuardrails, texts: list[str], user: list[str]) -> list[Any]:
        agent = loops.protect(make_agent(ScriptedModel(texts), loop_tools([]), hooks=Mine()))
        results, history = [], []
        for said in user:
            history = [*history, {"role": "user", "content": said}]
            results.append(run(agent, history, context={"conversation": "support-1"}))
            history = results[-1].to_input_list()
        return results

    loops = SemloopGuardrails(key=lambda ctx: ctx.context["conversation"])
    results = conversation(loops, asks, ["Change my flight.", *replies[:2]])
    assert [r.final_output for r in results] == asks  # the messages themselves are untouched
    verdicts = [loops.message_verdict(r.context_wrapper) for r in results]
    assert verdicts[:2] == [None, None] and verdicts[2].action == "warn"
    assert verdicts[2].signals[0].kind == "conversation" and verdicts[2].signals[0].related_steps == (0, 1)
    assert loops.verdicts == [verdicts[2]] and loops.stop_verdict(results[2].context_wrapper) is None
    assert seen == list(zip(asks, verdicts))  # your hooks run too, and see the verdict

    moving = ["What is your reservation ID?", "Which date would you like to fly instead?",
              "Do you prefer an aisle or a window seat?"]
    quiet = SemloopGuardrails(key=lambda ctx: ctx.context["conversation"])
    results = conversation(quiet, moving, ["Change my flight.", "It's ABC123.", "The 14th."])
    assert [r.final_output for r in results] == moving
    assert quiet.verdicts == [] and quiet.guard_for(results[2].context_wrapper).steps == 3


def test_structured_output_agents_raise_loop_stopped():
    from pydantic import BaseModel

    class Report(BaseModel):
        summary: str

    agent = protect(make_agent(ScriptedModel(LOOP), loop_tools([]), output_type=Report))
    with pytest.raises(LoopStopped):
        run(agent)


def test_with_text_keeps_structured_outputs():
    from semloop.integrations.openai_agents import _with_text

    hint = "[semloop] hint"
    assert _with_text("out", hint) == "out\n\n[semloop] hint" and _with_text("", hint) == hint
    image = agents.ToolOutputImage(image_url="https://example.test/a.png")
    assert _with_text([image], hint) == [image, {"type": "text", "text": hint}]
    assert _with_text({"rows": 0}, hint) == "{'rows': 0}\n\n[semloop] hint"  # as the SDK sends a dict


def test_import_semloop_does_not_import_agents():
    code = ("import sys, semloop, semloop.integrations.openai_agents as m; "
            "assert 'agents' not in sys.modules, 'agents imported'; print(m.INSTALL_HINT)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 'pip install "semloop-guard[openai-agents]"' in out.stdout


def test_guidance_flag_extends_static_and_dynamic_instructions():
    import semloop

    server, calls = ScriptedModel(LOOP), []
    run(protect(make_agent(server, loop_tools(calls)), guidance=True))
    system = server.requests[0]["messages"][0]
    assert system["role"] == "system" and system["content"] == f"You fix builds.\n\n{semloop.guidance()}"
    assert "Step 0 already failed the same way: `cat: config/settings.yaml: Permission denied`" \
        in server.tool_messages(3)[-1]

    async def dynamic(context: Any, agent: Any) -> str:
        return f"You help {agent.name}."

    server = ScriptedModel(["Done."])
    agent = Agent(name="helper", instructions=dynamic, model=server.model())
    run(SemloopGuardrails(guidance=True, language="zh").protect(agent))
    assert server.requests[0]["messages"][0]["content"] == f"You help helper.\n\n{semloop.guidance('zh')}"
    server = ScriptedModel(["Done."])
    run(protect(make_agent(server, [])))
    assert server.requests[0]["messages"][0]["content"] == "You fix builds."  # off by default
