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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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
                   budget_s: float = 20.0) -> dict[str, list[int]]:
    """Nanoseconds per `LoopGuard.record` call over `traces` (real guard, nothing precomputed), and
    per `SeedExact.record` call on the same steps, timed right before each guard call; each as wall
    time (`guard`, `seed`) and as this thread's CPU time (`guard_cpu`, `seed_cpu`: on a shared,
    busy machine, time spent waiting for a core is not in it).

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
    out: dict[str, list[int]] = {"guard": [], "seed": [], "guard_cpu": [], "seed_cpu": []}
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    budget_ns = budget_s * 1e9
    spent = 0
    for trace in traces:
        if spent > budget_ns:
            break
        guard = LoopGuard(config, embedder=CachedEmbedder(raw) if raw else None)
        seed = SeedExact()
        record, seed_record = guard.record, seed.record
        for step in trace.steps:
            c0, t0 = cpu(), wall()
            seed_record(step.tool, step.input)
            t1, c1 = wall(), cpu()
            record(step.tool, step.input, step.output, step.is_error)
            t2, c2 = wall(), cpu()
            out["seed"].append(t1 - t0)
            out["seed_cpu"].append(c1 - c0)
            out["guard"].append(t2 - t1)
            out["guard_cpu"].append(c2 - c1)
            spent += t2 - t1
    return out


def latency_summary(timings: Mapping[str, Sequence[int]] | Sequence[int]) -> dict[str, float]:
    """p50/p99/mean in ms (wall); with the seed-style timings of the same steps, their p50/p99 and
    the ratios `p50_vs_seed`, `p99_vs_seed` (wall) and `cpu_p50_vs_seed`, `cpu_p99_vs_seed` (CPU
    time): the figures the performance targets are stated in."""
    if not isinstance(timings, Mapping):
        timings = {"guard": timings}
    ms = [t / 1e6 for t in timings["guard"]]
    row = {"steps": len(ms), "p50_ms": percentile(ms, 50), "p99_ms": percentile(ms, 99),
           "mean_ms": statistics.fmean(ms) if ms else NAN}
    for prefix, key in (("", "seed"), ("cpu_", "seed_cpu")):
        if not timings.get(key):
            continue
        mine = [t / 1e6 for t in timings["guard_cpu" if prefix else "guard"]]
        seed_ms = [t / 1e6 for t in timings[key]]
        p50, p99 = percentile(mine, 50), percentile(mine, 99)
        s50, s99 = percentile(seed_ms, 50), percentile(seed_ms, 99)
        if prefix:
            row["cpu_p50_ms"], row["cpu_p99_ms"] = p50, p99
        row[f"{prefix}seed_p50_ms"], row[f"{prefix}seed_p99_ms"] = s50, s99
        row[f"{prefix}p50_vs_seed"], row[f"{prefix}p99_vs_seed"] = _ratio(p50, s50), _ratio(p99, s99)
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


# -- scan throughput and a long session's memory ---------------------------------------------


def scan_throughput(traces: Sequence[Trace], config: Config, jobs: int = 2) -> dict[str, float]:
    """Steps per second of scanning `traces` (the model already loaded): step by step (one text
    embedded per step, as `semloop scan --no-batch`), batched (`semloop scan`), and batched over
    `jobs` worker processes. Wall time and this process's CPU time are both reported: on a shared
    machine the CPU figure is the steadier one (worker CPU is not in it, so `jobs` has wall only)."""
    from ..scan import iter_scan, scan_trace

    steps = sum(len(t.steps) for t in traces)
    out: dict[str, float] = {"steps": steps, "traces": len(traces)}
    runs = [("step_by_step", lambda: [scan_trace(t, config) for t in traces]),
            ("batched", lambda: list(iter_scan(traces, config)))]
    if jobs > 1:
        runs.append((f"batched_jobs{jobs}", lambda: list(iter_scan(traces, config, jobs=jobs))))
    for name, run in runs:
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        out[f"{name}_steps_per_s"] = steps / wall if wall > 0 else NAN
        if not name.startswith("batched_jobs"):
            out[f"{name}_steps_per_cpu_s"] = steps / cpu if cpu > 0 else NAN
    return out


def start_session_memory(paths: Sequence[str], steps: int = 100_000, embedding: str = "static") -> subprocess.Popen:
    """Start, in a fresh interpreter, the long-session memory measurement (`finish_session_memory`
    collects it): RSS with the model loaded, then after `steps` steps of ONE session (the benchmark
    steps replayed in a cycle, each call made distinct so that nothing is a cache hit and the
    cluster table fills up), and the size of its state as a session store keeps it (`LoopGuard.to_bytes`,
    semloop's data-only format). It runs beside the other stages."""
    code = ("import json, sys; from semloop.bench.perf import _session_memory_here; "
            "print(json.dumps(_session_memory_here(sys.argv[1:-2], int(sys.argv[-2]), sys.argv[-1])))")
    return subprocess.Popen([sys.executable, "-c", code, *map(str, paths), str(steps), embedding],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_session_memory(proc: subprocess.Popen) -> dict[str, Any]:
    out, err = proc.communicate()
    if proc.returncode != 0:
        return {"error": (err or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]}
    return json.loads(out.strip().splitlines()[-1])


def _rss_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _session_memory_here(paths: Sequence[str], steps: int, embedding: str) -> dict[str, Any]:
    import gc

    from ..traces import load_traces

    pool = [s for path in paths for t in load_traces(path) for s in t.steps]
    base = _rss_mb()
    guard = LoopGuard(Config(embedding=embedding))
    guard.record("warm-up", {"x": 1}, "model loaded")
    loaded = _rss_mb()
    t0 = time.perf_counter()
    for i in range(steps):
        s = pool[i % len(pool)]
        guard.record(s.tool, {"step": i, "input": s.input}, s.output, s.is_error)
        if i == steps // 2:
            gc.collect()
            half_rss, half_state = _rss_mb(), len(guard.to_bytes())
    seconds = time.perf_counter() - t0
    gc.collect()
    state = len(guard.to_bytes())
    return {"steps": steps, "embedding": embedding, "rss_before_model_mb": base, "rss_model_loaded_mb": loaded,
            "rss_half_mb": half_rss if steps > 1 else NAN, "rss_after_mb": _rss_mb(),
            "state_bytes_half": half_state if steps > 1 else NAN, "state_bytes_after": state,
            "clusters": len(guard.state.clusters), "seconds": seconds}
