"""What the commands that read traces do with labels, odd but valid inputs, junk, many files,
a missing optional dependency, bad output paths and bad config files: a correct answer, or one
line naming the file (and the line and field) with exit 2; never a traceback, never a silent
"no loop" for input semloop did not understand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from semloop import cli
from semloop.traces import LABEL_KINDS, load_traces


def _step(cmd, out, err=False):
    return {"tool": "Bash", "input": {"command": cmd}, "output": out, "is_error": err}


def loop_trace(tid="loop", n=6):
    return {"id": tid, "label": {"loop": True, "onset": 1, "kind": "exact"},
            "steps": [_step("cat /etc/shadow", "cat: /etc/shadow: Permission denied", True)] * n}


def clean_trace(tid="clean", n=4):
    return {"id": tid, "label": {"loop": False, "onset": None, "kind": None},
            "steps": [_step(f"cat src/f{i}.py", f"def f{i}(): return {i}") for i in range(n)]}


def write_jsonl(path: Path, traces) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    return path


def main(capsys, *argv) -> tuple[int, str, str]:
    """`semloop ARGV` in this process: (exit status, stdout, stderr). An exception escaping
    `main` is a traceback the user would see: the test fails on it."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run(*argv, env=None, stdin=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "semloop", *map(str, argv)], capture_output=True, text=True,
                          timeout=600, env=env, input=stdin, cwd=cwd)


def one_error_line(err: str, path: Path | str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"semloop: error: {path}"), lines[0]
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# -- labels ----------------------------------------------------------------------------------

BAD_LABELS = [  # (label, the field named, what the message says)
    ({"loop": "false", "onset": None}, "label.loop", 'got "false"'),
    ({"loop": "maybe"}, "label.loop", 'got "maybe"'),
    ({"loop": 1, "onset": 1}, "label.loop", "got 1"),
    ({"loop": None}, "label.loop", "got null"),
    ({"onset": 2}, "label", "missing field 'loop'"),
    ({"loop": True, "onset": "two", "kind": "exact"}, "label.onset", 'got "two"'),
    ({"loop": True, "onset": 6, "kind": "exact"}, "label.onset 6", "it has 6 steps"),
    ({"loop": True, "onset": -1, "kind": "exact"}, "label.onset -1", "it has 6 steps"),
    ({"loop": True, "onset": 1.5, "kind": "exact"}, "label.onset", "got 1.5"),
    ({"loop": True, "onset": None, "kind": "exact"}, "label.onset", "got null"),
    ({"loop": True, "onset": True, "kind": "exact"}, "label.onset", "got true"),
    ({"loop": False, "onset": 2}, "label.onset", "must be null when label.loop is false"),
    ({"loop": True, "onset": 1, "kind": "weird"}, "label.kind", 'got "weird"'),
    ({"loop": True, "onset": 1, "kind": 3}, "label.kind", "got 3"),
    ("yes", "field 'label'", "must be an object"),
]


def _labelled_file(tmp_path, label) -> Path:
    bad = loop_trace("bad")
    bad["label"] = label
    return write_jsonl(tmp_path / "labels.jsonl", [loop_trace(), clean_trace(), bad])


@pytest.mark.parametrize("label,field,says", BAD_LABELS, ids=[json.dumps(c[0]) for c in BAD_LABELS])
@pytest.mark.parametrize("command", ["scan", "report", "bench", "calibrate", "demo"])
def test_a_bad_label_is_one_line_naming_file_line_and_field(capsys, tmp_path, command, label, field, says):
    path = _labelled_file(tmp_path, label)
    extra = {"scan": ["--detector", "exact"], "report": ["--detector", "exact", "--out", tmp_path / "r.html"],
             "bench": ["--detectors", "exact", "--out", tmp_path / "b"], "calibrate": ["--out", tmp_path / "c"],
             "demo": []}[command]
    code, out, err = main(capsys, command, path, *extra)
    assert code == 2, (out, err)
    one_error_line(err, f"{path}:3: {field}", says)
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


def test_good_labels_are_read(tmp_path):
    loop = loop_trace()
    loop["label"] = {"loop": True, "onset": 5, "kind": None, "confidence": "low", "note": "kept for people"}
    clean = clean_trace()
    clean["label"] = {"loop": False}  # onset and kind may be left out when there is no loop
    traces = load_traces(write_jsonl(tmp_path / "ok.jsonl", [loop, clean] + [
        {**loop_trace(f"k-{kind}"), "label": {"loop": True, "onset": 0, "kind": kind}} for kind in LABEL_KINDS]))
    assert [t.label["loop"] for t in traces] == [True, False] + [True] * len(LABEL_KINDS)


