"""Signals → action. First evidence warns (soft block); warnings that did not change the
behaviour escalate to a stop (hard block); steady progress forgives earlier warnings."""

from __future__ import annotations

from .config import Config
from .state import SessionState
from .verdict import Action, Signal, SignalKind

# Order in which signal kinds explain a verdict (most specific first): the layered detector's kinds.
KIND_ORDER = tuple(k.value for k in SignalKind)[:7]


STOP_GATES = ("rules", "same_loop", "agree", "same_loop+agree")
"""What the hard block needs besides `max_warnings` earlier warnings (`Config.stop_gate`):
"rules" nothing more; "same_loop" the flag continues a loop already warned about (its evidence
shares a step with the previous flag's, or the call itself was flagged before: `continues_loop`);
"agree" two signal kinds agree on the step; "same_loop+agree" both."""


def continues_loop(state: SessionState, signals: list[Signal], norm_sig: str) -> bool:
    """Whether this flag is about the loop the previous one warned about: its evidence shares a step
    with the previous flag's (`state.last_related`), or the very call was flagged before. Warnings
    about three unrelated moments of a long run did not go unheeded: each was about something else."""
    if not state.flagged_sigs:
        return True  # no flag before this one (`max_warnings` 0): nothing else it could be about
    related = {i for s in signals for i in s.related_steps}
    return bool(related & set(state.last_related)) or norm_sig in state.flagged_sigs


def stop_allowed(state: SessionState, signals: list[Signal], norm_sig: str, gate: str) -> bool:
    """The second view the hard block needs (`STOP_GATES`)."""
    same = gate not in ("same_loop", "same_loop+agree") or continues_loop(state, signals, norm_sig)
    agree = gate not in ("agree", "same_loop+agree") or len({s.kind for s in signals}) >= 2
    return same and agree


def sure_of(state: SessionState, signals: list[Signal], norm_sig: str) -> bool:
    """Whether a flag may stop after one warning when the second view is sure of it
    (`Config.sure_score`): it continues the loop just warned about (`continues_loop`), on direct
    evidence — a repeat, a cycle, the same error — not on the session-wide cluster count alone
    (a status polled until it converges returns to one call, its answer changing now and then:
    that gets its two warnings)."""
    return continues_loop(state, signals, norm_sig) and any(s.kind != SignalKind.CLUSTER for s in signals)


def warnings_before_stop(cfg: Config, sure: bool) -> int:
    """Warnings a flag must come after to stop the run: `max_warnings`, or one for a `sure` flag
    (the second view reached `Config.sure_score` on a flag continuing the loop warned about)."""
    return min(cfg.max_warnings, 1) if sure else cfg.max_warnings


def escalate(state: SessionState, signals: list[Signal], made_progress: bool, cfg: Config,
             may_stop: bool = True, shown: bool = True, sure: bool = False) -> Action:
    """Advance the escalation counters in `state` for one recorded step; return the action. A flag
    past `warnings_before_stop` stops only when `may_stop` (the stop gate's second view, `stop_allowed`);
    otherwise it warns again and the next flag may stop. A flag not `shown` (below the gate's
    `warn_score`) is allowed; it counts towards the stop, but never as the last warning before it:
    a run is stopped only after the user saw a warning."""
    if state.stopped:
        return "stop"
    if signals and not shown:
        state.warnings = max(state.warnings, min(state.warnings + 1, cfg.max_warnings - 1))
        state.clean_streak = 0
        return "allow"
    if signals:
        state.warnings += 1
        state.clean_streak = 0
        if state.warnings > warnings_before_stop(cfg, sure):
            if not may_stop:
                state.warnings = min(state.warnings, cfg.max_warnings)
                return "warn"
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
