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
from collections import OrderedDict
from typing import Any, Callable, Hashable

from ..config import Config, fail_open
from ..messages import install_hint
from ..verdict import Verdict
from . import keep_verdict

__all__ = ["SemloopPlugin"]

INSTALL_HINT = f"semloop's Google ADK integration needs `google-adk`: {install_hint('google-adk')}"
AUTHOR = "semloop"
ENDED_NOTE = {"en": "The run ends here; the work done so far is kept.",
              "zh": "运行在此结束；之前完成的工作均已保留。"}


@dataclasses.dataclass
class _Session:
    guard: Any
    invocation: str | None = None
    stop: Verdict | None = None  # the stop of the current invocation


def _build() -> type:
    try:
        from google.adk.models.llm_response import LlmResponse
        from google.adk.plugins.base_plugin import BasePlugin
        from google.genai import types
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc

    from ..guard import LoopGuard

    class SemloopPlugin(BasePlugin):
        """Loop detection for every agent of an ADK runner: `Runner(..., plugins=[SemloopPlugin()])`.

        `config` (and keyword overrides) configure each session's guard. `key(context) ->
        hashable` picks the guard for a callback's context (default: the ADK session id).
        `guidance=True` adds `semloop.guidance()` to the system instruction of every model call.
        `verdicts` holds the last 256 warn / stop verdicts; `stop_verdict(session_id)` the stop of
        a session's latest invocation, if any.
        """

        def __init__(self, config: Config | None = None, *, key: Callable[[Any], Hashable] | None = None,
                     max_sessions: int = 256, name: str = "semloop", guidance: bool = False,
                     **overrides: Any) -> None:
            super().__init__(name=name)
            self.config = (config or Config()).replace(**overrides) if overrides else (config or Config())
            self.guidance = guidance
            self.key = key
            self.max_sessions = max_sessions
            self.sessions: OrderedDict[Hashable, _Session] = OrderedDict()
            self.verdicts: list[Verdict] = []

        # -- sessions ------------------------------------------------------------------------------

        def _session(self, ctx: Any) -> _Session:
            key = self.key(ctx) if self.key is not None else ctx.session.id
            session = self.sessions.get(key)
            if session is None:
                session = self.sessions[key] = _Session(LoopGuard(self.config))
                while len(self.sessions) > self.max_sessions:
                    self.sessions.popitem(last=False)
            self.sessions.move_to_end(key)
            invocation = ctx.invocation_id
            if session.invocation != invocation:  # the user's next message: a new invocation
                if session.invocation is not None and session.guard.stopped:
                    session.guard.state.resume()
                session.invocation, session.stop = invocation, None
            return session

        def stop_verdict(self, session_id: Hashable) -> Verdict | None:
            session = self.sessions.get(session_id)
            return session.stop if session is not None else None

        def _note(self, verdict: Verdict | None) -> Verdict | None:
            if verdict is not None and verdict.action != "allow":
                keep_verdict(self.verdicts, verdict)
            return verdict

        def _failed(self, exc: Exception) -> None:
            fail_open(self.config, exc, "plugin")

        # -- callbacks -----------------------------------------------------------------------------

        async def before_tool_callback(self, *, tool: Any, tool_args: dict, tool_context: Any) -> dict | None:
            try:
                session = self._session(tool_context)
                verdict = self._note(session.guard.check(tool.name, tool_args))
                if verdict.action != "stop":
                    return None
                session.stop = session.stop or verdict
                return {"error": verdict.message}
            except Exception as exc:
                return self._failed(exc)

        async def after_tool_callback(self, *, tool: Any, tool_args: dict, tool_context: Any,
                                      result: Any) -> dict | None:
            try:
                session = self._session(tool_context)
                if session.stop is not None and result == {"error": session.stop.message}:
                    return None  # our own refusal, already counted
                is_error = isinstance(result, dict) and bool(result.get("error"))
                verdict = self._note(session.guard.record(tool.name, tool_args, result, is_error=is_error))
                return self._annotated(session, result, verdict)
            except Exception as exc:
                return self._failed(exc)

        async def on_tool_error_callback(self, *, tool: Any, tool_args: dict, tool_context: Any,
                                         error: Exception) -> dict | None:
            import asyncio

            if isinstance(error, asyncio.CancelledError):
                return None
            try:
                session = self._session(tool_context)
                text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
                verdict = self._note(session.guard.record(tool.name, tool_args, text, is_error=True))
                if verdict.action == "stop":
                    session.stop = session.stop or verdict
            except Exception as exc:
                self._failed(exc)
            return None  # the tool's exception goes on as ADK would raise it

        async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> Any:
            try:
                session = self._session(callback_context)
                stop = session.stop
                if stop is None:
                    if self.guidance:
                        from ..guidance import guidance

                        llm_request.append_instructions([guidance(self.config.language)])
                    return None
                ended = ENDED_NOTE.get(self.config.language, ENDED_NOTE["en"])
                message = stop.message or "semloop stopped the run."
                text = message if ended in message else f"{message} {ended}"
                return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]),
                                   custom_metadata={"semloop": {"action": "stop", "step": stop.step}})
            except Exception as exc:
                return self._failed(exc)

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
