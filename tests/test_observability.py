"""`semloop scan` on the files observability tools write, each made by the real producer: a real
agent loop (the OpenAI Agents SDK over a mock HTTP transport, a LangChain `create_agent` graph with a
scripted chat model) guarded by semloop's native integration, instrumented with the real
instrumentation, its spans written by the real exporter. Scanning the file must give the verdicts
the native integration gave during the same run.

Producers: OpenTelemetry's OTLP JSON file exporter (`opentelemetry-exporter-otlp-json-file`) and
the SDK's `ConsoleSpanExporter`; OpenTelemetry GenAI spans from
`opentelemetry-instrumentation-openai-agents-v2` and from PydanticAI's own instrumentation (which
also records the messages of each model call); OpenInference's
`openinference-instrumentation-openai-agents` and `-langchain`; LangSmith runs as langchain-core's
tracer builds them (`langsmith.RunTree`), serialized by langsmith; Langfuse observations in the
Langfuse SDK's own API model (`langfuse.api.Observation`), filled from the spans the Langfuse SDK's
LangChain `CallbackHandler` records.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.trace")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from scripted_chat import NPM, NPM_ERROR, read_file_result
from semloop.cli import main
from semloop.traces import load_traces


def scan(capsys, path: Path, *args: str) -> list[dict]:
    """`semloop scan --json PATH ARGS`: one result per trace."""
    capsys.readouterr()
    assert main(["scan", "--json", str(path), *args]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def actions(result: dict) -> list[tuple[int, str]]:
    return [(e["step"], e["action"]) for e in result["events"]]


def native(verdicts: list) -> list[tuple[int, str]]:
    return [(v.step, v.action) for v in verdicts]


def otlp_file_exporter(path: Path):
    exporter_module = pytest.importorskip("opentelemetry.exporter.otlp.json.file.trace_exporter")
    return exporter_module.FileSpanExporter(path)


class ConsoleToFile(ConsoleSpanExporter):
    """The SDK's ConsoleSpanExporter writing to a file it closes on shutdown."""

    def __init__(self, path: Path, **kwargs: Any) -> None:
        self.file = path.open("w", encoding="utf-8")
        super().__init__(out=self.file, **kwargs)

    def shutdown(self) -> None:
        super().shutdown()
        self.file.close()


def span_lines_exporter(path: Path):
    """`ReadableSpan.to_json()`, one span per line."""
    return ConsoleToFile(path, formatter=lambda span: span.to_json(indent=None) + "\n")


def pretty_spans_exporter(path: Path):
    """The ConsoleSpanExporter's own format: indented JSON spans one after another."""
    return ConsoleToFile(path)


# -- the OpenAI Agents SDK ---------------------------------------------------------------------------------


def _agents_instrumentation(kind: str, provider: TracerProvider) -> Callable[[], None]:
    """Instrument the Agents SDK's tracing with `kind`; returns the undo."""
    from agents import set_trace_processors

    set_trace_processors([])  # no export to the OpenAI backend: only the instrumentation's processor
    if kind == "genai":
        module = pytest.importorskip("opentelemetry.instrumentation.openai_agents")
        instrumentor = module.OpenAIAgentsInstrumentor()
        instrumentor.instrument(tracer_provider=provider, capture_message_content=True)
    else:
        module = pytest.importorskip("openinference.instrumentation.openai_agents")
        instrumentor = module.OpenAIAgentsInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
    return instrumentor.uninstrument


def run_agents(kind: str, exporter: Any, script: list, tools: Callable[[], list], wrap: Callable) -> Any:
    """Run a guarded OpenAI Agents SDK agent with tracing on, its spans exported by `exporter`."""
    pytest.importorskip("agents")
    from agents import Runner

    from test_openai_agents import ScriptedModel, make_agent

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    undo = _agents_instrumentation(kind, provider)
    try:
        server = ScriptedModel(script)
        result = asyncio.run(asyncio.wait_for(Runner.run(wrap(make_agent(server, tools())), "Fix the build."), 30))
    finally:
        undo()
        provider.shutdown()
    return result


def _loop_tools() -> list:
    from agents import function_tool

    @function_tool
    def read_file(path: str) -> str:
        """Read a file from the workspace."""
        return f"cat: {path}: Permission denied"

    return [read_file]


