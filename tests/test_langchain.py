"""The LangChain integration, run the way users run it: real `create_agent(...)` graphs (langchain 1.x)
with real `@tool` functions and a scripted chat model (no network), and plain tool invocations."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from typing import Annotated, Any, Iterable

import pytest

pytest.importorskip("langchain_core")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import BaseTool, InjectedToolCallId, ToolException, tool  # noqa: E402
from pydantic import Field  # noqa: E402

from semloop import Config, LoopGuard  # noqa: E402
from semloop.integrations.langchain import LoopStopped, guard_tool, guard_tools  # noqa: E402


class ScriptedModel(GenericFakeChatModel):
    """Answers with the scripted `AIMessage`s in order and keeps every message list it was sent."""

    seen: list = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedModel":
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


def model(*turns: AIMessage | list[tuple[str, dict]]) -> ScriptedModel:
    """Each turn: an `AIMessage`, or a list of (tool, args) calls made in one model turn."""
    messages, n = [], 0
    for turn in turns:
        if isinstance(turn, AIMessage):
            messages.append(turn)
            continue
        calls = []
        for name, args in turn:
            n += 1
            calls.append({"name": name, "args": args, "id": f"call_{n:03d}", "type": "tool_call"})
        messages.append(AIMessage(content="", tool_calls=calls))
    return ScriptedModel(messages=iter(messages))


def loop(name: str, args: dict, times: int) -> list[list[tuple[str, dict]]]:
    return [[(name, args)] for _ in range(times)]


def tool_messages(messages: Iterable[Any]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


RAN: list[tuple[str, Any]] = []


@pytest.fixture(autouse=True)
def _clear_ran():
    RAN.clear()


@tool
def read_file(path: str) -> str:
    """Read a text file."""
    RAN.append(("read_file", path))
    if path.startswith("/etc/"):
        return f"cat: {path}: Permission denied"
    return f"# {path}\nVALUE = {sum(map(ord, path)) * 7}\n"


@tool
def git_log(skip: int = 0, limit: int = 20) -> str:
    """Show commits, newest first."""
    RAN.append(("git_log", skip))
    return "\n".join(f"{c * 2654435761 % 16**7:07x} commit number {c}" for c in range(skip, skip + limit))


@tool
def install(package: str, flags: str = "") -> str:
    """Install a Python package."""
    RAN.append(("install", package))
    return ("error: externally-managed-environment\n\n× This environment is externally managed\n"
            "╰─> To install Python packages system-wide, try apt install python3-xyz")


@tool
def deploy(env: str) -> str:
    """Deploy the service."""
    RAN.append(("deploy", env))
    raise ToolException(f"deploy to {env} failed: 403 Forbidden (token lacks deploy scope)")


deploy.handle_tool_error = True  # the ToolException becomes an error ToolMessage


@tool
def flaky_db(query: str) -> str:
    """Run a SQL query."""
    RAN.append(("flaky_db", query))
    raise ConnectionError("could not connect to server: Connection refused")


# -- the middleware in a real create_agent graph ----------------------------------------------------------

# Only the third-party import is guarded: a broken semloop import must fail, never skip.
try:  # the agent tests need langchain 1.x; the wrapper tests only langchain-core
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command
except ImportError:  # pragma: no cover
    create_agent = None

if create_agent is not None:  # outside the try: an ImportError raised by semloop itself is a failure
    from semloop.integrations.langchain import SemloopMiddleware

agent_test = pytest.mark.skipif(create_agent is None, reason="needs langchain>=1.0 (create_agent)")


@agent_test
def test_identical_loop_is_hinted_then_refused_and_the_run_ends_cleanly():
    llm = model(*loop("read_file", {"path": "/etc/shadow"}, 8), AIMessage("never reached"))
    mw = SemloopMiddleware()
    agent = create_agent(llm, [read_file], middleware=[mw])
    out = agent.invoke({"messages": [("user", "Show me /etc/shadow")]})

    assert len(RAN) == 3  # calls 1-3 ran; the fourth was refused without running, then the run ended
    results = tool_messages(out["messages"])
    assert "[semloop]" not in results[0].content and "[semloop]" not in results[1].content
    # the hint is in the ToolMessage the model receives next, after the original output
    hinted = llm.seen[3][-1]
    assert isinstance(hinted, ToolMessage) and hinted.tool_call_id == "call_003"
    assert hinted.content.startswith("cat: /etc/shadow: Permission denied\n\n[semloop] This read_file call")
    assert hinted.status == "success" and hinted.name == "read_file"
    assert hinted.response_metadata["semloop"]["action"] == "warn"

    refused = results[-1]
    assert refused.tool_call_id == "call_004" and refused.status == "error"
    assert refused.content.startswith("semloop blocked this read_file call") and "not run" in refused.content
    final = out["messages"][-1]
    assert isinstance(final, AIMessage) and not final.tool_calls and final.name == "semloop"
    assert final.content.startswith("semloop blocked this read_file call")
    assert final.content.endswith("The run ends here; the work done so far is kept.")
    assert len(llm.seen) == 4  # the model was not called again after the refusal
    # the repeat after the warning continues the very loop warned about: one warning, then the stop
    assert [v.action for _, v in mw.verdicts] == ["warn", "stop"]


@agent_test
def test_varied_attempts_with_the_same_error_stop_on_record():
    attempts = [{"package": "requests"}, {"package": "requests", "flags": "--user"},
                {"package": "requests", "flags": "--upgrade"}, {"package": "requests", "flags": "--no-cache-dir"},
                {"package": "requests", "flags": "--force-reinstall"}, {"package": "requests", "flags": "-q"},
                {"package": "requests", "flags": "--pre"}, {"package": "requests", "flags": "-U --user"}]
    llm = model(*[[("install", a)] for a in attempts], AIMessage("never reached"))
    agent = create_agent(llm, [install], middleware=[SemloopMiddleware()])
    out = agent.invoke({"messages": [("user", "Install requests")]})

    results = tool_messages(out["messages"])
    assert len(results) == len(RAN) < len(attempts)  # every call that got a result ran; the rest never came
    last = results[-1]
    assert last.content.startswith("error: externally-managed-environment")  # the real output is kept
    assert "semloop stopped this run" in last.content and last.response_metadata["semloop"]["action"] == "stop"
    final = out["messages"][-1]
    assert isinstance(final, AIMessage) and final.content.startswith("semloop stopped this run")
    assert final.content.count("The run ends here") == 1
    assert len(llm.seen) == len(results)  # no model call after the stop: no half-written answer


@agent_test
def test_well_behaved_agent_is_never_interrupted():
    turns = [[("read_file", {"path": f"src/app/module_{i}.py"})] for i in range(8)]
    turns += [[("git_log", {"skip": page * 20})] for page in range(6)]
    llm = model(*turns, AIMessage("All modules read; the history is summarized above."))
    mw = SemloopMiddleware()
    agent = create_agent(llm, [read_file, git_log], middleware=[mw])
    out = agent.invoke({"messages": [("user", "Review the code base")]})

    assert len(RAN) == 14 and mw.verdicts == []
    assert all("semloop" not in m.response_metadata for m in tool_messages(out["messages"]))
    assert out["messages"][-1].content == "All modules read; the history is summarized above."


@agent_test
def test_tool_errors_handled_by_the_tool_keep_their_status_and_get_the_hint():
    llm = model(*loop("deploy", {"env": "prod"}, 3), AIMessage("I could not deploy: the token lacks scope."))
    agent = create_agent(llm, [deploy], middleware=[SemloopMiddleware()])
    out = agent.invoke({"messages": [("user", "Deploy to prod")]})

    results = tool_messages(out["messages"])
    assert [m.status for m in results] == ["error"] * 3
    assert results[2].content.startswith("deploy to prod failed: 403 Forbidden")
    assert "[semloop]" in results[2].content and "[semloop]" not in results[1].content
    assert out["messages"][-1].content.startswith("I could not deploy")


@agent_test
def test_a_raising_tool_propagates_unchanged_and_is_recorded_as_an_error():
    mw = SemloopMiddleware()
    agent = create_agent(model(*loop("flaky_db", {"query": "select 1"}, 2)), [flaky_db], middleware=[mw])
    with pytest.raises(ConnectionError, match="Connection refused"):
        agent.invoke({"messages": [("user", "Query the db")]}, {"configurable": {"thread_id": "db"}})
    guard = mw.guards["db"]
    assert guard.steps == 1 and guard.state.window[-1].is_error


@agent_test
def test_parallel_calls_in_one_turn_all_get_a_result():
    shadow = ("read_file", {"path": "/etc/shadow"})
    llm = model(*loop(*shadow, 3), [shadow, ("read_file", {"path": "README.md"}), shadow], AIMessage("never"))
    agent = create_agent(llm, [read_file], middleware=[SemloopMiddleware()])
    out = agent.invoke({"messages": [("user", "Read things")]})

    last_turn = [m for m in out["messages"] if isinstance(m, AIMessage) and len(m.tool_calls) == 3][0]
    answered = {m.tool_call_id for m in tool_messages(out["messages"])}
    assert {c["id"] for c in last_turn.tool_calls} <= answered  # the message history stays valid
    # the calls run concurrently: the two loop calls never run; the README call runs if it came first
    assert RAN[:3] == [("read_file", "/etc/shadow")] * 3 and RAN[3:] in ([], [("read_file", "README.md")])
    by_id = {m.tool_call_id: m for m in tool_messages(out["messages"])}
    loop_calls = [by_id[c["id"]] for c in last_turn.tool_calls if c["args"]["path"] == "/etc/shadow"]
    assert all(m.status == "error" for m in loop_calls)
    assert {m.response_metadata["semloop"]["action"] for m in loop_calls} <= {"stop", "refused"}
    readme = by_id[last_turn.tool_calls[1]["id"]]
    assert readme.content.startswith("# README.md" if RAN[3:] else "Not run: semloop stopped this run")
    final = out["messages"][-1]
    assert final.name == "semloop" and final.content.startswith("semloop blocked this read_file call")


@agent_test
def test_threads_get_their_own_guards_and_a_new_invoke_lifts_a_stop():
    shadow = ("read_file", {"path": "/etc/shadow"})
    mw = SemloopMiddleware()
    llm = model(*loop(*shadow, 4),  # thread 1: 3 run, the 4th is refused and the run ends
                *loop(*shadow, 2), AIMessage("Permission denied twice."),  # thread 2
                [("read_file", {"path": "notes.md"})], [shadow],  # thread 1 again, after a new message
                AIMessage("The file is not readable; please run as root."))
    agent = create_agent(llm, [read_file], middleware=[mw], checkpointer=InMemorySaver())
    first = {"configurable": {"thread_id": "t-1"}}
    out = agent.invoke({"messages": [("user", "Show /etc/shadow")]}, first)
    assert out["messages"][-1].name == "semloop" and mw.guards["t-1"].stopped

    # another thread starts clean
    other = agent.invoke({"messages": [("user", "Show /etc/shadow")]}, {"configurable": {"thread_id": "t-2"}})
    # two reads and the agent's final message (a message step: `after_agent`)
    assert mw.guards["t-2"].steps == 3 and not mw.guards["t-2"].stopped
    assert other["messages"][-1].content == "Permission denied twice."

    # the user writes again on t-1: the stop is lifted, the loop memory is kept
    out = agent.invoke({"messages": [("user", "Read my notes then try once more")]}, first)
    guard = mw.guards["t-1"]
    new = tool_messages(out["messages"])[-2:]
    assert new[0].content.startswith("# notes.md") and "[semloop]" in new[1].content
    assert not guard.stopped and out["messages"][-1].content.startswith("The file is not readable")
    assert len(RAN) == 3 + 2 + 2


@agent_test
def test_soft_landing_lets_the_model_answer_then_refuses_further_calls():
    attempts = [{"package": "requests", "flags": f"--opt-{i}"} for i in range(8)]
    llm = model(*[[("install", a)] for a in attempts])
    mw = SemloopMiddleware(halt_on_stop=False)
    agent = create_agent(llm, [install], middleware=[mw])
    out = agent.invoke({"messages": [("user", "Install requests")]})

    results = tool_messages(out["messages"])
    stop = next(m for m in results if m.response_metadata.get("semloop", {}).get("action") == "stop")
    assert stop.content.endswith("Further tool calls in this run will be refused.")
    assert results[-1].response_metadata["semloop"]["action"] == "refused" and results[-1].status == "error"
    assert llm.seen[results.index(stop) + 1][-1].content == stop.content  # the model saw why, and could answer
    assert results[-1].content.startswith("Not run: semloop stopped this run")
    assert len(RAN) == results.index(stop) + 1  # nothing ran after the stop
    final = out["messages"][-1]  # the reason given is the stop's, not the refusal's
    assert final.name == "semloop" and final.content.startswith("semloop stopped this run")
    assert "Further tool calls" not in final.content


@agent_test
def test_tools_returning_a_command_are_recorded_and_hinted():
    @tool
    def poll_job(job_id: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Poll a batch job and store its status."""
        RAN.append(("poll_job", job_id))
        return Command(update={"messages": [ToolMessage("status: PENDING", tool_call_id=tool_call_id)]})

    llm = model(*loop("poll_job", {"job_id": "job-42"}, 5), AIMessage("Still pending."))
    agent = create_agent(llm, [poll_job], middleware=[SemloopMiddleware()])
    out = agent.invoke({"messages": [("user", "Is job-42 done?")]})
    results = tool_messages(out["messages"])
    # back to back, with no wait between them, identical pending answers are no patient polling
    # (`novelty.poll_needed`): the third is hinted, as any repeat is
    assert [m.content for m in results[:2]] == ["status: PENDING"] * 2
    assert results[2].content.startswith("status: PENDING\n\n[semloop]")

    # the same through the plain wrapper, in an agent without the middleware (ToolNode injects the id)
    RAN.clear()
    llm = model(*loop("poll_job", {"job_id": "job-42"}, 3), AIMessage("Still pending."))
    wrapped = guard_tool(poll_job, LoopGuard())
    out = create_agent(llm, [wrapped]).invoke({"messages": [("user", "Is job-42 done?")]})
    results = tool_messages(out["messages"])
    assert len(RAN) == 3 and results[2].content.startswith("status: PENDING\n\n[semloop]")
    assert [s.kind for s in wrapped.verdicts[0].signals][0] == "exact"  # the injected call id is not compared


