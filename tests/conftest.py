import os
import sys
from pathlib import Path

import pytest

from semloop.integrations.claude_code import _store

ROOT = Path(__file__).resolve().parent.parent


# crewai pins mcp<2 and an older pydantic, so test_crewai.py runs in a venv of its own (.ci/run);
# elsewhere it is not collected at all (a skip would fail under CI=true, see tests/ci_no_skip.py)
collect_ignore = [] if os.environ.get("SEMLOOP_CREWAI_VENV") == "1" else ["test_crewai.py"]
# strands-agents pins mcp<2.2: test_strands.py runs in a venv of its own too (SEMLOOP_STRANDS_VENV=1)
if os.environ.get("SEMLOOP_STRANDS_VENV") != "1":
    collect_ignore.append("test_strands.py")
# openhands-sdk needs Python >= 3.12: test_openhands.py runs in a venv of its own too (.ci/run)
if os.environ.get("SEMLOOP_OPENHANDS_VENV") != "1":
    collect_ignore.append("test_openhands.py")

pytest_plugins = ["ci_no_skip"]  # under CI (CI=true) a skip is a failure: see tests/ci_no_skip.py


@pytest.fixture
def semloop_cmd():
    """The installed console script, run as a real subprocess (falls back to `python -m semloop`)."""
    import shutil

    exe = shutil.which("semloop")
    return [exe] if exe else [sys.executable, "-m", "semloop"]


# -- Claude Code hook payloads, shared by the hook and hook-server tests ----------------------

def bash_event(name: str, command: str, stdout: str = "", stderr: str = "", session: str = "sess-1",
               **more) -> dict:
    event = {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp", "permission_mode": "default",
             "hook_event_name": name, "tool_name": "Bash",
             "tool_input": {"command": command, "description": "Run the script"}, "tool_use_id": "toolu_01"}
    if name == "PostToolUse":
        event["tool_response"] = {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}
    event.update(more)
    return event


def stored(db: Path, key: str):
    store = _store(str(db))
    try:
        return store.load(key)
    finally:
        store.close()


# -- hooks run as real processes (tests/hook_processes.py) -----------------------------------

@pytest.fixture
def in_process_hooks(monkeypatch):
    """For tests of the in-process hook: never start a hook server in the user's cache
    (tests/test_hook_server.py covers the server)."""
    monkeypatch.setenv("SEMLOOP_HOOK_SERVER", "0")


@pytest.fixture
def srv(tmp_path):
    """A private warm hook server's environment (start it with `srv.start()`); every server
    process it saw is killed at teardown."""
    from hook_processes import PrivateHookServer

    server = PrivateHookServer(tmp_path)
    try:
        yield server
    finally:
        server.cleanup()
