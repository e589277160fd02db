"""Latency of `semloop hook claude-code` / `semloop hook codex` as the CLIs run them: a new
process per event.

    python benchmarks/hook_process_latency.py [--runs 30] [--embedding static] [--command "semloop"] [--no-warm]
                                              [--out benchmarks/results/hook_process_latency.md]

Two paths: **cold** (`SEMLOOP_HOOK_SERVER=0`: the hook process imports numpy, loads the model and
handles the event itself) and **warm** (a `semloop hook-server` is running on a temporary socket:
the hook process is a thin client that forwards the event). Runs each event `--runs` times as a
fresh subprocess against temporary state databases and prints p50 / p90 / max wall-clock
milliseconds, plus the p50 CPU time (user + system) of the child, which a busy machine inflates
less (the warm server's own CPU time is not included: it is another process). Cases are
interleaved run by run. PostToolUse calls use a different Bash command each run (so the embedding
is computed, never a cache hit) on a session that already holds steps; `python -c pass` and
`python -c 'import numpy'` baselines show the floor any Python process (and any process importing
semloop's core, which needs numpy) pays on this machine. The warm path is measured for
`hook codex` too (the same client, with a Codex event translated on the way), and every row is
also given as a ratio to the `python -c pass` process (wall and CPU), measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import interleaved, write_page


def _command(arg: str | None) -> list[str]:
    if arg:
        return shlex.split(arg)
    script = Path(sys.executable).parent / "semloop"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "semloop"]


def _event(name: str, i: int) -> dict:
    event = {"session_id": "bench", "cwd": "/tmp", "hook_event_name": name, "tool_name": "Bash",
             "tool_use_id": f"toolu_{i}", "tool_input": {"command": f"ls -la /srv/data/part-{i}", "description": "List"}}
    if name == "PostToolUse":
        event["tool_response"] = {"stdout": f"total {i}\nfile-{i}.csv\n", "stderr": "", "interrupted": False,
                                  "isImage": False}
    return event


def _time(argv: list[str], payload: bytes | None, env: dict) -> tuple[float, float]:
    """(wall ms, CPU ms) of one child process; CPU time is less sensitive to a busy machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, input=payload, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    elapsed = (time.perf_counter() - start) * 1000.0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000.0
    if proc.returncode != 0 or (payload is not None and not proc.stdout.strip().startswith(b"{")):
        raise SystemExit(f"hook failed: rc={proc.returncode} out={proc.stdout[:200]!r} err={proc.stderr[:300]!r}")
    return elapsed, cpu


def _summary(name: str, samples: list[tuple[float, float]]) -> dict:
    wall = sorted(w for w, _ in samples)
    cpu = sorted(c for _, c in samples)
    p90 = wall[min(len(wall) - 1, int(round(0.9 * (len(wall) - 1))))]
    row = {"case": name, "runs": len(wall), "p50_ms": round(statistics.median(wall), 1), "p90_ms": round(p90, 1),
           "max_ms": round(wall[-1], 1), "cpu_p50_ms": round(statistics.median(cpu), 1)}
    print(f"{name:<26} wall p50 {row['p50_ms']:7.1f} ms  p90 {row['p90_ms']:7.1f}  max {row['max_ms']:7.1f}"
          f"   cpu p50 {row['cpu_p50_ms']:7.1f} ms   (n={len(wall)})")
    return row


