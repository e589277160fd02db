"""semloop for the Anthropic Python SDK (`pip install "semloop-guard[anthropic]"`).

Three ways in, from the most to the least hands-on:

* `tool_result(guard, block, output)` — for a loop you write yourself: records one tool call and
  returns the `tool_result` block to send back (the hint appended on "warn") with the verdict.
* `run_agent(client, model=..., messages=..., tools=..., dispatch=...)` (and `run_agent_async` with
  `AsyncAnthropic`) — a complete guarded tool loop that ends with a whole answer for the user,
  also when semloop stops it.
* `guarded(guard, tool)` — wraps a `@beta_tool` / `@beta_async_tool` function for
  `client.beta.messages.tool_runner(...)`.

`anthropic` itself is imported lazily, only where it is needed.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..guard import LoopGuard
from ..guidance import with_guidance
from ..messages import NOT_RUN, STOPPED
from ..verdict import Verdict
from ._base import Extra, append_text, error_text, require

__all__ = [
    "AgentResult",
    "GuardedResult",
    "Usage",
    "FINAL_PROMPT",
    "tool_result",
    "run_agent",
    "run_agent_async",
    "guarded",
]

EXTRA = Extra("anthropic", "Anthropic integration", "the `anthropic` package")
INSTALL_HINT = EXTRA.hint

FINAL_PROMPT = (
    "{reason}\n\n"
    "Tools are no longer available in this conversation. Reply to the user directly: what was done, "
    "what blocked progress, and what they could do next."
)
"""The text appended (after the tool results) to the one last request made when semloop stops the
loop. `{reason}` is the stop verdict's message. Override with `run_agent(final_prompt=...)`."""

STOPPED_NOTE = "No further tool calls will run in this session."


# -- one tool result ---------------------------------------------------------------------------


class GuardedResult(NamedTuple):
    """What `tool_result` returns: unpack it (`block, verdict = tool_result(...)`) or use the names."""

    block: dict[str, Any]
    """The `tool_result` block param to put in the next user message."""
    verdict: Verdict


def _field(block: Any, name: str) -> Any:
    return block[name] if isinstance(block, Mapping) else getattr(block, name)


def _content(output: Any) -> Any:
    """Tool output as `tool_result` content: a string or a list of content blocks."""
    if output is None or isinstance(output, str):
        return output
    if isinstance(output, (list, tuple)) and all(isinstance(b, Mapping) and "type" in b for b in output):
        return [dict(b) for b in output]
    try:
        return json.dumps(output, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(output)


def tool_result(guard: LoopGuard, block: Any, output: Any, *, is_error: bool = False) -> GuardedResult:
    """Record one executed tool call and build the `tool_result` block for it.

    `block` is the `tool_use` block from the response (the SDK's `ToolUseBlock` or a dict) and
    `output` what the tool returned: a string, a list of content blocks, or any JSON-able value
    (sent as JSON text). On "warn" the hint is appended to the original output; on "stop" the
    explanation is appended, and the caller should end the loop (see `run_agent`).
    `is_error` is kept as given.

    Call `guard.check(name, input)` *before* running the tool: a "stop" there means the call
    continues a loop already warned about, and should be answered without running it.
    """
    name, tool_input, tool_use_id = _field(block, "name"), _field(block, "input"), _field(block, "id")
    verdict = guard.record(name, tool_input, output, is_error=is_error)
    content = _content(output)
    if verdict.action == "warn":
        content = verdict.annotate(content)
    elif verdict.action == "stop" and verdict.message:
        content = append_text(content, verdict.message)
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id}
    if content is not None:
        result["content"] = content
    if is_error:
        result["is_error"] = True
    return GuardedResult(result, verdict)


# -- the complete loop ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """Tokens summed over every Messages API call of a run."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: Any) -> Usage:
        def get(name: str) -> int:
            return int(getattr(other, name, 0) or 0)

        return Usage(self.input_tokens + get("input_tokens"), self.output_tokens + get("output_tokens"),
                     self.cache_creation_input_tokens + get("cache_creation_input_tokens"),
                     self.cache_read_input_tokens + get("cache_read_input_tokens"))


