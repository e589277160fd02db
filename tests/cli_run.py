"""One headless run of a real agent CLI and the JSON events it printed (`--output-format
stream-json`): what the Claude Code and Gemini CLI harnesses share. Each harness subclasses `CLIRun`
with how its own event stream names tool uses and results."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class CLIRun:
    returncode: int
    events: list[dict]
    stderr: str
    seconds: float

    @property
    def result(self) -> dict:
        """The run's closing `result` event ({} when the CLI died before printing one)."""
        for event in reversed(self.events):
            if event.get("type") == "result":
                return event
        return {}


def run_stream_json(argv: list[str], cwd: Path, env: dict, timeout: float) -> tuple[int, list[dict], str, float]:
    """Run `argv` with no stdin; (exit code, the JSON objects of stdout's lines, stderr, seconds).
    Lines that are not JSON objects (progress text, a torn last line) are skipped."""
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    events = []
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except ValueError:
                pass
    return proc.returncode, events, proc.stderr.decode("utf-8", "replace"), seconds