def test_calibrate_reads_false_as_false_not_as_a_loop(capsys, tmp_path):
    """`"loop": "false"` was counted as a loop (recall 0.333, FPR nan); `false` is a clean trace."""
    path = write_jsonl(tmp_path / "t.jsonl", [loop_trace(), clean_trace("c1"), clean_trace("c2")])
    code, _, err = main(capsys, "calibrate", path, "--out", tmp_path / "cal", "--no-plot", "--no-progress")
    assert code == 0, err
    result = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    assert result["chosen"]["negatives"] == 2 and result["chosen"]["loops"] == 1
    assert "a small sample (1 loop(s), 2 clean trace(s))" in err  # and it says so


def test_demo_on_unlabeled_traces_says_unlabeled(capsys, tmp_path):
    unlabeled = {k: v for k, v in loop_trace("nolabel").items() if k != "label"}
    path = write_jsonl(tmp_path / "u.jsonl", [unlabeled, clean_trace()])
    code, out, err = main(capsys, "demo", path)
    assert code == 0, err
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(("nolabel", "clean"))}
    assert "unlabeled" in rows["nolabel"] and "no loop" not in rows["nolabel"]
    assert "no loop" in rows["clean"]


# -- what a file may hold --------------------------------------------------------------------


def _ids_and_steps(out: str) -> list[tuple[str, int]]:
    return [(r["id"], r["steps"]) for r in map(json.loads, out.splitlines())]


def test_an_array_of_traces_and_a_pretty_printed_trace_read_as_their_jsonl(capsys, tmp_path):
    traces = [loop_trace(), clean_trace()]
    jsonl = write_jsonl(tmp_path / "t.jsonl", traces)
    array = tmp_path / "array.json"
    array.write_text(json.dumps(traces, indent=2))
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(traces[0], indent=2))
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + jsonl.read_bytes().replace(b"\n", b"\r\n"))
    expected = main(capsys, "scan", jsonl, "--json", "--detector", "exact")
    assert expected[0] == 0 and _ids_and_steps(expected[1]) == [("loop", 6), ("clean", 4)]
    for path in (array, bom):
        assert main(capsys, "scan", path, "--json", "--detector", "exact")[:2] == expected[:2]
    code, out, err = main(capsys, "scan", pretty, "--json", "--detector", "exact")
    assert code == 0 and out == expected[1].splitlines(keepends=True)[0], err


JUNK = [  # (name, text, what the one line says)
    ("empty.jsonl", "", "the file is empty (no traces)"),
    ("blank.jsonl", "\n  \n\n", "the file is empty (no traces)"),
    ("empty-array.json", "[]", "an empty JSON array (no traces)"),
    ("no-step.json", '{"messages": [{"foo": 1}]}', "messages[0]: missing field 'role'"),
    ("no-role.json", '[{"content": "hi"}, {"role": "user", "content": "x"}]', "messages[0]: missing field 'role'"),
    ("ints.json", "[1, 2]", "[0]: a trace must be a JSON object, got int"),
    ("foo-array.json", '[{"foo": 1}]', "[0]: missing field 'id'"),
    ("null.json", "null", ":1: a trace must be a JSON object, got null"),
    ("text.txt", "hello world\n", ":1: invalid JSON"),
    ("messages-empty.json", '{"messages": []}', "an empty message list (no traces)"),
]


@pytest.mark.parametrize("name,text,says", JUNK, ids=[j[0] for j in JUNK])
def test_junk_is_an_error_in_scan_report_and_bench_alike(capsys, tmp_path, name, text, says):
    path = tmp_path / name
    path.write_text(text)
    for argv in (["scan", path, "--detector", "exact"], ["report", path, "--out", tmp_path / "r.html"],
                 ["bench", path, "--detectors", "exact", "--out", tmp_path / "b", "--no-progress"]):
        code, out, err = main(capsys, *argv)
        assert code == 2 and "0 steps" not in out, (argv, out, err)
        one_error_line(err, path, says)