def _shell_tools() -> list:
    from agents import function_tool

    @function_tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return NPM_ERROR

    return [shell]


def _clean_tools() -> list:
    from agents import function_tool

    @function_tool
    def read_file(path: str) -> str:
        """Read a file from the workspace."""
        return read_file_result(path)

    return [read_file]


AGENT_PRODUCERS = [("genai", "otlp.jsonl", otlp_file_exporter), ("genai", "spans.jsonl", span_lines_exporter),
                   ("openinference", "otlp.jsonl", otlp_file_exporter),
                   ("openinference", "spans.json", pretty_spans_exporter)]


@pytest.mark.parametrize("kind,suffix,exporter", AGENT_PRODUCERS, ids=[f"{k}-{s}" for k, s, _ in AGENT_PRODUCERS])
def test_openai_agents_varied_calls_same_error_same_verdicts_as_the_native_guard(tmp_path, capsys, kind, suffix,
                                                                                 exporter):
    from semloop.integrations.openai_agents import SemloopGuardrails

    path = tmp_path / f"run.{suffix}"
    loops = SemloopGuardrails()
    script = [[("shell", {"command": c})] for c in NPM] + ["I could not install it."]
    result = run_agents(kind, exporter(path), script, _shell_tools, loops.protect)
    assert result.final_output.startswith("semloop stopped this run")

    [scanned] = scan(capsys, path)
    assert actions(scanned) == native(loops.verdicts) and loops.verdicts[-1].action == "stop"
    assert scanned["steps"] == loops.verdicts[-1].step + 1  # the stopping call ran: it is the last step
    trace = load_traces(path)[0]
    assert trace.meta["format"] == ("otel" if kind == "genai" else "openinference")
    assert [s.input for s in trace.steps] == [{"command": c} for c in NPM[:scanned["steps"]]]
    assert all(s.output == NPM_ERROR for s in trace.steps)  # semloop's notes are not part of the result
    if suffix == "spans.jsonl":  # the same spans as one JSON list
        listed = tmp_path / "spans.json"
        listed.write_text(json.dumps([json.loads(line) for line in path.read_text().splitlines()]))
        assert scan(capsys, listed) == [scanned]


@pytest.mark.parametrize("kind,suffix,exporter", AGENT_PRODUCERS[:3],
                         ids=[f"{k}-{s}" for k, s, _ in AGENT_PRODUCERS[:3]])
def test_openai_agents_identical_loop_the_refused_call_is_not_a_step(tmp_path, capsys, kind, suffix, exporter):
    from semloop.integrations.openai_agents import SemloopGuardrails

    path = tmp_path / f"run.{suffix}"
    loops = SemloopGuardrails()
    run_agents(kind, exporter(path), [[("read_file", {"path": "config/settings.yaml"})]] * 10, _loop_tools,
               loops.protect)
    assert native(loops.verdicts) == [(2, "warn"), (3, "stop")]

    # the span of the fourth call is in the file, its result semloop's refusal: the call never ran
    assert path.read_text().count("The call was not run.") >= 1
    [scanned] = scan(capsys, path)
    assert scanned["steps"] == 3 and actions(scanned) == [(2, "warn")]


def test_openai_agents_clean_run_is_clean_in_the_export_too(tmp_path, capsys):
    from semloop.integrations.openai_agents import SemloopGuardrails

    path = tmp_path / "run.otlp.jsonl"
    loops = SemloopGuardrails()
    script = [[("read_file", {"path": f"src/module_{i}.py"})] for i in range(8)] + ["Read them all."]
    run_agents("genai", otlp_file_exporter(path), script, _clean_tools, loops.protect)
    [scanned] = scan(capsys, path)
    assert loops.verdicts == [] and scanned["steps"] == 8 and scanned["events"] == []


