"""The `semloop scan` contract, end to end through the real console script."""

import json
import subprocess

import pytest

from conftest import ROOT

EXAMPLES = ROOT / "semloop" / "examples.jsonl"


def run(cmd, *args, stdin=None):
    return subprocess.run([*cmd, *args], capture_output=True, text=True, input=stdin, timeout=300)


def test_json_output_is_one_object_per_trace(semloop_cmd):
    proc = run(semloop_cmd, "scan", str(EXAMPLES), "--json")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    traces = [json.loads(line) for line in EXAMPLES.read_text().splitlines()]
    assert [r["id"] for r in rows] == [t["id"] for t in traces]
    for row, trace in zip(rows, traces):
        assert set(row) == {"id", "steps", "first_warn", "first_stop", "events"}
        assert row["steps"] == len(trace["steps"])
        for event in row["events"]:
            assert event["action"] in ("warn", "stop") and 0 <= event["step"] < row["steps"]
            assert all(set(s) == {"kind", "score", "related_steps"} for s in event["signals"])
            assert all(0 <= i < event["step"] for s in event["signals"] for i in s["related_steps"])
        if row["events"]:
            assert row["first_warn"] == next(e["step"] for e in row["events"] if e["action"] == "warn")
        # the bundled examples are labeled: loops flagged, hard negatives quiet
        assert (row["first_warn"] is not None) == trace["label"]["loop"], row["id"]


def test_exact_detector_misses_the_paraphrase_loop(semloop_cmd):
    rows = {json.loads(l)["id"]: json.loads(l) for l in
            run(semloop_cmd, "scan", str(EXAMPLES), "--json", "--detector", "exact").stdout.splitlines()}
    assert rows["paraphrased-web-search"]["first_warn"] is None
    assert rows["negative-polling-converges"]["first_warn"] == 2  # and cries wolf on polling


def test_human_report_and_summary(semloop_cmd):
    proc = run(semloop_cmd, "scan", str(EXAMPLES))
    assert proc.returncode == 0
    assert "✗ paraphrased-web-search" in proc.stdout and "✓ negative-pagination" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1].startswith("9 trace(s) scanned")


@pytest.mark.parametrize("line,needle", [
    ("{not json", "line 2: invalid JSON"),
    ('{"steps": []}', "missing field 'id'"),
    ('{"id": "x", "steps": [{"input": {}}]}', "steps[0]: missing field 'tool'"),
    ('{"id": "x", "steps": [{"tool": 3, "input": {}}]}', "steps[0].tool must be a string"),
    ('{"id": "x", "steps": "nope"}', "field 'steps' must be a list"),
])
def test_bad_input_names_line_and_field(semloop_cmd, tmp_path, line, needle):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"id": "ok", "steps": []}\n' + line + "\n")
    proc = run(semloop_cmd, "scan", str(f), "--json")
    assert proc.returncode != 0
    assert needle.replace("line 2", f"{f}:2") in proc.stderr or needle in proc.stderr, proc.stderr
    skipped = run(semloop_cmd, "scan", str(f), "--json", "--skip-invalid")
    assert skipped.returncode == 0 and "skipped" in skipped.stderr
    assert [json.loads(l)["id"] for l in skipped.stdout.splitlines()] == ["ok"]


def test_other_formats(semloop_cmd, tmp_path):
    tool_use = lambda i: {"role": "assistant", "content": [
        {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "cat /etc/shadow"}}]}
    tool_result = lambda i: {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"t{i}", "content": "Permission denied", "is_error": True}]}
    anthropic_msgs = [{"role": "user", "content": "read the file"}]
    for i in range(3):
        anthropic_msgs += [tool_use(i), tool_result(i)]
    (tmp_path / "a.json").write_text(json.dumps(anthropic_msgs))
    row = json.loads(run(semloop_cmd, "scan", str(tmp_path / "a.json"), "--json").stdout)
    assert row["steps"] == 3 and row["first_warn"] == 2

    openai_msgs = [{"role": "user", "content": "hi"}]
    for i in range(3):
        openai_msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
                            "function": {"name": "get_order", "arguments": json.dumps({"order_id": 7})}}]})
        openai_msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": "order 7: on hold, eta unknown"})
    (tmp_path / "o.json").write_text(json.dumps(openai_msgs))
    row = json.loads(run(semloop_cmd, "scan", str(tmp_path / "o.json"), "--json").stdout)
    assert row["steps"] == 3 and row["first_warn"] == 2

    transcript = "\n".join(json.dumps({"type": m["role"], "sessionId": "s-1", "message": m}) for m in anthropic_msgs)
    (tmp_path / "session.jsonl").write_text(transcript + "\n")
    row = json.loads(run(semloop_cmd, "scan", str(tmp_path / "session.jsonl"), "--json").stdout)
    assert row["id"] == "s-1" and row["first_warn"] == 2


def test_config_file_and_threshold_flags(semloop_cmd, tmp_path):
    (tmp_path / "c.json").write_text(json.dumps({"max_warnings": 0}))
    rows = [json.loads(l) for l in run(semloop_cmd, "scan", str(EXAMPLES), "--json", "--config",
                                       str(tmp_path / "c.json")).stdout.splitlines()]
    assert any(r["first_stop"] is not None and r["first_stop"] == r["events"][0]["step"] for r in rows)
    bad = run(semloop_cmd, "scan", str(EXAMPLES), "--threshold", "7")
    assert bad.returncode != 0 and "call_threshold" in bad.stderr


def test_readme_shows_what_the_demo_prints(semloop_cmd):
    demo = run(semloop_cmd, "demo").stdout
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("```\ntrace") + 4: readme.index("```", readme.index("```\ntrace") + 4)]
    assert table.strip() in demo


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from semloop import Config  # noqa: E402
from semloop.scan import scan_trace  # noqa: E402
from semloop.traces import TraceError, parse_trace  # noqa: E402

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                     max_leaves=15)
_step = st.fixed_dictionaries({"tool": st.text(max_size=10), "input": _json},
                              optional={"output": _json, "is_error": st.booleans()})


@settings(max_examples=60, deadline=None)
@given(st.one_of(_json, st.fixed_dictionaries({"id": st.text(max_size=5), "steps": st.lists(_step, max_size=8)})))
def test_any_json_line_is_scanned_or_rejected_with_a_trace_error(obj):
    try:
        trace = parse_trace(obj, "fuzz:1")
    except TraceError as exc:
        assert str(exc).startswith("fuzz:1")
        return
    result = scan_trace(trace, Config(fail_open=False))  # an internal error would raise here
    assert result.steps == len(trace.steps)
