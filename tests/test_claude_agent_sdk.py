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
    assert set(mapping) == {"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit"}
    for matchers in mapping.values():
        assert all(isinstance(m, HookMatcher) and m.hooks for m in matchers)
        assert all(asyncio.iscoroutinefunction(h) for m in matchers for h in m.hooks)
    options = ClaudeAgentOptions(hooks=mapping)
    assert options.hooks is mapping
    only_bash = SemloopHooks(reset_on_prompt=False).hooks(matcher="Bash")
    assert set(only_bash) == {"PreToolUse", "PostToolUse", "PostToolUseFailure"}
    assert only_bash["PreToolUse"][0].matcher == "Bash"


def test_repeated_bash_call_warns_then_halts_then_denies():
    hooks = SemloopHooks()
    cmd = {"command": "pytest tests/test_api.py -x", "description": "Run the API tests"}
    out = bash("", "ImportError: cannot import name 'Client' from 'app.api'")
    results = [step(hooks, "Bash", cmd, out, n) for n in range(5)]

    assert results[0] == ({}, {}) and results[1] == ({}, {})
    warn = results[2][1]
    assert results[3][0] == {} and "additionalContext" in results[3][1]["hookSpecificOutput"]  # second warning
    assert set(warn) == {"hookSpecificOutput"}
    assert warn["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    context = warn["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("[semloop]") and "Bash" in context
    # plain factual statements, not commands dressed up as system messages
    assert "SYSTEM" not in context and "IMPORTANT" not in context and "must" not in context.lower()

    # fifth call: warned to the limit → denied before it runs
    before, after = results[4]
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
    # the SDK turns continue_ into the CLI's "continue"
    from claude_agent_sdk._internal.query import _convert_hook_output_for_cli

    wire = _convert_hook_output_for_cli(stop)
    assert wire["continue"] is False and "continue_" not in wire

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
    assert hooks.verdicts[0][1].signals[0].kind == "exact"


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
