"""`semloop scan` on bad input: one line naming file:line (or the message) and the field, exit 2;
`--skip-invalid` skips the bad line and scans the rest. Never a traceback."""

import json
import subprocess

import pytest

from semloop.traces import MAX_DEPTH, TraceError, load_traces


def run(cmd, *args):
    return subprocess.run([*cmd, *args, "--detector", "exact"], capture_output=True, text=True, timeout=300)


def _tool_use(call_id, name="Bash"):
    return {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": name,
                                               "input": {"command": "ls"}}]}


def _tool_result(call_id):
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "a b"}]}


GOOD = '{"id": "ok", "steps": [{"tool": "Bash", "input": "ls", "output": "a"}]}'
DEEP = "[" * 100_000 + "]" * 100_000

# (file name, file text, what the one error line must contain)
CASES = [
    ("content5.jsonl", "\n".join(json.dumps(m) for m in [_tool_use("a"), _tool_result("a"),
                                                          {"role": "user", "content": 5}]),
     ":3: message.content must be a string or a list of content blocks, got int"),
    ("content5.json", json.dumps([_tool_use("a"), {"role": "user", "content": 5}]),
     ": messages[1].content must be a string or a list of content blocks, got int"),
    ("toolcalls.json", json.dumps([{"role": "assistant", "tool_calls": ["x"]}]),
     ": messages[0].tool_calls[0] must be an object, got str"),
    ("unhashable-anthropic.json", json.dumps([_tool_use(["a"]), _tool_result(["a"])]),
     ": messages[0].content[0].id must be a string, got list"),
    ("unhashable-openai.json", json.dumps([
        {"role": "assistant", "tool_calls": [{"id": {"a": 1}, "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": {"a": 1}, "content": "x"}]),
     ": messages[0].tool_calls[0].id must be a string, got dict"),
    ("deep.jsonl", GOOD + "\n" + DEEP + "\n", ":2: invalid JSON: nested too deeply"),
    ("deep-step.jsonl", GOOD + "\n" + json.dumps({"id": "d", "steps": [
        {"tool": "x", "input": json.loads("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5))}]}) + "\n",
     f":2: steps[0].input is nested deeper than {MAX_DEPTH} levels"),
    ("bigint.jsonl", GOOD + "\n" + '{"id": "b", "steps": [{"tool": "x", "input": ' + "9" * 5000 + "}]}\n",
     ":2: invalid JSON: Exceeds the limit (4300 digits) for integer string conversion"),
    ("bigint-doc.json", "[\n" + json.dumps(_tool_use("a")) + ",\n" + '{"role": "user", "content": [{"type": '
     '"tool_result", "tool_use_id": "a", "content": ' + "7" * 5000 + "}]}\n]\n",
     ":3: invalid JSON: Exceeds the limit (4300 digits)"),
]


@pytest.mark.parametrize("name,text,needle", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_naming_the_place_and_exit_2(semloop_cmd, tmp_path, name, text, needle):
    path = tmp_path / name
    path.write_text(text)
    proc = run(semloop_cmd, "scan", str(path), "--json")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith(f"semloop: error: {path}") and needle in errors[0], errors[0]


@pytest.mark.parametrize("name,text,needle", [c for c in CASES if c[0] != "bigint-doc.json"],
                         ids=[c[0] for c in CASES if c[0] != "bigint-doc.json"])
def test_skip_invalid_skips_the_bad_line_and_scans_the_rest(semloop_cmd, tmp_path, name, text, needle):
    path = tmp_path / name
    path.write_text(text)
    proc = run(semloop_cmd, "scan", str(path), "--json", "--skip-invalid")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    skipped = proc.stderr.strip().splitlines()  # one line per bad line or message
    assert skipped and all(line.startswith(f"semloop: skipped: {path}") for line in skipped)
    assert needle in skipped[0] and len(skipped) <= 2
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(rows) == 1  # the good line (or the message list without the bad message)
    if name.endswith(".jsonl") and name.startswith(("deep", "bigint")):
        assert rows[0]["id"] == "ok"


def test_skipped_message_keeps_the_rest_of_the_conversation():
    """A message list with one bad message: the calls around it are still read, in order."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conv.json"
        path.write_text(json.dumps([_tool_use("a"), _tool_result("a"), {"role": "user", "content": 5},
                                    _tool_use("b", "Read"), _tool_result("b")]))
        with pytest.raises(TraceError, match=r"messages\[2\]\.content"):
            load_traces(path)
        skipped = []
        [trace] = load_traces(path, skip_invalid=True, on_skip=skipped.append)
    assert [s.tool for s in trace.steps] == ["Bash", "Read"] and trace.steps[1].output == "a b"
    assert len(skipped) == 1 and "messages[2].content" in str(skipped[0])