def test_skip_invalid_skips_an_empty_file_and_reads_the_others(capsys, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    good = write_jsonl(tmp_path / "good.jsonl", [clean_trace()])
    code, out, err = main(capsys, "scan", empty, good, "--json", "--skip-invalid", "--detector", "exact")
    assert code == 0 and _ids_and_steps(out) == [("clean", 4)]
    assert err.strip() == f"semloop: skipped: {empty}: the file is empty (no traces)"


def test_a_conversation_without_tool_calls_is_0_steps_not_an_error(capsys, tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    code, out, err = main(capsys, "scan", path, "--json", "--detector", "exact")
    assert code == 0 and _ids_and_steps(out) == [("chat", 0)], err


def test_lone_surrogates_read_as_replacement_characters(tmp_path):
    """`"Ba\\udcffsh"` crashed the default scan (the tokenizer) and report (writing the page)."""
    path = tmp_path / "s.jsonl"
    line = json.dumps(loop_trace()).replace('"loop"', '"lo\\udcffop"', 1).replace('"Bash"', '"Ba\\udcffsh"')
    path.write_text(line + "\n")
    env = {**os.environ, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    scan = run("scan", path, "--json", env=env)
    assert scan.returncode == 0, scan.stderr
    assert json.loads(scan.stdout)["id"] == "lo\ufffdop"
    report = run("report", path, "--out", tmp_path / "r.html", env=env)
    assert report.returncode == 0, report.stderr
    assert "Ba\ufffdsh" in (tmp_path / "r.html").read_text(encoding="utf-8")


# -- many files, globs, stdin, --fail-on ---------------------------------------------------------


def test_scan_takes_many_files_globs_and_stdin_with_jobs(capsys, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    a = write_jsonl(runs / "a.jsonl", [loop_trace("a1"), clean_trace("a2")])
    b = write_jsonl(runs / "b.jsonl", [clean_trace("b1")])
    one_by_one = []
    for path in (a, b):
        code, out, _ = main(capsys, "scan", path, "--json")
        one_by_one += _ids_and_steps(out)
    assert one_by_one == [("a1", 6), ("a2", 4), ("b1", 4)]
    code, out, err = main(capsys, "scan", runs / "*.jsonl", "--json", "--jobs", "2")  # the README's line
    assert code == 0 and _ids_and_steps(out) == one_by_one, err
    code, out, _ = main(capsys, "scan", a, b)
    assert out.strip().splitlines()[-1].startswith("3 trace(s) from 2 files scanned")
    proc = run("scan", "-", "--json", "--detector", "exact", stdin=b.read_text())
    assert proc.returncode == 0 and _ids_and_steps(proc.stdout) == [("b1", 4)], proc.stderr
    code, out, err = main(capsys, "scan", runs / "*.txt")
    assert code == 2 and err.strip() == f"semloop: error: {runs / '*.txt'}: no file matches"


def test_fail_on_gives_exit_1_when_a_trace_reaches_the_level(capsys, tmp_path):
    warn_only = write_jsonl(tmp_path / "warn.jsonl", [loop_trace(n=3)])
    stops = write_jsonl(tmp_path / "stop.jsonl", [loop_trace(n=12)])
    clean = write_jsonl(tmp_path / "clean.jsonl", [clean_trace()])
    first = lambda path: json.loads(main(capsys, "scan", path, "--json")[1])  # noqa: E731
    assert first(warn_only)["first_warn"] is not None and first(warn_only)["first_stop"] is None
    assert first(stops)["first_stop"] is not None
    for path, level, code in [(clean, "warn", 0), (clean, "stop", 0), (warn_only, "warn", 1), (warn_only, "stop", 0),
                              (stops, "warn", 1), (stops, "stop", 1), (warn_only, None, 0), (stops, None, 0)]:
        flags = ["--fail-on", level] if level else []
        assert main(capsys, "scan", path, *flags)[0] == code, (path.name, level)
        assert main(capsys, "report", path, "--out", tmp_path / "r.html", *flags)[0] == code, (path.name, level)
    (tmp_path / "bad.jsonl").write_text("{\n")
    assert main(capsys, "scan", tmp_path / "bad.jsonl", "--fail-on", "warn")[0] == 2


# -- a missing optional dependency ---------------------------------------------------------------


@pytest.fixture
def without(tmp_path):
    """An environment in which the named modules are not installed (importing one fails as it
    does on an install without the extra)."""

    def env(*modules: str) -> dict:
        folder = tmp_path / "not-installed"
        folder.mkdir(exist_ok=True)
        for name in modules:
            (folder / f"{name}.py").write_text(f"raise ModuleNotFoundError(\"No module named '{name}'\", name={name!r})\n")
        path = os.environ.get("PYTHONPATH") or str(Path(__file__).resolve().parents[1])
        return {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), path])}

    return env


@pytest.mark.parametrize("argv,module,extra", [
    (["report", "{data}", "--png", "{tmp}/png", "--out", "{tmp}/r.html"], "matplotlib", "bench"),
    (["scan", "{data}", "--embedding", "hashing"], "sklearn", "learn"),
    (["scan", "{data}", "--embedding", "hashing", "--no-batch"], "sklearn", "learn"),
    (["scan", "{data}", "--embedding", "sentence-transformers"], "sentence_transformers", "st"),
    (["scan", "{data}", "--engine", "ray"], "ray", "ray"),
    (["sessions", "--store", "redis://127.0.0.1:1/0", "list"], "redis", "redis"),
    (["bench", "{data}", "--detectors", "exact", "--out", "{tmp}/b"], "matplotlib", "bench"),
])
def test_a_missing_extra_is_one_line_with_the_install_hint(tmp_path, without, argv, module, extra):
    data = write_jsonl(tmp_path / "t.jsonl", [loop_trace(), clean_trace()])
    argv = [a.format(data=data, tmp=tmp_path) for a in argv]
    proc = run(*argv, env=without(module))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("semloop: error: "), proc.stderr
    assert "pip install" in lines[0] and f"[{extra}]" in lines[0], lines[0]
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "b").exists()  # found before the work