def _start_server(base: list[str], socket_path: str, env: dict) -> subprocess.Popen:
    from semloop.integrations import hook_protocol

    proc = subprocess.Popen(base + ["hook-server", "--socket", socket_path, "--idle-timeout", "600"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(socket_path + ".log", "ab"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        reply = hook_protocol.ping(socket_path)
        if reply and reply.get("pid") == proc.pid:
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"hook server did not start; see {socket_path}.log")


def _write(args: argparse.Namespace, rows: list[dict], load: float) -> None:
    floor = rows[0]
    lines = ["# Hook process latency", "",
             (f"`python benchmarks/hook_process_latency.py --runs {args.runs}"
              f"{' --embedding ' + args.embedding if args.embedding else ''}` — each case a fresh process, "
              f"{args.runs} interleaved runs; {platform.system()} {platform.machine()}, Python "
              f"{platform.python_version()}, {os.cpu_count()} cores, load average {load:.1f} at the start (a shared "
              "machine: compare rows of this table, not machines). cold: `SEMLOOP_HOOK_SERVER=0`, the process "
              "handles the event itself; warm: a hook server runs, the process is its client (`hook codex`: "
              "the same client, a Codex event translated on the way)."), "",
             "| process | wall p50, ms | wall p90, ms | CPU p50, ms | wall ÷ `python -c pass` "
             "| CPU ÷ `python -c pass` |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['case']} | {row['p50_ms']:.0f} | {row['p90_ms']:.0f} | {row['cpu_p50_ms']:.0f} | "
                     f"{row['p50_ms'] / floor['p50_ms']:.1f} | {row['cpu_p50_ms'] / floor['cpu_p50_ms']:.1f} |")
    lines += ["", f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."]
    write_page(args.out, lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--command", help="hook program to run (default: this venv's semloop script)")
    ap.add_argument("--embedding", choices=("static", "hashing"), help="write a config using this backend")
    ap.add_argument("--no-warm", action="store_true", help="cold path only (no hook server)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON too")
    ap.add_argument("--out", help="also write the rows as a markdown page (e.g. benchmarks/results/"
                                  "hook_process_latency.md)")
    args = ap.parse_args()

    base = _command(args.command)
    tmp = Path(tempfile.mkdtemp(prefix="slhb-", dir="/tmp" if os.path.isdir("/tmp") else None))
    server = None
    try:
        extra = []
        if args.embedding:
            (tmp / "config.json").write_text(json.dumps({"embedding": args.embedding}))
            extra = ["--config", str(tmp / "config.json")]
        env = {k: v for k, v in os.environ.items() if k not in ("SEMLOOP_SOCKET", "SEMLOOP_HOOK_SERVER")}
        env["PYTHONDONTWRITEBYTECODE"] = "0"
        cold_env = {**env, "SEMLOOP_HOOK_SERVER": "0"}
        warm_env = {**env, "SEMLOOP_SOCKET": str(tmp / "hook.sock")}
        paths = {"cold": (base + ["hook", "claude-code", "--db", str(tmp / "cold.sqlite3")] + extra, cold_env)}
        if not args.no_warm:
            server = _start_server(base, str(tmp / "hook.sock"), warm_env)
            paths["warm"] = (base + ["hook", "claude-code", "--db", str(tmp / "warm.sqlite3")] + extra, warm_env)
            paths["warm codex"] = (base + ["hook", "codex", "--db", str(tmp / "warm.sqlite3")] + extra, warm_env)
        # warm the OS page cache and the .pyc files; seed each session with a few steps
        for argv, penv in paths.values():
            for i in range(3):
                _time(argv, json.dumps(_event("PostToolUse", 10_000 + i)).encode(), penv)

        cases = {"python -c pass": ([sys.executable, "-c", "pass"], None, env),
                 "python -c 'import numpy'": ([sys.executable, "-c", "import numpy"], None, env)}
        for path, (argv, penv) in paths.items():
            for event in ("PreToolUse", "PostToolUse"):
                cases[f"{path} {event}"] = (argv, event, penv)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

        def case(cmd: list[str], event: str | None, penv: dict):
            return lambda i: _time(cmd, json.dumps(_event(event, i)).encode() if event else None, penv)

        samples = interleaved({name: case(*spec) for name, spec in cases.items()}, args.runs)
        if server is not None:
            from semloop.integrations import hook_protocol

            served = (hook_protocol.ping(str(tmp / "hook.sock")) or {}).get("served")
            expected = 3 * 2 + 2 * 2 * args.runs  # warm-up and cases of `hook claude-code` and `hook codex`
            if served != expected:
                print(f"warning: the server answered {served} of {expected} warm requests "
                      "(the rest fell back to in-process)", file=sys.stderr)
        rows = [_summary(name, times) for name, times in samples.items()]
        if args.json:
            print(json.dumps(rows))
        if args.out:
            _write(args, rows, load)
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
