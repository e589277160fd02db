"""Latency and memory, measured in the same run as the accuracy numbers.

- Per-step cost: every `LoopGuard.record` call timed with `time.perf_counter_ns` on a sample of
  the benchmark traces, with the real guard (features and embedding included). Each trace gets a
  fresh guard and a fresh per-session text cache over the already-loaded model, so a text is
  embedded the first time the session sees it (as in a long-lived agent process; a repeated call
  text is a cache hit). Models are loaded and warmed before timing.
- The yardstick: a seed-style exact detector (`SeedExact`: a hash of tool + input in a window of
  3, a few lines of plain Python) is timed on the same step right before each guard call, so its
  p50/p99 share the machine's load at that moment and the ratios travel between machines.

This module depends on traces and the guard only (not on `runner`): `runner` calls it.
- Process costs, each in a fresh interpreter: `import semloop` (median of N runs of
  `python -c "import semloop"` minus `python -c pass`), RSS before/after loading the default
  static model (VmRSS), and the time to the first verdict (start → import → `LoopGuard()` →
  one `record` → printed).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections import deque
from typing import Any, Callable, Sequence

from ..config import Config
from ..embeddings import CachedEmbedder
from ..guard import LoopGuard
from ..traces import Trace
from .metrics import NAN, percentile


class SeedExact:
    """The seed-style exact detector, the yardstick of the latency table: flag a call when the last
    `window` calls hash alike (sha256 of the JSON of tool + input). No features, no guard."""

    def __init__(self, window: int = 3):
        self.recent: deque = deque(maxlen=window)

    def record(self, tool: str, tool_input: Any) -> bool:
        key = json.dumps([tool, tool_input], sort_keys=True, default=str)
        self.recent.append(hashlib.sha256(key.encode("utf-8", errors="replace")).hexdigest())
        return len(self.recent) == self.recent.maxlen and len(set(self.recent)) == 1


def sample_traces(traces: Sequence[Trace], max_steps: int, seed: int = 0) -> list[Trace]:
    """Whole traces, shuffled deterministically, until `max_steps` steps are covered."""
    order = list(traces)
    random.Random(seed).shuffle(order)
    picked, steps = [], 0
    for trace in order:
        if steps >= max_steps:
            break
        picked.append(trace)
        steps += len(trace.steps)
    return picked


def step_latencies(traces: Sequence[Trace], config: Config, embedder: Callable | None,
                   budget_s: float = 20.0, clock: Callable[[], int] = time.perf_counter_ns
                   ) -> tuple[list[int], list[int]]:
    """Nanoseconds per `LoopGuard.record` call over `traces` (real guard, nothing precomputed), and
    per `SeedExact.record` call on the same steps, timed right before each guard call.

    Stops after the trace during which `budget_s` seconds of timed calls were exceeded, so a slow
    backend (sentence-transformers on a busy CPU) cannot stretch the run; the step count is reported.
    """
    raw = getattr(embedder, "embed", embedder) if embedder is not None else None
    if raw is not None:  # warm-up: lazy init, model pages, thread pools
        for i in range(8):
            raw([f"warm-up call {i}: read_file path=/tmp/file_{i}.txt"])
    for trace in traces[:2]:
        guard = LoopGuard(config, embedder=CachedEmbedder(raw) if raw else None)
        for step in trace.steps[:20]:
            guard.record(step.tool, step.input, step.output, step.is_error)
    timings: list[int] = []
    seed_timings: list[int] = []
    budget_ns = budget_s * 1e9
    spent = 0
    for trace in traces:
        if spent > budget_ns:
            break
        guard = LoopGuard(config, embedder=CachedEmbedder(raw) if raw else None)
        seed = SeedExact()
        record, seed_record = guard.record, seed.record
        for step in trace.steps:
            t0 = clock()
            seed_record(step.tool, step.input)
            t1 = clock()
            record(step.tool, step.input, step.output, step.is_error)
            dt = clock() - t1
            seed_timings.append(t1 - t0)
            timings.append(dt)
            spent += dt
    return timings, seed_timings


def latency_summary(timings_ns: Sequence[int], seed_ns: Sequence[int] = ()) -> dict[str, float]:
    """p50/p99/mean in ms, and with the seed-style timings of the same steps, their p50/p99 and the
    ratios `p50_vs_seed`, `p99_vs_seed` (the figures the performance targets are stated in)."""
    ms = [t / 1e6 for t in timings_ns]
    row = {"steps": len(ms), "p50_ms": percentile(ms, 50), "p99_ms": percentile(ms, 99),
           "mean_ms": statistics.fmean(ms) if ms else NAN}
    if seed_ns:
        seed_ms = [t / 1e6 for t in seed_ns]
        row["seed_p50_ms"], row["seed_p99_ms"] = percentile(seed_ms, 50), percentile(seed_ms, 99)
        row["p50_vs_seed"] = _ratio(row["p50_ms"], row["seed_p50_ms"])
        row["p99_vs_seed"] = _ratio(row["p99_ms"], row["seed_p99_ms"])
    return row


def _ratio(a: float, b: float) -> float:
    return a / b if a == a and b == b and b > 0 else NAN


def add_ratios(latency: dict[str, dict[str, float]], reference: str = "exact") -> None:
    ref = latency.get(reference, {}).get("p50_ms", NAN)
    for row in latency.values():
        row["p50_vs_exact"] = _ratio(row["p50_ms"], ref)


# -- fresh-process measurements --------------------------------------------------------------


def _run_python(code: str, runs: int) -> list[float]:
    """Wall seconds of `python -c code`, `runs` times."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return times


