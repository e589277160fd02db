"""What the real-CLI hook tests of Codex CLI and Copilot CLI share: finding the pinned CLI that
`.ci/run` installs, and a temporary HOME / work directory / state database with semloop's hooks
installed, run against a scripted Responses API (tests/codex_cli.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from codex_cli import ScriptedResponses

REPO = Path(__file__).resolve().parent.parent
SEMLOOP = ([str(Path(sys.executable).parent / "semloop")] if (Path(sys.executable).parent / "semloop").is_file()
           else [sys.executable, "-m", "semloop"])


def pinned_cli(env_var: str, folder: str, name: str) -> str | None:
    """`$env_var`, or `<repo>/<folder>/node_modules/.bin/<name>` (where `.ci/run` installs the
    pinned version), or None. (Not the one on PATH: the tests want the pinned version.)"""
    explicit = os.environ.get(env_var)
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    if not shutil.which("node"):
        return None
    path = REPO / folder / "node_modules" / ".bin" / name
    return str(path) if os.access(path, os.X_OK) else None


class HookedCLI:
    """`semloop install <target> <before_install()> <install> --db ...` in a temporary HOME; `run(script)`
    runs the CLI (`runner(api, home, work, env=..., **kwargs)`) against a scripted Responses API.
    `mode`: "inprocess" (SEMLOOP_HOOK_SERVER=0) or "server" (the warm hook server)."""

    def __init__(self, target: str, mode: str, runner: Callable[..., Any], clean_env: Callable[[Path, dict], dict],
                 prefix: str = "slh-", install: tuple[str, ...] = ()):
        self.root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))  # short: AF_UNIX path limit
        self.home, self.work = self.root / "h", self.root / "w"
        self.home.mkdir()
        self.work.mkdir()
        self.db = self.root / "state.sqlite3"
        self.runner, self.clean_env = runner, clean_env
        self.env = {"SEMLOOP_HOOK_SERVER": "0"} if mode == "inprocess" else {}
        install_args = self.before_install()
        self.installed = subprocess.run(SEMLOOP + ["install", target, *install_args, *install, "--db", str(self.db)],
                                        env=clean_env(self.home, self.env), capture_output=True, text=True,
                                        check=False)
        assert self.installed.returncode == 0, self.installed.stderr

    def before_install(self) -> tuple[str, ...]:
        """Set up what the user had before `install`; returns extra `install` arguments."""
        return ()

    def run(self, script: list[dict], **kwargs: Any):
        with ScriptedResponses(script) as api:
            run = self.runner(api, self.home, self.work, env=self.env, **kwargs)
        assert run.returncode == 0, run.stderr[-3000:]
        return run, api

    def attempts(self) -> int:
        log = self.work / "attempts.log"
        return len(log.read_text().splitlines()) if log.exists() else 0

    def close(self) -> None:
        subprocess.run(SEMLOOP + ["hook-server", "--stop"], env=self.clean_env(self.home, self.env),
                       capture_output=True, timeout=30, check=False)
        shutil.rmtree(self.root, ignore_errors=True)


# each attempt leaves a line in attempts.log (`HookedCLI.attempts`), then fails the same way
FAILING = "echo attempt >> attempts.log; cat /etc/semloop-e2e/app.yaml"


def fixtures(setup: Callable[[str], HookedCLI]) -> tuple[Any, Any]:
    """The `setup` fixture (in-process and through the warm server) and the `inprocess` one."""
    import pytest

    @pytest.fixture(params=["inprocess", "server"])
    def both(request):
        s = setup(request.param)
        yield s
        s.close()

    @pytest.fixture
    def inprocess():
        s = setup("inprocess")
        yield s
        s.close()

    return both, inprocess
