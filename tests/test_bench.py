"""`semloop bench` / `semloop calibrate`: metric arithmetic, replay fidelity, and both commands
end to end on small hand-made labelled traces."""

import json
import math
import subprocess

import pytest

from semloop.bench import metrics
from semloop.bench.metrics import TraceOutcome
from semloop.config import Config
from semloop.scan import scan_trace
from semloop.traces import load_traces


def _step(tool, inp, out, err=False):
    return {"tool": tool, "input": inp, "output": out, "is_error": err}


def _loop_exact():
    steps = [_step("bash", {"command": "ls"}, "a.txt b.txt"),
             _step("read_file", {"path": "b.txt"}, "hello world, this is b")]
    steps += [_step("read_file", {"path": "/etc/secret.txt"}, "Error: permission denied: /etc/secret.txt", True)] * 4
    return {"id": "loop-exact", "steps": steps, "label": {"loop": True, "onset": 2, "kind": "exact"}}


def _loop_paraphrase():
    queries = ["weather in Paris tomorrow", "Paris weather forecast for tomorrow",
               "tomorrow's weather in Paris", "forecast weather Paris tomorrow", "Paris tomorrow weather forecast"]
    steps = [_step("web_search", {"query": q}, "No results found for your query. Try different keywords.")
             for q in queries]
    return {"id": "loop-para", "steps": [_step("bash", {"command": "date"}, "Mon")] + steps,
            "label": {"loop": True, "onset": 1, "kind": "paraphrase"}}


def _neg_polling():
    steps = [_step("bash", {"command": "kubectl get pod web-1"}, f"web-1 status: Pending, ready {i}/4")
             for i in range(5)]
    return {"id": "neg-poll", "steps": steps, "label": {"loop": False, "onset": None, "kind": None},
            "meta": {"negative_kind": "polling"}}


def _neg_files():
    steps = [_step("read_file", {"path": f"src/module_{i}.py"}, f"def f{i}():\n    return {i * 7}\n")
             for i in range(6)]
    return {"id": "neg-files", "steps": steps, "label": {"loop": False, "onset": None, "kind": None},
            "meta": {"negative_kind": "many_files"}}


def _neg_normal():
    steps = [_step("bash", {"command": "git status"}, "On branch main"),
             _step("read_file", {"path": "README.md"}, "# Project\nA project."),
             _step("bash", {"command": "pytest -q"}, "3 passed")]
    return {"id": "neg-normal", "steps": steps, "label": {"loop": False, "onset": None, "kind": None},
            "meta": {"negative_kind": "normal"}}


TRACES = [_loop_exact(), _loop_paraphrase(), _neg_polling(), _neg_files(), _neg_normal()]


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TRACES))
    return path


def _o(loop, flag=None, stop=None, onset=None, n=10, hard=False, kind=None, neg=None):
    return TraceOutcome("d", "t", n, loop, onset, kind or ("exact" if loop else None), neg, hard, flag, stop)


# -- metric arithmetic -----------------------------------------------------------------------


def test_scalar_metrics_and_nan_cases():
    assert metrics.precision(3, 1) == 0.75
    assert metrics.recall(3, 3) == 0.5
    assert metrics.f1(0.75, 0.5) == pytest.approx(0.6)
    assert metrics.f1(0.0, 0.0) == 0.0
    assert metrics.fpr(1, 4) == 0.25
    assert math.isnan(metrics.precision(0, 0))  # nothing flagged
    assert math.isnan(metrics.recall(0, 0))  # no loops
    assert math.isnan(metrics.fpr(0, 0))  # no negatives
    assert math.isnan(metrics.f1(float("nan"), 1.0))
    assert math.isnan(metrics.median([])) and math.isnan(metrics.mean([]))
    assert metrics.percentile([1, 2, 3, 4], 50) == 2.5
    assert metrics.percentile([5], 99) == 5


def test_summarize_hand_computed():
    outcomes = [
        _o(True, flag=5, stop=7, onset=3, n=10),  # TP, delay 2, saved 10-1-7 = 2
        _o(True, flag=4, onset=4, n=8),  # TP, delay 0, no stop: saved 0
        _o(True, flag=1, stop=2, onset=3, n=6),  # TP but early (flag before onset): saved 3
        _o(True, onset=2, n=5),  # FN
        _o(False, flag=2, stop=3, n=9, hard=True, neg="polling"),  # FP on a hard negative, cuts 5 steps
        _o(False, n=4, hard=True, neg="polling"),  # TN
        _o(False, n=4),  # TN, not hard
    ]
    s = metrics.summarize(outcomes)
    assert (s["tp"], s["fp"], s["fn"], s["tn"]) == (3, 1, 1, 2)
    assert s["precision"] == 0.75 and s["recall"] == 0.75 and s["f1"] == pytest.approx(0.75)
    assert s["fpr"] == pytest.approx(1 / 3)
    assert s["hard_fpr"] == 0.5 and s["hard_negatives"] == 2
    assert s["early"] == 1
    assert s["delays"] == [2, 0] and s["delay_median"] == 1.0 and s["delay_mean"] == 1.0
    assert s["steps_saved"] == 2 + 0 + 3
    # steps from onset on, over loop traces: (10-3) + (8-4) + (6-3) + (5-2) = 17
    assert s["steps_saved_frac"] == pytest.approx(5 / 17)
    assert s["steps_cut_negatives"] == 5 and s["stops_on_negatives"] == 1


