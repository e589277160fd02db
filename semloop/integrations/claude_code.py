"""Claude Code hooks: `semloop hook claude-code`, `semloop install|uninstall claude-code`.

Claude Code runs the hook command once per event, as a new process, with the event JSON on stdin:

- PreToolUse: `LoopGuard.check` (hashing only). A call that continues a loop already warned about
  to the limit is denied (`permissionDecision: "deny"`); the reason goes to Claude, which carries
  on with something else.
- PostToolUse / PostToolUseFailure: `LoopGuard.record` with the normalized tool response (or the
  error text). "warn" adds the factual message as `additionalContext` next to the tool result.
  "stop" ends the turn (`continue: false`, `stopReason` shown to the user), and also puts the
  message in the context so Claude knows why, should the user ask it to go on.
- UserPromptSubmit: a new prompt from the user after a stop lifts the stop (the human decided);
  the loop memory is kept, so a repeat of the same loop is flagged again at once.

State lives in SQLite (`store.SessionStore`), one row per `session_id` (+ `agent_id` for
subagents). The hook always exits 0 and prints one JSON object; any internal error prints `{}`
(allow) and one line on stderr: a broken detector never blocks the agent.

This module imports only the standard library at import time; semloop's core (numpy) and the
embedding model are loaded inside the hook, only when needed. `cmd_hook` first hands the event to
the warm `semloop hook-server` (see `hook_server`: a Unix socket, started on demand, which runs
this same `run_hook`), and handles it in-process when there is none yet or anything goes wrong.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

TARGET = "claude-code"
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
EVENTS = (*TOOL_EVENTS, "UserPromptSubmit")
HOOK_TIMEOUT = 15  # seconds; Claude Code kills a slower hook and goes on (non-blocking error)

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
    import hashlib

    return "sha256:" + hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:24]


def session_key(event: dict) -> str:
    """`session_id`, plus `agent_id` for events fired inside a subagent (its own loop state)."""
    session = event.get("session_id")
    if not isinstance(session, str) or not session:
        raise ValueError("hook input has no session_id")
    agent = event.get("agent_id")
    return f"{session}/{agent}" if isinstance(agent, str) and agent else session


def _store(db: str | None):
    from .. import __version__
    from ..state import STATE_FORMAT
    from .store import SessionStore

    timeout = float(os.environ.get("SEMLOOP_DB_TIMEOUT", "5"))
    return SessionStore(db, version=f"semloop-{__version__}-state{STATE_FORMAT}", timeout=timeout)


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


def handle_event(event: dict, *, config_path: str | None = None, db: str | None = None) -> dict:
    """One hook event → the JSON object to print. May raise; `run_hook` fails open."""
    if not isinstance(event, dict):
        raise ValueError("hook input is not a JSON object")
    name = event.get("hook_event_name")
    if name not in EVENTS:
        return {}
    key = session_key(event)

    if name == "UserPromptSubmit":
        return _resume(key, db)

    tool = str(event.get("tool_name") or "")
    tool_input = event.get("tool_input")  # Bash's free-text `description`: see features.COMMENTARY_KEYS

    if name == "PreToolUse":
        store = _store(db)
        try:
            state = store.load(key)
        finally:
            store.close()
        if state is None:  # nothing recorded in this session yet: nothing can be looping
            return {}
        from ..guard import LoopGuard

        guard = LoopGuard(_load_config(config_path))
        guard.state = state
        verdict = guard.check(tool, tool_input)
        if verdict.action != "stop":
            return {}
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": verdict.message}}

    # PostToolUse / PostToolUseFailure
    if name == "PostToolUseFailure":
        if event.get("is_interrupt"):  # the user pressed Esc: not the agent repeating itself
            return {}
        output, is_error = str(event.get("error") or "tool call failed"), True
        if "semloop blocked this" in output:  # our own PreToolUse denial, already counted
            return {}
    else:
        output, is_error = normalize_response(tool, event.get("tool_response")), False

    from ..guard import LoopGuard

    guard = LoopGuard(_load_config(config_path))
    _prewarm(guard, tool, tool_input)  # embed before taking the lock: parallel hooks wait less
    store = _store(db)
    try:
        with store.transaction(key) as txn:
            if txn.state is not None:
                guard.state = txn.state
            verdict = guard.record(tool, tool_input, output, is_error=is_error)
            if verdict.error is not None:  # the detector failed open: keep the stored state as it was
                txn.discard()
            else:
                txn.state = guard.state
    finally:
        store.close()
    if verdict.error is not None:
        print(f"semloop: detector error, allowed: {verdict.error}", file=sys.stderr)
    if verdict.action == "warn" and verdict.message:
        return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": verdict.message}}
    if verdict.action == "stop":
        message = verdict.message or "semloop stopped this run: the agent repeated the same action without progress."
        return {"continue": False, "stopReason": message, "suppressOutput": False,
                "hookSpecificOutput": {"hookEventName": name, "additionalContext": message}}
    return {}


def _prewarm(guard: Any, tool: str, tool_input: Any) -> None:
    """Give the guard its embedder, with this call's vector already computed (cached)."""
    cfg = guard.config
    if cfg.detector != "semantic":
        return
    from .. import features
    from ..embeddings import load_embedder

    guard.embedder = load_embedder(cfg.embedding, cfg.model_path)
    guard.embedder([features.call_text(tool, features.call_values(tool_input), cfg.max_text_chars)])


