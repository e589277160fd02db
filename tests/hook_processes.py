"""The `semloop` command and a private warm hook server, for the tests that run hooks as real
processes (tests/test_claude_code.py, test_gemini_cli.py, test_hook_server.py,
test_hook_reliability.py; their fixtures are in conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from semloop.integrations import hook_protocol as hp


def _semloop() -> list[str]:
    """This interpreter's `semloop` script, else `python -m semloop`: the code under test either way."""
    script = Path(sys.executable).parent / "semloop"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "semloop"]


SEMLOOP = _semloop()


class PrivateHookServer:
    """A private socket directory (short path: AF_UNIX limit), the env pointing at it, and every
    server process seen, killed at teardown."""

    def __init__(self, tmp_path: Path):
        self.dir = Path(tempfile.mkdtemp(prefix="slh-", dir="/tmp"))
        self.socket = str(self.dir / "s.sock")
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("SEMLOOP_") or k in ("SEMLOOP_MODEL_DIR",)}
        self.env.update(SEMLOOP_SOCKET=self.socket, XDG_CACHE_HOME=str(tmp_path / "cache"))
        self.pids: set[int] = set()
        self.procs: list[subprocess.Popen] = []

    def start(self, idle: float = 60.0) -> int:
        with open(self.socket + ".log", "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "semloop", "hook-server", "--idle-timeout", str(idle)],
                                    env=self.env, stdout=subprocess.DEVNULL, stderr=log)
        self.procs.append(proc)
        self.pids.add(proc.pid)
        reply = self.wait_for_server()
        assert reply["pid"] == proc.pid
        return proc.pid

    def ping(self) -> dict | None:
        reply = hp.ping(self.socket)
        if reply:
            self.pids.add(reply["pid"])
        return reply

    def wait_for_server(self, timeout: float = 20.0, not_pid: int | None = None) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = self.ping()
            if reply and reply["pid"] != not_pid:
                return reply
            time.sleep(0.05)
        log = Path(self.socket + ".log")
        raise AssertionError(f"no server on {self.socket}; log: {log.read_text() if log.exists() else '-'}")

    def hook(self, db: Path, event: dict | str, *extra: str, env: dict | None = None) -> tuple[dict, str]:
        payload = event if isinstance(event, str) else json.dumps(event)
        proc = subprocess.run(SEMLOOP + ["hook", "claude-code", "--db", str(db), *extra], input=payload.encode(),
                              capture_output=True, timeout=60, env={**self.env, **(env or {})})
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.decode().strip().splitlines()
        assert len(lines) == 1, proc.stdout
        return json.loads(lines[0]), proc.stderr.decode()

    def cleanup(self) -> None:
        reply = hp.ping(self.socket, timeout=0.5)
        if reply:
            self.pids.add(reply["pid"])
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
