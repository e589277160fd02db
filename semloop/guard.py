"""`LoopGuard`: the one entry point. call → features → signals → policy → verdict."""

from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np

from . import features, messages, policy, signals
from .config import Config
from .embeddings import Embedder, load_embedder
from .state import SessionState, StepRecord
from .verdict import Signal, Verdict

log = logging.getLogger("semloop")

_MAX_FLAGGED = 256


class LoopGuard:
    """Watches one agent session's tool calls and says "allow", "warn" or "stop".

    >>> guard = LoopGuard(embedding="hashing")
    >>> for _ in range(3):
    ...     v = guard.record("bash", {"command": "cat /tmp/test.txt"}, "cat: /tmp/test.txt: Permission denied")
    >>> v.action, v.signals[0].kind, v.signals[0].related_steps
    ('warn', 'exact', (0, 1))

    Parameters are those of `Config` (pass a `Config`, keyword overrides, or both). `embedder` is
    any callable from a list of texts to an (n, d) array of unit vectors; the default is the
    configured backend, loaded once per process and shared.
    """

    def __init__(self, config: Config | None = None, *, embedder: Embedder | None = None, **overrides: Any):
        self.config = (config or Config()).replace(**overrides) if overrides else (config or Config())
        self.embedder = embedder
        self._signal_fns = signals.signals_for(self.config.detector)
        self.reset()

    # -- public API ------------------------------------------------------------------------

    def reset(self) -> "LoopGuard":
        """Forget the session (start a new one). Returns self."""
        self.state = SessionState.new(signals.look_back(self.config))
        return self

    @property
    def stopped(self) -> bool:
        return self.state.stopped

    @property
    def steps(self) -> int:
        return self.state.steps_seen

    def check(self, tool: str, tool_input: Any) -> Verdict:
        """Before a call: "stop" if it continues a loop already warned about to the limit (or the
        run was stopped), else "allow". Cheap: hashing only, no embedding. A refusal is the hard
        stop: the guard is then `stopped`, so a model that retries the refused call cannot go on."""
        try:
            return self._check(str(tool), tool_input)
        except Exception as exc:
            return self._failed(exc)

    def record(self, tool: str, tool_input: Any, output: Any = None, is_error: bool = False) -> Verdict:
        """After a call: record it with its output and return the verdict for this step.

        Never raises by default (``fail_open=True``): an internal error logs a warning and
        returns "allow", so a detector problem cannot kill an agent run.
        """
        try:
            return self._record(str(tool), tool_input, output, bool(is_error))
        except Exception as exc:
            return self._failed(exc)

    update = record  # river-style alias

    def record_message(self, text: str, reply: Any = None) -> Verdict:
        """Record the agent's message to the user (or to another agent) and the reply, if any.

        Conversation mode: an agent that asks for the same thing again and again — reworded —
        while the answers differ is in a loop that no tool result shows. This is `record` with the
        first of `Config.message_tools` as the tool and ``{"content": text}`` as the input; calls
        of any tool named in `message_tools` (tau-bench's `respond`, `send_message`, ...) are
        messages already and need no extra call.

        >>> guard = LoopGuard()
        >>> v = guard.record_message("Could you please provide your reservation ID?", "I don't have it.")
        >>> v = guard.record_message("I need your reservation ID to continue. Could you please provide it?",
        ...                          "I told you, I don't have it.")
        >>> v = guard.record_message("Please provide your reservation ID so I can continue.",
        ...                          "Can't you look it up by my name?")
        >>> v.action, v.signals[0].kind, v.signals[0].related_steps
        ('warn', 'conversation', (0, 1))
        """
        tool = self.config.message_tools[0] if self.config.message_tools else "message"
        return self.record(tool, {"content": "" if text is None else str(text)}, reply)

    # -- internals -------------------------------------------------------------------------

    def _failed(self, exc: Exception) -> Verdict:
        if not self.config.fail_open:
            raise exc
        log.warning("semloop: detector error, allowing the call: %r", exc)
        return Verdict("allow", self.state.steps_seen, error=repr(exc))

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.embedder is None:
            self.embedder = load_embedder(self.config.embedding, self.config.model_path)
        return np.asarray(self.embedder(texts), dtype=np.float32)

    def _step(self, tool: str, tool_input: Any, output: Any, is_error: bool) -> StepRecord:
        cfg = self.config
        text = features.render_value(output)
        result = features.normalize_result(text)
        error_class = features.error_class(text, is_error)
        sketch, size = features.result_sketch(result)
        values = features.call_values(tool_input)
        vec = None
        is_message = features.is_message_tool(tool, cfg.message_tools)
        entities = features.entities(values)
        asks = features.message_asks(" ".join(values)) if is_message else ""
        if cfg.detector == "semantic":
            vec = self._embed([features.call_text(tool, values, cfg.max_text_chars, is_message)])[0]
        return StepRecord(
            index=self.state.steps_seen,
            tool=tool,
            exact_sig=features.exact_signature(tool, tool_input),
            norm_sig=features.normalized_signature(tool, tool_input),
            call_vec=vec,
            result_hash=features.digest(result),
            result_head=features.result_head(text),
            result_sketch=sketch,
            result_size=size,
            is_error=is_error or error_class is not None,  # "Permission denied" on stdout is an error too
            error_class=error_class,
            entities=entities,
            input_words=features.input_words(values),
            short_words=features.short_result_words(result, size),
            call_preview=features.excerpt("; ".join(values).replace("\n", " "), 200),
            is_message=is_message,
            asks=bool(asks),
            ask_terms=features.ask_terms(asks) if asks else frozenset(),
            answered=is_message and features.reply_answers(text, " ".join(values)),
            facts=features.result_facts(result) - entities,  # a result echoing the call's path states nothing new
            skeleton_sig=features.skeleton_signature(tool, tool_input),
            pending=error_class is None and features.is_pending(result),
        )

    def _record(self, tool: str, tool_input: Any, output: Any, is_error: bool) -> Verdict:
        state, cfg = self.state, self.config.for_tool(tool)
        step = self._step(tool, tool_input, output, is_error)
        found = policy.ordered([s for fn in self._signal_fns if (s := fn(state, step, cfg)) is not None])
        # new = not an error, not empty, and neither the same content nor the same facts as a window step
        step.novel = not step.is_error and step.result_size > 0 and all(
            signals.result_match(step, prev, containment=True) < cfg.result_threshold
            and signals.same_facts(step, prev) < signals.SAME_FACTS for prev in state.window)
        action = policy.escalate(state, found, step.novel, cfg)
        if step.novel:
            state.last_novel = step.index
        if _is_work(step, state):
            state.last_work = step.index

        state.window.append(step)
        state.steps_seen += 1
        state.tool_counts[tool] += 1
        if found:
            state.flagged_sigs.pop(step.norm_sig, None)  # re-insert: the oldest flag is dropped first
            state.flagged_sigs[step.norm_sig] = step.index
            while len(state.flagged_sigs) > _MAX_FLAGGED:
                state.flagged_sigs.pop(next(iter(state.flagged_sigs)))
            state.last_related = tuple(sorted({i for s in found for i in s.related_steps}))
            state.last_kind = found[0].kind
        return Verdict(action, step.index, tuple(found), self._message(action, step, found))

    def _check(self, tool: str, tool_input: Any) -> Verdict:
        state, cfg = self.state, self.config
        sig = features.normalized_signature(tool, tool_input)
        looping = sig in state.flagged_sigs and state.warnings >= cfg.max_warnings
        if not (state.stopped or looping):
            return Verdict("allow", state.steps_seen)
        state.stopped = True
        text = messages.render("stop_check", cfg.language, cfg.messages, tool=tool,
                               steps=_steps_text(state.last_related), warnings=state.warnings)
        return Verdict("stop", state.steps_seen, (), text)

    def _message(self, action: str, step: StepRecord, found: list[Signal]) -> str | None:
        if action == "allow":
            return None
        cfg = self.config
        related = sorted({i for s in found for i in s.related_steps}) or list(self.state.last_related)
        # the most specific evidence explains the verdict; all of it is in `Verdict.signals`
        kind = found[0].kind if found else self.state.last_kind  # after a stop: why it stopped
        reasons = messages.reason_text(kind, cfg.language) if kind else "-"
        return messages.render(action, cfg.language, cfg.messages, tool=step.tool, steps=_steps_text(related),
                               reasons=reasons, count=len(related) + 1, warnings=self.state.warnings - 1,
                               call=step.call_preview)


def _is_work(step: StepRecord, state: SessionState) -> bool:
    """A tool call that did something: not an error, with some output, and either a new call or a
    new result. (A successful write whose result looks like an earlier read is work; a `think`
    step, with no output, is not.) A message is work only when its reply answered with a new
    identifier (`features.reply_answers`). Work ends a conversation loop; talk does not."""
    if step.is_message:
        return step.answered
    if step.is_error or step.result_size == 0:
        return False
    return step.novel or all(prev.norm_sig != step.norm_sig for prev in state.window)


def _steps_text(steps: Sequence[int]) -> str:
    steps = list(steps)
    if len(steps) > 8:
        steps = steps[:3] + ["…"] + steps[-4:]
    return ", ".join(str(s) for s in steps) or "-"
