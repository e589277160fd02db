"""Malformed trace files from a seeded generator: every outcome of `semloop scan` (and of `report`
on a share of them) is either the right answer or one error line naming the file, exit 2.

"The right answer" comes from the trace format as documented (semloop/traces.py,
benchmarks/LABELING.md), written out here on its own: a file is one JSON document (a trace
object, or an array of them) or one trace per line; a trace has an `id` (string or integer), a
`steps` list of objects with a string `tool` and an `input`, `is_error` true/false/null, values
nested at most MAX_DEPTH deep, and an optional `label` (loop true/false, onset a step index or
null when no loop, kind one of the documented kinds or null). A file that meets it must be read
with those ids and step counts; one that does not must be refused."""

from __future__ import annotations

import json
import random

from semloop import cli
from semloop.traces import LABEL_KINDS, MAX_DEPTH

SEED = 20261203
FILES = 300


def _step(i: int) -> dict:
    return {"tool": ["Bash", "Read", "web_search"][i % 3], "input": {"command": f"ls dir{i % 4}", "n": i},
            "output": f"file{i % 4}.txt\nline {i}", "is_error": i % 5 == 0}


def base_traces(rng: random.Random) -> list[dict]:
    traces = []
    for t in range(rng.randint(1, 3)):
        n = rng.randint(1, 6)
        loop = rng.random() < 0.5
        label = ({"loop": True, "onset": rng.randrange(n), "kind": rng.choice(LABEL_KINDS)} if loop
                 else {"loop": False, "onset": None, "kind": None})
        traces.append({"id": f"t{t}", "steps": [_step(i) for i in range(n)], "label": label})
    return traces


# -- the mutations ----------------------------------------------------------------------------

ODD_VALUES = [None, True, False, 0, 1, -1, 1.5, "", "x", "false", "true", "two", [], [1], {}, {"a": 1}]


def _pick_path(rng: random.Random, trace: dict) -> tuple[list, object]:
    """A random (container path, key) inside `trace`: where to put an odd value."""
    choices: list[tuple[list, object]] = [([], "id"), ([], "steps"), ([], "label"), ([], "extra")]
    if isinstance(trace.get("label"), dict):
        choices += [(["label"], "loop"), (["label"], "onset"), (["label"], "kind")]
    if isinstance(trace.get("steps"), list) and trace["steps"]:
        i = rng.randrange(len(trace["steps"]))
        choices += [(["steps"], i)] + [(["steps", i], k) for k in ("tool", "input", "output", "is_error")]
    return rng.choice(choices)


def mutate_value(rng: random.Random, traces: list[dict]) -> None:
    trace = rng.choice(traces)
    path, key = _pick_path(rng, trace)
    holder = trace
    for part in path:
        holder = holder[part]
    action = rng.random()
    if action < 0.15 and isinstance(holder, dict):
        holder.pop(key, None)
    elif action < 0.3 and path == ["label"] and key == "onset":
        holder[key] = rng.randint(-2, len(trace["steps"]) + 2)
    elif action < 0.4 and path == ["label"] and key == "kind":
        holder[key] = rng.choice([*LABEL_KINDS, "weird", None])
    else:
        holder[key] = rng.choice(ODD_VALUES)


def nest(depth: int):
    value: object = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def to_text(rng: random.Random, traces: list[dict]) -> str:
    layout = rng.random()
    if layout < 0.6:
        return "".join(json.dumps(t) + "\n" for t in traces)
    if layout < 0.75:
        return json.dumps(traces, indent=rng.choice([None, 2]))
    if layout < 0.85:
        return json.dumps(traces[0], indent=2)
    return "\r\n".join(json.dumps(t) for t in traces) + "\r\n\r\n"


