"""Claude Code hooks: `semloop hook claude-code`, `semloop install|uninstall claude-code`.

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
or memory), one entry per `session_id` (+ `agent_id` for subagents). The hook always exits 0 and prints one JSON object; any internal error prints `{}`
(allow) and one line on stderr: a broken detector never blocks the agent.

This module imports only the standard library at import time; semloop's core (numpy) and the
embedding model are loaded inside the hook, only when needed. `cmd_hook` first hands the event to
the warm `semloop hook-server` over its Unix socket, and handles it in-process when there is none
yet or it answers "not handled" (see `hook_server` for the exactly-once handshake). Imports go
one way: this module uses the client (`hook_protocol`); the server (`hook_server`) uses this module.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

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
        message = verdict.message or _STOP_FALLBACK
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


_STOP_FALLBACK = "semloop stopped this run: the agent repeated the same action without progress."


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
    message = verdict.message or _STOP_FALLBACK
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
    """Read the event, have the warm hook server handle it (see `hook_server`), or — no server
    yet, disabled, or any problem with it — handle it in this process. Always exits 0, within
    `budget` (`hook_protocol.Budget`, default `HOOK_BUDGET` from now) plus its start-up: every
    wait (the server, its grace, the database) comes out of that one budget."""
    from .hook_protocol import Budget

    budget = budget or Budget.for_hook(getattr(args, "server_timeout", None))
    try:
        data = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    except Exception as exc:  # pragma: no cover - stdin closed or unreadable
        print(f"semloop: hook error, allowing the call: cannot read stdin: {exc}", file=sys.stderr)
        data = ""
    config_path, db = getattr(args, "config", None), getattr(args, "db", None)
    reply = None
    if '"SessionStart"' in data[:4096] and _is_session_start(data):
        _session_start(no_server=getattr(args, "no_server", False),
                       guidance=_guidance_text(config_path) if getattr(args, "guidance", False) else None)
        return 0
    if not getattr(args, "no_server", False):
        try:
            from . import hook_protocol

            if hook_protocol.enabled():
                reply = hook_protocol.request(data, config_path=config_path, db=db,
                                              timeout=getattr(args, "server_timeout", None)
                                              or hook_protocol.DEFAULT_CLIENT_TIMEOUT, budget=budget)
        except Exception:  # pragma: no cover - request() never raises; belt and braces
            reply = None
    if reply is not None:
        out = reply["stdout"]
        if reply["stderr"]:
            try:
                sys.stderr.write(reply["stderr"])
                sys.stderr.flush()
            except Exception:  # pragma: no cover
                pass
    else:
        import logging

        logging.getLogger("semloop").setLevel(logging.ERROR)  # our own stderr line says it once
        out = run_hook(data, config_path=config_path, db=db, budget=budget)
    try:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    except Exception:  # pragma: no cover - Claude Code went away
        pass
    return 0


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


def _session_start(no_server: bool, guidance: str | None = None) -> None:
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
    try:
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    except Exception:  # pragma: no cover
        pass


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


# ---------------------------------------------------------------------------------------------
# install / uninstall
# ---------------------------------------------------------------------------------------------

_OURS_PROGRAM = re.compile(r"\bsemloop\b")
_OURS_ARGS = re.compile(r"\bhook\s+claude-code\b")


def is_semloop_command(command: Any) -> bool:
    """True for hook commands that `install` writes (matched on the command string)."""
    return isinstance(command, str) and bool(_OURS_PROGRAM.search(command) and _OURS_ARGS.search(command))


def settings_path(scope: str, cwd: str | Path | None = None) -> Path:
    """user: ~/.claude/settings.json ($CLAUDE_CONFIG_DIR if set); project: .claude/settings.json;
    local: .claude/settings.local.json (project-relative paths from `cwd`)."""
    if scope == "user":
        base = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(base).expanduser() if base else Path.home() / ".claude") / "settings.json"
    root = Path(cwd or os.getcwd())
    if scope == "project":
        return root / ".claude" / "settings.json"
    if scope == "local":
        return root / ".claude" / "settings.local.json"
    raise ValueError(f"scope must be user, project or local, got {scope!r}")


def hook_command(config: str | None = None, db: str | None = None, *, target: str = TARGET,
                 project: str | Path | None = None, project_var: str = "CLAUDE_PROJECT_DIR") -> str:
    """The command written into a settings file.

    Default (user and local scopes: a file of this machine): this environment's `semloop` script
    (absolute), or `<python> -m semloop` when there is none, so the hook runs with this install
    whatever PATH is. `project` (the project scope: a committed file, read on other machines):
    plain `semloop`, found on PATH, and `--config` / `--db` inside `project` written relative to
    `$<project_var>` (the agent sets it for hooks) — no path of this machine in the file."""
    if project is not None:
        parts = ["semloop"]
    else:
        script = Path(sys.executable).parent / ("semloop.exe" if os.name == "nt" else "semloop")
        parts = [str(script)] if script.is_file() else [sys.executable, "-m", "semloop"]
    words = [shlex.quote(p) for p in (*parts, "hook", target)]
    for flag, value in (("--config", config), ("--db", db)):
        if value:
            path = Path(value).expanduser().resolve()
            words += [flag, _in_project(path, project, project_var) or shlex.quote(str(path))]
    return " ".join(words)


def _in_project(path: Path, project: str | Path | None, var: str) -> str | None:
    """`"$VAR"/relative/path` for a path inside `project`, else None."""
    if project is None:
        return None
    try:
        relative = path.relative_to(Path(project).resolve())
    except ValueError:
        return None
    return f'"${var}"/{shlex.quote(relative.as_posix())}' if relative.parts else f'"${var}"'


_OURS_URL = re.compile(r"^http://127\.0\.0\.1:\d+/hook(\?|$)")


def is_semloop_hook(entry: Any) -> bool:
    """True for hook entries that `install` writes: our command, or our loopback http hook."""
    if not isinstance(entry, dict):
        return False
    if entry.get("type", "command") == "command":
        return is_semloop_command(entry.get("command"))
    from .hook_protocol import TOKEN_HEADER

    headers = entry.get("headers")
    return (entry.get("type") == "http" and isinstance(entry.get("url"), str) and bool(_OURS_URL.match(entry["url"]))
            and isinstance(headers, dict) and TOKEN_HEADER in headers)


def hook_url(port: int, config: str | None = None, db: str | None = None) -> str:
    """The loopback URL of the warm server's http hook endpoint (with this install's paths)."""
    from urllib.parse import urlencode

    query = {k: str(Path(v).expanduser().resolve()) for k, v in (("config", config), ("db", db)) if v}
    return f"http://127.0.0.1:{int(port)}/hook" + (f"?{urlencode(query)}" if query else "")


def _http_entry(url: str) -> dict:
    from .hook_protocol import TOKEN_ENV, TOKEN_HEADER

    # the secret is read from the environment (`env` in the settings file), not written here
    return {"type": "http", "url": url, "headers": {TOKEN_HEADER: f"${TOKEN_ENV}"},
            "allowedEnvVars": [TOKEN_ENV], "timeout": HTTP_TIMEOUT}


def _group(event: str, entry: dict) -> dict:
    if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        return {"matcher": "*", "hooks": [entry]}
    return {"hooks": [entry]}  # events without a tool have no matcher


def planned_hooks(command: str, http: dict | None = None, guidance: bool = False) -> dict[str, dict]:
    """event → the hook entry `install` writes. `http` ({"url": ...}): http hooks for every event
    plus a SessionStart command hook that starts the server; None: command hooks only.
    `guidance`: the SessionStart command (written with command hooks too) adds `semloop.guidance()`
    to the session's context (`hook claude-code --guidance`)."""
    start = f"{command} --guidance" if guidance else command
    if http is None:
        plan = {event: {"type": "command", "command": command, "timeout": HOOK_TIMEOUT} for event in EVENTS}
        if guidance:
            plan = {"SessionStart": {"type": "command", "command": start, "timeout": 30}, **plan}
        return plan
    plan = {"SessionStart": {"type": "command", "command": start, "timeout": 30}}
    plan.update({event: _http_entry(http["url"]) for event in EVENTS})
    return plan


