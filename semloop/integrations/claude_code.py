"""The Claude Code hook — `semloop hook claude-code` — and the core every CLI's hook runs.

Every other CLI's hook translates its events into these (`hook_cli`, one table per CLI) and
hands them to `answer`. The installer (`semloop install|uninstall`, the settings files) is
`hook_install`.

Claude Code hands semloop every tool call, as a command run once per event with the event JSON on
stdin (the default `install`: the command talks to the warm server over a private Unix socket),
or as http hooks answered by the warm server on loopback (`--hooks http`: only for a machine no
other user logs into, see `_session_start`). What each event does (docs/claude-code.md has the
table, and what the CLI honours):

- PreToolUse: `LoopGuard.check` (hashing only). A call that continues a loop already warned about
  to the limit is denied *and* ends the run (`continue: false` is honoured on a denying
  PreToolUse; a bare denial lets a looping model retry until --max-turns).
- PostToolUse / PostToolUseFailure: `LoopGuard.record` with the bounded, normalized tool response
  (or the error text). "warn" adds the factual message as `additionalContext` next to the tool
  result. "stop" returns `continue: false` + `stopReason`: it ends the run on PostToolUse; on
  PostToolUseFailure (where Claude Code ignores it) the saved stop ends the run at the next
  PreToolUse (or at PostToolBatch, for settings of earlier versions that hook it).
- UserPromptSubmit: a new prompt from the user after a stop lifts the stop (the human decided);
  the loop memory is kept, so a repeat of the same loop is flagged again at once.
- SessionEnd / SubagentStop: the session's (subagent's) state is deleted.
- SessionStart (command hook, with http hooks): starts or checks the warm server and proves that
  the http port is held by it (`hook_protocol.verify_http`), telling the user when not.

State lives in the session store (`semloop.store`: SQLite by default, `$SEMLOOP_STORE` for Redis
or memory), one entry per `session_id` (+ `agent_id` for subagents). The hook always exits 0 and
prints one JSON object; any internal error prints `{}` (allow) and one line on stderr: a broken
detector never blocks the agent.

This module imports only the standard library at import time; semloop's core (numpy) and the
embedding model are loaded inside the hook, only when needed. `answer` first hands the event to
the warm `semloop hook-server` over its Unix socket, and handles it in-process when there is none
yet or it answers "not handled" (see `hook_server` for the exactly-once handshake). Imports go
one way: this module uses the client (`hook_protocol`); the server (`hook_server`) uses this module.
"""

from __future__ import annotations

import json
import os
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (hook processes start faster)

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

TARGET = "claude-code"
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
# The events semloop hooks, command or http alike: only those detection needs. An http hook is
# not free either: Claude Code charges ~30 ms per http hook request whatever the server does
# (benchmarks/hook_latency.py: a server answering `{}` costs what semloop costs), so there is no
# PostToolBatch hook — it would end a run stopped by a failed call one call sooner than the next
# PreToolUse does, at a third more per tool call. `handle_event` still answers PostToolBatch, for
# settings written by earlier versions.
EVENTS = (*TOOL_EVENTS, "UserPromptSubmit", "SessionEnd", "SubagentStop")
HOOK_TIMEOUT = 15  # seconds; Claude Code kills a slower hook and goes on (non-blocking error)
HTTP_TIMEOUT = 10  # seconds for an http hook: the server answers in milliseconds or is gone

# Bounded work per event (a 70 MB tool_response must not take seconds or a GB): strings longer
# than this keep their head and tail plus a digest of the whole; long lists / dicts likewise.
MAX_FIELD_CHARS = 32_768
MAX_ITEMS = 512


class Expired(Exception):
    """The hook client's deadline passed before this event was recorded: nothing was saved, and
    the client records the event itself (see `hook_server`)."""

