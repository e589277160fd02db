"""The real Gemini CLI (`@google/gemini-cli`, pinned and installed by `.ci/run` under `.gemini-cli/`)
with semloop's hooks, against a scripted local Gemini API (`gemini_cli.ScriptedGemini`): how each
headless run (`gemini -p ... --output-format stream-json --yolo`) ends, what ran, and what the
model was sent.

The hooks are written by `semloop install gemini-cli --settings $HOME/.gemini/settings.json` (the
user settings the CLI reads). Two ways they run: handled in each hook process (`inprocess`) and
through the warm Unix-socket server (`server`, the default).

Gemini CLI has a loop detector of its own: five identical consecutive tool calls (same name and
arguments) and it ends the run ("Loop detected, stopping execution") before the fifth runs.
semloop refuses the fourth, one call earlier. The exact-repeat scenario runs with
`model.disableLoopDetection: true`, to show semloop's own stop on its own, and once with the
defaults, to show what a user gets there (semloop's stop, before the built-in detector fires);
the other scenarios use the defaults.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from edit_session import EDITED, EDITS, MOVING, MOVING_TOTALS, RUN_CHECK, STUCK, STUCK_OUTPUT, prepare, totals
from gemini_cli import ScriptedGemini, base_settings, clean_env, function_call, gemini_binary, run_gemini
from semloop_texts import added_by_semloop

BINARY = gemini_binary()
pytestmark = [
    pytest.mark.skipif(BINARY is None, reason="the Gemini CLI is not installed: `.ci/run` installs the pinned "
                       "@google/gemini-cli under .gemini-cli/ (or set SEMLOOP_GEMINI_CLI to a gemini binary)"),
    pytest.mark.skipif(os.name == "nt", reason="POSIX only"),
]

NOTE = "[semloop] This run_shell_command call repeats"
BLOCKED = "semloop blocked this run_shell_command call"


def _semloop() -> list[str]:
    script = Path(sys.executable).parent / "semloop"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "semloop"]


SEMLOOP = _semloop()


class Setup:
    """A temporary HOME (its own cache dir, so its own hook server and socket), a work directory,
    the state database, and `$HOME/.gemini/settings.json`: headless auth settings plus the hooks
    written by `semloop install gemini-cli`."""

    def __init__(self, mode: str, *install_args: str, **settings):
        self.mode = mode
        self.root = Path(tempfile.mkdtemp(prefix="slg-", dir="/tmp"))  # short: AF_UNIX path limit
        self.home, self.work = self.root / "h", self.root / "w"
        (self.home / ".gemini").mkdir(parents=True)
        self.work.mkdir()
        self.db = self.root / "state.sqlite3"
        self.settings = self.home / ".gemini" / "settings.json"
        self.settings.write_text(json.dumps(base_settings(**settings)))
        self.env = {"SEMLOOP_HOOK_SERVER": "0"} if mode == "inprocess" else {}
        proc = subprocess.run(SEMLOOP + ["install", "gemini-cli", "--settings", str(self.settings),
                                         "--db", str(self.db), *install_args],
                              env=clean_env(self.home, "http://unused", self.env), capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        data = json.loads(self.settings.read_text())
        assert data["security"]["auth"]["selectedType"] == "gemini-api-key"  # kept by install
        assert set(data["hooks"]) == {"BeforeTool", "AfterTool", "BeforeAgent"} | (
            {"SessionStart"} if "--guidance" in install_args else set())

    def run(self, script: list[dict]):
        with ScriptedGemini(script) as api:
            run = run_gemini(BINARY, api, self.home, self.work, env=self.env)
        return run, api

    def attempts(self) -> int:
        log = self.work / "attempts.log"
        return len(log.read_text().splitlines()) if log.exists() else 0

    def close(self) -> None:
        subprocess.run(SEMLOOP + ["hook-server", "--stop"], env=clean_env(self.home, "http://unused", self.env),
                       capture_output=True, timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(params=["inprocess", "server"])
def no_builtin_detector(request):
    s = Setup(request.param, model={"disableLoopDetection": True})
    yield s
    s.close()


@pytest.fixture
def defaults():
    s = Setup("server")
    yield s
    s.close()


# each attempt leaves a line in attempts.log, then fails the same way
FAILING = "echo attempt >> attempts.log; cat /etc/semloop-e2e/app.yaml"


def _failing_calls(n: int) -> list[dict]:
    return [function_call("run_shell_command", command=FAILING, description="show the config")] * n


def _assert_notes_on_real_results(sent: list[str], *, calls: int) -> None:
    assert len(sent) == calls
    assert all("No such file or directory" in t and "Exit Code: 1" in t for t in sent)  # the tool's own text
    assert [NOTE in t for t in sent] == [False, False] + [True] * (calls - 2)
    assert all("<hook_context>[semloop]" in t for t in sent[2:])  # where Gemini CLI puts additionalContext


def test_repeated_failing_call_gets_notes_then_the_run_ends(no_builtin_detector):
    setup = no_builtin_detector
    run, api = setup.run(_failing_calls(12))
    assert run.returncode == 0, run.stderr[-2000:]
    # call 3 carries a note; call 4 continues the loop just warned about: BeforeTool refuses it
    # and `continue: false` ends the agent loop
    uses, results = run.tool_uses(), run.tool_results()
    assert len(uses) == len(results) == 4  # not the 12 scripted
    assert [r["status"] for r in results] == ["success"] * 3 + ["error"]
    stop = results[-1]
    assert stop["error"]["type"] == "stop_execution"
    assert BLOCKED in stop["error"]["message"] and "The call was not run" in stop["error"]["message"]
    assert stop["output"].startswith("Agent execution stopped by hook: " + BLOCKED)
    assert run.result.get("status") == "success"  # a hook stop ends the headless run cleanly
    assert setup.attempts() == 3  # the refused call never ran, and nothing ran after it
    assert len(api.main_requests()) == 4  # the model was not asked again after the stop
    _assert_notes_on_real_results(api.sent_texts(), calls=3)


def test_the_next_prompt_lifts_the_stop_and_the_loop_is_flagged_again_at_once():
    setup = Setup("inprocess", model={"disableLoopDetection": True})
    try:
        first, _ = setup.run(_failing_calls(12))
        assert first.tool_results()[-1]["error"]["type"] == "stop_execution" and setup.attempts() == 3
        # the user answers in the same session: BeforeAgent lifts the stop, the loop memory stays
        with ScriptedGemini(_failing_calls(30)) as api:
            run = run_gemini(BINARY, api, setup.home, setup.work, prompt="Try once more.", env=setup.env,
                             extra_args=("--resume", "latest"))
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.events[0].get("session_id") == first.events[0].get("session_id")
        results = run.tool_results()
        assert [r["status"] for r in results] == ["success", "error"]
        assert BLOCKED in results[-1]["error"]["message"]
        assert setup.attempts() == 4  # one more ran, the next was refused
        assert len(api.main_requests()) == 2
        assert NOTE in api.sent_texts()[-1]  # the first repeat already carries a note
    finally:
        setup.close()


def test_with_gemini_cli_defaults_semloop_ends_an_exact_repeat_before_its_own_detector(defaults):
    # Gemini CLI would drop the 5th identical call itself; semloop's BeforeTool refuses the 4th
    # (it continues the loop warned about on call 3), so the built-in detector never fires
    run, api = defaults.run(_failing_calls(12))
    assert run.returncode == 0, run.stderr[-2000:]
    assert not any(e.get("type") == "error" for e in run.events)  # no "Loop detected"
    results = run.tool_results()
    assert [r["status"] for r in results] == ["success"] * 3 + ["error"]
    assert results[-1]["error"]["type"] == "stop_execution" and BLOCKED in results[-1]["error"]["message"]
    assert defaults.attempts() == 3  # the refused call never ran
    assert run.result.get("status") == "success"
    _assert_notes_on_real_results(api.sent_texts(), calls=3)


def test_same_error_from_varied_calls_is_stopped_where_the_builtin_detector_sees_nothing(defaults):
    # every command differs (a comment), so Gemini CLI's exact-repeat detector stays silent; semloop
    # sees reworded calls with one result: a note on call 3, and after call 4 (a new wording, so
    # BeforeTool cannot refuse it) AfterTool's `continue: false` ends the run (the CLI puts the
    # stop message in place of that call's result)
    script = [function_call("run_shell_command", command=f"echo attempt >> attempts.log; exit 3  # try {i}",
                            description="try again") for i in range(12)]
    run, api = defaults.run(script)
    assert run.returncode == 0, run.stderr[-2000:]
    assert not any(e.get("type") == "error" for e in run.events)  # no "Loop detected"
    results = run.tool_results()
    assert [r["status"] for r in results] == ["success"] * 3 + ["error"]
    stop = results[-1]["error"]
    assert stop["type"] == "stop_execution"
    assert stop["message"].startswith("semloop stopped this run") and "The run ends here" in stop["message"]
    assert run.result.get("status") == "success"
    assert defaults.attempts() == 4  # call 4 ran (AfterTool stops after it), nothing after it
    assert len(api.main_requests()) == 4  # the model was not asked again after the stop
    sent = api.sent_texts()
    assert len(sent) == 3 and all("Exit Code: 3" in t for t in sent)
    assert [NOTE in t for t in sent] == [False, False, True]


def test_varied_files_stay_quiet(defaults):
    for i in range(6):
        (defaults.work / f"part-{i}.csv").write_text(f"id,value\n{i},{i * 37}\n")
    script = [function_call("run_shell_command", command=f"cat part-{i}.csv", description="show") for i in range(6)]
    run, api = defaults.run(script)
    assert run.returncode == 0, run.stderr[-2000:]
    assert [r["status"] for r in run.tool_results()] == ["success"] * 6
    assert run.result.get("status") == "success"
    assert any(e.get("type") == "message" and e.get("role") == "assistant" and "Done." in e.get("content", "")
               for e in run.events)  # the model's final answer: the run went to its end
    sent = api.sent_texts()
    assert len(sent) == 6 and [f"{i},{i * 37}" in t for i, t in enumerate(sent)] == [True] * 6
    # in no request, not just the tool results; the requests do name the CLI's install path, which
    # contains `semloop` in a clone of that name: look for what semloop adds, not for the word
    assert added_by_semloop(api.everything_sent()) == []
    assert not any("hook_context" in t for t in sent)


def test_install_guidance_puts_the_block_before_the_first_prompt_and_notes_quote_the_earlier_result():
    from semloop import guidance

    setup = Setup("inprocess", "--guidance", model={"disableLoopDetection": True})
    try:
        run, api = setup.run(_failing_calls(12))
        assert run.returncode == 0, run.stderr[-2000:]
        first = json.dumps(api.main_requests()[0]["contents"], ensure_ascii=False)
        assert "<hook_context>" in first
        for line in guidance().splitlines():  # the exact text, as JSON escapes it
            assert json.dumps(line, ensure_ascii=False)[1:-1] in first, line
        sent = api.sent_texts()
        assert all("Step 0 already failed the same way: `" in t and "a not-found error" in t for t in sent[2:]), sent[2]
    finally:
        setup.close()


def test_without_guidance_nothing_is_added_at_session_start(defaults):
    run, api = defaults.run([function_call("run_shell_command", command="echo hi", description="greet")])
    assert run.returncode == 0
    assert "going in circles" not in json.dumps(api.main_requests()[0], ensure_ascii=False)


# -- edit → rerun: Gemini CLI's replace answers with the updated code around the change ----------

def _edit_session(setup: Setup, total: str) -> tuple[list[str], list[str]]:
    """read_file settings.py, then three rounds of the real `replace` changing another of its lines
    and `run_shell_command` running the check. Returns every function response the model was sent
    and the check's output of each run, in order."""
    settings = prepare(setup.work, total)
    script = [function_call("read_file", file_path=str(settings))]
    for old, new in EDITS:
        script.append(function_call("replace", file_path=str(settings), old_string=old, new_string=new,
                                    instruction=f"Set {new.split()[0]} to {new.split()[-1]} in settings.py."))
        script.append(function_call("run_shell_command", command=RUN_CHECK, description="run the check"))
    run, api = setup.run(script)
    assert run.returncode == 0, run.stderr[-2000:]
    assert settings.read_text() == EDITED  # the edits ran
    assert [u.get("tool_name") for u in run.tool_uses()] == [c["name"] for c in script]
    sent = api.sent_texts()
    return sent, [t for t, call in zip(sent, script) if call["name"] == "run_shell_command"]


def test_edits_that_leave_the_check_failing_the_same_way_are_a_loop(defaults):
    """Each round changes another line, but the check prints the same failure: the third run with
    nothing moved gets the note, nothing before it does (the replace answers quote different
    lines of one file: two changes, not one made twice)."""
    sent, checks = _edit_session(defaults, STUCK)
    assert len(checks) == 3 and all(STUCK_OUTPUT in t for t in checks), checks
    assert [bool(added_by_semloop(t)) for t in sent] == [False] * 6 + [True], [t[-400:] for t in sent]
    assert NOTE in sent[-1]


def test_edits_that_move_the_check_output_are_progress(defaults):
    """The same session, but the check prints another total after every edit, then passes."""
    sent, checks = _edit_session(defaults, MOVING)
    assert totals(checks) == MOVING_TOTALS, checks
    assert len(sent) == 7 and not any(added_by_semloop(t) for t in sent), [t[-400:] for t in sent]
