"""Reading recorded trajectories: semloop's JSONL trace format, Anthropic Messages API message
lists, OpenAI chat messages with tool_calls, and Claude Code session transcripts; the spans, observations
and runs of observability tools (OpenTelemetry GenAI, OpenInference, Langfuse, LangSmith) are read
by `semloop.observability`.

Every reader returns `Trace` objects; bad input raises `TraceError` naming the line and the field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

FORMATS = ("auto", "jsonl", "anthropic", "openai", "claude-code", "otel", "openinference", "langfuse", "langsmith")


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
                on_skip=None, per_agent: bool = False) -> list[Trace]:
    """All traces in `path`. With `skip_invalid`, bad lines are passed to `on_skip(error)` and skipped."""
    return list(iter_traces(path, format, skip_invalid, on_skip, per_agent))


def iter_traces(path: str | Path, format: str = "auto", skip_invalid: bool = False,
                on_skip=None, per_agent: bool = False) -> Iterator[Trace]:
    """Traces in `path`, lazily. Bad input raises `TraceError` ("file:line: field: what is wrong");
    with `skip_invalid`, the bad line (or message) goes to `on_skip(error)` and reading goes on.
    `per_agent`: span formats give each agent invocation a trace of its own (see `semloop.observability`)."""
    if format not in FORMATS:
        raise TraceError(f"unknown format {format!r}; choose from {FORMATS}")
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    from . import observability

    if format == "auto":
        format = observability.detect(text) or _detect(text)
    if format in observability.FORMATS:
        yield from observability.read(path, text, format, _Skipper(skip_invalid, on_skip), per_agent)
        return
    if format == "jsonl":
        yield from _read_jsonl(path, text, skip_invalid, on_skip)
        return
    skip = _Skipper(skip_invalid, on_skip)
    if format == "claude-code":
        yield _from_claude_code(path, text, skip)
        return
    messages = _message_list(path, text, format, skip)
    convert = _from_anthropic if format == "anthropic" else _from_openai
    yield convert(path.stem, messages, skip)


class _Skipper:
    """Raise a `TraceError`, or hand it to `on_skip` and carry on when skipping bad input."""

    def __init__(self, skip_invalid: bool, on_skip) -> None:
        self.skip_invalid, self.on_skip = skip_invalid, on_skip

    def __call__(self, error: TraceError) -> None:
        if not self.skip_invalid:
            raise error
        if self.on_skip:
            self.on_skip(error)


MAX_DEPTH = 100  # nesting the guard's recursive feature code handles with room to spare


def _check_depth(value: Any, where: str) -> None:
    """Reject values nested deeper than MAX_DEPTH (iteratively: deep input must not recurse)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                raise TraceError(f"{where} is nested deeper than {MAX_DEPTH} levels")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def _loads(text: str, where: str) -> Any:
    """json.loads with every failure as a TraceError naming `where`: syntax errors, nesting too
    deep for the parser, integers longer than Python's 4,300-digit conversion limit."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise TraceError(f"{where}: invalid JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        raise TraceError(f"{where}: invalid JSON: {str(exc).split(';')[0]}") from None


# -- detection -------------------------------------------------------------------------------


def _try_loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return _INVALID


_INVALID = object()


def _detect(text: str) -> str:
    stripped = text.lstrip()
    first = _try_loads(stripped.split("\n", 1)[0])
    if isinstance(first, dict):
        if "steps" in first:
            return "jsonl"
        if first.get("type") in ("user", "assistant", "summary", "system") and ("sessionId" in first or "message" in first):
            return "claude-code"
    data = _try_loads(stripped)
    if data is _INVALID and isinstance(first, dict) and "role" in first:  # JSONL, one message per line
        data = [_try_loads(line) for line in stripped.splitlines()]
    elif data is _INVALID:  # let the reader report the bad line
        return "anthropic" if stripped.startswith("[") else "jsonl"
    if isinstance(data, dict):
        data = data.get("messages", data)
    if isinstance(data, list):
        for message in data:
            if isinstance(message, dict) and (message.get("tool_calls") or message.get("role") == "tool"):
                return "openai"
        return "anthropic"
    return "jsonl"


def _message_list(path: Path, text: str, format: str, skip: _Skipper) -> list[tuple[str, Any]]:
    """(where, message) pairs from a JSON document (a list, or an object with "messages") or from
    JSONL with one message per line. `where` is "file:line" for JSONL, "file: messages[i]" else."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise TraceError(f"{path}: invalid JSON: nested too deeply") from None
    except json.JSONDecodeError:
        data = _INVALID  # perhaps JSONL: one message per line
    except ValueError as exc:  # an integer past Python's digit limit: name its line
        digits = re.search(r"\d{4300,}", text)
        line = text.count("\n", 0, digits.start()) + 1 if digits else None
        raise TraceError(f"{path}:{line}: invalid JSON: {str(exc).split(';')[0]}") from None
    if data is not _INVALID:
        if isinstance(data, dict) and "messages" in data:
            data = data["messages"]
        if not isinstance(data, list):
            raise TraceError(f"{path}: expected a list of messages for format {format!r}, "
                             f"got {type(data).__name__}")
        return [(f"{path}: messages[{i}]", m) for i, m in enumerate(data)]
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append((f"{path}:{n}: message", _loads(line, f"{path}:{n}")))
            except TraceError as exc:
                skip(exc)
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
        obj = _loads(line, where)
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
        for key in ("input", "output"):
            _check_depth(raw.get(key), f"{where}: steps[{i}].{key}")
        steps.append(Step(raw["tool"], raw["input"], raw.get("output"), is_error))
    label = obj.get("label")
    if label is not None and not isinstance(label, dict):
        raise TraceError(f"{where}: field 'label' must be an object")
    meta = {k: v for k, v in obj.items() if k not in ("id", "steps", "label")}
    return Trace(str(obj["id"]), tuple(steps), label, meta)


