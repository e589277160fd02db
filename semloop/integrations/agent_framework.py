"""semloop for Microsoft Agent Framework (`pip install "semloop-guard[agent-framework]"`): function middleware.

    from agent_framework import Agent
    from semloop.integrations.agent_framework import SemloopMiddleware

    loops = SemloopMiddleware()
    agent = Agent(client=client, tools=[read_file, run_tests], middleware=[loops])
    response = await agent.run("Find out why the tests fail.")

Agent Framework's function middleware wraps every tool call of the function-invocation loop:

* before the tool runs, `LoopGuard.check`. A call that continues a loop already warned about to
  the limit is refused: semloop sets `context.result` to the reason without calling `call_next`
  (the tool does not run) and raises `MiddlewareTermination`, which ends the loop.
* otherwise the tool runs (`call_next`) and `LoopGuard.record` sees its result: on "warn" the
  model gets the real result with the hint appended; on "stop" the explanation is appended and
  `MiddlewareTermination` ends the loop, so the model is not called again. A tool that raises is
  recorded as an error and the exception goes on to the framework, which turns it into an error
  result as usual.

One `LoopGuard` per agent run (runs are told apart by the run's live tool list,
`context.tools`, one object per run). Pass `guard=` to keep one guard across the runs of a
conversation instead. `verdicts` keeps the last 256
warn / stop verdicts, `last_stop` the latest stop. Every check fails open: an internal error logs a
warning and the call goes on as if semloop were not there. `agent_framework` is imported when a
`SemloopMiddleware` is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config import Config
from ..guard import LoopGuard
from ..messages import STOPPED
from ._base import Extra, GuardedRuns, Sessions, error_text, require

if TYPE_CHECKING:
    from agent_framework import FunctionInvocationContext

__all__ = ["SemloopMiddleware"]

EXTRA = Extra("agent-framework", "Microsoft Agent Framework integration", "the `agent-framework-core` package")
INSTALL_HINT = EXTRA.hint


def _arguments(arguments: Any) -> Any:
    dump = getattr(arguments, "model_dump", None)
    return dump(mode="json") if callable(dump) else dict(arguments or {})


def _result_text(result: Any) -> Any:
    """A tool result as the guard sees it: the text of its Content items, or the value itself."""
    if isinstance(result, list) and result and all(hasattr(item, "type") for item in result):
        texts = [getattr(item, "text", None) or getattr(item, "result", None) for item in result]
        if all(isinstance(text, str) for text in texts):
            return "\n".join(str(text) for text in texts)
    return result


class SemloopMiddleware(GuardedRuns):
    """Loop detection as Agent Framework function middleware (see the module docstring): a
    callable whose first parameter is a `FunctionInvocationContext`, which is how the framework
    tells function middleware from agent and chat middleware."""

    WHAT = "agent framework middleware"

    def __init__(self, config: Config | None = None, *, guard: LoopGuard | None = None) -> None:
        super().__init__(config, guard=guard)
        self._terminate = require("agent_framework", EXTRA).MiddlewareTermination
        self._guards: Sessions[int, tuple[Any, LoopGuard]] = Sessions()  # id(run) → (run, its guard)

    async def __call__(self, context: FunctionInvocationContext, call_next: Any) -> None:
        guard = self._guard_for(context)
        name = context.function.name
        try:
            args = _arguments(context.arguments)
        except Exception:
            args = context.arguments
        check = self.guarded(lambda: guard.check(name, args))
        if check is not None and check.action == "stop":
            context.result = check.message or STOPPED
            raise self._terminate(context.result, result=context.result)
        try:
            await call_next()
        except Exception as exc:
            error = error_text(exc)
            self.guarded(lambda: guard.record(name, args, error, is_error=True))
            raise
        output = _result_text(context.result)
        verdict = self.guarded(lambda: guard.record(name, args, output))
        if verdict is None or verdict.action == "allow" or not verdict.message:
            return
        if verdict.action == "warn":
            context.result = verdict.annotate(output) if isinstance(output, str) else context.result
            return
        context.result = f"{output}\n\n{verdict.message}" if isinstance(output, str) else context.result
        raise self._terminate(verdict.message, result=context.result)

    def _guard_for(self, context: Any) -> LoopGuard:
        if self.guard is not None:
            return self.guard
        # the run's live tool list is one object per agent run, shared by all its tool calls
        run = getattr(context, "tools", None)
        if run is None:
            run = getattr(context, "session", None)
        # (the entry holds the run, which keeps its id from being reused while the guard is kept)
        return self._guards.of(id(run), lambda key: (run, self.new_guard()))[1]
