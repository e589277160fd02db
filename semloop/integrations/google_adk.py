"""semloop for Google's Agent Development Kit (`pip install "semloop-guard[google-adk]"`): a plugin.

    from google.adk.runners import InMemoryRunner
    from semloop.integrations.google_adk import SemloopPlugin

    runner = InMemoryRunner(agent=root_agent, plugins=[SemloopPlugin()])

An ADK plugin's callbacks run for every agent, tool and model call of the runner:

* `before_tool_callback`: `LoopGuard.check`. A call that continues a loop already warned about to
  the limit is not run; its response is `{"error": <the reason>}`.
* `after_tool_callback` / `on_tool_error_callback`: `LoopGuard.record` with the tool's result (or
  its exception, as an error). On "warn" the model gets the real result with the hint under a
  `"semloop"` key; on "stop" the explanation goes there.
* `before_model_callback`: once the invocation is stopped, the model is not called again; the
  agent answers with the stop explanation (an `LlmResponse` the plugin returns), which ends the
  invocation.

One `LoopGuard` per ADK session (a conversation), kept in memory (least recently used dropped
past `max_sessions`); pass `key=` to group differently. A new invocation (the user's next
message) lifts a stop; the loop memory is kept. Everything fails open: an internal error logs a
warning and the call goes ahead unchanged. `google.adk` is imported lazily: `SemloopPlugin` is
built on first access.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..messages import ended
from ..verdict import Verdict
from ._base import KEPT_SESSIONS, Extra, Integration, Sessions, error_text, require

if TYPE_CHECKING:
    from ..guard import LoopGuard

__all__ = ["SemloopPlugin"]  # noqa: F822 (built on first access: `__getattr__`)

EXTRA = Extra("google-adk", "Google ADK integration", "`google-adk`")
INSTALL_HINT = EXTRA.hint
AUTHOR = "semloop"


@dataclasses.dataclass
class _Session:
    guard: LoopGuard
    invocation: str | None = None
    stop: Verdict | None = None  # the stop of the current invocation


def _build() -> type:
    base_plugin: Any = require("google.adk.plugins.base_plugin", EXTRA).BasePlugin
    llm_response = require("google.adk.models.llm_response", EXTRA).LlmResponse
    types = require("google.genai.types", EXTRA)

    class SemloopPlugin(Integration, base_plugin):
        """Loop detection for every agent of an ADK runner: `Runner(..., plugins=[SemloopPlugin()])`.

        `config` (and keyword overrides) configure each session's guard. `key(context) ->
        hashable` picks the guard for a callback's context (default: the ADK session id).
        `guidance=True` adds `semloop.guidance()` to the system instruction of every model call.
        `verdicts` holds the last 256 warn / stop verdicts; `stop_verdict(session_id)` the stop of
        a session's latest invocation, if any.
        """

        WHAT = "plugin"

        def __init__(self, config: Config | None = None, *, key: Callable[[Any], Hashable] | None = None,
                     max_sessions: int = KEPT_SESSIONS, name: str = "semloop", guidance: bool = False,
                     **overrides: Any) -> None:
            base_plugin.__init__(self, name=name)
            Integration.__init__(self, config, **overrides)
            self.guidance = guidance
            self.key = key
            self.max_sessions = max_sessions
            self.sessions: Sessions[Hashable, _Session] = Sessions(lambda key: _Session(self.new_guard()), max_sessions)

        # -- sessions ------------------------------------------------------------------------------

        def _session(self, ctx: Any) -> _Session:
            session = self.sessions.of(self.key(ctx) if self.key is not None else ctx.session.id)
            invocation = ctx.invocation_id
            if session.invocation != invocation:  # the user's next message: a new invocation
                if session.invocation is not None and session.guard.stopped:
                    session.guard.resume()
                session.invocation, session.stop = invocation, None
            return session

        def stop_verdict(self, session_id: Hashable) -> Verdict | None:
            session = self.sessions.get(session_id)
            return session.stop if session is not None else None

        # -- callbacks -----------------------------------------------------------------------------

        async def before_tool_callback(self, *, tool: Any, tool_args: dict, tool_context: Any) -> dict | None:
            with self.fails_open():
                session = self._session(tool_context)
                verdict = self.note(session.guard.check(tool.name, tool_args))
                if verdict.action != "stop":
                    return None
                session.stop = session.stop or verdict
                return {"error": verdict.message}
            return None

        async def after_tool_callback(self, *, tool: Any, tool_args: dict, tool_context: Any,
                                      result: Any) -> dict | None:
            with self.fails_open():
                session = self._session(tool_context)
                if session.stop is not None and result == {"error": session.stop.message}:
                    return None  # our own refusal, already counted
                is_error = isinstance(result, dict) and bool(result.get("error"))
                verdict = self.note(session.guard.record(tool.name, tool_args, result, is_error=is_error))
                return self._annotated(session, result, verdict)
            return None

        async def on_tool_error_callback(self, *, tool: Any, tool_args: dict, tool_context: Any,
                                         error: Exception) -> dict | None:
            import asyncio

            if isinstance(error, asyncio.CancelledError):
                return None
            with self.fails_open():
                session = self._session(tool_context)
                text = error_text(error)
                verdict = self.note(session.guard.record(tool.name, tool_args, text, is_error=True))
                if verdict.action == "stop":
                    session.stop = session.stop or verdict
            return None  # the tool's exception goes on as ADK would raise it

        async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> Any:
            with self.fails_open():
                session = self._session(callback_context)
                stop = session.stop
                if stop is None:
                    if self.guidance:
                        from ..guidance import guidance

                        llm_request.append_instructions([guidance(self.config.language)])
                    return None
                text = ended(stop.message, self.config.language)
                return llm_response(content=types.Content(role="model", parts=[types.Part(text=text)]),
                                   custom_metadata={"semloop": {"action": "stop", "step": stop.step}})
            return None

        def _annotated(self, session: _Session, result: Any, verdict: Verdict) -> dict | None:
            if verdict.action == "allow" or not verdict.message:
                return None
            if verdict.action == "stop":
                session.stop = session.stop or verdict
            base = result if isinstance(result, dict) else {"result": result}
            return {**base, "semloop": verdict.message}

    SemloopPlugin.__module__ = __name__
    return SemloopPlugin


_BUILT: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    if name == "SemloopPlugin":
        if name not in _BUILT:
            _BUILT[name] = _build()
        return _BUILT[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
