"""The real Codex CLI (`@openai/codex`, pinned and installed by `.ci/run` under `.codex-cli/`) with
semloop's hooks, against a scripted local Responses API (`codex_cli.ScriptedResponses`, a custom
model provider with a local base_url): what ran, what the model was sent, how each `codex exec`
run ends.

The hooks are written by `semloop install codex --settings $CODEX_HOME/hooks.json`. What Codex CLI
honours (checked here): a denying PreToolUse keeps the call from running and gives the model the
reason; additionalContext of PostToolUse reaches the model as a developer message next to the
result; no hook answer ends a turn (`continue: false` is rejected on PreToolUse and only replaces the
output on PostToolUse). So after semloop's stop every further call of the session is refused, and
the turn ends when the model answers in text; the user's next prompt lifts the stop.
"""

from __future__ import annotations

import json
import os

import pytest
from edit_session import EDITED, EDITS, MOVING, MOVING_TOTALS, RUN_CHECK, STUCK, STUCK_OUTPUT, prepare, totals
from semloop_texts import added_by_semloop
from codex_cli import apply_patch, clean_env, codex_binary, run_codex, shell
from hooked_cli import FAILING, HookedCLI, fixtures

BINARY = codex_binary()
pytestmark = [
    pytest.mark.skipif(BINARY is None, reason="the Codex CLI is not installed: `.ci/run` installs the pinned "
                       "@openai/codex under .codex-cli/ (or set SEMLOOP_CODEX_CLI to a codex binary)"),
    pytest.mark.skipif(os.name == "nt", reason="POSIX only"),
]

NOTE = "[semloop] This Bash call repeats"
BLOCKED = "semloop blocked this Bash call"
STOPPED = "semloop stopped this run"


class Setup(HookedCLI):
    """`semloop install codex --settings $CODEX_HOME/hooks.json`, next to a hook of the user's."""

    def __init__(self, mode: str, *install: str):
        super().__init__("codex", mode, lambda api, home, work, **kw: run_codex(BINARY, api, home, work, **kw),
                         clean_env, prefix="slx-", install=install)
        data = json.loads(self.hooks.read_text())
        assert set(data["hooks"]) == {"PreToolUse", "PostToolUse", "UserPromptSubmit"} | (
            {"SessionStart"} if "--guidance" in install else set())
        assert len(data["hooks"]["PreToolUse"]) == 2  # the user's hook is kept

    def before_install(self) -> tuple[str, ...]:
        (self.home / ".codex").mkdir()
        self.hooks = self.home / ".codex" / "hooks.json"
        self.user_log = self.root / "user-hook.log"
        user_hook = {"type": "command", "command": f"cat >> {self.user_log}; echo '{{}}'"}
        self.hooks.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [user_hook]}]}}))
        return ("--settings", str(self.hooks))


setup, inprocess = fixtures(Setup)


def _failing(n: int) -> list[dict]:
    return [shell(FAILING)] * n


def _refused(output: str) -> bool:
    return output.startswith("Command blocked by PreToolUse hook: " + BLOCKED) and "The call was not run" in output


def test_repeated_failing_call_gets_notes_then_every_further_call_is_refused(setup):
    run, api = setup.run(_failing(12))
    # calls 1-2 ran quietly, call 3 ran with a note, call 4 continues the loop just warned about:
    # PreToolUse denies it, and the stop is kept, so the model's 8 further attempts are denied too
    assert setup.attempts() == 3 and len(run.commands()) == 3
    sent = api.sent_outputs()
    assert len(sent) == 12
    assert all("No such file or directory" in t and "exited with code 1" in t for t in sent[:3])  # the tool's own text
    assert [_refused(t) for t in sent] == [False] * 3 + [True] * 9
    notes = api.sent_notes()
    assert len(notes) == 1 and notes[0].startswith(NOTE)  # after call 3, as a developer message
    assert len(api.main_requests()) == 13  # Codex has no hook answer that ends the turn: the model ends it
    assert run.final_message() == "Done."
    assert setup.user_log.read_text().count('"PreToolUse"') == 12  # the user's own hook still ran for every call


def test_same_error_from_varied_calls_stops_after_the_fourth(inprocess):
    # every command differs (a comment) and fails the same way: a note after call 3; call 4 (a new
    # wording, so PreToolUse cannot refuse it) runs and PostToolUse says stop, which Codex shows the
    # model in place of that call's output, and every further call is refused
    # (Codex hands a hook the command's output only, not its exit code: the error is in the text)
    script = [shell(f"echo attempt >> attempts.log; echo 'error: config service unreachable' >&2; exit 3  # try {i}")
              for i in range(10)]
    run, api = inprocess.run(script)
    assert inprocess.attempts() == 4 and len(run.commands()) == 4
    sent = api.sent_outputs()
    assert all("exited with code 3" in t and "config service unreachable" in t for t in sent[:3])
    assert sent[3].startswith(STOPPED) and "The run ends here" in sent[3]
    assert all(_refused(t) for t in sent[4:]) and len(sent) == 10
    notes = api.sent_notes()
    assert len(notes) == 1 and notes[0].startswith(NOTE) and "a reworded call with the same result" in notes[0]