def add_hooks(settings: dict, command: str, http: dict | None = None, guidance: bool = False) -> bool:
    """Put our hooks into `settings` (in place): one semloop entry per event (`planned_hooks`),
    updated in place, never duplicated; other hooks are kept; semloop entries of events the plan
    leaves out (switching between http and command hooks) are removed. With `http`, the token goes
    into `env` (Claude Code puts it in the header). Returns True if anything changed."""
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("settings 'hooks' is not an object")
    plan = planned_hooks(command, http, guidance)
    before = json.dumps(settings, sort_keys=True)
    for event in list(hooks):
        if event not in plan:
            _remove_from_event(hooks, event)
    for event, want in plan.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ValueError(f"settings 'hooks.{event}' is not a list")
        found = False
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list):
                continue
            for i, entry in enumerate(entries):
                if is_semloop_hook(entry):
                    if found:
                        continue
                    found = True
                    if entry != want:
                        entries[i] = dict(want)
        if not found:
            groups.append(_group(event, dict(want)))
    from .hook_protocol import TOKEN_ENV

    env = settings.get("env")
    if http is not None:
        if env is None:
            env = settings["env"] = {}
        if not isinstance(env, dict):
            raise ValueError("settings 'env' is not an object")
        env[TOKEN_ENV] = http["token"]
    elif isinstance(env, dict) and TOKEN_ENV in env:
        del env[TOKEN_ENV]
        if not env:
            del settings["env"]
    # a duplicate semloop entry seen above (kept as is) would make us run twice: drop it
    for event in plan:
        _dedupe(hooks, event)
    return json.dumps(settings, sort_keys=True) != before


