"""Plain, frozen result objects: what a signal found and what the guard decided."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

Action = Literal["allow", "warn", "stop"]


class SignalKind(str, Enum):
    """Every kind a `Signal` can have, most specific first (the order explains a verdict:
    `policy.ordered`). The members are strings: `signal.kind == "exact"` holds, and a `Signal`
    carries the plain value (`SignalKind.EXACT.value`), so verdicts serialize as before."""

    EXACT = "exact"  # the very same call, the same result
    NORMALIZED = "normalized"  # the same call up to spacing, case, quoting, commentary
    PARAPHRASE = "paraphrase"  # a reworded call, the same content (or the same facts)
    CYCLE = "cycle"  # A-B-A-B / A-B-C-A-B-C with unchanged results
    SAME_RESULT = "same_result"  # varied attempts, the same error
    CONVERSATION = "conversation"  # the same ask again, no work between
    CLUSTER = "cluster"  # a session-wide group of similar calls without new results
    # baselines (benchmarks)
    COUNT = "count"
    OPENHANDS = "openhands"
    GEMINI_CLI = "gemini-cli"
    ROO_CODE = "roo-code"
    CREWAI = "crewai"

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Signal:
    """One piece of evidence. `related_steps` are 0-based indexes of the earlier steps matched."""

    kind: str  # a `SignalKind` value
    score: float  # similarity (or 1.0 for exact matches) behind the evidence
    related_steps: tuple[int, ...]
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "score": round(float(self.score), 4), "related_steps": list(self.related_steps)}


@dataclass(frozen=True)
class Verdict:
    """The guard's decision for one step: "allow", "warn" (soft block) or "stop" (hard block)."""

    action: Action
    step: int
    signals: tuple[Signal, ...] = ()
    message: str | None = None
    error: str | None = field(default=None, compare=False)  # set when the guard failed open

    @property
    def allowed(self) -> bool:
        return self.action != "stop"

    def annotate(self, output: Any) -> Any:
        """The original output, unchanged on allow/stop, with the hint appended on warn.

        str → text + hint; list (e.g. Anthropic content blocks) → list + a text block;
        dict → a copy with a "semloop" key; anything else → its text + hint.
        """
        if self.action != "warn" or not self.message:
            return output
        if output is None:
            return self.message
        if isinstance(output, str):
            return f"{output}\n\n{self.message}"
        if isinstance(output, list):
            return [*output, {"type": "text", "text": self.message}]
        if isinstance(output, dict):
            return {**output, "semloop": self.message}
        try:
            text = json.dumps(output, ensure_ascii=False, default=str)
        except Exception:
            text = str(output)
        return f"{text}\n\n{self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "action": self.action, "signals": [s.to_dict() for s in self.signals],
                "message": self.message}




class LoopStopped(RuntimeError):
    """Raised by integrations that end a run by exception (OpenAI Agents SDK with
    `on_stop="raise"`, LangChain's `guard_tool`): `message` is the explanation for the user,
    `verdict` the stop verdict, `output` what the last tool returned (None if it did not run)."""

    def __init__(self, verdict: Verdict, output: Any = None) -> None:
        self.verdict = verdict
        self.message = verdict.message or "semloop stopped this run."
        self.output = output
        super().__init__(self.message)


class FlaggedSteps:
    """Where a replayed trace was first flagged, for a result whose `events` are its non-allow
    verdicts in step order (`scan.ScanResult`, `report.TraceReport`)."""

    events: tuple[Verdict, ...]

    @property
    def first_warn(self) -> int | None:
        return next((v.step for v in self.events if v.action == "warn"), None)

    @property
    def first_stop(self) -> int | None:
        return next((v.step for v in self.events if v.action == "stop"), None)

    @property
    def first_flag(self) -> int | None:
        return self.events[0].step if self.events else None
