"""Drive the real Gemini CLI (`@google/gemini-cli` from npm) against a scripted local Gemini API,
for end-to-end hook tests.

`ScriptedGemini` is a stdlib HTTP server on 127.0.0.1 (free port) that answers
`POST /v1beta/models/<model>:streamGenerateContent?alt=sse` (SSE, `data: <GenerateContentResponse>`)
and `:generateContent` the way the Gemini API does. Each main-loop request (one that declares
tools) gets the next scripted `functionCall` (chosen by how many `functionResponse` parts the
request already carries, so a retried request gets the same answer); after the script, a final
text. Other requests (JSON side calls) get `{}`. Every request body is kept in `requests`, so a
test can assert what the model was sent.

`run_gemini` runs `gemini -p ... --output-format stream-json --yolo -m gemini-2.5-flash` in a
temporary HOME / cwd, pointed at the server by `GOOGLE_GEMINI_BASE_URL` with auth type
`gemini-api-key` (a dummy `GEMINI_API_KEY`), and returns the parsed event stream. The CLI reads
`$HOME/.gemini/settings.json` (user settings) — that is where the test installs semloop's hooks.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli_run import CLIRun, run_stream_json
from loopback import ModelAPIHandler, ScriptedModelServer, read_json, reply

REPO = Path(__file__).resolve().parent.parent
# where .ci/run installs the pinned CLI (ignored by git)
LOCAL_INSTALL = REPO / ".gemini-cli" / "node_modules" / ".bin" / "gemini"
MODEL = "gemini-2.5-flash"  # an explicit model: no routing side calls


def gemini_binary() -> str | None:
    """`$SEMLOOP_GEMINI_CLI`, or the CLI `.ci/run` installs under `.gemini-cli/`, or None.
    (Not `gemini` on PATH: the test wants the pinned version, not whatever the user has.)"""
    explicit = os.environ.get("SEMLOOP_GEMINI_CLI")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    if not shutil.which("node"):
        return None
    return str(LOCAL_INSTALL) if os.access(LOCAL_INSTALL, os.X_OK) else None


def function_call(name: str, **args: Any) -> dict:
    return {"name": name, "args": args}


def _function_responses(body: dict) -> list[dict]:
    out = []
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            if isinstance(part, dict) and "functionResponse" in part:
                out.append(part["functionResponse"])
    return out


def _response(parts: list[dict]) -> dict:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": MODEL}


class ScriptedGemini(ScriptedModelServer):
    """`with ScriptedGemini([function_call("run_shell_command", command="ls"), ...]) as api: api.url`."""

    def __init__(self, script: list[dict], final_text: str = "Done."):
        super().__init__(script, final_text)
        self.paths: list[str] = []  # the URL path of each kept request: streamed or not

    # -- what the model was sent -----------------------------------------------------------------

    def function_responses(self) -> list[dict]:
        """The functionResponse parts of the longest main-loop conversation, in order."""
        reqs = self.main_requests()
        return _function_responses(max(reqs, key=lambda r: len(_function_responses(r)))) if reqs else []

    def sent_texts(self) -> list[str]:
        """Every function response the model was sent, as text (its `response` object, JSON)."""
        return [json.dumps(fr.get("response"), ensure_ascii=False) for fr in self.function_responses()]

    # -- server ----------------------------------------------------------------------------------

    def _answer(self, body: dict) -> dict:
        if not body.get("tools"):
            return _response([{"text": "{}"}])
        call = self.next_call(len(_function_responses(body)))
        if call is not None:
            return _response([{"functionCall": call}])
        return _response([{"text": self.final_text}])

    def __enter__(self) -> "ScriptedGemini":
        api = self

        class Handler(ModelAPIHandler):
            def do_GET(self) -> None:
                reply(self, 404, b'{"error": {"code": 404, "message": "not scripted", "status": "NOT_FOUND"}}',
                      "application/json")

            def do_POST(self) -> None:
                body = read_json(self)
                if ":streamGenerateContent" not in self.path and ":generateContent" not in self.path:
                    self.do_GET()
                    return
                with api.lock:  # one critical section, so paths[i] stays the path of requests[i]
                    api.record(body)
                    api.paths.append(self.path)
                answer = json.dumps(api._answer(body))
                if ":streamGenerateContent" in self.path:
                    reply(self, 200, f"data: {answer}\r\n\r\n".encode(), "text/event-stream")
                else:
                    reply(self, 200, answer.encode(), "application/json")

        return self._serve(Handler)


@dataclass
class Run(CLIRun):
    """A Gemini CLI run: its stream-json events are flat (`tool_use`, `tool_result`, `result`)."""

    def tool_uses(self) -> list[dict]:
        return [e for e in self.events if e.get("type") == "tool_use"]

    def tool_results(self) -> list[dict]:
        return [e for e in self.events if e.get("type") == "tool_result"]


def base_settings(**extra: Any) -> dict:
    """User settings for a headless run against the scripted server: API-key auth, no usage
    statistics, no update checks."""
    settings: dict = {"security": {"auth": {"selectedType": "gemini-api-key"}},
                      "privacy": {"usageStatisticsEnabled": False},
                      "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}}
    for key, value in extra.items():
        settings.setdefault(key, {}).update(value)
    return settings


def clean_env(home: Path, api_url: str, extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GEMINI_", "GOOGLE_", "SEMLOOP_")) or k == "SEMLOOP_MODEL_DIR"}
    env.update(HOME=str(home), GEMINI_API_KEY="test-dummy-key", GOOGLE_GEMINI_BASE_URL=api_url,
               GEMINI_CLI_TRUST_WORKSPACE="true", XDG_CACHE_HOME=str(home / ".cache"),
               XDG_CONFIG_HOME=str(home / ".config"), NO_COLOR="1", TERM="dumb")
    env.pop("CI", None)  # the CLI treats CI=true as non-interactive anyway; keep runs identical
    env.update(extra or {})
    return env


def run_gemini(binary: str, api: ScriptedGemini, home: Path, cwd: Path, *, prompt: str = "Do the task.",
               env: dict | None = None, timeout: float = 180.0, extra_args: tuple[str, ...] = ()) -> Run:
    home.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    argv = [binary, "-p", prompt, "--output-format", "stream-json", "--yolo", "-m", MODEL, *extra_args]
    return Run(*run_stream_json(argv, cwd, clean_env(home, api.url, env), timeout))