@agent_test
def test_async_agent_with_async_tool():
    calls = []

    @tool
    async def fetch(url: str) -> str:
        """Fetch a URL."""
        calls.append(url)
        return "HTTP 503 Service Unavailable"

    llm = model(*loop("fetch", {"url": "https://api.example.com/v1/status"}, 5))
    agent = create_agent(llm, [fetch], middleware=[SemloopMiddleware()])
    out = asyncio.run(agent.ainvoke({"messages": [("user", "Is the API up?")]}))
    assert len(calls) == 3 and "[semloop]" in tool_messages(out["messages"])[2].content
    assert out["messages"][-1].name == "semloop"


@agent_test
def test_middleware_fails_open(caplog, monkeypatch):
    mw = SemloopMiddleware()

    def broken(key):
        raise RuntimeError("state store unavailable")

    monkeypatch.setattr(mw, "guard_for", broken)
    llm = model(*loop("read_file", {"path": "/etc/shadow"}, 5), AIMessage("gave up"))
    agent = create_agent(llm, [read_file], middleware=[mw])
    with caplog.at_level(logging.WARNING, logger="semloop"):
        out = agent.invoke({"messages": [("user", "Show /etc/shadow")]})
    assert len(RAN) == 5 and out["messages"][-1].content == "gave up"  # ran normally
    assert all(m.content == "cat: /etc/shadow: Permission denied" for m in tool_messages(out["messages"]))
    assert "middleware error" in caplog.text

    strict = SemloopMiddleware(Config(fail_open=False))
    monkeypatch.setattr(strict, "guard_for", broken)
    agent = create_agent(model(*loop("read_file", {"path": "a"}, 1)), [read_file], middleware=[strict])
    with pytest.raises(RuntimeError, match="state store unavailable"):
        agent.invoke({"messages": [("user", "Read a")]})


