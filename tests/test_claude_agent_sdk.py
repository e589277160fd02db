"""The Claude Agent SDK hooks, called the way the SDK calls them: with its own hook input TypedDicts
and a HookContext, run with asyncio.run (no CLI, no network)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

sdk = pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher  # noqa: E402
from claude_agent_sdk.types import (  # noqa: E402
    HookContext,
    PostToolUseFailureHookInput,
    PostToolUseHookInput,
    PreToolUseHookInput,
    UserPromptSubmitHookInput,
)

from semloop import Config  # noqa: E402
from semloop.integrations.claude_agent_sdk import SemloopHooks, semloop_hooks  # noqa: E402

SESSION = "0b6b5a4e-6d1c-4b8e-9a53-2f3c1d7e9a10"
CTX = HookContext(signal=None)
BASE = {"session_id": SESSION, "transcript_path": f"/home/dev/.claude/projects/app/{SESSION}.jsonl",
        "cwd": "/home/dev/app", "permission_mode": "default"}


@pytest.fixture(autouse=True)
def _own_settings(tmp_path, monkeypatch):
    """No semloop hook of this machine's own Claude Code settings may make the callbacks step aside."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))


def pre(tool: str, tool_input: dict, n: int, **extra: Any) -> PreToolUseHookInput:
    return PreToolUseHookInput(**BASE, **extra, hook_event_name="PreToolUse", tool_name=tool, tool_input=tool_input,
                               tool_use_id=f"toolu_{n:04d}")


def post(tool: str, tool_input: dict, response: Any, n: int, **extra: Any) -> PostToolUseHookInput:
    return PostToolUseHookInput(**BASE, **extra, hook_event_name="PostToolUse", tool_name=tool, tool_input=tool_input,
                                tool_response=response, tool_use_id=f"toolu_{n:04d}", duration_ms=12)


def failure(tool: str, tool_input: dict, error: str, n: int) -> PostToolUseFailureHookInput:
    return PostToolUseFailureHookInput(**BASE, hook_event_name="PostToolUseFailure", tool_name=tool,
                                       tool_input=tool_input, tool_use_id=f"toolu_{n:04d}", error=error)


def bash(stdout: str, stderr: str = "") -> dict:
    return {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}


def step(hooks: SemloopHooks, tool: str, tool_input: dict, response: Any, n: int, **extra: Any) -> tuple[dict, dict]:
    """One tool call as the SDK runs it: PreToolUse, and PostToolUse unless denied."""
    async def go():
        before = await hooks.pre_tool_use(pre(tool, tool_input, n, **extra), f"toolu_{n:04d}", CTX)
        if before.get("hookSpecificOutput", {}).get("permissionDecision") == "deny":
            return before, {}
        return before, await hooks.post_tool_use(post(tool, tool_input, response, n, **extra), f"toolu_{n:04d}", CTX)

    return asyncio.run(go())


def test_hooks_mapping_plugs_into_claude_agent_options():
    mapping = semloop_hooks()
    assert set(mapping) == {"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop"}
    for matchers in mapping.values():
        assert all(isinstance(m, HookMatcher) and m.hooks for m in matchers)
        assert all(asyncio.iscoroutinefunction(h) for m in matchers for h in m.hooks)
    options = ClaudeAgentOptions(hooks=mapping)
    assert options.hooks is mapping
    only_bash = SemloopHooks(reset_on_prompt=False).hooks(matcher="Bash")
    assert set(only_bash) == {"PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop"}
    assert only_bash["Stop"][0].matcher is None  # the final message of every turn, whatever the tools
    assert only_bash["PreToolUse"][0].matcher == "Bash"


