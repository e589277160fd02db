"""One event-translation layer for every coding-agent CLI semloop hooks: `semloop hook <target>`
for claude-code, gemini-cli, codex, copilot, cursor and openhands.

Each CLI is a `Dialect` — a table of its event names, its field names and the JSON shapes of its
answers — not a module of its own. A hook event goes through three steps:

1. `to_claude_event`: the CLI's event → the Claude Code hook event it corresponds to
   (PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit), the session keyed
   `<target>/<session id>` so the CLIs never share state.
2. The Claude Code hook handles it exactly as it handles Claude Code's own events: the warm hook
   server when it runs, else in this process (`claude_code.answer`, with its store, its fail-open
   and its time budget).
3. `from_claude_reply`: the answer (deny / note / stop) → the CLI's own answer shape.

Claude Code's events are the layer's own form: its dialect (`CLAUDE_CODE`) is `native`, its events
go to `claude_code` as they are. The session-start event (`session_event`) adds
`semloop.guidance()` to the session's context (`install --guidance`) where the CLI has an answer
for that (`answers["context"]`).

A dialect says what its CLI honours (docs/codex-cli.md etc. have the table per CLI): a CLI that
cannot end a run from a hook gets the refusal of every further call instead, and the docs say so.

This module is on every hook's path: standard library only (json, os) at import time, no
dataclasses / pathlib / re until a function needs them. The hook fails open (prints the CLI's
"allow", `{}`, and one line on stderr) on any error.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (hook processes start faster)

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import Any

MESSAGE = "\0message"  # in an answer template: replaced by semloop's text
STDERR = "\0stderr"  # an answer {STDERR: MESSAGE}: the text goes to stderr, and the hook exits 2
HOOK_TIMEOUT = 15  # seconds; what the installers write where the CLI takes a per-hook timeout


def _same(value: Any) -> Any:
    return value


def _no_error(event: dict) -> str | None:
    return None


def _never(event: str, tool: str) -> bool:
    return False


def _command_entry(command: str, event: str) -> dict:
    return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT}


class Dialect:
    """One CLI's hook contract, as data (read-only by convention: the tables below are shared).

    `events`: the CLI's event name → the Claude Code event it is handled as. `fields`: the Claude
    Code field → the CLI's name for it (session_id, tool_name, tool_input, tool_response, error,
    agent_id). `answers`: "deny" (PreToolUse refuses the call), "note" (a hint beside a tool
    result), "stop" (the run should end) and "context" (text for the session's context at its
    start) → the JSON object the CLI reads, `MESSAGE` standing for semloop's text; a missing key
    means the CLI has no such answer and gets `{}`. A field may name several keys (the first one
    present is used), an event its own answers (`event_answers`). `passes_refusal(event name,
    tool)`: a refusal there is left to a later event of the same call (`{}` now), where the CLI can
    also end the run. `refusal_stops`: the CLI ends the run on the refusal, so it is stored as a
    stop (which the user's next prompt lifts). `session_event`: the CLI's session-start event
    (hooked only with `install --guidance`), "" if it has none that can add context.
    """

    __slots__ = ("target", "label", "events", "fields", "answers", "user_file", "project_file", "event_field",
                 "parse_input", "failed", "response", "layout", "entry", "command_key", "file_header", "tool_events",
                 "after_install", "event_answers", "passes_refusal", "refusal_stops", "session_event", "project_var",
                 "native")

    def __init__(self, target: str, label: str, events: Mapping[str, str], fields: Mapping[str, str | tuple[str, ...]],
                 answers: Mapping[str, Any], *, user_file: Callable[[], Path], project_file: str,
                 event_field: str = "hook_event_name", parse_input: Callable[[Any], Any] = _same,
                 failed: Callable[[dict], str | None] = _no_error, response: Callable[[Any], Any] = _same,
                 layout: str = "groups", entry: Callable[[str, str], dict] = _command_entry,
                 command_key: str = "command", file_header: Mapping[str, Any] | None = None,
                 tool_events: tuple[str, ...] = ("PreToolUse", "PostToolUse"), after_install: str = "",
                 event_answers: Mapping[str, Mapping[str, Any]] | None = None,
                 passes_refusal: Callable[[str, str], bool] = _never, refusal_stops: bool = False,
                 session_event: str = "", project_var: str = "", native: bool = False):
        self.target, self.label, self.events, self.fields, self.answers = target, label, events, fields, answers
        self.user_file = user_file  # the user-scope hooks file
        self.project_file = project_file  # the project-scope hooks file, relative to the project root
        self.event_field = event_field  # where the event name is ("" = the SEMLOOP_HOOK_EVENT env)
        self.parse_input = parse_input  # e.g. a JSON string → object
        self.failed = failed  # error text of a failed PostToolUse call
        self.response = response  # the result that identifies the call
        self.layout = layout  # "groups": event → [{matcher, hooks: [entry]}]; "flat": event → [entry]
        self.entry = entry  # (command, event) → the hook entry
        self.command_key = command_key  # the entry key that holds the command line
        self.file_header = file_header or {}  # keys the hooks file must have
        self.tool_events = tool_events  # events with a tool matcher
        self.after_install = after_install  # one line the installer prints: how the CLI picks the hooks up
        self.event_answers = event_answers or {}
        self.passes_refusal = passes_refusal
        self.refusal_stops = refusal_stops
        self.session_event = session_event
        self.project_var = project_var  # the variable the CLI sets to the project root (portable commands)
        self.native = native

    def __repr__(self) -> str:
        return f"Dialect({self.target!r})"

    @property
    def prefix(self) -> str:
        return self.target + "/"

    def get(self, event: dict, name: str) -> Any:
        keys = self.fields.get(name) or ()
        for key in (keys,) if isinstance(keys, str) else keys:
            if key in event:
                return event[key]
        return None


def _home(variable: str, default: str) -> Path:
    """`$variable` (expanded) if the CLI reads one (`variable`), else `~/<default>`."""
    from pathlib import Path

    base = os.environ.get(variable) if variable else None
    return Path(base).expanduser() if base else Path.home() / default


def _claude_home() -> Path:
    return _home("CLAUDE_CONFIG_DIR", ".claude")


# Claude Code (code.claude.com/docs/en/hooks; checked with the real CLI): the layer's own form.
# `semloop hook claude-code` hands the event to `claude_code` unchanged; the answers below are the
# shapes `claude_code.handle_event` gives. Its installer is `hook_install.planned_hooks` (http hooks
# too), not this table's.
CLAUDE_CODE = Dialect(
    target="claude-code", label="Claude Code", native=True,
    events={e: e for e in ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "UserPromptSubmit",
                           "SessionEnd", "SubagentStop")},
    fields={"session_id": "session_id", "tool_name": "tool_name", "tool_input": "tool_input",
            "tool_response": "tool_response", "error": "error", "agent_id": "agent_id"},
    answers={
        "deny": {"continue": False, "stopReason": MESSAGE,
                 "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                        "permissionDecisionReason": MESSAGE}},
        "note": {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": MESSAGE}},
        "stop": {"continue": False, "stopReason": MESSAGE, "suppressOutput": False,
                 "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": MESSAGE}},
        "context": {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": MESSAGE}},
    },
    session_event="SessionStart", project_var="CLAUDE_PROJECT_DIR",
    user_file=lambda: _claude_home() / "settings.json", project_file=".claude/settings.json",
    tool_events=("PreToolUse", "PostToolUse", "PostToolUseFailure"),
)


def _gemini_text(response: Any) -> tuple[str, bool]:
    from .gemini_cli import response_text  # its regexes: only for Gemini CLI's events

    return response_text(response)


def _gemini_error(event: dict) -> str | None:
    text, failed = _gemini_text(event.get("tool_response"))
    return text if failed else None


# Gemini CLI (geminicli.com/docs/hooks/reference; checked with the real CLI): settings.json
# `hooks`, the event JSON on stdin. BeforeTool ends the agent loop with `continue: false` +
# `stopReason` before the tool runs (Gemini shows "Agent execution stopped: ..."), so semloop's
# refusal there is a stop, kept until the user's next prompt (BeforeAgent). AfterTool's
# `additionalContext` is appended to the real tool result (inside `<hook_context>`); its
# `continue: false` ends the loop, the call's result replaced by the stop message. SessionStart's
# `additionalContext` goes before the first prompt.
GEMINI = Dialect(
    target="gemini-cli", label="Gemini CLI",
    events={"BeforeTool": "PreToolUse", "AfterTool": "PostToolUse", "BeforeAgent": "UserPromptSubmit"},
    fields={"session_id": "session_id", "tool_name": "tool_name", "tool_input": "tool_input",
            "tool_response": "tool_response"},
    answers={"deny": {"continue": False, "stopReason": MESSAGE},
             "note": {"hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": MESSAGE}},
             "stop": {"continue": False, "stopReason": MESSAGE},
             "context": {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": MESSAGE}}},
    failed=_gemini_error, response=lambda response: _gemini_text(response)[0], refusal_stops=True,
    session_event="SessionStart", project_var="GEMINI_PROJECT_DIR",
    entry=lambda command, event: {"type": "command", "name": "semloop", "command": command,
                                  "timeout": HOOK_TIMEOUT * 1000},  # Gemini's timeout is in ms
    tool_events=("BeforeTool", "AfterTool"),
    user_file=lambda: _home("", ".gemini") / "settings.json", project_file=".gemini/settings.json",
    after_install="Gemini CLI reads hooks when it starts; the /hooks panel lists them.",
)


def _codex_home() -> Path:
    return _home("CODEX_HOME", ".codex")


# Codex CLI (openai/codex, codex-rs/hooks/schema/generated/*.command.*.schema.json). Checked with
# the real CLI (0.171.0): a denying PreToolUse keeps the call from running and hands the reason to
# the model; `continue: false` is *rejected* on PreToolUse (the hook counts as failed and the call
# runs), and on PostToolUse it replaces the tool's output with `stopReason` but the turn goes on.
# So no Codex hook answer ends a turn: the stop is kept, every further call of the session is
# refused until the user's next prompt. PostToolUse `additionalContext` reaches the model as a
# developer message; SessionStart's `additionalContext` as one before the first prompt.
CODEX = Dialect(
    target="codex", label="Codex CLI",
    events={"PreToolUse": "PreToolUse", "PostToolUse": "PostToolUse", "UserPromptSubmit": "UserPromptSubmit"},
    fields={"session_id": "session_id", "tool_name": "tool_name", "tool_input": "tool_input",
            "tool_response": "tool_response", "agent_id": "agent_id"},
    answers={
        "deny": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                        "permissionDecisionReason": MESSAGE}},
        "note": {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": MESSAGE}},
        "stop": {"continue": False, "stopReason": MESSAGE},
        "context": {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": MESSAGE}},
    },
    session_event="SessionStart",
    user_file=lambda: _codex_home() / "hooks.json", project_file=".codex/hooks.json",
    after_install=("Codex CLI runs a new or changed hook only once it is trusted: review and trust "
                   "semloop's hooks with /hooks in the CLI (automation: --dangerously-bypass-hook-trust)."),
)


def _observation_text(observation: Any) -> Any:
    """An OpenHands observation (`Observation.model_dump()`) → the text the model was given."""
    if not isinstance(observation, dict):
        return observation
    content = observation.get("content")
    if isinstance(content, list) and all(isinstance(c, dict) for c in content):
        texts = [str(c.get("text")) for c in content if c.get("type") == "text"]
        if texts:
            return "\n".join(texts)
    return {k: v for k, v in observation.items() if k not in ("is_error", "kind")}


def _openhands_error(event: dict) -> str | None:
    observation = event.get("tool_response")
    if isinstance(observation, dict) and observation.get("is_error"):
        text = _observation_text(observation)
        return text if isinstance(text, str) else json.dumps(text, sort_keys=True, default=str)
    return None


# OpenHands SDK (`openhands-sdk`, openhands/sdk/hooks): `.openhands/hooks.json` (or
# `~/.openhands/hooks.json`), loaded with `HookConfig.load(working_dir=...)` and given to
# `Conversation(hook_config=...)`. The event JSON names its event `event_type`; PreToolUse stops an
# action with `{"decision": "deny", "reason": ...}` (the reason is recorded as the action's block
# reason). PostToolUse output is not read at all, so semloop's notes cannot reach the model there:
# the calls are recorded, and the refusal at the limit is what the model gets. No session-start
# guidance either: its SessionStart hook only observes (the SDK's docs), so the guidance belongs in
# the agent's own system prompt (`semloop.guidance()`).
OPENHANDS = Dialect(
    target="openhands", label="OpenHands",
    events={"PreToolUse": "PreToolUse", "PostToolUse": "PostToolUse", "UserPromptSubmit": "UserPromptSubmit"},
    event_field="event_type",
    fields={"session_id": "session_id", "tool_name": "tool_name", "tool_input": "tool_input",
            "tool_response": "tool_response"},
    answers={"deny": {"decision": "deny", "reason": MESSAGE}},
    failed=_openhands_error, response=_observation_text,
    user_file=lambda: _home("OH_PERSISTENCE_DIR", ".openhands") / "hooks.json", project_file=".openhands/hooks.json",
)


def _json_or_value(value: Any) -> Any:
    """Copilot's `toolArgs`: an object, or a JSON string of one."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _copilot_result(result: Any) -> Any:
    if isinstance(result, dict) and "textResultForLlm" in result:
        import re

        # "<shellId: 3 completed with exit code 1>": the id changes per call
        return re.sub(r"<shellId: \d+ ", "<shell ", str(result.get("textResultForLlm") or ""))
    return result


def _copilot_error(event: dict) -> str | None:
    result = event.get("toolResult")
    if isinstance(result, dict) and result.get("resultType") not in (None, "success"):
        return str(_copilot_result(result) or result.get("resultType"))
    return None


def _copilot_entry(command: str, event: str) -> dict:
    # the camelCase payloads carry no event name: each entry tells the hook its event
    return {"type": "command", "bash": command, "timeoutSec": HOOK_TIMEOUT, "env": {"SEMLOOP_HOOK_EVENT": event}}


# GitHub Copilot CLI (docs.github.com, Copilot CLI hooks reference; checked with the real CLI,
# 1.0.102): `.github/hooks/*.json` in the repository or `~/.copilot/hooks/*.json`
# ($COPILOT_HOME), {"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": ...}]}}.
# preToolUse refuses with top-level `permissionDecision: "deny"` + `permissionDecisionReason`, and
# the run goes on. permissionRequest (which follows preToolUse for every tool that needs a
# permission — not the read-only ones — even with --yolo) refuses with `behavior: "deny"`, and
# `interrupt: true` ends the run: so a refusal of such a tool is left to permissionRequest. A
# top-level `additionalContext` of postToolUse reaches the model after the tool's output
# ("Additional guidance from postToolUse hooks: ..."; the reference says only SDK hooks may change
# a result, the CLI reads this one from command hooks too), and sessionStart's `additionalContext`
# reaches it before the first prompt, in prompt mode (-p) too.
_COPILOT_ASKS = frozenset({"bash", "powershell", "create", "edit", "web_fetch"})  # tools permissionRequest sees

COPILOT = Dialect(
    target="copilot", label="Copilot CLI",
    events={"preToolUse": "PreToolUse", "permissionRequest": "PreToolUse", "postToolUse": "PostToolUse",
            "postToolUseFailure": "PostToolUseFailure", "userPromptSubmitted": "UserPromptSubmit"},
    event_field="",
    fields={"session_id": "sessionId", "tool_name": "toolName", "tool_input": ("toolArgs", "toolInput"),
            "tool_response": "toolResult", "error": "error"},
    answers={"deny": {"permissionDecision": "deny", "permissionDecisionReason": MESSAGE},
             "note": {"additionalContext": MESSAGE}, "context": {"additionalContext": MESSAGE}},
    session_event="sessionStart",
    event_answers={"permissionRequest": {"deny": {"behavior": "deny", "message": MESSAGE, "interrupt": True}},
                   # a failed call's guidance is read from a command hook's stderr with exit code 2
                   "postToolUseFailure": {"note": {STDERR: MESSAGE}}},
    passes_refusal=lambda event, tool: event == "preToolUse" and tool in _COPILOT_ASKS,
    parse_input=_json_or_value, failed=_copilot_error, response=_copilot_result,
    layout="flat", entry=_copilot_entry, command_key="bash", file_header={"version": 1},
    user_file=lambda: _home("COPILOT_HOME", ".copilot") / "hooks" / "semloop.json",
    project_file=".github/hooks/semloop.json",
    after_install="Copilot CLI loads hooks of a trusted folder when a session starts.",
)


def _cursor_error(event: dict) -> str | None:
    error = event.get("error_message") or event.get("error")  # postToolUseFailure only
    return None if error is None else str(error)


# Cursor (cursor.com/docs/hooks; NOT run here: Cursor is a desktop app with an account, so this
# table is tested against the published payloads only): `.cursor/hooks.json` or
# `~/.cursor/hooks.json`, {"version": 1, "hooks": {"preToolUse": [{"command": ...}]}}; every payload
# carries `hook_event_name` and `conversation_id`. preToolUse refuses with `permission: "deny"` and
# `agent_message` (to the model) / `user_message`; postToolUse adds `additional_context` after the
# tool's result (`tool_output` is a JSON string of the result). No session-start guidance: Cursor's
# sessionStart is documented, but not run here, and reported rejected by some versions.
CURSOR = Dialect(
    target="cursor", label="Cursor",
    events={"preToolUse": "PreToolUse", "postToolUse": "PostToolUse", "postToolUseFailure": "PostToolUseFailure",
            "beforeSubmitPrompt": "UserPromptSubmit"},
    fields={"session_id": "conversation_id", "tool_name": "tool_name", "tool_input": "tool_input",
            "tool_response": "tool_output"},
    answers={"deny": {"permission": "deny", "agent_message": MESSAGE, "user_message": MESSAGE},
             "note": {"additional_context": MESSAGE}},
    parse_input=_json_or_value, response=_json_or_value, failed=_cursor_error,
    layout="flat", entry=lambda command, event: {"command": command, "timeout": HOOK_TIMEOUT},
    file_header={"version": 1}, user_file=lambda: _home("", ".cursor") / "hooks.json",
    project_file=".cursor/hooks.json",
    after_install="Cursor reloads hooks.json itself; the Hooks tab of Cursor Settings lists them.",
)

DIALECTS: dict[str, Dialect] = {d.target: d for d in (CLAUDE_CODE, GEMINI, CODEX, COPILOT, CURSOR, OPENHANDS)}


# ---------------------------------------------------------------------------------------------
# translation
# ---------------------------------------------------------------------------------------------


def event_name(dialect: Dialect, event: dict) -> Any:
    if dialect.event_field:
        return event.get(dialect.event_field)
    return os.environ.get("SEMLOOP_HOOK_EVENT")


def to_claude_event(dialect: Dialect, event: Any) -> dict | None:
    """The CLI's hook event → the Claude Code hook event semloop handles, or None (not ours)."""
    if not isinstance(event, dict):
        raise ValueError("hook input is not a JSON object")
    name = dialect.events.get(event_name(dialect, event))
    if name is None:
        return None
    session = dialect.get(event, "session_id")
    if not isinstance(session, str) or not session:
        raise ValueError(f"{dialect.label} hook input has no {dialect.fields['session_id']}")
    base: dict[str, Any] = {"session_id": dialect.prefix + session, "hook_event_name": name}
    agent = dialect.get(event, "agent_id")
    if isinstance(agent, str) and agent:
        base["agent_id"] = agent
    if name == "UserPromptSubmit":
        return base
    tool = dialect.get(event, "tool_name")
    if not isinstance(tool, str) or not tool:
        raise ValueError(f"{dialect.label} {name} hook input has no {dialect.fields['tool_name']}")
    call = {**base, "tool_name": tool, "tool_input": dialect.parse_input(dialect.get(event, "tool_input"))}
    if name == "PreToolUse":
        return call
    error = dialect.failed(event) if name == "PostToolUse" else None
    if name == "PostToolUseFailure" or error is not None:
        text = error if error is not None else dialect.failed(event) or dialect.get(event, "error")
        return {**call, "hook_event_name": "PostToolUseFailure", "error": str(text or "tool call failed")}
    return {**call, "tool_response": dialect.response(dialect.get(event, "tool_response"))}


def verdict_of(reply: Any) -> tuple[str, str] | None:
    """The Claude Code hook's answer → ("deny" | "stop" | "note", text), or None (allow)."""
    if not isinstance(reply, dict) or not reply:
        return None
    specific = reply.get("hookSpecificOutput") or {}
    if specific.get("permissionDecision") == "deny":
        return "deny", str(specific.get("permissionDecisionReason") or reply.get("stopReason") or "")
    if reply.get("continue") is False:
        return "stop", str(reply.get("stopReason") or specific.get("additionalContext") or "")
    if specific.get("additionalContext"):
        return "note", str(specific["additionalContext"])
    return None


def _fill(template: Any, message: str) -> Any:
    if template == MESSAGE:
        return message
    if isinstance(template, dict):
        return {k: _fill(v, message) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, message) for v in template]
    return template


