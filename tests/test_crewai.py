"""semloop's CrewAI hooks on real `Crew` / `Agent` / `Task` runs. The model is CrewAI's own OpenAI
provider (`crewai.LLM`, the real `openai` client) pointed at a local scripted Chat Completions API.

crewai pins mcp<2 and an older pydantic, so it cannot share the main test venv: `.ci/run` runs this
file in a venv of its own (SEMLOOP_CREWAI_VENV=1; tests/conftest.py leaves it out otherwise)."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from http.server import BaseHTTPRequestHandler

import pytest

# no telemetry or trace upload from the tests (read when crewai is imported)
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from crewai import LLM, Agent, Crew, Task  # noqa: E402
from crewai.hooks import HookAborted, get_after_tool_call_hooks, get_before_tool_call_hooks  # noqa: E402
from crewai.tools import tool  # noqa: E402

from conftest import ROOT  # noqa: E402
from loopback import reply_json, serve  # noqa: E402
from semloop import LoopStopped  # noqa: E402
from semloop.integrations.crewai import SemloopHooks  # noqa: E402

DENIED = "EACCES: permission denied, open '/etc/app.yaml'"
TOOL_ERROR = f"Error executing tool: {DENIED}"  # what CrewAI makes of the tool's exception


class ChatCompletions(BaseHTTPRequestHandler):
    """POST /v1/chat/completions: `script(body)` gives the next assistant message, either
    `("call", name, arguments)` (one tool call) or `("text", content)`."""

    script = None
    requests: list = []

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        step = type(self).script(body)
        if step[0] == "call":
            n = len(type(self).requests)
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{n}", "type": "function",
                 "function": {"name": step[1], "arguments": json.dumps(step[2])}}]}
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": step[1]}, "stop"
        reply_json(self, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                          "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

    def log_message(self, *args):
        pass


@pytest.fixture
def chat_api():
    """Start the scripted API; returns `run(script)` that sets the script and gives a `crewai.LLM`."""
    ChatCompletions.requests = []
    with serve(ChatCompletions) as server:
        def llm(script):
            ChatCompletions.script = staticmethod(script)
            return LLM(model="gpt-4o-mini", base_url=f"{server.url}/v1", api_key="sk-test")

        yield llm


@pytest.fixture
def loops():
    with SemloopHooks() as hooks:
        yield hooks
    assert hooks.before_tool_call not in get_before_tool_call_hooks()  # `with` unregistered them
    assert hooks.after_tool_call not in get_after_tool_call_hooks()


def tool_messages(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def crew_with(llm, tools, description="Load the app config.") -> Crew:
    agent = Agent(role="Operator", goal="Get the service configured", backstory="Runs the service.",
                  tools=tools, llm=llm, max_iter=20)
    task = Task(description=description, expected_output="A short report.", agent=agent)
    return Crew(agents=[agent], tasks=[task])


def stuck(body):  # a model that asks for the same call whatever comes back
    return ("call", "read_config", {"path": "/etc/app.yaml"})


def failing_read_config(ran: list):
    @tool("read_config")
    def read_config(path: str) -> str:
        """Read a configuration file."""
        ran.append(path)
        raise PermissionError(DENIED)

    return read_config


def test_a_loop_gets_notes_then_a_refusal_and_the_crew_ends_with_semloops_message(chat_api, loops):
    ran = []
    crew = crew_with(chat_api(stuck), [failing_read_config(ran)])

    with pytest.raises(LoopStopped) as raised:
        crew.kickoff()

    # calls 1-2 run quietly, call 3 runs with the note, call 4 continues the loop just warned about
    assert len(ran) == 3  # the fourth call was refused without running
    requests = ChatCompletions.requests
    assert len(requests) == 4  # and the model was not asked again after the refusal
    results = tool_messages(requests[-1])
    assert len(results) == 3 and results[:2] == [TOOL_ERROR, TOOL_ERROR]
    # the tool's own error kept, the hint after it
    assert results[2].startswith(TOOL_ERROR + "\n\n[semloop] This read_config call repeats earlier step(s)")
    stop = raised.value
    assert isinstance(stop, HookAborted)  # CrewAI's deliberate stop: not retried, not swallowed
    assert stop.message.startswith("semloop blocked this read_config call") and "not run" in stop.message
    assert stop.output is None  # the refused call did not run
    assert [v.action for v in loops.verdicts] == ["warn", "stop"]
    assert loops.last_stop is loops.verdicts[-1] is stop.verdict


def test_varied_work_stays_quiet(chat_api, loops):
    pages = []
    topics = ["installation", "configuration", "networking", "storage", "security", "monitoring",
              "upgrades", "troubleshooting"]

    @tool("read_page")
    def read_page(document: str, page: int) -> str:
        """Read one page of a document."""
        pages.append(page)
        return (f"{document}, page {page}: {topics[page]}. Section {page}.1 lists the {topics[page]} "
                f"options for release {2020 + page}.")

    def reader(body):
        done = len(tool_messages(body))
        if done < 8:
            return ("call", "read_page", {"document": "manual", "page": done})
        return ("text", "The manual has eight sections.")

    result = crew_with(chat_api(reader), [read_page], "Read the manual.").kickoff()

    assert pages == list(range(8))
    assert result.raw == "The manual has eight sections."
    results = tool_messages(ChatCompletions.requests[-1])
    assert len(results) == 8 and all("[semloop]" not in text for text in results)
    assert results[3].startswith("manual, page 3: storage.")
    assert loops.verdicts == [] and loops.last_stop is None


def test_the_next_kickoff_lifts_the_stop_and_keeps_the_loop_memory(chat_api, loops):
    ran = []
    crew = crew_with(chat_api(stuck), [failing_read_config(ran)])
    with pytest.raises(LoopStopped):
        crew.kickoff()
    first = len(ChatCompletions.requests)

    with pytest.raises(LoopStopped):  # the user tries again: the same loop is flagged at once
        crew.kickoff()
    results = tool_messages(ChatCompletions.requests[-1])
    assert results[0].startswith(TOOL_ERROR + "\n\n[semloop]")
    assert len(ChatCompletions.requests) - first == 2 and len(ran) == 3 + 1  # warn, refused
    assert [v.action for v in loops.verdicts] == ["warn", "stop"] * 2


def test_each_agent_has_its_own_guard(chat_api, loops):
    """Two agents of one crew reading the same file is not a loop."""
    reads = []

    @tool("read_file")
    def read_file(path: str) -> str:
        """Read a text file."""
        reads.append(path)
        return "name: app\nport: 8080\n"

    def model(body):
        if len(tool_messages(body)) < 2:
            return ("call", "read_file", {"path": "app.yaml"})
        return ("text", "Port 8080.")

    llm = chat_api(model)
    agents = [Agent(role=role, goal="Report the port", backstory="Careful.", tools=[read_file], llm=llm)
              for role in ("Reviewer", "Writer")]
    tasks = [Task(description="Find the port in app.yaml.", expected_output="The port.", agent=a) for a in agents]
    result = Crew(agents=agents, tasks=tasks).kickoff()
    assert result.raw == "Port 8080." and reads == ["app.yaml"] * 4
    assert loops.verdicts == [] and len(loops.sessions) == 2


def test_an_internal_error_fails_open(chat_api, caplog):
    calls = []

    @tool("read_config")
    def read_config(path: str) -> str:
        """Read a configuration file."""
        calls.append(path)
        return "debug: true"

    def model(body):
        return ("call", "read_config", {"path": "a.yaml"}) if not tool_messages(body) else ("text", "Done.")

    def broken_key(context):
        raise RuntimeError("no key")

    with SemloopHooks(key=broken_key), caplog.at_level(logging.WARNING, logger="semloop"):
        result = crew_with(chat_api(model), [read_config]).kickoff()
    assert result.raw == "Done." and calls == ["a.yaml"]
    assert tool_messages(ChatCompletions.requests[-1]) == ["debug: true"]
    assert "semloop: CrewAI hook error" in caplog.text


def test_crewai_is_imported_lazily_and_its_absence_is_explained():
    code = """
