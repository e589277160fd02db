"""Signals → action. First evidence warns (soft block); warnings that did not change the
behaviour escalate to a stop (hard block); steady progress forgives earlier warnings."""

from __future__ import annotations

from .config import Config
from .state import SessionState
from .verdict import Action, Signal

# Order in which signal kinds explain a verdict (most specific first).
KIND_ORDER = ("exact", "normalized", "paraphrase", "cycle", "same_result", "conversation", "cluster")


def escalate(state: SessionState, signals: list[Signal], made_progress: bool, cfg: Config) -> Action:
    """Advance the escalation counters in `state` for one recorded step; return the action."""
    if state.stopped:
        return "stop"
    if signals:
        state.warnings += 1
        state.clean_streak = 0
        if state.warnings > cfg.max_warnings:
            state.stopped = True
            return "stop"
        return "warn"
    if made_progress:
        state.clean_streak += 1
        if state.clean_streak >= cfg.recovery_steps and state.warnings:
            state.warnings -= 1
            state.clean_streak = 0
    return "allow"


def ordered(signals: list[Signal]) -> list[Signal]:
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    return sorted(signals, key=lambda s: rank.get(s.kind, len(rank)))
