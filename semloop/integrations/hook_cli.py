"""One event-translation layer for the coding-agent CLIs whose hooks have Claude Code's shape:
`semloop hook|install|uninstall codex | copilot | cursor | openhands`.

Each CLI is a `Dialect` — a table of its event names, its field names and the JSON shapes of its
answers — not a module of its own. A hook event goes through three steps:

1. `to_claude_event`: the CLI's event → the Claude Code hook event it corresponds to
   (PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit), the session keyed
   `<target>/<session id>` so the CLIs never share state.
2. The Claude Code hook command handles it exactly as it handles Claude Code's own events: the warm
   hook server when it runs, else in this process (`claude_code.cmd_hook`, with its store, its
   fail-open and its time budget).
3. `from_claude_reply`: the answer (deny / note / stop) → the CLI's own answer shape.

A dialect says what its CLI honours (docs/codex-cli.md etc. have the table per CLI): a CLI that
cannot end a run from a hook gets the refusal of every further call instead, and the docs say so.

Standard library only at import time; the hook fails open (prints the CLI's "allow", `{}`, and one
line on stderr) on any error.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class Dialect:
    """One CLI's hook contract, as data.

    `events`: the CLI's event name → the Claude Code event it is handled as. `fields`: the Claude
    Code field → the CLI's name for it (session_id, tool_name, tool_input, tool_response, error,
    agent_id). `answers`: "deny" (PreToolUse refuses the call), "note" (a hint beside a tool
    result) and "stop" (the run should end) → the JSON object the CLI reads, `MESSAGE` standing for
    semloop's text; a missing key means the CLI has no such answer and gets `{}`. A field may name
    several keys (the first one present is used), an event its own answers (`event_answers`).
    `passes_refusal(event name, tool)`: a refusal there is left to a later event of the same call
    (`{}` now), where the CLI can also end the run.
    """

    target: str
    label: str
    events: Mapping[str, str]
    fields: Mapping[str, str | tuple[str, ...]]
    answers: Mapping[str, Any]
    user_file: Callable[[], Path]  # the user-scope hooks file
    project_file: str  # the project-scope hooks file, relative to the project root
    event_field: str = "hook_event_name"  # where the event name is ("" = the SEMLOOP_HOOK_EVENT env)
    parse_input: Callable[[Any], Any] = _same  # e.g. a JSON string → object
    failed: Callable[[dict], str | None] = _no_error  # error text of a failed PostToolUse call
    response: Callable[[Any], Any] = _same  # the result that identifies the call
    layout: str = "groups"  # "groups": event → [{matcher, hooks: [entry]}]; "flat": event → [entry]
    entry: Callable[[str, str], dict] = _command_entry  # (command, event) → the hook entry
    command_key: str = "command"  # the entry key that holds the command line
    file_header: Mapping[str, Any] = field(default_factory=dict)  # keys the hooks file must have
    tool_events: tuple[str, ...] = ("PreToolUse", "PostToolUse")  # events with a tool matcher
    after_install: str = ""  # one line the installer prints: how the CLI picks the hooks up
    event_answers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    passes_refusal: Callable[[str, str], bool] = _never

    @property
    def prefix(self) -> str:
        return self.target + "/"

    def get(self, event: dict, name: str) -> Any:
        keys = self.fields.get(name) or ()
        for key in (keys,) if isinstance(keys, str) else keys:
            if key in event:
                return event[key]
        return None


def _codex_home() -> Path:
    base = os.environ.get("CODEX_HOME")
    return Path(base).expanduser() if base else Path.home() / ".codex"


# Codex CLI (openai/codex, codex-rs/hooks/schema/generated/*.command.*.schema.json). Checked with
# the real CLI (0.171.0): a denying PreToolUse keeps the call from running and hands the reason to
# the model; `continue: false` is *rejected* on PreToolUse (the hook counts as failed and the call
# runs), and on PostToolUse it replaces the tool's output with `stopReason` but the turn goes on.
# So no Codex hook answer ends a turn: the stop is kept, every further call of the session is
# refused until the user's next prompt.
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
    },
    user_file=lambda: _codex_home() / "hooks.json", project_file=".codex/hooks.json",
    after_install=("Codex CLI runs a new or changed hook only once it is trusted: review and trust "
                   "semloop's hooks with /hooks in the CLI (automation: --dangerously-bypass-hook-trust)."),
)



def _openhands_home() -> Path:
    base = os.environ.get("OH_PERSISTENCE_DIR")
    return Path(base).expanduser() if base else Path.home() / ".openhands"


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
# the calls are recorded, and the refusal at the limit is what the model gets.
OPENHANDS = Dialect(
    target="openhands", label="OpenHands",
    events={"PreToolUse": "PreToolUse", "PostToolUse": "PostToolUse", "UserPromptSubmit": "UserPromptSubmit"},
    event_field="event_type",
    fields={"session_id": "session_id", "tool_name": "tool_name", "tool_input": "tool_input",
            "tool_response": "tool_response"},
    answers={"deny": {"decision": "deny", "reason": MESSAGE}},
    failed=_openhands_error, response=_observation_text,
    user_file=lambda: _openhands_home() / "hooks.json", project_file=".openhands/hooks.json",
)



def _copilot_home() -> Path:
    base = os.environ.get("COPILOT_HOME")
    return Path(base).expanduser() if base else Path.home() / ".copilot"


def _json_or_value(value: Any) -> Any:
    """Copilot's `toolArgs`: an object, or a JSON string of one."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


