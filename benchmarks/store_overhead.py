"""Per-step cost of keeping a session in a store: no store vs memory:// vs SQLite vs Redis.

    python benchmarks/store_overhead.py [--steps 300] [--warmup 200] [--threads 16] [--thread-steps 30]
                                        [--out benchmarks/results/store.md]

One `LoopGuard` per backend records the same stream of tool calls (reads, commands, some
repeats; the default static embedding model) as one session: `LoopGuard(session=..., store=URL)`,
so each step is a full load → record → save through the store, as a fleet worker does it. After a
warm-up (the state grows to its working size), steps are timed interleaved across backends (step
i on every backend, in a shuffled order, before step i + 1), so machine noise hits all alike.
Reported: p50 / mean per-step milliseconds, each as a ratio to the guard without a store, and the
store's own overhead (backend minus no store) as a ratio to memory://'s. Also the stored size of
the session, and of a worst-case session (every one of `max_clusters` clusters in use).

Threads: one guard per backend shared by `--threads` threads, each recording `--thread-steps`
steps: steps recorded (all of them, or the store lost some) and the time per step as a ratio to the
guard without a store under the same threads. Then the two designs a multi-threaded SQLite store can have, on the raw
store (a tiny state, so only the connection handling differs): one connection shared under a lock
(what `SQLiteStore` does) against a connection per thread queueing on SQLite's file lock.

Redis: a `redis-server` is started on a free loopback port (skipped if the binary is absent).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import interleaved, timed_ms, write_page  # noqa: E402


def stream(n: int, seed: int = 0):
    rng = random.Random(seed)
    for i in range(n):
        r = rng.random()
        if r < 0.35:
            yield "Read", {"file_path": f"src/module_{rng.randrange(60)}.py"}, "def f(x):\n    return x\n" * rng.randrange(2, 40)
        elif r < 0.6:
            yield "Bash", {"command": f"pytest tests/test_{rng.randrange(20)}.py -q"}, f"{rng.randrange(5)} failed, 12 passed"
        elif r < 0.8:
            yield "Grep", {"pattern": f"TODO{rng.randrange(30)}", "path": "src"}, f"src/a.py:{i}: TODO"
        else:
            yield "Bash", {"command": f"echo step {i}"}, f"step {i}"


def worst_session(visits: int = 16, tools: int = 400, config=None):
    """A guard whose session holds as much as the default config lets it: every one of
    `max_clusters` clusters visited `visits` times with a new result each time (its deques full),
    `tools` distinct 300-character tool names, 70 long paths and words per call, results that are
    24 long facts or 300 long words. Returns the guard (its `to_bytes()` is the stored state)."""
    import re

    import numpy as np

    from semloop import Config, LoopGuard

    config = config or Config()
    rng, directions = np.random.default_rng(0), {}

    def embed(texts):  # one direction per cluster id named in the call: its visits join it
        out = []
        for text in texts:
            c = int(re.search(r"run-(\d+)", text).group(1))
            if c not in directions:
                v = rng.standard_normal(256).astype(np.float32)
                directions[c] = v / np.linalg.norm(v)
            out.append(directions[c])
        return np.stack(out)

    guard, k = LoopGuard(config, embedder=embed), 0
    for visit in range(visits):
        for c in range(config.max_clusters):
            k += 1
            words = " ".join(f"/srv/d{c}/{'p' * 80}{visit}{j}.py w{c}x{j}{'q' * 80}" for j in range(70))
            result = (" ".join(f"/a/{'f' * 80}{k}{j}.txt" for j in range(24)) if k % 2 else
                      " ".join(f"r{k}y{j}{'z' * 70}" for j in range(300)))
            guard.record(f"mcp__server_{k % tools}__" + "t" * 300, {"command": f"run-{c} " + words}, result)
    return guard


def start_redis(directory: str) -> tuple[subprocess.Popen, str] | None:
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", directory, "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    return None


def in_threads(work, threads: int) -> float:
    """Seconds for `work(t)` run at once in threads t = 0 .. `threads` - 1."""
    import threading

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - start


def threaded(url: str | None, threads: int, per_thread: int, embedder, rounds: int = 3) -> tuple[int, float, float]:
    """(steps recorded, s for `threads` x `per_thread` steps on one shared guard, s for as many from
    one thread): the best of `rounds` rounds, one-thread and threaded runs alternating (each on a
    new session), so the machine's noise hits both alike."""
    from semloop import Config, LoopGuard
    from semloop.store import open_store

    config = Config(max_warnings=10**9)  # never stopped: a stopped guard's steps cost less, and runs differ in when

    def guard(session: str):
        g = LoopGuard(config) if url is None else LoopGuard(config, store=url, session=session)
        g.embedder = embedder
        return g

    calls = list(stream(threads * per_thread, seed=2))
    warm = guard("warm")  # the embedder's cache holds every call text before any run is timed
    for call in calls:
        warm.record(*call)
    alone, together, recorded = [], [], []
    for r in range(rounds):
        one = guard(f"one-{r}")
        start = time.perf_counter()
        for call in calls:
            one.record(*call)
        alone.append(time.perf_counter() - start)
        shared = guard(f"shared-{r}")

        def work(t: int, shared=shared) -> None:
            for call in calls[t::threads]:
                shared.record(*call)

        together.append(in_threads(work, threads))
        state = shared.state if url is None else open_store(url).load(f"shared-{r}")
        recorded.append(0 if state is None else state.steps_seen)
    return min(recorded), min(together), min(alone)


