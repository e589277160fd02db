"""What a hint shows the model besides "this repeats": the earlier step that already returned the
same thing and an excerpt of what it returned, what the other side of a conversation already
answered, and what an error class implies for the next attempt.

Everything quoted comes from the session's stored steps (`StepRecord.result_excerpt`): a bounded
head of the result, passed through `redact.redact_text` before it is remembered, so a hint never
echoes what the store would not keep. A step is cited only when it is one of the verdict's
related steps, is earlier, and really matched this one: the same step with the same result
(`same_action.same_step`) for a repeated call or cycle, the same error class for varied attempts
that fail alike, and for a repeated message the latest reply to one of the messages it repeats.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import messages, same_action
from .config import Config
from .redact import redact_text
from .state import SessionState, StepRecord
from .verdict import Signal


def result_excerpt(text: str, limit: int) -> str:
    """The head of a result on one line, secrets replaced, at most `limit` characters (0: none).
    Redacted before it is cut, so a secret that the cut would break is still recognized whole."""
    if limit <= 0 or not text:
        return ""
    head = redact_text(" ".join(text[:limit * 4 + 2000].split())).replace("`", "'")
    return head if len(head) <= limit else head[:limit - 1].rstrip() + "…"


def cite(state: SessionState, step: StepRecord, found: Sequence[Signal], cfg: Config) -> tuple[str, StepRecord] | None:
    """(the "evidence_*" template, the earlier step it cites) for this verdict's evidence, or None."""
    if not found or cfg.hint_excerpt_chars <= 0:
        return None
    related = sorted({i for s in found for i in s.related_steps if i < step.index})
    window = {prev.index: prev for prev in state.window if prev.index in related}
    if found[0].kind == "conversation":
        replies = [window[i] for i in reversed(related) if i in window and window[i].is_message]
        return ("evidence_answer", replies[0]) if replies else None
    kinds = {s.kind for s in found}
    for index in related:  # the earliest first: where the fact was established
        prev = window.get(index)
        if prev is None or prev.is_message:
            continue
        if same_action.same_step(step, prev, cfg) is not None:
            return ("evidence_failed" if step.is_error else "evidence_result"), prev
        if ("same_result" in kinds and step.is_error and prev.is_error and step.error_class is not None
                and prev.error_class == step.error_class):
            return "evidence_failed", prev
    return None


def evidence(state: SessionState, step: StepRecord, found: Sequence[Signal], cfg: Config) -> str:
    """The {evidence} text of a warn or stop on `step` (already in `state.window` or not)."""
    cited = cite(state, step, found, cfg)
    parts = [] if cited is None else [_quote(*cited, cfg)]
    if step.is_error and not step.is_message:
        parts.append(messages.error_text(step.error_class, cfg.language, cfg.messages))
    return _join(parts, cfg.language)


def refusal(state: SessionState, tool: str, repeats: int | None, cfg: Config, resume: str) -> str:
    """The text of a refused call: `repeats` is the flagged step it repeats ("stop_check": the run
    stops at this call), None for any call after the stop ("stop_refused": the run was stopped at
    step N because of that loop, whatever this call is)."""
    kind, related = state.stop_kind or state.last_kind, state.stop_related or state.last_related
    values = {"tool": tool, "steps": steps_text(related), "warnings": state.warnings, "resume": resume,
              "reasons": messages.reason_text(kind, cfg.language) if kind else "-", "stop_step": stop_step(state)}
    if repeats is None:
        return messages.render("stop_refused", cfg.language, cfg.messages, **values)
    return messages.render("stop_check", cfg.language, cfg.messages, evidence=earlier_result(state, repeats, cfg),
                           **values)


def stop_step(state: SessionState) -> int:
    """The step the run was stopped at (a state stored before stops kept theirs: its last flag)."""
    if state.stopped_at >= 0:
        return state.stopped_at
    return max(state.flagged_sigs.values(), default=state.steps_seen)


def steps_text(steps: Sequence[int]) -> str:
    """Step numbers for a message: all of them, or the first three and the last four."""
    shown: list[int | str] = list(steps)
    if len(shown) > 8:
        shown = shown[:3] + ["…"] + shown[-4:]
    return ", ".join(str(s) for s in shown) or "-"


def earlier_result(state: SessionState, index: int, cfg: Config) -> str:
    """For a refused call that repeats step `index`: what that step returned (if still in the window)."""
    prev = next((s for s in state.window if s.index == index), None)
    if prev is None or prev.is_message or cfg.hint_excerpt_chars <= 0:
        return ""
    parts = [_quote("evidence_failed" if prev.is_error else "evidence_result", prev, cfg)]
    if prev.is_error:
        parts.append(messages.error_text(prev.error_class, cfg.language, cfg.messages))
    return _join(parts, cfg.language)


def _quote(key: str, prev: StepRecord, cfg: Config) -> str:
    """The "evidence_*" sentence `key` for step `prev`: its excerpt, or that it returned nothing."""
    if prev.result_excerpt:
        return messages.render(key, cfg.language, cfg.messages, step=prev.index, excerpt=prev.result_excerpt)
    if key == "evidence_answer":
        return ""  # an empty reply answered nothing
    return messages.render("evidence_nothing", cfg.language, cfg.messages, step=prev.index)


def _join(parts: list[str], language: str) -> str:
    """Sentences in the flow of a template: after a space in English, directly in Chinese."""
    parts = [p for p in parts if p]
    if not parts:
        return ""
    return "".join(parts) if language == "zh" else " " + " ".join(parts)