def _resume(key: str, db: str | None) -> dict:
    """A user prompt after a stop: lift the stop and the warning count, keep the loop memory."""
    store = _store(db)
    try:
        state = store.load(key)
        if state is None or not state.stopped:  # mid-loop warnings stand: the prompt may be unrelated
            return {}
        with store.transaction(key) as txn:
            if txn.state is not None and txn.state.stopped:
                txn.state.resume()
    finally:
        store.close()
    return {}


def run_hook(stdin_text: str, *, config_path: str | None = None, db: str | None = None,
             post_lock: Any = None) -> str:
    """The hook's stdout for one event. Never raises: errors give `{}` and a line on stderr.
    `post_lock` (the hook server's): held while a PostToolUse(Failure) event is handled."""
    try:
        event = json.loads(stdin_text)
        if post_lock is not None and isinstance(event, dict) and event.get("hook_event_name") in TOOL_EVENTS[1:]:
            with post_lock:
                out = handle_event(event, config_path=config_path, db=db)
        else:
            out = handle_event(event, config_path=config_path, db=db)
    except Exception as exc:  # fail open, whatever happened
        detail = f"{type(exc).__name__}: {exc}".replace("\n", " ")
        print(f"semloop: hook error, allowing the call: {detail[:300]}", file=sys.stderr)
        out = {}
    return json.dumps(out, ensure_ascii=False)


def cmd_hook(args: Any) -> int:
    """Read the event, have the warm hook server handle it (see `hook_server`), or — no server
    yet, disabled, or any problem with it — handle it in this process. Always exits 0."""
    try:
        data = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    except Exception as exc:  # pragma: no cover - stdin closed or unreadable
        print(f"semloop: hook error, allowing the call: cannot read stdin: {exc}", file=sys.stderr)
        data = ""
    config_path, db = getattr(args, "config", None), getattr(args, "db", None)
    reply = None
    if not getattr(args, "no_server", False):
        try:
            from . import hook_server

            if hook_server.enabled():
                reply = hook_server.request(data, config_path=config_path, db=db,
                                            timeout=getattr(args, "server_timeout", None)
                                            or hook_server.DEFAULT_CLIENT_TIMEOUT)
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
        out = run_hook(data, config_path=config_path, db=db)
    try:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    except Exception:  # pragma: no cover - Claude Code went away
        pass
    return 0


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


def hook_command(config: str | None = None, db: str | None = None) -> str:
    """The command written into settings.json: this environment's `semloop` script (absolute), or
    `<python> -m semloop` when there is none, so the hook runs with this install whatever PATH is."""
    script = Path(sys.executable).parent / ("semloop.exe" if os.name == "nt" else "semloop")
    if script.is_file():
        parts = [str(script)]
    else:
        parts = [sys.executable, "-m", "semloop"]
    parts += ["hook", TARGET]
    if config:
        parts += ["--config", str(Path(config).expanduser().resolve())]
    if db:
        parts += ["--db", str(Path(db).expanduser().resolve())]
    return " ".join(shlex.quote(p) for p in parts)


def _our_group(event: str, command: str) -> dict:
    entry = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT}
    if event == "UserPromptSubmit":  # no matcher for prompt events
        return {"hooks": [entry]}
    return {"matcher": "*", "hooks": [entry]}


def add_hooks(settings: dict, command: str) -> bool:
    """Add our hook to each event of `settings` (in place). Existing hooks are kept; an existing
    semloop entry is updated in place, never duplicated. Returns True if anything changed."""
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("settings 'hooks' is not an object")
    changed = False
    for event in EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ValueError(f"settings 'hooks.{event}' is not a list")
        found = False
        for group in groups:
            for entry in (group.get("hooks") or []) if isinstance(group, dict) else []:
                if isinstance(entry, dict) and is_semloop_command(entry.get("command")):
                    if found:
                        continue
                    found = True
                    if entry.get("command") != command:
                        entry["command"] = command
                        changed = True
        if not found:
            groups.append(_our_group(event, command))
            changed = True
    return changed


