"""semloop for the OpenAI Agents SDK (`pip install "semloop-guard[openai-agents]"`): tool guardrails.

    from agents import Agent, Runner
    from semloop.integrations.openai_agents import protect

    agent = protect(Agent(name="coder", tools=[read_file, run_tests]))
    result = await Runner.run(agent, "Find out why the tests fail.")
    print(result.final_output)

Built on the SDK's own per-tool guardrails (`FunctionTool.tool_input_guardrails` /
`tool_output_guardrails`, openai-agents >= 0.3.3) and `Agent.tool_use_behavior`:

* tool input guardrail: a call that continues a loop already warned about to the limit is
  refused without running (`reject_content`, with the reason as the tool result).
* tool output guardrail: the call is recorded with its output; on "warn" the model gets the real
  output with the hint appended (`reject_content` carrying output + hint, so the tool's side
  effects and result are kept); on "stop" the explanation is appended the same way.
* tool use behavior: after a turn in which semloop stopped the run, the run ends there with the
  stop message as `result.final_output` (the SDK's own way to end a run after tool calls), or
  with `LoopStopped` raised when `on_stop="raise"` (or when the agent has a structured
  `output_type`, which a message is not).
* agent hooks (`Agent.hooks`, `on_end`): the run's final text output, the agent's message to the
  user, is recorded as a message step (`LoopGuard.record_message`). With one guard per
  conversation (`key=`), turns that keep asking the user for the same thing, reworded or not, get
  a "conversation" verdict: in `verdicts` and `message_verdict(result.context_wrapper)`; the
  output itself is never changed.

One `LoopGuard` per run by default (runs are told apart by their `RunContextWrapper.usage`, which
the SDK shares with every tool context of the run); pass `key=` to keep one guard per
conversation instead. A run resumed after an interruption (`state = result.to_state()`, approvals,
`Runner.run(agent, state)`) is the same run: the SDK deep-copies its usage into the state, and the
tag semloop leaves on that usage object is copied with it, so the resumed run keeps its guard and
its loop memory. (A state serialized with `to_json()` loses the tag: pass `key=` to span
processes.) At most `max_sessions` guards are kept (`KEPT_SESSIONS`, the least recently used
dropped). Every guardrail fails open: an internal error logs a warning and allows the call.
`agents` itself is imported lazily, only where it is needed.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import json
import re
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from ..config import Config
from ..messages import STOPPED
from ..verdict import LoopStopped, Verdict
from ._base import KEPT_SESSIONS, Extra, Integration, Sessions, require

if TYPE_CHECKING:
    from ..guard import LoopGuard

__all__ = ["LoopStopped", "SemloopGuardrails", "protect"]

EXTRA = Extra("openai-agents", "OpenAI Agents SDK integration", "the `openai-agents` package")
INSTALL_HINT = EXTRA.hint

# what the SDK puts in place of a failed call: its default failure and timeout messages
_SDK_ERROR = re.compile(r"An error occurred while running the tool|Tool '[^'\n]+' timed out after ")


@dataclasses.dataclass
class _Run:
    guard: LoopGuard
    anchor: Any  # the run's `usage` object, the latest one: a resumed run has a (deep) copy of it
    tag: int  # the run's tag (see `_run_tag`): equal for a run and its resumptions
    stop: Verdict | None = None  # the first stop verdict of this run
    said: Verdict | None = None  # the verdict on this run's final message, when not "allow"


_RUN_TAG = "_semloop_run"
_run_tags = itertools.count(1)


def _run_tag(usage: Any) -> int:
    """A number naming the run that `usage` (its `RunContextWrapper.usage`) belongs to. It is
    stored on the usage object itself, so `result.to_state()`, which deep-copies the usage into
    the resumable state, carries it into the resumed run. Not a dataclass field: the SDK's own
    equality and serialization of `Usage` do not see it."""
    tag = getattr(usage, _RUN_TAG, None)
    if tag is None:
        tag = next(_run_tags)
        try:
            setattr(usage, _RUN_TAG, tag)
        except (AttributeError, TypeError):  # a usage object that takes no attributes: one run per object
            return -id(usage)
    return tag


class SemloopGuardrails(Integration):
    """Tool guardrails and a tool use behavior for the OpenAI Agents SDK, one `LoopGuard` per run.

    `config` (and keyword overrides) configure every guard. `protect(agent)` wires everything into a
    copy of an agent; `guard_tool(tool)`, `input_guardrail`, `output_guardrail` and
    `tool_use_behavior(...)` are the parts, for agents and tools you build yourself.

    `key(context_wrapper) -> hashable` keeps one guard per key instead of per run, e.g.
    `key=lambda ctx: ctx.context.conversation_id`: the loop memory then spans the runs of a
    conversation, and a new run (a new user message) lifts a stop; the final message of each run is
    recorded too, so a conversation whose turns keep asking the same thing is flagged
    (`message_verdict`). `on_stop="raise"` ends a stopped
    run with `LoopStopped` instead of a final output. At most `max_sessions` guards are kept (least
    recently used dropped). `guidance=True`: the agents `protect` returns have `semloop.guidance()`
    after their instructions (`instructions(original)` builds them for agents you make yourself).
    """

    WHAT = "guardrail"

    def __init__(self, config: Config | None = None, *, key: Callable[[Any], Hashable] | None = None,
                 on_stop: Literal["final_output", "raise"] = "final_output", max_sessions: int = KEPT_SESSIONS,
                 guidance: bool = False, **overrides: Any) -> None:
        if on_stop not in ("final_output", "raise"):
            raise ValueError(f"on_stop must be 'final_output' or 'raise', got {on_stop!r}")
        super().__init__(config, **overrides)
        self.key = key
        self.on_stop = on_stop
        self.guidance = guidance
        self.max_sessions = max_sessions
        self.runs: Sessions[Hashable, _Run] = Sessions(size=max_sessions)
        self._input_guardrail: Any = None
        self._output_guardrail: Any = None

    # -- guards ---------------------------------------------------------------------------------

    def _key(self, ctx: Any) -> Hashable:
        return self.key(ctx) if self.key is not None else _run_tag(ctx.usage)

    def _run(self, ctx: Any) -> _Run:
        key, anchor = self._key(ctx), ctx.usage
        tag = _run_tag(anchor)
        with self.runs.lock:
            run = self.runs.of(key, lambda _: _Run(self.new_guard(), anchor, tag))
            if run.anchor is not anchor:
                if tag != run.tag:  # a new run of the same conversation (`key=`): the user stepped in
                    run.stop = run.said = None
                    run.guard.resume()
                run.anchor, run.tag = anchor, tag  # else the same run, resumed from `result.to_state()`
        return run

    def guard_for(self, context_wrapper: Any) -> LoopGuard:
        """The guard of the run (or key) that `context_wrapper` belongs to: a `RunContextWrapper`,
        a `ToolContext`, or `result.context_wrapper` after the run."""
        return self._run(context_wrapper).guard

    def stop_verdict(self, context_wrapper: Any) -> Verdict | None:
        """The verdict that stopped this run, or None: `loops.stop_verdict(result.context_wrapper)`
        tells a semloop stop from the model's own final output."""
        run = self.runs.get(self._key(context_wrapper))
        return run.stop if run is not None and run.tag == _run_tag(context_wrapper.usage) else None

    def message_verdict(self, context_wrapper: Any) -> Verdict | None:
        """The verdict on this run's final message when it was not "allow", else None:
        `loops.message_verdict(result.context_wrapper)` is a "conversation" warn when the runs of
        one conversation (`key=`) keep asking the user for the same thing. The output is unchanged."""
        run = self.runs.get(self._key(context_wrapper))
        return run.said if run is not None and run.tag == _run_tag(context_wrapper.usage) else None

    def record_output(self, context_wrapper: Any, output: Any) -> Verdict | None:
        """The agent hooks' `on_end`: record the run's final text output as a message step
        (`LoopGuard.record_message`). A structured output is not a message (None); an empty one
        and semloop's own stop message are not recorded ("allow"). Fails open (None)."""
        with self.fails_open("agent hook", "the output is unchanged"):
            if not isinstance(output, str) or not output.strip():
                return None
            run = self._run(context_wrapper)
            # a run that ended on semloop's stop: its output is ours, and record_message records nothing
            verdict = self.note(run.guard.record_message(output))
            if verdict.action != "allow":
                run.said = verdict
            return verdict
        return None

    # -- guardrail functions: (ToolInputGuardrailData | ToolOutputGuardrailData) -> output -------

    def check_call(self, data: Any) -> Any:
        """The tool input guardrail's function: refuse a call that continues a loop warned about
        to the limit (or any call once the run is stopped)."""
        from agents import ToolGuardrailFunctionOutput

        with self.fails_open():
            ctx = data.context
            run = self._run(ctx)
            verdict = self.note(run.guard.check(ctx.tool_name, _arguments(ctx.tool_arguments)))
            if verdict.action != "stop":
                return ToolGuardrailFunctionOutput.allow()
            run.stop = run.stop or verdict
            return ToolGuardrailFunctionOutput.reject_content(verdict.message or STOPPED, output_info=verdict)
        return ToolGuardrailFunctionOutput.allow()

    def record_call(self, data: Any) -> Any:
        """The tool output guardrail's function: record the call with its output; on "warn" (and
        "stop") the output goes to the model with the message appended."""
        from agents import ToolGuardrailFunctionOutput

        with self.fails_open():
            ctx, output = data.context, data.output
            run = self._run(ctx)
            verdict = self.note(run.guard.record(ctx.tool_name, _arguments(ctx.tool_arguments), _plain(output),
                                                 is_error=_is_sdk_error(output)))
            if verdict.action == "allow" or not verdict.message:
                return ToolGuardrailFunctionOutput.allow()
            if verdict.action == "stop":
                run.stop = run.stop or verdict
            # `reject_content` replaces what the model sees: the real output with the message after it
            return ToolGuardrailFunctionOutput.reject_content(_with_text(output, verdict.message),
                                                              output_info=verdict)
        return ToolGuardrailFunctionOutput.allow()

    @property
    def input_guardrail(self) -> Any:
        """A `ToolInputGuardrail` for `FunctionTool.tool_input_guardrails`."""
        if self._input_guardrail is None:
            require("agents", EXTRA)
            from agents import ToolInputGuardrail

            self._input_guardrail = ToolInputGuardrail(guardrail_function=self.check_call, name="semloop")
        return self._input_guardrail

    @property
    def output_guardrail(self) -> Any:
        """A `ToolOutputGuardrail` for `FunctionTool.tool_output_guardrails`."""
        if self._output_guardrail is None:
            require("agents", EXTRA)
            from agents import ToolOutputGuardrail

            self._output_guardrail = ToolOutputGuardrail(guardrail_function=self.record_call, name="semloop")
        return self._output_guardrail

    # -- tools, tool use behavior, agents ----------------------------------------------------------

    def guard_tool(self, tool: Any) -> Any:
        """A copy of a `FunctionTool` with semloop's guardrails after its own (so yours decide first,
        and a rejection of yours is final). Other tools (hosted tools, ...) are returned as they are:
        the SDK runs guardrails for function tools only."""
        agents = require("agents", EXTRA)
        if not isinstance(tool, agents.FunctionTool):
            return tool
        inputs, outputs = list(tool.tool_input_guardrails or []), list(tool.tool_output_guardrails or [])
        if self.input_guardrail in inputs:
            return tool
        return dataclasses.replace(tool, tool_input_guardrails=[*inputs, self.input_guardrail],
                                   tool_output_guardrails=[*outputs, self.output_guardrail])

    def tool_use_behavior(self, original: Any = "run_llm_again", *, raise_on_stop: bool | None = None) -> Any:
        """An `Agent.tool_use_behavior` that ends the run after a turn in which semloop stopped it:
        with the stop message as the final output, or `LoopStopped` raised (`raise_on_stop`, by
        default `on_stop == "raise"`). Otherwise `original` decides, as the SDK would ("run_llm_again",
        "stop_on_first_tool", a `StopAtTools` dict, or your function)."""
        agents = require("agents", EXTRA)
        raising = self.on_stop == "raise" if raise_on_stop is None else raise_on_stop

        async def semloop_tool_use_behavior(context_wrapper: Any, tool_results: list[Any]) -> Any:
            stop = self.attempt(lambda: self.stop_verdict(context_wrapper))
            if stop is not None:
                if raising:
                    raise LoopStopped(stop)
                return agents.ToolsToFinalOutputResult(is_final_output=True, final_output=stop.message or STOPPED)
            return await _decide(agents, original, context_wrapper, tool_results)

        semloop_tool_use_behavior.__semloop__ = self  # type: ignore[attr-defined]
        return semloop_tool_use_behavior

    def agent_hooks(self, original: Any = None) -> Any:
        """An `Agent.hooks` (`AgentHooks`) whose `on_end` records the final text output as a
        message step (`record_output`), then calls `original`'s hooks (all of them: `original`
        decides everything else, and its `on_end` can already read `message_verdict`)."""
        if getattr(original, "semloop", None) is self:
            return original
        return _hooks_class()(self, original)

    def instructions(self, original: Any = None) -> Any:
        """`Agent.instructions` with `semloop.guidance()` after `original`: a string, or for dynamic
        instructions (a function of the context and the agent, plain or async) a function that
        adds it to what they return."""
        from ..guidance import with_guidance

        language = self.config.language
        if original is None or isinstance(original, str):
            return with_guidance(original, language)
        if getattr(original, "__semloop__", None) is self:
            return original

        async def semloop_instructions(context: Any, agent: Any) -> str:
            text = original(context, agent)
            if inspect.isawaitable(text):
                text = await text
            return str(with_guidance(text, language))

        semloop_instructions.__semloop__ = self  # type: ignore[attr-defined]
        return semloop_instructions

    def protect(self, agent: Any) -> Any:
        """A copy of `agent` under semloop: its function tools guarded, its tool use behavior
        wrapped, its final message recorded (`agent_hooks`), and the same for the agents it hands
        off to (`Agent`s in `handoffs`; wrap the target of a `handoff(...)` object yourself:
        `handoff(loops.protect(target), ...)`).
        With a structured `output_type` a stop raises `LoopStopped` (a message is not that type)."""
        return self._protect(agent, {})

    def _protect(self, agent: Any, done: dict[int, Any]) -> Any:
        agents = require("agents", EXTRA)
        if id(agent) in done:
            return done[id(agent)]
        behavior = agent.tool_use_behavior
        if getattr(behavior, "__semloop__", None) is not self:
            text_output = agent.output_type in (None, str)
            behavior = self.tool_use_behavior(behavior, raise_on_stop=None if text_output else True)
        more = {"instructions": self.instructions(agent.instructions)} if self.guidance else {}
        clone = agent.clone(tools=[self.guard_tool(t) for t in agent.tools], tool_use_behavior=behavior,
                            hooks=self.agent_hooks(agent.hooks), **more)
        done[id(agent)] = clone
        clone.handoffs = [self._protect(h, done) if isinstance(h, agents.Agent) else h for h in agent.handoffs]
        return clone


