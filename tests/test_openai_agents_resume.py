"""OpenAI Agents SDK: a run interrupted for a tool approval and resumed from `result.to_state()`
keeps its loop memory (issue 9.6). The SDK's real `Runner.run`, `needs_approval` tool, `RunState`
approval and resume, over the scripted chat-completions endpoint of tests/test_openai_agents.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

agents = pytest.importorskip("agents")

from agents import Runner, function_tool  # noqa: E402

from semloop.integrations.openai_agents import SemloopGuardrails  # noqa: E402

from test_openai_agents import NO_TRACING, ScriptedModel, make_agent  # noqa: E402

READ = ("read_file", {"path": "config/settings.yaml"})
MIGRATE = ("run_migration", {"name": "0042_add_index"})
ERROR = "psycopg.errors.LockNotAvailable: could not obtain lock on relation \"orders\""


def tools(ran: list[str]) -> list[Any]:
    @function_tool
    def read_file(path: str) -> str:
        """Read a file from the workspace."""
        ran.append(path)
        return f"cat: {path}: Permission denied"

    @function_tool(needs_approval=True)
    def run_migration(name: str) -> str:
        """Apply a database migration (asks the user first)."""
        ran.append(name)
        return ERROR

    return [read_file, run_migration]


async def run_approving_everything(agent: Any) -> tuple[Any, int]:
    """Run; whenever the run pauses for approval, approve and resume from `result.to_state()`."""
    result, resumes = await Runner.run(agent, "Apply the pending migration.", run_config=NO_TRACING), 0
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            state.approve(item)
        result, resumes = await Runner.run(agent, state, run_config=NO_TRACING), resumes + 1
    return result, resumes


@pytest.mark.parametrize("keyed", [False, True], ids=["per-run", "key="])
def test_a_loop_through_approvals_is_caught_across_resumes(keyed):
    """Every attempt of the loop needs the user's approval, so every step runs in a resumed run:
    with the memory lost at each resume, the loop was never seen."""
    server, ran = ScriptedModel([[MIGRATE]] * 8 + ["Gave up."]), []
    loops = SemloopGuardrails(key=(lambda ctx: "conversation-1") if keyed else None)
    agent = loops.protect(make_agent(server, tools(ran)))
    result, resumes = asyncio.run(asyncio.wait_for(run_approving_everything(agent), 90))

    assert resumes >= 3
    assert [v.action for v in loops.verdicts] == ["warn", "stop"]
    third = server.tool_messages(3)[-1]  # the third attempt's result, as the model got it
    assert third.startswith(ERROR + "\n\n[semloop] This run_migration call repeats")
    assert result.final_output.startswith("semloop blocked this run_migration call")
    assert loops.stop_verdict(result.context_wrapper) is not None
    assert ran == ["0042_add_index"] * 3  # the fourth attempt was refused without running
    assert len(loops.runs) == 1


def test_two_separate_runs_still_have_separate_memories():
    server, ran = ScriptedModel([[READ], [READ], "ok", [READ], [READ], "ok"]), []
    loops = SemloopGuardrails()
    agent = loops.protect(make_agent(server, tools(ran)))
    for _ in range(2):
        asyncio.run(asyncio.wait_for(Runner.run(agent, "Read the config.", run_config=NO_TRACING), 30))
    assert loops.verdicts == [] and len(loops.runs) == 2