def _dedupe(hooks: dict, event: str) -> None:
    seen = False
    kept_groups = []
    for group in hooks.get(event, []):
        entries = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(entries, list):
            kept = []
            for entry in entries:
                if is_semloop_hook(entry):
                    if seen:
                        continue
                    seen = True
                kept.append(entry)
            if not kept:
                continue
            group = {**group, "hooks": kept}
        kept_groups.append(group)
    hooks[event] = kept_groups


def _remove_from_event(hooks: dict, event: str) -> bool:
    groups = hooks.get(event)
    if not isinstance(groups, list):
        return False
    kept_groups, removed = [], False
    for group in groups:
        entries = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(entries, list):
            kept = [e for e in entries if not is_semloop_hook(e)]
            if len(kept) != len(entries):
                removed = True
                if not kept:
                    continue  # the group held only our hook
                group = {**group, "hooks": kept}
        kept_groups.append(group)
    if removed:
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    return removed


def remove_hooks(settings: dict) -> bool:
    """Remove every semloop hook entry (in place) and our token from `env`; drop matcher groups,
    events and objects left empty by that. Returns True if anything changed."""
    from .hook_protocol import TOKEN_ENV

    changed = False
    env = settings.get("env")
    if isinstance(env, dict) and TOKEN_ENV in env:
        del env[TOKEN_ENV]
        if not env:
            del settings["env"]
        changed = True
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return changed
    for event in list(hooks):
        changed |= _remove_from_event(hooks, event)
    if changed and not hooks:
        del settings["hooks"]
    return changed


def _read_settings(path: Path) -> dict:
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); fix it or pass --settings") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return data


def _real_target(path: Path) -> Path:
    """The file to edit: a symlinked settings.json (dotfile setups) is edited at its target, so
    the link stays a link."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _write_settings(path: Path, data: dict, private: bool = False) -> Path | None:
    """Back up the current file to `<name>.bak`, then replace it atomically (at a symlink's
    target). `private`: the file holds a secret, so it is written 0600. Returns the backup."""
    import shutil
    import tempfile

    path = _real_target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
        if private:
            os.chmod(backup, 0o600)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False)
            f.write("\n")
        if private:
            os.chmod(tmp, 0o600)
        elif backup is not None:
            shutil.copymode(backup, tmp)
        else:
            os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return backup


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def edit_settings(path: Path, change: Callable[[dict], bool], private: bool = False) -> tuple[bool, Path | None]:
    """Apply `change` (edits the settings in place, True if it changed anything) to the JSON
    settings file at `path` (missing: an empty object); write the file back only if it changed.
    Returns (changed, backup). Shared by every install target, whatever agent reads the file."""
    settings = _read_settings(path)
    if not change(settings):
        return False, None
    return True, _write_settings(path, settings, private=private)


def install(path: Path, command: str, http: dict | None = None, guidance: bool = False) -> tuple[bool, Path | None]:
    return edit_settings(path, lambda settings: add_hooks(settings, command, http, guidance), private=http is not None)


def uninstall(path: Path) -> tuple[bool, Path | None]:
    return edit_settings(path, remove_hooks)


def chosen_settings_path(args: Any, scope_path: Callable[[str], Path] = settings_path) -> Path:
    """The settings file an install/uninstall command edits: `--settings`, else the file of
    `--scope` as the target's `scope_path` names it."""
    if getattr(args, "settings", None):
        return Path(args.settings).expanduser()
    return scope_path(args.scope)