_SHELL_ID = re.compile(r"<shellId: \d+ ")  # "<shellId: 3 completed with exit code 1>": the id changes per call


def _copilot_result(result: Any) -> Any:
    if isinstance(result, dict) and "textResultForLlm" in result:
        return _SHELL_ID.sub("<shell ", str(result.get("textResultForLlm") or ""))
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
# a result, the CLI reads this one from command hooks too).
_COPILOT_ASKS = frozenset({"bash", "powershell", "create", "edit", "web_fetch"})  # tools permissionRequest sees

COPILOT = Dialect(
    target="copilot", label="Copilot CLI",
    events={"preToolUse": "PreToolUse", "permissionRequest": "PreToolUse", "postToolUse": "PostToolUse",
            "postToolUseFailure": "PostToolUseFailure", "userPromptSubmitted": "UserPromptSubmit"},
    event_field="",
    fields={"session_id": "sessionId", "tool_name": "toolName", "tool_input": ("toolArgs", "toolInput"),
            "tool_response": "toolResult", "error": "error"},
    answers={"deny": {"permissionDecision": "deny", "permissionDecisionReason": MESSAGE},
             "note": {"additionalContext": MESSAGE}},
    event_answers={"permissionRequest": {"deny": {"behavior": "deny", "message": MESSAGE, "interrupt": True}},
                   # a failed call's guidance is read from a command hook's stderr with exit code 2
                   "postToolUseFailure": {"note": {STDERR: MESSAGE}}},
    passes_refusal=lambda event, tool: event == "preToolUse" and tool in _COPILOT_ASKS,
    parse_input=_json_or_value, failed=_copilot_error, response=_copilot_result,
    layout="flat", entry=_copilot_entry, command_key="bash", file_header={"version": 1},
    user_file=lambda: _copilot_home() / "hooks" / "semloop.json", project_file=".github/hooks/semloop.json",
    after_install="Copilot CLI loads hooks of a trusted folder when a session starts.",
)



def _cursor_home() -> Path:
    return Path.home() / ".cursor"


def _cursor_error(event: dict) -> str | None:
    error = event.get("error_message") or event.get("error")  # postToolUseFailure only
    return None if error is None else str(error)