def test_summarize_undefined_is_nan():
    s = metrics.summarize([_o(False, n=3), _o(False, n=3)])  # no loops, nothing flagged
    for key in ("precision", "recall", "f1", "hard_fpr", "delay_median", "delay_mean", "steps_saved_frac"):
        assert math.isnan(s[key]), key
    assert s["fpr"] == 0.0
    assert metrics.jsonable({"a": [float("nan"), 1.0]}) == {"a": [None, 1.0]}


def test_by_kind_groups_loop_and_negative_kinds():
    outcomes = [_o(True, flag=3, onset=2, kind="exact"), _o(True, onset=2, kind="paraphrase"),
                _o(False, flag=1, neg="polling"), _o(False, neg="polling")]
    k = metrics.by_kind(outcomes)
    assert k["loop:exact"]["recall"] == 1.0 and k["loop:exact"]["delay_median"] == 1.0
    assert k["loop:paraphrase"]["recall"] == 0.0
    assert k["neg:polling"] == {"n": 2, "fpr": 0.5, "flagged": 1}


# -- replay is the real guard ----------------------------------------------------------------


def test_replay_matches_scan_trace(tiny):
    from semloop.bench.runner import DETECTORS, config_for, embed_all, load_datasets, prepare, replay
    from semloop.embeddings import load_embedder

    base = Config()
    prepared = prepare(load_datasets([str(tiny)]), base)
    for backend in ("static", "hashing"):
        embed_all(prepared, backend, load_embedder(backend))
    for name in DETECTORS:
        if name == "semantic-st":
            continue
        cfg = config_for(name, base)
        for p in prepared:
            expected = scan_trace(p.trace, cfg)
            got = replay(p, cfg)
            assert (got.first_flag, got.first_stop) == (expected.first_flag, expected.first_stop), (name, p.trace.id)
    hard = {p.trace.id: p.hard_negative for p in prepared}
    assert hard == {"loop-exact": False, "loop-para": False, "neg-poll": True, "neg-files": True,
                    "neg-normal": False}


def test_unlabelled_traces_are_an_error(tmp_path):
    from semloop.bench.runner import load_datasets

    path = tmp_path / "nolabel.jsonl"
    path.write_text(json.dumps({"id": "x", "steps": [_step("bash", {"command": "ls"}, "ok")]}) + "\n")
    with pytest.raises(ValueError, match="no label"):
        load_datasets([str(path)])


# -- the commands, end to end ----------------------------------------------------------------