HTTP_SHARED_MACHINE = ("  warning: http hooks are for a machine no one else logs into: while semloop's server is not "
                       "listening (not started yet, restarted, exited after 30 idle minutes), another local user "
                       "can take port {port}, and Claude Code then sends them every tool call. SessionStart "
                       "checks the port and says so, but cannot stop Claude Code. Command hooks (the default) "
                       "use no port.")


PORTABLE_NOTE = ("  portable: the committed file runs `semloop` from PATH: each user of the project needs "
                 "semloop-guard installed where their shell finds it (else {agent} reports a hook error for "
                 "each event, and the run is not guarded)")


def _install_plan(args: Any) -> tuple[str, dict | None, list[str]]:
    """(command, http or None, notes) for `install`: what to write, and what to tell the user."""
    from . import hook_protocol

    config, db = getattr(args, "config", None), getattr(args, "db", None)
    project = os.getcwd() if getattr(args, "scope", "user") == "project" and not getattr(args, "settings", None) \
        else None
    command = hook_command(config, db, project=project)
    notes = []
    if project is not None:
        notes.append(PORTABLE_NOTE.format(agent="Claude Code"))
    if getattr(args, "hooks", None) != "http":
        return command, None, notes
    if project is not None:
        notes.append("  http hooks need a token of this machine, which a committed file must not hold: "
                     "command hooks written instead")
        return command, None, notes
    if not hook_protocol.enabled():
        notes.append("  SEMLOOP_HOOK_SERVER=0: no server would answer http hooks (detection would be off): "
                     "command hooks written instead")
        return command, None, notes
    try:
        server = hook_protocol.http_config(create=True)
        if server is None:  # pragma: no cover - create=True makes one or raises
            raise OSError("no http config")
    except OSError as exc:
        notes.append(f"  http hooks unavailable ({exc}): command hooks written instead")
        return command, None, notes
    notes.append(HTTP_SHARED_MACHINE.format(port=server["port"]))
    return command, {"url": hook_url(server["port"], config, db), "token": server["token"]}, notes


def cmd_install(args: Any) -> int:
    path = chosen_settings_path(args)
    command, http, notes = _install_plan(args)
    guidance = bool(getattr(args, "guidance", False))
    changed, backup = install(path, command, http, guidance)
    if not changed:
        print(f"semloop: already installed in {path}")
        for note in notes:
            print(note)
        return 0
    events = ["SessionStart (command)", *EVENTS] if http or guidance else list(EVENTS)
    print(f"semloop: {'http' if http else 'command'} hooks for {', '.join(events)} written to {_real_target(path)}")
    if http:
        print(f"  url:     {http['url']} (the warm server; its token is in the file's env, mode 0600)")
        print(f"  start:   {command} (SessionStart starts the server and checks the port)")
    else:
        print(f"  command: {command}")
    for note in notes:
        print(note)
    if guidance:
        print("  guidance: SessionStart adds semloop.guidance() to each session's context")
    if backup:
        print(f"  backup:  {backup}")
    print("  Claude Code reloads its settings files itself: running sessions use the hooks from their "
          "next tool call (list them with /hooks).")
    return 0


def cmd_uninstall(args: Any) -> int:
    path = chosen_settings_path(args)
    changed, backup = uninstall(path)
    if not changed:
        print(f"semloop: no semloop hooks in {path}")
        return 0
    print(f"semloop: hooks removed from {path}" + (f" (backup: {backup})" if backup else ""))
    return 0


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


class InstallTarget(NamedTuple):
    """An agent that `semloop hook|install|uninstall <name>` serves."""

    module: str  # defines cmd_hook, cmd_install, cmd_uninstall; imported only when the command runs
    scope_help: str  # what --scope means for this agent's settings files