# Cursor (cursor.com/docs/hooks; NOT run here: Cursor is a desktop app with an account, so this
# table is tested against the published payloads only): `.cursor/hooks.json` or
# `~/.cursor/hooks.json`, {"version": 1, "hooks": {"preToolUse": [{"command": ...}]}}; every payload
# carries `hook_event_name` and `conversation_id`. preToolUse refuses with `permission: "deny"` and
# `agent_message` (to the model) / `user_message`; postToolUse adds `additional_context` after the
# tool's result (`tool_output` is a JSON string of the result).
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
    file_header={"version": 1}, user_file=lambda: _cursor_home() / "hooks.json", project_file=".cursor/hooks.json",
    after_install="Cursor reloads hooks.json itself; the Hooks tab of Cursor Settings lists them.",
)

DIALECTS: dict[str, Dialect] = {d.target: d for d in (CODEX, COPILOT, CURSOR, OPENHANDS)}


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


def from_claude_reply(dialect: Dialect, reply: Any, event: str = "", tool: str = "") -> dict:
    """The Claude Code hook's answer → the CLI's answer to its `event` (`{}`: go on as if no hook
    ran)."""
    verdict = verdict_of(reply)
    if verdict is None:
        return {}
    kind, message = verdict
    if kind == "deny" and dialect.passes_refusal(event, tool):
        return {}  # the stop is stored: the call's next event refuses it (and ends the run)
    answers = {**dialect.answers, **dialect.event_answers.get(event, {})}
    template = answers.get(kind)
    if template is None and kind == "stop":  # no way to say "stop" here: say it as a note
        template = answers.get("note")
    return {} if template is None else _fill(template, message)


def handle(dialect: Dialect, stdin_text: str, args: Any) -> dict:
    """One hook event of `dialect`'s CLI (its stdin) → the JSON object to print. May raise."""
    from .gemini_cli import (
        _claude_hook,  # runs the Claude Code hook command on one event
    )

    event = json.loads(stdin_text)
    translated = to_claude_event(dialect, event)
    if translated is None:
        return {}
    return from_claude_reply(dialect, _claude_hook(translated, args), str(event_name(dialect, event)),
                             str(translated.get("tool_name") or ""))


def cmd_hook(args: Any) -> int:
    """`semloop hook <target>`: exits 0 (2 for an answer the CLI reads from stderr); any error
    prints `{}` (allow) and one stderr line."""
    from .hook_protocol import answer_hook

    return answer_hook(lambda data: handle(DIALECTS[args.target], data, args), STDERR)


# ---------------------------------------------------------------------------------------------
# install / uninstall
# ---------------------------------------------------------------------------------------------


def is_semloop_command(dialect: Dialect, command: Any) -> bool:
    return isinstance(command, str) and bool(
        re.search(rf"\bsemloop\b.*\bhook\s+{re.escape(dialect.target)}(\s|$)", command))


def hooks_path(dialect: Dialect, scope: str, cwd: str | Path | None = None) -> Path:
    if scope == "user":
        return dialect.user_file()
    if scope == "project":
        return Path(cwd or os.getcwd()) / dialect.project_file
    raise ValueError(f"{dialect.label} hooks scope must be user or project, got {scope!r}")


def hook_command(dialect: Dialect, config: str | None = None, db: str | None = None) -> str:
    """The same absolute program and options as the Claude Code hook's command, our target."""
    from .claude_code import hook_command as claude_hook_command

    parts = shlex.split(claude_hook_command(config, db))
    parts[parts.index("claude-code")] = dialect.target
    return " ".join(shlex.quote(p) for p in parts)


def _entries(dialect: Dialect, items: list) -> list[tuple[list, int]]:
    """(list, index) of every hook entry under one event, whatever the layout."""
    if dialect.layout == "flat":
        return [(items, i) for i in range(len(items))]
    found = []
    for item in items:
        entries = item.get("hooks") if isinstance(item, dict) else None
        if isinstance(entries, list):
            found += [(entries, i) for i in range(len(entries))]
    return found