@agent_test
def test_config_overrides_reach_every_guard():
    mw = SemloopMiddleware(max_warnings=0)
    agent = create_agent(model(*loop("read_file", {"path": "/etc/shadow"}, 5)), [read_file], middleware=[mw])
    out = agent.invoke({"messages": [("user", "Show /etc/shadow")]})
    assert len(RAN) == 3 and out["messages"][-1].content.startswith("semloop stopped this run")


# -- the plain tool wrapper -----------------------------------------------------------------------------


def test_guard_tool_keeps_the_tool_interface():
    wrapped = guard_tool(read_file, LoopGuard())
    assert isinstance(wrapped, BaseTool) and wrapped.name == "read_file"
    assert wrapped.description == read_file.description
    assert wrapped.tool_call_schema.model_json_schema() == read_file.tool_call_schema.model_json_schema()
    assert wrapped.invoke({"path": "a.py"}).startswith("# a.py")


def test_guard_tool_hints_then_raises_loop_stopped():
    wrapped = guard_tool(read_file, LoopGuard())
    outputs = [wrapped.invoke({"path": "/etc/shadow"}) for _ in range(3)]
    assert outputs[:2] == ["cat: /etc/shadow: Permission denied"] * 2
    assert outputs[2].startswith("cat: /etc/shadow: Permission denied\n\n[semloop]")
    with pytest.raises(LoopStopped, match="semloop blocked this read_file call") as info:
        wrapped.invoke({"path": "/etc/shadow"})
    assert info.value.verdict.action == "stop" and info.value.output is None and len(RAN) == 3
    # the repeat after the warning continues the very loop warned about: one warning, then the stop
    assert [v.action for v in wrapped.verdicts] == ["warn", "stop"]


