"""semloop for LangChain (`pip install "semloop-guard[langchain]"`): agent middleware and a tool wrapper.

    from langchain.agents import create_agent
    from semloop.integrations.langchain import SemloopMiddleware

    agent = create_agent(model, tools, middleware=[SemloopMiddleware()])

* `SemloopMiddleware` (langchain 1.x `create_agent`): every tool call is checked before it runs
  (`wrap_tool_call` / `awrap_tool_call`): a call that continues a loop already warned about to the
  limit is refused without running. Every call that ran is recorded with its `ToolMessage`; on
  "warn" the hint is appended to the message content (status, artifact and id kept). On "stop" the
  run ends: the next `before_model` hook jumps to the end instead of calling the model, and adds a
  final `AIMessage` that tells the user what happened. A new `invoke` on the same thread lifts a
  stop (the human decided); the loop memory is kept. The agent's final message of each turn is
  recorded too (`after_agent`, `LoopGuard.record_message`): on a thread (a checkpointer's
  `thread_id`) whose turns keep asking the user for the same thing, the verdict ("conversation")
  lands in `verdicts` and in that message's `response_metadata["semloop"]`.
* `guard_tool(tool, guard)` wraps any `BaseTool` for code without an agent: checked before and
  recorded after each call, the hint appended on "warn"; on "stop" it raises `LoopStopped`
  (or, with `on_stop="return"`, returns the explanation as the tool's output).

State is in-process: one `LoopGuard` per thread (`thread_id`, or without a checkpointer the
conversation's first message), least recently used dropped past `max_sessions`. Everything fails
open: an internal error logs a warning and the tool runs as if semloop were not there.

`langchain` / `langchain-core` are imported lazily: `SemloopMiddleware` and `GuardedTool` are built
on first access, so importing this module (and `semloop`) does not import LangChain.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from ..config import Config
from ..guard import LoopGuard
from ..messages import NOT_RUN, STOPPED, ended
from ..verdict import LoopStopped, Verdict
from . import keep_verdict
from ._base import KEPT_SESSIONS, Extra, FailOpen, Integration, Sessions, append_text, error_text, require

if TYPE_CHECKING:  # pragma: no cover
    from langchain_core.tools import BaseTool

__all__ = ["SemloopMiddleware", "GuardedTool", "LoopStopped", "guard_tool", "guard_tools"]  # noqa: F822 (`__getattr__`)

EXTRA = Extra("langchain", "LangChain integration",
              "`langchain-core` (and `langchain` 1.x for the agent middleware)")
INSTALL_HINT = EXTRA.hint

REFUSE_NOTE = "Further tool calls in this run will be refused."
METADATA_KEY = "semloop"
"""`ToolMessage.response_metadata[METADATA_KEY]` = {"action": "warn" | "stop" | "refused", "step": n,
"message": ...} marks the tool messages semloop changed; "stop" / "refused" end the run before the
next model call (kept in the checkpoint, so this works across processes too)."""


# -- helpers shared by the middleware and the wrapper -----------------------------------------------


def _text_of(content: Any) -> str:
    """The text of message content: a string, or the text blocks of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b if isinstance(b, str) else str(b.get("text") or "") for b in content
                         if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text"))
    return ""


def _is_tool_message(value: Any) -> bool:
    return type(value).__name__ == "ToolMessage" and hasattr(value, "tool_call_id")


def _mark(message: Any, content: Any, action: str, verdict: Verdict) -> Any:
    """A copy of a `ToolMessage` with new content and semloop's mark; status, artifact, id kept."""
    mark: dict[str, Any] = {"action": action, "step": verdict.step}
    if action != "warn":  # the text of the final message for the user
        mark["message"] = verdict.message
    meta = {**(message.response_metadata or {}), METADATA_KEY: mark}
    return message.model_copy(update={"content": content, "response_metadata": meta})


def _changed(message: Any, verdict: Verdict, stop_note: str | None) -> Any:
    """The `ToolMessage` as the model should see it after `verdict` (itself on allow)."""
    if verdict.action == "allow" or not verdict.message:
        return message
    if verdict.action == "warn":
        return _mark(message, verdict.annotate(message.content), "warn", verdict)
    note = f"{verdict.message} {stop_note}" if stop_note else verdict.message
    return _mark(message, append_text(message.content, note), "stop", verdict)


