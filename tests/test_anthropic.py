"""The Anthropic integration against the REAL `anthropic` client, with a scripted Messages API
behind an `httpx2.MockTransport` (no network, no API key)."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any, Callable

import pytest

anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

from semloop import LoopGuard, Verdict  # noqa: E402
from semloop.integrations.anthropic import (  # noqa: E402
    NOT_RUN,
    AgentResult,
    guarded,
    run_agent,
    run_agent_async,
    tool_result,
)

MODEL = "claude-opus-5-5"
TOOLS = [
    {"name": "read_file", "description": "Read a file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "bash", "description": "Run a shell command.",
     "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
    {"name": "web_search", "description": "Search the web.",
     "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
    {"name": "list_issues", "description": "List issues, one page at a time.",
     "input_schema": {"type": "object", "properties": {"page": {"type": "integer"}}}},
]
FINAL_TEXT = "I could not finish: the same call kept failing, so I stopped. Here is what I found so far."

_ids = itertools.count(1)


def message(content: list[dict], stop_reason: str, usage: tuple[int, int] = (100, 20)) -> dict:
    """A realistic Messages API `message` object."""
    return {"id": f"msg_{next(_ids):04d}", "type": "message", "role": "assistant", "model": MODEL,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1], "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "service_tier": "standard"}}


def tool_use(name: str, tool_input: dict) -> dict:
    return {"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": name, "input": tool_input}


def text(value: str) -> dict:
    return {"type": "text", "text": value}


class ScriptedModel:
    """Serves one scripted turn per request; records each request body.

    A turn is a list of (tool, input) calls, or a string (the final answer, `end_turn`). A request
    with `tool_choice: none` gets `FINAL_TEXT`. Past the script, the last turn repeats (a model
    stuck in its loop).
    """

    def __init__(self, turns: list[Any]) -> None:
        self.turns = turns
        self.requests: list[dict] = []

    def respond(self, request: Any) -> Any:
        body = json.loads(request.content)
        self.requests.append(body)
        assert request.url.path == "/v1/messages"
        if body.get("tool_choice", {}).get("type") == "none":
            return httpx2.Response(200, json=message([text(FINAL_TEXT)], "end_turn", (300, 40)))
        index = min(sum(1 for r in self.requests if r.get("tool_choice", {}).get("type") != "none"),
                    len(self.turns)) - 1
        turn = self.turns[index]
        if isinstance(turn, str):
            return httpx2.Response(200, json=message([text(turn)], "end_turn"))
        blocks = [text("Let me check.")] + [tool_use(name, tool_input) for name, tool_input in turn]
        return httpx2.Response(200, json=message(blocks, "tool_use"))

    def client(self) -> Any:
        return anthropic.Anthropic(api_key="test", max_retries=0,
                                   http_client=httpx2.Client(transport=httpx2.MockTransport(self.respond)))

    def async_client(self) -> Any:
        async def respond(request: Any) -> Any:
            return self.respond(request)

        return anthropic.AsyncAnthropic(api_key="test", max_retries=0,
                                        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(respond)))

    # -- reading what was sent -------------------------------------------------------------------

    def tool_results(self, i: int) -> list[dict]:
        """The tool_result blocks of the last user message of request `i`."""
        last = self.requests[i]["messages"][-1]
        assert last["role"] == "user"
        return [b for b in last["content"] if b["type"] == "tool_result"]


def content_text(block: dict) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content)


def files(contents: dict[str, str]) -> Callable[[str, dict], str]:
    def dispatch(name: str, tool_input: dict) -> str:
        if name == "read_file":
            return contents[tool_input["path"]]
        if name == "list_issues":
            page = tool_input.get("page", 1)
            return "\n".join(f"#{n} issue number {n} opened by user{n * 7 % 13}" for n in range(page * 10 - 9, page * 10 + 1))
        raise AssertionError(name)

    return dispatch


def run(model: ScriptedModel, dispatch: Callable, guard: LoopGuard | None = None, **kwargs: Any) -> AgentResult:
    return run_agent(model.client(), model=MODEL, messages=[{"role": "user", "content": "Fix the build."}],
                     tools=TOOLS, dispatch=dispatch, guard=guard if guard is not None else LoopGuard(), **kwargs)


# -- identical calls ------------------------------------------------------------------------------


def test_identical_loop_is_warned_then_stopped_with_a_whole_answer():
    model = ScriptedModel([[("read_file", {"path": "/srv/app/config.yaml"})]])  # the same call forever
    ran = []

    def dispatch(name, tool_input):
        ran.append(tool_input)
        return "error: config.yaml: mapping values are not allowed here (line 3)"

    result = run(model, dispatch)

    assert result.stop_reason == "loop_stopped" and result.stopped
    assert result.text == FINAL_TEXT
    actions = [v.action for v in result.verdicts]
    assert actions[:2] == ["allow", "allow"] and "warn" in actions and actions[-1] == "stop"
    assert result.verdicts[2].signals[0].kind == "exact"
    # the stop came from `check`: the known loop was refused without running the tool
    assert len(ran) == len(result.verdicts) - 1

    # the hint reaches the NEXT request, appended to the original output
    first_warn = actions.index("warn")
    for i in range(1, first_warn + 1):  # request i carries the result of call i - 1
        assert "[semloop]" not in content_text(model.tool_results(i)[0])
    hinted = content_text(model.tool_results(first_warn + 1)[0])
    assert hinted.startswith("error: config.yaml: mapping values") and "[semloop]" in hinted

    # the last request: tools still defined (the history holds tool_use blocks) but forbidden
    final = model.requests[-1]
    assert final["tool_choice"] == {"type": "none"} and final["tools"]
    refused = model.tool_results(len(model.requests) - 1)[0]
    assert refused["is_error"] is True and "semloop" in refused["content"]
    explain = final["messages"][-1]["content"][-1]
    assert explain["type"] == "text" and "Reply to the user" in explain["text"]
    assert "semloop" in explain["text"]
    # the returned conversation ends with the final answer
    assert result.messages[-1]["role"] == "assistant"
    assert result.turns == len(model.requests)
    assert result.usage.input_tokens == 100 * (len(model.requests) - 1) + 300
    assert result.usage.output_tokens == 20 * (len(model.requests) - 1) + 40


def test_every_request_pairs_each_tool_use_with_a_tool_result():
    model = ScriptedModel([[("read_file", {"path": "/a"})]])
    run(model, lambda name, tool_input: "same text every time")
    for i in range(1, len(model.requests)):
        msgs = model.requests[i]["messages"]
        asked = [b["id"] for b in msgs[-2]["content"] if b["type"] == "tool_use"]
        answered = [b["tool_use_id"] for b in msgs[-1]["content"] if b["type"] == "tool_result"]
        assert asked == answered


# -- paraphrased calls (the default static embedding, offline) --------------------------------------


def test_paraphrased_search_loop_is_caught_with_the_default_embedding():
    queries = ["python loop detection library", "library for detecting loops in python",
               "python package that detects loops", "find a python library to detect loops",
               "loop detection python lib", "python module for loop detection"]
    model = ScriptedModel([[("web_search", {"query": q})] for q in queries])
    result = run(model, lambda name, tool_input: "No results found.")

    assert result.stop_reason == "loop_stopped" and result.text == FINAL_TEXT
    warned = [v for v in result.verdicts if v.action == "warn"]
    assert warned and {s.kind for v in warned for s in v.signals} & {"paraphrase", "same_result", "cluster"}
    # no call was byte-identical: this is not the exact signal
    assert len({json.dumps(b["input"]) for r in model.requests[1:] for m in r["messages"][-2:-1]
                for b in m["content"] if b["type"] == "tool_use"}) == len(model.requests) - 1
    assert any("[semloop]" in content_text(b) for i in range(1, len(model.requests)) for b in model.tool_results(i))



# Only the embedding decides these two (issue 14.3): every result differs byte-wise (reordered hits,
# a truncated snippet), and the near-miss run gets results as alike as the loop's.

UNDO_HITS = [("Undo the most recent commit in Git - Stack Overflow", "git reset --soft HEAD~1 keeps your changes staged"),
             ("git-revert Documentation", "revert the changes that the related patches introduce and record new commits"),
             ("How to undo almost anything with Git - GitHub Blog", "amend, reset, revert and reflog explained with examples"),
             ("Atlassian Git tutorial: undoing changes", "compares checkout, revert and reset and when each one is safe")]
POOL_HITS = [("PostgreSQL Documentation: Connections and Authentication", "max_connections, listen_addresses and tcp keepalives"),
             ("PgBouncer configuration reference", "pool_mode, default_pool_size, server_idle_timeout and query_timeout"),
             ("Tuning your PostgreSQL server - PostgreSQL wiki", "shared_buffers, work_mem and connection limits for production"),
             ("Stack Overflow: Postgres connection settings explained", "how connection count, pooling and timeouts interact")]
ORDERS = [(0, 1, 2, 3), (1, 0, 3, 2), (2, 3, 0, 1), (3, 0, 1, 2)]


def rotating_pages(hits: list[tuple[str, str]]) -> Callable[[str, dict], str]:
    """Search results: the same hits, in a new order each call, one snippet cut short."""
    calls = itertools.count()

    def dispatch(name: str, tool_input: dict) -> str:
        assert name == "web_search"
        n = next(calls)
        lines = []
        for rank, i in enumerate(ORDERS[n % 4], 1):
            title, snippet = hits[i]
            lines.append(f"{rank}. {title}\n   {snippet[:len(snippet) // 2] + '...' if i == n % 4 else snippet}")
        return "\n".join(lines)

    return dispatch


def test_reworded_searches_with_reordered_results_are_warned_at_the_third():
    queries = ["how to undo last git commit", "undo the last commit in git", "git undo most recent commit",
               "revert last commit git"]
    model = ScriptedModel([[("web_search", {"query": q})] for q in queries] + ["Use git reset --soft HEAD~1."])
    result = run(model, rotating_pages(UNDO_HITS))

    assert [v.action for v in result.verdicts][:3] == ["allow", "allow", "warn"]
    assert "paraphrase" in {s.kind for s in result.verdicts[2].signals}
    assert len({content_text(b) for i in range(1, 5) for b in model.tool_results(i)}) == 4  # no two results alike
    assert "[semloop]" in content_text(model.tool_results(3)[0])  # the hint rides on the 3rd result
    assert "1. " in content_text(model.tool_results(3)[0])  # ... which is kept whole


def test_near_miss_searches_with_alike_results_are_never_interrupted():
    queries = ["postgres connection pool size recommendation", "postgres connection timeout default",
               "postgres idle connections keep growing"]
    model = ScriptedModel([[("web_search", {"query": q})] for q in queries] + ["Set pool_size to 20."])
    result = run(model, rotating_pages(POOL_HITS))

    assert result.stop_reason == "end_turn" and result.text == "Set pool_size to 20."
    assert [v.action for v in result.verdicts] == ["allow"] * 3
    assert not any("[semloop]" in content_text(b) for i in range(1, 4) for b in model.tool_results(i))


# -- the same error from varied calls; dispatch exceptions ----------------------------------------


def test_same_error_from_varied_calls_and_dispatch_exceptions_become_is_error():
    turns = [[("read_file", {"path": "/etc/app/secrets.yaml"})],
             [("bash", {"command": "cat /etc/app/secrets.yaml"})],
             [("bash", {"command": "sudo cat /etc/app/secrets.yaml"})],
             [("read_file", {"path": "/etc/app/./secrets.yaml"})],
             [("bash", {"command": "head -n 50 /etc/app/secrets.yaml"})],
             [("bash", {"command": "less /etc/app/secrets.yaml"})],
             [("read_file", {"path": "secrets.yaml"})]]
    model = ScriptedModel(turns)

    def dispatch(name, tool_input):
        raise PermissionError("[Errno 13] Permission denied: '/etc/app/secrets.yaml'")

    result = run(model, dispatch)

    first = model.tool_results(1)[0]
    assert first["is_error"] is True
    assert first["content"] == "PermissionError: [Errno 13] Permission denied: '/etc/app/secrets.yaml'"
    assert result.stop_reason == "loop_stopped"
    kinds = {s.kind for v in result.verdicts for s in v.signals}
    assert "same_result" in kinds
    warned = next(i for i, v in enumerate(result.verdicts) if v.action == "warn")
    hinted = model.tool_results(warned + 1)[0]
    assert hinted["is_error"] is True and "Permission denied" in hinted["content"] and "[semloop]" in hinted["content"]


# -- a well-behaved agent is never interrupted ------------------------------------------------------


def test_well_behaved_agent_is_never_interrupted():
    contents = {f"/repo/src/module_{i}.py": f"def handler_{i}(request):\n    return {i * 37} + request.size  # {i}\n"
                for i in range(6)}
    turns = [[("read_file", {"path": path})] for path in contents]
    turns += [[("list_issues", {"page": page})] for page in range(1, 7)]
    turns += ["All six modules are fine; 60 issues listed, none about the build."]
    model = ScriptedModel(turns)

    result = run(model, files(contents))

    assert result.stop_reason == "end_turn"
    assert result.text == "All six modules are fine; 60 issues listed, none about the build."
    assert len(result.verdicts) == 12 and all(v.action == "allow" for v in result.verdicts)
    assert not any("[semloop]" in content_text(b) for i in range(1, len(model.requests)) for b in model.tool_results(i))
    assert all("tool_choice" not in r for r in model.requests)
    assert result.turns == 13 and result.usage.input_tokens == 1300


# -- several tool_use blocks per response ------------------------------------------------------------


def test_parallel_tool_calls_get_results_in_one_user_message():
    contents = {"/a.txt": "alpha", "/b.txt": "bravo", "/c.txt": "charlie"}
    model = ScriptedModel([[("read_file", {"path": p}) for p in contents], "Read all three."])
    result = run(model, files(contents))

    assert result.stop_reason == "end_turn" and len(result.verdicts) == 3
    second = model.requests[1]["messages"]
    ids = [b["id"] for b in second[-2]["content"] if b["type"] == "tool_use"]
    results = model.tool_results(1)
    assert [b["tool_use_id"] for b in results] == ids and [b["content"] for b in results] == ["alpha", "bravo", "charlie"]
    assert len([m for m in second if m["role"] == "user"]) == 2  # the prompt + ONE message with all results


def test_stop_inside_a_parallel_batch_answers_the_rest_without_running_them():
    same = ("bash", {"command": "npm test"})
    model = ScriptedModel([[same, same, same]])
    ran = []

    def dispatch(name, tool_input):
        ran.append(tool_input)
        return "Error: Cannot find module 'jest'"

    result = run(model, dispatch)

    assert result.stop_reason == "loop_stopped" and result.text == FINAL_TEXT
    final_results = model.tool_results(len(model.requests) - 1)
    assert len(final_results) == 3  # every tool_use of the last response is answered
    stop_at = next(i for i, b in enumerate(final_results) if "semloop" in content_text(b) and "[semloop]" not in content_text(b))
    assert all(b["content"] == NOT_RUN and b["is_error"] for b in final_results[stop_at + 1:])
    assert len(ran) <= 3 * (len(model.requests) - 1)


# -- max_turns, other stop reasons ------------------------------------------------------------------


def test_max_turns_ends_the_run():
    contents = {f"/f{i}": f"content number {i} " * (i + 1) for i in range(10)}
    model = ScriptedModel([[("read_file", {"path": p})] for p in contents])
    result = run(model, files(contents), max_turns=3)
    assert result.stop_reason == "max_turns" and result.turns == 3 and len(model.requests) == 3
    assert all(v.action == "allow" for v in result.verdicts)
    assert result.messages[-1]["role"] == "user"  # the last tool results, ready to resume


def test_raw_stop_reason_is_passed_through():
    def respond(request):
        return httpx2.Response(200, json=message([text("Partial answ")], "max_tokens"))

    client = anthropic.Anthropic(api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(respond)))
    result = run_agent(client, model=MODEL, messages=[{"role": "user", "content": "hi"}], tools=TOOLS,
                       dispatch=lambda n, i: "", system="Be brief.", stop_sequences=["END"])
    assert result.stop_reason == "max_tokens" and result.text == "Partial answ" and result.verdicts == ()


def test_create_kwargs_system_and_caller_messages_untouched():
    model = ScriptedModel(["Nothing to do."])
    prompt = [{"role": "user", "content": "Fix the build."}]
    run_agent(model.client(), model=MODEL, messages=prompt, tools=TOOLS, dispatch=lambda n, i: "",
              system="You are careful.", max_tokens=1234, stop_sequences=["END"], metadata={"user_id": "u1"})
    body = model.requests[0]
    assert body["system"] == "You are careful." and body["max_tokens"] == 1234 and body["stop_sequences"] == ["END"]
    assert body["metadata"] == {"user_id": "u1"} and body["model"] == MODEL
    assert prompt == [{"role": "user", "content": "Fix the build."}]


# -- async ---------------------------------------------------------------------------------------------


def test_async_variant_with_async_dispatch():
    model = ScriptedModel([[("read_file", {"path": "/srv/app/config.yaml"}), ("bash", {"command": "ls /srv/app"})]])

    async def dispatch(name, tool_input):
        await asyncio.sleep(0)
        return "config.yaml" if name == "bash" else "error: bad indentation"

    result = asyncio.run(run_agent_async(model.async_client(), model=MODEL,
                                         messages=[{"role": "user", "content": "Fix the config."}],
                                         tools=TOOLS, dispatch=dispatch, guard=LoopGuard()))
    assert result.stop_reason == "loop_stopped" and result.text == FINAL_TEXT
    assert "warn" in [v.action for v in result.verdicts]
    assert model.requests[-1]["tool_choice"] == {"type": "none"}


def test_async_variant_with_sync_dispatch_and_exception():
    model = ScriptedModel([[("bash", {"command": "make"})], "The build needs a compiler."])

    def dispatch(name, tool_input):
        raise RuntimeError("make: cc: not found")

    result = asyncio.run(run_agent_async(model.async_client(), model=MODEL,
                                         messages=[{"role": "user", "content": "Build it."}],
                                         tools=TOOLS, dispatch=dispatch))
    assert result.stop_reason == "end_turn" and result.text == "The build needs a compiler."
    assert model.tool_results(1)[0] == {"type": "tool_result", "tool_use_id": model.tool_results(1)[0]["tool_use_id"],
                                        "content": "RuntimeError: make: cc: not found", "is_error": True}


# -- tool_result on its own ----------------------------------------------------------------------------


def test_tool_result_block_param_and_verdict():
    guard = LoopGuard()
    block = {"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {"path": "/x"}}
    blocks = [{"type": "text", "text": "permission denied"}]
    results = [tool_result(guard, block, blocks, is_error=True) for _ in range(3)]
    first, last = results[0], results[-1]
    assert first.block == {"type": "tool_result", "tool_use_id": "toolu_9", "content": blocks, "is_error": True}
    assert first.verdict == Verdict("allow", 0)
    param, verdict = last
    assert verdict.action == "warn" and param["is_error"] is True
    assert param["content"][0] == blocks[0] and param["content"][-1] == {"type": "text", "text": verdict.message}
    # JSON-able outputs are sent as JSON text
    other = tool_result(LoopGuard(), block, {"rows": [1, 2]})
    assert other.block["content"] == '{"rows": [1, 2]}' and "is_error" not in other.block


# -- client.beta.messages.tool_runner -------------------------------------------------------------------


def test_tool_runner_with_guarded_beta_tool():
    from anthropic import beta_tool

    ran = []

    @beta_tool
    def read_file(path: str) -> str:
        """Read a file.

        Args:
            path: The file to read.
        """
        ran.append(path)
        return "error: config.yaml: mapping values are not allowed here (line 3)"

    guard = LoopGuard()
    stops = []
    tool = guarded(guard, read_file, on_stop=stops.append)
    model = ScriptedModel([[("read_file", {"path": "/srv/app/config.yaml"})]] * 4 + ["I stopped: the file is broken."])
    runner = model.client().beta.messages.tool_runner(
        model=MODEL, max_tokens=1024, tools=[tool], messages=[{"role": "user", "content": "Fix the config."}],
        max_iterations=12)
    final = runner.until_done()

    assert final.content[0].text == "I stopped: the file is broken."
    sent = model.requests[0]["tools"]
    assert sent[0]["name"] == "read_file" and sent[0]["input_schema"]["properties"]["path"]["type"] == "string"
    actions = [v.action for v in tool.verdicts]
    assert actions == ["allow", "allow", "warn", "stop"] and len(stops) == 1
    first_warn = actions.index("warn")
    hinted = content_text(model.tool_results(first_warn + 1)[0])
    assert hinted.startswith("error: config.yaml") and "[semloop]" in hinted
    assert len(model.requests) == 5  # four turns of the loop, then the answer after the refusal
    last = model.tool_results(4)[0]
    assert last.get("is_error") is True and "semloop" in content_text(last) and "No further tool calls" in content_text(last)
    assert len(ran) == 3  # the fourth call was refused before running


def test_tool_runner_async_guarded_tool_and_decorator_form():
    from anthropic import beta_async_tool

    guard = LoopGuard()

    @guarded(guard)
    @beta_async_tool
    async def web_search(query: str) -> str:
        """Search the web."""
        return "No results found."

    queries = ["python loop detection library", "library for detecting loops in python",
               "python package that detects loops", "find a python library to detect loops"]
    model = ScriptedModel([[("web_search", {"query": q})] for q in queries] + ["Nothing found."])

    async def go():
        runner = model.async_client().beta.messages.tool_runner(
            model=MODEL, max_tokens=1024, tools=[web_search],
            messages=[{"role": "user", "content": "Find a library."}])
        return await runner.until_done()

    final = asyncio.run(go())
    assert final.content[0].text == "Nothing found."
    assert "warn" in [v.action for v in web_search.verdicts]
    assert any("[semloop]" in content_text(model.tool_results(i)[0]) for i in range(1, len(model.requests)))


# -- guidance, quotes, resuming --------------------------------------------------------------------


def test_guidance_flag_adds_the_block_after_the_system_prompt():
    import semloop

    model = ScriptedModel(["Nothing to do."])
    run(model, lambda n, i: "", system="You are careful.", guidance=True)
    assert model.requests[0]["system"] == f"You are careful.\n\n{semloop.guidance()}"
    blocks = [{"type": "text", "text": "You are careful."}]
    run(model, lambda n, i: "", system=blocks, guidance=True, guard=LoopGuard(language="zh"))
    assert model.requests[1]["system"] == [*blocks, {"type": "text", "text": semloop.guidance("zh")}]
    run(model, lambda n, i: "")
    assert "system" not in model.requests[2]  # off by default


def test_the_model_reads_what_the_earlier_step_returned_and_a_stopped_guard_resumes_next_turn():
    model = ScriptedModel([[("read_file", {"path": "/srv/app/config.yaml"})]])
    guard = LoopGuard()
    result = run(model, lambda n, i: "error: config.yaml: mapping values are not allowed here (line 3)", guard=guard)
    hinted = content_text(model.tool_results(3)[0])
    assert "Step 0 already failed the same way: `error: config.yaml: mapping values are not allowed here (line 3)`" \
        in hinted
    assert result.stopped and guard.stopped
    refused = model.tool_results(len(model.requests) - 1)[0]["content"]
    assert "The run is stopped at step 3." in refused and "The user's next message lifts the stop." in refused
    # the user's next message: a new run on the same guard goes on (the loop memory is kept)
    again = ScriptedModel([[("read_file", {"path": "/srv/app/README.md"})], "Done."])
    after = run(again, files({"/srv/app/README.md": "# app"}), guard=guard)
    assert after.stop_reason == "end_turn" and [v.action for v in after.verdicts] == ["allow"]