def remove_hooks(settings: dict) -> bool:
    """Remove every semloop hook entry (in place); drop matcher groups and events left empty by
    that, and `hooks` itself if it ends up empty. Returns True if anything changed."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return False
    changed = False
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups, removed = [], False
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(entries, list):
                kept = [e for e in entries if not (isinstance(e, dict) and is_semloop_command(e.get("command")))]
                if len(kept) != len(entries):
                    removed = True
                    if not kept:
                        continue  # the group held only our hook
                    group = {**group, "hooks": kept}
            kept_groups.append(group)
        if removed:
            changed = True
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
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


def _write_settings(path: Path, data: dict) -> Path | None:
    """Back up the current file to `<name>.bak`, then replace it atomically. Returns the backup."""
    import shutil
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False)
            f.write("\n")
        if backup is not None:
            shutil.copymode(backup, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return backup


def install(path: Path, command: str) -> tuple[bool, Path | None]:
    settings = _read_settings(path)
    if not add_hooks(settings, command):
        return False, None
    return True, _write_settings(path, settings)


def uninstall(path: Path) -> tuple[bool, Path | None]:
    if not path.exists():
        return False, None
    settings = _read_settings(path)
    if not remove_hooks(settings):
        return False, None
    return True, _write_settings(path, settings)


def _target_path(args: Any) -> Path:
    if getattr(args, "settings", None):
        return Path(args.settings).expanduser()
    return settings_path(args.scope)


def cmd_install(args: Any) -> int:
    path = _target_path(args)
    command = hook_command(getattr(args, "config", None), getattr(args, "db", None))
    changed, backup = install(path, command)
    if not changed:
        print(f"semloop: already installed in {path}")
        return 0
    print(f"semloop: hooks for {', '.join(EVENTS)} added to {path}")
    print(f"  command: {command}")
    if backup:
        print(f"  backup:  {backup}")
    print("  Claude Code reloads its settings files itself: running sessions use the hooks from their "
          "next tool call (list them with /hooks).")
    return 0


def cmd_uninstall(args: Any) -> int:
    path = _target_path(args)
    changed, backup = uninstall(path)
    if not changed:
        print(f"semloop: no semloop hooks in {path}")
        return 0
    print(f"semloop: hooks removed from {path}" + (f" (backup: {backup})" if backup else ""))
    return 0


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def add_cli(subparsers: Any) -> None:
    """Register `hook`, `install` and `uninstall` (each taking the target `claude-code`)."""
    p = subparsers.add_parser("hook", help="run as an agent hook (reads the event JSON on stdin)",
                              description="Run as a Claude Code hook: event JSON on stdin, decision JSON "
                                          "on stdout, always exit 0 (fails open).")
    p.add_argument("target", choices=[TARGET])
    p.add_argument("--config", metavar="PATH", help="JSON or TOML config file (default: $SEMLOOP_CONFIG)")
    p.add_argument("--db", metavar="PATH", help="state database (default: $SEMLOOP_DB or "
                                                "~/.cache/semloop/state.sqlite3)")
    p.add_argument("--no-server", action="store_true",
                   help="handle the event in this process; never use or start the warm hook server "
                        "(same as SEMLOOP_HOOK_SERVER=0)")
    p.add_argument("--server-timeout", type=float, metavar="SECONDS",
                   help="how long to wait for the hook server's reply before handling the event "
                        "in-process (default 3)")
    p.set_defaults(func=cmd_hook)

    from .hook_server import add_cli as add_server_cli

    add_server_cli(subparsers)

    for name, func, verb in (("install", cmd_install, "add semloop's hooks to"),
                             ("uninstall", cmd_uninstall, "remove semloop's hooks from")):
        p = subparsers.add_parser(name, help=f"{verb} Claude Code settings")
        p.add_argument("target", choices=[TARGET])
        p.add_argument("--scope", choices=("user", "project", "local"), default="user",
                       help="user: ~/.claude/settings.json; project: .claude/settings.json; "
                            "local: .claude/settings.local.json (default: user)")
        p.add_argument("--settings", metavar="PATH", help="settings file to edit instead of the scope's")
        if name == "install":
            p.add_argument("--config", metavar="PATH", help="config file the hook should use")
            p.add_argument("--db", metavar="PATH", help="state database the hook should use")
        p.set_defaults(func=func)
