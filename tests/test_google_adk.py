"""semloop's Google ADK plugin on a real `LlmAgent` run by a real `InMemoryRunner`, with a scripted
model (a `BaseLlm` subclass: ADK's own extension point for models)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any, AsyncGenerator, Callable

import pytest

pytest.importorskip("google.adk")
from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.apps import App  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.genai import types  # noqa: E402

from semloop.integrations.google_adk import SemloopPlugin  # noqa: E402
from semloop_texts import added_by_semloop  # noqa: E402

DENIED = "EACCES: permission denied, open '/etc/app.yaml'"
ENDED = "The run ends here; the work done so far is kept."


class Scripted(BaseLlm):
    """A model whose every turn is `script(number of function responses so far)`: a function call
    (name, args) or a final text."""

    model: str = "scripted"
    script: Any = None
    turns: int = 0

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self.turns += 1
        done = sum(1 for c in llm_request.contents for p in (c.parts or []) if p.function_response)
        step = self.script(done)
        if isinstance(step, str):
            part = types.Part(text=step)
        else:
            part = types.Part(function_call=types.FunctionCall(name=step[0], args=step[1]))
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def run(agent: LlmAgent, plugin: SemloopPlugin, *messages: str) -> list[list]:
    """Each message as one invocation of one session; the events of each."""
    runner = InMemoryRunner(app=App(name="semloop_test", root_agent=agent, plugins=[plugin]))

    async def main() -> list[list]:
        session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
        out = []
        for text in messages:
            message = types.Content(role="user", parts=[types.Part(text=text)])
            out.append([e async for e in runner.run_async(user_id="u", session_id=session.id, new_message=message)])
        return out

    return asyncio.run(main())


def responses(events: list) -> list[dict]:
    return [p.function_response.response for e in events for p in (e.content.parts if e.content else [])
            if p.function_response]


def final_text(events: list) -> str:
    return "".join(p.text for p in (events[-1].content.parts or []) if p.text)


def read_config_tool(ran: list) -> Callable:
    def read_config(path: str) -> dict:
        """Read a configuration file."""
        ran.append(path)
        return {"status": "error", "error": DENIED}

    return read_config


def test_a_loop_gets_notes_then_a_refusal_and_the_agent_answers_with_the_explanation():
    ran: list = []
    model = Scripted(script=lambda done: ("read_config", {"path": "/etc/app.yaml"}))
    plugin = SemloopPlugin()
    agent = LlmAgent(name="coder", model=model, instruction="Fix the app.", tools=[read_config_tool(ran)])
    (events,) = run(agent, plugin, "Load the app config.")

    assert len(ran) == 3 and model.turns == 4  # the fourth call refused; no fifth model call
    got = responses(events)
    assert len(got) == 4 and got[:2] == [{"status": "error", "error": DENIED}] * 2
    # the third call is noted: the real result kept, the hint next to it
    assert got[2]["error"] == DENIED and got[2]["semloop"].startswith("[semloop] This read_config call repeats")
    assert got[3] == {"error": plugin.verdicts[-1].message}
    assert got[3]["error"].startswith("semloop blocked this read_config call")
    assert final_text(events) == f"{got[3]['error']} {ENDED}"
    assert events[-1].is_final_response() and events[-1].custom_metadata["semloop"]["action"] == "stop"
    assert [v.action for v in plugin.verdicts] == ["warn", "stop"]


def test_varied_work_stays_quiet():
    pages: list = []

    def read_page(document: str, page: int) -> dict:
        """Read one page of a document."""
        pages.append(page)
        topic = ["installation", "configuration", "networking", "storage", "security", "monitoring",
                 "upgrades", "troubleshooting"][page]
        return {"text": f"{document}, page {page}: {topic}. Section {page}.1 lists the {topic} options "
                        f"for release {2020 + page}."}

    model = Scripted(script=lambda done: ("read_page", {"document": "manual", "page": done}) if done < 8
                     else "The manual has eight sections.")
    plugin = SemloopPlugin()
    (events,) = run(LlmAgent(name="reader", model=model, tools=[read_page]), plugin, "Read the manual.")
    assert pages == list(range(8))
    assert not any(added_by_semloop(r) for r in responses(events))
    assert final_text(events) == "The manual has eight sections."
    assert plugin.verdicts == []


def test_the_next_message_lifts_the_stop_and_the_loop_is_flagged_again_at_once():
    ran: list = []
    # 4 responses in the first invocation (3 ran, 1 refused); in the second, one more call, then an answer
    model = Scripted(script=lambda done: "It works now." if done == 5 else ("read_config", {"path": "/etc/app.yaml"}))
    plugin = SemloopPlugin()
    agent = LlmAgent(name="coder", model=model, tools=[read_config_tool(ran)])
    first, second = run(agent, plugin, "Load the app config.", "I fixed the permissions, try again.")
    assert final_text(first).startswith("semloop blocked") and len(responses(first)) == 4
    (again, *_) = responses(second)
    assert again["error"] == DENIED and again["semloop"].startswith("[semloop]")  # ran, and flagged at once
    assert len(ran) == 3 + 1 and final_text(second) == "It works now."


def test_tool_exceptions_are_recorded_as_errors():
    def flaky(path: str) -> dict:
        """Read a file."""
        raise PermissionError(f"[Errno 13] Permission denied: '{path}'")

    plugin = SemloopPlugin()
    model = Scripted(script=lambda done: ("flaky", {"path": "/srv/x"}))
    with pytest.raises(PermissionError):  # ADK raises a tool's exception: semloop leaves that alone
        run(LlmAgent(name="coder", model=model, tools=[flaky]), plugin, "Go.")
    (session,) = plugin.sessions.values()
    assert session.guard.steps == 1 and session.guard.state.window[0].error_class == "permission"


def test_importing_the_module_imports_no_adk():
    code = ("import sys, semloop.integrations.google_adk; "
            "print([m for m in ('google.adk', 'google.genai', 'numpy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_guidance_flag_adds_the_block_to_every_model_call_once():
    import semloop

    seen: list = []

    class Recording(Scripted):
        async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False):
            seen.append(llm_request.config.system_instruction)
            async for response in super().generate_content_async(llm_request, stream):
                yield response

    model = Recording(script=lambda done: ("read_config", {"path": "/etc/app.yaml"}) if done < 3 else "Stuck.")
    agent = LlmAgent(name="coder", model=model, instruction="Fix the app.", tools=[read_config_tool([])])
    (events,) = run(agent, SemloopPlugin(guidance=True), "Load the app config.")
    assert len(seen) == 4
    for system in seen:
        assert "Fix the app." in system and system.count(semloop.guidance()) == 1
    hinted = responses(events)[2]["semloop"]
    assert f"Step 0 already failed the same way: `status: error error: {DENIED}`" in hinted
    seen.clear()
    run(agent, SemloopPlugin(), "Load the app config.")
    assert seen and all(semloop.guidance() not in s for s in seen)  # off by default
