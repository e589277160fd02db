"""Gemini CLI hooks: `semloop hook gemini-cli`, `semloop install|uninstall gemini-cli`.

The commands are registered by `claude_code.add_cli` (this module is one of its `INSTALL_TARGETS`).

Gemini CLI runs a hook command per event, with the event JSON on stdin, and reads one JSON object
from stdout (its hooks reference: https://geminicli.com/docs/hooks/reference). semloop translates
each Gemini event into the Claude Code hook's event and lets `claude_code.cmd_hook` handle it, so
both agents share one state store (SQLite) and the warm hook server, then translates the answer:

- BeforeTool (→ PreToolUse): a call that continues a loop already warned about to the limit ends
  the agent loop before the tool runs: `{"continue": false, "stopReason": ...}`. Gemini CLI
  shows "Agent execution stopped: ..." with semloop's explanation to the user.
- AfterTool (→ PostToolUse, or PostToolUseFailure when `tool_response.error` is set): on "warn",
  `hookSpecificOutput.additionalContext` carries the hint, which Gemini CLI appends to the real
  tool result (inside `<hook_context>`). On "stop", `continue: false` ends the agent loop; Gemini
  CLI then replaces that call's result with the stop message.
- BeforeAgent (→ UserPromptSubmit): a new prompt after a stop lifts the stop; the loop memory is
  kept.
- SessionStart (only with `install gemini-cli --guidance`): `hookSpecificOutput.additionalContext`
  carries `semloop.guidance()`, which Gemini CLI puts before the first prompt (inside
  `<hook_context>`).

Sessions are keyed `gemini-cli/<session_id>`, apart from Claude Code's. The hook always exits 0
and prints one JSON object; any error prints `{}` (allow) and one line on stderr.
Standard library only at import time.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

TARGET = "gemini-cli"
EVENTS = ("BeforeTool", "AfterTool", "BeforeAgent")
HOOK_TIMEOUT_MS = 15000  # Gemini CLI's `timeout` is in milliseconds (default 60000); a hook answers
#                         within hook_protocol.HOOK_BUDGET (10 s) of starting
SESSION_PREFIX = "gemini-cli/"

# Lines of run_shell_command's result that change on every run: they are not news.
_VOLATILE_LINES = re.compile(r"^(?:Process Group PGID: \d+|Background PIDs: [\d, ]*)\s*$", re.M)
_PID = re.compile(r"\(PID: \d+\)")
# Gemini CLI (0.61) wraps what a tool printed in these tags before the model sees it: the wrapper
# is on every result, so it says nothing about this one (and would hide its first line).
_UNTRUSTED = re.compile(r"^\s*<untrusted_context>\s*|\s*</untrusted_context>\s*$")


# ---------------------------------------------------------------------------------------------
# translation
# ---------------------------------------------------------------------------------------------


def response_text(response: Any) -> tuple[str, bool]:
    """Gemini CLI's `tool_response` ({llmContent, returnDisplay, error?}) → (text, is_error).

    `llmContent` is what the model gets: a string, a Part, or a list of Parts; text parts are
    joined, other parts (functionResponse, inlineData, ...) rendered with blobs digested. With
    `error` set, its message is the result and the call counts as failed."""
    from .claude_code import normalize_response

    if not isinstance(response, dict):
        return normalize_response("", response), False
    content = response.get("llmContent")
    parts = content if isinstance(content, list) else [content]
    texts = []
    for part in parts:
        if part is None:
            continue
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str) and len(part) == 1:
            texts.append(part["text"])
        else:
            texts.append(normalize_response("", part))
    text = _PID.sub("(PID)", _VOLATILE_LINES.sub("", _UNTRUSTED.sub("", "\n".join(texts)))).strip()
    error = response.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else str(error)
        return str(message or text or "tool call failed"), True
    return text, False


def to_claude_event(event: Any) -> dict | None:
    """A Gemini CLI hook event → the Claude Code hook event semloop handles, or None (ignored)."""
    if not isinstance(event, dict):
        raise ValueError("hook input is not a JSON object")
    name = event.get("hook_event_name")
    if name not in EVENTS:
        return None
    session = event.get("session_id")
    if not isinstance(session, str) or not session:
        raise ValueError("hook input has no session_id")
    base = {"session_id": SESSION_PREFIX + session, "cwd": event.get("cwd")}
    if name == "BeforeAgent":
        return {**base, "hook_event_name": "UserPromptSubmit", "prompt": event.get("prompt")}
    tool = event.get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise ValueError(f"{name} hook input has no tool_name")
    call = {**base, "tool_name": tool, "tool_input": event.get("tool_input")}
    if name == "BeforeTool":
        return {**call, "hook_event_name": "PreToolUse"}
    text, failed = response_text(event.get("tool_response"))
    if failed:
        return {**call, "hook_event_name": "PostToolUseFailure", "error": text}
    return {**call, "hook_event_name": "PostToolUse", "tool_response": text}


def from_claude_reply(name: str, reply: dict) -> dict:
    """The Claude Code hook's answer → Gemini CLI's, for the Gemini event `name`."""
    if not isinstance(reply, dict) or not reply:
        return {}
    specific = reply.get("hookSpecificOutput") or {}
    if name == "BeforeTool" and specific.get("permissionDecision") == "deny":
        reason = specific.get("permissionDecisionReason") or "semloop stopped this run."
        return {"continue": False, "stopReason": reason}
    if name != "AfterTool":
        return {}
    if reply.get("continue") is False:
        return {"continue": False, "stopReason": reply.get("stopReason") or specific.get("additionalContext")}
    if specific.get("additionalContext"):
        return {"hookSpecificOutput": {"hookEventName": "AfterTool",
                                       "additionalContext": specific["additionalContext"]}}
    return {}


def _claude_hook(event: dict, args: Any, budget: Any = None) -> dict:
    """Run the Claude Code hook command (warm server or in-process, whatever it does) on
    `event`, exactly as Claude Code would: JSON in on stdin, JSON out on stdout."""
    from . import claude_code

    stdin = io.TextIOWrapper(io.BytesIO(json.dumps(event, ensure_ascii=False).encode("utf-8")), encoding="utf-8")
    stdout = io.StringIO()
    saved = sys.stdin
    try:
        sys.stdin = stdin
        with contextlib.redirect_stdout(stdout):
            claude_code.cmd_hook(args, budget)
    finally:
        sys.stdin = saved
    lines = stdout.getvalue().strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def handle(stdin_text: str, args: Any, budget: Any = None) -> dict:
    """One Gemini CLI event (its stdin) → the JSON object to print. May raise; `cmd_hook` fails open.
    Every wait comes out of `budget` (`hook_protocol.Budget`), the Claude Code hook's included."""
    from .hook_protocol import Budget

    budget = budget or Budget.for_hook(getattr(args, "server_timeout", None))
    event = json.loads(stdin_text)
    if isinstance(event, dict) and event.get("hook_event_name") == "SessionStart":
        from .claude_code import _guidance_text

        text = _guidance_text(getattr(args, "config", None)) if getattr(args, "guidance", False) else None
        return {} if text is None else {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                               "additionalContext": text}}
    translated = to_claude_event(event)
    if translated is None:
        return {}
    out = from_claude_reply(event["hook_event_name"], _claude_hook(translated, args, budget))
    if event["hook_event_name"] == "BeforeTool" and out.get("continue") is False:
        _mark_stopped(translated["session_id"], getattr(args, "db", None), budget)
    return out


