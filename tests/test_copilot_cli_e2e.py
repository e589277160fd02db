"""The real GitHub Copilot CLI (`@github/copilot`, pinned and installed by `.ci/run` under
`.copilot-cli/`) with semloop's hooks, offline against a scripted local Responses API
(tests/copilot_cli.py): what ran, and what the model was sent.

The hooks are written by `semloop install copilot` into `$COPILOT_HOME/hooks/semloop.json`. What
Copilot CLI honours (checked here): a preToolUse `permissionDecision: "deny"` keeps the call from
running and the model gets the reason; a command hook's postToolUse output is not read (only SDK
hooks can change a result) — yet the CLI does append a command hook's `additionalContext` to the
tool's output, which is where semloop's notes go; no hook answer ends a run.
"""

from __future__ import annotations

import json
import os

import pytest
from codex_cli import call
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

    def __init__(self, mode: str):
        super().__init__("copilot", mode, lambda api, home, work, **kw: run_copilot(BINARY, api, home, work, **kw),
                         clean_env, prefix="slc-")
        data = json.loads((self.home / ".copilot" / "hooks" / "semloop.json").read_text())
        assert data["version"] == 1
        assert set(data["hooks"]) == {"preToolUse", "postToolUse", "postToolUseFailure", "userPromptSubmitted"}


setup, inprocess = fixtures(Setup)


def _bash(command: str) -> dict:
    return call("bash", command=command, description="run it")


def _refused(output: str) -> bool:
    return BLOCKED in output and "The call was not run" in output


NOTE = "Additional guidance from postToolUse hooks:\n[semloop] This bash call repeats"


def test_repeated_failing_call_gets_notes_then_is_refused_from_the_fifth(setup):
    run, api = setup.run([_bash(FAILING)] * 10)
    sent = api.sent_outputs()
    assert setup.attempts() == 4 and len(sent) == 10
    assert all("No such file or directory" in t for t in sent[:4])  # the tool's own text
    assert [NOTE in t for t in sent[:4]] == [False, False, True, True]
    assert [_refused(t) for t in sent] == [False] * 4 + [True] * 6
    assert all(t.startswith("Denied by preToolUse hook: " + BLOCKED) for t in sent[4:])


def test_same_error_from_varied_calls_is_stopped(inprocess):
    script = [_bash(f"echo attempt >> attempts.log; echo 'error: config service unreachable' >&2; exit 3  # try {i}")
              for i in range(10)]
    _, api = inprocess.run(script)
    sent = api.sent_outputs()
    assert inprocess.attempts() == 5 and len(sent) == 10
    assert [NOTE in t for t in sent[:4]] == [False, False, True, True]
    # call 5 completes the loop: the stop is said after its output, and every later call is refused
    assert "Additional guidance from postToolUse hooks:\nsemloop stopped this run" in sent[4]
    assert all(_refused(t) for t in sent[5:])


def test_the_next_prompt_lifts_the_stop(inprocess):
    first, _ = inprocess.run([_bash(FAILING)] * 8)
    assert inprocess.attempts() == 4
    run, api = inprocess.run([_bash(FAILING)] * 40, prompt="Try once more.", resume=first.session_id())
    assert run.session_id() == first.session_id()
    sent = api.sent_outputs()[8:]  # the history holds the first run's 8 outputs
    assert [_refused(t) for t in sent[:3]] == [False, False, True]  # two more ran, the third was refused
    assert inprocess.attempts() == 6
    assert all(NOTE in t for t in sent[:2])  # the loop memory was kept: the first repeat carries a note


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
