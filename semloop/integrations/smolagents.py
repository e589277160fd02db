"""semloop for smolagents (`pip install "semloop-guard[smolagents]"`): guarded tools and a step callback.

    from smolagents import ToolCallingAgent
    from semloop.integrations.smolagents import SemloopSmolagents

    loops = SemloopSmolagents()
    agent = loops.protect(ToolCallingAgent(tools=[read_file, run_tests], model=model))
    agent.run("Find out why the tests fail.")

`protect` wraps each tool of the agent (not `final_answer`, not managed agents) and registers a
step callback:

* the tool wrapper: before the tool runs, `LoopGuard.check`. A call that continues a loop already
  warned about to the limit is refused without running: the model gets the reason as the tool's
  output. Otherwise the tool runs and `LoopGuard.record` sees its output: on "warn" the model gets
  the real output with the hint appended, on "stop" with the explanation appended. A tool that
  raises is recorded as an error, and the exception goes on to smolagents unchanged.
* the step callback (`step_callbacks`, after each action step): once semloop stopped the run, it
  calls `agent.interrupt()`, smolagents' own way to end a run. `agent.run` then raises
  smolagents' `AgentError("Agent interrupted.")`; `loops.last_stop` holds the stop verdict, and
  the agent's memory keeps every step.

One `LoopGuard` per run: the guard is dropped when a run gives its final answer or is stopped.
Pass `guard=` to keep one guard across runs instead. Every check fails open: an internal error
logs a warning and the tool runs as if semloop were not there. `smolagents` itself is imported
only by `protect`.
"""

from __future__ import annotations

import functools
from typing import Any

from ..messages import STOPPED
from ..verdict import Verdict
from ._base import Extra, GuardedRuns, error_text, require

__all__ = ["SemloopSmolagents"]

EXTRA = Extra("smolagents", "smolagents integration", "the `smolagents` package")
INSTALL_HINT = EXTRA.hint

_WRAPPED = "_semloop_wrapped"


def _call_input(args: tuple, kwargs: dict) -> Any:
    """A tool call's arguments as the guard sees them: the keyword arguments smolagents passes."""
    if not args:
        return dict(kwargs)
    if len(args) == 1 and not kwargs:
        return args[0]
    return {"args": list(args), **kwargs}


class SemloopSmolagents(GuardedRuns):
    """Loop detection for smolagents agents (see the module docstring). After runs, `verdicts`
    holds the last 256 warn / stop verdicts and `last_stop` the latest stop."""

    WHAT = "smolagents tool wrapper"
    _stop: Verdict | None = None

    def protect(self, agent: Any) -> Any:
        """Guard `agent`'s tools and end its run once semloop stops it; returns `agent`."""
        smolagents = require("smolagents", EXTRA)
        for name, tool in agent.tools.items():
            if name != "final_answer" and not getattr(tool, _WRAPPED, False):
                self._wrap(name, tool)
        agent.step_callbacks.register(smolagents.ActionStep, self._after_step)
        agent.step_callbacks.register(smolagents.FinalAnswerStep, self._after_run)
        return agent

    # -- the tool wrapper -------------------------------------------------------------------------

    def _wrap(self, name: str, tool: Any) -> None:
        forward = tool.forward

        @functools.wraps(forward)
        def guarded_forward(*args: Any, **kwargs: Any) -> Any:
            guard = self._run_guard()
            tool_input = _call_input(args, kwargs)
            check = self.guarded(lambda: guard.check(name, tool_input))
            if check is not None and check.action == "stop":
                self._stopped(check)
                return check.message or STOPPED
            try:
                output = forward(*args, **kwargs)
            except Exception as exc:
                error = error_text(exc)
                failed = self.guarded(lambda: guard.record(name, tool_input, error, is_error=True))
                if failed is not None and failed.action == "stop":
                    self._stopped(failed)
                raise
            verdict = self.guarded(lambda: guard.record(name, tool_input, output))
            if verdict is None or verdict.action == "allow" or not verdict.message:
                return output
            if verdict.action == "stop":
                self._stopped(verdict)
                return f"{output}\n\n{verdict.message}" if isinstance(output, str) else output
            return verdict.annotate(output) if isinstance(output, str) else output

        tool.forward = guarded_forward
        setattr(tool, _WRAPPED, True)

    # -- step callbacks -----------------------------------------------------------------------------

    def _after_step(self, step: Any, agent: Any = None) -> None:
        if self._stop is not None and agent is not None:
            agent.interrupt()  # the run loop raises AgentError("Agent interrupted.") before the next step
            self._end_run()

    def _after_run(self, step: Any, agent: Any = None) -> None:
        self._end_run()

    def _end_run(self) -> None:
        self._stop = None
        self._new_run()

    # -- helpers ------------------------------------------------------------------------------------

    def _stopped(self, verdict: Verdict) -> None:
        self._stop = self._stop or verdict
