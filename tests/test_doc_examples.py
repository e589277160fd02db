"""The integration examples in docs/ run as written, with only their extra installed: each page's
```python blocks run in order, as one script, in a fresh process. Where the example talks to a
model, `ANTHROPIC_BASE_URL` points the real SDK (or LangChain's ChatAnthropic) at a local fake
Messages API that keeps asking for the same tool call, so semloop's warn and stop paths run too.

(`>>>` examples in README.md and docs/*.md are doctests, collected by pytest itself.)"""

import json
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import ROOT

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
        reply = json.dumps({"id": f"msg_{len(type(self).requests)}", "type": "message", "role": "assistant",
                            "model": body.get("model", "fake"), "content": content, "stop_reason": stop,
                            "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 7}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_anthropic():
    FakeMessagesAPI.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeMessagesAPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", FakeMessagesAPI.requests
    server.shutdown()
    server.server_close()


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