# Response keys that change on every run or only measure cost: dropped before recording.
_VOLATILE_KEYS = frozenset({
    "durationMs", "durationSeconds", "duration_ms", "totalDurationMs", "totalTokens",
    "totalToolUseCount", "usage", "timestamp", "elapsed", "elapsedMs", "tool_use_id", "toolUseId",
    "originalFile", "backgroundTaskId", "agentId",
})
# Keys whose (large, binary-ish) values are replaced by a digest.
_BLOB_KEYS = frozenset({"base64", "data", "image", "source"})

# ---------------------------------------------------------------------------------------------
# hook
# ---------------------------------------------------------------------------------------------


def normalize_response(tool: str, response: Any) -> str:
    """Claude Code's structured `tool_response` → the text that identifies the result.

    Bash → stdout + stderr (+ a marker when interrupted); MCP content blocks → their text;
    other dicts (Read, Write, Edit, Grep, WebFetch, Task, ...) → their fields as `key: value`
    lines, minus timings, token counts and pre-edit file copies; base64 payloads → a digest.
    """
    if response is None:
        return ""
    if isinstance(response, str):
        return response
    if isinstance(response, dict) and ("stdout" in response or "stderr" in response):
        parts = [str(response.get("stdout") or ""), str(response.get("stderr") or "")]
        if response.get("interrupted"):
            parts.append("[interrupted]")
        if response.get("isImage"):
            parts.append("[image]")
        return "\n".join(p for p in parts if p)
    from ..features import render_value  # numpy: only once an event is actually handled

    return render_value(_strip(response))


def _strip(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        if value.get("type") == "image" and isinstance(value.get("source"), dict):
            return {"type": "image", "source": _digest_text(json.dumps(value["source"], sort_keys=True))}
        return {k: _strip(v, k) for k, v in value.items() if k not in _VOLATILE_KEYS}
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and v.get("type") == "text" and "text" in v for v in value):
            return "\n".join(str(v["text"]) for v in value)  # MCP / Task content blocks
        return [_strip(v, key) for v in value]
    if key in _BLOB_KEYS and isinstance(value, str) and len(value) > 256:
        return _digest_text(value)
    return value


def _digest_text(text: str) -> str:
    """A short streaming digest (blake2b, 1 MiB chunks: no full-size copy of a huge payload)."""
    import hashlib

    h = hashlib.blake2b(digest_size=12)
    for i in range(0, len(text), 1 << 20):
        h.update(text[i:i + (1 << 20)].encode("utf-8", errors="replace"))
    return "b2:" + h.hexdigest()


def bounded(value: Any) -> Any:
    """`value` with every long string / list / dict cut to a bounded head and tail around a
    sha256 of the whole, so equal payloads stay equal and different ones (almost surely) differ,
    while the work after this is O(1) in the payload size. Small values come back unchanged."""
    if isinstance(value, str):
        if len(value) <= MAX_FIELD_CHARS:
            return value
        half = MAX_FIELD_CHARS // 4
        return f"{value[:half]}\n[... {len(value)} chars, {_digest_text(value)} ...]\n{value[-half:]}"
    if isinstance(value, list):
        if len(value) > MAX_ITEMS:
            half = MAX_ITEMS // 4
            marker = f"[... {len(value)} items, {_digest_text(json.dumps(value, sort_keys=True, default=str))} ...]"
            value = [*value[:half], marker, *value[-half:]]
        return [bounded(v) for v in value]
    if isinstance(value, dict):
        if len(value) > MAX_ITEMS:
            items = list(value.items())
            half = MAX_ITEMS // 4
            marker = _digest_text(json.dumps(value, sort_keys=True, default=str))
            value = {**dict(items[:half]), "...": f"{len(items)} keys, {marker}", **dict(items[-half:])}
        return {k: bounded(v) for k, v in value.items()}
    return value


def session_key(event: dict) -> str:
    """`session_id`, plus `agent_id` for events fired inside a subagent (its own loop state)."""
    session = event.get("session_id")
    if not isinstance(session, str) or not session:
        raise ValueError("hook input has no session_id")
    agent = event.get("agent_id")
    return f"{session}/{agent}" if isinstance(agent, str) and agent else session