def connection_designs(directory: str, threads: int, per_thread: int) -> dict[str, float]:
    """Microseconds per update, `threads` threads on one store object: shared connection vs one per thread."""
    import threading

    from semloop.store import SQLiteStore

    class PerThread(SQLiteStore):  # the alternative: a connection per thread, no lock of the store's
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._local = threading.local()

        def connect(self):
            if getattr(self._local, "conn", None) is None:
                self._local.conn = self._open()
            return self._local.conn

        def _recovering(self, op):
            return op(self.connect())

    def bump(state):
        state = state or {"n": 0}
        state["n"] += 1
        return state

    out = {}
    for name, cls in (("one connection, store lock", SQLiteStore), ("connection per thread", PerThread)):
        store = cls(os.path.join(directory, f"{cls.__name__}.sqlite3"))

        def work(_t: int) -> None:
            for _ in range(per_thread):
                store.update("k", bump)

        elapsed = in_threads(work, threads)
        assert store.load("k")["n"] == threads * per_thread, name
        out[name] = elapsed / (threads * per_thread) * 1e6
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--thread-steps", type=int, default=30, help="steps per thread in the threads section")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "store.md"))
    args = parser.parse_args()

    from semloop import Config, LoopGuard
    from semloop.store import open_store

    tmp = tempfile.mkdtemp(prefix="semloop-store-bench-")
    redis = start_redis(tmp)
    backends = {"no store": None, "memory://": "memory://bench", "sqlite": f"sqlite://{tmp}/state.sqlite3"}
    if redis is not None:
        backends["redis"] = redis[1]
    try:
        config = Config()
        guards = {name: LoopGuard(config) if url is None else LoopGuard(config, store=url, session="bench")
                  for name, url in backends.items()}
        calls = list(stream(args.warmup + args.steps))
        from semloop.embeddings import load_embedder

        embedder = load_embedder(config.embedding, config.model_path)  # one for all (its cache too)
        for guard in guards.values():
            guard.embedder = embedder

        def step(name: str):
            def record(i: int) -> float:
                verdict, elapsed = timed_ms(guards[name].record, *calls[i])
                if verdict.error is not None:
                    raise SystemExit(f"{name}: {verdict.error}")
                return elapsed

            return record

        # step i on every backend, in a shuffled order, before step i + 1
        times: dict[str, list[float]] = interleaved({name: step(name) for name in guards}, args.steps,
                                                    warmup=args.warmup, shuffle=random.Random(1))
        sizes = {}
        for name, url in backends.items():
            if url is not None:
                store = open_store(url)
                sizes[name] = next(info.size for info in store.list() if info.key == "bench")
        # the codec alone on the final state, against pickle (what the SQLite store used before)
        import pickle

        from semloop import state_format

        final = guards["memory://"].state
        codec = {"state_format": (lambda: state_format.loads(state_format.dumps(final))),
                 "pickle": (lambda: pickle.loads(pickle.dumps(final, protocol=pickle.HIGHEST_PROTOCOL)))}
        codec_ms: dict[str, list[float]] = interleaved(
            {name: (lambda _, fn=fn: timed_ms(fn)[1]) for name, fn in codec.items()}, 60)
        # worst case: every cluster in use (max_clusters distinct calls) with full windows
        import numpy as np

        rng_vec = np.random.default_rng(0)

        def unrelated(texts):  # every call its own direction: each one opens a new cluster
            v = rng_vec.standard_normal((len(texts), 256)).astype(np.float32)
            return v / np.linalg.norm(v, axis=1, keepdims=True)

        worst = LoopGuard(config, embedder=unrelated)
        for i in range(config.max_clusters * 3):
            worst.record("Bash", {"command": f"unrelated-{i} " + " ".join(f"w{i}x{j}" for j in range(8))},
                         " ".join(f"r{i}y{j}" for j in range(200)))
        worst_size = len(worst.to_bytes())
        fullest = len(worst_session().to_bytes())
        threads = {name: threaded(url, args.threads,
                                  args.thread_steps, embedder) for name, url in backends.items()}
        designs = connection_designs(tmp, args.threads, 200)
        worst_clusters = len(worst.state.clusters)
    finally:
        if redis is not None:
            redis[0].kill()
            redis[0].wait()
        shutil.rmtree(tmp, ignore_errors=True)

    base = {k: statistics.median(v) for k, v in times.items()}
    means = {k: statistics.fmean(v) for k, v in times.items()}
    lines = [
        "# Session store overhead per step",
        "",
        f"`python benchmarks/store_overhead.py --steps {args.steps} --warmup {args.warmup}` — "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs (shared machine: compare ratios, not milliseconds).",
        "",
        "Each step is a full `LoopGuard.record` (static embedding model); with a store it is load → record →",
        "save of the session through the store (what a fleet worker or a hook process does per tool call).",
        f"Session state after {args.warmup + args.steps} steps: "
        + ", ".join(f"{k} {v / 1024:.1f} KB" for k, v in sizes.items()) + ".",
        f"All {worst_clusters} clusters in use, one call each: {worst_size / 1024:.0f} KB per session; "
        f"the fullest session the default config can hold (`worst_session`: every cluster's memory full, "
        f"400 long tool names, long words and facts): {fullest / 1024:.0f} KB ({fullest:,} bytes).",
        "",
        "| backend | min ms/step | p50 ms/step | mean ms/step | p50 vs no store | store overhead vs memory:// (p50) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    mem_over = max(1e-9, base["memory://"] - base["no store"])
    for name in times:
        over = base[name] - base["no store"]
        ratio = "—" if name == "no store" else f"{over / mem_over:.1f}×"
        lines.append(f"| {name} | {min(times[name]):.2f} | {base[name]:.2f} | {means[name]:.2f} | "
                     f"{base[name] / base['no store']:.2f}× | {ratio} |")
    fmt, pick = statistics.median(codec_ms["state_format"]), statistics.median(codec_ms["pickle"])
    fmt_min, pick_min = min(codec_ms["state_format"]), min(codec_ms["pickle"])
    lines += ["", f"Encode + decode of that state, interleaved: data-only format p50 {fmt:.2f} ms (min {fmt_min:.2f}), "
                  f"pickle p50 {pick:.2f} ms (min {pick_min:.2f}) — {fmt_min / pick_min:.1f}× pickle's time at the "
                  f"minimum. Pickle never goes to disk or Redis (loading foreign pickle runs code); memory:// keeps "
                  f"its own pickle bytes, which never leave the process."]
    total = args.threads * args.thread_steps
    lines += ["", f"## {args.threads} threads, one shared guard ({args.threads} x {args.thread_steps} steps, "
              "best of 3 rounds)", "",
              "| backend | steps recorded | ms/step, 16 threads | vs no store, 16 threads | ms/step, one thread |",
              "|---|---:|---:|---:|---:|"]
    free = threads["no store"][1]
    for name, (recorded, together, alone) in threads.items():
        lines.append(f"| {name} | {recorded}/{total} | {together / total * 1000:.2f} | {together / free:.2f}× | "
                     f"{alone / total * 1000:.2f} |")
    lines += ["", "(The one-thread run records the same calls in order, the threads in the order they take the "
              "guard's lock; detection's cost depends on that order, so compare backends within a column.)"]
    shared_us = designs["one connection, store lock"]
    lines += ["", f"SQLite store object used by {args.threads} threads (200 updates each, tiny state): "
              + ", ".join(f"{k} {v:.0f} µs/update ({v / shared_us:.2f}×)" for k, v in designs.items()) + "."]
    if redis is None:
        lines.append("\nredis-server not installed: Redis not measured.")
    write_page(args.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
