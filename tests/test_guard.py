import logging
import pickle

import pytest

from semloop import Config, LoopGuard, Verdict

LOOP = ("Bash", {"command": "cat /tmp/test.txt"}, "cat: /tmp/test.txt: Permission denied")


def test_escalation_warn_then_stop_with_complete_message():
    """The very same failing call: the third is warned, and the fourth, which the second view is
    sure of (`sure_score`), stops the run; with the early stop off, two warnings come first."""
    guard = LoopGuard()
    actions = [guard.record(*LOOP).action for _ in range(6)]
    assert actions == ["allow", "allow", "warn", "stop", "stop", "stop"]
    patient = LoopGuard(sure_score=1.0)
    assert [patient.record(*LOOP).action for _ in range(6)] == ["allow", "allow", "warn", "warn", "stop", "stop"]
    verdict = guard.record(*LOOP)
    assert verdict.message.startswith("semloop stopped this run")
    assert verdict.message.rstrip().endswith(".")
    assert "cat /tmp/test.txt" in verdict.message


def test_max_warnings_is_configurable():
    guard = LoopGuard(max_warnings=0)
    assert [guard.record(*LOOP).action for _ in range(3)] == ["allow", "allow", "stop"]


def test_check_is_cheap_and_refuses_a_known_loop_only():
    guard = LoopGuard(sure_score=1.0)  # two warnings before the stop: check refuses after the second
    assert guard.check(*LOOP[:2]).action == "allow"
    for _ in range(4):
        guard.record(*LOOP)  # allow, allow, warn, warn
    before = guard.state.steps_seen
    denied = guard.check("Bash", {"command": "cat  /tmp/test.txt"})  # normalized form of the loop
    assert denied.action == "stop" and "not run" in denied.message
    assert guard.state.steps_seen == before  # check never records a step
    assert guard.stopped  # a refusal is the hard stop: retrying cannot go on forever
    assert guard.check("Bash", {"command": "ls /tmp"}).action == "stop"


def test_check_allows_other_calls_while_warned():
    guard = LoopGuard()
    for _ in range(3):
        guard.record(*LOOP)  # allow, allow, warn: a sure flag, so the next repeat is the stop
    assert guard.check("Bash", {"command": "ls /tmp"}).action == "allow"
    assert not guard.stopped
    assert guard.check(*LOOP[:2]).action == "stop"


def test_progress_forgives_earlier_warnings():
    guard = LoopGuard(recovery_steps=2)
    for _ in range(3):
        guard.record(*LOOP)
    assert guard.state.warnings == 1
    for i in range(4):
        assert guard.record("Read", {"file_path": f"src/m{i}.py"}, f"content {i} " + "x" * i).action == "allow"
    assert guard.state.warnings == 0


def test_warn_annotation_keeps_the_original_output():
    guard = LoopGuard()
    for _ in range(3):
        verdict = guard.record(*LOOP)
    assert verdict.action == "warn"
    assert verdict.annotate(LOOP[2]).startswith(LOOP[2]) and verdict.message in verdict.annotate(LOOP[2])
    blocks = [{"type": "text", "text": "x"}]
    assert verdict.annotate(blocks)[:1] == blocks and verdict.annotate(blocks)[1]["text"] == verdict.message
    assert verdict.annotate({"stdout": "x"}) == {"stdout": "x", "semloop": verdict.message}
    allow = Verdict("allow", 0)
    assert allow.annotate(LOOP[2]) is LOOP[2]


def test_chinese_and_overridden_messages():
    guard = LoopGuard(language="zh")
    for _ in range(3):
        verdict = guard.record(*LOOP)
    assert "重复" in verdict.message
    guard = LoopGuard(messages={"warn": "Loop on {tool} (steps {steps})."})
    for _ in range(3):
        verdict = guard.record(*LOOP)
    assert verdict.message == "Loop on Bash (steps 0, 1)."
    broken = LoopGuard(messages={"warn": "{nope}"})  # a broken template falls back to the default
    for _ in range(3):
        verdict = broken.record(*LOOP)
    assert verdict.message.startswith("[semloop] This Bash call repeats earlier step(s) 0, 1")


def test_fail_open_by_default_and_raise_when_configured(caplog):
    def broken_embedder(texts):
        raise RuntimeError("model exploded")

    guard = LoopGuard(embedder=broken_embedder)
    with caplog.at_level(logging.WARNING, logger="semloop"):
        verdict = guard.record(*LOOP)
    assert verdict.action == "allow" and "model exploded" in verdict.error
    assert "detector error" in caplog.text
    with pytest.raises(RuntimeError):
        LoopGuard(embedder=broken_embedder, fail_open=False).record(*LOOP)


@pytest.mark.parametrize("tool_input,output", [
    (None, None), ("raw string input", b"\xff\xfe binary"), ([1, [2, {"x": float("inf")}]], {"nested": [1, 2]}),
    ({"command": "x" * 2_000_000}, "y" * 3_000_000), ({"k": object()}, object()),
    ({"s": b"\xff\xfe".decode("utf-8", "surrogateescape")}, b"\xc3".decode("utf-8", "surrogateescape")),
])
def test_any_input_and_output_is_accepted(tool_input, output):
    verdict = LoopGuard(fail_open=False).record("tool", tool_input, output)
    assert verdict.action == "allow" and verdict.error is None


