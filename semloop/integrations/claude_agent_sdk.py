"""semloop for the Claude Agent SDK (`pip install "semloop-guard[agent-sdk]"`): ready-made hook callbacks.

    from claude_agent_sdk import ClaudeAgentOptions, query
    from semloop.integrations.claude_agent_sdk import semloop_hooks

    options = ClaudeAgentOptions(hooks=semloop_hooks())

* PreToolUse: a call that continues a loop already warned about to the limit is denied
  (`permissionDecision: "deny"`, with the reason), so it does not run.
* PostToolUse / PostToolUseFailure: the call is recorded with its output, normalized as the
  Claude Code hook does it (Bash → stdout + stderr, timings dropped, Bash's free-text
  `description` ignored); on "warn" the hint goes to the model as `additionalContext`; on "stop"
  the run is halted (`continue_: False` with `stopReason`, the message also as context).
* UserPromptSubmit: a new user prompt after a stop lifts the stop and the warning count (the
  human decided); the loop memory is kept, so the same loop again is flagged at once.
* Stop: the agent's final message of the turn (`last_assistant_message`) is recorded as a message
  step (`LoopGuard.record_message`) on the session's guard. A session (`ClaudeSDKClient`, or
  `query(..., options=ClaudeAgentOptions(resume=session_id))`) whose turns keep asking the user
  for the same thing gets a "conversation" verdict: in `verdicts` and `message_verdict(session_id)`.
  The message is never changed and the turn is not held up.

State is in-process: one `LoopGuard` per session (and per subagent, by `agent_id`), least recently
used dropped past `max_sessions`. Every callback fails open: an internal error returns `{}`.

**One guard per session.** The CLI behind `query()` also runs the hooks of its settings files
(`setting_sources` defaults to user + project), so with `semloop install claude-code` in place both
the settings hook and these callbacks would see every call and deliver every note twice. The
callbacks check, once per session and only when a settings file holds a semloop hook, whether that
hook is recording this session (its state database has the session); if so they step aside and
the settings hook alone guards the session. `defer_to_settings_hooks=False` turns this off.

**Why the run ended.** After a semloop stop the CLI's `ResultMessage` has `subtype="success"` and
an empty `result`. Iterate through `SemloopHooks.watch(query(...))` to get the stop message there
(and in `stop_reason`), or read `SemloopHooks.stop_message(session_id)`.
"""

from __future__ import annotations

import dataclasses
import logging
import shlex
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from ..config import Config
from ..features import is_message_tool
from ..guard import LoopGuard
from ..verdict import Verdict
from ._base import KEPT_SESSIONS, Extra, Integration, Sessions, require
from .claude_code import normalize_response, session_key

__all__ = ["SemloopHooks", "semloop_hooks"]

log = logging.getLogger("semloop")

EXTRA = Extra("agent-sdk", "Claude Agent SDK integration", "the `claude-agent-sdk` package")
INSTALL_HINT = EXTRA.hint

REFUSE_NOTE = "Further tool calls in this session will be refused until the user sends a new message."

def _tool_steps(guard: LoopGuard) -> int:
    """Tool calls the guard recorded: its steps less the turns' final messages (the Stop hook)."""
    names = guard.config.message_tools
    return sum(n for tool, n in guard.state.tool_counts.items() if not is_message_tool(tool, names))


