"""semloop for PydanticAI (`pip install "semloop-guard[pydantic-ai]"`): a capability.

    from pydantic_ai import Agent
    from semloop.integrations.pydantic_ai import SemloopCapability

    agent = Agent("anthropic:claude-sonnet-4-5", tools=[read_file], capabilities=[SemloopCapability()])
    result = agent.run_sync("Why does the config fail to load?")

PydanticAI 2.x capabilities are its hooks API; semloop uses two of them:

* `wrap_tool_execute`: before a tool runs, `LoopGuard.check`. A call that continues a loop
  already warned about to the limit is refused without running (`ToolFailed`: the model gets a
  failed tool result with the reason). Otherwise the tool runs and `LoopGuard.record` sees its
  result: on "warn" the model gets the real result with the hint appended; on "stop" with the
  explanation appended. A tool's `ModelRetry` / exception is recorded as an error and goes on
  unchanged.
* `wrap_model_request`: once the run is stopped, the model is not called again; the run ends
  with the stop explanation as its text output (`SkipModelRequest`, a `ModelResponse` whose
  `model_name` is "semloop"). With a structured `output_type` (a text answer would not be valid), or
  `on_stop="raise"`, `LoopStopped` is raised instead.

One `LoopGuard` per run (`for_run` gives each run its own copy of the capability), or pass
`guard=` to keep one guard across the runs of a conversation: a new run then lifts a stop (the
user wrote again) and the loop memory is kept. Fails open: an internal error logs a warning and
the tool runs as if semloop were not there.

`pydantic_ai` is imported lazily: `SemloopCapability` is built on first access.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Hashable
from typing import Any, Literal

from ..config import Config
from ..messages import STOPPED, ended
from ..verdict import LoopStopped, Verdict
from ._base import Extra, GuardedRuns, Integration, error_text, require

__all__ = ["SemloopCapability", "LoopStopped"]  # noqa: F822 (built on first access: `__getattr__`)


EXTRA = Extra("pydantic-ai", "PydanticAI integration", "PydanticAI 2.x (capabilities)")
INSTALL_HINT = EXTRA.hint
MODEL_NAME = "semloop"  # `result.response.model_name` when semloop ended the run


def _text_is_output(parameters: Any) -> bool:
    """Whether a plain text response ends this run as its output (`output_type` str, or a union
    with str), rather than being parsed into a structured output."""
    return bool(parameters.allow_text_output) and getattr(parameters, "output_object", None) is None


def _with_note(result: Any, note: str) -> Any:
    """The tool's result as the model should see it, with `note` after it: text joined; a
    `ToolReturn` keeps its metadata and content, with the note after its return value; a dict
    gets a "semloop" key; anything else becomes its JSON text + the note."""
    from pydantic_ai.messages import ToolReturn

    if isinstance(result, ToolReturn):
        return dataclasses.replace(result, return_value=_with_note(result.return_value, note))
    return Verdict("warn", 0, message=note).annotate(_plain(result) if _is_model(result) else result)


def _is_model(value: Any) -> bool:
    return callable(getattr(value, "model_dump", None)) and not isinstance(value, type)


def _plain(value: Any) -> Any:
    """A tool result as plain data for the guard (pydantic models and dataclasses dumped)."""
    from pydantic_ai.messages import ToolReturn

    if isinstance(value, ToolReturn):
        return _plain(value.return_value)
    if _is_model(value):
        try:
            return value.model_dump(mode="json")
        except Exception:
            return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _retry_with_note(exc: BaseException, note: str) -> BaseException | None:
    """A tool's `ModelRetry` (the SDK's `ToolRetryError`) with `note` after its message, so the
    model sees the error and the hint together; None for other exceptions (they end the run)."""
    retry = getattr(exc, "tool_retry", None)
    if retry is None or not isinstance(getattr(retry, "content", None), str):
        return None
    return type(exc)(dataclasses.replace(retry, content=f"{retry.content}\n\n{note}"))


def _error_text(exc: BaseException) -> str:
    retry = getattr(exc, "tool_retry", None) or getattr(exc, "tool_failed", None)
    content = getattr(retry, "content", None)
    if content is not None:
        return content if isinstance(content, str) else str(content)
    return error_text(exc)


def _build() -> type:
    capability: Any = require("pydantic_ai.capabilities", EXTRA).AbstractCapability[Any]
    from pydantic_ai.exceptions import SkipModelRequest, ToolFailed
    from pydantic_ai.messages import ModelResponse, TextPart

    @dataclasses.dataclass
    class SemloopCapability(GuardedRuns, capability):
        """Loop detection for a PydanticAI agent: `Agent(..., capabilities=[SemloopCapability()])`.

        `config` (a `semloop.Config`) configures each run's guard; `guard` keeps one `LoopGuard`
        across runs instead (one per conversation: build one capability per conversation, or pass
        `capabilities=[...]` to `agent.run`). `on_stop="raise"` ends a stopped run with
        `LoopStopped` instead of the explanation as its output. `guidance=True` adds
        `semloop.guidance()` to the agent's instructions. After runs, `verdicts` holds the
        last 256 warn / stop verdicts and `last_stop` the latest stop.
        """

        WHAT = "capability"

        config: Config | None = None  # type: ignore[assignment]
        _: dataclasses.KW_ONLY
        guard: Any = None
        on_stop: Literal["final_output", "raise"] = "final_output"
        guidance: bool = False
        id: str | None = None

        def __post_init__(self) -> None:
            if self.on_stop not in ("final_output", "raise"):
                raise ValueError(f"on_stop must be 'final_output' or 'raise', got {self.on_stop!r}")
            GuardedRuns.__init__(self, self.config, guard=self.guard)
            self._root = self  # the capability given to the agent: `for_run` copies keep its verdicts
            self._stop: Verdict | None = None

        def get_instructions(self) -> Any:
            if not self.guidance:
                return None
            from ..guidance import guidance

            return guidance((self.config or Config()).language)

        @classmethod
        def get_serialization_name(cls) -> str | None:
            return None  # holds a live guard: not built from agent specs

        async def for_run(self, ctx: Any) -> Any:
            run = copy.copy(self)  # per-run state on a shallow copy; verdicts go to the root
            run._root, run._stop = self, None
            if self.guard is None:
                run._guard = self.new_guard()
            elif self.guard.stopped:
                self.guard.resume()  # a new run of the conversation: the user stepped in
            return run

        # -- hooks ----------------------------------------------------------------------------------

        async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            guard = self._run_guard()
            name = call.tool_name
            check = self.guarded(lambda: guard.check(name, args))
            if check is not None and check.action == "stop":
                self._stopped(check)
                raise ToolFailed(check.message or STOPPED)
            try:
                result = await handler(args)
            except Exception as exc:
                raised, error = exc, _error_text(exc)
                failed = self.guarded(lambda: guard.record(name, args, error, is_error=True))
                if failed is None or failed.action == "allow" or not failed.message:
                    raise
                if failed.action == "stop":
                    self._stopped(failed)
                hint = failed.message
                retried = self.attempt(lambda: _retry_with_note(raised, hint))
                if retried is None:
                    raise
                raise retried from exc
            verdict = self.guarded(lambda: guard.record(name, args, _plain(result)))
            if verdict is None or verdict.action == "allow" or not verdict.message:
                return result
            if verdict.action == "stop":
                self._stopped(verdict)
            note = verdict.message
            annotated = self.attempt(lambda: _with_note(result, note))
            return result if annotated is None else annotated

        async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
            stop = self._stop
            if stop is None:
                return await handler(request_context)
            if self.on_stop == "raise" or not _text_is_output(request_context.model_request_parameters):
                raise LoopStopped(stop)
            text = ended(stop.message, self._run_guard().config.language)
            raise SkipModelRequest(ModelResponse(parts=[TextPart(content=text)], model_name=MODEL_NAME))

        # -- helpers --------------------------------------------------------------------------------

        def note(self, verdict: Verdict, key: Hashable | None = None) -> Verdict:
            return Integration.note(self._root, verdict, key)  # a run's verdicts are the capability's

        def _stopped(self, verdict: Verdict) -> None:
            self._stop = self._stop or verdict

    SemloopCapability.__module__ = __name__
    return SemloopCapability


_BUILT: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    if name == "SemloopCapability":
        if name not in _BUILT:
            _BUILT[name] = _build()
        return _BUILT[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