def test_guard_tool_with_tool_calls_keeps_artifacts_and_can_return_on_stop():
    @tool(response_format="content_and_artifact")
    def search(query: str) -> tuple[str, dict]:
        """Search the docs."""
        return "No results.", {"hits": [], "query": query}

    wrapped = guard_tool(search, LoopGuard(), on_stop="return")
    messages = [wrapped.invoke({"name": "search", "args": {"query": "sso setup"}, "id": f"call_{i}",
                                "type": "tool_call"}) for i in range(6)]
    assert all(isinstance(m, ToolMessage) for m in messages)
    hinted = messages[2]
    assert hinted.content.startswith("No results.\n\n[semloop]") and hinted.tool_call_id == "call_2"
    assert hinted.artifact == {"hits": [], "query": "sso setup"}
    refused = messages[4]
    assert refused.status == "error" and refused.content.startswith("semloop blocked this search call")


@agent_test
def test_guard_tools_share_one_guard_and_work_in_an_agent_without_middleware():
    guard = LoopGuard()
    tools = guard_tools([read_file, git_log], guard)
    assert all(t.guard is guard for t in tools)
    agent = create_agent(model(*loop("read_file", {"path": "/etc/shadow"}, 5)), tools)
    with pytest.raises(LoopStopped):
        agent.invoke({"messages": [("user", "Show /etc/shadow")]})
    assert len(RAN) == 3 and guard.stopped


