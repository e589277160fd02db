"""`semloop mcp-proxy` end to end: the official `mcp` client (`ClientSession` over `stdio_client`)
talks to the real proxy process, which runs the real upstream server `tests/tiny_upstream.py`
(built with the `mcp` server API). The upstream logs every tool call it receives to a file, so
the tests see which calls reached it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

anyio = pytest.importorskip("anyio")
mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from semloop_texts import added_by_semloop  # noqa: E402

TINY = str(Path(__file__).with_name("tiny_upstream.py"))
ERROR_TEXT = "EACCES: permission denied, open '/etc/app.yaml'"


RESUME_AFTER = 4.0  # the proxy's --resume-after in this run


def _upstream_calls(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def _texts(result) -> list[str]:
    return [block.text for block in result.content]


def _through_proxy(log: Path, script, *proxy_args: str):
    """`await script(session)` in one initialized client session through a fresh `semloop mcp-proxy`
    (with `proxy_args`) in front of the tiny upstream, which logs its tool calls to `log`."""
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "semloop", "mcp-proxy", *proxy_args, "--", sys.executable, TINY],
                                   env={**os.environ, "TINY_UPSTREAM_LOG": str(log)})

    async def main():
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await script(session)

    return anyio.run(main)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One client session through the proxy (starting the proxy and the upstream costs seconds:
    `import mcp` alone is ~2 s of CPU), in order: listing, eight different pages, six identical
    failing calls, another tool while stopped, a quiet spell, then the loop again. Each step's
    results, and the upstream's log of the tool calls it received."""
    log = tmp_path_factory.mktemp("mcp") / "upstream.log"
    out: dict = {}

    async def script(session):
        out["capabilities"], out["instructions"] = session.server_capabilities, session.instructions
        out["tools"] = await session.list_tools()
        out["resources"] = await session.list_resources()
        out["prompts"] = await session.list_prompts()
        out["readme"] = await session.read_resource("notes://readme")
        out["prompt"] = await session.get_prompt("summarize", {"topic": "backups"})
        out["pages"] = [await session.call_tool("read_page", {"document": "manual", "page": p}) for p in range(8)]
        out["upstream_after_pages"] = len(_upstream_calls(log))
        out["loop"] = [await session.call_tool("read_config", {"path": "/etc/app.yaml"}) for _ in range(6)]
        out["while_stopped"] = await session.call_tool("read_page", {"document": "manual", "page": 9})
        out["upstream_after_loop"] = len(_upstream_calls(log))
        await anyio.sleep(RESUME_AFTER + 0.3)
        out["after_quiet"] = await session.call_tool("read_page", {"document": "manual", "page": 2})
        out["loop_again"] = await session.call_tool("read_config", {"path": "/etc/app.yaml"})

    _through_proxy(log, script, "--resume-after", str(RESUME_AFTER))
    out["upstream"] = _upstream_calls(log)
    return out


def test_lists_and_forwards_what_the_upstream_offers(run):
    import tiny_upstream

    async def direct():
        server = tiny_upstream.server
        return (await server.list_tools(), await server.list_resources(), await server.list_prompts(),
                await server.read_resource("notes://readme"))

    tools, resources, prompts, contents = anyio.run(direct)
    assert [t.model_dump() for t in run["tools"].tools] == [t.model_dump() for t in tools]  # schemas too
    assert [r.model_dump() for r in run["resources"].resources] == [r.model_dump() for r in resources]
    assert [p.model_dump() for p in run["prompts"].prompts] == [p.model_dump() for p in prompts]
    assert [c.text for c in run["readme"].contents] == [c.content for c in contents]
    assert run["prompt"].messages[0].content.text == "Summarize what you know about backups in three sentences."
    assert run["instructions"] == "A tiny server for semloop's tests."
    caps = run["capabilities"]
    assert (caps.tools is not None, caps.resources is not None, caps.prompts is not None) == (True, True, True)
    assert caps.completions is None  # the upstream offers none, so neither does the proxy


def test_different_pages_pass_untouched(run):
    for page, r in enumerate(run["pages"]):
        (text,) = _texts(r)
        assert not r.is_error and text.startswith(f"manual, page {page} of 10") and not added_by_semloop(text)
    assert [c["arguments"]["page"] for c in run["upstream"][:8]] == list(range(8))
    assert run["upstream_after_pages"] == 8


def test_identical_failing_calls_get_notes_then_a_refusal(run):
    results = run["loop"]
    assert all(r.is_error for r in results)
    # 1-2: the upstream's result, untouched
    for r in results[:2]:
        (text,) = _texts(r)
        assert ERROR_TEXT in text and not added_by_semloop(text)
    # 3: the upstream's error text kept, semloop's note appended as its own block
    texts = _texts(results[2])
    assert len(texts) == 2 and texts[0] == _texts(results[0])[0]
    assert texts[1].startswith("[semloop] This read_config call repeats earlier step(s) 8, 9 ")
    # the note the model receives quotes what the first call already returned, and what it implies
    assert f"Step 8 already failed the same way: `{texts[0]}`." in texts[1] and ERROR_TEXT in texts[0]
    assert "a permission error: a different command form will not change that" in texts[1]
    # 4: the identical call continues the loop just warned about, so after that one warning it is
    # refused without calling the upstream, with a message that says why; 5-6: the run is stopped
    (text,) = _texts(results[3])
    assert text.startswith("semloop blocked this read_config call: it repeats a loop that was already flagged 1 time(s)")
    assert f"Step 10 already failed the same way: `{_texts(results[0])[0]}`." in text
    assert "The call was not run. The run is stopped at step 11." in text
    for r in results[4:]:
        (text,) = _texts(r)
        assert text.startswith("semloop blocked this read_config call: the run was stopped at step 11")
    for r in results[3:]:
        (text,) = _texts(r)
        assert "Telling the user what is blocking progress" in text
        assert (f"The proxy lifts the stop after {RESUME_AFTER:g} seconds without tool calls "
                "(`semloop mcp-proxy --resume-after`)") in text
    (text,) = _texts(run["while_stopped"])  # after a stop, every tool of the server waits, and says why
    assert run["while_stopped"].is_error and text.startswith(
        "semloop blocked this read_page call: the run was stopped at step 11 because of a loop "
        "(identical call and result; steps 8, 9, 10)")
    assert "repeats" not in text and f"after {RESUME_AFTER:g} seconds without tool calls" in text
    assert run["upstream_after_loop"] == 8 + 3