_HOOKS: list[type] = []


def _hooks_class() -> type:
    """`AgentHooks` that record the final output (`on_end`) and pass every event on to the
    agent's own hooks; built on first use (the SDK is imported lazily)."""
    if not _HOOKS:
        require("agents", EXTRA)
        from agents.lifecycle import AgentHooksBase

        class SemloopAgentHooks(AgentHooksBase):
            def __init__(self, semloop: SemloopGuardrails, original: Any = None) -> None:
                self.semloop, self.original = semloop, original

            async def on_end(self, context: Any, agent: Any, output: Any) -> None:
                self.semloop.record_output(context, output)
                if self.original is not None:
                    await self.original.on_end(context, agent, output)

        def passed_on(name: str) -> Any:
            async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
                if self.original is not None:
                    return await getattr(self.original, name)(*args, **kwargs)
                return None

            method.__name__ = name
            return method

        for name in list(vars(AgentHooksBase)):
            if name.startswith("on_") and name != "on_end":
                setattr(SemloopAgentHooks, name, passed_on(name))
        SemloopAgentHooks.__module__ = __name__
        _HOOKS.append(SemloopAgentHooks)
    return _HOOKS[0]


async def _decide(agents: Any, behavior: Any, context_wrapper: Any, tool_results: list[Any]) -> Any:
    """What the SDK decides for `behavior` (its documented semantics)."""
    result_type = agents.ToolsToFinalOutputResult
    if behavior == "run_llm_again" or not tool_results:
        return result_type(is_final_output=False, final_output=None)
    if behavior == "stop_on_first_tool":
        return result_type(is_final_output=True, final_output=tool_results[0].output)
    if isinstance(behavior, Mapping):
        names = behavior.get("stop_at_tool_names", [])
        for result in tool_results:
            if result.tool.name in names or getattr(result.tool, "qualified_name", None) in names:
                return result_type(is_final_output=True, final_output=result.output)
        return result_type(is_final_output=False, final_output=None)
    decided = behavior(context_wrapper, tool_results)
    return await decided if inspect.isawaitable(decided) else decided