def _store(db: str | None, timeout: float | None = None, budget: Any = None):
    """`--db` PATH if given, else `$SEMLOOP_STORE` (memory://, sqlite:///..., redis://...), else the
    default SQLite file (`semloop.store.open_store`). `timeout`: how long to wait for the store's
    write lock (default `$SEMLOOP_DB_TIMEOUT` or 10 s), never past the hook's `budget`
    (`hook_protocol.Budget`: what is left of the hook process's time)."""
    from ..store import open_store

    if timeout is None:
        timeout = float(os.environ.get("SEMLOOP_DB_TIMEOUT", "10"))
    if budget is not None:
        timeout = max(0.01, min(timeout, budget.left()))
    return open_store(db=db, timeout=timeout)


# The hook server sets this to {} to keep parsed config files (reloaded when the file changes).
CONFIG_CACHE: dict[str, tuple[tuple[int, int], Any]] | None = None


def _load_config(path: str | None):
    from ..config import Config

    path = path or os.environ.get("SEMLOOP_CONFIG")
    if not path:
        return Config()
    cache = CONFIG_CACHE
    if cache is None:
        return Config.from_file(path)
    st = os.stat(path)
    stamp = (st.st_mtime_ns, st.st_size)
    hit = cache.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    config = Config.from_file(path)
    cache[path] = (stamp, config)
    return config


def handle_event(event: dict, *, config_path: str | None = None, db: str | None = None,
                 post_lock: Any = None, deadline: float | None = None, budget: Any = None) -> dict:
    """One hook event → the JSON object to print. May raise; `run_hook` fails open.

    `budget` (`hook_protocol.Budget`): no database wait runs past it. Hook server only:
    `post_lock` is held while a PostToolUse(Failure) is embedded and recorded (the payload is
    bounded and rendered before); `deadline` (wall clock): a step not saved by then is not saved
    at all and raises `Expired` — the client that set it records it itself."""
    if not isinstance(event, dict):
        raise ValueError("hook input is not a JSON object")
    name = event.get("hook_event_name")
    if name not in EVENTS and name != "PostToolBatch":
        return {}
    key = session_key(event)

    if name == "UserPromptSubmit":
        return _resume(key, db, budget)
    if name in ("SessionEnd", "SubagentStop"):
        _forget(key, db, budget, subagents=name == "SessionEnd")
        return {}
    if name == "PostToolBatch":
        return _stop_if_stopped(key, config_path, db, budget)

    tool = str(event.get("tool_name") or "")
    tool_input = bounded(event.get("tool_input"))  # Bash's `description`: see features.COMMENTARY_KEYS

    if name == "PreToolUse":
        return _pre_tool_use(key, tool, tool_input, config_path, db, budget)

    # PostToolUse / PostToolUseFailure. A call denied by PreToolUse (ours or another hook's)
    # never reaches these events, so everything here ran and is recorded.
    if name == "PostToolUseFailure":
        if event.get("is_interrupt"):  # the user pressed Esc: not the agent repeating itself
            return {}
        output, is_error = bounded(str(event.get("error") or "tool call failed")), True
    else:
        output, is_error = normalize_response(tool, bounded(event.get("tool_response"))), False

    import contextlib

    from ..guard import LoopGuard

    guard = LoopGuard(_with_resume(_load_config(config_path), key))
    with post_lock if post_lock is not None else contextlib.nullcontext():
        _prewarm(guard, tool, tool_input)  # embed before the database lock: parallel hooks wait less
        verdict = _record(guard, key, tool, tool_input, output, is_error, db, deadline, budget)
    if verdict.error is not None:
        print(f"semloop: detector error, allowed: {verdict.error}", file=sys.stderr)
    if verdict.action == "warn" and verdict.message:
        return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": verdict.message}}
    if verdict.action == "stop":
        from ..messages import STOPPED

        message = verdict.message or STOPPED
        # PostToolUse: `continue: false` ends the run here. PostToolUseFailure: Claude Code ignores
        # it; the stored stop ends the run at the batch's PostToolBatch or the next PreToolUse.
        return {"continue": False, "stopReason": message, "suppressOutput": False,
                "hookSpecificOutput": {"hookEventName": name, "additionalContext": message}}
    return {}


