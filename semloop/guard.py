"""`LoopGuard`: the one entry point, and the orchestration around detection: locking, storage
(in memory or a shared store), and the session state the detection functions read.

call → `features` (→ `StepRecord`) → `same_action` → `novelty` → `signals` → `policy` → verdict."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import features, gate, hints, messages, novelty, policy, signals, volatile
from .config import Config, fail_open
from .embeddings import Embedder, load_embedder
from .redact import redact_step, redact_text, redact_values
from .state import SessionState, StepRecord
from .verdict import Signal, Verdict

_MAX_FLAGGED = 256  # flagged calls and tool counts kept (least recently used dropped): a memory bound, not tuning


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

    `session` (with `store`, a `semloop.store` store or URL; default `Config.store`, then
    `$SEMLOOP_STORE`, then the SQLite file) keeps the session's state in a shared store instead of
    this object: every `record` is one atomic read-modify-write of the stored state, so a fleet of
    stateless workers — processes or machines — watches one session together (see docs/store.md).

    A guard is safe to share between threads: `record`, `check` and `reset` hold a lock, so
    concurrent steps are counted once each, in the order they take it.
    """

    def __init__(self, config: Config | None = None, *, embedder: Embedder | None = None,
                 store: Any = None, session: str | None = None, **overrides: Any):
        self.config = (config or Config()).replace(**overrides) if overrides else (config or Config())
        self.embedder = embedder
        self._signal_fns = signals.signals_for(self.config.detector)
        self._lock = threading.RLock()
        if store is not None and session is None:
            raise ValueError("a store keeps sessions: pass session=<id> with store=")
        self.session = None if session is None else str(session)
        self.store = None
        if self.session is not None:
            from .store import open_store

            self.store = open_store(store if store is not None else self.config.store)
        self.state = SessionState.new(signals.look_back(self.config))

    # -- public API ------------------------------------------------------------------------

    def reset(self) -> LoopGuard:
        """Forget the session (start a new one; a stored session is deleted). Returns self."""
        with self._lock:
            self.state = SessionState.new(signals.look_back(self.config))
            if self.store is not None:
                self.store.delete(self.session)
        return self

    def to_bytes(self) -> bytes:
        """The session state in semloop's data-only format (`semloop.state_format`; no pickle)."""
        from . import state_format

        with self._lock:
            return state_format.dumps(self.state)

    def from_bytes(self, blob: bytes) -> LoopGuard:
        """Resume from `to_bytes()` output. Raises `StateFormatError` (a ValueError) for bytes this
        build did not write. Returns self."""
        from . import state_format

        state = state_format.loads(blob)
        if not isinstance(state, SessionState):
            raise state_format.StateFormatError("not a session state")
        with self._lock:
            self.state = state
        return self

    def __getstate__(self) -> dict[str, Any]:  # in-memory pickling (multiprocessing): no lock, store by URL
        data = self.__dict__.copy()
        del data["_lock"]
        store = data.pop("store")
        data["_store_url"] = None if store is None else store.url
        return data

    def __setstate__(self, data: dict[str, Any]) -> None:
        url = data.pop("_store_url", None)
        self.__dict__.update(data)
        self._lock = threading.RLock()
        self.store = None
        if url is not None:
            from .store import open_store

            self.store = open_store(url)

    def resume(self) -> LoopGuard:
        """Lift a stop and forget the warnings (the user stepped in), keeping the loop memory:
        going back to the same loop is flagged again at once. A stored session is resumed in the
        store. Returns self."""
        with self._lock:
            if self.store is None:
                self.state.resume()
                return self

            def lift(stored: SessionState | None) -> SessionState:
                self.state = self._stored_state(stored)
                self.state.resume()
                return self.state

            self.store.update(self.session, lift)
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
            with self._lock:
                if self.store is not None:  # a read: a refused call is not a step, nothing is written
                    self.state = self._stored_state(self.store.load(self.session))
                return self._check(str(tool), tool_input)
        except Exception as exc:
            return self._failed(exc)

    def record(self, tool: str, tool_input: Any, output: Any = None, is_error: bool = False) -> Verdict:
        """After a call: record it with its output and return the verdict for this step.

        Never raises by default (``fail_open=True``): an internal error logs a warning and
        returns "allow", so a detector problem cannot kill an agent run.
        """
        try:
            with self._lock:
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
        try:
            text = "" if text is None else str(text)
        except Exception as exc:  # a failing __str__, an int past the digit limit, RecursionError: fail open
            return self._failed(exc)
        if self.stopped or not text.strip():
            # a message after a stop is the agent telling the user about it, and an empty one asks
            # nothing: neither is a step (every integration records final messages through here)
            return Verdict("allow", self.state.steps_seen)
        tool = self.config.message_tools[0] if self.config.message_tools else "message"
        return self.record(tool, {"content": text}, reply)

    # -- internals -------------------------------------------------------------------------

    def _failed(self, exc: Exception) -> Verdict:
        fail_open(self.config, exc, "store" if self.store is not None and _is_store_error(exc) else "detector")
        return Verdict("allow", self.state.steps_seen, error=repr(exc))

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.embedder is None:
            self.embedder = load_embedder(self.config.embedding, self.config.model_path)
        return np.asarray(self.embedder(texts), dtype=np.float32)

    def _step(self, tool: str, tool_input: Any, output: Any, is_error: bool) -> StepRecord:
        cfg = self.config.for_tool(tool)
        th = cfg.thresholds
        text = features.render_value(output)
        result = features.normalize_result(text)
        exact_sig, norm_sig, skeleton_sig, values = features.call_keys(tool, tool_input)
        values = redact_values(values)  # the call's words and preview are kept: no secret in them
        search = features.is_search(tool, values)
        error_class = features.error_class(text, is_error, search=search and not text.strip())
        sketch, size = features.result_sketch(result)
        vec = None
        is_message = features.is_message_tool(tool, cfg.message_tools)
        entities = features.entities(values)
        input_words = features.input_words(values)
        short_words = features.short_result_words(  # kept as they are: no secret in them
            redact_text(result) if size < th.short_result else result, size, th.short_result)
        said = " ".join(values) if is_message else ""  # a message's text
        asks = features.message_asks(said)  # "" for a tool call: it says nothing
        pending = error_class is None and not is_message and features.is_pending(result, size, th.pending_words)
        if cfg.detector == "semantic":
            vec = self._embed([features.call_text(tool, values, cfg.max_text_chars, is_message)])[0]
        return StepRecord(
            index=self.state.steps_seen,
            tool=tool,
            exact_sig=exact_sig,
            norm_sig=norm_sig,
            call_vec=vec,
            result_hash=features.digest(result),
            result_head=features.result_head(text, th.head_words),
            result_sketch=sketch,
            result_size=size,
            is_error=is_error or error_class is not None,  # "Permission denied" on stdout is an error too
            error_class=error_class,
            entities=entities,
            input_words=input_words,
            short_words=short_words,
            call_preview=features.excerpt("; ".join(values).replace("\n", " "), 200),
            is_message=is_message,
            asks=bool(asks),
            closing=is_message and not asks and features.is_closing(said),
            ask_terms=features.ask_terms(asks) if asks else frozenset(),
            answered=is_message and features.reply_answers(text, said),
            # a result echoing the call's path states nothing new; only brief results are compared
            # by their facts (`same_action.same_facts`), so a long one's are never extracted
            facts=features.result_facts(result) - entities if size <= th.fact_result else frozenset(),
            skeleton_sig=skeleton_sig,
            pending=pending,
            acknowledged=features.is_acknowledgement(result, short_words, size, input_words, th.short_result),
            programs=features.program_files(entities),
            edits=features.is_edit(tool_input, values),
            search=search,
            plain_words=features.plain_words(values),
            result_excerpt=hints.result_excerpt(text, cfg.hint_excerpt_chars),  # redacted there
            result_tokens=features.result_tokens(result),
            ids=features.id_values(tool_input),
            wait=features.wait_seconds(tool, values),
            clock=features.result_clock(text) if pending else "",
            result_refs=features.result_refs(text),
            passed=not is_error and error_class is None and not is_message and features.reports_success(result),
        )

    def _stored_state(self, state: SessionState | None) -> SessionState:
        if isinstance(state, SessionState):
            return state
        return SessionState.new(signals.look_back(self.config))

    def _record(self, tool: str, tool_input: Any, output: Any, is_error: bool) -> Verdict:
        step = _redacted(self._step(tool, tool_input, output, is_error))  # stored steps keep no secrets
        if self.store is None:
            return self._apply(step)
        verdicts: list[Verdict] = []

        def apply(stored: SessionState | None) -> SessionState:
            # the features and embedding above were computed outside the store's lock; this runs
            # under it (and again, on a fresh copy, if a concurrent writer won the race)
            self.state = self._stored_state(stored)
            verdicts[:] = [self._apply(dataclasses.replace(step, index=self.state.steps_seen))]
            return self.state

        self.store.update(self.session, apply)
        return verdicts[0]

    def _apply(self, step: StepRecord) -> Verdict:
        state, cfg = self.state, self.config.for_tool(step.tool)
        if step.facts:
            step.facts = novelty.foreground_facts(state, step.facts, cfg.thresholds)
        volatile.learn(state, step, cfg.thresholds)
        found = policy.ordered([s for fn in self._signal_fns if (s := fn(state, step, cfg)) is not None])
        step.novel = novelty.is_novel(step, state, cfg)
        # the baselines keep their own recipe: the flag after `max_warnings` stops
        stop_gate = cfg.stop_gate if cfg.detector == "semantic" else "rules"
        may_stop = policy.stop_allowed(state, found, step.norm_sig, stop_gate) if found else True
        shown = ready = True
        sure = False
        if found and cfg.detector == "semantic" and cfg.gate_coefs:
            # the second view (`semloop.gate`): a flag below `warn_score` is not shown (it counts
            # towards the stop, `policy.escalate`); one below `stop_score` does not end the run,
            # nor lets `check` end it. A flag on what exact matching flags (the same call
            # `exact_window` times in a row) is always shown.
            confidence = self._gate_score(state, step, found, cfg)
            shown = confidence >= cfg.warn_score or gate.exact_run(state, step, cfg.exact_window)
            ready = confidence >= cfg.stop_score
            may_stop = may_stop and ready
            # a flag the second view is sure of, on the loop just warned about, needs one warning only
            sure = confidence >= cfg.sure_score and policy.sure_of(state, found, step.norm_sig)
        if found:
            state.stop_ready = ready
            state.stop_sure = sure
        action = policy.escalate(state, found, step.novel, cfg, may_stop, shown, sure)
        if step.novel:
            state.last_novel = step.index
        if novelty.is_write(step, state):
            state.last_write = step.index
        if novelty.is_work(step, state):
            state.last_work = step.index

        state.window.append(step)
        state.steps_seen += 1
        state.tool_counts[step.tool] = state.tool_counts.pop(step.tool, 0) + 1  # last used last
        if len(state.tool_counts) > _MAX_FLAGGED:  # as many tools as flags: the least recently used goes
            del state.tool_counts[next(iter(state.tool_counts))]
        if found:
            state.flagged_sigs.pop(step.norm_sig, None)  # re-insert: the oldest flag is dropped first
            state.flagged_sigs[step.norm_sig] = step.index
            while len(state.flagged_sigs) > _MAX_FLAGGED:
                state.flagged_sigs.pop(next(iter(state.flagged_sigs)))
            state.last_related = tuple(sorted({i for s in found for i in s.related_steps}))
            state.last_kind = found[0].kind
        if action == "stop":
            state.stop(step.index)
        shown_signals = found if action != "allow" else []
        return Verdict(action, step.index, tuple(shown_signals), self._message(action, step, shown_signals, cfg))

    def _gate_score(self, state: SessionState, step: StepRecord, found: list[Signal], cfg: Config) -> float:
        """How much this flag looks like a loop (`semloop.gate`), 0..1."""
        return gate.score(gate.features(state, step, found, cfg.thresholds), cfg.gate_coefs)

    def _check(self, tool: str, tool_input: Any) -> Verdict:
        state, cfg = self.state, self.config
        sig = features.normalized_signature(tool, tool_input)
        looping = (sig in state.flagged_sigs and state.stop_ready
                   and state.warnings >= policy.warnings_before_stop(cfg, state.stop_sure))
        if not (state.stopped or looping):
            return Verdict("allow", state.steps_seen)
        repeats = None
        if not state.stopped:  # this call continues the loop the warnings were about: the hard stop
            repeats = state.flagged_sigs[sig]
            state.stop(state.steps_seen, tuple(sorted({*state.last_related, repeats})))
        return Verdict("stop", state.steps_seen, (), hints.refusal(state, tool, repeats, cfg, self._resume_text()))

    def _resume_text(self) -> str:
        cfg = self.config
        if self.session is not None and not cfg.messages.get("resume"):
            return messages.render("resume_session", cfg.language, cfg.messages, session=self.session)
        return messages.render("resume", cfg.language, cfg.messages)

    def _message(self, action: str, step: StepRecord, found: list[Signal], cfg: Config) -> str | None:
        if action == "allow":
            return None
        related = sorted({i for s in found for i in s.related_steps}) or list(self.state.last_related)
        # the most specific evidence explains the verdict; all of it is in `Verdict.signals`
        kind = found[0].kind if found else self.state.last_kind  # after a stop: why it stopped
        reasons = messages.reason_text(kind, cfg.language) if kind else "-"
        key = "warn_message" if action == "warn" and step.is_message else action
        return messages.render(key, cfg.language, cfg.messages, tool=step.tool, steps=hints.steps_text(related),
                               reasons=reasons, count=len(related) + 1, warnings=self.state.warnings - 1,
                               call=step.call_preview, evidence=hints.evidence(self.state, step, found, cfg),
                               stop_step=hints.stop_step(self.state),
                               resume=self._resume_text() if action == "stop" else "")


def _is_store_error(exc: Exception) -> bool:
    from .store import StoreError

    return isinstance(exc, (StoreError, OSError)) or type(exc).__module__.startswith(("sqlite3", "redis"))


def _redacted(step: StepRecord) -> StepRecord:
    """The step fit to keep (`semloop.redact.redact_step`: secrets out, words bounded), its result
    excerpt redacted too (`hints.result_excerpt` redacted it already)."""
    step = redact_step(step)
    step.result_excerpt = redact_text(step.result_excerpt)
    return step
