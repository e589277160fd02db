"""Replaying recorded traces through a fresh guard: the engine behind `semloop scan` and the
benchmark. Each trace gets its own `LoopGuard`, fed every step in order with `record`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .config import Config
from .embeddings import Embedder
from .guard import LoopGuard
from .traces import Trace
from .verdict import Verdict


@dataclass(frozen=True)
class ScanResult:
    id: str
    steps: int
    events: tuple[Verdict, ...]  # the non-allow verdicts, in step order

    @property
    def first_warn(self) -> int | None:
        return next((v.step for v in self.events if v.action == "warn"), None)

    @property
    def first_stop(self) -> int | None:
        return next((v.step for v in self.events if v.action == "stop"), None)

    @property
    def first_flag(self) -> int | None:
        return self.events[0].step if self.events else None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "steps": self.steps, "first_warn": self.first_warn, "first_stop": self.first_stop,
                "events": [{"step": v.step, "action": v.action, "signals": [s.to_dict() for s in v.signals],
                            "message": v.message} for v in self.events]}


def scan_trace(trace: Trace, config: Config | None = None, embedder: Embedder | None = None) -> ScanResult:
    guard = LoopGuard(config, embedder=embedder)
    events = []
    for step in trace.steps:
        verdict = guard.record(step.tool, step.input, step.output, step.is_error)
        if verdict.action != "allow":
            events.append(verdict)
    return ScanResult(trace.id, len(trace.steps), tuple(events))
