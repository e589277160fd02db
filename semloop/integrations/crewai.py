"""semloop for CrewAI (`pip install "semloop-guard[crewai]"`): tool-call hooks.

    from crewai import Agent, Crew, Task
    from semloop.integrations.crewai import LoopStopped, SemloopHooks

    loops = SemloopHooks().register()  # once, before kickoff: every crew of this process
    try:
        result = crew.kickoff()
    except LoopStopped as stop:  # semloop ended the run; stop.message says why
        print(stop.message)

CrewAI's tool-call hooks (the registry behind `@before_tool_call` / `@after_tool_call`) run for
every tool call of every agent, in the native function-calling and the ReAct paths alike:

* before the call: `LoopGuard.check`. A call that continues a loop already warned about to the
  limit is refused: the hook returns False, so CrewAI does not run the tool.
* after the call: `LoopGuard.record` with the text the agent would see (a tool's exception, which
  CrewAI turns into "Error executing tool: ...", is recorded as an error). On "warn" the agent gets
  that text with the hint appended. A refused call, or a "stop" on record, ends the run: the hook
  raises `LoopStopped` as a CrewAI `HookAborted`, CrewAI's own way to stop a run on purpose (no
  retry, the model is not asked again), and `crew.kickoff()` raises it to the caller.

One `LoopGuard` per agent of a crew (`key=` to group differently), kept in memory (least recently
used dropped past `max_sessions`). A stop ends that run; the next kickoff starts unstopped with the
loop memory kept, so the same loop is flagged again at once. Everything fails open: an internal
error logs a warning and the call goes ahead unchanged. The hooks are global in CrewAI (there is no
per-crew registry): `unregister()`, or `with SemloopHooks(): ...`, removes them again.

`crewai` is imported lazily, only when the hooks are registered or a run is stopped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from typing import Any

from ..config import Config
from ..guard import LoopGuard
from ..verdict import LoopStopped, Verdict
from ._base import KEPT_SESSIONS, Extra, Integration, Sessions, require

__all__ = ["SemloopHooks", "LoopStopped"]

EXTRA = Extra("crewai", "CrewAI integration", "CrewAI 1.x (tool-call hooks)")
INSTALL_HINT = EXTRA.hint

# The text CrewAI puts in place of a call a before-hook refused (both tool-call paths), and the
# prefixes of the texts it puts in place of a tool's exception (native path; ReAct path).
BLOCKED = "Tool execution blocked by hook. Tool: "
_ERROR = re.compile(r"\s*(Error executing tool\b|I encountered an error\b)")
# Refusals waiting for their after hook: more than a run's parallel tool calls, few enough to ignore.
MAX_REFUSED = 64


def _stop_error() -> type:
    """`LoopStopped` that is also CrewAI's `HookAborted`: CrewAI lets only `HookAborted` out of a
    hook (any other exception is swallowed) and does not retry a task that ends with it."""
    if "stop" not in _BUILT:
        hook_aborted: Any = require("crewai.hooks", EXTRA).HookAborted

        class CrewAILoopStopped(LoopStopped, hook_aborted):
            def __init__(self, verdict: Verdict, output: Any = None) -> None:
                LoopStopped.__init__(self, verdict, output)
                self.reason, self.source = self.message, "semloop"  # HookAborted's fields

        CrewAILoopStopped.__module__ = __name__
        _BUILT["stop"] = CrewAILoopStopped
    return _BUILT["stop"]


def _default_key(context: Any) -> Hashable:
    crew, agent = getattr(context, "crew", None), getattr(context, "agent", None)
    return (_ident(crew), _ident(agent))


def _ident(obj: Any) -> Hashable:
    if obj is None:
        return None
    ident = getattr(obj, "id", None)  # Crew and Agent have a UUID `id`
    return ident if isinstance(ident, Hashable) and ident is not None else id(obj)


class SemloopHooks(Integration):
    """Loop detection for CrewAI: `SemloopHooks().register()` before `crew.kickoff()`.

    `config` (and keyword overrides) configure each guard. `key(context) -> hashable` picks the
    guard for a hook context (a `ToolCallHookContext`; default: its crew and agent). `verdicts`
    holds the last 256 warn / stop verdicts, `last_stop` the latest stop. `before_tool_call` and
    `after_tool_call` are the hooks themselves, for CrewAI's own registration functions.
    """

    WHAT = "CrewAI hook"

    def __init__(self, config: Config | None = None, *, key: Callable[[Any], Hashable] | None = None,
                 max_sessions: int = KEPT_SESSIONS, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        self.key = key or _default_key
        self.max_sessions = max_sessions
        self.sessions: Sessions[Hashable, LoopGuard] = Sessions(self.new_guard, max_sessions)
        # calls this object refused, by the id of their input dict: CrewAI hands the same dict to
        # the before and the after hook of one call. The dict is kept with the verdict, so that its
        # id cannot be reused by another call's dict while the entry lives; the map is bounded,
        # because a run aborted between the two hooks never reaches the after hook to take it out.
        self._refused: Sessions[int, tuple[Any, Verdict]] = Sessions(size=MAX_REFUSED)
        self._registered = False

    # -- registration ----------------------------------------------------------------------------

    def register(self) -> SemloopHooks:
        """Add the hooks to CrewAI's global tool-call hooks (what `@before_tool_call` does)."""
        hooks = require("crewai.hooks", EXTRA)
        with self._lock:
            if not self._registered:
                hooks.register_before_tool_call_hook(self.before_tool_call)
                hooks.register_after_tool_call_hook(self.after_tool_call)
                self._registered = True
        return self

    def unregister(self) -> None:
        hooks = require("crewai.hooks", EXTRA)
        with self._lock:
            hooks.unregister_before_tool_call_hook(self.before_tool_call)
            hooks.unregister_after_tool_call_hook(self.after_tool_call)
            self._registered = False

    def __enter__(self) -> SemloopHooks:
        return self.register()

    def __exit__(self, *exc: Any) -> None:
        self.unregister()

    # -- hooks -----------------------------------------------------------------------------------

    def guard(self, context: Any) -> LoopGuard:
        """The guard of a hook context's run (created on first use)."""
        return self.sessions.of(self.key(context))

    def before_tool_call(self, context: Any) -> bool | None:
        with self.fails_open():
            verdict = self.note(self.guard(context).check(context.tool_name, context.tool_input))
            if verdict.action != "stop":
                return None
            self._refused.keep(id(context.tool_input), (context.tool_input, verdict))
            return False  # CrewAI: block the call, the tool does not run
        return None

    def after_tool_call(self, context: Any) -> str | None:
        with self._refused.lock:
            _, refused = self._refused.pop(id(context.tool_input), (None, None))
        text = context.tool_result
        blocked = isinstance(text, str) and text.startswith(BLOCKED)
        if refused is not None and blocked:
            self._end(context, refused, None)  # raises: the run ends here
        if blocked:
            return None  # another hook refused it: the tool did not run, nothing to record
        is_error = isinstance(text, str) and _ERROR.match(text) is not None
        verdict = self.guarded(lambda: self.guard(context).record(context.tool_name, context.tool_input, text,
                                                                  is_error=is_error))
        if verdict is None:
            return None
        if verdict.action == "stop":
            self._end(context, verdict, text)
        if verdict.action == "warn" and verdict.message:
            return verdict.annotate(text if isinstance(text, str) else str(text))
        return None

    # -- helpers ---------------------------------------------------------------------------------

    def _end(self, context: Any, verdict: Verdict, output: Any) -> None:
        """End the run with `verdict`. The stop is lifted on the guard first: the exception ends
        this run, and the next kickoff is the user's next try (the loop memory is kept)."""
        self.last_stop = verdict
        with self.fails_open():
            self.guard(context).resume()
        raise _stop_error()(verdict, output)


_BUILT: dict[str, type] = {}
