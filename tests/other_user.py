"""A real second local user for the tests of what another user can do to semloop's hooks
(tests/test_hook_squatter.py): created with `useradd` when the tests run as root, and processes
run as that user with `setpriv` (`tests/squatter.py`)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

NAME = "semloop-other"
SQUATTER = Path(__file__).with_name("squatter.py")


def ensure_user() -> tuple[int, int] | None:
    """(uid, gid) of the test user, created if missing; None when this cannot be done here."""
    if os.name != "posix" or os.geteuid() != 0 or not shutil.which("setpriv"):
        return None
    try:
        entry = pwd.getpwnam(NAME)
    except KeyError:
        if not shutil.which("useradd"):
            return None
        made = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", NAME],
                              capture_output=True, check=False)
        if made.returncode != 0:
            return None
        entry = pwd.getpwnam(NAME)
    return entry.pw_uid, entry.pw_gid


class OtherUser:
    """Run commands as the test user; a scratch directory they can write (`self.dir`)."""

    def __init__(self, uid: int, gid: int):
        self.uid, self.gid = uid, gid
        self.dir = Path(tempfile.mkdtemp(prefix="slo-", dir="/tmp"))
        os.chmod(self.dir, 0o777)
        self.script = self.dir / "squatter.py"
        shutil.copy(SQUATTER, self.script)
        os.chmod(self.script, 0o644)
        self.procs: list[subprocess.Popen] = []

    def argv(self, *args: str) -> list[str]:
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups",
                sys.executable, "-I", str(self.script), *args]

    def run(self, *args: str, timeout: float = 120) -> str:
        proc = subprocess.run(self.argv(*args), capture_output=True, text=True, timeout=timeout, cwd=self.dir,
                              check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    def listen(self, kind: str, where: str, seconds: float = 300) -> Path:
        """A squatter on the TCP port / Unix socket `where`; returns the file of what it received."""
        log = self.dir / f"received-{len(self.procs)}.bin"
        proc = subprocess.Popen(self.argv(kind, where, str(log), str(seconds)), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=self.dir)
        self.procs.append(proc)
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
        return log

    def cleanup(self) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def received(log: Path) -> bytes:
    return log.read_bytes() if log.exists() else b""