def _record(guard: Any, key: str, tool: str, tool_input: Any, output: Any, is_error: bool,
            db: str | None, deadline: float | None, budget: Any = None) -> Any:
    import sqlite3

    # with a deadline, wait for the database lock only until then: past it the client records
    store = _store(db, None if deadline is None else max(0.01, deadline - time.time()), budget)
    verdicts = []

    def step(state: Any) -> Any:  # one atomic read-modify-write; returning None saves nothing
        guard.state = state if state is not None else guard.reset().state  # (Redis may retry)
        verdicts.append(guard.record(tool, tool_input, output, is_error=is_error))
        if deadline is not None and time.time() > deadline:  # the client went in-process: not ours
            raise Expired("the client's deadline passed before the step was saved")
        if verdicts[-1].error is not None:  # the detector failed open: keep the stored state as it was
            return None
        return guard.state

    try:
        store.update(key, step)
    except sqlite3.OperationalError as exc:
        if deadline is not None and "locked" in str(exc):
            raise Expired("the database stayed locked until the client's deadline") from None
        raise
    finally:
        store.close()
    verdict = verdicts[-1]
    return verdict


def _pre_tool_use(key: str, tool: str, tool_input: Any, config_path: str | None, db: str | None,
                  budget: Any = None) -> dict:
    """Deny a call that continues a loop already warned about to the limit — and end the run
    (`continue: false`, honoured on a denying PreToolUse): the warnings did not change the
    behaviour, so this is the hard stop. The stop is saved, so a new user prompt lifts it."""
    store = _store(db, budget=budget)
    try:
        state = store.load(key)
        if state is None:  # nothing recorded in this session yet: nothing can be looping
            return {}
        from ..guard import LoopGuard

        guard = LoopGuard(_with_resume(_load_config(config_path), key))
        guard.state = state
        was_stopped = state.stopped
        verdict = guard.check(tool, tool_input)  # (sets state.stopped on a refusal)
        if verdict.action != "stop":
            return {}
        if not was_stopped:  # rare: only on the first denial; the stop keeps its step and loop
            store.update(key, lambda current: _stopped(current, guard.state))
    finally:
        store.close()
    from ..messages import STOPPED

    message = verdict.message or STOPPED
    return {"continue": False, "stopReason": message,
            "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": message}}


def _stop_if_stopped(key: str, config_path: str | None, db: str | None, budget: Any = None) -> dict:
    """PostToolBatch: end the run if a call of this batch stopped it (a failed call's stop cannot
    end the run from PostToolUseFailure)."""
    store = _store(db, budget=budget)
    try:
        state = store.load(key)
    finally:
        store.close()
    if state is None or not state.stopped:
        return {}
    from .. import messages

    cfg = _load_config(config_path)
    last = state.window[-1] if state.window else None
    message = messages.render(
        "stop", cfg.language, cfg.messages, tool=getattr(last, "tool", "-"),
        steps=", ".join(str(i) for i in state.last_related) or "-",
        reasons=messages.reason_text(state.last_kind, cfg.language) if state.last_kind else "-",
        warnings=max(0, state.warnings - 1), call=getattr(last, "call_preview", "") or "-",
        stop_step=state.stopped_at if state.stopped_at >= 0 else state.steps_seen,
        resume=messages.render("resume_session", cfg.language, cfg.messages, session=key))
    return {"continue": False, "stopReason": message}


def _forget(key: str, db: str | None, budget: Any = None, *, subagents: bool) -> None:
    """SessionEnd / SubagentStop: the session (with its subagents) is over; drop its state now
    rather than at the store's TTL."""
    store = _store(db, budget=budget)
    try:
        store.delete(key)
        if subagents:
            prefix = key + "/"
            for other in store.keys():
                if other.startswith(prefix):
                    store.delete(other)
    finally:
        store.close()


