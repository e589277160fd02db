"""Reading the runs observability tools record: OpenTelemetry GenAI spans, OpenInference spans
(Arize Phoenix, the `openinference-instrumentation-*` packages), Langfuse observation exports and
LangSmith run exports. `semloop.traces` dispatches here for the formats in `FORMATS`.

* ``otel``: spans following the OpenTelemetry GenAI semantic conventions. A tool call is a span
  with ``gen_ai.operation.name = "execute_tool"`` (``gen_ai.tool.name``,
  ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``, an error status or
  ``error.type``). A run with no such span is read from the ``tool_call`` and
  ``tool_call_response`` parts of its chat spans' ``gen_ai.input.messages`` /
  ``gen_ai.output.messages``. Runs are grouped by trace id, or by ``gen_ai.conversation.id``
  where a span of the trace carries one.
* ``openinference``: spans with ``openinference.span.kind = "TOOL"`` (``tool.name``,
  ``input.value``, ``output.value``, the span status); runs by trace id, or ``session.id``.
* Both span formats come as OTLP JSON (``{"resourceSpans": ...}``: one document, or one per line
  as the OpenTelemetry file exporters and the Collector's ``file`` exporter write them) or as JSON
  spans one after another (the SDK's ``ReadableSpan.to_json()``, ``ConsoleSpanExporter``, Phoenix
  span JSON), one per line or pretty-printed, or a JSON list of them.
* ``langfuse``: observations (``type = "TOOL"``, ``traceId``, ``input``, ``output``,
  ``level = "ERROR"`` for a failed call) as a JSON list, one per line, the public API's
  ``{"data": [...]}`` page, or a trace with its ``"observations"``.
* ``langsmith``: runs (``run_type = "tool"``, ``inputs``, ``outputs``, ``error``, ``trace_id``,
  ``dotted_order``) as a JSON list, one per line, ``{"runs": [...]}``, or run trees with
  ``child_runs``.

Steps are ordered by start time (LangSmith: by ``dotted_order``). With ``per_agent``, each agent
invocation (a GenAI ``invoke_agent`` span, an OpenInference or Langfuse ``AGENT`` span) is a trace
of its own holding the tool calls it made itself: a sub-agent's calls are kept apart from its
parent's. The notes a semloop integration added to a tool result (the hint, the stop message) are
removed, so a guarded run replays with the results its tools returned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .messages import TEMPLATES
from .traces import Step, Trace, TraceError, _check_depth, _type_name

FORMATS = ("otel", "openinference", "langfuse", "langsmith")
SPAN_FORMATS = ("otel", "openinference")


@dataclass
class _Record:
    """One span, observation or run, reduced to what grouping and replay need."""

    where: str  # names the span in error messages: "file:line: span <id> 'name'"
    run: str  # trace id
    id: str
    parent: str | None
    name: str
    key: Any  # sort key within the run: start time in ns, or LangSmith's dotted order
    order: int  # position in the file: ties keep it
    kind: str = "other"  # "tool", "agent", "chat" or "other"
    group: str | None = None  # gen_ai.conversation.id / session.id, when the span has one
    step: Step | None = None
    attrs: dict | None = None  # span attributes, for the GenAI message fallback


# -- public entry points ---------------------------------------------------------------------


def detect(text: str) -> str | None:
    """The format of `text` when it is one of `FORMATS`, else None (for `semloop.traces`)."""
    stripped = text.lstrip()
    first = _first_value(stripped)
    if isinstance(first, list):
        first = next((item for item in first if isinstance(item, dict)), None)
    if not isinstance(first, dict):
        return None
    for wrapper in ("data", "runs", "observations"):
        inner = first.get(wrapper)
        if isinstance(inner, list) and inner and isinstance(inner[0], dict):
            if wrapper == "observations" or wrapper == "data" and "traceId" in inner[0]:
                return "langfuse"
            if "run_type" in inner[0]:
                return "langsmith"
    if "run_type" in first and ("trace_id" in first or "dotted_order" in first or "child_runs" in first):
        return "langsmith"
    if "traceId" in first and "type" in first and ("startTime" in first or "parentObservationId" in first):
        return "langfuse"
    spans = "resourceSpans" in first or "resource_spans" in first
    spans = spans or isinstance(first.get("context"), dict) and "span_id" in first["context"]
    spans = spans or ("traceId" in first and "spanId" in first)
    if spans:
        return "openinference" if "openinference.span.kind" in text else "otel"
    return None


def read(path: Path, text: str, format: str, skip: Any, per_agent: bool = False) -> Iterator[Trace]:
    """The traces in `text` (the contents of `path`) in `format`; a bad span goes to `skip`
    (which raises it, or reports it and carries on)."""
    if format not in FORMATS:
        raise TraceError(f"unknown format {format!r}; choose from {FORMATS}")
    reader = {"otel": _spans, "openinference": _spans, "langfuse": _langfuse, "langsmith": _langsmith}[format]
    records: list[_Record] = []
    for where, obj in _documents(path, text, skip):
        for at, raw in _items(format, where, obj, skip):
            try:
                record = reader(at, raw, format, len(records))
            except TraceError as exc:
                skip(exc)
                continue
            if record is not None:
                records.append(record)
    if not records:
        raise TraceError(f"{path}: no {_NAMES[format]} in the file")
    yield from _traces(records, format, per_agent, skip)


_NAMES = {"otel": "OpenTelemetry spans", "openinference": "OpenTelemetry spans",
          "langfuse": "Langfuse observations", "langsmith": "LangSmith runs"}


# -- JSON documents --------------------------------------------------------------------------


def _first_value(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return json.JSONDecoder().raw_decode(text)[0]
    except (ValueError, RecursionError):
        return None


def _documents(path: Path, text: str, skip: Any) -> Iterator[tuple[str, Any]]:
    """Every top-level JSON value in `text`: one document, one per line, or several one after
    another (pretty-printed spans). `where` is "file" for a single document, "file:line" else."""
    try:
        yield str(path), json.loads(text)
        return
    except RecursionError:
        raise TraceError(f"{path}: invalid JSON: nested too deeply") from None
    except ValueError:
        pass
    decoder, pos, line, end = json.JSONDecoder(), 0, 1, len(text)
    while True:
        start = pos
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        line += text.count("\n", start, pos)
        if pos >= end:
            return
        where = f"{path}:{line}"
        try:
            value, stop = decoder.raw_decode(text, pos)
        except RecursionError:
            error = TraceError(f"{where}: invalid JSON: nested too deeply")
        except json.JSONDecodeError as exc:  # the line the value starts on; a pretty-printed one says where
            at = f"column {exc.colno}" if exc.lineno == line else f"line {exc.lineno}, column {exc.colno}"
            error = TraceError(f"{where}: invalid JSON: {exc.msg} ({at})")
        except ValueError as exc:  # an integer past Python's digit limit
            error = TraceError(f"{where}: invalid JSON: {str(exc).split(';')[0]}")
        else:
            line += text.count("\n", pos, stop)
            pos = stop
            yield where, value
            continue
        skip(error)
        newline = text.find("\n", pos)  # carry on at the next line
        if newline < 0:
            return
        pos = newline
        # the newline itself is counted by the whitespace skip above


def _items(format: str, where: str, obj: Any, skip: Any) -> Iterator[tuple[str, Any]]:
    """The spans / observations / runs of one JSON document, each with where it is."""
    if isinstance(obj, list):
        for i, item in enumerate(obj):
            yield from _items(format, f"{where}: [{i}]", item, skip)
        return
    if not isinstance(obj, dict):
        skip(TraceError(f"{where}: expected a JSON object, got {_type_name(obj)}"))
        return
    if format in SPAN_FORMATS:
        resource_spans = obj.get("resourceSpans", obj.get("resource_spans"))
        if resource_spans is None:
            yield where, obj
            return
        for r, resource in enumerate(_list(resource_spans, f"{where}: resourceSpans", skip)):
            at = f"{where}: resourceSpans[{r}]"
            if not isinstance(resource, dict):
                skip(TraceError(f"{at} must be an object, got {_type_name(resource)}"))
                continue
            scopes = resource.get("scopeSpans",
                                  resource.get("scope_spans", resource.get("instrumentationLibrarySpans")))
            for s, scope in enumerate(_list(scopes, f"{at}.scopeSpans", skip)):
                if not isinstance(scope, dict):
                    skip(TraceError(f"{at}.scopeSpans[{s}] must be an object, got {_type_name(scope)}"))
                    continue
                for n, span in enumerate(_list(scope.get("spans"), f"{at}.scopeSpans[{s}].spans", skip)):
                    yield f"{at}.scopeSpans[{s}].spans[{n}]", span
        return
    wrapper = {"langfuse": ("data", "observations"), "langsmith": ("runs",)}[format]
    for name in wrapper:
        if isinstance(obj.get(name), list) and not ("traceId" in obj and name == "data"):
            trace_id = obj.get("id") if name == "observations" else None
            for i, item in enumerate(obj[name]):
                if trace_id is not None and isinstance(item, dict):
                    item = {"traceId": trace_id, **item}
                yield from _items(format, f"{where}: {name}[{i}]", item, skip)
            return
    yield where, obj
    if format == "langsmith" and isinstance(obj.get("child_runs"), list):
        for i, child in enumerate(obj["child_runs"]):
            if isinstance(child, dict):
                child = {"trace_id": obj.get("trace_id"), **child}
            yield from _items(format, f"{where}: child_runs[{i}]", child, skip)


def _list(value: Any, where: str, skip: Any) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        skip(TraceError(f"{where} must be a list, got {_type_name(value)}"))
        return []
    return value


# -- values ----------------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    """A JSON object or array given as a string, decoded; anything else unchanged."""
    if isinstance(value, str) and value[:1] in "{[" and value[-1:] in "}]":
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            pass
    return value


def _tool_result(value: Any) -> Any:
    """What the tool returned: a LangChain ToolMessage (plain or serialized) is its content; a
    semloop integration's notes are cut off."""
    value = _json_value(value)
    if isinstance(value, dict):  # plain, serialized ({"lc": 1, "kwargs": ...}) or message_to_dict ({"data": ...})
        kwargs = value.get("kwargs") if value.get("type") == "constructor" else value.get("data", value)
        if (isinstance(kwargs, dict) and "content" in kwargs
                and ("tool_call_id" in kwargs or kwargs.get("type") == "tool")):
            value = kwargs["content"]
    if isinstance(value, str):
        value = _without_notes(value)
    return value