import sys
from semloop.integrations.crewai import SemloopHooks
assert "crewai" not in sys.modules, "importing the integration imported crewai"
sys.modules["crewai"] = None  # as on an install without the extra
try:
    SemloopHooks().register()
except ImportError as exc:
    print(exc)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("semloop's CrewAI integration needs CrewAI 1.x (tool-call hooks): "
                                   'pip install "semloop-guard[crewai]"')


def test_the_docs_example_runs_as_written(chat_api, tmp_path):
    """docs/crewai.md's example, with the model (`llm="gpt-4o-mini"`) sent to the scripted API by
    OPENAI_BASE_URL: a model stuck on a missing file is stopped, and the user reads why."""
    llm = chat_api(lambda body: ("call", "read_config", {"path": "config/app.yaml"}))
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "crewai.md").read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    (tmp_path / "example.py").write_text(blocks[0])
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-test",
           "OPENAI_BASE_URL": llm.base_url, "NO_PROXY": "127.0.0.1", "CREWAI_DISABLE_TELEMETRY": "true",
           "CREWAI_TRACING_ENABLED": "false", "OTEL_SDK_DISABLED": "true"}
    proc = subprocess.run([sys.executable, str(tmp_path / "example.py")], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines()[-1].startswith("stopped: semloop blocked this read_config call")
    assert len(ChatCompletions.requests) == 4  # calls 1-3 ran, the 4th was refused
    assert tool_messages(ChatCompletions.requests[-1])[0].startswith("Error executing tool: [Errno 2] No such file")


def test_refusals_whose_after_hook_never_comes_are_not_kept():
    """A refusal waits for its call's after hook to end the run. A run that stops between the two
    hooks (another hook aborts, the process is interrupted) never brings it: pending refusals are
    bounded, and the latest still ends its run when its after hook comes."""
    from crewai.hooks.tool_hooks import ToolCallHookContext

    from semloop.integrations import crewai as semloop_crewai

    loops = SemloopHooks()
    context = ToolCallHookContext(tool_name="read_config", tool_input={"path": "/etc/app.yaml"}, tool=None)
    guard = loops.guard(context)
    while guard.record("read_config", {"path": "/etc/app.yaml"}, TOOL_ERROR, is_error=True).action != "stop":
        pass
    contexts = [ToolCallHookContext(tool_name="read_config", tool_input={"path": "/etc/app.yaml"}, tool=None)
                for _ in range(3 * semloop_crewai.MAX_REFUSED)]
    assert [loops.before_tool_call(c) for c in contexts] == [False] * len(contexts)
    assert len(loops._refused) == semloop_crewai.MAX_REFUSED
    last = contexts[-1]
    last.tool_result = semloop_crewai.BLOCKED + "read_config"
    with pytest.raises(LoopStopped):
        loops.after_tool_call(last)
    assert len(loops._refused) == semloop_crewai.MAX_REFUSED - 1
