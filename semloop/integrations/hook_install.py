"""The installers: `semloop install|uninstall <target>` for every coding-agent CLI, and the
`hook` / `install` / `uninstall` commands themselves (`add_cli`).

What an installer does, whatever the CLI: read its JSON settings (or hooks) file, put one semloop
entry under each event the CLI's dialect hooks (`hook_cli.DIALECTS`), keep every other hook, write
a `.bak` copy first and replace the file atomically (at a symlink's target); running it twice
changes nothing, and `uninstall` removes only semloop's entries. Claude Code's settings have more
(http hooks answered by the warm server, their token in `env`: `planned_hooks`); the other CLIs'
files are written from their dialect's table (`add_dialect_hooks`).

The hook itself (what happens on each event) is `claude_code` (the core) and `hook_cli` (the
translation of each CLI's events); this module is imported only by `install`/`uninstall` and the
argument parser, never on a hook's path.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .claude_code import EVENTS, HOOK_TIMEOUT, HTTP_TIMEOUT, TARGET

if TYPE_CHECKING:  # pragma: no cover
    from .hook_cli import Dialect

# ---------------------------------------------------------------------------------------------
# Claude Code's settings
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


def _install_claude_code(args: Any) -> int:
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


def _uninstall_claude_code(args: Any) -> int:
    path = chosen_settings_path(args)
    changed, backup = uninstall(path)
    if not changed:
        print(f"semloop: no semloop hooks in {path}")
        return 0
    print(f"semloop: hooks removed from {path}" + (f" (backup: {backup})" if backup else ""))
    return 0



# ---------------------------------------------------------------------------------------------
# the other CLIs: written from their dialect's table
# ---------------------------------------------------------------------------------------------


def is_dialect_command(dialect: Dialect, command: Any) -> bool:
    """True for the hook commands `install <dialect.target>` writes."""
    return isinstance(command, str) and bool(
        re.search(rf"\bsemloop\b.*\bhook\s+{re.escape(dialect.target)}(\s|$)", command))


def hooks_path(dialect: Dialect, scope: str, cwd: str | Path | None = None) -> Path:
    """The CLI's hooks file of `scope` (user or project)."""
    if scope == "user":
        return dialect.user_file()
    if scope == "project":
        return Path(cwd or os.getcwd()) / dialect.project_file
    raise ValueError(f"{dialect.label} hooks scope must be user or project, got {scope!r}")


def dialect_hook_command(dialect: Dialect, config: str | None = None, db: str | None = None,
                         project: str | Path | None = None) -> str:
    """`hook_command` for the dialect's target; `project` (a committed file) only where the CLI
    names the project root to its hooks (`dialect.project_var`)."""
    portable = project if dialect.project_var else None
    return hook_command(config, db, target=dialect.target, project=portable, project_var=dialect.project_var)


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
    return isinstance(entry, dict) and is_dialect_command(dialect, entry.get(dialect.command_key))


def dialect_plan(dialect: Dialect, command: str, guidance: bool = False) -> dict[str, dict]:
    """event → the entry `install` writes: every event of the dialect, and with `guidance` its
    session-start event too (whose command adds `--guidance`)."""
    plan = {event: dialect.entry(command, event) for event in dialect.events}
    if guidance and dialect.session_event:
        plan[dialect.session_event] = dialect.entry(f"{command} --guidance", dialect.session_event)
    return plan


def add_dialect_hooks(dialect: Dialect, settings: dict, command: str, guidance: bool = False) -> bool:
    """Our entry under every event of `dialect_plan` (in place): updated if there, never
    duplicated; other hooks are kept; ours under an event the plan leaves out (the session start,
    installed again without --guidance) is removed. Returns True if anything changed."""
    before = json.dumps(settings, sort_keys=True)
    for key, value in dialect.file_header.items():
        settings.setdefault(key, value)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("the hooks file's 'hooks' is not an object")
    plan = dialect_plan(dialect, command, guidance)
    if dialect.session_event and dialect.session_event not in plan and dialect.session_event in hooks:
        _remove_dialect_event(dialect, hooks, dialect.session_event)
    for event, want in plan.items():
        items = hooks.setdefault(event, [])
        if not isinstance(items, list):
            raise ValueError(f"the hooks file's 'hooks.{event}' is not a list")
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


def _remove_dialect_event(dialect: Dialect, hooks: dict, event: str) -> bool:
    """Remove our entries of `event` (in place; groups and the event left empty go too)."""
    from .hook_protocol import without_ours

    items = hooks[event]
    if not isinstance(items, list):
        return False
    kept, dropped = without_ours(items, lambda e: _ours(dialect, e), flat=dialect.layout == "flat")
    if kept:
        hooks[event] = kept
    elif items:
        del hooks[event]
    return dropped


