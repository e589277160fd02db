"""The integration examples in docs/ run as written, with only their extra installed: each page's
```python blocks run in order, as one script, in a fresh process. Where the example talks to a
model, `ANTHROPIC_BASE_URL` points the real SDK (or LangChain's ChatAnthropic) at a local fake
Messages API that keeps asking for the same tool call, so semloop's warn and stop paths run too.

(`>>>` examples in README.md and docs/*.md are doctests, collected by pytest itself.)"""

import json
import re
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from conftest import ROOT
from loopback import reply_json, serve

REPEATS = 6  # the fake model asks for the same call this many times before it answers


class FakeMessagesAPI(BaseHTTPRequestHandler):
    """POST /v1/messages: a tool_use for the request's first tool (the same call every turn) until
    REPEATS results came back or tools are off (`tool_choice: none`), then a text answer."""

    requests: list = []

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body})
        # how many calls were answered: the highest tool_use id answered so far, plus one (a client
        # may send only part of the history, as the beta tool runner does)
        answered = [int(b["tool_use_id"].split("_")[1]) for m in body.get("messages", [])
                    if m["role"] == "user" and isinstance(m["content"], list)
                    for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
        results = max(answered) + 1 if answered else 0
        tools = body.get("tools") or []
        if tools and results < REPEATS and (body.get("tool_choice") or {}).get("type") != "none":
            name = tools[0]["name"]
            path = "." if name == "list_dir" else "pyproject.toml"
            content = [{"type": "tool_use", "id": f"toolu_{results:02d}", "name": name, "input": {"path": path}}]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": "I read the files; here is my answer."}], "end_turn"
        reply_json(self, {"id": f"msg_{len(type(self).requests)}", "type": "message", "role": "assistant",
                          "model": body.get("model", "fake"), "content": content, "stop_reason": stop,
                          "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 7}})

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_anthropic():
    FakeMessagesAPI.requests = []
    with serve(FakeMessagesAPI) as server:
        yield server.url, FakeMessagesAPI.requests


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


def run_page(page: Path, workdir: Path, base_url: str) -> subprocess.CompletedProcess:
    (workdir / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (workdir / "config").mkdir(exist_ok=True)
    (workdir / "config" / "settings.yaml").write_text("debug: true\n")
    script = workdir / f"{page.stem}_examples.py"
    script.write_text("\n\n".join(python_blocks(page)))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(workdir), "ANTHROPIC_API_KEY": "sk-ant-test",
           "ANTHROPIC_BASE_URL": base_url, "NO_PROXY": "127.0.0.1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          cwd=workdir, env=env)


def test_anthropic_examples_run_as_written(fake_anthropic, tmp_path):
    base_url, requests = fake_anthropic
    page = ROOT / "docs" / "anthropic.md"
    assert len(python_blocks(page)) == 3
    proc = run_page(page, tmp_path, base_url)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    # run_agent: the repeated call is warned about, then stopped; the model's last answer is kept
    assert lines[0] == "loop_stopped" and lines[1] == "I read the files; here is my answer."
    assert any(line.split()[1:2] == ["warn"] for line in lines[3:]) and any(" stop " in f" {line} " for line in lines)
    # tool_runner with `guarded`: the answer, then the verdict of each call the runner made
    assert lines[-2] == "I read the files; here is my answer."
    verdicts = eval(lines[-1])  # a printed list of actions
    assert verdicts and set(verdicts) <= {"allow", "warn", "stop"}
    assert all(r["path"].startswith("/v1/messages") for r in requests) and len(requests) >= 3


def test_langchain_examples_run_as_written(fake_anthropic, tmp_path):
    pytest.importorskip("langchain_anthropic")
    base_url, requests = fake_anthropic
    page = ROOT / "docs" / "langchain.md"
    assert len(python_blocks(page)) == 2
    proc = run_page(page, tmp_path, base_url)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("stopped: ")  # the middleware ended the run with its own message
    assert requests and all(r["body"]["model"] == "claude-sonnet-4-5" for r in requests)
    assert len(requests) < REPEATS  # the model was not called again after the stop


class FakeResponsesAPI(BaseHTTPRequestHandler):
    """POST /v1/responses (the OpenAI Responses API the Agents SDK uses): a `read_file` call on
    pyproject.toml every turn until REPEATS outputs came back, then a message."""

    requests: list = []

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body})
        answered = [i for i in body.get("input") or []
                    if isinstance(i, dict) and i.get("type") == "function_call_output"]
        n = len(answered)
        if n < REPEATS:
            output = [{"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "read_file",
                       "arguments": json.dumps({"path": "pyproject.toml"}), "status": "completed"}]
        else:
            output = [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": "Here is my answer.", "annotations": []}]}]
        reply_json(self, {
            "id": f"resp_{len(type(self).requests)}", "object": "response", "created_at": 0, "model": body.get("model"),
            "output": output, "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
        })

    def log_message(self, *args):
        pass


def test_openai_agents_examples_run_as_written(tmp_path):
    pytest.importorskip("agents")
    FakeResponsesAPI.requests = []
    with serve(FakeResponsesAPI) as server:
        page = ROOT / "docs" / "openai-agents.md"
        (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
        script = tmp_path / "examples.py"
        script.write_text("\n\n".join(python_blocks(page)))
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OPENAI_API_KEY": "sk-test",
               "OPENAI_BASE_URL": f"{server.url}/v1",
               "OPENAI_AGENTS_DISABLE_TRACING": "1", "NO_PROXY": "127.0.0.1", "PYTHONPATH": str(ROOT)}
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                              cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 3, proc.stdout
    # SemloopGuardrails: the fourth read, sure of the loop after one warning, stops the run as it is recorded
    assert lines[0].startswith("Stopped by semloop: semloop stopped this run at step 3")
    assert lines[1].startswith("semloop ")  # on_stop="raise": LoopStopped's message
    assert lines[2].startswith("semloop stopped this run at step 3")  # keyed guard: the stop message as output
    assert all(r["path"] == "/v1/responses" for r in FakeResponsesAPI.requests)


# -- "Try it offline": each page's block under that heading runs as written, no model, no network --

def offline_block(page: Path) -> tuple[str, str]:
    """The first code block under the page's `## Try it offline` heading: (language, code)."""
    section = page.read_text(encoding="utf-8").split("\n## Try it offline\n", 1)[1]
    found = re.search(r"```(\w+)\n(.*?)```", section, re.S)
    assert found, f"{page.name}: no code block under 'Try it offline'"
    return found[1], found[2]


def _offline_env(tmp_path: Path) -> dict:
    return {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path),
            "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize("name,event", [("claude-code", "PostToolUse"), ("gemini-cli", "AfterTool")])
def test_hook_pages_try_it_offline(name, event, tmp_path):
    language, code = offline_block(ROOT / "docs" / f"{name}.md")
    assert language == "bash"
    proc = subprocess.run(["bash", "-c", "set -euo pipefail\n" + code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=_offline_env(tmp_path))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr  # a hook that fails open says so on stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert answers[:2] == [{}, {}] and len(answers) == 3
    output = answers[2]["hookSpecificOutput"]
    assert output["hookEventName"] == event and output["additionalContext"].startswith("[semloop] This ")


def test_pydantic_ai_page_try_it_offline(tmp_path):
    pytest.importorskip("pydantic_ai.capabilities")
    name, output, actions = _run_offline_python("pydantic-ai.md", tmp_path)
    assert name == "semloop" and output.startswith("semloop blocked this read_config call")
    assert actions == "['warn', 'stop']"


def _run_offline_python(page: str, tmp_path: Path) -> list[str]:
    language, code = offline_block(ROOT / "docs" / page)
    assert language == "python"
    script = tmp_path / "offline.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=_offline_env(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.splitlines()


def test_mcp_page_try_it_offline(tmp_path):
    pytest.importorskip("mcp")
    lines = _run_offline_python("mcp.md", tmp_path)
    assert len(lines) == 5
    assert all("EACCES: permission denied" in line for line in lines[:2])
    assert lines[2].startswith("[semloop] This read_config call repeats")
    assert lines[3].startswith("semloop blocked this read_config call: it repeats a loop")
    assert lines[4].startswith("semloop blocked this read_config call: the run was stopped at step 3")


def test_google_adk_page_try_it_offline(tmp_path):
    pytest.importorskip("google.adk")
    *_, stop, actions = _run_offline_python("google-adk.md", tmp_path)
    assert stop.startswith("semloop blocked this read_config call") and "The run ends here" in stop
    assert actions == "['warn', 'stop']"


def test_claude_agent_sdk_page_try_it_offline(tmp_path):
    pytest.importorskip("claude_agent_sdk")
    lines = _run_offline_python("claude-agent-sdk.md", tmp_path)
    assert lines[:2] == ["{}", "{}"] and len(lines) == 3
    assert "'additionalContext': '[semloop] This Bash call repeats" in lines[2]


def test_every_integration_page_runs_offline():
    """Each integration page has a block that runs without a model or network: a tested
    'Try it offline' section, or examples this module (or tests/test_crewai.py) runs against a
    scripted local API."""
    scripted = {"anthropic.md", "langchain.md", "openai-agents.md", "crewai.md"}
    offline = {p.name for p in (ROOT / "docs").glob("*.md") if "\n## Try it offline\n" in p.read_text(encoding="utf-8")}
    integrations = {f"{name}.md" for name in ("anthropic", "claude-code", "claude-agent-sdk", "openai-agents",
                                               "langchain", "mcp", "gemini-cli", "pydantic-ai", "google-adk", "crewai",
                                               "smolagents", "agent-framework", "strands",
                                               "codex-cli", "copilot-cli", "cursor", "openhands")}
    assert integrations <= scripted | offline, integrations - scripted - offline
    tested = {"claude-code.md", "gemini-cli.md", "pydantic-ai.md", "mcp.md", "google-adk.md", "claude-agent-sdk.md",
              # doctests (pytest's --doctest-glob), strands.md in its own venv (tests/test_strands.py)
              "smolagents.md", "agent-framework.md", "observability.md", "strands.md",
              # run as written by tests/test_hook_cli.py
              "codex-cli.md", "copilot-cli.md", "cursor.md", "openhands.md"}
    assert offline == tested, offline ^ tested  # a new 'Try it offline' block needs its test here
