"""A scripted chat-completions endpoint for `httpx.MockTransport`, shared by the tests that drive a
real SDK's OpenAI client (the OpenAI Agents SDK, smolagents, Agent Framework, Strands)."""

from __future__ import annotations

import json
from typing import Any

import httpx


class ScriptedChat:
    """A chat-completions endpoint behind `httpx.MockTransport`: answers request n with `script[n]`
    (a list of (tool, arguments) calls, or the final text) and keeps every request body, so the
    tests see exactly what the SDK sent back to the model."""

    def __init__(self, script: list[Any]) -> None:
        self.script = script
        self.requests: list[dict] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path.endswith("/chat/completions"), request.url
        self.requests.append(json.loads(request.content))
        n = len(self.requests) - 1
        step = self.script[n] if n < len(self.script) else "(script exhausted)"
        if isinstance(step, str):
            message, finish = {"role": "assistant", "content": step}, "stop"
        else:
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{n}_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for i, (name, args) in enumerate(step)]}
            finish = "tool_calls"
        usage = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
        if self.requests[-1].get("stream"):  # server-sent events, as the API streams them
            head = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 1_760_000_000,
                    "model": "gpt-4o-mini"}
            delta = dict(message)
            if delta.get("tool_calls"):
                delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(delta["tool_calls"])]
            chunks = [{**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                      {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                      {**head, "choices": [], "usage": usage}]
            body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            return httpx.Response(200, content=body.encode(), headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json={
            "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1_760_000_000, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": usage})

    def tool_messages(self, request: int) -> list[str]:
        """The tool results sent to the model in request `request` (the results of the turn before)."""
        messages = self.requests[request]["messages"]
        return [m["content"] for m in messages if m["role"] == "tool"]


# -- the scripts and tool results the framework tests share ----------------------------------------

DENIED = "cat: config/settings.yaml: Permission denied"
LOOP = [[("read_file", {"path": "config/settings.yaml"})]] * 10  # the same call, turn after turn
NPM_ERROR = ("npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\n"
             "npm ERR! Could not resolve dependency: peer react@\"^17\" from react-dom@17.0.2")
NPM = ["npm install", "npm install --legacy-peer-deps", "npm i", "npm install --force", "npm ci",
       "npm install --no-audit", "npm install --prefer-offline", "yarn install"]
NPM_SCRIPT = [[("shell", {"command": c})] for c in NPM] + ["I could not install it."]  # varied calls, one error
CLEAN_SCRIPT = [[("read_file", {"path": f"src/module_{i}.py"})] for i in range(6)] + ["All modules read."]


def read_file_result(path: str) -> str:
    """What the fake workspace's read_file returns: denied under config/, a module's text else."""
    return DENIED if path.startswith("config/") else f"# {path}\nVALUE = {sum(map(ord, path))}\n"


def read_file_fn(ran: list) -> Any:
    """A read_file tool function (each framework's own decorator makes it a tool); `ran` gets the paths."""

    def read_file(path: str) -> str:
        """Read a file from the workspace.

        Args:
            path: the file to read.
        """
        ran.append(path)
        return read_file_result(path)

    return read_file


def shell_fn(ran: list) -> Any:
    """A shell tool function whose every command fails with the same npm error."""

    def shell(command: str) -> str:
        """Run a shell command.

        Args:
            command: the command line.
        """
        ran.append(command)
        return NPM_ERROR

    return shell
