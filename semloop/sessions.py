"""`semloop sessions list | show ID [--json] | reset ID [--forget]`: what the session store holds.

Reads the same store the hooks write (`--store URL`, else `--db PATH`, else `$SEMLOOP_STORE`, else
the default SQLite file). `reset` lifts a stop the user judges false (the warnings are forgotten,
the loop memory kept, as a new user prompt does); `--forget` deletes the session altogether.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def summary(key: str, state: Any, info: Any = None) -> dict[str, Any]:
    """A stored session as plain JSON-able data: what it holds, never the raw state."""
    from .state import SessionState

    out: dict[str, Any] = {"session": key}
    if not isinstance(state, SessionState):  # absent, or data of another program under this key
        out.update({"steps": 0, "readable": False})
    else:
        window = list(state.window)
        out.update({
            "steps": int(state.steps_seen),
            "warnings": int(state.warnings),
            "stopped": bool(state.stopped),
            "last_signal": state.last_kind or None,
            "last_evidence": [int(i) for i in state.last_related],
            "flagged_calls": len(state.flagged_sigs),
            "clusters": len(state.clusters),
            "tools": dict(state.tool_counts.most_common()),
            "recent": [{"step": int(s.index), "tool": s.tool, "call": s.call_preview, "error": bool(s.is_error)}
                       for s in window[-5:]],
            "readable": True,
        })
    if info is not None:
        out["updated"] = round(float(info.updated), 3)
        out["bytes"] = int(info.size)
    return out


def display_url(url: str) -> str:
    from .store import display_url as strip

    return strip(url)


def _open(args: Any) -> Any:  # open_store answers Any: a URL or an already open store
    from .store import open_store

    return open_store(getattr(args, "store", None), db=getattr(args, "db", None))


def _age(updated: float) -> str:
    seconds = max(0.0, time.time() - updated)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit} ago"
    return f"{seconds:.0f}s ago"


def cmd_sessions(args: Any) -> int:
    store = _open(args)
    try:
        if args.action == "list":
            rows = [summary(info.key, store.load(info.key), info) for info in store.list()]
            if args.json:
                for row in rows:
                    print(json.dumps(row, ensure_ascii=False))
                return 0
            if not rows:
                print(f"no sessions in {display_url(store.url)}")
                return 0
            print(f"{'session':40} {'steps':>6} {'warn':>4} {'stopped':>7}  {'last signal':12} updated")
            for row in rows:
                stopped = "yes" if row.get("stopped") else "no"
                print(f"{row['session'][:40]:40} {row['steps']:>6} {row.get('warnings', '-'):>4} {stopped:>7}  "
                      f"{row.get('last_signal') or '-':12} {_age(row['updated'])}")
            return 0

        from .state import SessionState

        key = args.session
        info = next((i for i in store.list() if i.key == key), None) if args.action == "show" else None
        state = store.load(key)
        if not isinstance(state, SessionState):
            state = None  # absent, or not a semloop session: nothing to show or lift
        if args.action == "show":
            if state is None:
                print(f"semloop: no session {key!r} in {display_url(store.url)}", file=sys.stderr)
                return 1
            row = summary(key, state, info)
            if args.json:
                print(json.dumps(row, ensure_ascii=False))
                return 0
            print(f"session {key} ({display_url(store.url)})")
            print(f"  steps seen: {row['steps']}   warnings: {row['warnings']}   stopped: {row['stopped']}")
            print(f"  last signal: {row['last_signal'] or '-'} (steps {row['last_evidence'] or '-'})")
            print(f"  tools: {', '.join(f'{t} {n}' for t, n in row['tools'].items()) or '-'}")
            for step in row["recent"]:
                print(f"  step {step['step']:>4} {step['tool']}: {step['call'][:100]}"
                      + ("  [error]" if step["error"] else ""))
            return 0

        # reset
        if args.forget:
            gone = store.delete(key)
            print(f"semloop: session {key} {'deleted' if gone else 'not found'}")
            return 0 if gone else 1
        if state is None:
            print(f"semloop: no session {key!r} in {display_url(store.url)}", file=sys.stderr)
            return 1

        def lift(current: Any) -> Any:
            if not isinstance(current, SessionState):
                return None
            current.resume()
            return current

        store.update(key, lift)
        print(f"semloop: session {key}: stop lifted and warnings cleared ({state.steps_seen} steps kept)")
        return 0
    finally:
        store.close()


def add_cli(subparsers: Any) -> None:
    p = subparsers.add_parser("sessions", help="list, show or reset sessions in the state store",
                              description="Inspect the session store the hooks write ($SEMLOOP_STORE, "
                                          "else the SQLite file).")
    p.add_argument("--store", metavar="URL", help="memory://, sqlite:///path, redis://host:port/db "
                                                   "(default: $SEMLOOP_STORE, else the SQLite file)")
    p.add_argument("--db", metavar="PATH", help="SQLite state file (default: $SEMLOOP_DB or "
                                                "~/.cache/semloop/state.sqlite3)")
    actions = p.add_subparsers(dest="action", required=True)
    q = actions.add_parser("list", help="one line per stored session")
    q.add_argument("--json", action="store_true", help="one JSON object per session per line")
    q = actions.add_parser("show", help="what one session holds")
    q.add_argument("session", help="session id (Claude Code: session_id, or session_id/agent_id)")
    q.add_argument("--json", action="store_true", help="one JSON object (integer `steps` field)")
    q = actions.add_parser("reset", help="lift a (false) stop; --forget deletes the session")
    q.add_argument("session")
    q.add_argument("--forget", action="store_true", help="delete the session's state entirely")
    p.set_defaults(func=cmd_sessions)