def _python_json(code: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def import_time(runs: int = 5) -> dict[str, float]:
    """Median wall time of `import semloop` in a fresh interpreter, interpreter start subtracted."""
    _run_python("import semloop", 1)  # warm the OS file cache
    bare = statistics.median(_run_python("pass", runs))
    full = statistics.median(_run_python("import semloop", runs))
    return {"runs": runs, "interpreter_ms": bare * 1e3, "import_semloop_ms": max(full - bare, 0.0) * 1e3}


_RSS_CODE = r"""
import json, time
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
before_python = rss()
import semloop
from semloop.embeddings import load_embedder
before = rss()
t0 = time.perf_counter()
embed = load_embedder("static")
embed(["bash: ls -la /tmp"])
load_s = time.perf_counter() - t0
after = rss()
print(json.dumps({"rss_python_mb": before_python, "rss_before_model_mb": before, "rss_after_model_mb": after,
                  "model_rss_mb": after - before, "model_load_ms": load_s * 1e3,
                  "backend": type(getattr(embed, "embed", embed)).__name__}))
"""

_FIRST_VERDICT_CODE = r"""
import time
t0 = time.perf_counter()
import json
from semloop import LoopGuard
guard = LoopGuard()
v = guard.record("bash", {"command": "cat /tmp/x.txt"}, "cat: /tmp/x.txt: No such file or directory")
elapsed = time.perf_counter() - t0
print(json.dumps({"first_verdict_ms": elapsed * 1e3, "action": v.action}))
"""


def memory() -> dict[str, Any]:
    return _python_json(_RSS_CODE)


def first_verdict(runs: int = 3) -> dict[str, float]:
    """In-process time from before `import semloop` to the first verdict (static model), and the
    whole fresh-process wall time including interpreter start; medians of `runs`."""
    inner, wall = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        inner.append(_python_json(_FIRST_VERDICT_CODE)["first_verdict_ms"])
        wall.append((time.perf_counter() - t0) * 1e3)
    return {"runs": runs, "first_verdict_ms": statistics.median(inner), "process_wall_ms": statistics.median(wall)}


def process_costs(runs: int = 5) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, fn in (("import", lambda: import_time(runs)), ("memory", memory),
                    ("first_verdict", lambda: first_verdict(max(1, min(runs, 3))))):
        try:
            out[key] = fn()
        except (subprocess.CalledProcessError, OSError, ValueError) as exc:
            out[key] = {"error": repr(exc)}
    return out
