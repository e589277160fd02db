"""Benchmark metrics over per-trace outcomes. Undefined values are `nan` (river-style), never 0.

Definitions (the part below is copied into every report):

- A trace is *flagged* when the detector produced any warn or stop (`first_flag` is not None).
- Trace level: TP = flagged loop trace, FP = flagged non-loop trace, FN = unflagged loop trace.
  precision = TP / (TP + FP), recall = TP / (TP + FN), F1 = harmonic mean,
  FPR = FP / non-loop traces.
- *Hard negatives*: non-loop traces with `meta.negative_kind` set to a look-alike kind (anything
  but "normal": polling, pagination, one retry, ...). A data file that annotates no negative kinds at
  all (the real traces) counts all of its non-loop traces as hard negatives: real clean runs are
  exactly the look-alikes that matter.
- *Early* flags: loop traces flagged before the labelled onset. They count as TPs at trace level,
  are reported separately, and are left out of the delay statistics.
- *Delay* = first_flag - onset, in steps, over detected loop traces with first_flag >= onset.
- *Steps saved*: on a loop trace stopped at step `s` (first hard block), the `n - 1 - s` later
  steps would not run; 0 when there is no stop. Summed over loop traces, and as a fraction of all
  loop-trace steps from the onset on (`n - onset`). *Steps cut* is the same sum on non-loop
  traces: legitimate work a stop would have killed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

NAN = float("nan")


@dataclass(frozen=True)
class TraceOutcome:
    """One detector's verdict on one labelled trace, with the label it is judged against."""

    dataset: str
    id: str
    n_steps: int
    loop: bool
    onset: int | None
    kind: str | None  # loop kind (label.kind) for loop traces
    negative_kind: str | None  # meta.negative_kind for hard negatives
    hard_negative: bool
    first_flag: int | None
    first_stop: int | None

    @property
    def flagged(self) -> bool:
        return self.first_flag is not None

    @property
    def early(self) -> bool:
        return (self.loop and self.first_flag is not None and self.onset is not None
                and self.first_flag < self.onset)

    @property
    def delay(self) -> int | None:
        if not self.loop or self.first_flag is None or self.onset is None or self.first_flag < self.onset:
            return None
        return self.first_flag - self.onset

    @property
    def steps_saved(self) -> int:
        return 0 if self.first_stop is None else max(self.n_steps - 1 - self.first_stop, 0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- scalar metrics --------------------------------------------------------------------------


def ratio(num: float, den: float) -> float:
    """num / den, or nan when den is 0."""
    return num / den if den else NAN


def precision(tp: int, fp: int) -> float:
    return ratio(tp, tp + fp)


def recall(tp: int, fn: int) -> float:
    return ratio(tp, tp + fn)


def f1(p: float, r: float) -> float:
    if math.isnan(p) or math.isnan(r):
        return NAN
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def fpr(fp: int, negatives: int) -> float:
    return ratio(fp, negatives)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else NAN


def mean(values: Sequence[float]) -> float:
    return float(statistics.fmean(values)) if values else NAN


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100), nan on no data."""
    if not values:
        return NAN
    data = sorted(values)
    pos = (len(data) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return float(data[lo] + (data[hi] - data[lo]) * (pos - lo))


# -- summaries -------------------------------------------------------------------------------


def summarize(outcomes: Iterable[TraceOutcome]) -> dict[str, Any]:
    """All trace-level metrics for one detector over a set of outcomes."""
    outcomes = list(outcomes)
    loops = [o for o in outcomes if o.loop]
    negatives = [o for o in outcomes if not o.loop]
    hard = [o for o in negatives if o.hard_negative]
    tp = sum(o.flagged for o in loops)
    fn = len(loops) - tp
    fp = sum(o.flagged for o in negatives)
    hard_fp = sum(o.flagged for o in hard)
    p, r = precision(tp, fp), recall(tp, fn)
    delays = [o.delay for o in loops if o.delay is not None]
    saved = sum(o.steps_saved for o in loops)
    after_onset = sum(o.n_steps - (o.onset or 0) for o in loops)
    return {
        "traces": len(outcomes),
        "loops": len(loops),
        "negatives": len(negatives),
        "hard_negatives": len(hard),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": len(negatives) - fp,
        "precision": p,
        "recall": r,
        "f1": f1(p, r),
        "fpr": fpr(fp, len(negatives)),
        "hard_fpr": fpr(hard_fp, len(hard)),
        "early": sum(o.early for o in loops),
        "delay_median": median(delays),
        "delay_mean": mean(delays),
        "delays": delays,
        "stops_on_loops": sum(o.first_stop is not None for o in loops),
        "steps_saved": saved,
        "steps_saved_frac": ratio(saved, after_onset),
        "stops_on_negatives": sum(o.first_stop is not None for o in negatives),
        "steps_cut_negatives": sum(o.steps_saved for o in negatives),
    }


def by_kind(outcomes: Iterable[TraceOutcome]) -> dict[str, dict[str, Any]]:
    """Recall and delay per loop kind; FPR per negative kind (`loop:<kind>` / `neg:<kind>`)."""
    groups: dict[str, list[TraceOutcome]] = {}
    for o in outcomes:
        if o.loop:
            groups.setdefault(f"loop:{o.kind or 'unknown'}", []).append(o)
        elif o.negative_kind:
            groups.setdefault(f"neg:{o.negative_kind}", []).append(o)
    out = {}
    for key in sorted(groups):
        s = summarize(groups[key])
        if key.startswith("loop:"):
            out[key] = {"n": s["loops"], "recall": s["recall"], "detected": s["tp"], "early": s["early"],
                        "delay_median": s["delay_median"]}
        else:
            out[key] = {"n": s["negatives"], "fpr": s["fpr"], "flagged": s["fp"]}
    return out


def jsonable(value: Any) -> Any:
    """nan → None (strict JSON), recursively."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value
