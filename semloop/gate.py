"""The second view on a flag: how much a flagged step looks like a loop, read off the evidence.

The signals say *that* a step repeats something; this says how sure that is, from a handful of
cheap facts about the flag (which kinds fired, how much evidence, how far back it reaches, whether
the step failed, whether something was written inside the evidence, how varied the recent work
is). A logistic score over them, with coefficients fitted on the labeled dev runs
(`benchmarks/gate_fit.py`) and shipped as numbers (`Config.gate_coefs`), gates the two levels of
the guard: a flag warns only at `Config.warn_score` or above, and stops (past `max_warnings`, or
past one warning at `Config.sure_score`) only at `Config.stop_score` or above. A flag below
`warn_score` is not shown; it counts towards the stop, never as the last warning before it
(`policy.escalate`). A flag on what seed-style exact matching flags is always shown (`exact_run`).

O(window) per flagged step, nothing per clean step, no model to load.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from .config import THRESHOLDS, Thresholds
from .state import SessionState, StepRecord
from .verdict import Signal
from .verdict import SignalKind as K

FEATURES = ("bias", "exact", "paraphrase", "cycle", "same_result", "conversation", "cluster", "kinds",
            "evidence", "error", "page_error", "message", "size", "gap", "span", "written", "variety", "score",
            "same_calls", "same_results", "since_news", "tool_share", "position")
"""What `features` returns, in order (`Config.gate_coefs` has one coefficient for each)."""


def features(state: SessionState, step: StepRecord, found: Sequence[Signal],
             th: Thresholds = THRESHOLDS) -> list[float]:
    """The flag's facts (`FEATURES`), each a number of about unit scale. (`page_error`: an error
    over a whole page, more than `th.fact_result` words, as `novelty.page_error` reads it.)"""
    kinds = {s.kind for s in found}
    related = sorted({i for s in found for i in s.related_steps}) or [step.index]
    window = list(state.window)
    tools = {s.tool for s in window} | {step.tool}
    return [
        1.0,
        float(bool(kinds & {K.EXACT.value, K.NORMALIZED.value})),
        float(K.PARAPHRASE.value in kinds),
        float(K.CYCLE.value in kinds),
        float(K.SAME_RESULT.value in kinds),
        float(K.CONVERSATION.value in kinds),
        float(K.CLUSTER.value in kinds),
        float(len(kinds) - 1),
        math.log1p(max(len(s.related_steps) for s in found)) if found else 0.0,
        float(step.is_error),
        float(step.is_error and step.result_size > th.fact_result),
        float(step.is_message),
        math.log1p(step.result_size) / 4.0,
        math.log1p(step.index - related[-1] - 1),
        math.log1p(step.index - related[0]) / 2.0,
        float(state.last_write > related[0]),
        len(tools) / (len(window) + 1),
        min((float(s.score) for s in found), default=0.0) if kinds - {K.CLUSTER.value} else 1.0,
        math.log1p(sum(s.exact_sig == step.exact_sig for s in window)),
        math.log1p(sum(s.result_hash == step.result_hash for s in window)),
        math.log1p(step.index - max(state.last_novel, -1) - 1) / 2.0,
        sum(s.tool == step.tool for s in window) / (len(window) + 1),
        math.log1p(step.index) / 4.0,
    ]


def score(values: Sequence[float], coefs: Sequence[float]) -> float:
    """The logistic score, 0..1 (0.5 when no coefficients are given: no second view)."""
    if not coefs:
        return 0.5
    z = sum(v * c for v, c in zip(values, coefs, strict=True))
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def exact_run(state: SessionState, step: StepRecord, window: int) -> bool:
    """Whether `step` ends `window` byte-identical calls in a row: what seed-style exact matching
    flags. Where the rules flag it too (its results did not change in what matters), the second
    view never hides it."""
    recent = list(itertools.islice(reversed(state.window), window - 1))
    return len(recent) == window - 1 and all(s.exact_sig == step.exact_sig for s in recent)