def _tool_message_in(result: Any, call_id: str | None) -> Any:
    """The `ToolMessage` of a tool result: the result itself, or for a tool that returned a
    `Command`, the message for `call_id` in its `update["messages"]` (None if there is none)."""
    if _is_tool_message(result):
        return result
    update = getattr(result, "update", None)
    if isinstance(update, Mapping) and isinstance(update.get("messages"), list):
        for message in update["messages"]:
            if _is_tool_message(message) and (call_id is None or message.tool_call_id == call_id):
                return message
    return None


def _replace_message(result: Any, old: Any, new: Any) -> Any:
    """`result` with its `ToolMessage` `old` replaced by `new` (a `Command` is copied, not changed)."""
    if new is old:
        return result
    if result is old:
        return new
    messages = [new if m is old else m for m in result.update["messages"]]
    return dataclasses.replace(result, update={**result.update, "messages": messages})


def _mark_of(message: Any) -> Mapping[str, Any]:
    mark = (getattr(message, "response_metadata", None) or {}).get(METADATA_KEY)
    return mark if isinstance(mark, Mapping) else {}


def _bubbles(exc: BaseException) -> bool:
    """LangGraph's control-flow exceptions (interrupts, ...) are not tool failures."""
    try:
        from langgraph.errors import GraphBubbleUp
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, GraphBubbleUp)


# -- the agent middleware -----------------------------------------------------------------------------


