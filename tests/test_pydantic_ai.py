"""semloop's PydanticAI capability on real `pydantic_ai.Agent` runs, driven by PydanticAI's own
test models: `FunctionModel` (a scripted model) and `TestModel`."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import BaseModel

pytest.importorskip("pydantic_ai.capabilities")
from pydantic_ai import Agent, ModelRetry, ToolReturn  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402

from semloop import Config, LoopGuard, LoopStopped  # noqa: E402
from semloop.integrations.pydantic_ai import SemloopCapability  # noqa: E402
from semloop_texts import added_by_semloop  # noqa: E402

DENIED = "EACCES: permission denied, open '/etc/app.yaml'"
ENDED = "The run ends here; the work done so far is kept."


class Row(BaseModel):  # module level: PydanticAI resolves tool annotations by name
    id: int
    status: str


class Answer(BaseModel):
    summary: str


def repeating(tool: str, args: dict):
    """A model stuck on one call: it asks for it again whatever the result; counts its turns."""
    turns = []

    def model(messages, info: AgentInfo) -> ModelResponse:
        turns.append(messages[-1])
        return ModelResponse(parts=[ToolCallPart(tool, args)])

    return FunctionModel(model), turns


def tool_returns(result) -> list[ToolReturnPart]:
    return [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]


def test_a_loop_gets_notes_then_a_refusal_and_the_run_ends_with_the_explanation():
    ran = []

    def read_config(path: str) -> str:
        """Read a configuration file."""
        ran.append(path)
        return DENIED

    model, turns = repeating("read_config", {"path": "/etc/app.yaml"})
    loops = SemloopCapability()
    result = Agent(model, tools=[read_config], capabilities=[loops]).run_sync("Load the app config.")

    assert len(ran) == 3  # the fourth call was refused without running
    assert len(turns) == 4  # and the model was not asked again after the refusal
    returns = tool_returns(result)
    assert len(returns) == 4 and [r.content for r in returns[:2]] == [DENIED, DENIED]
    # the third call is noted: the real output kept, the hint after it
    assert returns[2].content.startswith(DENIED + "\n\n[semloop] This read_config call repeats earlier step(s)")
    assert returns[3].outcome == "failed"
    assert returns[3].content.startswith("semloop blocked this read_config call")
    assert result.output == f"{returns[3].content} {ENDED}"
    assert result.response.model_name == "semloop"
    assert [v.action for v in loops.verdicts] == ["warn", "stop"]
    assert loops.last_stop is loops.verdicts[-1]


def test_varied_work_stays_quiet():
    pages = []

    def read_page(document: str, page: int) -> str:
        """Read one page of a document."""
        pages.append(page)
        topic = ["installation", "configuration", "networking", "storage", "security", "monitoring",
                 "upgrades", "troubleshooting"][page]
        return f"{document}, page {page}: {topic}. Section {page}.1 lists the {topic} options for release {2020 + page}."

    def model(messages, info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)
        if done < 8:
            return ModelResponse(parts=[ToolCallPart("read_page", {"document": "manual", "page": done})])
        return ModelResponse(parts=[TextPart("The manual has eight sections.")])

    loops = SemloopCapability()
    result = Agent(FunctionModel(model), tools=[read_page], capabilities=[loops]).run_sync("Read the manual.")
    assert pages == list(range(8))
    assert result.output == "The manual has eight sections."
    assert not any(added_by_semloop(r.content) for r in tool_returns(result))
    assert loops.verdicts == []


def test_test_model_calls_every_tool_and_nothing_is_flagged():
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def weather(city: str) -> dict:
        """The weather in a city."""
        return {"city": city, "sky": "clear"}

    loops = SemloopCapability()
    result = Agent(TestModel(), tools=[add, weather], capabilities=[loops]).run_sync("Go.")
    assert {r.tool_name for r in tool_returns(result)} == {"add", "weather"}
    assert result.response.model_name != "semloop" and loops.verdicts == []


def test_model_retry_errors_keep_their_text_and_get_the_note():
    def read_config(path: str) -> str:
        """Read a configuration file."""
        raise ModelRetry(DENIED)

    model, _ = repeating("read_config", {"path": "/etc/app.yaml"})
    loops = SemloopCapability()
    result = Agent(model, tools=[read_config], capabilities=[loops], retries=10).run_sync("Load the config.")
    returns = tool_returns(result)
    assert [r.outcome for r in returns] == ["retried"] * 3 + ["failed"]
    assert returns[0].content == DENIED
    assert returns[2].content.startswith(DENIED + "\n\n[semloop]")
    assert result.output.startswith("semloop blocked this read_config call") and result.output.endswith(ENDED)


def test_structured_results_keep_their_shape():
    def lookup(order: str) -> ToolReturn:
        """Look an order up."""
        return ToolReturn(return_value={"order": order, "status": "shipped"}, metadata={"source": "db"})

    def row(order: str) -> Row:
        """The order's row."""
        return Row(id=7, status="shipped")

    for tool, check in ((lookup, lambda c: c["order"] == "A-1" and c["semloop"].startswith("[semloop]")),
                        (row, lambda c: c["id"] == 7 and c["semloop"].startswith("[semloop]"))):
        model, _ = repeating(tool.__name__, {"order": "A-1"})
        result = Agent(model, tools=[tool], capabilities=[SemloopCapability()]).run_sync("Check order A-1.")
        returns = tool_returns(result)
        assert check(returns[2].content), returns[2].content
        if tool is lookup:
            assert returns[2].metadata == {"source": "db"}


