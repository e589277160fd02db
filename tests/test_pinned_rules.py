"""Rules that a one-line mutation once changed with every other test still green (issue 14.2).
Each test names the mutation it catches; tests/MUTATION.md lists how they were checked."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from semloop import Config, LoopGuard, features, policy, signals
from semloop.integrations import claude_code as cc
from semloop.state import SessionState
from semloop.verdict import Signal

from conftest import bash_event, stored


# -- Claude Code: a denial ends the run and is saved, without counting a step ---------------------
# Claude Code never reports a call the hook denied to PostToolUse(Failure) (checked with the bundled
# CLI in tests/test_claude_code_cli.py), so the hook keeps no filter for its own denials; instead the
# denying PreToolUse ends the run (`continue: false`) and saves the stop, so the next user prompt is
# what lifts it. Mutations: drop the saved stop, or drop `continue: false`.

def test_claude_code_denial_ends_the_run_and_is_saved_without_counting_a_step(tmp_path, monkeypatch):
    monkeypatch.setenv("SEMLOOP_HOOK_SERVER", "0")
    db = tmp_path / "state.sqlite3"
    command, output = "python manage.py migrate", "django.db.utils.OperationalError: no such table: auth_user"
    before_steps = None
    for _ in range(8):
        state = stored(db, "sess-1") if db.exists() else None
        before_steps = state.steps_seen if state is not None else 0
        pre = cc.handle_event(bash_event("PreToolUse", command), db=str(db))
        if pre:
            break
        cc.handle_event(bash_event("PostToolUse", command, stderr=output), db=str(db))
    else:
        raise AssertionError("the loop was never denied")
    assert pre["continue"] is False and "semloop blocked this" in pre["stopReason"]
    assert pre["hookSpecificOutput"]["permissionDecision"] == "deny"
    after = stored(db, "sess-1")
    assert after.stopped is True and after.steps_seen == before_steps
    # a new prompt from the user lifts the stop; the loop memory stays
    cc.handle_event({**bash_event("PreToolUse", command), "hook_event_name": "UserPromptSubmit", "prompt": "go on"},
                    db=str(db))
    lifted = stored(db, "sess-1")
    assert lifted.stopped is False and lifted.steps_seen == before_steps


# -- policy.escalate: `recovery_steps` clean steps forgive one warning, not one more -------------
# Mutation: `state.clean_streak >= cfg.recovery_steps` → `>`.

@pytest.mark.parametrize("recovery_steps", [1, 3])
def test_exactly_recovery_steps_of_progress_forgive_one_warning(recovery_steps):
    cfg = Config(recovery_steps=recovery_steps, max_warnings=2)
    state = SessionState.new(8)
    flag = [Signal("exact", 1.0, (0,))]
    assert policy.escalate(state, flag, False, cfg) == "warn"
    assert policy.escalate(state, flag, False, cfg) == "warn"
    assert state.warnings == 2
    for _ in range(recovery_steps - 1):
        assert policy.escalate(state, [], True, cfg) == "allow"
    assert state.warnings == 2, "forgiven one step early"
    policy.escalate(state, [], True, cfg)
    assert (state.warnings, state.clean_streak) == (1, 0), "not forgiven after exactly recovery_steps"
    # a step without progress neither counts nor breaks... it simply is not progress
    policy.escalate(state, [], False, cfg)
    assert state.clean_streak == 0 and state.warnings == 1


def test_forgiven_warning_lets_the_guard_warn_again_instead_of_stopping():
    """The same boundary seen through LoopGuard: after max_warnings flags and recovery_steps novel
    steps, the next flag warns (it would stop with `>`)."""
    guard = LoopGuard(Config(detector="exact", max_warnings=1, recovery_steps=2))
    call = ("bash", {"command": "pytest tests/test_api.py"}, "FAILED tests/test_api.py::test_login - KeyError")
    assert [guard.record(*call).action for _ in range(3)] == ["allow", "allow", "warn"]
    for i in range(2):
        assert guard.record("bash", {"command": f"cat src/mod_{i}.py"}, f"def handler_{i}(): return {i}\n").action == "allow"
    assert guard.state.warnings == 0
    again = [guard.record(*call).action for _ in range(3)]
    assert [a for a in again if a != "allow"][:1] == ["warn"], again


# -- features.result_head: a first line of fewer than HEAD_WORDS distinct words names nothing ----
# Mutations: HEAD_WORDS 6 → 5 or 7, `>=` → `>`, or the rule dropped (every head digested).

def test_result_head_needs_head_words_distinct_words_on_the_first_line():
    assert features.HEAD_WORDS == 6
    six = "Billing service reference guide version two\nbody"   # 6 distinct words
    five = "Billing service reference guide version\nbody"      # 5
    repeated = "error error error error error error error\nbody"  # 1 distinct word, 7 tokens
    assert features.result_head(six) == features.digest(features.normalize_result(six.splitlines()[0]))
    assert features.result_head(five) == ""
    assert features.result_head(repeated) == ""
    assert features.result_head("\n\n  \nExit code 1\nTraceback ...") == ""
    assert features.result_head("") == ""


def _result_step(guard: LoopGuard, text: str):
    return guard._step("bash", {"command": "make report"}, text, False)


def _bodies(seed: int) -> tuple[str, str]:
    """Two long bodies sharing about two thirds of their words (Jaccard between 0.6 and 0.8)."""
    rng = random.Random(seed)
    shared = [f"shared{i}" for i in range(60)]
    a = shared + [f"onlya{i}" for i in range(14)]
    b = shared + [f"onlyb{i}" for i in range(14)]
    rng.shuffle(a)
    rng.shuffle(b)
    return " ".join(a), " ".join(b)


def test_same_short_first_line_does_not_make_results_the_same():
    guard = LoopGuard(Config(detector="exact"))
    body_a, body_b = _bodies(1)
    short = "Exit code 1"
    a, b = _result_step(guard, f"{short}\n{body_a}"), _result_step(guard, f"{short}\n{body_b}")
    jaccard, _ = signals.content_similarity(a.result_sketch, a.result_size, b.result_sketch, b.result_size)
    assert signals.SAME_HEAD_JACCARD <= jaccard < 0.8
    assert signals.result_match(a, b) == pytest.approx(jaccard)  # no same-subject boost
    title = "Quarterly billing report for the Lisbon warehouse team"
    a, b = _result_step(guard, f"{title}\n{body_a}"), _result_step(guard, f"{title}\n{body_b}")
    j2, _ = signals.content_similarity(a.result_sketch, a.result_size, b.result_sketch, b.result_size)
    assert signals.result_match(a, b) == pytest.approx(1.0 - (1.0 - j2) / 2)  # same page: boosted


# -- survivors of the mutation run (tests/MUTATION.md) --------------------------------------------

def _weather(guard: LoopGuard, city: str, temp: int, extra: str = ""):
    return guard._step("get_weather", {"city": city}, f'{{"city": "{city}", "temp_c": {temp}{extra}}}', False)


def test_same_short_result_ignores_the_words_that_echo_the_call():
    guard = LoopGuard(Config(detector="exact"))
    tokyo, tyo = _weather(guard, "Tokyo", 36), _weather(guard, "TYO", 36)
    assert tokyo.short_words and tyo.short_words
    assert signals.same_short_result(tokyo, tyo) and signals.same_short_result(tyo, tokyo)
    assert not signals.same_short_result(tokyo, _weather(guard, "TYO", 12))  # the news differs
    assert not signals.same_short_result(tokyo, _weather(guard, "TYO", 36, ', "rain": true'))  # one word more
    empty = guard._step("get_weather", {"city": "Tokyo"}, "", False)
    assert not signals.same_short_result(tokyo, empty) and not signals.same_short_result(empty, tokyo)
    echo_only = guard._step("lookup", {"q": "alpha beta"}, "alpha beta", False)
    assert not signals.same_short_result(echo_only, guard._step("lookup", {"q": "alpha beta"}, "alpha beta", False))


def test_call_match_scores_and_a_missing_vector():
    guard = LoopGuard(Config(detector="exact"))
    a = guard._step("bash", {"command": "ls -la build"}, "x", False)
    b = guard._step("bash", {"command": "ls  -la ./build/"}, "x", False)
    c = guard._step("bash", {"command": "make test"}, "x", False)
    assert signals.call_match(a, a) == ("exact", 1.0)
    assert signals.call_match(a, b) == ("normalized", 1.0)
    assert signals.call_match(a, c) == ("paraphrase", 0.0)  # no vectors (exact detector): no similarity
    semantic = LoopGuard(Config())
    with_vec = semantic._step("bash", {"command": "make test"}, "x", False)
    assert with_vec.call_vec is not None
    assert signals.call_match(with_vec, a) == ("paraphrase", 0.0) == signals.call_match(a, with_vec)


def test_verdict_signals_are_ordered_most_specific_first():
    """policy.ordered: KIND_ORDER ranks the kinds; kinds it does not know (baselines) go last."""
    found = [Signal("cluster", 0.9, (1,)), Signal("count", 1.0, (0,)), Signal("exact", 1.0, (2,)),
             Signal("cycle", 0.95, (0, 1)), Signal("paraphrase", 0.9, (2,))]
    assert [s.kind for s in policy.ordered(found)] == ["exact", "paraphrase", "cycle", "cluster", "count"]