class _MiddlewareCore(Integration):
    """The logic of `SemloopMiddleware`, kept free of LangChain imports (see `_middleware_class`).
    `verdicts` holds (thread key, verdict) pairs."""

    WHAT = "middleware"

    def __init__(self, config: Config | None = None, *, halt_on_stop: bool = True, reset_on_invoke: bool = True,
                 max_sessions: int = KEPT_SESSIONS, guidance: bool = False, **overrides: Any) -> None:
        super().__init__(config, **overrides)  # (its lock: parallel tool calls run in threads)
        self.guidance = guidance
        self.halt_on_stop = halt_on_stop
        self.reset_on_invoke = reset_on_invoke
        self.max_sessions = max_sessions
        self.guards: Sessions[str, LoopGuard] = Sessions(self.new_guard, max_sessions)

    # -- guards -------------------------------------------------------------------------------------

    def guard_for(self, key: str) -> LoopGuard:
        """The guard of one thread: its `thread_id`, or "message:<id>" of the conversation's first
        message when the agent runs without a checkpointer."""
        return self.guards.of(key)

    @staticmethod
    def _key(state: Any, runtime: Any) -> str:
        info = getattr(runtime, "execution_info", None)
        thread = getattr(info, "thread_id", None)
        if thread is None:
            config = getattr(runtime, "config", None) or {}
            thread = (config.get("configurable") or {}).get("thread_id")
        if thread is not None:
            return str(thread)
        messages = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
        first = getattr(messages[0], "id", None) if messages else None
        return f"message:{first}" if first else "default"

    # -- before and after one tool call ----------------------------------------------------------------

    def _before(self, request: Any) -> tuple[Any, Any]:
        """(context for `_after`, or None) and (a refusal `ToolMessage`, or None)."""
        with self.fails_open():
            call = request.tool_call
            key = self._key(request.state, request.runtime)
            guard = self.guard_for(key)
            with self._lock:
                was_stopped = guard.stopped
                verdict = guard.check(call["name"], call.get("args") or {})
            if verdict.action != "stop":
                return (key, guard, call), None
            self.note(verdict, key)
            from langchain_core.messages import ToolMessage

            # the call that hit the limit gets the reason; any call after it (same batch, or a retry
            # after a soft stop) is refused as not run
            text = NOT_RUN if was_stopped else (verdict.message or NOT_RUN)
            if not self.halt_on_stop:
                text = f"{text} {REFUSE_NOTE}"
            refusal = ToolMessage(content=text, tool_call_id=call["id"], name=call["name"], status="error")
            return None, _mark(refusal, text, "refused" if was_stopped else "stop", verdict)
        return None, None

    def _record(self, ctx: Any, output: Any, is_error: bool) -> Verdict:
        key, guard, call = ctx
        with self._lock:
            verdict = guard.record(call["name"], call.get("args") or {}, output, is_error=is_error)
        return self.note(verdict, key)

    def _after(self, ctx: Any, result: Any) -> Any:
        if ctx is None:
            return result
        with self.fails_open():
            message = _tool_message_in(result, ctx[2].get("id"))
            if message is None:  # a `Command` without a message for this call: recorded as it is
                self._record(ctx, getattr(result, "update", result), False)
                return result
            verdict = self._record(ctx, message.content, message.status == "error")
            changed = _changed(message, verdict, None if self.halt_on_stop else REFUSE_NOTE)
            return _replace_message(result, message, changed)
        return result

    def _after_error(self, ctx: Any, exc: Exception) -> None:
        """A tool that raised (the error propagates unchanged): recorded as an error step."""
        if ctx is None or _bubbles(exc):
            return
        with self.fails_open():
            self._record(ctx, error_text(exc), True)

    def _tool_call(self, request: Any, handler: Any) -> Any:
        ctx, refusal = self._before(request)
        if refusal is not None:
            return refusal
        try:
            result = handler(request)
        except Exception as exc:
            self._after_error(ctx, exc)
            raise
        return self._after(ctx, result)

    async def _atool_call(self, request: Any, handler: Any) -> Any:
        ctx, refusal = self._before(request)
        if refusal is not None:
            return refusal
        try:
            result = await handler(request)
        except Exception as exc:
            self._after_error(ctx, exc)
            raise
        return self._after(ctx, result)

    # -- graph hooks ------------------------------------------------------------------------------------

    def _on_invoke(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """A new invoke on a thread whose run was stopped: the user stepped in, lift the stop."""
        with self.fails_open():
            if self.reset_on_invoke:
                guard = self.guards.get(self._key(state, runtime))
                if guard is not None and guard.stopped:
                    guard.resume()
        return None

    def _end_if_stopped(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Before the model is called: end the run if the last tool results carry a stop."""
        with self.fails_open():
            messages = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
            ending = ("stop", "refused") if self.halt_on_stop else ("refused",)
            latest = []
            for message in reversed(messages or []):
                if not _is_tool_message(message):
                    break  # only the results of the latest model turn end the run
                latest.append(_mark_of(message).get("action"))
            if not any(action in ending for action in latest):
                return None
            reason = None
            for message in reversed(messages or []):  # why: the stop of this run (maybe an earlier turn)
                if type(message).__name__ == "HumanMessage":
                    break
                mark = _mark_of(message) if _is_tool_message(message) else {}
                if mark.get("action") == "stop" and mark.get("message"):
                    reason = str(mark["message"])
                    break
            from langchain_core.messages import AIMessage

            final = AIMessage(content=ended(reason, self.config.language), name="semloop",
                              response_metadata={METADATA_KEY: {"action": "stop"}})
            return {"messages": [final], "jump_to": "end"}
        return None

    def _said(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """After the agent's turn: its final message to the user is a message step
        (`LoopGuard.record_message`). Asking for the same thing turn after turn on one thread is a
        conversation loop: the verdict goes to `verdicts`, and the message is marked
        (`response_metadata["semloop"]`) for the application to show or act on."""
        with self.fails_open():
            messages = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
            last = (messages or [None])[-1]
            if (type(last).__name__ not in ("AIMessage", "AIMessageChunk") or getattr(last, "tool_calls", None)
                    or getattr(last, "name", None) == "semloop"):
                return None
            text = _text_of(getattr(last, "content", None))
            if not text.strip():
                return None
            key = self._key(state, runtime)
            guard = self.guard_for(key)
            with self._lock:  # (after a stop, record_message records nothing: the answer is about the stop)
                verdict = self.note(guard.record_message(text), key)
            if verdict.action == "allow":
                return None
            marked = last.model_copy(update={"response_metadata": {
                **(getattr(last, "response_metadata", None) or {}),
                METADATA_KEY: {"action": verdict.action, "step": verdict.step, "message": verdict.message}}})
            return {"messages": [marked]}  # same id: replaces the message in the state
        return None

    def _with_guidance(self, request: Any) -> Any:
        """The model request with `semloop.guidance()` after its system message (`guidance=True`)."""
        if not self.guidance:
            return request
        from langchain_core.messages import SystemMessage

        from ..guidance import with_guidance

        current = request.system_message
        content = with_guidance(None if current is None else current.content, self.config.language)
        return request.override(system_message=SystemMessage(content=content))



_CLASSES: dict[str, type[Any]] = {}


def _middleware_class() -> type[Any]:
    if "middleware" not in _CLASSES:
        require("langchain.agents", EXTRA)
        from langchain.agents.middleware import AgentMiddleware, hook_config

        class SemloopMiddleware(_MiddlewareCore, AgentMiddleware):
            """`create_agent(..., middleware=[SemloopMiddleware()])`: loop detection for every tool call.

            `config` (and keyword overrides such as `max_warnings=3`) configure every guard.
            `halt_on_stop=False` does not end the run at the first stop: the model gets the
            explanation in the tool result and can answer the user; a tool call after that is refused
            and ends the run. `reset_on_invoke` lifts a stop when the thread is invoked again (a new
            user message); the loop memory is kept. `guidance=True` adds `semloop.guidance()` after
            the system prompt of every model call. `guards` maps thread keys to their `LoopGuard`;
            `verdicts` keeps the recent warn/stop verdicts.
            """

            def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
                return self._on_invoke(state, runtime)

            async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
                return self._on_invoke(state, runtime)

            @hook_config(can_jump_to=["end"])
            def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
                return self._end_if_stopped(state, runtime)

            @hook_config(can_jump_to=["end"])
            async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
                return self._end_if_stopped(state, runtime)

            def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
                return self._said(state, runtime)

            async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
                return self._said(state, runtime)

            def wrap_tool_call(self, request: Any, handler: Any) -> Any:
                return self._tool_call(request, handler)

            def wrap_model_call(self, request: Any, handler: Any) -> Any:
                return handler(self._with_guidance(request))

            async def awrap_model_call(self, request: Any, handler: Any) -> Any:
                return await handler(self._with_guidance(request))

            async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
                return await self._atool_call(request, handler)

        SemloopMiddleware.__module__, SemloopMiddleware.__qualname__ = __name__, "SemloopMiddleware"
        _CLASSES["middleware"] = SemloopMiddleware
    return _CLASSES["middleware"]


# -- the plain tool wrapper ------------------------------------------------------------------------------


def _model_args(tool: Any, tool_input: Any) -> Any:
    """The arguments the model chose: injected ones (runtime, state, call id) left out."""
    if not isinstance(tool_input, dict):
        return tool_input
    try:
        return tool._filter_injected_args(tool_input)
    except Exception:
        return tool_input


class _GuardedCore:
    """The guard logic of `GuardedTool`, shared by `run` and `arun`."""

    if TYPE_CHECKING:  # GuardedTool's fields
        tool: Any
        guard: LoopGuard
        on_stop: Literal["raise", "return"]
        verdicts: list[Verdict]
        name: Any

    def _stopped(self, verdict: Verdict, output: Any, tool_call_id: str | None) -> Any:
        keep_verdict(self.verdicts, verdict)
        if self.on_stop == "raise":
            raise LoopStopped(verdict, output)
        text = verdict.message or STOPPED
        if output is None:  # refused without running
            if tool_call_id is None:
                return text
            from langchain_core.messages import ToolMessage

            return ToolMessage(content=text, tool_call_id=tool_call_id, name=self.name, status="error")
        message = _tool_message_in(output, tool_call_id)
        if message is not None:
            return _replace_message(output, message, _changed(message, verdict, None))
        if hasattr(output, "update"):  # a `Command` without a message: nothing to add the text to
            return output
        return Verdict("warn", verdict.step, (), text).annotate(output)  # str, blocks, dict: same as a hint

    def _check(self, tool_input: Any, tool_call_id: str | None) -> Any:
        """None (run the tool), or the refusal to return (or `LoopStopped` raised)."""
        verdict = self.guard.check(self.name, _model_args(self.tool, tool_input))  # never raises if fail_open
        return self._stopped(verdict, None, tool_call_id) if verdict.action == "stop" else None

    def _record(self, tool_input: Any, output: Any, tool_call_id: str | None) -> Any:
        with FailOpen(self.guard.config, "tool wrapper", "returning the output unchanged") as failing:
            message = _tool_message_in(output, tool_call_id)
            if message is not None:
                content, is_error = message.content, message.status == "error"
            else:
                content, is_error = getattr(output, "update", output), False
            verdict = self.guard.record(self.name, _model_args(self.tool, tool_input), content, is_error=is_error)
        if failing.failed or verdict.action == "allow":
            return output
        if verdict.action == "stop":
            return self._stopped(verdict, output, tool_call_id)
        keep_verdict(self.verdicts, verdict)
        if message is not None:
            return _replace_message(output, message, _changed(message, verdict, None))
        return output if hasattr(output, "update") else verdict.annotate(output)

    def _record_error(self, tool_input: Any, exc: Exception) -> None:
        if _bubbles(exc):
            return
        with FailOpen(self.guard.config, "tool wrapper", "the error goes on unchanged"):
            verdict = self.guard.record(self.name, _model_args(self.tool, tool_input), error_text(exc), is_error=True)
            if verdict.action != "allow":
                keep_verdict(self.verdicts, verdict)


def _guarded_class() -> type[Any]:
    if "tool" not in _CLASSES:
        require("langchain_core.tools", EXTRA)
        from langchain_core.tools import BaseTool
        from pydantic import ConfigDict, Field

        class GuardedTool(_GuardedCore, BaseTool):
            """A `BaseTool` that runs `tool` under a `LoopGuard`: same name, description, schema,
            `return_direct` and `response_format`; each call is checked before and recorded after.
            Build it with `guard_tool(tool, guard)`."""

            model_config = ConfigDict(arbitrary_types_allowed=True)

            tool: Any
            guard: Any
            on_stop: Literal["raise", "return"] = "raise"
            verdicts: list = Field(default_factory=list, exclude=True)
            """This tool's warn/stop verdicts."""

            # LangGraph's ToolNode looks here for injected arguments (runtime, state, store)
            @property
            def func(self) -> Any:
                return getattr(self.tool, "func", None)

            @property
            def coroutine(self) -> Any:
                return getattr(self.tool, "coroutine", None)

            @property
            def _injected_args_keys(self) -> frozenset[str]:
                return self.tool._injected_args_keys

            def get_input_schema(self, config: Any = None) -> Any:
                return self.tool.get_input_schema(config)

            def _run(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - `run` is overridden
                raise NotImplementedError("GuardedTool runs through `run` / `invoke`")

            def run(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
                tool_call_id = kwargs.get("tool_call_id")
                refusal = self._check(tool_input, tool_call_id)
                if refusal is not None:
                    return refusal
                try:
                    output = self.tool.run(tool_input, *args, **kwargs)
                except Exception as exc:
                    self._record_error(tool_input, exc)
                    raise
                return self._record(tool_input, output, tool_call_id)

            async def arun(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
                tool_call_id = kwargs.get("tool_call_id")
                refusal = self._check(tool_input, tool_call_id)
                if refusal is not None:
                    return refusal
                try:
                    output = await self.tool.arun(tool_input, *args, **kwargs)
                except Exception as exc:
                    self._record_error(tool_input, exc)
                    raise
                return self._record(tool_input, output, tool_call_id)

        GuardedTool.__module__, GuardedTool.__qualname__ = __name__, "GuardedTool"
        _CLASSES["tool"] = GuardedTool
    return _CLASSES["tool"]


def guard_tool(tool: BaseTool, guard: LoopGuard | None = None, *,
               on_stop: Literal["raise", "return"] = "raise") -> BaseTool:
    """Wrap a LangChain tool (`@tool` function, `StructuredTool`, any `BaseTool`) in a `LoopGuard`.

    The result is a `BaseTool` with the same name, description, argument schema, `return_direct`
    and `response_format`. Each `invoke` / `ainvoke` / `run` is checked before the tool runs and
    recorded after: on "warn" the hint is appended to the output (to a `ToolMessage`'s content
    when invoked with a tool call; status and artifact kept). On "stop" it raises `LoopStopped`
    (`.verdict`, `.output`), or with `on_stop="return"` returns the output with the explanation
    appended (a refused call returns the explanation, as an error `ToolMessage` for a tool call).
    Exceptions from the tool are recorded as errors and re-raised unchanged.

    Share one guard between the tools of one run (`guard_tools`): loops span tools.
    """
    if on_stop not in ("raise", "return"):
        raise ValueError(f"on_stop must be 'raise' or 'return', got {on_stop!r}")
    cls = _guarded_class()
    same = {name: getattr(tool, name) for name in ("name", "description", "args_schema", "return_direct",
                                                   "response_format", "tags", "metadata", "extras")
            if name in cls.model_fields and hasattr(tool, name)}  # `extras` is langchain-core >= 1.0
    return cls(tool=tool, guard=guard if guard is not None else LoopGuard(), on_stop=on_stop, **same)


def guard_tools(tools: Iterable[BaseTool], guard: LoopGuard | None = None, **options: Any) -> list[BaseTool]:
    """`guard_tool` for several tools, sharing one guard (a new one by default)."""
    guard = guard if guard is not None else LoopGuard()
    return [guard_tool(t, guard, **options) for t in tools]


def __getattr__(name: str) -> Any:  # PEP 562: the LangChain classes are built on first access
    if name == "SemloopMiddleware":
        return _middleware_class()
    if name == "GuardedTool":
        return _guarded_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