def _mark_stopped(key: str, db: str | None, budget: Any = None) -> None:
    """Claude Code goes on after a PreToolUse denial, so its hook keeps no stop for it; here the
    refusal ends the agent loop, so it is stored as a stop, which the user's next prompt
    (BeforeAgent) lifts."""
    from .claude_code import _store

    store = _store(db, budget=budget)
    try:
        with store.transaction(key) as txn:
            if txn.state is not None:
                txn.state.stop(txn.state.steps_seen)  # the refused call: the step it would have been
    finally:
        store.close()


def cmd_hook(args: Any) -> int:
    from .hook_protocol import answer_hook

    return answer_hook(lambda data: handle(data, args))


# ---------------------------------------------------------------------------------------------
# install / uninstall
# ---------------------------------------------------------------------------------------------

_OURS = re.compile(r"\bsemloop\b.*\bhook\s+gemini-cli\b")


def is_semloop_command(command: Any) -> bool:
    return isinstance(command, str) and bool(_OURS.search(command))


def settings_path(scope: str, cwd: str | Path | None = None) -> Path:
    """user: ~/.gemini/settings.json; project: .gemini/settings.json (from `cwd`)."""
    if scope == "user":
        return Path.home() / ".gemini" / "settings.json"
    if scope == "project":
        return Path(cwd or os.getcwd()) / ".gemini" / "settings.json"
    raise ValueError(f"Gemini CLI settings scope must be user or project, got {scope!r}")