def test_memory_stays_bounded_over_a_long_session():
    guard = LoopGuard(max_clusters=32)  # a small cap, so the 2,000-step snapshot is already at it

    def run(n, start):
        for i in range(start, start + n):
            guard.record("Read", {"file_path": f"src/file_{i}.py"}, f"line {i}\n" * 20)

    run(2000, 0)
    size_at_2k = len(guard.to_bytes())
    run(8000, 2000)
    assert guard.steps == 10_000
    assert len(guard.state.window) == guard.config.window
    assert len(guard.state.clusters) <= guard.config.max_clusters
    assert len(guard.embedder._cache) <= guard.embedder.max_entries
    # all state is window- and cluster-bounded (each cluster keeps <= 8 results, 16 calls, 8 steps,
    # about 4 KB): 5x the steps stay under a fixed cap that does not depend on the session length
    assert size_at_2k < len(guard.to_bytes()) < 12 * 2_000 + 32 * 4_500


def test_state_round_trips_through_bytes_and_resumes_identically():
    a, b = LoopGuard(), LoopGuard()
    for _ in range(2):
        a.record(*LOOP)
    b.from_bytes(a.to_bytes())
    assert a.record(*LOOP) == b.record(*LOOP)
    c = pickle.loads(pickle.dumps(a))  # in-memory pickling (multiprocessing) still works: no lock in it
    assert c.record(*LOOP) == a.record(*LOOP)


def test_reset_then_replay_equals_fresh():
    guard = LoopGuard()
    runs = []
    for _ in range(2):
        guard.reset()
        runs.append([guard.record(*LOOP) for _ in range(4)])
    assert runs[0] == runs[1] == [LoopGuard().record(*LOOP) for _ in range(1)] + runs[0][1:]


def test_config_validation_and_files(tmp_path):
    with pytest.raises(ValueError, match="call_threshold"):
        Config(call_threshold=1.5)
    with pytest.raises(ValueError, match="unknown config key"):
        Config.from_dict({"call_treshold": 0.9})
    with pytest.raises(ValueError, match="detector"):
        Config(detector="magic")
    (tmp_path / "c.toml").write_text("[semloop]\ncall_threshold = 0.8\n[semloop.tool_overrides.WebSearch]\n"
                                     "call_threshold = 0.75\n")
    config = Config.from_file(tmp_path / "c.toml")
    assert config.call_threshold == 0.8 and config.for_tool("WebSearch").call_threshold == 0.75
    assert config.for_tool("Bash") is config
    (tmp_path / "c.json").write_text('{"min_repeats": 0}')
    with pytest.raises(ValueError, match="c.json: min_repeats"):
        Config.from_file(tmp_path / "c.json")


@pytest.mark.parametrize("detector", ["exact", "normalized", "count", "openhands", "gemini-cli", "roo-code", "crewai"])
def test_baselines_fire_on_a_plain_exact_loop(detector):
    guard = LoopGuard(detector=detector, count_limit=5)
    first = next((i for i in range(12) if guard.record(*LOOP).action != "allow"), None)
    expected = {"exact": 2, "normalized": 2, "count": 4, "openhands": 2, "gemini-cli": 4, "roo-code": 3, "crewai": 1}
    assert first == expected[detector]


# -- one check suite over every detector (as river does for its drift detectors) ----------------

from semloop.config import DETECTORS  # noqa: E402

STREAM = [("Bash", {"command": c}, o) for c, o in [
    ("ls", "a.py b.py"), ("cat a.py", "print(1)"), ("cat a.py", "print(1)"), ("cat a.py", "print(1)"),
    ("git status", "clean"), ("cat a.py", "print(1)"), ("git status", "clean"), ("cat a.py", "print(1)"),
]] * 2


@pytest.mark.parametrize("detector", DETECTORS)
def test_every_detector_replays_identically_after_reset_and_a_bytes_round_trip(detector):
    guard = LoopGuard(detector=detector, count_limit=4)
    first = [guard.record(*step) for step in STREAM]
    guard.reset()
    assert [guard.record(*step) for step in STREAM] == first  # reset-then-replay equals fresh
    half = LoopGuard(detector=detector, count_limit=4)
    for step in STREAM[:7]:
        half.record(*step)
    resumed = LoopGuard(detector=detector, count_limit=4)
    resumed.from_bytes(half.to_bytes())
    assert [resumed.record(*step) for step in STREAM[7:]] == first[7:]
    assert all(i < v.step for v in first for s in v.signals for i in s.related_steps)


def test_a_message_after_a_stop_or_an_empty_one_is_not_a_step():
    """The agent's answer after semloop stopped it is about the stop, and an empty message asks
    nothing: `record_message` records neither (the integrations rely on it for final messages)."""
    guard = LoopGuard()
    assert guard.record_message("   ").action == "allow" and guard.steps == 0
    for _ in range(8):
        guard.record("Bash", {"command": "cat /etc/shadow"}, "cat: /etc/shadow: Permission denied", is_error=True)
    assert guard.stopped
    steps = guard.steps
    verdict = guard.record_message("I could not read the file: permission denied. Could you run it as root?")
    assert verdict.action == "allow" and guard.steps == steps
