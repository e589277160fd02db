"""Hints that carry what the model needs (the earlier result, the other side's answer, what an
error class implies) and truthful stops (the step, the loop, how to resume). Measured over every
warning of the dev data and every stop that ends a run (it carries the same evidence, and a sure
flag stops after one warning): each citation names an earlier step the verdict really matched,
quotes what that step returned, and never echoes a secret."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from semloop import LoopGuard, features
from semloop.hints import result_excerpt
from semloop.redact import contains_secret
from semloop.scan import replay
from semloop.traces import Step, Trace, load_traces, parse_trace

ROOT = Path(__file__).resolve().parent.parent
DENIED = ("Bash", {"command": "cat /tmp/test.txt"}, "cat: /tmp/test.txt: Permission denied")
VERSION = ("Bash", {"command": "pip show pandas | grep Version"}, "Version: 1.5.3")
CITE = re.compile(r"Step (\d+) already (?:(returned|failed the same way): `(.*?)`|returned (nothing))\.(?= |$)"
                  r"|The other side already answered at step (\d+): `(.*?)`\.(?= |$)")


def _loop(guard: LoopGuard, call: tuple, times: int):
    return [guard.record(*call) for _ in range(times)]


def test_a_repeated_read_quotes_what_the_earliest_matching_step_returned():
    guard = LoopGuard()
    guard.record("Bash", {"command": "ls"}, "setup.py src tests")
    *_, warn = _loop(guard, VERSION, 3)
    assert warn.action == "warn"
    assert "Step 1 already returned: `Version: 1.5.3`." in warn.message
    assert "error" not in warn.message.split("Step 1")[1]  # a clean result: no error sentence


def test_an_error_says_its_class_in_words_and_what_that_implies():
    *_, warn = _loop(LoopGuard(), DENIED, 3)
    assert "Step 0 already failed the same way: `cat: /tmp/test.txt: Permission denied`." in warn.message
    assert "a permission error: a different command form will not change that" in warn.message
    guard = LoopGuard()
    for cmd in ("pytest", "python -m pytest", "pytest tests/"):  # varied attempts, the same missing module
        verdict = guard.record("Bash", {"command": cmd}, f"$ {cmd}\nModuleNotFoundError: No module named 'jinja2'",
                               is_error=True)
    assert verdict.action == "warn" and verdict.signals[0].kind == "same_result"
    assert "Step 0 already failed the same way: `$ pytest ModuleNotFoundError" in verdict.message
    assert "a missing module: the package has to be installed" in verdict.message


def test_a_conversation_loop_quotes_what_the_other_side_already_answered():
    guard = LoopGuard()
    guard.record_message("Could you please provide your reservation ID?", "I don't have it.")
    guard.record_message("I need your reservation ID to continue. Could you please provide it?",
                         "I told you, I don't have it.")
    verdict = guard.record_message("Please provide your reservation ID so I can continue.", "Look it up by my name?")
    assert verdict.action == "warn"
    assert "The other side already answered at step 1: `I told you, I don't have it.`." in verdict.message


def test_excerpts_are_bounded_redacted_and_can_be_turned_off():
    key = "sk-" + "a1B2c3D4" * 4
    output = f"api_key={key}\n" + "x " * 500
    *_, warn = _loop(LoopGuard(), ("Bash", {"command": "cat .env"}, output), 3)
    quoted = CITE.search(warn.message).group(3)
    assert len(quoted) <= 120 and quoted.endswith("…")
    assert key not in warn.message and "redacted:" in quoted and not contains_secret([warn.message])
    # cut after redaction: a secret that straddles the limit is not half-echoed either
    long_key = "ghp_" + "Z9y8X7w6" * 40
    assert "Z9y8X7w6" not in result_excerpt("token " + long_key, 120)
    *_, quiet = _loop(LoopGuard(hint_excerpt_chars=0), VERSION, 3)
    assert quiet.action == "warn" and "already returned" not in quiet.message and "1.5.3" not in quiet.message
    with pytest.raises(ValueError, match="hint_excerpt_chars"):
        LoopGuard(hint_excerpt_chars=-1)


def test_the_stored_state_keeps_only_the_redacted_excerpt(tmp_path):
    key = "xoxb-" + "1234567890-abcdefghij"
    guard = LoopGuard(store=f"sqlite:///{tmp_path}/s.sqlite3", session="s1")
    *_, warn = _loop(guard, ("Bash", {"command": "cat token.txt"}, f"token: {key}"), 3)
    assert warn.action == "warn" and "Step 0 already returned: `token: redacted:" in warn.message
    assert key.encode() not in (tmp_path / "s.sqlite3").read_bytes()


def test_templates_stay_overridable_and_chinese_cites_too():
    *_, warn = _loop(LoopGuard(messages={"evidence_result": "Seen at {step}: {excerpt}"}), VERSION, 3)
    assert "Seen at 0: Version: 1.5.3" in warn.message
    *_, own = _loop(LoopGuard(messages={"warn": "Loop on {tool}."}), VERSION, 3)
    assert own.message == "Loop on Bash."  # a user's own text without {evidence}: nothing is added
    *_, zh = _loop(LoopGuard(language="zh"), DENIED, 3)
    assert "步骤 0 已经以同样的方式失败：`cat: /tmp/test.txt: Permission denied`。" in zh.message
    assert "权限错误" in zh.message


# -- truthful stops ----------------------------------------------------------------------------


def test_after_a_stop_an_unrelated_call_is_told_the_truth():
    guard = LoopGuard()
    verdicts = _loop(guard, DENIED, 4)
    assert [v.action for v in verdicts] == ["allow", "allow", "warn", "stop"]
    stop = verdicts[-1].message
    assert stop.startswith("semloop stopped this run at step 3: ")
    assert "steps 0, 1, 2)" in stop and "after 1 earlier warning(s)" in stop
    assert "Step 0 already failed the same way" in stop
    assert "a permission error" in stop and stop.endswith("The user's next message lifts the stop.")
    refused = guard.check("Read", {"file_path": "/other.py"})
    assert refused.action == "stop"
    assert "repeats" not in refused.message
    assert refused.message == (
        "semloop blocked this Read call: the run was stopped at step 3 because of a loop (identical call and "
        "result; steps 0, 1, 2), so no call runs until the stop is lifted. The call was not run. "
        "The user's next message lifts the stop.")


def test_a_refused_repeat_stops_the_run_there_and_later_calls_say_so():
    guard = LoopGuard()
    _loop(guard, DENIED, 3)  # allow, allow, warn: the 4th identical call is refused before it runs
    denied = guard.check("Bash", {"command": "cat  /tmp/test.txt"})
    assert denied.action == "stop"
    assert denied.message.startswith("semloop blocked this Bash call: it repeats a loop that was already flagged 1")
    assert "Step 2 already failed the same way: `cat: /tmp/test.txt: Permission denied`" in denied.message
    assert "The call was not run. The run is stopped at step 3." in denied.message
    other = guard.check("Read", {"file_path": "/other.py"})
    assert "the run was stopped at step 3 because of a loop (identical call and result; steps 0, 1, 2)" \
        in other.message
    guard.state.resume()
    assert guard.check("Read", {"file_path": "/other.py"}).action == "allow"


def test_a_stored_session_names_the_reset_command(tmp_path):
    guard = LoopGuard(store=f"sqlite:///{tmp_path}/s.sqlite3", session="run-7")
    assert [v.action for v in _loop(guard, DENIED, 4)] == ["allow", "allow", "warn", "stop"]
    refused = LoopGuard(store=f"sqlite:///{tmp_path}/s.sqlite3", session="run-7").check("Read", {"file_path": "/x"})
    assert "stopped at step 3" in refused.message
    assert refused.message.endswith("`semloop sessions reset run-7`.")


# -- over every warning of the dev data --------------------------------------------------------


def _dev_traces() -> list[Trace]:
    spec = importlib.util.spec_from_file_location("semloop_bench_generate", ROOT / "benchmarks" / "generate.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = gen
    spec.loader.exec_module(gen)
    split = ROOT / "benchmarks" / "data" / "split"
    return (load_traces(split / "whowhen.dev.jsonl") + load_traces(split / "tau_airline.dev.jsonl")
            + [parse_trace(t) for t in gen.generate_split(1, "dev", gen.DEFAULT_N)])


@pytest.fixture(scope="module")
def dev_traces() -> list[Trace]:
    return _dev_traces()


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", features.normalize_result(text)))


def _alike(a: str, b: str) -> bool:
    """An independent reading of "the same result": most words shared (word Jaccard >= 0.5)."""
    wa, wb = _words(a), _words(b)
    return wa == wb or len(wa & wb) / max(1, len(wa | wb)) >= 0.5


def _hint(verdict, guard: LoopGuard) -> bool:
    """A verdict whose message explains a match to the model: a warning, or the stop at the step
    it ends the run (a later step of a stopped run repeats that stop, not a match of its own)."""
    return verdict.action == "warn" or (verdict.action == "stop" and verdict.step == guard.state.stopped_at)


def _check_citations(traces: list[Trace]) -> tuple[int, int, int]:
    warnings = stops = cited = 0
    for trace in traces:
        guard = LoopGuard()
        for verdict in replay(trace, guard):
            if not _hint(verdict, guard):
                continue
            warnings += verdict.action == "warn"
            stops += verdict.action == "stop"
            assert verdict.message is not None  # a warning or a stop always says something
            match = CITE.search(verdict.message)
            if match is None:
                continue
            cited += 1
            where = f"{trace.id} step {verdict.step}: {verdict.message}"
            step = int(match.group(1) or match.group(5))
            related = {i for s in verdict.signals for i in s.related_steps}
            assert step < verdict.step and step in related, where
            earlier = features.render_value(trace.steps[step].output)
            now = features.render_value(trace.steps[verdict.step].output)
            quoted = match.group(3) if match.group(1) else match.group(6)
            if match.group(4):  # "returned nothing"
                assert not earlier.strip() and not now.strip(), where
            else:
                assert quoted == result_excerpt(earlier, guard.config.hint_excerpt_chars), where
            if match.group(5):  # the other side's answer: to one of the messages repeated
                assert features.is_message_tool(trace.steps[step].tool, guard.config.message_tools), where
            elif match.group(2) == "failed the same way":
                assert features.error_class(earlier, True) == features.error_class(now, True), where
            elif match.group(2):
                assert _alike(earlier, now), where
    return warnings, stops, cited


def test_every_dev_warning_cites_a_real_earlier_match(dev_traces):
    """Every warning, and every stop where it ends a run (a sure flag stops after one warning, so
    its stop is the hint a second warning would have been)."""
    warnings, stops, cited = _check_citations(dev_traces)
    assert warnings + stops >= 200 and warnings >= 150 and stops >= 50, (warnings, stops)
    assert cited >= 0.95 * (warnings + stops), (warnings, stops, cited)


SECRETS = ("sk-proj-" + "Qw3rTy7Ui9" * 3, "ghp_" + "A1b2C3d4E5" * 4, "password=Hunter2Hunter2x",
           "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")


def test_dev_warnings_never_echo_a_secret(dev_traces):
    """The dev traces with a secret at the head of every result: every warning and every stop that
    ends a run still cites, none leaks it (the quotes show its digest), and no message of a stopped
    run's later steps leaks it either."""
    leaked = warned = quoted = 0
    for n, trace in enumerate(dev_traces):
        secret = SECRETS[n % len(SECRETS)]
        steps = tuple(Step(s.tool, s.input, f"{secret}\n{features.render_value(s.output)}", s.is_error)
                      for s in trace.steps)
        guard = LoopGuard()
        for verdict in replay(Trace(trace.id, steps), guard):
            if verdict.action != "allow":
                leaked += secret.split("=")[-1].split()[-1] in verdict.message or contains_secret([verdict.message])
            if _hint(verdict, guard):
                warned += 1
                quoted += bool(re.search(r"`[^`]*redacted:[0-9a-f]{8}", verdict.message))
    assert warned >= 200 and leaked == 0 and quoted >= 0.95 * warned, (warned, leaked, quoted)


def test_a_stop_stored_without_its_step_still_names_one():
    guard = LoopGuard()
    assert [v.action for v in _loop(guard, DENIED, 4)] == ["allow", "allow", "warn", "stop"]
    guard.state.stopped_at = -1  # as a state stored by a build that kept no stop step
    refused = guard.check("Read", {"file_path": "/x"}).message
    assert "the run was stopped at step 3 because of a loop (identical call and result; steps 0, 1, 2)" in refused