def _ours(dialect: Dialect, entry: Any) -> bool:
    return isinstance(entry, dict) and is_semloop_command(dialect, entry.get(dialect.command_key))


def add_hooks(dialect: Dialect, settings: dict, command: str) -> bool:
    """Our entry under every event of the dialect (in place): updated if there, never duplicated;
    other hooks are kept. Returns True if anything changed."""
    before = json.dumps(settings, sort_keys=True)
    for key, value in dialect.file_header.items():
        settings.setdefault(key, value)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("the hooks file's 'hooks' is not an object")
    for event in dialect.events:
        items = hooks.setdefault(event, [])
        if not isinstance(items, list):
            raise ValueError(f"the hooks file's 'hooks.{event}' is not a list")
        want = dialect.entry(command, event)
        ours = [(entries, i) for entries, i in _entries(dialect, items) if _ours(dialect, entries[i])]
        if ours:
            entries, i = ours[0]
            entries[i] = want
            continue
        if dialect.layout == "flat":
            items.append(want)
        elif event in dialect.tool_events:
            items.append({"matcher": "*", "hooks": [want]})
        else:
            items.append({"hooks": [want]})
    return json.dumps(settings, sort_keys=True) != before


def remove_hooks(dialect: Dialect, settings: dict) -> bool:
    """Remove every semloop entry (in place); drop groups and events left empty by that."""
    from .hook_protocol import without_ours

    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return False
    changed = False
    for event in list(hooks):
        items = hooks[event]
        if not isinstance(items, list):
            continue
        kept, dropped = without_ours(items, lambda e: _ours(dialect, e), flat=dialect.layout == "flat")
        changed |= dropped
        if kept:
            hooks[event] = kept
        elif items:
            del hooks[event]
    if changed and not hooks:
        del settings["hooks"]
    return changed


def _path(dialect: Dialect, args: Any) -> Path:
    if getattr(args, "settings", None):
        return Path(args.settings).expanduser()
    return hooks_path(dialect, getattr(args, "scope", "user"))


def cmd_install(args: Any) -> int:
    from .claude_code import edit_settings

    dialect = DIALECTS[args.target]
    if getattr(args, "hooks", None) == "http":
        raise ValueError(f"--hooks http is for Claude Code; {dialect.label} runs command hooks only")
    path = _path(dialect, args)
    command = hook_command(dialect, getattr(args, "config", None), getattr(args, "db", None))
    changed, backup = edit_settings(path, lambda settings: add_hooks(dialect, settings, command))
    if not changed:
        print(f"semloop: already installed in {path}")
        return 0
    print(f"semloop: {dialect.label} hooks for {', '.join(dialect.events)} written to {path}")
    print(f"  command: {command}")
    if backup:
        print(f"  backup:  {backup}")
    if dialect.after_install:
        print(f"  {dialect.after_install}")
    return 0


def cmd_uninstall(args: Any) -> int:
    from .claude_code import edit_settings

    dialect = DIALECTS[args.target]
    path = _path(dialect, args)
    changed, backup = edit_settings(path, lambda settings: remove_hooks(dialect, settings))
    if not changed:
        print(f"semloop: no semloop hooks in {path}")
        return 0
    print(f"semloop: hooks removed from {path}" + (f" (backup: {backup})" if backup else ""))
    return 0


def register_targets(targets: dict) -> None:
    """Add the dialects to the `hook` / `install` / `uninstall` targets (`claude_code.INSTALL_TARGETS`)."""
    from .claude_code import InstallTarget

    for d in DIALECTS.values():
        targets.setdefault(d.target, InstallTarget(
            __name__, f"user ({_display(d.user_file())}) or project ({d.project_file})"))


def _display(path: Path) -> str:
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home):] if text.startswith(home + os.sep) else text
