"""Drive the real Claude Code CLI (bundled in `claude-agent-sdk`) against a scripted local
Anthropic Messages API, for end-to-end hook tests and `benchmarks/hook_latency.py`.

`ScriptedAPI` is a stdlib HTTP server on 127.0.0.1 (free port) that streams SSE exactly like the
real API (message_start, content_block_start / delta / stop — tool_use input as input_json_delta —,
message_delta with the stop reason, message_stop). Each main-loop request gets the next scripted
tool call (chosen by how many tool results the request already carries, so a retried request gets
the same answer); after the script, a final text. Side requests (titles, summaries: no tools) get a
short text. Every request body is kept in `requests`, so a test can assert what the model was sent.

`run_claude` runs the CLI with `-p ... --output-format stream-json --verbose --include-hook-events`
in a temporary HOME / cwd and returns the parsed stream.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cli_run import CLIRun, run_stream_json
from loopback import ModelAPIHandler, ScriptedModelServer, read_json, reply_json


def claude_binary() -> str | None:
    """The CLI bundled in claude-agent-sdk, or `$SEMLOOP_CLAUDE_BIN`, or None."""
    explicit = os.environ.get("SEMLOOP_CLAUDE_BIN")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    try:
        import claude_agent_sdk
    except ImportError:
        return None
    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return str(path) if os.access(path, os.X_OK) else None


def tool_call(name: str, **tool_input: Any) -> dict:
    return {"name": name, "input": tool_input}


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _tool_results(body: dict) -> int:
    n = 0
    for message in body.get("messages") or []:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            n += sum(1 for block in content if isinstance(block, dict) and block.get("type") == "tool_result")
    return n


class ScriptedAPI(ScriptedModelServer):
    """`with ScriptedAPI([tool_call("Bash", command="ls"), ...]) as api: ... api.url`. An entry that
    is a list of calls is one assistant message calling them all at once (parallel tool use)."""

    def next_blocks(self, done: int) -> list[dict] | None:
        """The tool_use blocks for a request that already carries `done` tool results."""
        seen = 0
        for entry in self.script:
            calls = entry if isinstance(entry, list) else [entry]
            if seen == done:
                return [{"type": "tool_use", "id": f"toolu_{done + i:04d}", **call} for i, call in enumerate(calls)]
            seen += len(calls)
        return None

    # -- what the model was sent -----------------------------------------------------------------

    def tool_results(self) -> list[dict]:
        """The tool_result blocks of the longest main-loop conversation, in order."""
        reqs = self.main_requests()
        if not reqs:
            return []
        last = max(reqs, key=_tool_results)
        out = []
        for message in last.get("messages") or []:
            content = message.get("content")
            if message.get("role") == "user" and isinstance(content, list):
                out += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        return out

    def user_texts_after_results(self) -> list[str]:
        """Text blocks the CLI sent next to tool results (hook context travels there)."""
        reqs = self.main_requests()
        if not reqs:
            return []
        last = max(reqs, key=_tool_results)
        texts = []
        for message in last.get("messages") or []:
            content = message.get("content")
            if message.get("role") == "user" and isinstance(content, list):
                texts += [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
            elif message.get("role") == "user" and isinstance(content, str):
                texts.append(content)
        return texts

    # -- server ----------------------------------------------------------------------------------

    def __enter__(self) -> "ScriptedAPI":
        api = self

        class Handler(ModelAPIHandler):
            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                reply_json(self, {})

            def do_POST(self) -> None:
                body = read_json(self)
                if "/count_tokens" in self.path:
                    reply_json(self, {"input_tokens": 10})
                    return
                if not self.path.startswith("/v1/messages"):
                    reply_json(self, {"type": "error", "error": {"type": "not_found_error", "message": self.path}}, 404)
                    return
                api.record(body)
                if body.get("tools"):
                    blocks = api.next_blocks(_tool_results(body)) or [{"type": "text", "text": api.final_text}]
                else:
                    blocks = [{"type": "text", "text": "Scripted session"}]
                if body.get("stream"):
                    self._stream(body, blocks)
                else:
                    reply_json(self, _message(body, blocks))

            def _stream(self, body: dict, blocks: list[dict]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                msg = _message(body, blocks)
                start = {**msg, "content": [], "stop_reason": None,
                         "usage": {"input_tokens": 10, "output_tokens": 1}}
                out = [_sse("message_start", {"type": "message_start", "message": start})]
                for index, block in enumerate(blocks):
                    if block["type"] == "tool_use":
                        out.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                        "content_block": {"type": "tool_use", "id": block["id"],
                                                          "name": block["name"], "input": {}}}))
                        text = json.dumps(block["input"])
                        for i in range(0, len(text), 40):
                            out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": {"type": "input_json_delta", "partial_json": text[i:i + 40]}}))
                    else:
                        out.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                        "content_block": {"type": "text", "text": ""}}))
                        out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                        "delta": {"type": "text_delta", "text": block["text"]}}))
                    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
                out.append(_sse("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                "usage": {"output_tokens": 12}}))
                out.append(_sse("message_stop", {"type": "message_stop"}))
                self.wfile.write(b"".join(out))
                self.wfile.flush()
                self.close_connection = True

        return self._serve(Handler)


def _message(body: dict, blocks: list[dict]) -> dict:
    return {"id": "msg_scripted", "type": "message", "role": "assistant", "model": body.get("model") or "claude",
            "content": blocks, "stop_reason": "tool_use" if blocks[-1]["type"] == "tool_use" else "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 12}}


@dataclass
class Run(CLIRun):
    """A Claude Code run: tool uses and results are blocks inside `assistant` / `user` events;
    hook events (`--include-hook-events`) are `system` events whose subtype starts with "hook"."""

    hook_events: list[dict] = field(default_factory=list)

    def tool_uses(self) -> list[dict]:
        out = []
        for event in self.events:
            if event.get("type") == "assistant":
                out += [b for b in event["message"].get("content", []) if b.get("type") == "tool_use"]
        return out

    def tool_results(self) -> list[dict]:
        out = []
        for event in self.events:
            if event.get("type") == "user":
                content = event["message"].get("content")
                if isinstance(content, list):
                    out += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        return out


def clean_env(home: Path, api_url: str, extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_", "SEMLOOP_")) or k == "SEMLOOP_MODEL_DIR"}
    env.update(HOME=str(home), ANTHROPIC_BASE_URL=api_url, ANTHROPIC_API_KEY="sk-ant-test-dummy",
               XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"),
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1",
               DISABLE_ERROR_REPORTING="1", CLAUDE_CONFIG_DIR=str(home / ".claude"), IS_SANDBOX="1")
    env.update(extra or {})
    return env


def run_claude(binary: str, api: ScriptedAPI, home: Path, cwd: Path, settings: Path | None, *,
               prompt: str = "Do the task.", max_turns: int = 14, env: dict | None = None,
               timeout: float = 180.0, extra_args: tuple[str, ...] = ()) -> Run:
    home.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    argv = [binary, "-p", prompt, "--output-format", "stream-json", "--verbose", "--include-hook-events",
            "--max-turns", str(max_turns), "--permission-mode", "bypassPermissions",
            "--model", "claude-sonnet-4-5", *extra_args]
    if settings is not None:
        argv += ["--settings", str(settings)]
    returncode, events, stderr, seconds = run_stream_json(argv, cwd, clean_env(home, api.url, env), timeout)
    hooks = [e for e in events if e.get("type") == "system" and str(e.get("subtype", "")).startswith("hook")]
    return Run(returncode, events, stderr, seconds, hooks)


def which_claude() -> str | None:  # pragma: no cover - convenience for manual runs
    return claude_binary() or shutil.which("claude")