def answer_for(dialect: Dialect, kind: str, message: str, event: str = "") -> dict:
    """The CLI's answer of `kind` ("deny", "note", "stop", "context") to its `event`; `{}` where
    it has none. A "stop" the CLI cannot say is said as a note."""
    answers = {**dialect.answers, **dialect.event_answers.get(event, {})}
    template = answers.get(kind)
    if template is None and kind == "stop":
        template = answers.get("note")
    return {} if template is None else _fill(template, message)


def from_claude_reply(dialect: Dialect, reply: Any, event: str = "", tool: str = "") -> dict:
    """The Claude Code hook's answer → the CLI's answer to its `event` (`{}`: go on as if no hook
    ran)."""
    verdict = verdict_of(reply)
    if verdict is None:
        return {}
    kind, message = verdict
    if kind == "deny" and dialect.passes_refusal(event, tool):
        return {}  # the stop is stored: the call's next event refuses it (and ends the run)
    return answer_for(dialect, kind, message, event)


def handle(dialect: Dialect, stdin_text: str, args: Any, budget: Any = None) -> dict:
    """One hook event of `dialect`'s CLI (its stdin) → the JSON object to print. May raise. Every
    wait comes out of `budget` (`hook_protocol.Budget`), the Claude Code hook's included."""
    from . import claude_code
    from .hook_protocol import Budget

    budget = budget or Budget.for_hook(getattr(args, "server_timeout", None))
    event = json.loads(stdin_text)
    if not isinstance(event, dict):
        raise ValueError("hook input is not a JSON object")
    name = str(event_name(dialect, event))
    if dialect.session_event and name == dialect.session_event:
        text = claude_code._guidance_text(getattr(args, "config", None)) if getattr(args, "guidance", False) else None
        return {} if text is None else answer_for(dialect, "context", text, name)
    translated = to_claude_event(dialect, event)
    if translated is None:
        return {}
    reply = json.loads(claude_code.answer(json.dumps(translated, ensure_ascii=False), args, budget) or "{}")
    out = from_claude_reply(dialect, reply, name, str(translated.get("tool_name") or ""))
    if dialect.refusal_stops and translated["hook_event_name"] == "PreToolUse" and out:
        _mark_stopped(translated["session_id"], getattr(args, "db", None), budget)
    return out


def _mark_stopped(key: str, db: str | None, budget: Any = None) -> None:
    """Claude Code goes on after a PreToolUse denial, so its hook keeps no stop for it; a CLI whose
    refusal ends the run (`refusal_stops`) stores it as a stop, which the user's next prompt lifts."""
    from .claude_code import _store

    store = _store(db, budget=budget)
    try:
        with store.transaction(key) as txn:
            if txn.state is not None:
                txn.state.stop(txn.state.steps_seen)  # the refused call: the step it would have been
    finally:
        store.close()


def cmd_hook(args: Any) -> int:
    """`semloop hook <target>`: exits 0 (2 for an answer the CLI reads from stderr); any error
    prints `{}` (allow) and one stderr line."""
    dialect = DIALECTS[args.target]
    if dialect.native:
        from .claude_code import cmd_hook as claude_hook

        return claude_hook(args)
    from .hook_protocol import answer_hook

    return answer_hook(lambda data: handle(dialect, data, args), STDERR)
