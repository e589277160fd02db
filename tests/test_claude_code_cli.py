"""The real Claude Code CLI (bundled in claude-agent-sdk) with semloop's hooks, against a scripted
local Messages API (`claude_cli.ScriptedAPI`): how each run ends and what the model was sent.

Three ways the hooks run: command hooks handled in each hook process (`inprocess`), command hooks
through the warm Unix-socket server (`server`), and http hooks answered by the server on loopback
(`http`, what `semloop install claude-code --hooks http` writes; the default is command hooks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from claude_cli import ScriptedAPI, claude_binary, clean_env, run_claude, tool_call
from conftest import stored
from edit_session import EDITED, EDITS, MOVING, MOVING_TOTALS, RUN_CHECK, STUCK, STUCK_OUTPUT, prepare, totals
from semloop_texts import added_by_semloop

BINARY = claude_binary()
pytestmark = [
    pytest.mark.skipif(BINARY is None, reason="the Claude Code CLI bundled in claude-agent-sdk is not installed"),
    pytest.mark.skipif(os.name == "nt", reason="POSIX only"),
]

NOTE = "[semloop] This Bash call repeats"
SEMLOOP = [str(Path(sys.executable).parent / "semloop")]


class Setup:
    """A temporary HOME (its own cache dir, so its own server, socket and http port), a work
    directory, the state database and a settings file written by `semloop install claude-code`."""

    def __init__(self, mode: str, *install_args: str):
        self.mode = mode
        self.root = Path(tempfile.mkdtemp(prefix="slc-", dir="/tmp"))  # short: AF_UNIX path limit
        self.home, self.work = self.root / "h", self.root / "w"
        self.home.mkdir()
        self.work.mkdir()
        self.db = self.root / "state.sqlite3"
        self.settings = self.root / "settings.json"
        self.env = {"SEMLOOP_HOOK_SERVER": "0"} if mode == "inprocess" else {}
        hooks = "http" if mode == "http" else "command"
        proc = subprocess.run(SEMLOOP + ["install", "claude-code", "--settings", str(self.settings),
                                         "--db", str(self.db), "--hooks", hooks, *install_args],
                              env=clean_env(self.home, "http://unused", self.env), capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr

    def run(self, script: list[dict], max_turns: int = 14):
        with ScriptedAPI(script) as api:
            run = run_claude(BINARY, api, self.home, self.work, self.settings, max_turns=max_turns, env=self.env)
        return run, api

    def close(self) -> None:
        subprocess.run(SEMLOOP + ["hook-server", "--stop"], env=clean_env(self.home, "http://unused", self.env),
                       capture_output=True, timeout=30)


@pytest.fixture(params=["inprocess", "server", "http"])
def setup(request):
    s = Setup(request.param)
    yield s
    s.close()


def _setup_fixture(*modes: str):
    @pytest.fixture(params=modes)
    def fixture(request):
        s = Setup(request.param)
        yield s
        s.close()

    return fixture


# each run of the real CLI takes seconds: every mode for the main scenario, fewer for the others
quiet_setup = _setup_fixture("inprocess", "http")
http_setup = _setup_fixture("http")
varied_error_setup = _setup_fixture("server", "http")


def _texts(results: list[dict]) -> list[str]:
    out = []
    for block in results:
        content = block.get("content")
        if isinstance(content, list):
            content = "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
        out.append(str(content))
    return out


def _assert_hard_stop(run, api) -> None:
    """The very same call with the same result, 14 times scripted: calls 1 and 2 run quietly, call 3
    runs and its result carries the note, call 4 continues the loop just warned about and is refused
    before it runs; the run ends there (not at the 14 of --max-turns)."""
    result = run.result
    assert result.get("terminal_reason") == "hook_stopped", (result, run.stderr[-2000:])
    assert run.returncode == 0 and result.get("subtype") == "success"
    assert len(run.tool_uses()) == 4
    sent = _texts(api.tool_results())
    assert [NOTE in t for t in sent] == [False, False, True]  # the soft block reached the model ...
    assert all("Exit code" in t or "hello" in t for t in sent)  # ... with the real output


def test_repeated_failing_call_gets_notes_then_the_run_ends(setup):
    run, api = setup.run([tool_call("Bash", command="ls /nonexistent-dir", description="list")] * 14)
    # call 3 carries a note; call 4 continues the flagged loop: denied, and the run ends there
    _assert_hard_stop(run, api)
    denied = _texts(run.tool_results())[-1]
    assert "semloop blocked this Bash call" in denied
    # SessionEnd dropped the session's state (nothing waits for the 7-day expiry)
    assert stored(setup.db, run.result["session_id"]) is None


def test_repeated_succeeding_call_with_the_same_output_ends_the_same_way(http_setup):
    run, api = http_setup.run([tool_call("Bash", command="echo hello", description="greet")] * 14)
    _assert_hard_stop(run, api)


def test_same_error_from_varied_calls_ends_before_the_next_call_runs(varied_error_setup):
    setup = varied_error_setup
    # call 3's result carries the note; call 4 (a new wording, so no pre-call check can refuse it)
    # runs and its PostToolUseFailure stops the run, but that hook cannot end a run: the next
    # PreToolUse ends it before call 5 runs (http and command hooks alike: no PostToolBatch hook,
    # see claude_code.EVENTS)
    script = [tool_call("Bash", command=f"exit 3  # attempt {i}", description="try") for i in range(14)]
    run, api = setup.run(script)
    assert run.result.get("terminal_reason") == "hook_stopped", run.result
    assert len(run.tool_uses()) == 5
    assert [NOTE in t for t in _texts(api.tool_results())] == [False, False, True, False]


def test_varied_files_stay_quiet(quiet_setup):
    for i in range(6):
        (quiet_setup.work / f"part-{i}.csv").write_text(f"id,value\n{i},{i * 37}\n")
    script = [tool_call("Bash", command=f"cat part-{i}.csv", description="show") for i in range(6)]
    run, api = quiet_setup.run(script)
    assert run.result.get("terminal_reason") == "completed", run.result
    sent = _texts(api.tool_results())
    assert len(sent) == 6 and not any(added_by_semloop(t) for t in sent)
    assert [t.split("\n")[1] for t in sent] == [f"{i},{i * 37}" for i in range(6)]


def test_pagination_stays_quiet(http_setup):
    quiet_setup = http_setup
    (quiet_setup.work / "log.txt").write_text("".join(f"line {i}: event {i * 7}\n" for i in range(120)))
    script = [tool_call("Bash", command=f"sed -n '{p * 20 + 1},{p * 20 + 20}p' log.txt", description="page")
              for p in range(6)]
    run, api = quiet_setup.run(script)
    assert run.result.get("terminal_reason") == "completed", run.result
    sent = _texts(api.tool_results())
    assert len(sent) == 6 and not any(added_by_semloop(t) for t in sent)


parallel_setup = _setup_fixture("inprocess", "server")


def _hook_responses(run, event: str) -> list[dict]:
    return [e for e in run.hook_events if e.get("subtype") == "hook_response" and e.get("hook_event") == event]


def test_parallel_calls_run_their_hooks_at_once_and_every_step_counts_once(parallel_setup):
    """One assistant message calling Read three times: Claude Code runs the three calls, and their
    hooks, at once, each hook its own process, on a database no hook has opened yet (the race that
    lost a step: docs/store.md). Every hook answers cleanly (a hook that fails open says so on
    stderr), and each step is recorded exactly once: three identical reads make the third a repeat
    of steps 0 and 1, so exactly one result carries the note and the run completes — one lost step
    would leave no note, one step counted twice would make a fourth repeat, which stops the run."""
    setup = parallel_setup
    (setup.work / "orders.csv").write_text("id,total\n181,37.50\n182,12.00\n")
    run, api = setup.run([[tool_call("Read", file_path=str(setup.work / "orders.csv"))] * 3])
    assert run.result.get("terminal_reason") == "completed", (run.result, run.stderr[-2000:])
    assert len(run.tool_uses()) == 3
    for event in ("PreToolUse", "PostToolUse"):
        answers = _hook_responses(run, event)
        assert len(answers) == 3 and all(a["exit_code"] == 0 and not a["stderr"].strip() for a in answers), answers
    sent = _texts(api.tool_results())
    assert len(sent) == 3 and all("181,37.50" in t for t in sent)  # the real output, kept
    notes = [t for t in sent if "[semloop] This Read call repeats" in t]
    assert len(notes) == 1 and "[semloop] This Read call repeats earlier step(s) 0, 1 " in notes[0], notes


def test_installed_http_settings_hold_the_token_privately():
    s = Setup("http")
    try:
        data = json.loads(s.settings.read_text())
        assert s.settings.stat().st_mode & 0o077 == 0
        token = data["env"]["SEMLOOP_HOOK_TOKEN"]
        pre = data["hooks"]["PreToolUse"][0]["hooks"][0]
        assert pre["type"] == "http" and pre["url"].startswith("http://127.0.0.1:")
        assert pre["headers"] == {"X-Semloop-Token": "$SEMLOOP_HOOK_TOKEN"} and token not in json.dumps(pre)
        assert pre["allowedEnvVars"] == ["SEMLOOP_HOOK_TOKEN"]
        assert data["hooks"]["SessionStart"][0]["hooks"][0]["type"] == "command"
        server_file = s.home / ".cache" / "semloop" / "hook-http.json"
        assert server_file.stat().st_mode & 0o777 == 0o600
        assert json.loads(server_file.read_text())["token"] == token
    finally:
        s.close()


def _sent_texts(api) -> str:
    """Everything the model was sent in the longest main-loop request (system prompt, messages)."""
    body = max(api.main_requests(), key=lambda r: len(json.dumps(r)))
    return json.dumps(body, ensure_ascii=False)


@pytest.mark.parametrize("mode", ["inprocess", "http"])
def test_the_note_quotes_the_earlier_output_and_the_refusal_says_how_to_resume(mode):
    s = Setup(mode)
    try:
        run, api = s.run([tool_call("Bash", command="ls /nonexistent-dir", description="list")] * 14)
        _assert_hard_stop(run, api)
        notes = [t for t in api.user_texts_after_results() + _texts(api.tool_results()) if NOTE in t]
        assert notes and all(("Step 0 already failed the same way: `Exit code 2 ls: cannot access '/nonexistent-dir': "
                              "No such file or directory`.") in t
                             for t in notes), [t[t.find("[semloop]"):] for t in notes]
        assert all("a not-found error" in t for t in notes)
        denied = _texts(run.tool_results())[-1]
        session = run.result["session_id"]
        assert "The run is stopped at step 3." in denied  # steps count from 0: the 4th call
        assert f"The user's next message lifts the stop, and so does `semloop sessions reset {session}`." in denied
        assert "semloop guidance" not in _sent_texts(api) and "going in circles" not in _sent_texts(api)
    finally:
        s.close()


@pytest.mark.parametrize("mode", ["inprocess", "http"])
def test_install_guidance_puts_the_block_in_the_session_context(mode):
    from semloop import guidance

    s = Setup(mode, "--guidance")
    try:
        start = json.loads(s.settings.read_text())["hooks"]["SessionStart"][0]["hooks"][0]
        assert start["type"] == "command" and start["command"].endswith(" --guidance")
        run, api = s.run([tool_call("Bash", command="echo hello", description="greet")])
        assert run.result.get("terminal_reason") == "completed", run.result
        sent = _sent_texts(api)
        # the exact text, as JSON escapes it: every line of the block reached the model
        for line in guidance().splitlines():
            assert json.dumps(line, ensure_ascii=False)[1:-1] in sent, line
        starts = _hook_responses(run, "SessionStart")
        assert starts and all(a["exit_code"] == 0 for a in starts), starts
    finally:
        s.close()


# -- edit → rerun through the real CLI: Claude Code's Edit answers with a snippet, not "ok" -------

def _edit_rerun_script(work: Path) -> list[dict]:
    """Read settings.py, then three times: Edit another of its lines and run the check."""
    script = [tool_call("Read", file_path=str(work / "settings.py"))]
    for old, new in EDITS:
        script.append(tool_call("Edit", file_path=str(work / "settings.py"), old_string=old, new_string=new))
        script.append(tool_call("Bash", command=RUN_CHECK, description="run the check"))
    return script


def _check_results(run) -> list[str]:
    """What the CLI handed the model for each run of the check, in order."""
    uses = {u["id"]: u for u in run.tool_uses()}
    return [_texts([block])[0] for block in run.tool_results() if uses.get(block.get("tool_use_id"), {}).get("name") == "Bash"]


def _edit_session(setup, total: str):
    settings = prepare(setup.work, total)
    run, api = setup.run(_edit_rerun_script(setup.work))
    assert settings.read_text() == EDITED  # the edits ran
    return run, _check_results(run), _texts(api.tool_results())


def test_edits_that_leave_the_check_failing_the_same_way_are_a_loop(http_setup):
    """Each round the real Edit tool changes another line of settings.py, but the check prints the
    same failure after every edit. The first rerun may be a fix that did not take; the second with
    nothing moved gets the note (tests/test_edit_rerun.py, here with the real CLI's Edit and Bash
    responses: Edit answers with the edited snippet, so only knowing it edits makes it a write)."""
    run, checks, sent = _edit_session(http_setup, STUCK)
    assert len(checks) == 3 and all(STUCK_OUTPUT in t for t in checks), checks
    assert [bool(added_by_semloop(t)) for t in sent] == [False] * 6 + [True], [t[-400:] for t in sent]
    assert "[semloop] This Bash call repeats" in sent[-1]


def test_edits_that_move_the_check_output_are_progress(http_setup):
    """The same session, but the check reads what the edits change: another total after every
    edit, then the pass. Every rerun brought news: nothing is added to any result."""
    run, checks, sent = _edit_session(http_setup, MOVING)
    assert run.result.get("terminal_reason") == "completed", run.result
    assert totals(checks) == MOVING_TOTALS, checks
    assert len(sent) == 7 and not any(added_by_semloop(t) for t in sent), [t[-400:] for t in sent]