def remove_dialect_hooks(dialect: Dialect, settings: dict) -> bool:
    """Remove every semloop entry (in place); drop groups and events left empty by that."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return False
    changed = False
    for event in list(hooks):
        changed |= _remove_dialect_event(dialect, hooks, event)
    if changed and not hooks:
        del settings["hooks"]
    return changed


def _dialect_path(dialect: Dialect, args: Any) -> Path:
    return chosen_settings_path(args, lambda scope: hooks_path(dialect, scope))


def _install_dialect(dialect: Dialect, args: Any) -> int:
    if getattr(args, "hooks", None) == "http":
        raise ValueError(f"--hooks http is for Claude Code; {dialect.label} runs command hooks only")
    path = _dialect_path(dialect, args)
    project = os.getcwd() if getattr(args, "scope", "user") == "project" and not getattr(args, "settings", None) \
        else None
    command = dialect_hook_command(dialect, getattr(args, "config", None), getattr(args, "db", None), project)
    guidance = bool(getattr(args, "guidance", False))
    if guidance and not dialect.session_event:
        raise ValueError(f"--guidance: {dialect.label} has no hook that adds context at a session's start")
    changed, backup = edit_settings(path, lambda settings: add_dialect_hooks(dialect, settings, command, guidance))
    if not changed:
        print(f"semloop: already installed in {path}")
        return 0
    print(f"semloop: {dialect.label} hooks for {', '.join(dialect_plan(dialect, command, guidance))} written to {path}")
    print(f"  command: {command}")
    if project is not None and dialect.project_var:
        print(PORTABLE_NOTE.format(agent=dialect.label))
    if guidance:
        print(f"  guidance: {dialect.session_event} adds semloop.guidance() to each session's context")
    if backup:
        print(f"  backup:  {backup}")
    if dialect.after_install:
        print(f"  {dialect.after_install}")
    return 0


def _uninstall_dialect(dialect: Dialect, args: Any) -> int:
    path = _dialect_path(dialect, args)
    changed, backup = edit_settings(path, lambda settings: remove_dialect_hooks(dialect, settings))
    if not changed:
        print(f"semloop: no semloop hooks in {path}")
        return 0
    print(f"semloop: hooks removed from {path}" + (f" (backup: {backup})" if backup else ""))
    return 0


def cmd_install(args: Any) -> int:
    from .hook_cli import DIALECTS

    return _install_claude_code(args) if args.target == TARGET else _install_dialect(DIALECTS[args.target], args)


def cmd_uninstall(args: Any) -> int:
    from .hook_cli import DIALECTS

    return _uninstall_claude_code(args) if args.target == TARGET else _uninstall_dialect(DIALECTS[args.target], args)


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def install_targets() -> dict[str, str]:
    """The targets of `hook`, `install` and `uninstall` → what --scope means for each: Claude Code
    first (its scopes are the --scope choices), then every dialect of `hook_cli.DIALECTS`."""
    from .hook_cli import DIALECTS

    targets = {TARGET: "user: ~/.claude/settings.json; project: .claude/settings.json; local: "
                       ".claude/settings.local.json"}
    for d in DIALECTS.values():
        if not d.native:
            targets[d.target] = f"user ({_display(d.user_file())}) or project ({d.project_file})"
    return targets


def _display(path: Path) -> str:
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home):] if text.startswith(home + os.sep) else text


def _scope_help(targets: dict[str, str]) -> str:
    (first, first_help), *others = targets.items()
    return f"{first_help} (default: user)" + "".join(f"; for {name}: {text}" for name, text in others)


def _hook(args: Any) -> int:
    from .hook_cli import cmd_hook

    return cmd_hook(args)


def add_cli(subparsers: Any) -> None:
    """Register `hook`, `install` and `uninstall`, each taking a target of `install_targets`."""
    targets = install_targets()
    agents = ", ".join(targets)
    p = subparsers.add_parser("hook", help=f"run as an agent hook ({agents}; reads the event JSON on stdin)",
                              description=f"Run as a hook of {agents}: the agent's event JSON on stdin, the "
                                          "decision JSON on stdout, always exit 0 (fails open).")
    p.add_argument("target", choices=list(targets), help="the agent that runs the hook")
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
                   help="at the session's start, add semloop.guidance() (in the config's language) to "
                        "the session's context")
    p.set_defaults(func=_hook)

    from .hook_cli import DIALECTS

    others = "; ".join(f"{d.label}: {', '.join(d.events)}" for d in DIALECTS.values() if not d.native)
    written = (f"Claude Code (settings.json): one hook entry (all tools) for each of {', '.join(EVENTS)}, and with "
               "--hooks http a SessionStart command hook that starts or checks the warm server; the other CLIs, "
               f"one entry for each of their events — {others}")
    for name, verb in (("install", "add semloop's hooks to"), ("uninstall", "remove semloop's hooks from")):
        p = subparsers.add_parser(
            name, help=f"{verb} the settings of {agents}",
            description=(f"Add semloop's hooks to an agent's settings. {written}. Other hooks are kept, a .bak copy "
                         "of the settings file is written first, and running it twice changes nothing."
                         if name == "install" else
                         f"Remove semloop's hook entries from the settings of {agents}; every other hook is kept "
                         "and a .bak copy of the settings file is written first."))
        p.add_argument("target", choices=list(targets), help="the agent whose settings to edit")
        p.add_argument("--scope", choices=("user", "project", "local"), default="user", help=_scope_help(targets))
        p.add_argument("--settings", metavar="PATH", help="settings file to edit instead of the scope's")
        if name == "install":
            p.add_argument("--hooks", choices=("command", "http"),
                           help="command (default): a process per event, which talks to the warm server "
                                "over a private Unix socket; http (Claude Code only): Claude Code posts each "
                                "event to the warm server on a loopback port (faster, but only for a machine "
                                "no one else logs into: another user who takes the port gets every tool call; "
                                "never for --scope project)")
            p.add_argument("--config", metavar="PATH", help="config file the hook should use")
            p.add_argument("--db", metavar="PATH", help="state database the hook should use")
            p.add_argument("--guidance", action="store_true",
                           help="add semloop.guidance() (a short block on not looping) to each session's "
                                "context at its start, where the CLI lets a hook do that (off by default)")
        p.set_defaults(func=cmd_install if name == "install" else cmd_uninstall)