def hook_command(config: str | None = None, db: str | None = None, project: str | Path | None = None) -> str:
    """`claude_code.hook_command` for this target; `project` (the project scope): portable, with
    paths inside it relative to `$GEMINI_PROJECT_DIR`."""
    from .claude_code import hook_command as claude_hook_command

    return claude_hook_command(config, db, target=TARGET, project=project, project_var="GEMINI_PROJECT_DIR")


def add_hooks(settings: dict, command: str, guidance: bool = False) -> bool:
    """Add our hook to BeforeTool, AfterTool and BeforeAgent (in place), keeping other hooks; an
    existing semloop entry is updated, never duplicated. `guidance`: a SessionStart hook too, that
    adds `semloop.guidance()` to the session's context (without it, ours is removed). Returns True
    if anything changed."""
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("settings 'hooks' is not an object")
    changed = False
    if not guidance and "SessionStart" in hooks:
        changed = _remove_ours(hooks, "SessionStart")
    for event in (*EVENTS, "SessionStart") if guidance else EVENTS:
        wanted = f"{command} --guidance" if event == "SessionStart" else command
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ValueError(f"settings 'hooks.{event}' is not a list")
        ours = [e for g in groups if isinstance(g, dict) for e in (g.get("hooks") or [])
                if isinstance(e, dict) and is_semloop_command(e.get("command"))]
        if ours:
            if ours[0].get("command") != wanted:
                ours[0]["command"] = wanted
                changed = True
            continue
        entry = {"type": "command", "name": "semloop", "command": wanted, "timeout": HOOK_TIMEOUT_MS}
        lifecycle = event in ("BeforeAgent", "SessionStart")
        groups.append({"hooks": [entry]} if lifecycle else {"matcher": "*", "hooks": [entry]})
        changed = True
    return changed


def remove_hooks(settings: dict) -> bool:
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return False
    changed = False
    for event in list(hooks):
        changed |= _remove_ours(hooks, event)
    if changed and not hooks:
        del settings["hooks"]
    return changed


def _remove_ours(hooks: dict, event: str) -> bool:
    """Remove our entries of `event` (in place; groups and the event left empty go too)."""
    from .hook_protocol import without_ours

    groups = hooks[event]
    if not isinstance(groups, list):
        return False
    kept, changed = without_ours(groups, lambda e: isinstance(e, dict) and is_semloop_command(e.get("command")))
    if kept:
        hooks[event] = kept
    elif groups:
        del hooks[event]
    return changed


def cmd_install(args: Any) -> int:
    from .claude_code import chosen_settings_path, edit_settings

    path = chosen_settings_path(args, settings_path)
    project = os.getcwd() if args.scope == "project" and not getattr(args, "settings", None) else None
    command = hook_command(getattr(args, "config", None), getattr(args, "db", None), project)
    guidance = bool(getattr(args, "guidance", False))
    changed, backup = edit_settings(path, lambda settings: add_hooks(settings, command, guidance))
    if not changed:
        print(f"semloop: already installed in {path}")
        return 0
    print(f"semloop: hooks for {', '.join((*EVENTS, 'SessionStart') if guidance else EVENTS)} added to {path}")
    print(f"  command: {command}")
    if project is not None:
        from .claude_code import PORTABLE_NOTE

        print(PORTABLE_NOTE.format(agent="Gemini CLI"))
    if guidance:
        print("  guidance: SessionStart adds semloop.guidance() to each session's context")
    if backup:
        print(f"  backup:  {backup}")
    print("  Gemini CLI reads hooks when it starts; /hooks panel lists them.")
    return 0


def cmd_uninstall(args: Any) -> int:
    from .claude_code import chosen_settings_path, edit_settings

    path = chosen_settings_path(args, settings_path)
    changed, backup = edit_settings(path, remove_hooks)
    if not changed:
        print(f"semloop: no semloop hooks in {path}")
        return 0
    print(f"semloop: hooks removed from {path}" + (f" (backup: {backup})" if backup else ""))
    return 0