def test_bench_end_to_end(tiny, tmp_path, semloop_cmd):
    out = tmp_path / "results"
    proc = subprocess.run(semloop_cmd + ["bench", str(tiny), "--detectors", "exact,semantic-hashing,semantic",
                                         "--out", str(out), "--perf-runs", "1", "--latency-steps", "30", "--outcomes",
                                         "--memory-steps", "200"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for name in ("results.md", "results.json", "outcomes.jsonl", "pr_vs_threshold.png", "tradeoff.png",
                 "delay_distribution.png"):
        assert (out / name).stat().st_size > 0, name
    data = json.loads((out / "results.json").read_text())  # strict JSON: nan written as null
    assert data["detectors"] == ["exact", "semantic-hashing", "semantic"]
    overall = data["overall"]
    assert overall["exact"]["tp"] == 1 and overall["exact"]["recall"] == 0.5  # misses the paraphrase loop
    assert overall["semantic"]["recall"] == 1.0 and overall["semantic"]["fp"] == 0
    assert overall["semantic"]["hard_negatives"] == 2
    assert data["latency"]["exact"]["p50_vs_exact"] == 1.0
    seed = data["latency"]["semantic"]  # the seed-style baseline timed on the same steps
    assert seed["seed_p50_ms"] > 0 and seed["p50_vs_seed"] == seed["p50_ms"] / seed["seed_p50_ms"]
    assert data["throughput"]["steps"] == sum(len(t["steps"]) for t in TRACES)
    assert data["throughput"]["batched_steps_per_s"] > 0
    session = data["process"]["session"]
    assert session["steps"] == 200 and session["rss_after_mb"] >= session["rss_model_loaded_mb"] > 0
    assert "p50 × seed" in proc.stdout and "steps/s" in proc.stdout
    assert data["latency"]["semantic"]["steps"] > 0
    assert "import_semloop_ms" in data["process"]["import"]
    assert data["process"]["memory"]["rss_after_model_mb"] > data["process"]["memory"]["rss_before_model_mb"]
    assert [r["call_threshold"] for r in data["sweep"]["semantic"]][:2] == [0.7, 0.72]
    at_default = next(r for r in data["sweep"]["semantic"] if r["call_threshold"] == Config().call_threshold)
    assert at_default["stops_on_loops"] == overall["semantic"]["stops_on_loops"]  # the hard curve, per threshold
    md = (out / "results.md").read_text()
    assert "the soft and hard trade-off curves" in md and "hard recall" in md
    assert "| `semantic` |" in md and "Steps saved" in md and "loop:" not in md
    assert "paraphrase (n=1)" in md and "polling (n=1)" in md


def test_bench_runs_agent_loop_guard_and_reports_both_levels(tiny, tmp_path, semloop_cmd):
    """The peer runs through its own package (`loop_guard`, the `bench` extra), trace by trace as
    its `check` answers; the report has the soft/hard table and the hard-block trade-off grid."""
    pytest.importorskip("loop_guard")
    from loop_guard import Action
    from loop_guard import LoopGuard as PeerGuard

    out = tmp_path / "results"
    proc = subprocess.run(semloop_cmd + ["bench", str(tiny), "--detectors", "semantic,agent-loop-guard",
                                         "--out", str(out), "--perf-runs", "0", "--latency-steps", "20",
                                         "--memory-steps", "0", "--outcomes", "--jobs", "1",
                                         "--peer-cache", str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "results.json").read_text())
    assert data["detectors"] == ["semantic", "agent-loop-guard"]
    rows = [json.loads(line) for line in (out / "outcomes.jsonl").read_text().splitlines()]
    for trace in TRACES:
        peer, flag = PeerGuard(), None
        for i, step in enumerate(trace["steps"]):
            if peer.check(step["tool"], step["input"], str(step["output"])).action != Action.CONTINUE and flag is None:
                flag = i
        row = next(r for r in rows if r["detector"] == "agent-loop-guard" and r["id"] == trace["id"])
        assert row["first_flag"] == flag
    assert len((tmp_path / "cache" / "agent-loop-guard.jsonl").read_text().splitlines()) == len(TRACES)
    grid = data["hard_tradeoff"]
    assert len(grid) == 12 and {r["stop_gate"] for r in grid} == {"rules", "same_loop", "agree", "same_loop+agree"}
    assert all(r["stops_on_loops"] <= r["loops"] for r in grid)
    curve = data["gate_tradeoff"]
    assert [r["gate"] for r in curve][:2] == [False, True] and all(r["soft_fpr"] <= curve[0]["soft_fpr"] for r in curve)
    md = (out / "results.md").read_text()
    assert "## Soft and hard block" in md and "## Hard-block trade-off" in md and "| `agent-loop-guard` |" in md
    assert "## Second-view trade-off" in md


def test_bench_rejects_unknown_detector(tiny, tmp_path, semloop_cmd):
    proc = subprocess.run(semloop_cmd + ["bench", str(tiny), "--detectors", "exact,nope", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "nope" in proc.stderr


def test_calibrate_snippet_meets_target(tiny, tmp_path, semloop_cmd):
    written = tmp_path / "tuned.json"
    proc = subprocess.run(semloop_cmd + ["calibrate", str(tiny), "--target-fpr", "0.0", "--out", str(tmp_path),
                                         "--write", str(written), "--per-tool", "--min-tool-loops", "1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    snippet = json.loads(proc.stdout)
    assert {"call_threshold", "result_threshold"} <= set(snippet)
    # --per-tool either suggests overrides or says why it suggests none
    assert ("tool_overrides" in snippet) != ("--per-tool:" in proc.stderr), proc.stderr
    cfg = Config.from_dict(snippet)
    assert Config.from_file(written) == cfg
    assert (tmp_path / "calibration.png").stat().st_size > 0
    grid = json.loads((tmp_path / "calibration.json").read_text())
    assert len(grid["grid"]) == 15 * 8
    traces = load_traces(tiny)
    flagged_neg = [t.id for t in traces if not t.label["loop"] and scan_trace(t, cfg).first_flag is not None]
    found = [t.id for t in traces if t.label["loop"] and scan_trace(t, cfg).first_flag is not None]
    assert flagged_neg == []  # FPR 0 <= target on this file
    assert found == ["loop-exact", "loop-para"]


def test_calibrate_unlabelled_is_a_clear_error(tmp_path, semloop_cmd):
    path = tmp_path / "nolabel.jsonl"
    path.write_text(json.dumps({"id": "x", "steps": [_step("bash", {"command": "ls"}, "ok")]}) + "\n")
    proc = subprocess.run(semloop_cmd + ["calibrate", str(path), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no label" in proc.stderr and proc.stdout == ""