_NOTES = re.compile("\n\n(?:" + "|".join(
    re.escape(t[key].split("{", 1)[0]) for t in TEMPLATES.values() for key in ("warn", "stop")) + ")")


_REFUSAL = re.compile("|".join(
    re.sub(r"\\\{\w+\\\}", ".*", re.escape(t["stop_check"])) for t in TEMPLATES.values()), re.DOTALL)


def _refused(output: Any) -> bool:
    """Whether `output` is the refusal a semloop integration gave in place of running the call."""
    return isinstance(output, str) and _REFUSAL.fullmatch(output.strip()) is not None


def _without_notes(text: str) -> str:
    """`text` without the hint or stop message a semloop integration appended to a tool result."""
    match = _NOTES.search(text)
    return text[:match.start()] if match else text


def _any_value(value: Any) -> Any:
    """An OTLP JSON AnyValue ({"stringValue": ...}, {"intValue": "443"}, arrays, kvlists)."""
    if not isinstance(value, dict):
        return value
    for key, item in value.items():
        if key in ("stringValue", "string_value", "boolValue", "bool_value", "doubleValue", "double_value",
                   "bytesValue", "bytes_value"):
            return item
        if key in ("intValue", "int_value"):
            try:
                return int(item)
            except (TypeError, ValueError):
                return item
        if key in ("arrayValue", "array_value"):
            return [_any_value(v) for v in (item or {}).get("values", [])]
        if key in ("kvlistValue", "kvlist_value"):
            return {kv.get("key"): _any_value(kv.get("value")) for kv in (item or {}).get("values", [])
                    if isinstance(kv, dict)}
    return None


