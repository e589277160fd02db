"""Reading recorded trajectories: semloop's JSONL trace format, Anthropic Messages API message
lists, OpenAI chat messages with tool_calls, and Claude Code session transcripts; the spans, observations
and runs of observability tools (OpenTelemetry GenAI, OpenInference, Langfuse, LangSmith) are read
by `semloop.observability`.

Every reader returns `Trace` objects; bad input raises `TraceError` naming the file, the line (or
the place in the document) and the field. What is read as what:

- semloop traces: one JSON object per line (JSONL), a JSON array of trace objects, or one trace
  object (pretty-printed or not). A trace's `label`, when present, is checked: `loop` true/false,
  `onset` a step index (null when no loop), `kind` one of `LABEL_KINDS` (or null).
- a message list (a JSON array, an object with "messages", or one message per line): every
  message must be an object with a "role"; OpenAI when a message has tool_calls or role "tool",
  Anthropic otherwise. A conversation without tool calls has 0 steps.
- a Claude Code transcript: JSONL entries of type user/assistant/summary/system.
- an empty file (or one of blank lines, or `[]`) is an error, like a file semloop cannot place:
  never "0 steps, no loop" for junk.
- text that is not UTF-8, and lone UTF-16 surrogates in JSON strings (`"\udcff"`), are read as
  U+FFFD; a leading byte-order mark is dropped.

Formats are a registry (`TraceFormat`): auto-detection asks each one, in order, whether the input
looks like it; adding a format is one more entry in `_REGISTRY`.
"""

from __future__ import annotations

import glob
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any


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
    label: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


OnSkip = Callable[[TraceError], object]
"""What `on_skip` is called with: the error of the bad line (or message, or file) skipped."""

STDIN = "-"
"""The path that means standard input (`semloop scan -`)."""


def load_traces(path: str | Path, format: str = "auto", skip_invalid: bool = False,
                on_skip: OnSkip | None = None, per_agent: bool = False) -> list[Trace]:
    """All traces in `path`. With `skip_invalid`, bad lines are passed to `on_skip(error)` and skipped."""
    return list(iter_traces(path, format, skip_invalid, on_skip, per_agent))


def iter_traces(path: str | Path, format: str = "auto", skip_invalid: bool = False,
                on_skip: OnSkip | None = None, per_agent: bool = False) -> Iterator[Trace]:
    """Traces in `path` ("-": standard input), lazily. Bad input raises `TraceError` ("file:line:
    field: what is wrong"); with `skip_invalid`, the bad line (or message, or file) goes to
    `on_skip(error)` and reading goes on. `per_agent`: span formats give each agent invocation a
    trace of its own (see `semloop.observability`)."""
    if format not in FORMATS:
        raise TraceError(f"unknown format {format!r}; choose from {FORMATS}")
    source = Source.read(path)
    skip = _Skipper(skip_invalid, on_skip)
    if not source.text.strip():
        skip(TraceError(f"{source.name}: the file is empty (no traces)"))
        return
    reader = _REGISTRY[format] if format != "auto" else detect(source)
    yield from (reader.agents if per_agent and reader.agents is not None else reader.read)(source, skip)


def expand_paths(patterns: Iterable[str]) -> list[str]:
    """Command-line inputs as paths: "-" (standard input) and existing paths as given, glob
    patterns (`runs/*.jsonl`, `**` included) expanded in sorted order; a pattern that matches
    nothing is an error."""
    paths: list[str] = []
    for pattern in patterns:
        if pattern == STDIN or Path(pattern).exists() or not glob.has_magic(pattern):
            paths.append(pattern)
            continue
        matches = sorted(glob.glob(pattern, recursive=True))
        if not matches:
            raise TraceError(f"{pattern}: no file matches")
        paths.extend(matches)
    return paths


