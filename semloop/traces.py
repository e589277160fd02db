"""Reading recorded trajectories: semloop's JSONL trace format, Anthropic Messages API message
lists, OpenAI chat messages with tool_calls, and Claude Code session transcripts.

Every reader returns `Trace` objects; bad input raises `TraceError` naming the line and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

FORMATS = ("auto", "jsonl", "anthropic", "openai", "claude-code")


class TraceError(ValueError):
    """Invalid trace input; the message names the file line and the field."""


@dataclass(frozen=True)
class Step:
    tool: str
    input: Any
    output: Any = None
    is_error: bool = False


@dataclass(frozen=True)
class Trace:
    id: str
    steps: tuple[Step, ...]
    label: dict | None = None
    meta: dict = field(default_factory=dict)


def load_traces(path: str | Path, format: str = "auto", skip_invalid: bool = False,
                on_skip=None) -> list[Trace]:
    """All traces in `path`. With `skip_invalid`, bad lines are passed to `on_skip(error)` and skipped."""
    return list(iter_traces(path, format, skip_invalid, on_skip))


def iter_traces(path: str | Path, format: str = "auto", skip_invalid: bool = False,
                on_skip=None) -> Iterator[Trace]:
    if format not in FORMATS:
        raise TraceError(f"unknown format {format!r}; choose from {FORMATS}")
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if format == "auto":
        format = _detect(text)
    if format == "jsonl":
        yield from _read_jsonl(path, text, skip_invalid, on_skip)
    elif format == "claude-code":
        yield _from_claude_code(path, text)
    else:
        data = _json_or_lines(path, text)
        convert = _from_anthropic if format == "anthropic" else _from_openai
        if isinstance(data, dict) and "messages" in data:
            data = data["messages"]
        if not isinstance(data, list):
            raise TraceError(f"{path}: expected a list of messages for format {format!r}")
        yield convert(path.stem, data)


# -- detection -------------------------------------------------------------------------------


def _detect(text: str) -> str:
    stripped = text.lstrip()
    first_line = stripped.split("\n", 1)[0]
    try:
        first = json.loads(first_line)
    except json.JSONDecodeError:
        first = None
    if isinstance(first, dict):
        if "steps" in first:
            return "jsonl"
        if first.get("type") in ("user", "assistant", "summary", "system") and ("sessionId" in first or "message" in first):
            return "claude-code"
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError:
        return "jsonl"  # let the JSONL reader report the bad line
    if isinstance(data, dict):
        data = data.get("messages", data)
    if isinstance(data, list):
        for message in data:
            if isinstance(message, dict) and (message.get("tool_calls") or message.get("role") == "tool"):
                return "openai"
        return "anthropic"
    return "jsonl"


def _json_or_lines(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise TraceError(f"{path}:{n}: invalid JSON: {exc.msg}") from None
        return rows


# -- semloop JSONL ---------------------------------------------------------------------------


def _read_jsonl(path: Path, text: str, skip_invalid: bool, on_skip) -> Iterator[Trace]:
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield parse_trace(line, f"{path}:{n}")
        except TraceError as exc:
            if not skip_invalid:
                raise
            if on_skip:
                on_skip(exc)


def parse_trace(line: str | dict, where: str = "<trace>") -> Trace:
    """One trace from a JSONL line (or an already-parsed dict), validated field by field."""
    if isinstance(line, str):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    else:
        obj = line
    if not isinstance(obj, dict):
        raise TraceError(f"{where}: a trace must be a JSON object, got {type(obj).__name__}")
    if "id" not in obj:
        raise TraceError(f"{where}: missing field 'id'")
    if not isinstance(obj["id"], (str, int)) or isinstance(obj["id"], bool):
        raise TraceError(f"{where}: field 'id' must be a string, got {type(obj['id']).__name__}")
    if "steps" not in obj:
        raise TraceError(f"{where}: missing field 'steps'")
    if not isinstance(obj["steps"], list):
        raise TraceError(f"{where}: field 'steps' must be a list, got {type(obj['steps']).__name__}")
    steps = []
    for i, raw in enumerate(obj["steps"]):
        if not isinstance(raw, dict):
            raise TraceError(f"{where}: steps[{i}] must be an object, got {type(raw).__name__}")
        if "tool" not in raw:
            raise TraceError(f"{where}: steps[{i}]: missing field 'tool'")
        if not isinstance(raw["tool"], str):
            raise TraceError(f"{where}: steps[{i}].tool must be a string, got {type(raw['tool']).__name__}")
        if "input" not in raw:
            raise TraceError(f"{where}: steps[{i}]: missing field 'input'")
        is_error = raw.get("is_error", False)
        if is_error is None:
            is_error = False
        if not isinstance(is_error, bool):
            raise TraceError(f"{where}: steps[{i}].is_error must be true/false, got {is_error!r}")
        steps.append(Step(raw["tool"], raw["input"], raw.get("output"), is_error))
    label = obj.get("label")
    if label is not None and not isinstance(label, dict):
        raise TraceError(f"{where}: field 'label' must be an object")
    meta = {k: v for k, v in obj.items() if k not in ("id", "steps", "label")}
    return Trace(str(obj["id"]), tuple(steps), label, meta)


# -- Anthropic Messages API ------------------------------------------------------------------


def _blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _from_anthropic(trace_id: str, messages: list) -> Trace:
    calls: dict[str, int] = {}
    steps: list[dict] = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        for block in _blocks(m.get("content")):
            if block.get("type") == "tool_use":
                calls[block.get("id", "")] = len(steps)
                steps.append({"tool": block.get("name", "?"), "input": block.get("input", {}), "output": None,
                              "is_error": False})
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in calls:
                step = steps[calls[block["tool_use_id"]]]
                step["output"] = block.get("content")  # text or content blocks: the guard renders both
                step["is_error"] = bool(block.get("is_error", False))
    return Trace(trace_id, tuple(Step(**s) for s in steps))


# -- OpenAI chat completions -----------------------------------------------------------------


def _from_openai(trace_id: str, messages: list) -> Trace:
    calls: dict[str, int] = {}
    steps: list[dict] = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        for call in m.get("tool_calls") or []:
            fn = call.get("function", {})
            args = fn.get("arguments", "")
            try:
                args = json.loads(args) if isinstance(args, str) else args
            except json.JSONDecodeError:
                pass  # models do emit invalid JSON arguments; keep the raw string
            calls[call.get("id", "")] = len(steps)
            steps.append({"tool": fn.get("name", "?"), "input": args, "output": None, "is_error": False})
        if m.get("role") == "tool" and m.get("tool_call_id") in calls:
            steps[calls[m["tool_call_id"]]]["output"] = m.get("content")
    return Trace(trace_id, tuple(Step(**s) for s in steps))


# -- Claude Code session transcript ----------------------------------------------------------


def _from_claude_code(path: Path, text: str) -> Trace:
    messages = []
    session = path.stem
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{path}:{n}: invalid JSON: {exc.msg}") from None
        if isinstance(entry, dict) and isinstance(entry.get("message"), dict):
            session = entry.get("sessionId", session)
            messages.append(entry["message"])
    return _from_anthropic(str(session), messages)