def mutate_text(rng: random.Random, text: str) -> str:
    if not text:
        return text
    op = rng.randrange(7)
    i = rng.randrange(len(text))
    if op == 0:  # one character changed
        return text[:i] + rng.choice('{}[]",:0 a\\\n') + text[i + 1:]
    if op == 1:  # a span deleted
        return text[:i] + text[i + rng.randint(1, 40):]
    if op == 2:  # a span doubled
        return text[:i] + text[i:i + rng.randint(1, 40)] * 2 + text[i + 40:]
    if op == 3:  # cut off
        return text[:i]
    if op == 4:  # a lone surrogate, a BOM or a replacement character in a string
        if rng.random() < 0.8:
            return text.replace('"Bash"', rng.choice(['"Ba\\udcffsh"', '"\\ud800"', '"B\\u00e4sh"']), 1)
        return "\ufeff" + text
    if op == 5:  # a garbage line
        lines = text.split("\n")
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(["garbage", "{", "]", "null", "[]", "{}", '"x"', "1"]))
        return "\n".join(lines)
    return text  # unchanged text (the value mutations alone)


def generate(rng: random.Random) -> str:
    traces = base_traces(rng)
    kind = rng.random()
    if kind < 0.45:
        for _ in range(rng.randint(1, 2)):
            mutate_value(rng, traces)
    elif kind < 0.55:
        step = rng.choice(rng.choice(traces)["steps"])
        depth = rng.choice([MAX_DEPTH - 2, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 5])
        step[rng.choice(["input", "output"])] = nest(depth)
    elif kind < 0.6:
        rng.choice(traces)["steps"][0]["output"] = "<big>" if rng.random() < 0.5 else 10 ** 100
    text = to_text(rng, traces).replace('"<big>"', "9" * 4400)  # past Python's int conversion limit
    if kind >= 0.6 or rng.random() < 0.3:
        text = mutate_text(rng, text)
    return text


# -- the documented format, on its own ------------------------------------------------------------


def _depth_ok(value) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                return False
            stack.extend((c, depth + 1) for c in (item.values() if isinstance(item, dict) else item))
    return True


def _no_surrogates(text: str) -> str:
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def expected_trace(obj) -> tuple[str, int] | None:
    if not isinstance(obj, dict) or "id" not in obj or "steps" not in obj:
        return None
    if isinstance(obj["id"], bool) or not isinstance(obj["id"], (str, int)) or not isinstance(obj["steps"], list):
        return None
    for step in obj["steps"]:
        if not isinstance(step, dict) or not isinstance(step.get("tool"), str) or "input" not in step:
            return None
        if not (step.get("is_error") is None or isinstance(step["is_error"], bool)):  # 0 is not false here
            return None
        if not (_depth_ok(step.get("input")) and _depth_ok(step.get("output"))):
            return None
    label, n = obj.get("label"), len(obj["steps"])
    if label is not None:
        if not isinstance(label, dict) or not isinstance(label.get("loop"), bool):
            return None
        onset, kind = label.get("onset"), label.get("kind")
        if label["loop"] and (isinstance(onset, bool) or not isinstance(onset, int) or not 0 <= onset < n):
            return None
        if not label["loop"] and onset is not None:
            return None
        if kind is not None and kind not in LABEL_KINDS:
            return None
    return _no_surrogates(str(obj["id"])), n