def protect(agent: Any, config: Config | None = None, **options: Any) -> Any:
    """`protect(Agent(...))`: a copy of the agent guarded by a new `SemloopGuardrails`.

    `options` are `SemloopGuardrails` options and `Config` overrides (e.g. `max_warnings=3`). To
    inspect the guards or their verdicts, build a `SemloopGuardrails` and call `.protect(agent)`.
    """
    return SemloopGuardrails(config, **options).protect(agent)


# -- helpers -----------------------------------------------------------------------------------


def _arguments(text: Any) -> Any:
    """The call's JSON arguments as a value (the raw text when they are not JSON)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return text


def _plain(output: Any) -> Any:
    """A tool output as plain data for the guard (pydantic outputs such as `ToolOutputText` dumped)."""
    if isinstance(output, (list, tuple)):
        return [_plain(o) for o in output]
    dump = getattr(output, "model_dump", None)
    if callable(dump) and not isinstance(output, type):
        try:
            return dump(mode="json")
        except Exception:
            return str(output)
    return output


def _is_sdk_error(output: Any) -> bool:
    return isinstance(output, str) and _SDK_ERROR.match(output) is not None


def _is_content(item: Any) -> bool:
    """A structured tool output item (`ToolOutputText` / `ToolOutputImage` / `ToolOutputFileContent`,
    or their dict forms), which the SDK sends as content parts rather than as text."""
    kind = item.get("type") if isinstance(item, Mapping) else getattr(item, "type", None)
    return kind in ("text", "image", "file") and (isinstance(item, Mapping) or hasattr(item, "model_dump"))


def _with_text(output: Any, text: str) -> Any:
    """The output as the model would get it, with `text` after it: strings joined; structured
    content parts + one text part; anything else as the SDK sends it (`str()`) + the text."""
    if output is None or output == "":
        return text
    if isinstance(output, str):
        return f"{output}\n\n{text}"
    items = list(output) if isinstance(output, (list, tuple)) else [output]
    if items and all(_is_content(i) for i in items):
        return [*items, {"type": "text", "text": text}]
    return f"{output}\n\n{text}"