ASKS = ["To change your flight I need the reservation ID. Could you please provide it?",
        "Once you have the reservation ID, please provide it and I will change your flight.",
        "I can add the bag too. Once you have the reservation ID, please provide it."]


def test_a_question_asked_again_keeps_the_reply_and_gets_the_message_note(tmp_path):
    """`ask_user` is a message tool (`Config.message_tools`): the third reworded ask for the same
    thing is a conversation loop. The user's reply reaches the client untouched, and the note that
    follows it is the one for messages (the replies changed, so "the result did not change" would
    be false)."""
    async def ask_three_times(session):
        return [await session.call_tool("ask_user", {"question": q}) for q in ASKS]

    first, second, third = _through_proxy(tmp_path / "upstream.log", ask_three_times)
    assert [_texts(r) for r in (first, second)] == [["I don't have it with me, sorry."],
                                                   ["Let me check my email. Meanwhile I also want to add a bag."]]
    reply, note = _texts(third)
    assert reply == "Can't you look it up with my name?" and not third.is_error
    assert note.startswith("[semloop] This message repeats what message(s) 0, 1 already said")
    assert [c["arguments"]["question"] for c in _upstream_calls(tmp_path / "upstream.log")] == ASKS


def test_a_quiet_spell_lifts_the_stop_but_keeps_the_loop_memory(run):
    (text,) = _texts(run["after_quiet"])
    assert text.startswith("manual, page 2 of 10") and not added_by_semloop(text)
    again = _texts(run["loop_again"])
    assert ERROR_TEXT in again[0] and again[-1].startswith("[semloop]")  # flagged again at once
    assert [c["tool"] for c in run["upstream"][11:]] == ["read_page", "read_config"]


def test_the_proxy_exits_with_the_upstream_and_a_dead_upstream_is_no_loop(tmp_path):
    """The upstream exits in the middle of a call: the client sees the connection end (the proxy
    exited with the upstream's status, 7), as it would running the server directly; the proxy
    does not stay up answering -32000 "Connection closed" until semloop calls that a loop."""
    log, status = tmp_path / "upstream.log", tmp_path / "proxy.status"
    proxy = [sys.executable, "-m", "semloop", "mcp-proxy", "--", sys.executable, TINY]
    # a shell in between keeps the proxy's own exit status
    params = StdioServerParameters(command="sh", args=["-c", '"$@"; echo $? > "$STATUS"', "sh", *proxy],
                                   env={**os.environ, "TINY_UPSTREAM_LOG": str(log), "TINY_CRASH_STATUS": "7",
                                        "STATUS": str(status)})
    outcomes: list = []

    async def main():
        with open(tmp_path / "proxy.stderr", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await session.call_tool("read_page", {"document": "manual", "page": 1})
                for request in ([session.call_tool, "crash", {"reason": "mid-call"}],
                                *[[session.call_tool, "read_config", {"path": "/etc/app.yaml"}]] * 4,
                                [session.list_tools]):
                    try:
                        with anyio.fail_after(30):
                            outcomes.append(await request[0](*request[1:]))
                    except mcp.MCPError as exc:
                        outcomes.append(exc)

    anyio.run(main)
    for _ in range(100):  # the shell writes the status as the proxy exits
        if status.exists() and status.read_text().strip():
            break
        time.sleep(0.1)
    assert status.read_text().strip() == "7"
    assert "exited with status 7" in (tmp_path / "proxy.stderr").read_text()
    assert all(isinstance(o, mcp.MCPError) and o.code == -32000 for o in outcomes)  # nothing answered ...
    assert [c["tool"] for c in _upstream_calls(log)] == ["read_page", "crash"]  # ... after the crash


def test_a_closed_connection_is_never_recorded_as_a_repeat():
    from mcp import MCPError, types

    from semloop.integrations.mcp_proxy import GuardedTools

    class Closed:
        async def send_request(self, request, result_type):
            raise MCPError(code=-32000, message="Connection closed")

    tools = GuardedTools(Closed())
    params = types.CallToolRequestParams(name="read_config", arguments={"path": "/etc/app.yaml"})

    async def five_calls():
        for _ in range(5):
            with pytest.raises(MCPError):
                await tools.call(params)

    anyio.run(five_calls)
    assert tools.verdicts == [] and tools.guard.state.steps_seen == 0


def test_command_line_errors_are_clear():
    run = [sys.executable, "-m", "semloop", "mcp-proxy"]
    missing = subprocess.run(run, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert missing.returncode == 2 and "no upstream server command" in missing.stderr
    absent = subprocess.run([*run, "--", "/nonexistent/mcp-server"], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=60)
    assert absent.returncode == 1
    assert "the upstream MCP server (/nonexistent/mcp-server) failed: FileNotFoundError" in absent.stderr
    assert "Traceback" not in absent.stderr


def test_importing_the_module_imports_no_mcp():
    code = ("import sys, semloop.cli, semloop.integrations.mcp_proxy; "
            "print([m for m in ('mcp', 'mcp_types', 'anyio') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