class Source:
    """One input's text, with its whole-document and first-line JSON parses computed once."""

    def __init__(self, name: str, stem: str, text: str):
        self.name, self.stem, self.text = name, _clean_str(stem), text

    @classmethod
    def read(cls, path: str | Path) -> Source:
        if str(path) == STDIN:
            return cls("<stdin>", "stdin", sys.stdin.buffer.read().decode("utf-8-sig", errors="replace"))
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8-sig", errors="replace")  # -sig: a leading BOM is dropped
        except OSError as exc:
            raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
        return cls(str(path), path.stem, text)

    @cached_property
    def _parsed(self) -> tuple[Any, TraceError | None, bool]:
        """(the whole text as one JSON value or INVALID, why not, whether that is fatal: nesting
        or a number no reader can take, as opposed to not being one document, as JSONL is not)."""
        try:
            return _clean(json.loads(self.text), self.text), None, False
        except RecursionError:
            return INVALID, TraceError(f"{self.name}: invalid JSON: nested too deeply"), True
        except json.JSONDecodeError as exc:
            return INVALID, TraceError(f"{self.name}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})"), False
        except ValueError as exc:  # an integer past Python's digit limit: name its line
            digits = re.search(r"\d{4300,}", self.text)
            line = self.text.count("\n", 0, digits.start()) + 1 if digits else None
            return INVALID, TraceError(f"{self.name}:{line}: invalid JSON: {str(exc).split(';')[0]}"), True

    @property
    def doc(self) -> Any:
        """The whole text as one JSON value, or `INVALID` when it is not one (JSONL, or broken)."""
        return self._parsed[0]

    @cached_property
    def first(self) -> Any:
        """The first non-blank line as JSON, or `INVALID`."""
        line = next((line for line in self.text.splitlines() if line.strip()), "")
        try:
            return _loads(line, self.name)
        except TraceError:
            return INVALID

    @property
    def one_line(self) -> bool:
        return sum(1 for line in self.text.splitlines() if line.strip()) == 1

    def lines(self) -> Iterator[tuple[int, str]]:
        """(line number, line) of each non-blank line."""
        for n, line in enumerate(self.text.splitlines(), 1):
            if line.strip():
                yield n, line


INVALID: Any = object()
"""What `Source.doc` and `Source.first` are when the text is not valid JSON."""