# -- Anthropic Messages API ------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _call_id(value: Any, where: str) -> str:
    """Tool-call ids pair a call with its result: they must be strings (or numbers)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TraceError(f"{where} must be a string, got {_type_name(value)}")
    return str(value)


def _blocks(content: Any, where: str) -> list[dict]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise TraceError(f"{where}.content must be a string or a list of content blocks, got {_type_name(content)}")
    return [b for b in content if isinstance(b, dict)]


def _from_anthropic(trace_id: str, messages: list[tuple[str, Any]], skip: _Skipper) -> Trace:
    calls: dict[str, int] = {}
    steps: list[dict] = []
    for where, m in messages:
        if not isinstance(m, dict):
            skip(TraceError(f"{where} must be an object, got {_type_name(m)}"))
            continue
        try:
            found = []  # validate the whole message before taking any of it
            for j, block in enumerate(_blocks(m.get("content"), where)):
                at = f"{where}.content[{j}]"
                if block.get("type") == "tool_use":
                    name = block.get("name", "?")
                    if not isinstance(name, str):
                        raise TraceError(f"{at}.name must be a string, got {_type_name(name)}")
                    _check_depth(block.get("input"), f"{at}.input")
                    found.append(("use", _call_id(block.get("id", ""), f"{at}.id"), name, block))
                elif block.get("type") == "tool_result":
                    _check_depth(block.get("content"), f"{at}.content")
                    found.append(("result", _call_id(block.get("tool_use_id", ""), f"{at}.tool_use_id"), None, block))
        except TraceError as exc:
            skip(exc)
            continue
        for kind, call_id, name, block in found:
            if kind == "use":
                calls[call_id] = len(steps)
                steps.append({"tool": name, "input": block.get("input", {}), "output": None, "is_error": False})
            elif call_id in calls:
                step = steps[calls[call_id]]
                step["output"] = block.get("content")  # text or content blocks: the guard renders both
                step["is_error"] = bool(block.get("is_error", False))
    return Trace(trace_id, tuple(Step(**s) for s in steps))


# -- OpenAI chat completions -----------------------------------------------------------------


def _from_openai(trace_id: str, messages: list[tuple[str, Any]], skip: _Skipper) -> Trace:
    calls: dict[str, int] = {}
    steps: list[dict] = []
    for where, m in messages:
        if not isinstance(m, dict):
            skip(TraceError(f"{where} must be an object, got {_type_name(m)}"))
            continue
        try:
            found = []
            tool_calls = m.get("tool_calls") or []
            if not isinstance(tool_calls, list):
                raise TraceError(f"{where}.tool_calls must be a list, got {_type_name(tool_calls)}")
            for j, call in enumerate(tool_calls):
                at = f"{where}.tool_calls[{j}]"
                if not isinstance(call, dict):
                    raise TraceError(f"{at} must be an object, got {_type_name(call)}")
                fn = call.get("function", {})
                if not isinstance(fn, dict):
                    raise TraceError(f"{at}.function must be an object, got {_type_name(fn)}")
                name = fn.get("name", "?")
                if not isinstance(name, str):
                    raise TraceError(f"{at}.function.name must be a string, got {_type_name(name)}")
                args = fn.get("arguments", "")
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except (ValueError, RecursionError):
                        pass  # models do emit invalid JSON arguments; keep the raw string
                _check_depth(args, f"{at}.function.arguments")
                found.append((_call_id(call.get("id", ""), f"{at}.id"), name, args))
            result_id = None
            if m.get("role") == "tool":
                result_id = _call_id(m.get("tool_call_id", ""), f"{where}.tool_call_id")
                _check_depth(m.get("content"), f"{where}.content")
        except TraceError as exc:
            skip(exc)
            continue
        for call_id, name, args in found:
            calls[call_id] = len(steps)
            steps.append({"tool": name, "input": args, "output": None, "is_error": False})
        if result_id is not None and result_id in calls:
            steps[calls[result_id]]["output"] = m.get("content")
    return Trace(trace_id, tuple(Step(**s) for s in steps))


# -- Claude Code session transcript ----------------------------------------------------------


def _from_claude_code(path: Path, text: str, skip: _Skipper) -> Trace:
    messages = []
    session = path.stem
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = _loads(line, f"{path}:{n}")
        except TraceError as exc:
            skip(exc)
            continue
        if isinstance(entry, dict) and isinstance(entry.get("message"), dict):
            sid = entry.get("sessionId", session)
            session = sid if isinstance(sid, str) else session
            messages.append((f"{path}:{n}: message", entry["message"]))
    return _from_anthropic(str(session), messages, skip)