def _flatten(attrs: dict, prefix: str = "", out: dict | None = None) -> dict:
    """Phoenix writes attributes nested ({"tool": {"name": ...}}): flatten to dotted keys."""
    out = {} if out is None else out
    for key, value in attrs.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and name not in _NESTED_OK:
            _flatten(value, name + ".", out)
        else:
            out[name] = value
    return out


_NESTED_OK = frozenset({"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "input.value", "output.value"})


def _attributes(raw: Any, where: str) -> dict:
    if raw is None:
        return {}
    if isinstance(raw, list):  # OTLP: [{"key": ..., "value": AnyValue}]
        attrs = {}
        for i, kv in enumerate(raw):
            if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
                raise TraceError(f"{where}: attributes[{i}] must be an object with a string 'key'")
            attrs[kv["key"]] = _any_value(kv.get("value"))
        return attrs
    if isinstance(raw, dict):
        return _flatten(raw)
    raise TraceError(f"{where}: attributes must be a list or an object, got {_type_name(raw)}")


def _nanos(value: Any, where: str, field: str) -> int | None:
    """A timestamp as ns since the epoch: OTLP's "startTimeUnixNano" (a string or number), an ISO
    8601 string (nanosecond fractions allowed), or seconds since the epoch."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise TraceError(f"{where}: {field} must be a time, got {value!r}")
    if isinstance(value, (int, float)):
        return int(value * 1e9) if value < 1e11 else int(value)  # seconds, else already ns
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        match = re.fullmatch(r"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?", value.strip())
        if match:
            base, fraction, zone = match.groups()
            moment = datetime.fromisoformat(base.replace(" ", "T"))
            zone = zone or "Z"
            if zone != "Z":
                sign = 1 if zone[0] == "+" else -1
                digits = zone[1:].replace(":", "")
                offset = sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
            else:
                offset = 0
            seconds = int(moment.replace(tzinfo=timezone.utc).timestamp()) - offset
            return seconds * 1_000_000_000 + int((fraction or "0")[:9].ljust(9, "0"))
    raise TraceError(f"{where}: {field} must be a time, got {value!r}")


def _dotted(ns: int | None) -> str:
    """A start time in the form LangSmith's dotted order begins with (20240101T120000123456Z)."""
    if ns is None:
        return ""
    moment = datetime.fromtimestamp(ns // 1_000_000_000, tz=timezone.utc)
    return moment.strftime("%Y%m%dT%H%M%S") + f"{ns % 1_000_000_000 // 1000:06d}Z"


def _text_field(obj: dict, names: tuple[str, ...], where: str, required: bool = True) -> str | None:
    for name in names:
        if name in obj and obj[name] is not None:
            value = obj[name]
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise TraceError(f"{where}: {name} must be a string, got {_type_name(value)}")
            return str(value)
    if required:
        raise TraceError(f"{where}: missing field {names[0]!r}")
    return None


def _required(obj: dict, names: tuple[str, ...], where: str) -> str:
    value = _text_field(obj, names, where)
    assert value is not None  # _text_field raises when a required field is missing
    return value


def _step(tool: Any, tool_input: Any, output: Any, is_error: bool, where: str, field: str) -> Step | None:
    """The step of one tool call; None for a call a semloop integration refused (it did not run)."""
    if not isinstance(tool, str):
        raise TraceError(f"{where}: {field} must be a string, got {_type_name(tool)}")
    _check_depth(tool_input, f"{where}: input")
    _check_depth(output, f"{where}: output")
    if _refused(output):
        return None
    return Step(tool, tool_input, output, is_error)


# -- OpenTelemetry spans (GenAI and OpenInference) -------------------------------------------


def _spans(where: str, span: Any, format: str, order: int) -> _Record | None:
    if not isinstance(span, dict):
        raise TraceError(f"{where}: a span must be an object, got {_type_name(span)}")
    context: dict = span["context"] if isinstance(span.get("context"), dict) else span
    trace_id = _required(context, ("traceId", "trace_id"), where)
    span_id = _required(context, ("spanId", "span_id"), where)
    parent = _text_field(span, ("parentSpanId", "parent_span_id", "parent_id"), where, required=False)
    name = span.get("name", "")
    name = name if isinstance(name, str) else str(name)
    where = f"{where}: span {span_id.removeprefix('0x')} {name!r}"
    attrs = _attributes(span.get("attributes"), where)
    start = _nanos(span.get("startTimeUnixNano", span.get("start_time_unix_nano", span.get("start_time"))),
                   where, "start time")
    failed, message = _span_error(span, attrs)
    record = _Record(where, trace_id.removeprefix("0x"), span_id.removeprefix("0x"),
                     parent.removeprefix("0x") if parent else None, name, start or 0, order)
    if format == "otel":
        record.group = _group_of(attrs, "gen_ai.conversation.id", where)
        operation = attrs.get("gen_ai.operation.name")
        if operation == "execute_tool" or operation is None and name.startswith("execute_tool "):
            tool = attrs.get("gen_ai.tool.name", name.removeprefix("execute_tool ").strip() or None)
            output = attrs.get("gen_ai.tool.call.result")
            failed = failed or "error.type" in attrs
            if output is None and failed:
                output = message or attrs.get("error.type")
            record.kind = "tool"
            record.step = _step(tool, _json_value(attrs.get("gen_ai.tool.call.arguments")), _tool_result(output),
                                failed, where, "attribute gen_ai.tool.name")
        elif operation == "invoke_agent":
            record.kind = "agent"
            record.name = str(attrs.get("gen_ai.agent.name") or name.removeprefix("invoke_agent ").strip())
        elif "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
            record.kind, record.attrs = "chat", attrs
    else:
        record.group = _group_of(attrs, "session.id", where)
        kind = attrs.get("openinference.span.kind", span.get("span_kind"))
        if kind == "TOOL":
            output = attrs.get("output.value")
            if output is None and failed:
                output = message
            record.kind = "tool"
            record.step = _step(attrs.get("tool.name", name), _json_value(attrs.get("input.value")),
                                _tool_result(output), failed, where, "attribute tool.name")
        elif kind == "AGENT":
            record.kind = "agent"
            record.name = str(attrs.get("agent.name") or name)
    return record


def _group_of(attrs: dict, key: str, where: str) -> str | None:
    value = attrs.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TraceError(f"{where}: attribute {key} must be a string, got {_type_name(value)}")
    return str(value)


def _span_error(span: dict, attrs: dict) -> tuple[bool, str | None]:
    """Whether the span ended in error, and the error text (status message or exception event)."""
    status = span.get("status")
    code: Any = span.get("status_code")
    message = span.get("status_message")
    if isinstance(status, dict):
        code = status.get("code", status.get("status_code", code))
        message = status.get("message", status.get("description", message))
    failed = code in (2, "2", "ERROR", "STATUS_CODE_ERROR", "StatusCode.ERROR")
    if failed and not message:
        for event in span.get("events") or []:
            if isinstance(event, dict) and event.get("name") == "exception":
                event_attrs = _attributes(event.get("attributes"), "event")
                message = event_attrs.get("exception.message") or event_attrs.get("exception.type")
                break
    return failed, message if isinstance(message, str) and message else None


def _steps_from_messages(chats: list[_Record]) -> list[_Record]:
    """Tool calls of a run that has no execute_tool span, from the tool_call / tool_call_response
    parts of its chat spans' messages (each call once, by its id; results matched by id)."""
    calls: dict[Any, list] = {}  # id -> [record, name, arguments]
    results: dict[Any, Any] = {}
    for chat in chats:
        assert chat.attrs is not None
        for field in ("gen_ai.input.messages", "gen_ai.output.messages"):
            messages = _json_value(chat.attrs.get(field))
            if not isinstance(messages, list):
                continue
            for m, message in enumerate(messages):
                parts = message.get("parts") if isinstance(message, dict) else None
                for p, part in enumerate(parts if isinstance(parts, list) else []):
                    if not isinstance(part, dict):
                        continue
                    call_id = part.get("id") or (chat.id, field, m, p)
                    if part.get("type") == "tool_call" and call_id not in calls:
                        if isinstance(call_id, tuple) and field != "gen_ai.output.messages":
                            continue  # a call without an id is taken where it was made: the output
                        calls[call_id] = [chat, part.get("name"), _json_value(part.get("arguments"))]
                    elif part.get("type") == "tool_call_response":  # "response"; PydanticAI writes "result"
                        results.setdefault(call_id, part.get("response", part.get("result")))
    steps = []
    for call_id, (chat, name, arguments) in calls.items():
        where = f"{chat.where}: tool_call {call_id if not isinstance(call_id, tuple) else ''}".rstrip()
        step = _step(name, arguments, _tool_result(results.get(call_id)), False, where, "name")
        steps.append(_Record(where, chat.run, chat.id, chat.parent, chat.name, chat.key, chat.order, "tool",
                             chat.group, step))
    return steps


# -- Langfuse observations -------------------------------------------------------------------


def _head(item: Any, what: str, kind_field: str, where: str, fallback_id: str | None) -> tuple[str, str, str, str]:
    """(id, name, where naming the item, kind) of an observation or run, checked."""
    if not isinstance(item, dict):
        raise TraceError(f"{where}: {'an' if what[0] in 'aeiou' else 'a'} {what} must be an object, "
                         f"got {_type_name(item)}")
    if kind_field not in item:
        raise TraceError(f"{where}: missing field {kind_field!r} (not a {_NAMES_ONE[what]})")
    item_id = _text_field(item, ("id",), where, required=fallback_id is None) or str(fallback_id)
    name = item.get("name") or ""
    if not isinstance(name, str):
        raise TraceError(f"{where}: {what} {item_id}: name must be a string, got {_type_name(name)}")
    where = f"{where}: {what} {item_id} {name!r}"
    kind = item[kind_field]
    if not isinstance(kind, str):
        raise TraceError(f"{where}: {kind_field} must be a string, got {_type_name(kind)}")
    return item_id, name, where, kind


_NAMES_ONE = {"observation": "Langfuse observation", "run": "LangSmith run"}


def _langfuse(where: str, obs: Any, format: str, order: int) -> _Record | None:
    obs_id, name, where, kind = _head(obs, "observation", "type", where, f"#{order}")
    trace_id = _required(obs, ("traceId", "trace_id"), where)
    start = _nanos(obs.get("startTime", obs.get("start_time")), where, "startTime")
    record = _Record(where, trace_id, obs_id, _text_field(obs, ("parentObservationId",), where, False),
                     name, start or 0, order)
    if kind.upper() == "TOOL":
        failed = obs.get("level") == "ERROR"
        output = obs.get("output")
        if output is None and failed:
            output = obs.get("statusMessage")
        record.kind = "tool"
        record.step = _step(name, _json_value(obs.get("input")), _tool_result(output), failed, where, "name")
    elif kind.upper() == "AGENT":
        record.kind = "agent"
    return record


# -- LangSmith runs --------------------------------------------------------------------------


def _langsmith(where: str, run: Any, format: str, order: int) -> _Record | None:
    run_id, name, where, kind = _head(run, "run", "run_type", where, None)
    parent = _text_field(run, ("parent_run_id",), where, required=False)
    trace_id = _text_field(run, ("trace_id",), where, required=False) or (run_id if parent is None else None)
    if trace_id is None:
        raise TraceError(f"{where}: missing field 'trace_id'")
    dotted = run.get("dotted_order")
    if dotted is not None and not isinstance(dotted, str):
        raise TraceError(f"{where}: dotted_order must be a string, got {_type_name(dotted)}")
    key = dotted or _dotted(_nanos(run.get("start_time"), where, "start_time"))
    record = _Record(where, trace_id, run_id, parent, name, key, order)
    if kind == "tool":
        inputs, outputs, error = run.get("inputs"), run.get("outputs"), run.get("error")
        if isinstance(inputs, dict) and set(inputs) == {"input"}:
            inputs = inputs["input"]
        if isinstance(outputs, dict) and set(outputs) == {"output"}:
            outputs = outputs["output"]
        if error and outputs is None:
            outputs = error
        record.kind = "tool"
        record.step = _step(name, _json_value(inputs), _tool_result(outputs), bool(error), where, "name")
    return record


# -- runs ------------------------------------------------------------------------------------


def _traces(records: list[_Record], format: str, per_agent: bool, skip: Any) -> Iterator[Trace]:
    """Group the records into runs (trace id, or the conversation / session id some span of the
    trace carries), order each run's steps, and with `per_agent` split runs by agent span."""
    by_run: dict[str, list[_Record]] = {}
    for record in records:
        by_run.setdefault(record.run, []).append(record)
    group_of = {run: next((r.group for r in rs if r.group), run) for run, rs in by_run.items()}
    groups: dict[str, list[_Record]] = {}
    for run, rs in by_run.items():
        if format == "otel" and not any(r.kind == "tool" for r in rs):
            rs = rs + _messages_steps(rs, skip)
        groups.setdefault(group_of[run], []).extend(rs)
    traces = []
    for group, rs in groups.items():
        rs.sort(key=lambda r: (r.key, r.order))
        parts: list[tuple[str, list[_Record], str | None]] = [(group, [r for r in rs if r.step], None)]
        if per_agent:  # agents that made no tool call of their own are left out; a run keeps one trace
            parts = [part for part in _by_agent(rs) if part[1]] or [(f"{group}/(no tool calls)", [], None)]
        for name, tools, agent in parts:
            trace_id = name if not per_agent or not parts[0][1] else f"{group}/{name}"
            meta = {"format": format, "run": group}
            if agent is not None:
                meta["agent"] = agent
            first = min((r.key, r.order) for r in rs)
            traces.append((first, Trace(trace_id, tuple(r.step for r in tools if r.step), None, meta)))
    traces.sort(key=lambda item: item[0])
    for _, trace in traces:
        yield trace


def _messages_steps(records: list[_Record], skip: Any) -> list[_Record]:
    chats = sorted((r for r in records if r.kind == "chat"), key=lambda r: (r.key, r.order))
    try:
        return _steps_from_messages(chats)
    except TraceError as exc:
        skip(exc)
        return []


def _by_agent(records: list[_Record]) -> list[tuple[str, list[_Record], str | None]]:
    """(name, tool records, agent name) per agent span, in start order; each tool call goes to its
    nearest enclosing agent span; calls outside any agent span form a part of their own."""
    by_id = {r.id: r for r in records}
    parts: dict[str | None, list[_Record]] = {}
    for record in records:
        if record.kind == "agent":
            parts.setdefault(record.id, [])
    for record in records:
        if record.kind != "tool":
            continue
        owner, seen, parent = None, set(), record.parent
        while parent is not None and parent in by_id and parent not in seen:
            seen.add(parent)
            if by_id[parent].kind == "agent":
                owner = parent
                break
            parent = by_id[parent].parent
        parts.setdefault(owner, []).append(record)
    named: list[tuple[str, list[_Record], str | None]] = []
    counts: dict[str, int] = {}
    for owner, tools in parts.items():
        agent = by_id[owner].name if owner is not None else None
        label = agent or "(no agent)"
        counts[label] = counts.get(label, 0) + 1
        named.append((label if counts[label] == 1 else f"{label}#{counts[label]}", tools, agent))
    return named
