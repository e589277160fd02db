"""The real GitHub Copilot CLI (`@github/copilot`, pinned and installed by `.ci/run` under
`.copilot-cli/`) with semloop's hooks, offline against a scripted local Responses API
(tests/copilot_cli.py): what ran, and what the model was sent.

The hooks are written by `semloop install copilot` into `$COPILOT_HOME/hooks/semloop.json`. What
Copilot CLI honours (checked here): a permissionRequest `{"behavior": "deny", "interrupt": true}`
keeps the call from running and ends the run (permissionRequest follows preToolUse for every tool
that needs a permission, even with --yolo); a preToolUse `permissionDecision: "deny"` refuses a
call and the run goes on; the reference says a command hook's postToolUse output is not read, yet
the CLI appends its `additionalContext` to the tool's output, which is where semloop's notes go.
"""

from __future__ import annotations

import json
import os

import pytest
from codex_cli import call
from edit_session import EDITED, EDITS, MOVING, MOVING_TOTALS, RUN_CHECK, STUCK, STUCK_OUTPUT, prepare, totals
from semloop_texts import added_by_semloop
from copilot_cli import clean_env, copilot_binary, run_copilot
from hooked_cli import FAILING, HookedCLI, fixtures

BINARY = copilot_binary()
pytestmark = [
    pytest.mark.skipif(BINARY is None, reason="the Copilot CLI is not installed: `.ci/run` installs the pinned "
                       "@github/copilot under .copilot-cli/ (or set SEMLOOP_COPILOT_CLI to a copilot binary)"),
    pytest.mark.skipif(os.name == "nt", reason="POSIX only"),
]

BLOCKED = "semloop blocked this bash call"


class Setup(HookedCLI):
    """`semloop install copilot` writes `$COPILOT_HOME/hooks/semloop.json`."""

    def __init__(self, mode: str, *install: str):
        super().__init__("copilot", mode, lambda api, home, work, **kw: run_copilot(BINARY, api, home, work, **kw),
                         clean_env, prefix="slc-", install=install)
        data = json.loads((self.home / ".copilot" / "hooks" / "semloop.json").read_text())
        assert data["version"] == 1
        assert set(data["hooks"]) == {"preToolUse", "permissionRequest", "postToolUse", "postToolUseFailure",
                                      "userPromptSubmitted"} | ({"sessionStart"} if "--guidance" in install else set())


setup, inprocess = fixtures(Setup)


def _bash(command: str) -> dict:
    return call("bash", command=command, description="run it")


NOTE = "Additional guidance from postToolUse hooks:\n[semloop] This bash call repeats"


def _denied_by_semloop(run) -> list[dict]:
    """The tool completions Copilot CLI reports as refused by semloop's permissionRequest answer."""
    return [c for c in run.tool_completions() if not c.get("success")
            and BLOCKED in str((c.get("error") or {}).get("message"))]


def test_repeated_failing_call_gets_a_note_then_the_run_ends_at_the_fourth(setup):
    run, api = setup.run([_bash(FAILING)] * 10)
    sent = api.sent_outputs()
    assert setup.attempts() == 3 and len(sent) == 3  # call 4 never ran, and the model was not asked again
    assert all("No such file or directory" in t for t in sent)  # the tool's own text
    assert [NOTE in t for t in sent] == [False, False, True]
    # call 4 continues the loop just warned about: preToolUse leaves the refusal of a bash call to
    # permissionRequest, whose deny + interrupt ends the run
    assert len(api.main_requests()) == 4
    denied = _denied_by_semloop(run)
    assert len(denied) == 1 and "The call was not run" in denied[0]["error"]["message"]


def test_same_error_from_varied_calls_is_stopped(inprocess):
    script = [_bash(f"echo attempt >> attempts.log; echo 'error: config service unreachable' >&2; exit 3  # try {i}")
              for i in range(10)]
    run, api = inprocess.run(script)
    sent = api.sent_outputs()
    assert inprocess.attempts() == 4 and len(sent) == 4
    assert [NOTE in t for t in sent[:3]] == [False, False, True]
    # call 4 (a new wording, so preToolUse cannot refuse it) continues the loop just warned about:
    # the stop is said after its output; call 5 is refused and the run ends
    assert "Additional guidance from postToolUse hooks:\nsemloop stopped this run" in sent[3]
    assert len(api.main_requests()) == 5 and len(_denied_by_semloop(run)) == 1


def test_the_next_prompt_lifts_the_stop(inprocess):
    first, _ = inprocess.run([_bash(FAILING)] * 8)
    assert inprocess.attempts() == 3
    run, api = inprocess.run([_bash(FAILING)] * 40, prompt="Try once more.", resume=first.session_id())
    assert run.session_id() == first.session_id()
    before = sum(1 for i in api.main_requests()[0].get("input") or [] if i.get("type") == "function_call_output")
    sent = api.sent_outputs()[before:]  # this run's outputs, after the first run's history
    assert inprocess.attempts() == 4 and len(sent) == 1  # one more ran, the next was refused and ended the run
    assert NOTE in sent[0]  # the loop memory was kept: the first repeat carries a note
    assert len(_denied_by_semloop(run)) == 1