class _Skipper:
    """Raise a `TraceError`, or hand it to `on_skip` and carry on when skipping bad input."""

    def __init__(self, skip_invalid: bool, on_skip: OnSkip | None) -> None:
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


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean_str(text: str) -> str:
    """`text` with lone surrogates (which no UTF-8 output can carry) as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def _clean(value: Any, text: str) -> Any:
    """`value` parsed from `text` with lone surrogates in its strings and keys as U+FFFD. (A pair
    written as two escapes is one character after parsing; only a lone half is left.) Only walks
    the value when `text` has a surrogate escape at all."""
    if not _SURROGATE_ESCAPE.search(text):
        return value

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return _clean_str(item)
        if isinstance(item, list):
            return [walk(v) for v in item]
        if isinstance(item, dict):
            return {_clean_str(k): walk(v) for k, v in item.items()}
        return item

    return walk(value)


def _loads(text: str, where: str) -> Any:
    """json.loads with every failure as a TraceError naming `where`: syntax errors, nesting too
    deep for the parser, integers longer than Python's 4,300-digit conversion limit."""
    try:
        return _clean(json.loads(text), text)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise TraceError(f"{where}: invalid JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        raise TraceError(f"{where}: invalid JSON: {str(exc).split(';')[0]}") from None


# -- formats and their detection -------------------------------------------------------------


@dataclass(frozen=True)
class TraceFormat:
    """One input format: `sniff(source)` says whether an input looks like it (auto-detection),
    `read(source, skip)` yields its traces."""

    name: str
    help: str
    sniff: Callable[[Source], bool]
    read: Callable[[Source, _Skipper], Iterator[Trace]]
    agents: Callable[[Source, _Skipper], Iterator[Trace]] | None = None  # `per_agent`: a trace per agent


def detect(source: Source) -> TraceFormat:
    """The first format in `_REGISTRY` whose `sniff` accepts `source`. When none does, the
    semloop reader, which names the line and field that are wrong (or, for a document over several
    lines that no parser can take, that document's error)."""
    for fmt in _REGISTRY.values():
        if fmt.sniff(source):
            return fmt
    _, error, fatal = source._parsed
    if fatal and error is not None and source.first is INVALID:
        raise error
    return _REGISTRY["jsonl"]


def _has(value: Any, key: str) -> bool:
    return isinstance(value, dict) and key in value


def _looks_semloop(source: Source) -> bool:
    doc = source.doc
    return (_has(source.first, "steps") or _has(doc, "steps")
            or (isinstance(doc, list) and bool(doc) and _has(doc[0], "steps")))


_CLAUDE_CODE_TYPES = ("user", "assistant", "summary", "system")


def _looks_claude_code(source: Source) -> bool:
    first = source.first
    return (isinstance(first, dict) and first.get("type") in _CLAUDE_CODE_TYPES
            and ("sessionId" in first or "message" in first))


def _sniffed_messages(source: Source) -> list[Any] | None:
    """The message list an input seems to hold (for detection only), or None."""
    doc = source.doc
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if isinstance(messages, list):
        return messages
    if isinstance(doc, list):
        return doc if any(_has(m, "role") for m in doc) else None
    if (doc is INVALID or source.one_line) and _has(source.first, "role"):  # JSONL, one message per line
        rows = []
        for _, line in source.lines():
            try:
                rows.append(_loads(line, source.name))
            except TraceError:
                continue
        return rows
    return None


def _looks_openai(source: Source) -> bool:
    messages = _sniffed_messages(source)
    return messages is not None and any(isinstance(m, dict) and (m.get("tool_calls") or m.get("role") == "tool")
                                        for m in messages)


def _looks_anthropic(source: Source) -> bool:
    return _sniffed_messages(source) is not None or _has(source.doc, "messages")


def _message_list(source: Source, format: str, skip: _Skipper) -> list[tuple[str, Any]]:
    """(where, message) pairs from a JSON document (a list, or an object with "messages") or from
    JSONL with one message per line. `where` is "file:line" for JSONL, "file: messages[i]" else.
    Every message must be an object with a "role"."""
    doc, error, fatal = source._parsed
    if fatal and error is not None:
        raise error
    if doc is INVALID or (source.one_line and _has(doc, "role")):
        rows = []  # perhaps JSONL: one message per line
        for n, line in source.lines():
            try:
                rows.append((f"{source.name}:{n}: message", _loads(line, f"{source.name}:{n}")))
            except TraceError as exc:
                skip(exc)
    else:
        if isinstance(doc, dict) and "messages" in doc:
            doc = doc["messages"]
        if not isinstance(doc, list):
            raise TraceError(f"{source.name}: expected a list of messages for format {format!r}, "
                             f"got {_type_name(doc)}")
        rows = [(f"{source.name}: messages[{i}]", m) for i, m in enumerate(doc)]
    if not rows and isinstance(doc, list):
        skip(TraceError(f"{source.name}: an empty message list (no traces)"))
    return rows


def _message(where: str, m: Any, skip: _Skipper) -> bool:
    """Whether `m` is a message (an object with a string "role"); if not, the error goes to `skip`."""
    if not isinstance(m, dict):
        skip(TraceError(f"{where} must be an object, got {_type_name(m)}"))
        return False
    if not isinstance(m.get("role"), str):
        skip(TraceError(f"{where}: missing field 'role' (a message needs one)" if "role" not in m
                        else f"{where}.role must be a string, got {_type_name(m['role'])}"))
        return False
    return True


def _read_anthropic(source: Source, skip: _Skipper) -> Iterator[Trace]:
    messages = _message_list(source, "anthropic", skip)
    if messages:
        yield _from_anthropic(source.stem, messages, skip)


def _read_openai(source: Source, skip: _Skipper) -> Iterator[Trace]:
    messages = _message_list(source, "openai", skip)
    if messages:
        yield _from_openai(source.stem, messages, skip)


# -- semloop traces ----------------------------------------------------------------------------


def _read_semloop(source: Source, skip: _Skipper) -> Iterator[Trace]:
    """JSONL, one trace per line; or one JSON document: an array of traces, or a single trace."""
    doc = source.doc
    if isinstance(doc, list):
        if not doc:
            skip(TraceError(f"{source.name}: an empty JSON array (no traces)"))
        for i, item in enumerate(doc):
            try:
                yield parse_trace(item, f"{source.name}: [{i}]")
            except TraceError as exc:
                skip(exc)
        return
    if isinstance(doc, dict):  # one trace, on one line (named by its number) or pretty-printed
        yield parse_trace(doc, f"{source.name}:{next(source.lines())[0]}" if source.one_line else source.name)
        return
    for n, line in source.lines():
        try:
            yield parse_trace(line, f"{source.name}:{n}")
        except TraceError as exc:
            skip(exc)


def parse_trace(line: str | dict[str, Any], where: str = "<trace>") -> Trace:
    """One trace from a JSONL line (or an already-parsed dict), validated field by field."""
    if isinstance(line, str):
        obj = _loads(line, where)
    else:
        obj = line
    if not isinstance(obj, dict):
        raise TraceError(f"{where}: a trace must be a JSON object, got {_type_name(obj)}")
    if "id" not in obj:
        raise TraceError(f"{where}: missing field 'id'")
    if not isinstance(obj["id"], (str, int)) or isinstance(obj["id"], bool):
        raise TraceError(f"{where}: field 'id' must be a string, got {_type_name(obj['id'])}")
    if "steps" not in obj:
        raise TraceError(f"{where}: missing field 'steps'")
    if not isinstance(obj["steps"], list):
        raise TraceError(f"{where}: field 'steps' must be a list, got {_type_name(obj['steps'])}")
    steps = []
    for i, raw in enumerate(obj["steps"]):
        if not isinstance(raw, dict):
            raise TraceError(f"{where}: steps[{i}] must be an object, got {_type_name(raw)}")
        if "tool" not in raw:
            raise TraceError(f"{where}: steps[{i}]: missing field 'tool'")
        if not isinstance(raw["tool"], str):
            raise TraceError(f"{where}: steps[{i}].tool must be a string, got {_type_name(raw['tool'])}")
        if "input" not in raw:
            raise TraceError(f"{where}: steps[{i}]: missing field 'input'")
        is_error = raw.get("is_error", False)
        if is_error is None:
            is_error = False
        if not isinstance(is_error, bool):
            raise TraceError(f"{where}: steps[{i}].is_error must be true/false, got {is_error!r}")
        for key in ("input", "output"):
            _check_depth(raw.get(key), f"{where}: steps[{i}].{key}")
        steps.append(Step(_clean_str(raw["tool"]), raw["input"], raw.get("output"), is_error))
    label = obj.get("label")
    if label is not None:
        check_label(label, len(steps), where)
    meta = {k: v for k, v in obj.items() if k not in ("id", "steps", "label")}
    return Trace(_clean_str(str(obj["id"])), tuple(steps), label, meta)


LABEL_KINDS = ("exact", "normalized", "paraphrase", "same_result", "alternation", "count")
"""The kinds of loop a label may name (benchmarks/LABELING.md)."""


def check_label(label: Any, steps: int, where: str) -> None:
    """A trace's label: an object with `loop` true/false, `onset` the index of one of the trace's
    `steps` steps when `loop` is true (null or absent when it is false), `kind` one of
    `LABEL_KINDS` or null. Other keys (`confidence`, `note`, ...) are kept for people."""
    if not isinstance(label, dict):
        raise TraceError(f"{where}: field 'label' must be an object, got {_type_name(label)}")
    loop, onset, kind = label.get("loop"), label.get("onset"), label.get("kind")
    if "loop" not in label:
        raise TraceError(f"{where}: label: missing field 'loop' (true or false)")
    if not isinstance(loop, bool):
        raise TraceError(f"{where}: label.loop must be true or false, got {json.dumps(loop)}")
    if loop:
        if not isinstance(onset, int) or isinstance(onset, bool):
            raise TraceError(f"{where}: label.onset must be a step index (an integer) when label.loop is true, "
                             f"got {json.dumps(onset)}")
        if not 0 <= onset < steps:
            raise TraceError(f"{where}: label.onset {onset} is not a step of this trace (it has {steps} steps, "
                             f"0-{steps - 1})" if steps else f"{where}: label.onset {onset}: the trace has no steps")
    elif onset is not None:
        raise TraceError(f"{where}: label.onset must be null when label.loop is false, got {json.dumps(onset)}")
    if kind is not None and kind not in LABEL_KINDS:
        raise TraceError(f"{where}: label.kind must be one of {', '.join(LABEL_KINDS)} or null, "
                         f"got {json.dumps(kind)}")


# -- Anthropic Messages API ------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _call_id(value: Any, where: str) -> str:
    """Tool-call ids pair a call with its result: they must be strings (or numbers)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TraceError(f"{where} must be a string, got {_type_name(value)}")
    return str(value)


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise TraceError(f"{where}.content must be a string or a list of content blocks, got {_type_name(content)}")
    return [b for b in content if isinstance(b, dict)]


def _from_anthropic(trace_id: str, messages: list[tuple[str, Any]], skip: _Skipper) -> Trace:
    calls: dict[str, int] = {}
    steps: list[dict[str, Any]] = []
    for where, m in messages:
        if not _message(where, m, skip):
            continue
        try:
            found: list[tuple[str, str, str | None, dict[str, Any]]] = []  # validate the whole message first
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
    steps: list[dict[str, Any]] = []
    for where, m in messages:
        if not _message(where, m, skip):
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


def _read_claude_code(source: Source, skip: _Skipper) -> Iterator[Trace]:
    messages = []
    session = source.stem
    for n, line in source.lines():
        try:
            entry = _loads(line, f"{source.name}:{n}")
        except TraceError as exc:
            skip(exc)
            continue
        if isinstance(entry, dict) and isinstance(entry.get("message"), dict):
            sid = entry.get("sessionId", session)
            session = sid if isinstance(sid, str) else session
            messages.append((f"{source.name}:{n}: message", entry["message"]))
    yield _from_anthropic(str(session), messages, skip)


# -- the registry ------------------------------------------------------------------------------

def _observability(name: str, help: str) -> TraceFormat:
    """A format read by `semloop.observability` (spans, observations, runs of observability tools)."""
    from . import observability

    def read(per_agent: bool) -> Callable[[Source, _Skipper], Iterator[Trace]]:
        return lambda source, skip: observability.read(Path(source.name), source.text, name, skip, per_agent)

    return TraceFormat(name, help, lambda source: observability.detect(source.text) == name, read(False), read(True))


_REGISTRY: dict[str, TraceFormat] = {f.name: f for f in (  # auto-detection asks them in this order
    _observability("otel", "OpenTelemetry GenAI spans (OTLP JSON or JSON spans)"),
    _observability("openinference", "OpenInference spans (OTLP JSON or JSON spans)"),
    _observability("langfuse", "Langfuse observations"),
    _observability("langsmith", "LangSmith runs (docs/observability.md)"),
    TraceFormat("jsonl", "semloop traces: one JSON object per line, a JSON array of them, or one trace",
                _looks_semloop, _read_semloop),
    TraceFormat("claude-code", "a Claude Code session transcript", _looks_claude_code, _read_claude_code),
    TraceFormat("openai", "chat messages with tool_calls", _looks_openai, _read_openai),
    TraceFormat("anthropic", "a Messages API message list", _looks_anthropic, _read_anthropic),
)}

FORMATS = ("auto", *_REGISTRY)


def format_help() -> str:
    """The `--format` help text of the commands that read traces."""
    return "input format (default: auto-detected): " + "; ".join(f"{f.name} = {f.help}" for f in _REGISTRY.values())