def _prewarm(guard: Any, tool: str, tool_input: Any) -> None:
    """Give the guard its embedder, with this call's vector already computed (cached)."""
    cfg = guard.config
    if cfg.detector != "semantic":
        return
    from .. import features
    from ..embeddings import load_embedder

    guard.embedder = load_embedder(cfg.embedding, cfg.model_path)
    guard.embedder([features.call_text(tool, features.call_values(tool_input), cfg.max_text_chars)])


def _resume(key: str, db: str | None, budget: Any = None) -> dict:
    """A user prompt after a stop: lift the stop and the warning count, keep the loop memory."""
    store = _store(db, budget=budget)
    try:
        state = store.load(key)
        if state is None or not state.stopped:  # mid-loop warnings stand: the prompt may be unrelated
            return {}
        store.update(key, _resumed)
    finally:
        store.close()
    return {}


def _stopped(state: Any, checked: Any = None) -> Any:
    if state is None:
        return None  # nothing to write
    if checked is not None and not state.stopped:
        state.stop(checked.stopped_at, checked.stop_related)
    state.stopped = True
    return state


def _resumed(state: Any) -> Any:
    if state is None or not state.stopped:
        return None  # nothing to write
    state.resume()
    return state


def run_hook(stdin_text: str | dict, *, config_path: str | None = None, db: str | None = None,
             post_lock: Any = None, deadline: float | None = None, budget: Any = None) -> str:
    """The hook's stdout for one event (JSON text, or already parsed). Never raises — except
    `Expired` when a `deadline` is given (see `handle_event`): other errors give `{}` and a line
    on stderr."""
    try:
        event = json.loads(stdin_text) if isinstance(stdin_text, str) else stdin_text
        out = handle_event(event, config_path=config_path, db=db, post_lock=post_lock, deadline=deadline,
                           budget=budget)
    except Expired:
        if deadline is None:  # pragma: no cover - only raised with a deadline
            return "{}"
        raise
    except Exception as exc:  # fail open, whatever happened
        detail = f"{type(exc).__name__}: {exc}".replace("\n", " ")
        print(f"semloop: hook error, allowing the call: {detail[:300]}", file=sys.stderr)
        out = {}
    return json.dumps(out, ensure_ascii=False)


def cmd_hook(args: Any, budget: Any = None) -> int:
    """`semloop hook claude-code`: read the event on stdin, print the answer (`answer`). Always
    exits 0."""
    try:
        data = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    except Exception as exc:  # pragma: no cover - stdin closed or unreadable
        print(f"semloop: hook error, allowing the call: cannot read stdin: {exc}", file=sys.stderr)
        data = ""
    out = answer(data, args, budget)
    try:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    except Exception:  # pragma: no cover - Claude Code went away
        pass
    return 0


def answer(data: str, args: Any, budget: Any = None) -> str:
    """The hook's stdout (one JSON object) for the event text `data`: the warm hook server
    handles it (see `hook_server`), or — no server yet, disabled, or any problem with it — this
    process does. What the server said on stderr is written to ours. Never raises, and answers
    within `budget` (`hook_protocol.Budget`, default `HOOK_BUDGET` from now) plus its start-up:
    every wait (the server, its grace, the database) comes out of that one budget. The hook of
    every other CLI hands its translated event here (`hook_cli`)."""
    from .hook_protocol import Budget

    budget = budget or Budget.for_hook(getattr(args, "server_timeout", None))
    config_path, db = getattr(args, "config", None), getattr(args, "db", None)
    reply = None
    if '"SessionStart"' in data[:4096] and _is_session_start(data):
        return _session_start(no_server=getattr(args, "no_server", False),
                              guidance=_guidance_text(config_path) if getattr(args, "guidance", False) else None)
    if not getattr(args, "no_server", False):
        try:
            from . import hook_protocol

            if hook_protocol.enabled():
                reply = hook_protocol.request(data, config_path=config_path, db=db,
                                              timeout=getattr(args, "server_timeout", None)
                                              or hook_protocol.DEFAULT_CLIENT_TIMEOUT, budget=budget)
        except Exception:  # pragma: no cover - request() never raises; belt and braces
            reply = None
    if reply is None:
        import logging

        logging.getLogger("semloop").setLevel(logging.ERROR)  # our own stderr line says it once
        return run_hook(data, config_path=config_path, db=db, budget=budget)
    if reply["stderr"]:
        try:
            sys.stderr.write(reply["stderr"])
            sys.stderr.flush()
        except Exception:  # pragma: no cover
            pass
    return str(reply["stdout"])