# -- output paths, config files ----------------------------------------------------------------------


def test_report_out_creates_missing_folders_and_says_so(capsys, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [clean_trace()])
    out = tmp_path / "no" / "such" / "dir" / "r.html"
    code, _, err = main(capsys, "report", data, "--out", out, "--detector", "exact")
    assert code == 0 and out.exists(), err
    assert f"semloop: created folder {out.parent}" in err


@pytest.mark.parametrize("command", ["report", "bench", "calibrate"])
def test_an_unwritable_out_fails_before_any_work(capsys, tmp_path, monkeypatch, command):
    import semloop.bench.calibrate
    import semloop.bench.runner
    import semloop.report

    def no_work(*args, **kwargs):
        raise AssertionError("the work started before --out was checked")

    monkeypatch.setattr(semloop.report, "build_reports", no_work)
    monkeypatch.setattr(semloop.bench.runner, "run_bench", no_work)
    monkeypatch.setattr(semloop.bench.calibrate, "run_calibrate", no_work, raising=True)
    data = write_jsonl(tmp_path / "t.jsonl", [loop_trace(), clean_trace()])
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    out = blocker / "sub" / ("r.html" if command == "report" else "dir")
    code, _, err = main(capsys, command, data, "--out", out)
    assert code == 2
    one_error_line(err, out, f"{blocker} is not a folder")


def test_bench_checks_first_shows_progress_and_keeps_the_default_fast(tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [loop_trace(), clean_trace(), clean_trace("c2")])
    proc = run("bench", data, "--detectors", "exact", "--no-sweep", "--perf-runs", "0", "--no-plots",
               "--latency-steps", "4", "--out", tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    stages = [line for line in proc.stderr.splitlines() if line.startswith("semloop bench: ")]
    assert stages[0] == "semloop bench: 3 traces in 1 file(s), detectors exact"
    assert any("one session of 10,000 steps" in line for line in stages), proc.stderr
    assert "stored state" in proc.stdout and "pickle" not in proc.stdout
    results = json.loads((tmp_path / "b" / "results.json").read_text())
    assert results["process"]["session"]["steps"] == 10_000


def test_the_session_memory_figure_is_the_stored_size(tmp_path):
    from semloop import LoopGuard
    from semloop.bench.perf import _session_memory_here

    path = write_jsonl(tmp_path / "t.jsonl", [loop_trace(), clean_trace()])
    figures = _session_memory_here([str(path)], 30, "static")
    guard = LoopGuard()
    guard.record("warm-up", {"x": 1}, "model loaded")
    pool = [s for t in load_traces(path) for s in t.steps]
    for i in range(30):
        s = pool[i % len(pool)]
        guard.record(s.tool, {"step": i, "input": s.input}, s.output, s.is_error)
    assert figures["state_bytes_after"] == len(guard.to_bytes())


@pytest.mark.parametrize("name,text,says", [
    ("bad.json", "{bad", "invalid JSON"),
    ("bad.toml", "x = [", "invalid TOML"),
    ("list.json", "[1]", "holds one object"),
    ("latin1.json", b"\xff\xfe{}", "not UTF-8"),
    ("missing.json", None, "cannot read the config file"),
])
def test_config_errors_name_the_file(capsys, tmp_path, name, text, says):
    config = tmp_path / name
    if isinstance(text, bytes):
        config.write_bytes(text)
    elif text is not None:
        config.write_text(text)
    data = write_jsonl(tmp_path / "t.jsonl", [clean_trace()])
    code, _, err = main(capsys, "scan", data, "--config", config)
    assert code == 2
    one_error_line(err, config, says)


# -- help texts --------------------------------------------------------------------------------------


@pytest.mark.parametrize("target,hooks", [("claude-code", "http"), ("claude-code", "command"), ("gemini-cli", None)])
def test_install_help_lists_the_events_install_writes(tmp_path, target, hooks):
    settings = tmp_path / "settings.json"
    proc = run("install", target, "--settings", settings, *(["--hooks", hooks] if hooks else []))
    assert proc.returncode == 0, proc.stderr
    written = set(json.loads(settings.read_text())["hooks"])
    help_text = " ".join(run("install", "--help").stdout.split())
    part = help_text.split("Gemini CLI")[0 if target == "claude-code" else 1]
    assert written and all(event in part for event in written), (written, part)