# The targets of `hook`, `install` and `uninstall`: the parsers take their choices from here, and
# a command runs the function of the target's module. The first target's scopes are the --scope
# choices; its scope help is shown as is, the others' after it.
INSTALL_TARGETS: dict[str, InstallTarget] = {
    TARGET: InstallTarget(
        "semloop.integrations.claude_code",
        "user: ~/.claude/settings.json; project: .claude/settings.json; local: .claude/settings.local.json"),
    "gemini-cli": InstallTarget(
        "semloop.integrations.gemini_cli",
        "user (~/.gemini/settings.json) or project (.gemini/settings.json)"),
}


def _run_for_target(command: str) -> Callable[[Any], int]:
    """The CLI function of `command` ("cmd_hook", ...): runs that function of `args.target`'s module."""
    def run(args: Any) -> int:
        import importlib

        return getattr(importlib.import_module(INSTALL_TARGETS[args.target].module), command)(args)

    return run


def _scope_help() -> str:
    (first, first_help), *others = ((name, t.scope_help) for name, t in INSTALL_TARGETS.items())
    return f"{first_help} (default: user)" + "".join(f"; for {name}: {text}" for name, text in others)


def add_cli(subparsers: Any) -> None:
    """Register `hook`, `install` and `uninstall`, each taking a target of `INSTALL_TARGETS`."""
    from .gemini_cli import EVENTS as GEMINI_EVENTS  # standard library only

    agents = " or ".join(INSTALL_TARGETS)
    p = subparsers.add_parser("hook", help=f"run as an agent hook ({agents}; reads the event JSON on stdin)",
                              description=f"Run as a hook of {agents}: the agent's event JSON on stdin, the "
                                          "decision JSON on stdout, always exit 0 (fails open).")
    p.add_argument("target", choices=list(INSTALL_TARGETS), help="the agent that runs the hook")
    p.add_argument("--config", metavar="PATH", help="JSON or TOML config file (default: $SEMLOOP_CONFIG)")
    p.add_argument("--db", metavar="PATH", help="state database (default: $SEMLOOP_DB or "
                                                "~/.cache/semloop/state.sqlite3)")
    p.add_argument("--no-server", action="store_true",
                   help="handle the event in this process; never use or start the warm hook server "
                        "(same as SEMLOOP_HOOK_SERVER=0)")
    p.add_argument("--server-timeout", type=float, metavar="SECONDS",
                   help="how long to wait for the hook server's reply before handling the event "
                        "in-process (default 3)")
    p.add_argument("--guidance", action="store_true",
                   help="at SessionStart, add semloop.guidance() (in the config's language) to the "
                        "session's context")
    p.set_defaults(func=_run_for_target("cmd_hook"))

    written = (f"Claude Code (settings.json): one hook entry (all tools) for each of {', '.join(EVENTS)}, and with "
               "--hooks http a SessionStart command hook that starts or checks the warm server; Gemini CLI "
               f"(settings.json): {', '.join(GEMINI_EVENTS)}")
    for name, verb in (("install", "add semloop's hooks to"), ("uninstall", "remove semloop's hooks from")):
        p = subparsers.add_parser(
            name, help=f"{verb} the settings of {agents}",
            description=(f"Add semloop's hooks to an agent's settings. {written}. Other hooks are kept, a .bak copy "
                         "of the settings file is written first, and running it twice changes nothing."
                         if name == "install" else
                         f"Remove semloop's hook entries from the settings of {agents}; every other hook is kept "
                         "and a .bak copy of the settings file is written first."))
        p.add_argument("target", choices=list(INSTALL_TARGETS), help="the agent whose settings to edit")
        p.add_argument("--scope", choices=("user", "project", "local"), default="user", help=_scope_help())
        p.add_argument("--settings", metavar="PATH", help="settings file to edit instead of the scope's")
        if name == "install":
            p.add_argument("--hooks", choices=("command", "http"),
                           help="command (default): a process per event, which talks to the warm server "
                                "over a private Unix socket; http: Claude Code posts each event to the "
                                "warm server on a loopback port (faster, but only for a machine no one "
                                "else logs into: another user who takes the port gets every tool call; "
                                "never for --scope project)")
            p.add_argument("--config", metavar="PATH", help="config file the hook should use")
            p.add_argument("--db", metavar="PATH", help="state database the hook should use")
            p.add_argument("--guidance", action="store_true",
                           help="add semloop.guidance() (a short block on not looping) to each session's "
                                "context at SessionStart (off by default)")
        p.set_defaults(func=_run_for_target(f"cmd_{name}"))
