"""Drive the real Codex CLI (`@openai/codex` from npm) against a scripted local Responses API, for
end-to-end hook tests.

`ScriptedResponses` (also what tests/copilot_cli.py points the Copilot CLI at) is a stdlib HTTP server on 127.0.0.1 (free port) answering
`POST /v1/responses` the way the OpenAI Responses API streams (SSE: `response.created`,
`response.output_item.done` with a `function_call` or an assistant `message`, `response.completed`).
Each request gets the next scripted call, chosen by how many `function_call_output` items its input
already carries (a retried request gets the same answer); after the script, a final text. Every
request body is kept, so a test can assert what the model was sent.

`run_codex` runs `codex exec --json` in a temporary CODEX_HOME whose `config.toml` names the server
as a custom model provider (`model_providers.scripted`, `wire_api = "responses"`, a local
`base_url`), with `--dangerously-bypass-hook-trust` (the hooks were written by `semloop install
codex` into `$CODEX_HOME/hooks.json`; a person trusts them once with /hooks instead).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli_run import CLIRun, run_stream_json
from loopback import ModelAPIHandler, ScriptedModelServer, read_json, reply, reply_json

MODEL = "gpt-5.5"  # in the CLI's own model catalog: its real tools (freeform apply_patch among them)


def codex_binary() -> str | None:
    """`$SEMLOOP_CODEX_CLI`, or the CLI `.ci/run` installs under `.codex-cli/`, or None."""
    from hooked_cli import pinned_cli

    return pinned_cli("SEMLOOP_CODEX_CLI", ".codex-cli", "codex")


def shell(cmd: str) -> dict:
    """A scripted call of Codex's shell tool (`exec_command`)."""
    return {"name": "exec_command", "arguments": {"cmd": cmd}}


def call(name: str, **arguments: Any) -> dict:
    """A scripted call of any tool."""
    return {"name": name, "arguments": arguments}


def apply_patch(patch: str) -> dict:
    """A scripted call of Codex's freeform `apply_patch` tool (a `custom_tool_call`: the patch is
    the input, not JSON)."""
    return {"name": "apply_patch", "input": patch}


OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")


def _outputs(body: dict) -> list[dict]:
    return [i for i in body.get("input") or [] if isinstance(i, dict) and i.get("type") in OUTPUT_TYPES]


class ScriptedResponses(ScriptedModelServer):
    """`with ScriptedResponses([shell("ls"), ...]) as api: api.url`."""

    def sent_outputs(self) -> list[str]:
        """The tool outputs the model was sent, in order (from the longest conversation)."""
        reqs = self.main_requests()
        return [str(o.get("output")) for o in _outputs(max(reqs, key=lambda r: len(_outputs(r))))] if reqs else []

    def sent_notes(self, roles: tuple[str, ...] = ("developer",)) -> list[str]:
        """The messages of `roles` the model was sent after its first call (where Codex puts a
        hook's `additionalContext`: developer; Copilot CLI a failed call's hook guidance: user)."""
        reqs = self.main_requests()
        if not reqs:
            return []
        items = max(reqs, key=lambda r: len(_outputs(r))).get("input") or []
        first_call = next((n for n, i in enumerate(items) if i.get("type") in ("function_call", "custom_tool_call")),
                          len(items))
        return [c.get("text", "") for i in items[first_call:] if i.get("type") == "message"
                and i.get("role") in roles for c in i.get("content") or []]

    def _events(self, body: dict, n: int) -> list[dict]:
        call = self.next_call(len(_outputs(body)))
        if call is not None and "input" in call:
            item = {"type": "custom_tool_call", "id": f"ctc_{n}", "call_id": f"call_{n}", "name": call["name"],
                    "input": call["input"], "status": "completed"}
        elif call is not None:
            item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": call["name"],
                    "arguments": json.dumps(call["arguments"])}
        else:
            item = {"type": "message", "role": "assistant", "id": f"msg_{n}",
                    "content": [{"type": "output_text", "text": self.final_text}]}
        usage = {"input_tokens": 10, "input_tokens_details": None, "output_tokens": 5,
                 "output_tokens_details": None, "total_tokens": 15}
        response = {"id": f"resp_{n}", "object": "response", "model": MODEL}
        return [{"type": "response.created", "response": {**response, "status": "in_progress", "output": []}},
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.output_item.done", "output_index": 0, "item": item},
                {"type": "response.completed",
                 "response": {**response, "status": "completed", "output": [item], "usage": usage}}]

    def __enter__(self) -> ScriptedResponses:
        api = self

        class Handler(ModelAPIHandler):
            def do_GET(self) -> None:
                reply_json(self, {"object": "list", "data": []})

            def do_POST(self) -> None:
                body = read_json(self)
                if not self.path.rstrip("/").endswith("/responses"):
                    reply_json(self, {"error": {"message": "not scripted"}}, 404)
                    return
                with api.lock:
                    api.record(body)
                    n = len(api.requests)
                data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in api._events(body, n))
                reply(self, 200, data.encode(), "text/event-stream")

        return self._serve(Handler)


@dataclass
class Run(CLIRun):
    """A `codex exec --json` run: `item.started` / `item.completed` events."""

    def commands(self) -> list[dict]:
        """The completed shell commands (`command_execution` items), in order."""
        return [e["item"] for e in self.events
                if e.get("type") == "item.completed" and e.get("item", {}).get("type") == "command_execution"]

    def thread_id(self) -> str:
        return next(e["thread_id"] for e in self.events if e.get("type") == "thread.started")

    def final_message(self) -> str:
        texts = [e["item"].get("text", "") for e in self.events
                 if e.get("type") == "item.completed" and e.get("item", {}).get("type") == "agent_message"]
        return texts[-1] if texts else ""


def write_config(codex_home: Path, api_url: str) -> None:
    """`$CODEX_HOME/config.toml`: the scripted server as the model provider, nothing online."""
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model = "{MODEL}"\nmodel_provider = "scripted"\n\n'
        '[model_providers.scripted]\nname = "scripted"\n'
        f'base_url = "{api_url}/v1"\nwire_api = "responses"\nenv_key = "SCRIPTED_API_KEY"\n', encoding="utf-8")


def clean_env(home: Path, extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "CODEX_", "SEMLOOP_")) or k == "SEMLOOP_MODEL_DIR"}
    env.update(HOME=str(home), CODEX_HOME=str(home / ".codex"), SCRIPTED_API_KEY="test-dummy-key",
               XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"),
               NO_COLOR="1", TERM="dumb")
    env.update(extra or {})
    return env


def run_codex(binary: str, api: ScriptedResponses, home: Path, cwd: Path, *, prompt: str = "Do the task.",
              env: dict | None = None, timeout: float = 180.0, resume: str | None = None) -> Run:
    cwd.mkdir(parents=True, exist_ok=True)
    write_config(home / ".codex", api.url)
    flags = ["--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
             "--dangerously-bypass-hook-trust"]
    argv = [binary, "exec", *flags, prompt] if resume is None else [binary, "exec", "resume", *flags, resume, prompt]
    return Run(*run_stream_json(argv, cwd, clean_env(home, env), timeout))