class SemloopHooks(Integration):
    """Hook callbacks with one `LoopGuard` per session / subagent.

    `config` (and keyword overrides) configure every guard. A denied call is not run, so it is not
    recorded either: a model that keeps retrying denied calls is halted once more than
    `max_denials` were denied in a row (no clean step between). `halt_on_stop=False` never halts
    the run: the model gets the explanation as context and every further tool call is denied,
    so it can still write its answer to the user. `reset_on_prompt` lifts a stop (and the warning
    count) when the user sends a new prompt (`ClaudeSDKClient` sessions); the loop memory is kept.
    The `Stop` callback records each turn's final message; `message_verdict(session_id)` tells
    whether the session keeps asking the user for the same thing. `verdicts` holds (session id,
    verdict) pairs.
    """

    WHAT = "hook"

    def __init__(self, config: Config | None = None, *, halt_on_stop: bool = True, reset_on_prompt: bool = True,
                 max_denials: int = 1, max_sessions: int = KEPT_SESSIONS, defer_to_settings_hooks: bool = True,
                 **overrides: Any) -> None:
        super().__init__(config, **overrides)
        self.halt_on_stop = halt_on_stop
        self.reset_on_prompt = reset_on_prompt
        self.max_denials = max_denials
        self.max_sessions = max_sessions
        self._denials: dict[tuple[str, str | None], int] = {}  # loop calls denied since the last clean step
        self.guards: Sessions[tuple[str, str | None], LoopGuard] = Sessions(
            self.new_guard, max_sessions, on_drop=lambda key, _: self._denials.pop(key, None))
        self._said: Sessions[str, Verdict] = Sessions(size=4 * max_sessions)  # session id → verdict on its last message
        self.defer_to_settings_hooks = defer_to_settings_hooks
        # decided: semloop's settings hook guards it
        self.deferred: Sessions[tuple[str, str | None], bool] = Sessions(size=4 * max_sessions)
        self._unexplained: set[str] = set()  # halted sessions whose ResultMessage `watch` has not seen yet
        self._stops: Sessions[str, str] = Sessions(  # session id → message of its latest halt
            size=4 * max_sessions, on_drop=lambda session, _: self._unexplained.discard(session))
        self._settings_dbs: dict[str, tuple[str, ...]] = {}  # cwd → state dbs of semloop settings hooks

    # -- guards ---------------------------------------------------------------------------------

    def guard_for(self, session_id: str, agent_id: str | None = None) -> LoopGuard:
        """The guard of one session (main thread: `agent_id=None`) or one of its subagents."""
        return self.guards.of((str(session_id), agent_id))

    @staticmethod
    def _key(input_data: Mapping[str, Any]) -> tuple[str, str | None]:
        return str(input_data.get("session_id", "")), input_data.get("agent_id") or None

    def _guard(self, input_data: Mapping[str, Any]) -> LoopGuard:
        return self.guard_for(*self._key(input_data))

    # -- one guard per session: step aside for semloop's own settings-file hook --------------------

    def _defers(self, input_data: Mapping[str, Any]) -> bool:
        """True when semloop's Claude Code settings hook (`semloop install claude-code`) is already
        guarding this session, so these callbacks must stay silent (no duplicate notes).

        Decided once per session: "yes" as soon as that hook's state database holds this session;
        "no" when no settings file has a semloop hook, or when two calls were recorded here and the
        database still has nothing (Claude Code awaits every PostToolUse hook before going on, and
        no note can come before the third call). Until then both record, which costs nothing."""
        if not self.defer_to_settings_hooks:
            return False
        key = self._key(input_data)
        decided = self.deferred.get(key)
        if decided is not None:
            return decided
        dbs = self._semloop_settings_dbs(str(input_data.get("cwd") or "."))
        found = bool(dbs) and self._recorded_by_settings_hook(input_data, dbs)
        guard = self.guards.get(key)
        tool_steps = _tool_steps(guard) if guard is not None else 0
        if found or not dbs or tool_steps >= 2:
            self.deferred.keep(key, found)
            if found:
                log.warning("semloop: the Claude Code settings hook (`semloop install claude-code`) already "
                            "guards session %s; SemloopHooks leaves it to that hook (no duplicate notes)", key[0])
                self.guards.pop(key, None)
                self._denials.pop(key, None)
        return found

    def _semloop_settings_dbs(self, cwd: str) -> tuple[str, ...]:
        """State databases of the semloop hooks in the settings files the CLI reads for `cwd`
        (user, project, local): the `--db` of each hook command, else the default path."""
        cached = self._settings_dbs.get(cwd)
        if cached is not None:
            return cached
        from . import hook_install as cc
        from .store import default_path

        dbs: list[str] = []
        for scope in ("user", "project", "local"):
            try:
                settings = cc._read_settings(cc.settings_path(scope, cwd))
            except (OSError, ValueError):
                continue
            groups = [g for gs in (settings.get("hooks") or {}).values() if isinstance(gs, list) for g in gs]
            for group in groups:
                for entry in (group.get("hooks") or []) if isinstance(group, dict) else []:
                    command = entry.get("command") if isinstance(entry, dict) else None
                    if cc.is_semloop_command(command):
                        args = shlex.split(command)
                        db = args[args.index("--db") + 1] if "--db" in args[:-1] else str(default_path())
                        if db not in dbs:
                            dbs.append(db)
        self._settings_dbs[cwd] = result = tuple(dbs)
        return result

    @staticmethod
    def _recorded_by_settings_hook(input_data: Mapping[str, Any], dbs: tuple[str, ...]) -> bool:
        from .claude_code import _store

        key = session_key(dict(input_data))
        for db in dbs:
            if not Path(db).expanduser().is_file():
                continue
            store = _store(db)
            try:
                state = store.load(key)
            finally:
                store.close()
            if state is not None and getattr(state, "steps_seen", 0) > 0:
                return True
        return False

    # -- why the run ended -------------------------------------------------------------------------

    def stop_message(self, session_id: str) -> str | None:
        """The message of the latest semloop halt in this session (None if it was never halted)."""
        return self._stops.get(str(session_id))

    def message_verdict(self, session_id: str) -> Verdict | None:
        """The verdict on the session's latest final message (the Stop hook) when it was not
        "allow", else None: a "conversation" warn when the session's turns keep asking the user for
        the same thing. The hook runs before the turn's `ResultMessage` is sent, so it is there
        when you get that message."""
        return self._said.get(str(session_id))

    def _halted(self, input_data: Mapping[str, Any], message: str) -> None:
        session = str(input_data.get("session_id", ""))
        self._unexplained.add(session)
        self._stops.keep(session, message)

    async def watch(self, messages: AsyncIterable[Any]) -> AsyncIterator[Any]:
        """Pass `query()`'s messages through; a `ResultMessage` of a session that semloop halted
        gets the stop message as its `result` (when the CLI left it empty, as it does) and as
        its `stop_reason`, so the caller sees why the run ended where it looks:

            async for message in hooks.watch(query(prompt=..., options=options)):
                ...
        """
        async for message in messages:
            yield self._explained(message)

    def _explained(self, message: Any) -> Any:
        if (type(message).__name__ != "ResultMessage" or not dataclasses.is_dataclass(message)
                or isinstance(message, type)):
            return message
        session = str(getattr(message, "session_id", ""))
        if session not in self._unexplained:  # not halted, or that halt's result was already explained
            return message
        self._unexplained.discard(session)
        stop = self._stops[session]
        result = getattr(message, "result", None)
        return dataclasses.replace(message, result=stop if not result else f"{result}\n\n{stop}",
                                   stop_reason="semloop_stopped")

    # -- callbacks: async (input_data, tool_use_id, context) -> dict --------------------------------

    async def pre_tool_use(self, input_data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        with self.fails_open():
            if self._defers(input_data):
                return {}
            guard = self._guard(input_data)
            tool = str(input_data["tool_name"])
            verdict = guard.check(tool, input_data.get("tool_input"))
            if verdict.action != "stop":
                return {}
            key = self._key(input_data)
            self.note(verdict, key[0])
            self._denials[key] = denials = self._denials.get(key, 0) + 1
            reason = verdict.message or "semloop blocked this call."
            if guard.stopped and not self.halt_on_stop:
                reason = f"{reason} {REFUSE_NOTE}"
            out: dict[str, Any] = {"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}}
            # The first refusal lets the model tell the user what blocked it; the guard is stopped
            # from then on, so any further tool call is refused too, and then the run is halted.
            if self.halt_on_stop and denials > self.max_denials:
                out.update({"continue_": False, "stopReason": reason})
                self._halted(input_data, reason)
            return out
        return {}

    async def post_tool_use(self, input_data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        with self.fails_open():
            output = normalize_response(str(input_data["tool_name"]), input_data.get("tool_response"))
            return self._after(input_data, "PostToolUse", output, is_error=False)
        return {}

    async def post_tool_use_failure(self, input_data: Any, tool_use_id: str | None,
                                    context: Any) -> dict[str, Any]:
        with self.fails_open():
            if input_data.get("is_interrupt"):  # the user interrupted: not the agent's loop
                return {}
            error = str(input_data.get("error") or "tool call failed")
            if "semloop blocked this" in error:  # our own PreToolUse denial, already counted
                return {}
            return self._after(input_data, "PostToolUseFailure", error, is_error=True)
        return {}

    async def user_prompt_submit(self, input_data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        with self.fails_open():
            if self.reset_on_prompt:
                for key, guard in list(self.guards.items()):
                    if key[0] == str(input_data.get("session_id", "")):
                        self._denials.pop(key, None)
                        guard.resume()
        return {}

    async def stop(self, input_data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        """The Stop hook: the turn's final message to the user is a message step. Always `{}`:
        the message is not changed and the turn ends as it would."""
        with self.fails_open():
            session, text = str(input_data.get("session_id", "")), input_data.get("last_assistant_message")
            self._said.pop(session, None)
            if not isinstance(text, str) or not text.strip():
                return {}
            # Also when the settings hook guards the session's tool calls: it does not record messages.
            # (a stopped session's message is about the stop: record_message records nothing then)
            verdict = self.note(self._guard({"session_id": session}).record_message(text), session)
            if verdict.action != "allow":
                self._said.keep(session, verdict)
        return {}

    def _after(self, input_data: Mapping[str, Any], event: str, output: Any, is_error: bool) -> dict[str, Any]:
        if self._defers(input_data):
            return {}
        guard = self._guard(input_data)
        tool = str(input_data["tool_name"])
        verdict = guard.record(tool, input_data.get("tool_input"), output, is_error=is_error)
        self.note(verdict, self._key(input_data)[0])
        if verdict.action == "allow":
            self._denials.pop(self._key(input_data), None)
        if verdict.action == "allow" or not verdict.message:
            return {}
        if verdict.action == "warn":
            return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": verdict.message}}
        if self.halt_on_stop:
            self._halted(input_data, verdict.message)
            return {"continue_": False, "stopReason": verdict.message,
                    "hookSpecificOutput": {"hookEventName": event, "additionalContext": verdict.message}}
        return {"hookSpecificOutput": {"hookEventName": event,
                                       "additionalContext": f"{verdict.message} {REFUSE_NOTE}"}}

    # -- the options mapping ---------------------------------------------------------------------

    def hooks(self, matcher: str | None = None) -> dict[str, list[Any]]:
        """The `ClaudeAgentOptions(hooks=...)` mapping. `matcher` limits the tools watched
        (e.g. "Bash|Read|Grep"); None watches every tool."""
        HookMatcher = require("claude_agent_sdk", EXTRA).HookMatcher
        mapping: dict[str, list[Any]] = {
            "PreToolUse": [HookMatcher(matcher=matcher, hooks=[self.pre_tool_use])],
            "PostToolUse": [HookMatcher(matcher=matcher, hooks=[self.post_tool_use])],
            "PostToolUseFailure": [HookMatcher(matcher=matcher, hooks=[self.post_tool_use_failure])],
            "Stop": [HookMatcher(hooks=[self.stop])],
        }
        if self.reset_on_prompt:
            mapping["UserPromptSubmit"] = [HookMatcher(hooks=[self.user_prompt_submit])]
        return mapping


def semloop_hooks(config: Config | None = None, *, matcher: str | None = None, **options: Any) -> dict[str, list[Any]]:
    """`ClaudeAgentOptions(hooks=semloop_hooks())`: the hooks mapping of a new `SemloopHooks`.

    `options` are `SemloopHooks` options and `Config` overrides (e.g. `max_warnings=3`). To merge
    with hooks of your own, or to inspect the guards, build a `SemloopHooks` and call `.hooks()`.
    """
    return SemloopHooks(config, **options).hooks(matcher)
