"""semloop for Strands Agents (`pip install "semloop-guard[strands]"`): a hook provider.

    from strands import Agent
    from semloop.integrations.strands import SemloopHooks

    loops = SemloopHooks()
    agent = Agent(model=model, tools=[read_file, run_tests], hooks=[loops])
    result = agent("Find out why the tests fail.")

Strands' hooks, three of them:

* `BeforeInvocationEvent`: a new invocation gets a fresh `LoopGuard` (pass `guard=` to keep one
  across the invocations of a conversation).
* `BeforeToolCallEvent`: `LoopGuard.check`. A call that continues a loop already warned about to
  the limit is refused: `cancel_tool` carries the reason (Strands puts it into an error tool
  result; the tool does not run), and the event loop is ended.
* `AfterToolCallEvent`: `LoopGuard.record` with the tool's result. On "warn" the model gets the
  real result with the hint as one more text block (`result` is writable); on "stop" the
  explanation is added the same way and the event loop is ended.

Ending the event loop is `agent.cancel(message=..., after_current_tools=True)`: the tools of the
current turn finish, the model is not called again, and the invocation returns with
`stop_reason == "cancelled"` and the stop explanation as its last message. `verdicts` keeps the
last 256 warn / stop verdicts, `last_stop` the latest stop. Every hook fails open: an internal error
logs a warning and the call goes on as if semloop were not there. `strands` itself is imported only
when the hooks are registered.
"""

from __future__ import annotations

from typing import Any

from ..messages import STOPPED
from ..verdict import Verdict
from ._base import Extra, GuardedRuns, require

__all__ = ["SemloopHooks"]

EXTRA = Extra("strands", "Strands Agents integration", "the `strands-agents` package")
INSTALL_HINT = EXTRA.hint


def _result_text(result: Any) -> Any:
    """A Strands ToolResult as the guard sees it: the text of its content blocks joined."""
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, list):
        return result
    texts = [block["text"] for block in content if isinstance(block, dict) and isinstance(block.get("text"), str)]
    if len(texts) == len(content):
        return "\n".join(texts)
    return [block.get("json", block.get("text")) for block in content if isinstance(block, dict)]


class SemloopHooks(GuardedRuns):
    """Loop detection for a Strands agent: `Agent(..., hooks=[SemloopHooks()])` (see the module
    docstring)."""

    WHAT = "strands hook"

    def register_hooks(self, registry: Any, **kwargs: Any) -> None:
        hooks = require("strands.hooks", EXTRA)
        registry.add_callback(hooks.BeforeInvocationEvent, self._start)
        registry.add_callback(hooks.BeforeToolCallEvent, self._before_tool)
        registry.add_callback(hooks.AfterToolCallEvent, self._after_tool)

    # -- hooks --------------------------------------------------------------------------------------

    def _start(self, event: Any) -> None:
        self._new_run()

    def _before_tool(self, event: Any) -> None:
        name, tool_input = event.tool_use.get("name", "?"), event.tool_use.get("input")
        check = self.guarded(lambda: self._run_guard().check(name, tool_input))
        if check is not None and check.action == "stop":
            event.cancel_tool = check.message or STOPPED
            self._end(event.agent, check)

    def _after_tool(self, event: Any) -> None:
        if event.cancel_message is not None:  # refused before it ran (by semloop or another hook)
            return
        name, tool_input = event.tool_use.get("name", "?"), event.tool_use.get("input")
        output = _result_text(event.result)
        failed = event.exception is not None or (isinstance(event.result, dict)
                                                 and event.result.get("status") == "error")
        verdict = self.guarded(lambda: self._run_guard().record(name, tool_input, output, is_error=failed))
        if verdict is None or verdict.action == "allow" or not verdict.message:
            return
        if isinstance(event.result, dict) and isinstance(event.result.get("content"), list):
            event.result = {**event.result, "content": [*event.result["content"], {"text": verdict.message}]}
        if verdict.action == "stop":
            self._end(event.agent, verdict)

    # -- helpers ------------------------------------------------------------------------------------

    def _end(self, agent: Any, verdict: Verdict) -> None:
        with self.fails_open(consequence="the run goes on"):
            agent.cancel(message=verdict.message, after_current_tools=True)