@dataclass(frozen=True)
class AgentResult:
    """How a `run_agent` run ended.

    `stop_reason` is "end_turn" (the model finished), "loop_stopped" (semloop stopped a loop; `text`
    is then the model's explanation from one last call without tools), "max_turns", or the API's own
    stop reason when that ended the run ("max_tokens", "refusal", "stop_sequence", ...).
    """

    text: str
    stop_reason: str
    verdicts: tuple[Verdict, ...]
    messages: list[Any] = field(repr=False)
    usage: Usage
    turns: int
    """Messages API calls made (the final call after a stop included)."""

    @property
    def stopped(self) -> bool:
        return self.stop_reason == "loop_stopped"


def _text(message: Any) -> str:
    return "".join(getattr(b, "text", "") for b in message.content if getattr(b, "type", None) == "text")


def _agent_steps(guard: LoopGuard, params: dict[str, Any], max_turns: int,
                 final_prompt: str) -> Generator[tuple, Any, AgentResult]:
    """The loop as a generator, shared by the sync and async drivers. It yields
    ("create", kwargs) → receives a `Message`, and ("dispatch", name, input) → receives
    (output, is_error)."""
    messages: list[Any] = params["messages"]
    if guard.stopped:  # a guard kept across turns: this run is the user's next message, which lifts a stop
        guard.resume()
    verdicts: list[Verdict] = []
    usage = Usage()
    turns = 0
    response = None
    while turns < max_turns:
        response = yield ("create", dict(params))
        turns += 1
        usage = usage + response.usage
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason == "pause_turn":  # a server tool paused the turn: send it back to continue
            continue
        calls = [b for b in response.content if getattr(b, "type", None) == "tool_use"]
        if response.stop_reason != "tool_use" or not calls:
            if response.stop_reason == "end_turn" and _text(response):
                # the agent's message to the user: with a guard kept across user turns, asking the same
                # thing turn after turn is a conversation loop (`LoopGuard.record_message`)
                said = guard.record_message(_text(response))
                if said.action != "allow":
                    verdicts.append(said)
            return AgentResult(_text(response), response.stop_reason or "end_turn", tuple(verdicts), messages,
                               usage, turns)

        results: list[dict[str, Any]] = []
        stop: Verdict | None = None
        for call in calls:
            if stop is not None:
                results.append({"type": "tool_result", "tool_use_id": call.id, "content": NOT_RUN, "is_error": True})
                continue
            check = guard.check(call.name, call.input)
            if check.action == "stop":
                verdicts.append(check)
                stop = check
                results.append({"type": "tool_result", "tool_use_id": call.id,
                                "content": check.message or NOT_RUN, "is_error": True})
                continue
            output, is_error = yield ("dispatch", call.name, call.input)
            block, verdict = tool_result(guard, call, output, is_error=is_error)
            verdicts.append(verdict)
            results.append(block)
            if verdict.action == "stop":
                stop = verdict

        if stop is None:
            messages.append({"role": "user", "content": results})
            continue

        reason = stop.message or STOPPED
        final_text = {"type": "text", "text": final_prompt.format(reason=reason)}
        messages.append({"role": "user", "content": [*results, final_text]})
        final_params = dict(params)
        if "tools" in final_params:  # history has tool_use blocks, so the API wants `tools`: forbid their use instead
            final_params["tool_choice"] = {"type": "none"}
        final = yield ("create", final_params)
        turns += 1
        usage = usage + final.usage
        messages.append({"role": "assistant", "content": final.content})
        return AgentResult(_text(final), "loop_stopped", tuple(verdicts), messages, usage, turns)

    text = _text(response) if response is not None else ""
    return AgentResult(text, "max_turns", tuple(verdicts), messages, usage, turns)


def _setup(guard: LoopGuard | None, model: str, messages: Iterable[Any], tools: Iterable[Any] | None,
           max_tokens: int, system: Any, guidance: bool,
           create_kwargs: dict[str, Any]) -> tuple[LoopGuard, dict[str, Any]]:
    require("anthropic", EXTRA)
    guard = guard if guard is not None else LoopGuard()
    if guidance:
        system = with_guidance(system, guard.config.language)
    params: dict[str, Any] = {**create_kwargs, "model": model, "max_tokens": max_tokens, "messages": list(messages)}
    if tools is not None:
        params["tools"] = list(tools)
    if system is not None:
        params["system"] = system
    return guard, params