def test_a_read_only_tool_is_refused_at_pre_tool_use(inprocess):
    # `view` needs no permission, so no permissionRequest follows: preToolUse refuses it and the run
    # goes on. A failed call's notes come from postToolUseFailure (stderr, exit code 2): Copilot CLI
    # sends them as a user message after the result
    _, api = inprocess.run([call("view", path=str(inprocess.work / "missing.yaml"))] * 8)
    sent = api.sent_outputs()
    # calls 1-3 run (call 3 with a note), call 4 continues the loop just warned about and is refused,
    # and so is every call after it
    assert len(sent) == 8 and all("does not exist" in t for t in sent[:3])
    assert [t.startswith("Denied by preToolUse hook: semloop blocked this view call") and "The call was not run" in t
            for t in sent] == [False] * 3 + [True] * 5
    notes = [n for n in api.sent_notes(roles=("user",)) if "[semloop]" in n]
    assert len(notes) == 1
    assert all(n.startswith('Tool "view" failed. Additional guidance from postToolUseFailure hooks:\n'
                            "[semloop] This view call repeats") for n in notes)


def test_varied_work_and_pagination_stay_quiet(setup):
    for i in range(6):
        (setup.work / f"part-{i}.csv").write_text(f"id,value\n{i},{i * 37}\n")
    (setup.work / "big.log").write_text("".join(f"line {n}: event {n * 7 % 13}\n" for n in range(120)))
    script = [_bash(f"cat part-{i}.csv") for i in range(6)]
    script += [_bash(f"sed -n '{p * 20 + 1},{p * 20 + 20}p' big.log") for p in range(6)]
    _, api = setup.run(script)
    sent = api.sent_outputs()
    assert [f"{i},{i * 37}" in t for i, t in enumerate(sent[:6])] == [True] * 6
    assert [f"line {p * 20}:" in t for p, t in enumerate(sent[6:])] == [True] * 6
    everything = api.everything_sent()
    assert "[semloop]" not in everything and BLOCKED not in everything and "semloop stopped" not in everything


def test_install_guidance_reaches_the_model_and_notes_quote_the_earlier_result():
    from semloop import guidance

    setup = Setup("inprocess", "--guidance")
    try:
        run, api = setup.run([_bash(FAILING)] * 6)
        first = json.dumps(api.main_requests()[0]["input"], ensure_ascii=False)
        for line in guidance().splitlines():  # sessionStart's additionalContext, before the first call
            assert json.dumps(line, ensure_ascii=False)[1:-1] in first, line
        notes = [t for t in api.sent_outputs() if NOTE in t]
        # the same hints as Claude Code's: the earlier step that failed alike, quoted, and the error class
        assert len(notes) == 1 and all("Step 0 already failed the same way: `" in n and "a not-found error" in n
                                       for n in notes), notes
    finally:
        setup.close()


def test_without_guidance_nothing_is_added_at_session_start(inprocess):
    run, api = inprocess.run([_bash("echo hi")])
    assert "going in circles" not in json.dumps(api.main_requests()[0], ensure_ascii=False)


# -- edit → rerun: Copilot CLI's edit answers "File ... updated with changes.", its bash a status line

def _edit_session(setup: Setup, total: str) -> tuple[list[str], list[str]]:
    """view settings.py, then three rounds of the real `edit` changing another of its lines and
    `bash` running the check. Returns the outputs the model was sent and the check's outputs."""
    settings = prepare(setup.work, total)
    script = [call("view", path=str(settings))]
    for old, new in EDITS:
        script += [call("edit", path=str(settings), old_str=old, new_str=new), _bash(RUN_CHECK)]
    _, api = setup.run(script)
    assert settings.read_text() == EDITED  # the edits ran
    sent = api.sent_outputs()
    assert len(sent) == 7 and all("updated with changes" in t for t in sent[1::2]), sent
    return sent, sent[2::2]


def test_edits_that_leave_the_check_failing_the_same_way_are_a_loop(inprocess):
    """Each edit changes another line, but the check prints the same failure: the third run gets
    the note. Copilot CLI ends each output with `<shellId: N completed with exit code 1>`:
    "completed" there is no success, the exit code says the check failed (read as a pass, the
    rerun would be verification of the edits)."""
    sent, checks = _edit_session(inprocess, STUCK)
    assert all(STUCK_OUTPUT in t and "completed with exit code 1" in t for t in checks), checks
    assert [NOTE in t for t in sent] == [False] * 6 + [True], [t[-300:] for t in sent]


def test_edits_that_move_the_check_output_are_progress(inprocess):
    """The same session, but the check prints another total after every edit, then passes."""
    sent, checks = _edit_session(inprocess, MOVING)
    assert totals(checks) == MOVING_TOTALS, checks
    assert not any(added_by_semloop(t) for t in sent), [t[-300:] for t in sent]