def test_repeated_bash_call_warns_then_halts_then_denies():
    hooks = SemloopHooks()
    cmd = {"command": "pytest tests/test_api.py -x", "description": "Run the API tests"}
    out = bash("", "ImportError: cannot import name 'Client' from 'app.api'")
    results = [step(hooks, "Bash", cmd, out, n) for n in range(4)]

    assert results[0] == ({}, {}) and results[1] == ({}, {})
    warn = results[2][1]
    assert results[2][0] == {} and set(warn) == {"hookSpecificOutput"}  # the warning: after the call ran
    assert warn["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    context = warn["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("[semloop]") and "Bash" in context
    # plain factual statements, not commands dressed up as system messages
    assert "SYSTEM" not in context and "IMPORTANT" not in context and "must" not in context.lower()

    # fourth call: it continues the loop just warned about (an identical repeat) → denied before it runs
    before, after = results[3]
    spec = before["hookSpecificOutput"]
    assert spec["hookEventName"] == "PreToolUse" and spec["permissionDecision"] == "deny"
    assert "semloop" in spec["permissionDecisionReason"] and "continue_" not in before and after == {}


def test_stop_returns_continue_false_with_stop_reason():
    hooks = SemloopHooks()
    out = bash("", "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\n"
                   "npm ERR! Could not resolve dependency: peer react@\"^17\" from react-dom@17.0.2")
    commands = ["npm install", "npm install --legacy-peer-deps", "npm i", "npm install --force", "npm ci",
                "npm install --no-audit"]
    outputs = [step(hooks, "Bash", {"command": c}, out, n)[1] for n, c in enumerate(commands)]
    stop = next(o for o in outputs if "continue_" in o)
    assert stop["continue_"] is False and stop["stopReason"].startswith("semloop stopped this run")
    assert stop["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert hooks.guard_for(SESSION).stopped
    # (that the SDK sends continue_ as the CLI's "continue" is checked end to end below)

    # any later call in that session is denied, and halted again
    before, _ = step(hooks, "Read", {"file_path": "/home/dev/app/package.json"}, {}, 99)
    assert before["hookSpecificOutput"]["permissionDecision"] == "deny" and before["continue_"] is False


def test_soft_landing_mode_denies_instead_of_halting():
    hooks = SemloopHooks(halt_on_stop=False)
    cmd, out = {"command": "make"}, bash("", "make: *** No rule to make target 'all'.  Stop.")
    outputs = [step(hooks, "Bash", cmd, out, n) for n in range(6)]
    assert all("continue_" not in before and "continue_" not in after for before, after in outputs)
    denied = [b for b, _ in outputs if b]
    assert denied and all(b["hookSpecificOutput"]["permissionDecision"] == "deny" for b in denied)


def test_new_user_prompt_lifts_a_stop():
    hooks = SemloopHooks()
    cmd, out = {"command": "make"}, bash("", "make: *** No rule to make target 'all'.  Stop.")
    asyncio.run(_run_until_stopped(hooks, cmd, out))
    assert hooks.guard_for(SESSION).stopped
    prompt = UserPromptSubmitHookInput(**BASE, hook_event_name="UserPromptSubmit", prompt="Try with cmake instead.")
    assert asyncio.run(hooks.user_prompt_submit(prompt, None, CTX)) == {}
    assert not hooks.guard_for(SESSION).stopped
    assert step(hooks, "Bash", {"command": "cmake -S . -B build"}, bash("-- Configuring done"), 50) == ({}, {})
    # the loop memory is kept: going back to the same loop is flagged at once
    _, again = step(hooks, "Bash", cmd, out, 51)
    assert again["hookSpecificOutput"]["additionalContext"].startswith("[semloop]")


async def _run_until_stopped(hooks: SemloopHooks, cmd: dict, out: Any) -> None:
    for n in range(10):
        await hooks.pre_tool_use(pre("Bash", cmd, n), None, CTX)
        if "continue_" in await hooks.post_tool_use(post("Bash", cmd, out, n), None, CTX):
            return
    raise AssertionError("never stopped")


def test_same_error_from_varied_calls_via_post_tool_use_failure():
    hooks = SemloopHooks()
    error = "Error: EACCES: permission denied, open '/etc/nginx/nginx.conf'"
    calls = [("Read", {"file_path": "/etc/nginx/nginx.conf"}),
             ("Edit", {"file_path": "/etc/nginx/nginx.conf", "old_string": "listen 80", "new_string": "listen 8080"}),
             ("Write", {"file_path": "/etc/nginx/nginx.conf", "content": "server { listen 8080; }"}),
             ("Edit", {"file_path": "/etc/nginx/nginx.conf", "old_string": "80;", "new_string": "8080;"})]
    outputs = [asyncio.run(hooks.post_tool_use_failure(failure(t, i, error, n), None, CTX))
               for n, (t, i) in enumerate(calls)]
    warned = [o for o in outputs if o]
    assert warned, outputs
    spec = warned[0]["hookSpecificOutput"]
    assert spec["hookEventName"] == "PostToolUseFailure" and "[semloop]" in spec["additionalContext"]
    kinds = {s.kind for _, v in hooks.verdicts for s in v.signals}
    assert "same_result" in kinds


def test_interrupts_are_not_recorded():
    hooks = SemloopHooks()
    data = dict(failure("Bash", {"command": "sleep 100"}, "Interrupted by user", 1), is_interrupt=True)
    for _ in range(5):
        assert asyncio.run(hooks.post_tool_use_failure(data, None, CTX)) == {}
    # nor is our own PreToolUse denial, should the CLI report it as a failure
    denied = failure("Bash", {"command": "make"}, "semloop blocked this Bash call: it repeats a loop ...", 2)
    assert asyncio.run(hooks.post_tool_use_failure(denied, None, CTX)) == {}
    assert hooks.guard_for(SESSION).steps == 0


def test_well_behaved_session_is_never_interrupted():
    hooks = SemloopHooks()
    n = 0
    for i in range(6):
        path = f"/home/dev/app/src/handlers/h{i}.py"
        read = {"type": "text", "file": {"filePath": path, "content": f"def handle_{i}(event):\n    return {i * 41}\n",
                                         "numLines": 2, "startLine": 1, "totalLines": 2}}
        assert step(hooks, "Read", {"file_path": path}, read, n := n + 1) == ({}, {})
    for page in range(1, 6):
        out = bash("\n".join(f"{c:07x} commit {c}" for c in range(page * 20, page * 20 + 20)))
        assert step(hooks, "Bash", {"command": f"git log --oneline --skip={(page - 1) * 20} -n 20"}, out,
                    n := n + 1) == ({}, {})
    assert hooks.verdicts == [] and hooks.guard_for(SESSION).steps == 11


def test_sessions_and_subagents_get_their_own_guards():
    hooks = SemloopHooks(max_sessions=3)
    cmd, out = {"command": "ls /missing"}, bash("", "ls: cannot access '/missing': No such file or directory")
    # two calls on the main thread and two in each of two subagents: nobody reaches the third repeat
    for agent in (None, "agent-a1", "agent-b2"):
        extra = {"agent_id": agent, "agent_type": "general-purpose"} if agent else {}
        for n in range(2):
            assert step(hooks, "Bash", cmd, out, n, **extra) == ({}, {})
    assert set(hooks.guards) == {(SESSION, None), (SESSION, "agent-a1"), (SESSION, "agent-b2")}
    # the third in subagent a1 is that subagent's third: warned
    _, warned = step(hooks, "Bash", cmd, out, 7, agent_id="agent-a1", agent_type="general-purpose")
    assert "additionalContext" in warned["hookSpecificOutput"]
    assert hooks.guard_for(SESSION).steps == 2
    # bounded: a fourth key drops the least recently used
    hooks.guard_for("other-session")
    assert len(hooks.guards) == 3 and (SESSION, "agent-b2") not in hooks.guards


def test_bash_retries_with_reworded_descriptions_are_the_same_call():
    hooks = SemloopHooks()
    out = bash("", "error: externally-managed-environment")
    descriptions = ["Install requests", "Install the requests package", "Try installing requests again"]
    outputs = [step(hooks, "Bash", {"command": "pip install requests", "description": d}, out, n)[1]
               for n, d in enumerate(descriptions)]
    assert outputs[2]["hookSpecificOutput"]["additionalContext"].startswith("[semloop]")
    assert hooks.verdicts[0][1].signals[0].kind == "normalized"  # same command, reworded commentary


def test_timing_fields_do_not_hide_an_unchanged_result():
    hooks = SemloopHooks()
    outputs = [step(hooks, "Grep", {"pattern": "TODO", "path": "src"},
                    {"mode": "files_with_matches", "filenames": [], "numFiles": 0, "durationMs": 10 + n}, n)[1]
               for n in range(3)]
    assert outputs[2]["hookSpecificOutput"]["additionalContext"].startswith("[semloop]")


def test_hooks_fail_open():
    hooks = SemloopHooks()
    broken: Any = {"session_id": SESSION}  # no tool_name
    assert asyncio.run(hooks.pre_tool_use(broken, None, CTX)) == {}
    assert asyncio.run(hooks.post_tool_use(broken, None, CTX)) == {}
    strict = SemloopHooks(Config(fail_open=False))
    with pytest.raises(KeyError):
        asyncio.run(strict.post_tool_use(broken, None, CTX))


# -- end to end through the SDK's own query() and control protocol ----------------------------------


class FakeCLI:
    """Plays the Claude Code CLI's side of the SDK control protocol (a custom `Transport`): runs a
    scripted list of tool calls, asking the SDK's hook callbacks before and after each, and obeys
    their answers (a deny skips the call; `continue: false` ends the run)."""

    def __init__(self, calls: list[tuple[str, dict, Any]]) -> None:
        self.calls = calls
        self.out: asyncio.Queue = asyncio.Queue()
        self.pending: dict[str, asyncio.Future] = {}
        self.hook_ids: dict[str, list[str]] = {}
        self.log: list[tuple[str, int, list[dict]]] = []
        self.stop_reason: str | None = None
        self._n = 0

    def transport(self) -> Any:
        from claude_agent_sdk import Transport  # the SDK's public custom-transport interface

        cli = self

        class _T(Transport):
            async def connect(self) -> None: ...
            def is_ready(self) -> bool: return True
            async def end_input(self) -> None: ...
            async def close(self) -> None: ...
            async def write(self, data: str) -> None: await cli.write(data)
            def read_messages(self): return cli.read_messages()

        return _T()

    async def write(self, data: str) -> None:
        import json

        for line in data.splitlines():
            msg = json.loads(line)
            if msg["type"] == "control_request" and msg["request"]["subtype"] == "initialize":
                for event, matchers in (msg["request"].get("hooks") or {}).items():
                    self.hook_ids[event] = [cid for m in matchers for cid in m["hookCallbackIds"]]
                await self.out.put({"type": "control_response", "response": {
                    "subtype": "success", "request_id": msg["request_id"], "response": {}}})
            elif msg["type"] == "user":
                self.task = asyncio.ensure_future(self.run())
            elif msg["type"] == "control_response":
                self.pending.pop(msg["response"]["request_id"]).set_result(msg["response"])

    async def hook(self, event: str, data: dict) -> list[dict]:
        answers = []
        for callback_id in self.hook_ids.get(event, []):
            self._n += 1
            request_id = f"cli_{self._n}"
            self.pending[request_id] = asyncio.get_running_loop().create_future()
            await self.out.put({"type": "control_request", "request_id": request_id, "request": {
                "subtype": "hook_callback", "callback_id": callback_id, "input": data,
                "tool_use_id": data.get("tool_use_id")}})
            response = await self.pending[request_id]
            assert response["subtype"] == "success", response
            answers.append(response["response"])
        return answers

    async def run(self) -> None:
        for n, (tool, tool_input, response) in enumerate(self.calls):
            common = {**BASE, "tool_name": tool, "tool_input": tool_input, "tool_use_id": f"toolu_{n:04d}"}
            answers = await self.hook("PreToolUse", {**common, "hook_event_name": "PreToolUse"})
            denied = any(a.get("hookSpecificOutput", {}).get("permissionDecision") == "deny" for a in answers)
            if not denied:
                answers = await self.hook("PostToolUse", {**common, "hook_event_name": "PostToolUse",
                                                          "tool_response": response})
            self.log.append(("denied" if denied else "ran", n, answers))
            halt = [a for a in answers if a.get("continue") is False]  # the wire name, converted by the SDK
            if halt:
                self.stop_reason = halt[0]["stopReason"]
                break
        await self.out.put({"type": "result", "subtype": "success", "duration_ms": 5, "duration_api_ms": 3,
                            "is_error": False, "num_turns": len(self.log), "session_id": SESSION,
                            "result": self.stop_reason or "done"})

    async def read_messages(self):
        while True:
            msg = await self.out.get()
            yield msg
            if msg["type"] == "result":
                return


def run_query(hooks: SemloopHooks, calls: list[tuple[str, dict, Any]]) -> tuple[FakeCLI, list[Any]]:
    from claude_agent_sdk import query

    cli = FakeCLI(calls)

    async def go():
        options = ClaudeAgentOptions(hooks=hooks.hooks())
        return [m async for m in query(prompt="Build the project.", options=options, transport=cli.transport())]

    return cli, asyncio.run(asyncio.wait_for(go(), 30))


def test_end_to_end_identical_loop_warned_denied_then_halted():
    out = bash("", "make: *** No rule to make target 'all'.  Stop.")
    cli, messages = run_query(SemloopHooks(), [("Bash", {"command": "make"}, out)] * 10)
    assert [kind for kind, _, _ in cli.log] == ["ran", "ran", "ran", "denied", "denied"]
    assert "additionalContext" in cli.log[2][2][0]["hookSpecificOutput"]
    assert "continue" not in cli.log[3][2][0]  # first denial: the model is told, and may change course
    assert cli.log[4][2][0]["continue"] is False  # retrying a denied loop call: the run is halted
    assert cli.stop_reason and cli.stop_reason.startswith("semloop blocked this Bash call")
    assert type(messages[-1]).__name__ == "ResultMessage"


def test_end_to_end_varied_calls_stopped_on_record():
    err = ("npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\n"
           "npm ERR! Could not resolve dependency: peer react@\"^17\" from react-dom@17.0.2")
    commands = ["npm install", "npm install --legacy-peer-deps", "npm i", "npm install --force", "npm ci",
                "npm install --no-audit", "npm install --prefer-offline", "yarn install"]
    cli, _ = run_query(SemloopHooks(), [("Bash", {"command": c}, bash("", err)) for c in commands])
    assert cli.log[-1][0] == "ran" and cli.log[-1][2][0]["continue"] is False
    assert cli.stop_reason.startswith("semloop stopped this run")
    assert len(cli.log) < len(commands)


def test_end_to_end_well_behaved_run_is_untouched():
    calls = [("Read", {"file_path": f"/home/dev/app/src/m{i}.py"},
              {"type": "text", "file": {"filePath": f"/home/dev/app/src/m{i}.py", "content": f"VALUE_{i} = {i * 97}\n"}})
             for i in range(8)]
    cli, _ = run_query(SemloopHooks(), calls)
    assert [kind for kind, _, _ in cli.log] == ["ran"] * 8
    assert all(answers == [{}] for _, _, answers in cli.log) and cli.stop_reason is None


class ChatCLI(FakeCLI):
    """The CLI's side of a `ClaudeSDKClient` session, one turn per user message: UserPromptSubmit,
    then the turn's final text, which goes to the Stop hook (`last_assistant_message`, as the CLI
    sends it) before the assistant message and the `ResultMessage` go out."""

    def __init__(self, texts: list[str]) -> None:
        super().__init__([])
        self.texts = list(texts)
        self.turn = 0

    async def write(self, data: str) -> None:
        import json

        for line in data.splitlines():
            msg = json.loads(line)
            if msg["type"] == "user":
                self.task = asyncio.ensure_future(self.chat(msg["message"]["content"]))
            else:
                await super().write(line)

    async def chat(self, prompt: str) -> None:
        await self.hook("UserPromptSubmit", {**BASE, "hook_event_name": "UserPromptSubmit", "prompt": prompt})
        text = self.texts[self.turn]
        self.turn += 1
        answers = await self.hook("Stop", {**BASE, "hook_event_name": "Stop", "stop_hook_active": False,
                                           "last_assistant_message": text})
        self.log.append(("stop", self.turn, answers))
        await self.out.put({"type": "assistant", "session_id": SESSION, "parent_tool_use_id": None, "message": {
            "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}]}})
        await self.out.put({"type": "result", "subtype": "success", "duration_ms": 5, "duration_api_ms": 3,
                            "is_error": False, "num_turns": 1, "session_id": SESSION, "result": text})

    async def read_messages(self):
        while True:
            yield await self.out.get()


def chat(hooks: SemloopHooks, texts: list[str], prompts: list[str]) -> tuple[ChatCLI, list[Any]]:
    """One `ClaudeSDKClient` session, one `query` per prompt: each turn's `ResultMessage` and what
    `hooks.message_verdict` says when it arrives."""
    from claude_agent_sdk import ClaudeSDKClient, ResultMessage

    cli = ChatCLI(texts)

    async def go():
        turns = []
        async with ClaudeSDKClient(ClaudeAgentOptions(hooks=hooks.hooks()), transport=cli.transport()) as client:
            for prompt in prompts:
                await client.query(prompt)
                async for message in hooks.watch(client.receive_response()):
                    if isinstance(message, ResultMessage):
                        turns.append((message, hooks.message_verdict(message.session_id)))
        return turns

    return cli, asyncio.run(asyncio.wait_for(go(), 30))


def test_end_to_end_a_session_whose_turns_keep_asking_for_the_same_thing_is_a_conversation_loop():
    """The Stop hook records each turn's final message: three turns of one session asking the user
    for the reservation ID, however worded, get a `conversation` verdict on the third, there when
    its `ResultMessage` arrives; the messages are unchanged and the hook answers `{}`. A session that
    moves from one question to the next gets none."""
    asks = ["Could you please provide your reservation ID?",
            "I need your reservation ID to continue. Could you please provide it?",
            "Please provide your reservation ID so I can continue."]
    replies = ["I don't have it.", "I told you, I don't have it.", "Can't you look it up by my name?"]
    hooks = SemloopHooks()
    cli, turns = chat(hooks, asks, ["Change my flight.", *replies[:2]])
    assert [m.result for m, _ in turns] == asks  # the messages themselves are untouched
    assert all(m.stop_reason is None for m, _ in turns)  # no halt: nothing for `watch` to add
    assert [answers for kind, _, answers in cli.log] == [[{}]] * 3  # the turn is never held up
    assert [v and v.action for _, v in turns] == [None, None, "warn"]
    verdict = turns[2][1]
    assert verdict.signals[0].kind == "conversation" and verdict.signals[0].related_steps == (0, 1)
    assert hooks.verdicts == [(SESSION, verdict)] and hooks.guard_for(SESSION).steps == 3

    moving = ["What is your reservation ID?", "Which date would you like to fly instead?",
              "Do you prefer an aisle or a window seat?"]
    quiet = SemloopHooks()
    _, turns = chat(quiet, moving, ["Change my flight.", "It's ABC123.", "The 14th."])
    assert [m.result for m, _ in turns] == moving and [v for _, v in turns] == [None] * 3
    assert quiet.verdicts == [] and quiet.guard_for(SESSION).steps == 3