def run_agent(client: Any, *, model: str, messages: Iterable[Any], tools: Iterable[Any],
              dispatch: Callable[[str, Any], Any], guard: LoopGuard | None = None, max_turns: int = 20,
              max_tokens: int = 4096, system: Any = None, final_prompt: str = FINAL_PROMPT,
              guidance: bool = False, **create_kwargs: Any) -> AgentResult:
    """Run a guarded tool loop with an `anthropic.Anthropic` client.

    Each response's `tool_use` blocks (several per response are fine) are checked
    (`guard.check`: a known loop is refused without running), run with `dispatch(name, input)`,
    and recorded; all their `tool_result` blocks go back in one user message, with the hint
    appended on "warn". An exception in `dispatch` becomes an `is_error` result with its text.
    On "stop" the remaining calls of that response are not run, and one last request (tools
    forbidden with `tool_choice: none`) asks the model to explain to the user what blocked it.

    `messages` is copied, not changed; the whole conversation is in `AgentResult.messages`.
    `create_kwargs` go to every `client.messages.create` call (e.g. `temperature`, `thinking`).
    `guidance=True` adds `semloop.guidance()` (in the guard's language) after `system`. A `guard`
    kept across the user's turns and stopped in an earlier one is resumed: a new run is the user's
    next message (the loop memory is kept).
    """
    guard, params = _setup(guard, model, messages, tools, max_tokens, system, guidance, create_kwargs)
    steps = _agent_steps(guard, params, max_turns, final_prompt)
    try:
        op = next(steps)
        while True:
            if op[0] == "create":
                op = steps.send(client.messages.create(**op[1]))
                continue
            try:
                reply = (dispatch(op[1], op[2]), False)
            except Exception as exc:
                reply = (error_text(exc), True)
            op = steps.send(reply)
    except StopIteration as done:
        return done.value


async def run_agent_async(client: Any, *, model: str, messages: Iterable[Any], tools: Iterable[Any],
                          dispatch: Callable[[str, Any], Any], guard: LoopGuard | None = None,
                          max_turns: int = 20, max_tokens: int = 4096, system: Any = None,
                          final_prompt: str = FINAL_PROMPT, guidance: bool = False,
                          **create_kwargs: Any) -> AgentResult:
    """`run_agent` for `anthropic.AsyncAnthropic`. `dispatch` may be a plain or an async function."""
    guard, params = _setup(guard, model, messages, tools, max_tokens, system, guidance, create_kwargs)
    steps = _agent_steps(guard, params, max_turns, final_prompt)
    try:
        op = next(steps)
        while True:
            if op[0] == "create":
                op = steps.send(await client.messages.create(**op[1]))
                continue
            try:
                output = dispatch(op[1], op[2])
                if inspect.isawaitable(output):
                    output = await output
                reply = (output, False)
            except Exception as exc:
                reply = (error_text(exc), True)
            op = steps.send(reply)
    except StopIteration as done:
        return done.value


# -- client.beta.messages.tool_runner --------------------------------------------------------------


def guarded(guard: LoopGuard, tool: Any = None, *, on_stop: Callable[[Verdict], Any] | None = None) -> Any:
    """Wrap a `@beta_tool` (or `@beta_async_tool`) function for `client.beta.messages.tool_runner`.

    Every call is checked before it runs and recorded after: on "warn" the hint is appended to the
    tool's output; on "stop" the explanation is appended and every later call of the session is
    refused without running (a `ToolError`, so the model gets an `is_error` result saying why), which
    leads the model to answer the user. `on_stop(verdict)` is called once, at the stop: pass e.g.
    `lambda v: runner.close()` to end the runner right there instead. Exceptions raised by the tool
    are recorded as errors and re-raised (the hint is added to them on "warn").

    Usable as a decorator too: `@guarded(guard)` above `@beta_tool`.
    """
    if tool is None:
        return lambda t: guarded(guard, t, on_stop=on_stop)
    require("anthropic", EXTRA)
    from anthropic.lib.tools import BetaAsyncBuiltinFunctionTool, BetaAsyncFunctionTool

    cls = _async_guarded_class() if isinstance(tool, (BetaAsyncFunctionTool, BetaAsyncBuiltinFunctionTool)) \
        else _guarded_class()
    return cls(guard, tool, on_stop)