def test_guard_tool_async_and_exceptions():
    wrapped = guard_tool(flaky_db, LoopGuard())
    for _ in range(3):
        with pytest.raises(ConnectionError):
            asyncio.run(wrapped.ainvoke({"query": "select 1"}))
    assert wrapped.guard.steps == 3 and [v.action for v in wrapped.verdicts] == ["warn"]


def test_guard_tool_fails_open(caplog, monkeypatch):
    guard = LoopGuard()
    wrapped = guard_tool(read_file, guard)

    def broken(*args, **kwargs):
        raise RuntimeError("detector exploded")

    monkeypatch.setattr(guard, "_record", broken)
    monkeypatch.setattr(guard, "_check", broken)
    with caplog.at_level(logging.WARNING, logger="semloop"):
        outputs = [wrapped.invoke({"path": "/etc/shadow"}) for _ in range(5)]
    assert outputs == ["cat: /etc/shadow: Permission denied"] * 5 and "detector error" in caplog.text


def test_import_does_not_pull_in_langchain():
    code = ("import sys, semloop, semloop.integrations.langchain as m; "
            "print([k for k in ('langchain', 'langchain_core', 'langgraph') if k in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@agent_test
def test_a_thread_whose_turns_keep_asking_for_the_same_thing_is_a_conversation_loop():
    """The agent's final message of each turn is recorded (`after_agent`): three turns on one thread
    asking the user for the reservation ID, however worded, get a `conversation` verdict on the
    third message; a thread that moves from one question to the next does not."""
    from langgraph.checkpoint.memory import InMemorySaver

    asks = ["Could you please provide your reservation ID?",
            "I need your reservation ID to continue. Could you please provide it?",
            "Please provide your reservation ID so I can continue."]
    replies = ["I don't have it.", "I told you, I don't have it.", "Can't you look it up by my name?"]
    mw = SemloopMiddleware()
    agent = create_agent(model(*(AIMessage(a) for a in asks)), [read_file], middleware=[mw],
                         checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "support-1"}}
    outs = [agent.invoke({"messages": [("user", r)]}, thread) for r in ["Change my flight.", *replies[:2]]]
    finals = [out["messages"][-1] for out in outs]
    assert [f.content for f in finals] == asks  # the messages themselves are untouched
    assert [f.response_metadata.get("semloop", {}).get("action") for f in finals] == [None, None, "warn"]
    (key, verdict), = mw.verdicts
    assert key == "support-1" and verdict.signals[0].kind == "conversation" and verdict.signals[0].related_steps == (0, 1)
    # the mark is kept in the thread's state
    assert agent.get_state(thread).values["messages"][-1].response_metadata["semloop"]["action"] == "warn"

    moving = ["What is your reservation ID?", "Which date would you like to fly instead?",
              "Do you prefer an aisle or a window seat?"]
    mw2 = SemloopMiddleware()
    agent2 = create_agent(model(*(AIMessage(a) for a in moving)), [read_file], middleware=[mw2],
                          checkpointer=InMemorySaver())
    for text in ["Change my flight.", "It's ABC123.", "The 14th."]:
        agent2.invoke({"messages": [("user", text)]}, {"configurable": {"thread_id": "support-2"}})
    assert mw2.verdicts == []


@agent_test
def test_guidance_flag_puts_the_block_after_the_system_prompt_of_every_model_call():
    import semloop
    from langchain_core.messages import SystemMessage

    llm = model(*loop("read_file", {"path": "/etc/shadow"}, 3), AIMessage("It is not readable."))
    agent = create_agent(llm, [read_file], system_prompt="You are careful.", middleware=[SemloopMiddleware(guidance=True)])
    agent.invoke({"messages": [("user", "Show me /etc/shadow")]})
    assert len(llm.seen) == 4
    for sent in llm.seen:
        assert isinstance(sent[0], SystemMessage) and sent[0].content == f"You are careful.\n\n{semloop.guidance()}"
    # the model also read what the earlier call returned and what the error implies
    hinted = llm.seen[3][-1].content
    assert "Step 0 already failed the same way: `cat: /etc/shadow: Permission denied`" in hinted
    assert "a permission error" in hinted
    plain = model(AIMessage("Hi."))
    create_agent(plain, [read_file], middleware=[SemloopMiddleware()]).invoke({"messages": [("user", "Hi")]})
    assert not any(isinstance(m, SystemMessage) for m in plain.seen[0])  # off by default