def test_the_next_prompt_lifts_the_stop_and_the_loop_is_flagged_again_at_once(inprocess):
    first, _ = inprocess.run(_failing(8))
    assert inprocess.attempts() == 3
    # the user answers in the same session (`codex exec resume <id>`): UserPromptSubmit lifts the
    # stop, the loop memory stays; the request's history already holds the first turn's 8 outputs
    run, api = inprocess.run(_failing(40), prompt="Try once more.", resume=first.thread_id())
    assert run.thread_id() == first.thread_id()
    sent = api.sent_outputs()[8:]
    assert [_refused(t) for t in sent[:2]] == [False, True]  # one more ran, the next was refused
    assert inprocess.attempts() == 4
    assert all(_refused(t) for t in sent[1:])
    # the first turn's note, and one after the resumed turn's first call: flagged again at once
    notes = api.sent_notes()
    assert len(notes) == 2 and notes[1].startswith(NOTE + " earlier step(s) 0, 1, 2 "), notes


def test_varied_work_and_pagination_stay_quiet(setup):
    for i in range(6):
        (setup.work / f"part-{i}.csv").write_text(f"id,value\n{i},{i * 37}\n")
    (setup.work / "big.log").write_text("".join(f"line {n}: event {n * 7 % 13}\n" for n in range(120)))
    script = [shell(f"cat part-{i}.csv") for i in range(6)]
    script += [shell(f"sed -n '{p * 20 + 1},{p * 20 + 20}p' big.log") for p in range(6)]  # page after page
    run, api = setup.run(script)
    assert len(run.commands()) == 12 and all(c["exit_code"] == 0 for c in run.commands())
    sent = api.sent_outputs()
    assert [f"{i},{i * 37}" in t for i, t in enumerate(sent[:6])] == [True] * 6
    assert [f"line {p * 20}:" in t for p, t in enumerate(sent[6:])] == [True] * 6
    everything = api.everything_sent()
    assert "[semloop]" not in everything and "semloop blocked" not in everything and STOPPED not in everything
    assert api.sent_notes() == []
    assert run.final_message() == "Done."


def test_install_guidance_reaches_the_model_and_notes_quote_the_earlier_result():
    from semloop import guidance

    setup = Setup("inprocess", "--guidance")
    try:
        run, api = setup.run(_failing(6))
        first = json.dumps(api.main_requests()[0]["input"], ensure_ascii=False)
        for line in guidance().splitlines():  # SessionStart's additionalContext, before the first call
            assert json.dumps(line, ensure_ascii=False)[1:-1] in first, line
        notes = api.sent_notes()
        # the same hints as Claude Code's: the earlier step that failed alike, quoted, and the error class
        assert len(notes) == 1 and all("Step 0 already failed the same way: `cat: /etc/semloop-e2e/app.yaml: No such"
                                       in n and "a not-found error" in n for n in notes), notes
        refused = [t for t in api.sent_outputs() if _refused(t)]  # the refusal cites it too
        assert refused and "already failed the same way" in refused[0] and "a not-found error" in refused[0]
    finally:
        setup.close()


def test_without_guidance_nothing_is_added_at_session_start(inprocess):
    run, api = inprocess.run([shell("echo hi")])
    assert "going in circles" not in json.dumps(api.main_requests()[0], ensure_ascii=False)


# -- edit → rerun: Codex edits with its freeform apply_patch tool ----------------------------------

CALL_TYPES = ("function_call", "custom_tool_call")


def _patch(old: str, new: str) -> str:
    return f"*** Begin Patch\n*** Update File: settings.py\n@@\n-{old}\n+{new}\n*** End Patch\n"


def _notes_by_call(api) -> list[int]:
    """For each developer note the model was sent after its first call: the number of the call it
    came with (Codex puts a PostToolUse note between the call and its output)."""
    items = max(api.main_requests(), key=lambda r: len(r.get("input") or [])).get("input")
    calls = [n for n, i in enumerate(items) if i.get("type") in CALL_TYPES]
    return [sum(c < n for c in calls) for n, i in enumerate(items)
            if calls and n > calls[0] and i.get("type") == "message" and i.get("role") == "developer"]


def _edit_session(setup: Setup, total: str):
    """`cat settings.py`, then three rounds of the real apply_patch changing another of its lines
    and exec_command running the check. Returns the check's outputs and the scripted API."""
    settings = prepare(setup.work, total)
    script = [shell("cat settings.py")]
    for old, new in EDITS:
        script += [apply_patch(_patch(old, new)), shell(RUN_CHECK)]
    run, api = setup.run(script)
    assert settings.read_text() == EDITED  # the patches ran
    sent = api.sent_outputs()
    assert len(sent) == 7 and all("Success. Updated the following files" in t for t in sent[1::2]), sent
    assert setup.user_log.read_text().count('"apply_patch"') == 0  # the user's hook matches Bash only
    return sent[2::2], api


def test_edits_that_leave_the_check_failing_the_same_way_are_a_loop(inprocess):
    """Each patch changes another line, but the check prints the same failure: one note, on the
    third run with nothing moved (every patch answers "Success. Updated the following files: M
    settings.py"; different patches are two changes, not one made twice)."""
    checks, api = _edit_session(inprocess, STUCK)
    assert all(STUCK_OUTPUT in t for t in checks), checks
    notes = api.sent_notes()
    assert len(notes) == 1 and notes[0].startswith(NOTE), notes
    assert _notes_by_call(api) == [7]


def test_edits_that_move_the_check_output_are_progress(inprocess):
    """The same session, but the check prints another total after every patch, then passes."""
    checks, api = _edit_session(inprocess, MOVING)
    assert totals(checks) == MOVING_TOTALS, checks
    assert api.sent_notes() == [] and not added_by_semloop(api.everything_sent())