class _GuardedCore:
    """The guard logic of a wrapped tool, shared by the sync and async wrappers."""

    def __init__(self, guard: LoopGuard, tool: Any, on_stop: Callable[[Verdict], Any] | None) -> None:
        self.guard, self.tool, self.on_stop = guard, tool, on_stop
        self.verdicts: list[Verdict] = []
        self._stop_seen = False

    @property
    def name(self) -> str:
        return self.tool.name

    def to_dict(self) -> Any:
        return self.tool.to_dict()

    def __getattr__(self, item: str) -> Any:  # description, input_schema, func, ... of the wrapped tool
        if item in ("tool", "guard"):
            raise AttributeError(item)
        return getattr(self.tool, item)

    def _stopped(self, verdict: Verdict) -> None:
        if not self._stop_seen:
            self._stop_seen = True
            if self.on_stop is not None:
                self.on_stop(verdict)

    def _before(self, tool_input: Any) -> None:
        from anthropic.lib.tools import ToolError

        verdict = self.guard.check(self.name, tool_input)
        if verdict.action == "stop":
            self.verdicts.append(verdict)
            self._stopped(verdict)
            raise ToolError(f"{verdict.message} {STOPPED_NOTE}")

    def _after(self, tool_input: Any, output: Any) -> Any:
        verdict = self.guard.record(self.name, tool_input, output)
        self.verdicts.append(verdict)
        if verdict.action == "warn":
            return verdict.annotate(output)
        if verdict.action == "stop":
            self._stopped(verdict)
            return append_text(output, f"{verdict.message} {STOPPED_NOTE}")
        return output

    def _raised(self, tool_input: Any, exc: Exception) -> None:
        from anthropic.lib.tools import ToolError

        content = exc.content if isinstance(exc, ToolError) else error_text(exc)
        verdict = self.guard.record(self.name, tool_input, content, is_error=True)
        self.verdicts.append(verdict)
        if verdict.action == "stop":
            self._stopped(verdict)
        if verdict.action != "allow" and verdict.message:
            note = verdict.message if verdict.action == "warn" else f"{verdict.message} {STOPPED_NOTE}"
            raise ToolError(append_text(content, note)) from exc


_CLASSES: dict[str, type] = {}


def _guarded_class() -> type:
    if "sync" not in _CLASSES:
        from anthropic.lib.tools import BetaBuiltinFunctionTool

        class GuardedTool(_GuardedCore, BetaBuiltinFunctionTool):
            """A tool-runner tool that runs `tool` under a `LoopGuard`."""

            def to_dict(self) -> Any:
                return self.tool.to_dict()

            def call(self, input: object) -> Any:
                self._before(input)
                try:
                    output = self.tool.call(input)
                except Exception as exc:
                    self._raised(input, exc)
                    raise
                return self._after(input, output)

        _CLASSES["sync"] = GuardedTool
    return _CLASSES["sync"]


def _async_guarded_class() -> type:
    if "async" not in _CLASSES:
        from anthropic.lib.tools import BetaAsyncBuiltinFunctionTool

        class AsyncGuardedTool(_GuardedCore, BetaAsyncBuiltinFunctionTool):
            """An async tool-runner tool that runs `tool` under a `LoopGuard`."""

            def to_dict(self) -> Any:
                return self.tool.to_dict()

            async def call(self, input: object) -> Any:
                self._before(input)
                try:
                    output = await self.tool.call(input)
                except Exception as exc:
                    self._raised(input, exc)
                    raise
                return self._after(input, output)

        _CLASSES["async"] = AsyncGuardedTool
    return _CLASSES["async"]