def _parse(text: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return ValueError


def expected(text: str) -> list[tuple[str, int]] | None:
    """The (id, steps) of each trace in `text` by the documented format, or None: refused."""
    text = text.removeprefix("\ufeff")
    if not text.strip():
        return None
    doc = _parse(text)
    if isinstance(doc, list):
        objects = doc
    elif isinstance(doc, dict) and text.strip().count("\n") > 0:
        objects = [doc]
    else:
        objects = [_parse(line) for line in text.splitlines() if line.strip()]
    if not objects:
        return None
    out = []
    for o in objects:
        expected = expected_trace(o)
        if expected is None:
            return None
        out.append(expected)
    return out


# -- the test -------------------------------------------------------------------------------------


def test_random_malformed_files_get_the_right_answer_or_one_error_line(tmp_path, capsys):
    rng = random.Random(SEED)
    accepted = refused = 0
    wrong = []
    for k in range(FILES):
        path = tmp_path / f"case{k:03d}.jsonl"
        path.write_text(generate(rng), encoding="utf-8", errors="surrogatepass")
        text = path.read_text(encoding="utf-8", errors="replace")
        want = expected(text)
        code = cli.main(["scan", str(path), "--json", "--detector", "exact"])  # an escaping exception fails the test
        out, err = capsys.readouterr()
        if want is None:
            refused += 1
            lines = err.strip().splitlines()
            if code != 2 or len(lines) != 1 or not lines[0].startswith(f"semloop: error: {path}") or out:
                wrong.append((path.name, "should be refused", code, err[-300:], text[:200]))
            continue
        accepted += 1
        got = [(r["id"], r["steps"]) for r in map(json.loads, out.splitlines())] if code == 0 else None
        if code != 0 or got != want or err:
            wrong.append((path.name, f"should read as {want}", code, (got, err[-300:]), text[:200]))
        elif k % 5 == 0:  # the default (semantic) detector and report read them the same way
            assert cli.main(["scan", str(path), "--json"]) == 0
            semantic, err = capsys.readouterr()
            assert [(r["id"], r["steps"]) for r in map(json.loads, semantic.splitlines())] == want, err
            html = tmp_path / "r.html"
            assert cli.main(["report", str(path), "--out", str(html), "--detector", "exact"]) == 0, capsys.readouterr()
            capsys.readouterr()
            assert all(f">{tid}<" in html.read_text(encoding="utf-8") for tid, _ in want)
    assert not wrong, "\n".join(map(str, wrong[:10])) + f"\n({len(wrong)} of {FILES} wrong)"
    # both outcomes are exercised in earnest
    assert accepted >= 60 and refused >= 60, (accepted, refused)


# -- message lists (Anthropic, OpenAI, Claude Code) -------------------------------------------------


def message_file(rng: random.Random) -> tuple[str, int]:
    """A message list with tool calls, as Anthropic, OpenAI or a Claude Code transcript, and how
    many tool calls it holds."""
    style = rng.choice(["anthropic", "openai", "claude-code"])
    calls = rng.randint(0, 4)
    messages: list[dict] = [{"role": "user", "content": "fix the tests"}]
    for i in range(calls):
        if style == "openai":
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{i}", "type": "function",
                 "function": {"name": "bash", "arguments": json.dumps({"cmd": "ls"})}}]})
            messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "a.txt"})
        else:
            messages.append({"role": "assistant", "content": [
                {"type": "text", "text": "looking"},
                {"type": "tool_use", "id": f"c{i}", "name": "Bash", "input": {"cmd": "ls"}}]})
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"c{i}", "content": "a.txt"}]})
    if style == "claude-code":
        text = "".join(json.dumps({"type": m["role"], "sessionId": "s", "message": m}) + "\n" for m in messages)
    elif rng.random() < 0.5:
        text = json.dumps(messages if rng.random() < 0.5 else {"messages": messages}, indent=rng.choice([None, 2]))
    else:
        text = "".join(json.dumps(m) + "\n" for m in messages)
    return text, calls


def test_random_malformed_message_lists_are_read_or_refused_in_one_line(tmp_path, capsys):
    """No oracle for every damaged conversation here: an outcome is a trace of at most as many
    steps as the file had tool calls (exactly as many when the file is untouched), or exit 2 with
    one line naming the file."""
    rng = random.Random(SEED + 1)
    outcomes = {0: 0, 2: 0}
    for k in range(150):
        text, calls = message_file(rng)
        damaged = rng.random() < 0.8
        if damaged:
            text = mutate_text(rng, text)
        path = tmp_path / f"messages{k:03d}.json"
        path.write_text(text, encoding="utf-8")
        code = cli.main(["scan", str(path), "--json", "--detector", "exact"])
        out, err = capsys.readouterr()
        outcomes[code] = outcomes.get(code, 0) + 1
        if code == 2:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"semloop: error: {path}") and not out, (err, text[:300])
            assert damaged or not text.strip(), (err, text[:300])
            continue
        assert code == 0 and not err, (code, err, text[:300])
        rows = [json.loads(line) for line in out.splitlines()]
        assert len(rows) <= 1 and all(r["steps"] <= calls for r in rows), (rows, text[:300])
        if not damaged:
            assert [r["steps"] for r in rows] == [calls], (rows, text[:300])
    assert outcomes[0] >= 30 and outcomes[2] >= 30, outcomes