def test_structured_output_type_raises_loop_stopped():
    def read_config(path: str) -> str:
        """Read a configuration file."""
        return DENIED

    model, _ = repeating("read_config", {"path": "/etc/app.yaml"})
    agent = Agent(model, tools=[read_config], output_type=Answer, capabilities=[SemloopCapability()])
    with pytest.raises(LoopStopped) as stop:
        agent.run_sync("Load the config.")
    assert stop.value.verdict.action == "stop" and "read_config" in stop.value.message

    raising = Agent(repeating("read_config", {"path": "/x"})[0], tools=[read_config],
                    capabilities=[SemloopCapability(on_stop="raise")])
    with pytest.raises(LoopStopped):
        raising.run_sync("Load the config.")


def test_a_shared_guard_spans_runs_and_a_new_run_lifts_the_stop():
    ran = []

    def read_config(path: str) -> str:
        """Read a configuration file."""
        ran.append(path)
        return DENIED

    guard = LoopGuard()
    loops = SemloopCapability(guard=guard)
    model, _ = repeating("read_config", {"path": "/etc/app.yaml"})
    first = Agent(model, tools=[read_config], capabilities=[loops]).run_sync("Load the config.")
    assert first.response.model_name == "semloop" and guard.stopped

    assert len(ran) == 3

    # the user writes again: the new run may work, but the same loop is flagged at once (its
    # first call runs with the note) and its next repeat is refused
    second = Agent(model, tools=[read_config], capabilities=[loops]).run_sync("Try once more.")
    returns = tool_returns(second)
    assert returns[0].content.startswith(DENIED + "\n\n[semloop]")
    assert [r.outcome for r in returns] == ["success", "failed"]
    assert second.response.model_name == "semloop"
    assert len(ran) == 3 + 1


def test_per_run_guards_are_separate():
    def read_config(path: str) -> str:
        """Read a configuration file."""
        return DENIED

    loops = SemloopCapability(Config(max_warnings=1))
    agent = Agent(repeating("read_config", {"path": "/etc/app.yaml"})[0], tools=[read_config], capabilities=[loops])
    for _ in range(2):  # each run starts clean: the same calls, the same verdicts
        result = agent.run_sync("Load the config.")
        assert [r.outcome for r in tool_returns(result)] == ["success"] * 3 + ["failed"]
    assert [v.action for v in loops.verdicts] == ["warn", "stop"] * 2


def test_importing_the_module_imports_no_pydantic_ai():
    code = ("import sys, semloop.integrations.pydantic_ai; "
            "print([m for m in ('pydantic_ai', 'numpy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_a_failing_detector_fails_open_or_raises_when_configured(monkeypatch, caplog):
    """A detector failure never ends the agent's run (the tool's output goes through unchanged)
    unless `fail_open=False`, where the capability re-raises it."""
    def read_config(path: str) -> str:
        """Read a configuration file."""
        return DENIED

    def broken(*args, **kwargs):
        raise RuntimeError("detector exploded")

    monkeypatch.setattr(LoopGuard, "_record", broken)
    monkeypatch.setattr(LoopGuard, "_check", broken)

    def run(config):
        model = TestModel(call_tools=["read_config"], custom_output_text="done")
        return Agent(model, tools=[read_config], capabilities=[SemloopCapability(config)]).run_sync("Load it.")

    with caplog.at_level("WARNING", logger="semloop"):
        result = run(Config())
    assert [r.content for r in tool_returns(result)] == [DENIED] and result.output == "done"
    assert "detector error" in caplog.text
    with pytest.raises(RuntimeError, match="detector exploded"):
        run(Config(fail_open=False))


def test_guidance_flag_adds_the_block_to_the_instructions():
    import semloop

    seen = []

    def model(messages, info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions)
        return ModelResponse(parts=[TextPart("Done.")])

    Agent(FunctionModel(model), instructions="Be brief.",
          capabilities=[SemloopCapability(guidance=True)]).run_sync("Hi")
    assert "Be brief." in seen[0] and semloop.guidance() in seen[0]
    Agent(FunctionModel(model), capabilities=[SemloopCapability(Config(language="zh"), guidance=True)]).run_sync("Hi")
    assert semloop.guidance("zh") in seen[1]
    Agent(FunctionModel(model), instructions="Be brief.", capabilities=[SemloopCapability()]).run_sync("Hi")
    assert seen[2] == "Be brief."  # off by default


def test_the_note_quotes_what_the_earlier_call_returned():
    def read_config(path: str) -> str:
        """Read a configuration file."""
        return DENIED

    model, _ = repeating("read_config", {"path": "/etc/app.yaml"})
    result = Agent(model, tools=[read_config], capabilities=[SemloopCapability()]).run_sync("Load the config.")
    hinted = tool_returns(result)[2].content
    assert f"Step 0 already failed the same way: `{DENIED}`" in hinted and "a permission error" in hinted
