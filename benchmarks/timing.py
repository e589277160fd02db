"""What the timing benchmarks share (hook_latency, hook_process_latency, store_overhead): cases
measured interleaved, and the results page written and printed.

On a shared machine a busy moment would otherwise fall on whichever case ran then; run round by
round (case A, B, C, then A, B, C again) it hits every case alike, and the differences between
cases measured in the same run are the result.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any, Callable, Mapping


def interleaved(cases: Mapping[str, Callable[[int], Any]], rounds: int, *, warmup: int = 0,
                shuffle: random.Random | None = None,
                after_round: Callable[[int, dict[str, list]], None] | None = None) -> dict[str, list]:
    """Samples per case: `warmup` + `rounds` rounds, each calling every case once with the round
    number (0-based, warm-up rounds included); a case returns its sample. Warm-up rounds are run
    and not kept. `shuffle`: the order of the cases is shuffled in place before each round (else
    it is the order of `cases`). `after_round(round, samples)` runs after each kept round."""
    samples: dict[str, list] = {name: [] for name in cases}
    order = list(cases)
    for round_ in range(warmup + rounds):
        if shuffle is not None:
            shuffle.shuffle(order)
        for name in order:
            sample = cases[name](round_)
            if round_ >= warmup:
                samples[name].append(sample)
        if round_ >= warmup and after_round is not None:
            after_round(round_, samples)
    return samples


def timed_ms(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """(what `fn(*args)` returned, the wall-clock milliseconds it took)."""
    start = time.perf_counter()
    result = fn(*args)
    return result, (time.perf_counter() - start) * 1000.0


def write_page(path: str | Path, lines: list[str]) -> str:
    """Write the results page (markdown lines) to `path`, creating its folder, and print it."""
    text = "\n".join(lines) + "\n"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)
    print(text)
    return text
