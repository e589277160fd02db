"""Added time per tool call of Claude Code hooks, end to end with the real CLI.

    python benchmarks/hook_latency.py [--runs 7] [--calls 6] [--out benchmarks/results/hook_latency.md]

Runs the Claude Code CLI bundled in claude-agent-sdk against a scripted local Messages API
(`tests/claude_cli.py`) on the same `--calls`-tool-call run (distinct Bash commands, so semloop
stays quiet and records every call) with, in turn:

- no hooks (the baseline);
- a trivial shell command hook pair (PreToolUse + PostToolUse: `cat >/dev/null; echo {}`);
- a `python -c pass` hook pair (the floor of any Python process per event);
- semloop command hooks (`install`, the default: `--hooks command`), warm Unix-socket server already running;
- semloop http hooks (`install --hooks http`), whose SessionStart command hook checks the server
  (one Python process per run, i.e. per session);
- the same http hooks without that SessionStart hook: the cost per tool call alone;
- the floor of any http hook: the same events posted to a loopback server that answers `{}` at
  once, and that server as a PreToolUse + PostToolUse pair only.

Cases are interleaved run by run (after one warm-up round), in a temporary HOME. Reported: the
median wall time of the whole run and the **added ms per tool call** = (median(case) - median(no
hooks)) / calls. Absolute times depend on the machine (and its load); the differences measured in
the same run are the result.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from claude_cli import ScriptedAPI, claude_binary, clean_env, run_claude, tool_call  # noqa: E402
from loopback import reply_json, serve  # noqa: E402
from timing import interleaved, write_page  # noqa: E402

SEMLOOP = str(Path(sys.executable).parent / "semloop")


def _pair(command: str) -> dict:
    entry = {"type": "command", "command": command, "timeout": 15}
    return {"hooks": {e: [{"matcher": "*", "hooks": [entry]}] for e in ("PreToolUse", "PostToolUse")}}


class TrivialHook(BaseHTTPRequestHandler):
    """Answers every POST with `{}` at once: what an http hook costs Claude Code before the hook
    does anything."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        reply_json(self, {})


def _install(home: Path, settings: Path, db: Path, hooks: str) -> None:
    proc = subprocess.run([SEMLOOP, "install", "claude-code", "--settings", str(settings), "--db", str(db),
                           "--hooks", hooks], env=clean_env(home, "http://unused"), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "hook_latency.md"))
    args = ap.parse_args(argv)
    binary = claude_binary()
    if binary is None:
        raise SystemExit("the Claude Code CLI bundled in claude-agent-sdk is not installed")

    root = Path(tempfile.mkdtemp(prefix="slbench-", dir="/tmp"))
    home, work = root / "h", root / "w"
    home.mkdir()
    work.mkdir()
    cases: dict[str, Path | None] = {"no hooks": None}
    for name, command in (("trivial shell hook pair", "cat >/dev/null; echo '{}'"),
                          ("`python -c pass` hook pair", f"{shlex.quote(sys.executable)} -c pass")):
        path = root / f"{len(cases)}.json"
        path.write_text(json.dumps(_pair(command)))
        cases[name] = path
    for name, hooks in (("semloop command hooks (warm server)", "command"),
                        ("semloop http hooks (as installed: + 1 SessionStart process per run)", "http")):
        path = root / f"{len(cases)}.json"
        _install(home, path, root / f"{hooks}.sqlite3", hooks)
        cases[name] = path
    # the per-call cost alone: the same http hooks without the once-per-session SessionStart check
    per_call = json.loads(path.read_text())
    del per_call["hooks"]["SessionStart"]
    path = root / f"{len(cases)}.json"
    path.write_text(json.dumps(per_call))
    cases["semloop http hooks, without SessionStart (server running)"] = path
    # the floor for any http hook: the same events posted to a loopback server that answers `{}` at once
    trivial = serve(TrivialHook)  # lives as long as this process
    floor = json.loads(json.dumps(per_call))
    for matchers in floor["hooks"].values():
        for matcher in matchers:
            for hook in matcher["hooks"]:
                hook["url"] = f"{trivial.url}/hook"
    path = root / f"{len(cases)}.json"
    path.write_text(json.dumps(floor))
    cases["trivial http hooks, the same events (a loopback server answering `{}`)"] = path
    pair = {"hooks": {e: floor["hooks"][e] for e in ("PreToolUse", "PostToolUse")}, "env": floor.get("env", {})}
    path = root / f"{len(cases)}.json"
    path.write_text(json.dumps(pair))
    cases["trivial http hook pair (that server, PreToolUse + PostToolUse only)"] = path

    env = clean_env(home, "http://unused")
    subprocess.Popen([SEMLOOP, "hook-server", "--idle-timeout", "900"], env=env, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    script = [tool_call("Bash", command=f"echo part-{i} > /dev/null; echo {i}", description="step")
              for i in range(args.calls)]

    def case(name: str, settings: Path | None):
        def run_once(_round: int) -> float:
            with ScriptedAPI(script) as api:
                run = run_claude(binary, api, home, work, settings, max_turns=args.calls + 2, timeout=900)
            calls = len(run.tool_uses())
            if run.result.get("terminal_reason") != "completed" or calls != args.calls:
                raise SystemExit(f"{name}: run did not complete as scripted ({calls} calls, "
                                 f"{run.result.get('terminal_reason')}): {run.stderr[-500:]}")
            return run.seconds

        return run_once

    def progress(round_: int, seconds: dict[str, list[float]]) -> None:
        print(f"round {round_}: " + ", ".join(f"{n.split(' (')[0]} {seconds[n][-1]:.2f}s" for n in cases), flush=True)

    try:
        # one warm-up round first (server, page cache), not kept
        seconds = interleaved({name: case(name, settings) for name, settings in cases.items()}, args.runs,
                              warmup=1, after_round=progress)
    finally:
        subprocess.run([SEMLOOP, "hook-server", "--stop"], env=env, capture_output=True)

    base = statistics.median(seconds["no hooks"])
    rows = []
    for name, values in seconds.items():
        med = statistics.median(values)
        added = (med - base) * 1000.0 / args.calls
        rows.append((name, med, added))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        "# Claude Code hook latency, end to end",
        "",
        f"`python benchmarks/hook_latency.py --runs {args.runs} --calls {args.calls}` — the bundled Claude Code "
        f"CLI ({subprocess.run([binary, '--version'], capture_output=True, text=True).stdout.strip()}) against a "
        f"scripted local Messages API, the same {args.calls}-tool-call run per case, {args.runs} interleaved runs "
        f"each after a warm-up round; {platform.system()} {platform.machine()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores, load average {load:.1f} at the end (a shared machine: compare rows of this "
        "table, not machines).",
        "",
        "| hooks (PreToolUse + PostToolUse on every call) | median run, s | added per tool call, ms |",
        "|---|---|---|",
    ]
    for name, med, added in rows:
        lines.append(f"| {name} | {med:.2f} | {'—' if name == 'no hooks' else f'{added:+.0f}'} |")
    lines += ["", f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."]
    write_page(args.out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
