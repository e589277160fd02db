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
from typing import Any, Literal

from ..config import Config, fail_open
from ..messages import install_hint
from ..verdict import LoopStopped, Verdict
from . import keep_verdict

__all__ = ["SemloopCapability", "LoopStopped"]


INSTALL_HINT = ("semloop's PydanticAI integration needs PydanticAI 2.x (capabilities): "
                f"{install_hint('pydantic-ai')}")
MODEL_NAME = "semloop"  # `result.response.model_name` when semloop ended the run
ENDED_NOTE = {"en": "The run ends here; the work done so far is kept.",
              "zh": "运行在此结束；之前完成的工作均已保留。"}


def _require() -> Any:
    try:
        import pydantic_ai.capabilities as capabilities
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return capabilities


def _text_is_output(parameters: Any) -> bool:
    """Whether a plain text response ends this run as its output (`output_type` str, or a union
    with str), rather than being parsed into a structured output."""
    return bool(parameters.allow_text_output) and getattr(parameters, "output_object", None) is None


def _final_text(verdict: Verdict, language: str) -> str:
    """The run's last word: the stop explanation, saying that the run ends here."""
    ended = ENDED_NOTE.get(language, ENDED_NOTE["en"])
    message = verdict.message or "semloop stopped the run."
    return message if ended in message else f"{message} {ended}"


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
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _build() -> type:
    capabilities = _require()
    from pydantic_ai.exceptions import SkipModelRequest, ToolFailed
    from pydantic_ai.messages import ModelResponse, TextPart

    from ..guard import LoopGuard

    @dataclasses.dataclass
    class SemloopCapability(capabilities.AbstractCapability[Any]):
        """Loop detection for a PydanticAI agent: `Agent(..., capabilities=[SemloopCapability()])`.

        `config` (a `semloop.Config`) configures each run's guard; `guard` keeps one `LoopGuard`
        across runs instead (one per conversation: build one capability per conversation, or pass
        `capabilities=[...]` to `agent.run`). `on_stop="raise"` ends a stopped run with
        `LoopStopped` instead of the explanation as its output. `guidance=True` adds
        `semloop.guidance()` to the agent's instructions. After runs, `verdicts` holds the
        last 256 warn / stop verdicts and `last_stop` the latest stop.
        """

        config: Config | None = None
        _: dataclasses.KW_ONLY
        guard: Any = None
        on_stop: Literal["final_output", "raise"] = "final_output"
        guidance: bool = False
        id: str | None = None

        def __post_init__(self) -> None:
            if self.on_stop not in ("final_output", "raise"):
                raise ValueError(f"on_stop must be 'final_output' or 'raise', got {self.on_stop!r}")
            self.verdicts: list[Verdict] = []
            self.last_stop: Verdict | None = None
            self._root = self
            self._guard: Any = self.guard
            self._stop: Verdict | None = None

        def get_instructions(self) -> Any:
            if not self.guidance:
                return None
            from ..guidance import guidance

            config = self.config or (self.guard.config if self.guard is not None else Config())
            return guidance(config.language)

        @classmethod
        def get_serialization_name(cls) -> str | None:
            return None  # holds a live guard: not built from agent specs

        async def for_run(self, ctx: Any) -> Any:
            run = copy.copy(self)  # per-run state on a shallow copy; verdicts go to the root
            run._root, run._stop = self, None
            if self.guard is None:
                run._guard = LoopGuard(self.config)
            elif self.guard.stopped:
                self.guard.state.resume()  # a new run of the conversation: the user stepped in
            return run

        # -- hooks ----------------------------------------------------------------------------------

        async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            guard = self._run_guard()
            name = call.tool_name
            check = self._guarded(lambda: guard.check(name, args), note=True)
            if check is not None and check.action == "stop":
                self._stopped(check)
                raise ToolFailed(check.message or "semloop stopped the run.")
            try:
                result = await handler(args)
            except Exception as exc:
                failed = self._guarded(lambda: guard.record(name, args, _error_text(exc), is_error=True), note=True)
                if failed is None or failed.action == "allow" or not failed.message:
                    raise
                if failed.action == "stop":
                    self._stopped(failed)
                retried = self._guarded(lambda: _retry_with_note(exc, failed.message))
                if retried is None:
                    raise
                raise retried from exc
            verdict = self._guarded(lambda: guard.record(name, args, _plain(result)), note=True)
            if verdict is None or verdict.action == "allow" or not verdict.message:
                return result
            if verdict.action == "stop":
                self._stopped(verdict)
            annotated = self._guarded(lambda: _with_note(result, verdict.message))
            return result if annotated is None else annotated

        async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
            stop = self._stop
            if stop is None:
                return await handler(request_context)
            if self.on_stop == "raise" or not _text_is_output(request_context.model_request_parameters):
                raise LoopStopped(stop)
            text = _final_text(stop, self._run_guard().config.language)
            raise SkipModelRequest(ModelResponse(parts=[TextPart(content=text)], model_name=MODEL_NAME))

        # -- helpers --------------------------------------------------------------------------------

        def _run_guard(self) -> Any:
            if self._guard is None:  # used without for_run (e.g. hooks called directly)
                self._guard = LoopGuard(self.config)
            return self._guard

        def _stopped(self, verdict: Verdict) -> None:
            self._stop = self._stop or verdict
            self._root.last_stop = verdict

        def _guarded(self, fn: Any, note: bool = False) -> Any:
            try:
                value = fn()
            except Exception as exc:
                fail_open(self.config or Config(), exc, "capability")
                return None
            if note and value.action != "allow":
                keep_verdict(self._root.verdicts, value)
            return value

    SemloopCapability.__module__ = __name__
    return SemloopCapability


_BUILT: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    if name == "SemloopCapability":
        if name not in _BUILT:
            _BUILT[name] = _build()
        return _BUILT[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
