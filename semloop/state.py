"""The explicit, bounded state every signal reads: a window of recent steps, session-wide call
clusters, counts of the facts results stated, per-tool counts and the escalation counters.

It holds only numpy arrays and plain Python values, so it pickles — the Claude Code hook keeps it
in SQLite between processes. Memory is O(window + max_clusters + 1024 facts), whatever the session
length.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field

import numpy as np


@dataclass(slots=True)
class StepRecord:
    """What the guard remembers of one recorded step."""

    index: int
    tool: str
    exact_sig: str
    norm_sig: str
    call_vec: np.ndarray | None  # unit vector; None for detectors that embed nothing
    result_hash: str
    result_head: str  # digest of the first line (features.result_head)
    result_sketch: tuple[int, ...]  # bottom-k word hashes (features.result_sketch)
    result_size: int
    is_error: bool
    error_class: str | None  # "permission", "not_found", ... (see features.error_class)
    entities: frozenset[str]  # identifier-like tokens of the call (paths, ids, numbers)
    input_words: frozenset[str]  # words of the call's arguments
    short_words: tuple[str, ...]  # words of a short result, () for a long one
    call_preview: str  # short text for messages
    novel: bool = True  # its result matched nothing in the window (errors are never novel)
    cluster: int = -1
    is_message: bool = False  # the agent's message to someone (Config.message_tools); output = the reply
    asks: bool = False  # a message that asks for something (features.message_asks)
    answered: bool = False  # a message whose reply gave a new identifier (features.reply_answers)
    ask_terms: frozenset[str] = frozenset()  # content word pairs of what a message asks for (features.ask_terms)
    # versions, hashes, long numbers, paths the result states (features.result_facts)
    facts: frozenset[str] = frozenset()
    skeleton_sig: str = ""  # normalized signature with numbers masked (features.skeleton_signature)
    pending: bool = False  # the result reports a status still in progress (features.is_pending)
    acknowledged: bool = False  # the result only says the call ran (features.is_acknowledgement)
    programs: frozenset[str] = frozenset()  # program files the call writes or runs (features.program_files)
    edits: bool = False  # the call edits a file through an editor (features.is_edit)
    search: bool = False  # the call searches (features.is_search)
    plain_words: frozenset[str] = frozenset()  # its words outside paths, URLs and numbers (features.plain_words)
    closing: bool = False  # a message that only closes: thanks, goodbye (features.is_closing)
    result_excerpt: str = ""  # the result's head, redacted and bounded (hints.result_excerpt): what hints quote
    # seconds the call waits (a sleep / wait tool, `sleep N`); -1 when it does not (features.wait_seconds)
    wait: float = -1.0
    clock: str = ""  # digest of the timestamps its result shows (features.result_clock)
    ids: frozenset[str] = frozenset()  # values of its identifier arguments (features.id_values)
    passed: bool = False  # the result reports that what ran passed (features.reports_success)
    # token hashes of a short result, for learning its volatile places (semloop.volatile)
    result_tokens: tuple[int, ...] = ()
    # hashes of the 3- to 9-digit numbers its result shows: ids a later call may follow (features.result_refs)
    result_refs: frozenset[int] = frozenset()


@dataclass(slots=True)
class Cluster:
    """A session-wide group of similar calls (leader clustering on call embeddings)."""

    centroid: np.ndarray
    members: int = 0
    stale: int = 0  # members whose result the cluster had already seen
    # (hash, sketch, size) of new results
    results: deque[tuple[str, tuple[int, ...], int]] = field(default_factory=lambda: deque(maxlen=8))
    calls: deque[str] = field(default_factory=lambda: deque(maxlen=16))  # normalized signatures seen
    # program files its calls ran (StepRecord.programs)
    programs: deque[str] = field(default_factory=lambda: deque(maxlen=16))
    steps: deque[int] = field(default_factory=lambda: deque(maxlen=8))


STATE_FORMAT = 12
"""Bumped whenever the pickled layout of `SessionState` changes, so stored states of another
layout are ignored instead of misread (see `integrations.store`)."""


@dataclass
class SessionState:
    window: deque[StepRecord]  # of StepRecord, maxlen = the detector's look-back
    clusters: OrderedDict[int, Cluster] = field(default_factory=OrderedDict)
    next_cluster: int = 0
    tool_counts: Counter[str] = field(default_factory=Counter)
    steps_seen: int = 0
    last_novel: int = -1  # index of the latest step that brought a new result: progress
    # index of the latest new call that wrote: acknowledged, or an editor's edit (novelty.is_write)
    last_write: int = -1
    last_work: int = -1  # the same, counting tool calls only (a reply to a message is always new)
    warnings: int = 0
    clean_streak: int = 0
    stopped: bool = False
    stop_ready: bool = True  # the latest flag may end the run (its gate score reached `Config.stop_score`)
    stop_sure: bool = False  # ... after one warning (it reached `Config.sure_score` and continued the loop)
    flagged_sigs: dict[str, int] = field(default_factory=dict)  # norm_sig → step last flagged (bounded, oldest out)
    last_related: tuple[int, ...] = ()  # evidence of the latest flag, for messages
    last_kind: str = ""
    stopped_at: int = -1  # the step at which the run was stopped (-1: not stopped)
    stop_kind: str = ""  # the loop that stopped it: its most specific signal kind ...
    stop_related: tuple[int, ...] = ()  # ... and the earlier steps it matched
    fact_counts: OrderedDict[str, int] = field(default_factory=OrderedDict)  # fact → brief results stating it (bounded)

    @classmethod
    def new(cls, look_back: int) -> SessionState:
        return cls(window=deque(maxlen=look_back))

    def resume(self) -> None:
        """Lift a stop and forget the warnings (the user stepped in), keeping the loop memory:
        repeating the same loop is flagged again at once."""
        self.stopped = False
        self.stopped_at = -1
        self.warnings = 0
        self.clean_streak = 0

    def stop(self, at: int, related: tuple[int, ...] | None = None) -> None:
        """Stop the run at step `at` because of the latest flagged loop (`related`: its steps, by
        default those of the latest flag). A stop already in force keeps its own step and loop."""
        if self.stopped and self.stopped_at >= 0:
            return
        self.stopped = True
        self.stopped_at = at
        self.stop_kind = self.last_kind
        self.stop_related = self.last_related if related is None else related