def run_pydantic_ai(exporter: Any, commands: list[str]) -> Any:
    """A PydanticAI agent guarded by semloop's capability, traced by PydanticAI's own OpenTelemetry
    instrumentation (GenAI conventions: chat, execute_tool and invoke_agent spans), driven by its
    `FunctionModel` asking for one shell command per turn."""
    pytest.importorskip("pydantic_ai.capabilities.instrumentation")
    from pydantic_ai import Agent
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    from semloop.integrations.pydantic_ai import SemloopCapability

    turns = iter(commands)

    def model(messages: Any, info: Any) -> Any:
        command = next(turns, None)
        return ModelResponse(parts=[ToolCallPart("shell", {"command": command}) if command else TextPart("done")])

    def shell(command: str) -> str:
        """Run a shell command."""
        return NPM_ERROR

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    loops = SemloopCapability()
    tracing = Instrumentation(settings=InstrumentationSettings(tracer_provider=provider, include_content=True))
    try:
        Agent(FunctionModel(model), tools=[shell], capabilities=[loops, tracing]).run_sync("Install the deps.")
    finally:
        provider.shutdown()
    return loops


class ChatSpansOnly:
    """A span exporter that passes on the model-call spans alone (what a collector that filters
    out the tool spans keeps): the tool calls are then only in the chat spans' messages."""

    def __init__(self, exporter: Any) -> None:
        self.exporter = exporter

    def export(self, spans: Any) -> Any:
        return self.exporter.export([s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"])

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


@pytest.mark.parametrize("chat_only", [False, True], ids=["execute-tool-spans", "chat-messages-only"])
def test_pydantic_ai_genai_spans_same_verdicts_as_the_native_capability(tmp_path, capsys, chat_only):
    path = tmp_path / "pydantic-ai.otlp.jsonl"
    exporter = otlp_file_exporter(path)
    loops = run_pydantic_ai(ChatSpansOnly(exporter) if chat_only else exporter, NPM)
    assert native(loops.verdicts)[-1][1] == "stop"
    assert ("execute_tool" in path.read_text()) is not chat_only

    [scanned] = scan(capsys, path)
    assert scanned["steps"] == loops.verdicts[-1].step + 1
    if chat_only:  # the run ended after the last call: its result reached no model call, no chat span has it
        assert actions(scanned) == native(loops.verdicts)[:-1]
    else:
        assert actions(scanned) == native(loops.verdicts)
    trace = load_traces(path)[0]
    assert trace.meta["format"] == "otel" and trace.id == trace.meta["run"]
    assert [s.input for s in trace.steps] == [{"command": c} for c in NPM[:scanned["steps"]]]
    answered = trace.steps if not chat_only else trace.steps[:-1]  # no model call saw the last result
    assert all(s.output == NPM_ERROR for s in answered)


def test_agent_as_tool_per_agent_keeps_the_sub_agent_apart(tmp_path, capsys):
    """An orchestrator calling a guarded sub-agent as a tool: one trace per run by default (the
    orchestrator's call and the sub-agent's calls), --per-agent one per agent invocation."""
    pytest.importorskip("agents")
    from agents import Agent, Runner

    from semloop.integrations.openai_agents import SemloopGuardrails
    from test_openai_agents import ScriptedModel

    path = tmp_path / "nested.otlp.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(otlp_file_exporter(path)))
    undo = _agents_instrumentation("openinference", provider)
    loops = SemloopGuardrails()
    boss_model = ScriptedModel([[("ask_installer", {"input": "install the deps"})], "It could not install them."])
    installer_model = ScriptedModel([[("shell", {"command": c})] for c in NPM] + ["(unused)"])
    try:
        installer = loops.protect(Agent(name="installer", instructions="Install.", model=installer_model.model(),
                                        tools=_shell_tools()))
        boss = Agent(name="boss", instructions="Delegate.", model=boss_model.model(),
                     tools=[installer.as_tool(tool_name="ask_installer", tool_description="Install things.")])
        asyncio.run(asyncio.wait_for(Runner.run(boss, "Set up the project."), 30))
    finally:
        undo()
        provider.shutdown()
    stops = native(loops.verdicts)
    assert stops[-1][1] == "stop"

    [whole] = scan(capsys, path)
    assert whole["steps"] == stops[-1][0] + 2  # the sub-agent's calls and the orchestrator's one
    per_agent = {r["id"].rsplit("/", 1)[1]: r for r in scan(capsys, path, "--per-agent")}
    assert set(per_agent) == {"boss", "installer"}
    assert per_agent["boss"]["steps"] == 1 and per_agent["boss"]["events"] == []
    assert actions(per_agent["installer"]) == stops  # the sub-agent alone: its own guard's verdicts
    assert [s.tool for s in load_traces(path, per_agent=True)[0].steps] == ["ask_installer"]


# -- LangChain: OpenInference spans and LangSmith runs of the same run -------------------------------------


def run_langchain(tmp_path: Path, turns: list, tools: list) -> tuple[Any, Path, Path]:
    """A guarded `create_agent` run with OpenInference's LangChain instrumentation (OTLP JSON file)
    and langchain-core's tracer collecting the LangSmith runs (written as langsmith serializes them)."""
    pytest.importorskip("langchain.agents")
    instrumentation = pytest.importorskip("openinference.instrumentation.langchain")
    from langchain.agents import create_agent
    from langchain_core.tracers.run_collector import RunCollectorCallbackHandler

    from semloop.integrations.langchain import SemloopMiddleware
    from test_langchain import model

    spans, runs = tmp_path / "langchain.otlp.jsonl", tmp_path / "langsmith-runs.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(otlp_file_exporter(spans)))
    instrumentor = instrumentation.LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    middleware, collector = SemloopMiddleware(), RunCollectorCallbackHandler()
    try:
        agent = create_agent(model(*turns), tools, middleware=[middleware])
        agent.invoke({"messages": [("user", "Do the task")]}, config={"callbacks": [collector]})
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    write_langsmith_runs(collector.traced_runs, runs)
    write_langsmith_trees(collector.traced_runs, tmp_path / "langsmith-trees.json")
    return middleware, spans, runs


def write_langsmith_trees(roots: list, path: Path) -> None:
    """The same runs as trees (each run with its `child_runs`), in a {"runs": [...]} object."""
    from langsmith._internal._serde import dumps_json

    def tree(run: Any) -> dict:
        fields = json.loads(dumps_json(run.dict(exclude={"child_runs", "parent_run", "client", "ls_client"})))
        return {**fields, "child_runs": [tree(child) for child in run.child_runs]}

    path.write_text(json.dumps({"runs": [tree(root) for root in roots]}), encoding="utf-8")


def write_langsmith_runs(roots: list, path: Path) -> None:
    """Every run of the trees, one JSON object per line, with langsmith's own serializer (what the
    SDK sends to and `Client.list_runs` reads from LangSmith), newest-first as a listing returns them."""
    from langsmith._internal._serde import dumps_json

    flat: list = []

    def walk(run: Any) -> None:
        flat.append(run)
        for child in run.child_runs:
            walk(child)

    for root in roots:
        walk(root)
    with path.open("wb") as out:
        for run in reversed(flat):  # the file order must not matter: dotted_order orders the steps
            fields = run.dict(exclude={"child_runs", "parent_run", "client", "ls_client"})
            out.write(dumps_json(fields) + b"\n")


INSTALL = [{"package": "requests"}, {"package": "requests", "flags": "--user"},
           {"package": "requests", "flags": "--upgrade"}, {"package": "requests", "flags": "--no-cache-dir"},
           {"package": "requests", "flags": "--force-reinstall"}, {"package": "requests", "flags": "-q"},
           {"package": "requests", "flags": "--pre"}, {"package": "requests", "flags": "-U --user"}]


def test_langchain_openinference_and_langsmith_same_verdicts_as_the_native_middleware(tmp_path, capsys):
    from langchain_core.messages import AIMessage

    from test_langchain import install

    middleware, spans, runs = run_langchain(tmp_path, [[("install", a)] for a in INSTALL] + [AIMessage("unused")],
                                            [install])
    expected = [(v.step, v.action) for _, v in middleware.verdicts]
    assert expected[-1][1] == "stop"

    trees = tmp_path / "langsmith-trees.json"
    assert '"child_runs": [{' in trees.read_text() and "\n" not in trees.read_text()
    # what docs/observability.md writes: the SDK's `Run` objects (as `Client.list_runs` yields them)
    from langsmith.schemas import Run

    listed = tmp_path / "list-runs.jsonl"
    listed.write_text("".join(json.dumps(Run(**json.loads(line)).dict(), default=str) + "\n"
                              for line in runs.read_text().splitlines()))
    for path, format in ((spans, "openinference"), (runs, "langsmith"), (trees, "langsmith"),
                         (listed, "langsmith")):
        [scanned] = scan(capsys, path)
        assert actions(scanned) == expected, format
        assert scanned["steps"] == expected[-1][0] + 1
        trace = load_traces(path)[0]
        assert trace.meta["format"] == format
        sent = INSTALL[:scanned["steps"]]
        if format == "openinference":  # OpenInference writes the value alone for a call with one argument
            sent = [next(iter(a.values())) if len(a) == 1 else a for a in sent]
        assert [s.input for s in trace.steps] == sent
        assert all(s.output.startswith("error: externally-managed-environment") for s in trace.steps)
        assert not any("semloop" in s.output for s in trace.steps)


def test_langchain_identical_loop_the_refused_call_has_no_span(tmp_path, capsys):
    from langchain_core.messages import AIMessage

    from test_langchain import loop, read_file

    middleware, spans, runs = run_langchain(tmp_path, loop("read_file", {"path": "/etc/shadow"}, 8)
                                            + [AIMessage("unused")], [read_file])
    assert [(v.step, v.action) for _, v in middleware.verdicts] == [(2, "warn"), (3, "stop")]
    for path in (spans, runs):  # the fourth call was refused before it ran: no tool span, no tool run
        [scanned] = scan(capsys, path)
        assert scanned["steps"] == 3 and actions(scanned) == [(2, "warn")]


# -- Langfuse ----------------------------------------------------------------------------------------------


def test_langfuse_observations_same_verdicts_as_the_native_middleware(tmp_path, capsys):
    """Langfuse observations as its public API returns them ({"data": [...]}, the SDK's
    `Observation` model), filled from the spans Langfuse's own LangChain CallbackHandler records:
    the Langfuse server stores each span as the observation with the span's `langfuse.observation.*`
    attributes (type, input, output, level, status message), its ids and start time."""
    pytest.importorskip("langchain.agents")
    langfuse = pytest.importorskip("langfuse")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langfuse.api import Observation
    from langfuse.langchain import CallbackHandler
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
        InMemorySpanExporter,
    )

    from semloop.integrations.langchain import SemloopMiddleware
    from test_langchain import install, model

    provider, memory = TracerProvider(), InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    client = langfuse.Langfuse(public_key="pk-lf-test", secret_key="sk-lf-test", base_url="http://127.0.0.1:9",
                               tracer_provider=provider, should_export_span=lambda span: False)  # nothing sent
    middleware = SemloopMiddleware()
    try:
        agent = create_agent(model(*[[("install", a)] for a in INSTALL], AIMessage("unused")), [install],
                             middleware=[middleware])
        agent.invoke({"messages": [("user", "Install requests")]}, config={"callbacks": [CallbackHandler()]})
    finally:
        client.shutdown()
        provider.shutdown()

    observations = []
    for span in memory.get_finished_spans():
        attrs = span.attributes or {}
        kind = attrs.get("langfuse.observation.type")
        if not kind:
            continue
        observations.append(Observation(
            id=f"{span.context.span_id:016x}", trace_id=f"{span.context.trace_id:032x}", type=kind.upper(),
            name=span.name, start_time=span.start_time / 1e9, end_time=span.end_time / 1e9,
            input=json.loads(attrs.get("langfuse.observation.input", "null")),
            output=json.loads(attrs.get("langfuse.observation.output", "null")),
            level=attrs.get("langfuse.observation.level", "DEFAULT"),
            status_message=attrs.get("langfuse.observation.status_message"),
            parent_observation_id=f"{span.parent.span_id:016x}" if span.parent else None,
            metadata={}, model_parameters={}, usage={"input": 0, "output": 0, "total": 0}, usage_details={},
            cost_details={}, environment="default"))
    rows = [o.model_dump(mode="json", by_alias=True) for o in observations]
    assert {row["traceId"] for row in rows} == {rows[0]["traceId"]} and "TOOL" in {row["type"] for row in rows}
    page, listed, lines, trace = (tmp_path / name for name in ("page.json", "list.json", "rows.jsonl", "trace.json"))
    page.write_text(json.dumps({"data": rows, "meta": {"page": 1}}), encoding="utf-8")  # GET /api/public/observations
    listed.write_text(json.dumps(rows[::-1]), encoding="utf-8")  # a list, in any order
    lines.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    trace.write_text(json.dumps({"id": rows[0]["traceId"], "name": "LangGraph",  # GET /api/public/traces/{id}
                                 "observations": [{k: v for k, v in row.items() if k != "traceId"} for row in rows]}))

    expected = [(v.step, v.action) for _, v in middleware.verdicts]
    assert expected[-1][1] == "stop"
    for path in (page, listed, lines, trace):
        [scanned] = scan(capsys, path)
        assert load_traces(path)[0].meta["format"] == "langfuse"
        assert actions(scanned) == expected, path.name
        assert scanned["steps"] == expected[-1][0] + 1 and scanned["id"] == rows[0]["traceId"]


# -- bad input: one line naming the span, exit 2 -----------------------------------------------------------


@pytest.fixture(scope="module")
def real_export(tmp_path_factory) -> Path:
    from semloop.integrations.openai_agents import SemloopGuardrails

    path = tmp_path_factory.mktemp("export") / "run.otlp.jsonl"
    script = [[("shell", {"command": c})] for c in NPM[:3]] + ["done"]
    run_agents("genai", otlp_file_exporter(path), script, _shell_tools, SemloopGuardrails().protect)
    return path


def _tool_spans(document: dict) -> list[dict]:
    return [span for rs in document["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]
            if span["name"].startswith("execute_tool")]


def write_lines(path: Path, lines: list[str], n: int, replacement: dict) -> Path:
    """`lines` with line `n` replaced by `replacement`, written to `path`."""
    path.write_text("\n".join([*lines[:n], json.dumps(replacement), *lines[n + 1:]]) + "\n")
    return path


def one_error_line(capsys, *argv: str) -> str:
    """Run `semloop ARGV`: it must exit 2 with one line on stderr, which is returned."""
    capsys.readouterr()
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_a_bad_span_is_one_line_naming_it_and_exit_2(tmp_path, capsys, real_export):
    lines = real_export.read_text().splitlines()
    n, document = next((i, json.loads(line)) for i, line in enumerate(lines) if _tool_spans(json.loads(line)))
    span = _tool_spans(document)[0]
    for attr in span["attributes"]:
        if attr["key"] == "gen_ai.tool.name":
            attr["value"] = {"intValue": "7"}
    bad = write_lines(tmp_path / "bad.otlp.jsonl", lines, n, document)
    err = one_error_line(capsys, "scan", str(bad))
    assert f"{bad}:{n + 1}" in err and span["spanId"] in err and "execute_tool shell" in err
    assert "gen_ai.tool.name must be a string, got int" in err

    # --skip-invalid: the bad span is reported and left out, the others are scanned
    assert main(["scan", "--json", "--skip-invalid", str(bad)]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out.splitlines()[0])["steps"] == 2 and out.err.count("semloop: skipped:") == 1


def test_truncated_export_names_the_line_and_a_forced_wrong_format_says_so(tmp_path, capsys, real_export):
    lines = real_export.read_text().splitlines()
    torn = tmp_path / "torn.otlp.jsonl"
    torn.write_text("\n".join(lines[:-1] + [lines[-1][: len(lines[-1]) // 2]]) + "\n")
    err = one_error_line(capsys, "scan", str(torn))
    assert err.startswith(f"semloop: error: {torn}:{len(lines)}: invalid JSON")
    err = one_error_line(capsys, "scan", "--format", "langsmith", str(real_export))
    assert "missing field 'run_type' (not a LangSmith run)" in err


def test_a_bad_langsmith_run_is_one_line_naming_it(tmp_path, capsys):
    from langchain_core.messages import AIMessage

    from test_langchain import install

    _, _, runs = run_langchain(tmp_path, [[("install", a)] for a in INSTALL[:2]] + [AIMessage("done")], [install])
    lines = runs.read_text().splitlines()
    n, run = next((i, json.loads(line)) for i, line in enumerate(lines) if json.loads(line)["run_type"] == "tool")
    run["name"] = ["install"]
    bad = write_lines(tmp_path / "bad-runs.jsonl", lines, n, run)
    err = one_error_line(capsys, "scan", str(bad))
    assert f"{bad}:{n + 1}: run {run['id']}" in err
    assert "name must be a string, got list" in err