def _is_session_start(data: str) -> bool:
    try:
        event = json.loads(data)
    except ValueError:
        return False
    return isinstance(event, dict) and event.get("hook_event_name") == "SessionStart"


# What SessionStart says when the http hooks of this settings file are unsafe or unanswered. It
# cannot stop them: Claude Code posts every http hook whatever SessionStart answers (`continue:
# false` and exit code 2 alike, checked with the real CLI), hence the default command hooks.
HTTP_NOT_OURS = ("semloop: {problem}: Claude Code will send this session's http hook events (tool inputs and "
                 "outputs) there, and semloop cannot stop that. Quit this session and switch to command hooks, "
                 "which use no port: semloop install claude-code --hooks command (with your --scope or --settings).")
HTTP_UNSERVED = ("semloop: {why}, so nothing answers this settings file's http hooks: loop detection is off in "
                 "this session. semloop install claude-code --hooks command writes hooks that work without it.")


def _session_start(no_server: bool, guidance: str | None = None) -> str:
    """SessionStart: start or check the warm server, waiting for it once per session, so the first
    tool call is served. Where http hooks are configured (`hook_protocol.http_config`), prove that
    the listener on their port is this user's semloop server (`verify_http`: the socket's owner
    and an HMAC challenge; the token is never sent), and say so loudly to the user when it is not
    (`systemMessage` and stderr) or when no server will answer them (SEMLOOP_HOOK_SERVER=0).
    `guidance`: the text to add to the session's context (`install --guidance`)."""
    out: dict = {}
    try:
        from . import hook_protocol

        if no_server or not hook_protocol.enabled():
            status = "hook server disabled (SEMLOOP_HOOK_SERVER=0 or --no-server)"
        else:
            status = hook_protocol.ensure_server()
        if "running" not in status and "started" not in status and guidance is None:
            print(f"semloop: {status}", file=sys.stderr)
        config = hook_protocol.http_config()
        if config is not None:
            if "disabled" in status:
                message = HTTP_UNSERVED.format(why=status)
            else:
                problem = hook_protocol.verify_http(config)
                message = HTTP_NOT_OURS.format(problem=problem) if problem else ""
            if message:
                print(message, file=sys.stderr)
                out = {"systemMessage": message}
    except Exception as exc:  # fail open
        print(f"semloop: session start: {type(exc).__name__}: {exc}", file=sys.stderr)
    if guidance is not None:
        out["hookSpecificOutput"] = {"hookEventName": "SessionStart", "additionalContext": guidance}
    return json.dumps(out, ensure_ascii=False)


def _with_resume(config: Any, key: str) -> Any:
    """The config whose stop texts name both ways out: the user's next prompt, and
    `semloop sessions reset <session>` (unless the config has a "resume" text of its own)."""
    from ..messages import with_resume

    return with_resume(config, "resume_session", session=key)


def _guidance_text(config_path: str | None) -> str | None:
    """`semloop.guidance()` in the configured language (None, and a line on stderr, if it fails)."""
    try:
        from ..guidance import guidance

        return guidance(_load_config(config_path).language)
    except Exception as exc:  # fail open: a broken config file must not break the session start
        print(f"semloop: session start: no guidance: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None
