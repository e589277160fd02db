"""Rules that a one-line mutation once changed with every other test still green (issue 14.2).
Each test names the mutation it catches; tests/MUTATION.md lists how they were checked."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from semloop import Config, LoopGuard, features, novelty, policy, same_action, signals
from semloop.integrations import claude_code as cc
from semloop.config import THRESHOLDS, Thresholds
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


# -- features.result_head: a first line of fewer than head_words distinct words names nothing ----
# Mutations: head_words 6 → 5 or 7, `>=` → `>`, or the rule dropped (every head digested).

def test_result_head_needs_head_words_distinct_words_on_the_first_line():
    assert THRESHOLDS.head_words == 6
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
    assert THRESHOLDS.same_head_jaccard <= jaccard < 0.8
    assert same_action.result_match(a, b) == pytest.approx(jaccard)  # no same-subject boost
    title = "Quarterly billing report for the Lisbon warehouse team"
    a, b = _result_step(guard, f"{title}\n{body_a}"), _result_step(guard, f"{title}\n{body_b}")
    j2, _ = signals.content_similarity(a.result_sketch, a.result_size, b.result_sketch, b.result_size)
    assert same_action.result_match(a, b) == pytest.approx(1.0 - (1.0 - j2) / 2)  # same page: boosted


# -- survivors of the mutation run (tests/MUTATION.md) --------------------------------------------

def _weather(guard: LoopGuard, city: str, temp: int, extra: str = ""):
    return guard._step("get_weather", {"city": city}, f'{{"city": "{city}", "temp_c": {temp}{extra}}}', False)


def test_same_short_result_ignores_the_words_that_echo_the_call():
    guard = LoopGuard(Config(detector="exact"))
    tokyo, tyo = _weather(guard, "Tokyo", 36), _weather(guard, "TYO", 36)
    assert tokyo.short_words and tyo.short_words
    assert same_action.same_short_result(tokyo, tyo) and same_action.same_short_result(tyo, tokyo)
    assert not same_action.same_short_result(tokyo, _weather(guard, "TYO", 12))  # the news differs
    assert not same_action.same_short_result(tokyo, _weather(guard, "TYO", 36, ', "rain": true'))  # one word more
    empty = guard._step("get_weather", {"city": "Tokyo"}, "", False)
    assert not same_action.same_short_result(tokyo, empty) and not same_action.same_short_result(empty, tokyo)
    echo_only = guard._step("lookup", {"q": "alpha beta"}, "alpha beta", False)
    assert not same_action.same_short_result(echo_only, guard._step("lookup", {"q": "alpha beta"}, "alpha beta", False))


def test_call_match_scores_and_a_missing_vector():
    guard = LoopGuard(Config(detector="exact"))
    a = guard._step("bash", {"command": "ls -la build"}, "x", False)
    b = guard._step("bash", {"command": "ls  -la ./build/"}, "x", False)
    c = guard._step("bash", {"command": "make test"}, "x", False)
    assert same_action.call_match(a, a) == ("exact", 1.0)
    assert same_action.call_match(a, b) == ("normalized", 1.0)
    assert same_action.call_match(a, c) == ("paraphrase", 0.0)  # no vectors (exact detector): no similarity
    semantic = LoopGuard(Config())
    with_vec = semantic._step("bash", {"command": "make test"}, "x", False)
    assert with_vec.call_vec is not None
    assert same_action.call_match(with_vec, a) == ("paraphrase", 0.0) == same_action.call_match(a, with_vec)


def test_verdict_signals_are_ordered_most_specific_first():
    """policy.ordered: KIND_ORDER ranks the kinds; kinds it does not know (baselines) go last."""
    found = [Signal("cluster", 0.9, (1,)), Signal("count", 1.0, (0,)), Signal("exact", 1.0, (2,)),
             Signal("cycle", 0.95, (0, 1)), Signal("paraphrase", 0.9, (2,))]
    assert [s.kind for s in policy.ordered(found)] == ["exact", "paraphrase", "cycle", "cluster", "count"]


# -- same_action.same_step: survivors of the 2026-12-01 run over the shipped detector ------------------
# Each test below was checked against the mutants it names (applied with `mutmut apply`, run, reverted).

def _intents(*markers: str):
    """Fake embedder: texts containing the same marker get the same one-hot vector (cosine exactly
    1.0); texts without a marker share the last axis."""
    def embed(texts):
        rows = np.zeros((len(texts), len(markers) + 1), dtype=np.float32)
        for r, text in enumerate(texts):
            rows[r, next((i for i, m in enumerate(markers) if m in text), len(markers))] = 1.0
        return rows
    return embed


HANDLERS = "\n".join(f"def handler_{i}(event):\n    return process(event, retries={i})" for i in range(40))


def _file_reads(cfg: Config | None = None):
    guard = LoopGuard(cfg or Config(), embedder=_intents("handlers"))
    cat = guard._step("Bash", {"command": "cat src/handlers.py"}, HANDLERS, False)
    head = guard._step("Bash", {"command": "head -n 40 src/handlers.py"}, "\n".join(HANDLERS.splitlines()[:40]), False)
    return guard, cat, head


def test_a_file_and_its_head_are_one_read():
    """`cat f` then `head -n 40 f`: the entities overlap by exactly entity_overlap ({f} vs {f, 40}),
    and only containment says the results are one (Jaccard is about a half).
    Mutations: `>= entity_overlap` → `>`; `result_match(..., containment=True)` → False / None / dropped;
    the last `res_sim >= cfg.result_threshold` → `... or True` (the head and the tail are two reads)."""
    guard, cat, head = _file_reads()
    assert features.entity_overlap(cat.entities, head.entities) == THRESHOLDS.entity_overlap
    assert same_action.result_match(cat, head) < guard.config.result_threshold  # Jaccard alone: different
    assert same_action.same_step(cat, head, guard.config) == ("paraphrase", 1.0)
    # its tail is another part of the file: the same intent and entities, a different result
    tail = guard._step("Bash", {"command": "tail -n 40 src/handlers.py"}, "\n".join(HANDLERS.splitlines()[-40:]), False)
    assert tail.entities == head.entities and same_action.call_match(head, tail)[1] == 1.0
    assert same_action.same_step(head, tail, guard.config) is None
    # through the guard: the second `cat` repeats both earlier reads, which is a loop
    reads = [("Bash", {"command": "cat src/handlers.py"}, HANDLERS),
             ("Bash", {"command": "head -n 40 src/handlers.py"}, "\n".join(HANDLERS.splitlines()[:40])),
             ("Bash", {"command": "cat src/handlers.py"}, HANDLERS)]
    fresh = LoopGuard(Config(), embedder=_intents("handlers"))
    assert [fresh.record(*r).action for r in reads] == ["allow", "allow", "warn"]


def test_thresholds_are_inclusive_one_means_identical_not_never():
    """call_threshold = result_threshold = 1.0: identical results of identical (or same-intent)
    calls still count. Mutations: each `res_sim >= cfg.result_threshold` in same_step → `>`, and
    `call_sim < cfg.call_threshold` → `<=`."""
    cfg = Config(call_threshold=1.0, result_threshold=1.0)
    guard, cat, head = _file_reads(cfg)
    assert same_action.same_step(cat, head, cfg) == ("paraphrase", 1.0)  # contained: 1.0; one-hot cosine: 1.0
    again = guard._step("Bash", {"command": "cat src/handlers.py"}, HANDLERS, False)
    assert same_action.same_step(cat, again, cfg) == ("exact", 1.0)
    tree = "\n".join(f"docs/page{i}.md" for i in range(40))
    shallow = guard._step("list_tree", {"path": ".", "max_depth": 2}, tree, False)
    deeper = guard._step("list_tree", {"path": ".", "max_depth": 3}, tree, False)
    assert shallow.skeleton_sig == deeper.skeleton_sig
    assert same_action.same_step(shallow, deeper, cfg) == ("paraphrase", 1.0)  # a creeping option, same tree


def test_a_message_and_a_tool_call_are_never_one_step():
    """A message's result is the other side's reply: a tool that returns the same text is not the
    message repeated, however alike the two read. Mutation: `a.is_message or b.is_message` → `and`."""
    guard = LoopGuard(Config(), embedder=_intents("zzz"))  # every text on one axis: cosine 1.0
    reply = ("Your reservation NO6JO3 is a round trip from JFK to SEA on May 12 returning May 19, economy "
             "class, two checked bags, seat 14C, gold member, 612 dollars paid by card ending 4242.")
    message = guard._step("respond", {"content": "Here is your reservation summary"}, reply, False)
    lookup = guard._step("get_reservation", {"id": "summary"}, reply, False)
    assert message.is_message and not lookup.is_message and message.result_hash == lookup.result_hash
    assert same_action.same_step(message, lookup, guard.config) is None
    assert same_action.same_step(lookup, message, guard.config) is None


LOG = [f"2026-11-30 12:{i:02d}:07 INFO worker-{i % 7} processed batch {1000 + i} in {i * 3} ms" for i in range(60)]


def test_a_creeping_line_count_over_an_unchanged_log_is_one_step():
    """`tail -n 20` then `tail -n 40` of a log that did not change: only the number crept, and the
    longer output contains the shorter. Mutations: containment=True in the skeleton branch →
    False / None / dropped."""
    guard = LoopGuard(Config(), embedder=_intents("app.log"))
    short = guard._step("Bash", {"command": "tail -n 20 app.log"}, "\n".join(LOG[-20:]), False)
    longer = guard._step("Bash", {"command": "tail -n 40 app.log"}, "\n".join(LOG[-40:]), False)
    assert short.skeleton_sig == longer.skeleton_sig
    assert same_action.result_match(short, longer) < guard.config.result_threshold
    assert same_action.same_step(short, longer, guard.config) == ("paraphrase", 1.0)


def test_paging_through_a_file_with_a_creeping_offset_is_work():
    """Read(offset=1), Read(offset=41), ...: the same skeleton, a new page each time. Mutation: the
    skeleton branch's `res_sim >= cfg.result_threshold` → `... or True`."""
    lines = "\n".join(f"def handler_{i}(event):\n    return process(event, retries={i})" for i in range(120)).splitlines()
    guard = LoopGuard(Config(), embedder=_intents("handlers"))
    pages = [("Read", {"file_path": "src/handlers.py", "offset": 1 + 40 * k, "limit": 40},
              "\n".join(lines[40 * k: 40 * k + 40])) for k in range(6)]
    first, second = (guard._step(*p, False) for p in pages[:2])
    assert first.skeleton_sig == second.skeleton_sig and min(first.result_size, second.result_size) >= 30
    assert same_action.same_step(first, second, guard.config) is None
    fresh = LoopGuard(Config(), embedder=_intents("handlers"))
    assert [fresh.record(*p).action for p in pages] == ["allow"] * 6


def test_a_result_of_exactly_short_result_words_is_substantial():
    """short_result distinct words is the first substantial size (`>=`, not `>`). Mutations: both
    `min(a.result_size, b.result_size) >= short_result` in same_step → `>`."""
    words = [f"w{i}" for i in range(THRESHOLDS.short_result)]
    text = " ".join(words)
    guard = LoopGuard(Config(), embedder=_intents("tail"))
    five = guard._step("Bash", {"command": "tail -n 5 app.log"}, text, False)
    six = guard._step("Bash", {"command": "tail -n 6 app.log"}, text + "\n" + " ".join(words[-5:]), False)
    assert five.result_size == six.result_size == THRESHOLDS.short_result and five.result_hash != six.result_hash
    assert same_action.same_step(five, six, guard.config) == ("paraphrase", 1.0)  # creeping number, same words
    # the very same substantial result from two related calls (same tool), however unalike they read
    guard = LoopGuard(Config(), embedder=_intents("cat", "awk"))
    cat = guard._step("Bash", {"command": "cat notes.txt"}, text, False)
    awk = guard._step("Bash", {"command": "awk '{print}' notes.txt"}, text, False)
    assert same_action.call_match(cat, awk) == ("paraphrase", 0.0)
    assert same_action.same_step(cat, awk, guard.config) == ("paraphrase", 0.0)


def _forecast(city: str) -> str:
    return json.dumps({"city": city, "temp_c": 36, "conditions": "overcast", "humidity": 61, "wind_kph": 53,
                       "forecast": "rain later in the evening"})


def test_a_failed_call_is_not_the_same_step_as_a_succeeded_one():
    """The same detailed answer (or the same facts) from a call that failed and one that succeeded
    is not one repeated step. Mutations: `not (a.is_error or b.is_error)` → `and`, in the same-facts
    and the same-rich-short-result rules; the rich rule's score 1.0 → 2.0."""
    guard = LoopGuard(Config(), embedder=_intents("Tokyo", "TYO"))  # the embedding calls them different
    tokyo = guard._step("get_weather", {"city": "Tokyo"}, _forecast("Tokyo"), False)
    tyo = guard._step("get_weather", {"city": "TYO"}, _forecast("TYO"), False)
    tyo_failed = guard._step("get_weather", {"city": "TYO"}, _forecast("TYO"), True)
    assert same_action.same_step(tokyo, tyo, guard.config) == ("paraphrase", 1.0)
    assert same_action.same_step(tokyo, tyo_failed, guard.config) is None
    assert same_action.same_step(tyo_failed, tokyo, guard.config) is None
    show = guard._step("Bash", {"command": "pip show requests | head -2"}, "Name: requests\nVersion: 2.31.4", False)
    version = guard._step("Bash", {"command": "python -c 'import requests; print(requests.__version__)'"}, "2.31.4", False)
    version_failed = guard._step("Bash", {"command": "python -c 'import requests; print(requests.__version__)'"},
                                 "2.31.4", True)
    assert same_action.same_step(show, version, guard.config) == ("paraphrase", 1.0)  # same facts, other words
    assert same_action.same_step(show, version_failed, guard.config) is None
    assert same_action.same_step(version_failed, show, guard.config) is None


def test_reworded_commands_agreeing_on_four_of_five_facts_are_one_step():
    """same_facts (0.8) is inclusive: 4 shared versions of 5. Mutation: `>= same_facts` → `>`."""
    freeze = "requests 2.31.4\nurllib3 1.26.18\ncertifi 2024.2.2\nidna 3.6.1"
    guard = LoopGuard(Config(), embedder=_intents("pip"))
    listed = guard._step("Bash", {"command": "pip list --format=freeze"}, freeze, False)
    frozen = guard._step("Bash", {"command": "python -m pip freeze"}, freeze + "\ncharset-normalizer 3.3.2", False)
    assert same_action.same_facts(listed, frozen) == THRESHOLDS.same_facts
    assert same_action.same_step(listed, frozen, guard.config) == ("paraphrase", THRESHOLDS.same_facts)


# -- signals.repeated_call ------------------------------------------------------------------------

IMPORT_ERROR = "ImportError: cannot import name 'parse_header' from 'cgi'"


def test_reworded_calls_failing_the_same_way_are_a_paraphrase_loop():
    """Three rewordings of one test run, one error: the matches stand on their own (the fallback for
    the very same failing call is only for too few). Mutations: `len(matches) < needed and
    step.is_error` → `or` / `<=`; the signal's score → None."""
    guard = LoopGuard(Config(), embedder=_intents("test_api"))
    for command in ("pytest tests/test_api.py", "python -m pytest tests/test_api.py"):
        assert guard.record("Bash", {"command": command}, IMPORT_ERROR, True).action == "allow"
    step = guard._step("Bash", {"command": "py.test tests/test_api.py"}, IMPORT_ERROR, True)
    assert signals.repeated_call(guard.state, step, guard.config) == Signal("paraphrase", 1.0, (0, 1))


def test_only_the_very_same_call_failing_again_counts_across_progress():
    """After a step that brought something new, a reworded run failing the same way does not count
    toward "the very same call failing the very same way". Mutation: `m[0] != "paraphrase"` → always
    true (the string mutated)."""
    guard = LoopGuard(Config(), embedder=_intents("test_api"))
    guard.record("Bash", {"command": "pytest tests/test_api.py"}, IMPORT_ERROR, True)
    guard.record("Read", {"file_path": "src/api.py"}, "\n".join(f"def route_{i}(): return {i}" for i in range(40)))
    guard.record("Bash", {"command": "python -m pytest tests/test_api.py"}, IMPORT_ERROR, True)
    assert guard.state.last_novel == 1
    step = guard._step("Bash", {"command": "python -m pytest tests/test_api.py"}, IMPORT_ERROR, True)
    assert same_action.same_step(step, guard.state.window[0], guard.config)[0] == "paraphrase"
    assert signals.repeated_call(guard.state, step, guard.config) is None  # one exact repeat: not yet a loop


CANCEL = {"order_id": "#W4284542", "reason": "no longer needed"}
CANCELLED = json.dumps({"order_id": "#W4284542", "status": "cancelled", "items": [
    {"name": "Air Purifier", "item_id": "5669664287", "price": 2020.61}]})
NOT_PENDING = "Error: non-pending order cannot be cancelled"


def _cancelled_then_asked_again(guard: LoopGuard) -> None:
    """A real Qwen3 retail run (tau_conversations, task56): the order is cancelled, the customer
    wants the refund elsewhere, and the agent cancels it again."""
    guard.record("cancel_pending_order", CANCEL, CANCELLED)
    guard.record("respond", {"content": "Order #W4284542 is cancelled; the refund goes to your card."},
                 "Actually, could the refund go to my gift card instead?")
    guard.record("cancel_pending_order", CANCEL, NOT_PENDING, True)
    guard.record("respond", {"content": "It was already cancelled. Shall I move the refund to the gift card?"},
                 "Yes, please. I do not have the gift card id, can you look it up?")
    guard.record("get_user_details", {"user_id": "ivan_hernandez_6923"},
                 json.dumps({"payment_methods": {"gift_card_9368765": {"balance": 85}}, "orders": ["#W4284542"]}))


def test_the_same_call_failing_twice_after_it_succeeded_repeats_that_success():
    """The very same call that succeeded, then fails the very same way twice with nothing written
    since: the success was the first of three. Mutation: drop `_succeeded_before`."""
    guard = LoopGuard(Config(), embedder=_intents("cancel", "respond", "user"))
    _cancelled_then_asked_again(guard)
    step = guard._step("cancel_pending_order", CANCEL, NOT_PENDING, True)
    assert signals.repeated_call(guard.state, step, guard.config) == Signal("exact", 1.0, (0, 2))
    verdict = guard.record("cancel_pending_order", CANCEL, NOT_PENDING, True)
    assert verdict.action == "warn" and verdict.signals[0].related_steps == (0, 2)


def test_one_failure_after_a_success_is_not_yet_a_repeat():
    """A success and one failure of the same call is one retry. Mutation: `0 < len(matches)` → `0 <=`."""
    guard = LoopGuard(Config(), embedder=_intents("cancel", "respond", "user"))
    guard.record("cancel_pending_order", CANCEL, CANCELLED)
    guard.record("get_user_details", {"user_id": "ivan_hernandez_6923"}, json.dumps({"orders": ["#W4284542"]}))
    step = guard._step("cancel_pending_order", CANCEL, NOT_PENDING, True)
    assert signals.repeated_call(guard.state, step, guard.config) is None


def test_a_write_that_succeeded_then_fails_twice_the_same_way_repeats_itself():
    """The success may be the write itself ("Created", then "already exists" twice); an earlier
    failure of another kind is not a success. Mutations: `state.last_write <= prev.index` → `<`;
    `not prev.is_error` dropped."""
    create = {"name": "fix-parser", "from": "main"}
    exists = "Error: a branch named 'fix-parser' already exists"
    for first, first_failed, counts in (("OK", False, True), ("Error: repository is read-only", True, False)):
        guard = LoopGuard(Config(), embedder=_intents("fix-parser", "list"))
        guard.record("create_branch", create, first, first_failed)
        guard.record("list_branches", {}, "main\nrelease-2.1\nfix-parser" if counts else "main\nrelease-2.1")
        guard.record("create_branch", create, exists, True)
        assert guard.state.last_write == (0 if counts else -1)
        step = guard._step("create_branch", create, exists, True)
        expected = Signal("exact", 1.0, (0, 2)) if counts else None
        assert signals.repeated_call(guard.state, step, guard.config) == expected


def test_a_success_of_another_call_of_the_tool_is_not_a_repeat():
    """Cancelling one order, then failing twice to cancel another: two failures, not three
    repeats. Mutation: `prev.exact_sig == step.exact_sig` → `prev.tool == step.tool`."""
    guard = LoopGuard(Config(), embedder=_intents("cancel", "user"))
    guard.record("cancel_pending_order", {"order_id": "#W1111111", "reason": "no longer needed"}, CANCELLED)
    guard.record("get_user_details", {"user_id": "ivan_hernandez_6923"}, json.dumps({"orders": ["#W4284542"]}))
    guard.record("cancel_pending_order", CANCEL, NOT_PENDING, True)
    step = guard._step("cancel_pending_order", CANCEL, NOT_PENDING, True)
    assert signals.repeated_call(guard.state, step, guard.config) is None


def test_a_run_that_passed_then_fails_twice_after_an_edit_checks_the_edit():
    """After a write, the command that passed and now fails the same way twice is a check of the
    edit, not a repeat of the pass: `state.last_write` bounds the successes that count. Mutation:
    drop the `state.last_write <=` bound from `_succeeded_before`."""
    guard = LoopGuard(Config(), embedder=_intents("reproduce", "edit"))
    run = {"command": "python reproduce.py"}
    guard.record("Bash", run, "ISSUE NOT REPRODUCED: found 'app.models.Outer.Inner'")
    guard.record("Edit", {"file_path": "app/models.py", "old_string": "class Inner", "new_string": "class Middle"},
                 "The file app/models.py has been updated.")
    assert guard.state.last_write == 1
    guard.record("Bash", run, "Traceback: Migration directory not found", True)
    step = guard._step("Bash", run, "Traceback: Migration directory not found", True)
    assert signals.repeated_call(guard.state, step, guard.config) is None


# -- same_action.result_match -------------------------------------------------------------------------

def test_result_match_is_a_similarity_from_zero_to_one():
    """Mutations: the 1.0 for equal (or short, equal once echoes are left out) results → 2.0."""
    guard = LoopGuard(Config(detector="exact"))
    tokyo, tyo = _weather(guard, "Tokyo", 36), _weather(guard, "TYO", 36)
    assert tokyo.result_hash != tyo.result_hash and same_action.result_match(tokyo, tyo) == 1.0
    again = _weather(guard, "Tokyo", 36)
    assert same_action.result_match(tokyo, again) == 1.0 == same_action.result_match(tokyo, again, containment=True)


def test_same_first_line_boost_starts_at_exactly_same_head_jaccard():
    """Two pages with one title sharing 30 of 50 distinct words (Jaccard exactly 0.6, computed
    exactly below SKETCH_SIZE words) are halfway to the same. Mutation: `>= same_head_jaccard` → `>`."""
    guard = LoopGuard(Config(detector="exact"))
    title = "Quarterly billing report for the Lisbon warehouse team"  # 8 distinct words
    shared = " ".join(f"s{i}" for i in range(22))
    a = _result_step(guard, f"{title}\n{shared} " + " ".join(f"a{i}" for i in range(10)))
    b = _result_step(guard, f"{title}\n{shared} " + " ".join(f"b{i}" for i in range(10)))
    jaccard, _ = signals.content_similarity(a.result_sketch, a.result_size, b.result_sketch, b.result_size)
    assert jaccard == THRESHOLDS.same_head_jaccard
    assert same_action.result_match(a, b) == pytest.approx(0.8)


# -- policy.escalate: a stop is final --------------------------------------------------------------

def test_a_stop_stays_a_stop_whatever_comes_next():
    """Mutations: `state.stopped = True` → None / False (the next step would be allowed again)."""
    cfg = Config(max_warnings=0)
    state = SessionState.new(8)
    assert policy.escalate(state, [Signal("exact", 1.0, (0,))], False, cfg) == "stop"
    assert state.stopped is True
    assert policy.escalate(state, [], True, cfg) == "stop"


# -- signals.repeated_message ---------------------------------------------------------------------

def _table(vectors: dict[str, list[float]], dim: int = 6):
    """Fake embedder: the vector of the first key a text contains (else the last axis)."""
    def embed(texts):
        rows = np.zeros((len(texts), dim), dtype=np.float32)
        for r, text in enumerate(texts):
            key = next((k for k in vectors if k in text), None)
            rows[r, : len(vectors[key]) if key else dim] = vectors[key] if key else np.eye(dim)[-1]
        return rows
    return embed


def _at(cos: float, axis: int) -> list[float]:
    """A unit vector: sqrt(cos) on axis 0, the rest on its own `axis`; any two of them (different
    axes) have cosine `cos`."""
    v = [0.0] * 6
    v[0], v[axis] = cos ** 0.5, (1 - cos) ** 0.5
    return v


ASK_ID = [("respond", {"content": "Could you please provide the reservation ID?"}, "I don't have it."),
          ("respond", {"content": "Please send me the reservation ID so I can help."}, "Can't you look it up?"),
          ("respond", {"content": "I still need the reservation ID to continue."}, "Why do you need it?")]


def _asked(embedder, config: Config | None = None, asks=ASK_ID[:2]) -> LoopGuard:
    guard = LoopGuard(config or Config(), embedder=embedder)
    for ask in asks:
        assert guard.record(*ask).action == "allow"
    return guard


def test_a_conversation_loop_scores_its_least_similar_pair_and_says_how_many_asks():
    """Mutations: the pairs' `np.triu_indices(n, 1)` → `(n, 2)` (skips neighbours); the detail
    text → None / dropped / `len(group) - 1` / `+ 2`."""
    embed = _table({"provide the": [1, 0], "send me": [0.9, 0.19 ** 0.5], "still need": [1, 0]})
    guard = _asked(embed)
    step = guard._step(*ASK_ID[2], False)
    found = signals.repeated_message(guard.state, step, guard.config)
    assert found.kind == "conversation" and found.related_steps == (0, 1)
    assert found.score == pytest.approx(0.9, abs=1e-6)  # send-me vs the others; the other pair is 1.0
    assert found.detail == "3 messages asking for the same thing, no new tool result in between"


def test_asking_for_the_same_named_thing_needs_only_same_ask_similarity():
    """Pairwise cosine 0.78: below message_threshold (0.85), above same_ask_similarity (0.7). All
    three ask for "reservation id": a loop. A third asking for something else: not. Mutations:
    `same_object` → None / False; the intersection without the step's terms or without the group's;
    `same_object and score >= ...` → `or`."""
    embed = _table({"provide the": _at(0.78, 1), "send me": _at(0.78, 2), "still need": _at(0.78, 3),
                    "seat number": _at(0.78, 4)})
    guard = _asked(embed)
    step = guard._step(*ASK_ID[2], False)
    found = signals.repeated_message(guard.state, step, guard.config)
    assert found is not None and found.score == pytest.approx(0.78, abs=1e-6)
    other = guard._step("respond", {"content": "Could you please provide your seat number?"}, "12A", False)
    assert other.asks and other.ask_terms and not other.ask_terms & step.ask_terms
    assert signals.repeated_message(guard.state, other, guard.config) is None


def test_message_similarity_thresholds_are_inclusive():
    """A cosine of exactly 0.75 (exact in float32) against thresholds of 0.75. Mutations:
    `score < cfg.message_threshold` → `<=`; `score >= same_ask_similarity` → `>`."""
    embed = _table({"provide the": [1, 0], "send me": [0.75, 0.4375 ** 0.5], "seat number": [1, 0]})
    seat = ("respond", {"content": "Could you please provide your seat number?"}, "I don't know it.")
    guard = _asked(embed, Config(message_repeats=1, message_threshold=0.75), [seat])
    step = guard._step(*ASK_ID[1], False)
    assert not step.ask_terms & guard.state.window[0].ask_terms  # no named thing in common
    assert signals.repeated_message(guard.state, step, guard.config).score == 0.75
    guard = _asked(embed, Config(message_repeats=1, message_threshold=0.9,
                                 thresholds=Thresholds(same_ask_similarity=0.75)), ASK_ID[:1])
    step = guard._step(*ASK_ID[1], False)
    assert step.ask_terms == guard.state.window[0].ask_terms != frozenset()
    assert signals.repeated_message(guard.state, step, guard.config).score == 0.75


def test_only_an_asking_message_can_repeat_an_ask():
    """After two asks, a tool call or a message that asks nothing, embedded like them, is not a
    third ask. Mutations: `not (step.is_message and step.asks) or step.call_vec is None` → `... and
    ...`; `is_message and asks` → `or`."""
    same = _table({"reservation": [1, 0]})
    guard = _asked(same)
    lookup = guard._step("get_reservation", {"name": "reservation of Mia Li"}, "not found", False)
    thanks = guard._step("respond", {"content": "Thank you, the reservation is changed."}, "great", False)
    assert not lookup.is_message and thanks.is_message and not thanks.asks
    assert signals.repeated_message(guard.state, lookup, guard.config) is None
    assert signals.repeated_message(guard.state, thanks, guard.config) is None


def test_the_ask_that_got_an_answer_starts_a_new_conversation():
    """ask (no answer), ask (answered with an address: work), ask, ask: only the last two asks are
    since the work — two, not three. Mutation: `prev.index > state.last_work` → `>=`."""
    same = _table({"email": [1, 0]})
    guard = LoopGuard(Config(), embedder=same)
    guard.record("respond", {"content": "Could you please provide your email address?"}, "I forgot it.")
    guard.record("respond", {"content": "Please provide your email address so I can find your account."},
                 "Try yara.silva@example.com")
    assert guard.state.last_work == 1
    guard.record("respond", {"content": "Could you please provide the email address on the account?"}, "Hmm.")
    step = guard._step("respond", {"content": "I need the email address on the account, please."}, "No idea.", False)
    assert step.asks
    assert signals.repeated_message(guard.state, step, guard.config) is None


# -- signals.repeated_result ----------------------------------------------------------------------

def _failures(embedder, *calls) -> LoopGuard:
    guard = LoopGuard(Config(), embedder=embedder)
    for tool, tool_input, output in calls:
        guard.record(tool, tool_input, output, True)
    return guard


def test_the_same_error_from_related_attempts_across_other_failures():
    """Related = same tool, or similar calls (Read of the file `cat` failed on); an unrelated call
    failing the same way (a Grep over /etc meeting /etc/shadow) and a different failure in between
    neither count nor end the count.
    Mutations: `!= error_class or not related` → `and`; `related(step, prev, None)`; `continue` →
    `break`; the score → None."""
    guard = _failures(_intents("shadow"),
                      ("Bash", {"command": "cat /etc/shadow"}, "cat: /etc/shadow: Permission denied"),
                      ("WebFetch", {"url": "https://example.com/docs"}, "404 Not Found"),
                      ("Grep", {"pattern": "root:", "path": "/etc"}, "grep: /etc/shadow: Permission denied"),
                      ("Read", {"file_path": "/etc/shadow"}, "EACCES: permission denied, open '/etc/shadow'"))
    assert [s.error_class for s in guard.state.window] == ["permission", "not_found", "permission", "permission"]
    step = guard._step("Bash", {"command": "sudo -n cat /etc/shadow"},
                       "sudo: a password is required; /etc/shadow: Permission denied", True)
    found = signals.repeated_result(guard.state, step, guard.config)
    assert found is not None and found.related_steps == (0, 3)
    assert found.score == min(max(signals.content_similarity(step.result_sketch, step.result_size, p.result_sketch,
                                                             p.result_size)) for p in (guard.state.window[0],
                                                                                      guard.state.window[3]))


BUILD_LOG = [f"compiling module_{i}.c into build/module_{i}.o with gcc flags O{i % 3}" for i in range(30)]


def test_a_generic_failure_counts_only_when_it_is_the_same_failure():
    """"exit code 1" says nothing by itself: varied builds whose logs merely overlap (the verbose one
    contains the plain one) are not one failure. Mutations: the generic overlap `result_threshold` →
    error_overlap; `sim < overlap and not generic` → `or` (containment for generic errors too)."""
    plain = "make: *** [all] Error 1\n" + "\n".join(BUILD_LOG[:18])
    verbose = plain + "\n" + "\n".join(BUILD_LOG[18:])
    guard = _failures(_intents("zzz"), ("Bash", {"command": "make"}, plain), ("Bash", {"command": "make -j4"}, plain))
    step = guard._step("Bash", {"command": "make VERBOSE=1"}, verbose, True)
    assert step.error_class in signals.GENERIC_ERRORS and step.result_size >= THRESHOLDS.short_result
    jaccard, contained = signals.content_similarity(step.result_sketch, step.result_size,
                                                    guard.state.window[0].result_sketch, guard.state.window[0].result_size)
    assert THRESHOLDS.error_overlap <= jaccard < guard.config.result_threshold <= contained
    assert signals.repeated_result(guard.state, step, guard.config) is None
    again = guard._step("Bash", {"command": "make all"}, plain, True)
    assert signals.repeated_result(guard.state, again, guard.config).related_steps == (0, 1)  # the same failure


def test_specific_errors_sharing_exactly_error_overlap_are_the_same_error():
    """Three permission errors sharing 16 of 64 distinct words pairwise (Jaccard exactly 0.25, exact
    below SKETCH_SIZE words): the same error, scored by their Jaccard. Mutations: `sim >= overlap` →
    `>`; `sim < overlap` → `<=` (containment, 0.4, would replace the Jaccard)."""
    shared = "permission denied while opening the protected data directory for user deploy on host db right now".split()
    assert len(set(shared)) == 16

    def error(tag):
        return " ".join(shared + [f"{tag}{i}" for i in range(24)])
    guard = _failures(_intents("zzz"), ("Bash", {"command": "ls /srv/data"}, error("p")),
                      ("Bash", {"command": "cat /srv/data/x"}, error("q")))
    step = guard._step("Bash", {"command": "cp -r /srv/data /tmp"}, error("s"), True)
    assert step.error_class == "permission"
    assert same_action.result_match(step, guard.state.window[0]) == THRESHOLDS.error_overlap
    assert signals.repeated_result(guard.state, step, guard.config) == Signal("same_result", 0.25, (0, 1))


# -- signals.cycle --------------------------------------------------------------------------------

def test_a_cycle_names_its_steps_and_score_whatever_the_order_of_its_periods():
    """A-B-A-B under `cycle_periods=(3, 2)`: period 3 needs more steps than there are, period 2 still
    gets its turn. Mutations: that `continue` → `break`; the score → None; the related steps
    `seq[:-1]` → `seq[:+1]` / `seq[:-2]`."""
    status = ("Bash", {"command": "git status"}, "On branch main\nnothing to commit, working tree clean")
    log = ("Bash", {"command": "git log -1 --oneline"}, "3f2a1c9 Fix flaky test")
    for periods in ((2, 3), (3, 2)):
        guard = LoopGuard(Config(cycle_periods=periods), embedder=_intents("status", "log"))
        for call in (status, log, status):
            guard.record(*call)
        step = guard._step(*log, False)
        assert signals.cycle(guard.state, step, guard.config) == Signal("cycle", 1.0, (0, 1, 2)), periods


# -- signals.update_clusters ----------------------------------------------------------------------

def test_clusters_are_numbered_in_order_and_the_least_recently_used_is_dropped():
    """cluster_threshold=1.0 still joins identical intents (inclusive); max_clusters bounds the
    clusters, dropping the oldest. Mutations: `best_sim >= cluster_threshold` → `>`;
    `next_cluster += 1` → `-= 1` / `+= 2`; `> max_clusters` → `>=`; `popitem(last=False)` → True;
    `step.cluster = best_id` → None."""
    cfg = Config(max_clusters=2, cluster_threshold=1.0)
    guard = LoopGuard(cfg, embedder=_intents("alpha", "beta", "gamma"))
    steps = [guard._step("lookup", {"q": q}, f"{q} result", False) for q in ("alpha", "alpha again", "beta", "gamma")]
    for step in steps:
        signals.update_clusters(guard.state, step, cfg)
    assert [s.cluster for s in steps] == [0, 0, 1, 2]
    assert list(guard.state.clusters) == [1, 2]  # alpha's cluster, the least recently used, is gone


def test_a_cluster_centroid_is_the_normalized_sum_of_its_members():
    """... and stays float32 (the stored state's dtype). Mutations: `centroid * members + call_vec`
    → `centroid / members + ...`; `.astype(np.float32)` → `.astype(None)`."""
    near = [0.95, 0.0975 ** 0.5]
    guard = LoopGuard(Config(), embedder=_table({"status .": near, "status": [1, 0]}))
    for command in ("git status", "git status", "git status ."):
        signals.update_clusters(guard.state, guard._step("Bash", {"command": command}, "clean", False), guard.config)
    (cluster,) = guard.state.clusters.values()
    expected = 2 * np.eye(6)[0] + np.array(near + [0.0] * 4)
    assert cluster.members == 3 and cluster.centroid.dtype == np.float32
    assert np.allclose(cluster.centroid, expected / np.linalg.norm(expected), atol=1e-6)


def test_a_stale_cluster_reports_its_similarity_and_counts():
    """`git status` and `git status .` (cosine 0.95) alternating, nothing new: the 5th call is the
    3rd without a new result. Mutations: the score → None / `max(best_sim, 1.0)`; the detail → None /
    dropped; `members += 1` → `= 1` / `+= 2`."""
    near = [0.95, 0.0975 ** 0.5]
    guard = LoopGuard(Config(), embedder=_table({"status .": near, "status": [1, 0]}))
    found = [signals.update_clusters(guard.state, guard._step("Bash", {"command": c}, "nothing to commit", False),
                                     guard.config)
             for c in ("git status", "git status .", "git status", "git status .", "git status")]
    assert found[:4] == [None] * 4
    assert found[4].kind == "cluster" and 0.9 <= found[4].score < 1.0
    assert found[4].detail == "5 similar calls, 3 without a new result"


def test_a_cluster_result_is_seen_when_its_words_are_the_same_not_when_it_contains_an_earlier_one():
    """Other calls of one intent: 30 words again (hash differs) is stale — short_result is substantial
    and a Jaccard of exactly result_threshold (40 of 50 words) is the same; a result that contains
    the earlier one and adds as much again is new. Mutations: `min(n, step.result_size) >=
    short_result` → `>`; `result_size >= short_result` → `>`; `[0] >= result_threshold` → `[1]` / `>`."""
    words = [f"w{i}" for i in range(THRESHOLDS.short_result)]

    def stale_after(first: str, second: str) -> int:
        guard = LoopGuard(Config(), embedder=_intents("report"))
        for command, out in (("make report", first), ("make report-again", second)):
            signals.update_clusters(guard.state, guard._step("Bash", {"command": command}, out, False), guard.config)
        (cluster,) = guard.state.clusters.values()
        return cluster.stale

    assert stale_after(" ".join(words), " ".join(words) + "\n" + " ".join(words[:3])) == 1
    shared = [f"s{i}" for i in range(40)]
    assert stale_after(" ".join(shared + ["a1", "a2", "a3", "a4", "a5"]),
                       " ".join(shared + ["b1", "b2", "b3", "b4", "b5"])) == 1  # Jaccard 40/50 = 0.8
    assert stale_after(" ".join(shared), " ".join(shared + [f"n{i}" for i in range(40)])) == 0  # grew: news


# -- signals.look_back: each detector stores only the steps it reads --------------------------------

def test_each_detector_keeps_only_the_window_it_reads():
    """The window is stored with every session (SQLite, Redis): a baseline keeps exactly the calls
    its rule looks at — OpenHands' A/B x3 reads 6, Gemini CLI's cycle of up to 5 repeated 5 times
    25, Roo Code's 4th identical call 4, CrewAI's previous call 1, the per-tool counter 1 (its counts
    are kept apart). Mutations: each of those numbers + 1."""
    expected = {"semantic": Config().window, "exact": Config().exact_window, "normalized": Config().exact_window,
                "count": 1, "openhands": 6, "gemini-cli": 25, "roo-code": 4, "crewai": 1}
    for detector, steps in expected.items():
        cfg = Config(detector=detector)
        assert signals.look_back(cfg) == steps, detector
        assert LoopGuard(cfg).state.window.maxlen == steps, detector


# -- the pairwise helpers: same_facts, same_rich_short_result --------------------------------------

def test_same_facts_limits_message_sides_and_result_sizes():
    """Mutations: `or a.is_message or b.is_message` → `and` (twice); `> fact_result` → `>=`; `< 2`
    shared facts → `<= 2` / `< 3`; `>= short_result` → `>`."""
    guard = LoopGuard(Config(detector="exact"))

    def result(tool, n, facts, tag="w"):
        words = sum(len(f.split(".")) for f in facts)  # "2.31.4" is three words
        text = " ".join(facts + [f"{tag}{i}" for i in range(n - words)])
        return guard._step(tool, {"q": tag}, text, False)
    two = ["2.31.4", "1.26.18"]
    a, b = result("lookup", 80, two), result("lookup", 80, two, "v")  # fact_result words, 2 shared facts
    assert a.result_size == THRESHOLDS.fact_result and a.facts == b.facts == frozenset(two)
    assert same_action.same_facts(a, b) == 1.0
    message = guard._step("respond", {"content": "Which versions are installed?"}, " ".join(two), False)
    tool = guard._step("lookup", {"q": "versions"}, " ".join(two), False)
    assert message.is_message and message.facts == tool.facts != frozenset()
    assert same_action.same_facts(message, tool) == 0.0 == same_action.same_facts(tool, message)
    c, d = result("lookup", 30, two[:1]), result("lookup", 30, two[:1], "v")  # short_result words, 1 fact
    assert c.result_size == THRESHOLDS.short_result and same_action.same_facts(c, d) == 0.0


def test_a_rich_short_answer_needs_tiny_result_words_besides_every_echo():
    """tiny_result (8) distinct words besides the words of *either* call. Mutations: `a.input_words |
    b.input_words` → `&`; `>= tiny_result` → `>`."""
    guard = LoopGuard(Config(detector="exact"))

    def answer(city, n):
        return guard._step("get_weather", {"city": city}, " ".join([city] + [f"x{i}" for i in range(n)]), False)
    assert same_action.same_rich_short_result(answer("Tokyo", 8), answer("TYO", 8))
    assert not same_action.same_rich_short_result(answer("Tokyo", 7), answer("TYO", 7))  # "tokyo" is an echo


# -- same_action.same_step: an acknowledgement says nothing of what a call did --------------------------
# Found on a random sample of real mini-swe-agent runs (benchmarks/labels/README.md): edits of one
# file and new test scripts written with `cat <<EOF > f` all answer the harness's empty output, and
# were matched as reworded repeats of each other (a warning in one ordinary coding run in four).

MINI_SWE_EMPTY = "<returncode>0</returncode>\n<output>\n</output>"


def test_different_edits_of_one_line_answering_an_empty_output_are_work():
    """Three `sed -i` edits of line 224, each answered by an empty output: the answer cannot tell
    that they did the same thing. Mutation: drop the acknowledgement check in same_step."""
    guard = LoopGuard(Config(), embedder=_intents("pyplot.py"))
    edits = [f"sed -i '224s/print.*/print(\"DEBUG {n}\")/' lib/pyplot.py" for n in ("a", "b", "c")]
    steps = [guard._step("Bash", {"command": c}, MINI_SWE_EMPTY, False) for c in edits]
    assert all(s.acknowledged for s in steps)
    assert same_action.same_step(steps[0], steps[1], guard.config) is None
    fresh = LoopGuard(Config(), embedder=_intents("pyplot.py"))
    assert [fresh.record("Bash", {"command": c}, MINI_SWE_EMPTY).action for c in edits] == ["allow"] * 3


def test_the_very_same_edit_answering_an_empty_output_is_still_a_repeat():
    """The rule is about reworded calls: the identical edit three times is the loop it always was."""
    guard = LoopGuard(Config(), embedder=_intents("pyplot.py"))
    edit = {"command": "sed -i '224s/print.*/print(\"DEBUG\")/' lib/pyplot.py"}
    assert [guard.record("Bash", edit, MINI_SWE_EMPTY).action for _ in range(3)] == ["allow", "allow", "warn"]


@pytest.mark.parametrize("answer", ["exitcode: 0 (execution succeeded)\nCode output: X\n", " count |-------|  3880 |(1 row)"])
def test_a_tiny_answer_is_not_an_acknowledgement(answer):
    """"Code output: X" and a count of 3880 are answers: reworded calls that keep getting them are
    still compared (real Who&When and synthetic loops). Mutation: every short result an
    acknowledgement."""
    guard = LoopGuard(Config(), embedder=_intents("orders"))
    queries = ["SELECT COUNT(*) FROM orders WHERE status = 'paid'",
               "select count(id) as paid from orders where status='paid'"]
    a, b = (guard._step("run_sql", {"query": q}, answer, False) for q in queries)
    assert not a.acknowledged
    assert same_action.same_step(a, b, guard.config) == ("paraphrase", 1.0)


def test_an_acknowledgement_may_echo_the_call():
    """"Ticket T-1 updated" for update_ticket(T-1) says no more than "updated". Mutation: drop the
    call's own words from the acknowledgement check."""
    words = ("ticket", "t", "1", "updated")
    assert features.is_acknowledgement("ticket t-1 updated", words, 4, frozenset({"ticket", "t", "1"}))
    assert not features.is_acknowledgement("ticket t-1 updated", words, 4, frozenset())
    assert not features.is_acknowledgement("ok", ("ok",), THRESHOLDS.short_result, frozenset())


# Claude Code's answer to every TodoWrite call, whatever the list holds.
TODO_ANSWER = ("Todos have been modified successfully. Ensure that you continue to use the todo list to "
               "track your progress. Please proceed with the current tasks if applicable")
TASKS = ["Read the config", "Fix the parser", "Add tests", "Run the tests", "Update the docs"]


def _todos(done: int) -> dict:
    return {"todos": [{"content": task, "status": "completed" if i < done else "in_progress" if i == done
                       else "pending", "activeForm": task} for i, task in enumerate(TASKS)]}


def test_todo_updates_are_writes_not_repeats():
    """Claude Code answers each TodoWrite with one fixed text: a success notice plus guidance for
    the agent. Ticking tasks off, back to back or between reads, is bookkeeping; it read as
    "a reworded call with the same detailed answer" and was stopped. Mutation: drop the pass over
    sentences addressed to the reader in `features.is_acknowledgement`."""
    guard = LoopGuard(Config())
    assert guard._step("TodoWrite", _todos(0), TODO_ANSWER, False).acknowledged
    assert [guard.record("TodoWrite", _todos(k), TODO_ANSWER).action for k in range(5)] == ["allow"] * 5
    between = LoopGuard(Config())
    for k in range(5):
        assert between.record("TodoWrite", _todos(k), TODO_ANSWER).action == "allow"
        assert between.record("Read", {"file_path": f"/repo/m{k}.py"}, f"1\tdef f{k}():\n2\t    return {k}\n").action == "allow"
    # the same list written again and again is no bookkeeping: still a repeat
    same = LoopGuard(Config())
    assert [same.record("TodoWrite", _todos(2), TODO_ANSWER).action for _ in range(4)] == ["allow", "allow", "warn", "stop"]


@pytest.mark.parametrize("answer", ["Upload succeeded. 3 files skipped: a.txt, b.txt, c.txt. Please check them.",
                                    "-- Configuring done",
                                    "Command ran successfully. 3 tests failed: test_a, test_b, test_c.",
                                    "Please try again later.",
                                    "Login failed. You may retry."])
def test_a_success_notice_with_news_is_not_an_acknowledgement(answer):
    """Only sentences addressed to the reader may follow a success notice: a result that reports
    anything else, or no success at all, or a notice with no guidance ("-- Configuring done": the
    subject is the news), is an answer. Mutations: skip every sentence without a success word;
    drop the need for guidance."""
    guard = LoopGuard(Config())
    assert not guard._step("run", {"what": "x"}, answer, False).acknowledged


# -- background facts and writes: what real coding runs repeat without looping ---------------------

PYTEST_HEADER = "platform linux -- Python 3.9.20, pytest-7.2.0, pluggy-0.13.1\nrootdir: /testbed"


def _pytest_runs(guard, unique_facts):
    actions = []
    for k, fact in enumerate(unique_facts):
        body = f"{'=' * 29} test session starts {'=' * 30}\n{PYTEST_HEADER}\ncollected 1 item\n{'run ' + fact if fact else 'ok'}"
        actions.append(guard.record("Bash", {"command": f"pytest tests/test_checks.py -k case_{k}"}, body).action)
    return actions


def test_facts_every_result_states_are_background_not_an_answer():
    """Every test run prints the Python and pytest versions: after background_fact brief results
    stating them they are the environment, and three different scripts whose only shared facts are
    those versions did not find the same thing. With the rule off the same runs warn."""
    runs = ["3f9a2c1d", "8b7e6d5c", "1a2b3c4d", "9f8e7d6c", "", "", ""]
    assert _pytest_runs(LoopGuard(Config(), embedder=_intents("pytest")), runs) == ["allow"] * 7
    no_background = Config(thresholds=Thresholds(background_fact=10 ** 9))
    assert "warn" in _pytest_runs(LoopGuard(no_background, embedder=_intents("pytest")), runs)


REPRO_OUTPUT = "SQL Query:\nSELECT " + ", ".join(f'"main_model"."field_{name}"' for name in (
    "zone", "price", "owner", "created", "updated", "status", "region", "label", "weight", "height", "width",
    "depth", "color", "batch", "origin", "target", "vendor", "rating", "stock", "notes")) + ' FROM "main_model"\nRows: 2'


REPRO_REPORT = REPRO_OUTPUT + "\nIndexes: " + ", ".join(f"idx_{w}" for w in (  # long enough to be alike, not equal
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo "
    "sierra tango").split())


def _repro_session(edit: bool):
    guard = LoopGuard(Config(), embedder=_intents("reproduce"))
    actions = [guard.record("Bash", {"command": "python reproduce.py"}, REPRO_REPORT).action]
    for k in range(3):
        topic = ("parser", "cache", "router")[k]  # a different file each time: new content, progress
        fresh = "\n".join(f"def {topic}_{word}(x):\n    return {topic}_{word}_table[x]" for word in
                          ("alpha", "bravo", "delta", "gamma", "kilo", "lima", "oscar", "sierra"))
        actions.append(guard.record("Bash", {"command": f"cat pkg/part_{k}.py"}, fresh).action)
        output = REPRO_REPORT
        if edit:
            actions.append(guard.record("Bash", {"command": f"sed -i 's/x \\* {k}/x + {k}/' pkg/part_{k}.py"},
                                        MINI_SWE_EMPTY).action)
            output = REPRO_REPORT.replace("Rows: 2", f"Rows: {3 + k}")  # what the edit changed
        actions.append(guard.record("Bash", {"command": "python reproduce.py"}, output).action)
    return actions


def test_running_the_reproducer_again_after_an_edit_checks_the_edit():
    """The same reproducer four times, its printout a little different after each edit (answered
    by a bare acknowledgement): each run checks a change (`state.last_write`), though it reads much
    like the last. Without the edits the same runs make a stale cluster. (The printout unchanged
    after every edit is the edit → rerun loop: tests/test_edit_rerun.py.) Mutation: drop the
    last_write check in update_clusters."""
    assert set(_repro_session(edit=True)) == {"allow"}
    assert "warn" in _repro_session(edit=False)


def _edit_and_rerun(output: str, edit: bool):
    guard = LoopGuard(Config(), embedder=_intents("reproduce"))
    actions = []
    for k in range(4):
        if edit and k:
            actions.append(guard.record("Bash", {"command": f"sed -i 's/debug_{k - 1}/debug_{k}/' pkg/core.py"},
                                        MINI_SWE_EMPTY).action)
        actions.append(guard.record("Bash", {"command": "python reproduce.py"}, output).action)
    return actions


def test_a_test_run_after_each_edit_checks_the_edit_but_the_same_output_stays_a_loop():
    """Edit → run → edit → run: one run after an edit checks it (`since_progress` starts at
    `state.last_write` for a call that succeeds), so the first rerun with the output unchanged is
    allowed; the second round with nothing moved is the loop (`novelty.unchanged_after_edit`),
    failing or not. Without the edits the same runs are an exact repeat at once. (Edits with the
    output unchanged were all allowed before the edit → rerun rule: a loop mini-swe-agent runs
    showed, CHANGELOG.md.) Mutation: `unchanged_after_edit` always False. (`since_progress`
    ignoring `last_write` warns the clean checks after each edit below.)"""
    assert _edit_and_rerun(REPRO_OUTPUT, edit=True)[:4] == ["allow"] * 4
    assert "warn" in _edit_and_rerun(REPRO_OUTPUT, edit=True)
    assert _edit_and_rerun(REPRO_OUTPUT, edit=False)[:3] == ["allow", "allow", "warn"]
    failing = "Traceback (most recent call last):\n  File \"reproduce.py\", line 3\nImportError: cannot import name 'X'"
    assert "warn" in _edit_and_rerun(failing, edit=True)


# -- different programs are different experiments; a write in the cluster is checked by what follows --
# Found on the ordinary mini-swe-agent runs: new probe scripts
# (`cat <<'EOF' > check_radd.py ... python check_radd.py`) that print the same thing were "reworded
# repeats", and a file viewed, edited with `sed -i`, viewed again made a stale cluster.

FITS_REPORT = "\n".join(["Identical: True", "", " fitsdiff: 5.3.dev756", " a: diff.fits", " b: diff.fits",
                         " Maximum number of different data values to be reported: 10",
                         " Relative tolerance: 0.0, Absolute tolerance: 0.0", "No differences found.",
                         " Primary HDU: header keywords compared, data arrays compared, checksums skipped",
                         " Extension HDU 1 (BINTABLE): columns compared by name, format and variable length"])


def _probe(name: str, column: str) -> dict:
    body = f"from astropy.io import fits\nimport numpy as np\nc = fits.Column('{column}', format='QD', array=[[0], [0, 0]])\n"
    return {"command": f"cat <<'EOF' > {name}\n{body}EOF\npython {name}"}


def test_probe_scripts_under_different_names_are_experiments_not_repeats(monkeypatch):
    """Three new probe scripts that print the same report: each tests another column format.
    The same script run three times is still the loop. Mutation: `different_programs` always False."""
    names = [("test_qd.py", "a"), ("test_pd.py", "b"), ("test_vla.py", "c")]
    guard = LoopGuard(Config(), embedder=_intents("astropy"))
    assert [guard.record("Bash", _probe(n, c), FITS_REPORT).action for n, c in names] == ["allow"] * 3
    a, b = (LoopGuard(Config(), embedder=_intents("astropy"))._step("Bash", _probe(n, c), FITS_REPORT, False)
            for n, c in names[:2])
    assert a.programs == {"test_qd.py"} and same_action.different_programs(a, b)
    assert same_action.same_step(a, b, Config()) is None
    again = LoopGuard(Config(), embedder=_intents("astropy"))
    assert [again.record("Bash", _probe("test_qd.py", c), FITS_REPORT).action for c in "abc"][-1] == "warn"
    monkeypatch.setattr(same_action, "different_programs", lambda a, b: False)
    fresh = LoopGuard(Config(), embedder=_intents("astropy"))
    assert "warn" in [fresh.record("Bash", _probe(n, c), FITS_REPORT).action for n, c in names]


def test_a_cluster_does_not_go_stale_on_programs_it_never_ran():
    """Long apart, so no window match: five new probe scripts with the same report do not make a
    stale cluster; five runs of one script do. Mutation: drop the program check in update_clusters."""
    def session(names):
        # the cluster rule alone: the gate (semloop.gate) hides a lone cluster flag whose evidence
        # lies far back between new results, and that is not what this test pins
        guard = LoopGuard(Config(window=4, gate_coefs=()), embedder=_intents("astropy", "notes"))
        actions = []
        for k, name in enumerate(names):
            actions.append(guard.record("Bash", _probe(name, "abcde"[k]), FITS_REPORT).action)
            for j in range(4):  # other work in between, each with a new result
                actions.append(guard.record("Bash", {"command": f"cat notes_{k}_{j}.txt"}, f"notes {k} {j} " * 30).action)
        return actions
    assert set(session([f"probe_{k}.py" for k in "abcde"])) == {"allow"}
    assert "warn" in session(["probe.py"] * 5)


def _file_view(edited: set[int]) -> str:
    """`sed -n '250,270p'` of a file whose lines `edited` pass the plan instead of the migration."""
    return "\n".join(f"    {i}\t        state_{i} = handler_{i}(state, {'plan' if i in edited else 'migration'})"
                     for i in range(250, 271))


def test_a_view_after_an_edit_of_the_same_kind_checks_the_edit():
    """`sed -n` view, `sed -i` edit, view again — the edit joins the views' cluster, and the view
    after it checks the edit even though the text looks much the same (one word changed). Mutation:
    `state.last_write >= cluster.steps[-1]` → `>` (the write, being the cluster's last call, then
    excuses nothing)."""
    guard = LoopGuard(Config(), embedder=_intents("executor.py"))
    view = {"command": "sed -n '250,270p' django/db/migrations/executor.py"}
    edited: set[int] = set()
    actions = [guard.record("Bash", view, _file_view(edited)).action]
    for line in (255, 257, 259, 261):
        actions.append(guard.record("Bash", {"command": f"sed -i '{line}s/migration/plan/' django/db/migrations/executor.py"},
                                    MINI_SWE_EMPTY).action)
        edited.add(line)
        actions.append(guard.record("Bash", view, _file_view(edited)).action)
    assert set(actions) == {"allow"}


# -- what SWE-agent runs on Java showed (benchmarks/labels/swe_agent_java.jsonl) -------------------

FIXES = ("requireNonNull(name)", "Collections.unmodifiableMap(beans)", "synchronized (lock) {", "return Optional.empty();")


def _java_window(k: int) -> str:
    body = "\n".join(f"{n}:    private final Map<String, Object> field{n} = new HashMap<>();" for n in range(1, 60))
    return f"[File: /repo/src/main/java/org/x/Beans.java (160 lines total)]\n{body}\n60:    {FIXES[k - 1] if k else ''}"


def _edit_and_view(monkeypatch, editor_writes: bool):
    if not editor_writes:
        monkeypatch.setattr(features, "is_edit", lambda tool_input, values: False)
    guard = LoopGuard(Config(), embedder=_intents("Beans.java", *FIXES))  # four different edits
    view = {"command": "open src/main/java/org/x/Beans.java"}
    actions = [guard.record("bash", view, _java_window(0)).action]
    for k in range(1, 5):
        edit = {"command": f"edit 60:60\n    {FIXES[k - 1]}\nend_of_edit"}
        actions.append(guard.record("bash", edit, _java_window(k)).action)
        actions.append(guard.record("bash", view, _java_window(k)).action)
    return actions


def test_a_view_after_an_editor_edit_checks_the_edit(monkeypatch):
    """SWE-agent's `edit 60:60 ... end_of_edit` answers with the edited file, not "done", so only
    the call says it wrote (`features.is_edit`); re-opening the file after it checks the edit.
    Mutation: `is_edit` always False (the views then make a stale cluster)."""
    assert set(_edit_and_view(monkeypatch, editor_writes=True)) == {"allow"}
    assert "warn" in _edit_and_view(monkeypatch, editor_writes=False)


def test_editor_commands_are_edits_and_views_are_not():
    assert features.is_edit({"command": "edit 12:14\nx = 1\nend_of_edit"}, ["edit 12:14\nx = 1\nend_of_edit"])
    assert features.is_edit({"command": "create reproduce.java"}, ["create reproduce.java"])
    assert features.is_edit({"command": "str_replace", "path": "/repo/a.py", "old_str": "a", "new_str": "b"}, [])
    for command in ("open src/A.java", "goto 120", "edit", "python edit.py", "view /repo/a.py"):
        assert not features.is_edit({"command": command}, [command])
    assert not features.is_edit({"command": "view", "path": "/repo/a.py"}, [])
    assert not features.is_edit({"command": ["sed", "-n", "1,5p", "a.py"]}, ["sed", "-n", "1,5p", "a.py"])


def test_a_command_given_as_an_argv_list_is_detected_not_failed_open():
    """`{"command": ["ls", "-la"]}` (an argv list, as some tools take it) once made `is_edit`
    raise (an unhashable list tested against a set): the guard failed open on every such call."""
    guard = LoopGuard(Config(), embedder=_intents("ls"))
    verdicts = [guard.record("run", {"command": ["ls", "-la"]}, "total 0\ndrwxr-xr-x 2 dev dev 4096 .") for _ in range(3)]
    assert all(v.error is None for v in verdicts) and verdicts[-1].action == "warn"


def _searches(commands, output):
    guard = LoopGuard(Config(), embedder=_intents("find", "export"))
    return [guard.record("bash", {"command": c}, output).action for c in commands]


def test_searches_that_print_nothing_keep_getting_the_empty_answer(monkeypatch):
    """`find` in /usr, /opt, ~ for a JDK that is not there: no output each time is the "empty"
    answer varied attempts keep getting (`error_class(..., search=True)`); three `export`s that
    print nothing are not searches. Mutation: `is_search` always False."""
    finds = [f'find {where} -name "javac" 2>/dev/null' for where in ("/usr", "/opt", "~")]
    exports = ["export JAVA_HOME=/usr/lib/jvm/java-11", "export PATH=$JAVA_HOME/bin:$PATH", "export M2_HOME=/opt/maven"]
    assert _searches(finds, "") == ["allow", "allow", "warn"]
    assert _searches(exports, "") == ["allow"] * 3
    monkeypatch.setattr(features, "is_search", lambda tool, values: False)
    assert _searches(finds, "") == ["allow"] * 3


def test_search_commands_and_tools():
    assert features.is_search("bash", ["pip list | grep jackson"]) and features.is_search("Grep", [])
    assert features.is_search("bash", ["which javac"]) and features.is_search("search_dir", ["Test"])
    assert not features.is_search("bash", ["export FINDER=1"]) and not features.is_search("bash", ["cd /usr/find"])
    assert features.error_class("", search=True) == "empty" and features.error_class("") is None
    assert features.error_class("  \n", is_error=True, search=True) == "empty"


def test_too_many_matches_is_the_empty_answer():
    """SWE-agent's "More than 475 files matched ... Please narrow your search." answers nothing,
    like "No matches found": three broad searches that keep getting it are stuck."""
    text = 'More than {n} files matched for "{term}" in /repo/src/test. Please narrow your search.'
    assert features.error_class(text.format(n=475, term="Test")) == "empty"
    guard = LoopGuard(Config(), embedder=_intents("search_dir"))
    actions = [guard.record("bash", {"command": f'search_dir "{term}" src/test'}, text.format(n=n, term=term)).action
               for term, n in (("Test", 475), ("Deserialization", 126), ("ObjectMapper", 438))]
    assert actions == ["allow", "allow", "warn"]


# -- a browser agent (benchmarks/labels/webarena_browsergym.jsonl) ----------------------------------

CHROME = " ".join(f"[{100 + n}] link 'Menu {word}'" for n, word in enumerate(
    "dashboard sales catalog customers marketing content reports stores system partners extensions account "
    "orders invoices shipments transactions billing agreements products categories inventory attributes "
    "search terms ratings reviews newsletter pages blocks widgets themes".split()))


def _page(url: str, topic: str, focused: str = "", label: str = "Filters") -> str:
    """A shop page: the shared menus, then rows naming what this page is about."""
    body = " ".join(f"row '{word}{topic.split()[-1]}{k}'" for k in range(3) for word in
                    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike oscar".split())
    return f"URL: http://shop/{url}\nRootWebArea '{topic}'\n{CHROME}\n{body}\n[{focused}] button '{label}', focused"


def test_element_ids_are_targets_not_a_creeping_number(monkeypatch):
    """`click(bid="1123")`, then 845, then 967 on one page that looks nearly the same (the focus moves
    from one filter to the next): three elements, not a number creeping (`features._ID_KEY`: the
    value of `bid`, `order_id`, `index` is an id). Mutation: `_ID_KEY` matching nothing (the clicks
    then share a skeleton and warn). (Three clicks that leave the very same page, its element ids
    aside, are one non-answer three times: `features._ELEMENT_REF`.)"""
    def clicks():
        guard = LoopGuard(Config(), embedder=_intents("click"))
        return [guard.record("click", {"bid": bid}, _page("admin/sales/order", "Orders", focused=bid,
                                                          label=f"Filter by {label}")).action
                for bid, label in (("1123", "status"), ("845", "date"), ("967", "total"))]
    assert clicks() == ["allow"] * 3
    assert features.skeleton_signature("t", {"depth": 2}) == features.skeleton_signature("t", {"depth": 3})
    monkeypatch.setattr(features, "_ID_KEY", __import__("re").compile(r"$^"))
    assert "warn" in clicks()


def test_an_error_over_a_new_page_is_not_the_same_failure():
    """BrowserGym reports "Timeout 500ms exceeded" on clicks that did open the next order: with a
    whole page after it (more than fact_result words) an error must come with the same content to
    be the same failure; pages of one shop share their menus. Mutation: drop the size condition
    (the loose error_overlap then matches the shared menus)."""
    timeout = "TimeoutError: Locator.click: Timeout 500ms exceeded."

    def orders(config=Config()):
        guard = LoopGuard(config, embedder=_intents("click"))
        return [guard.record("click", {"bid": bid}, f"{timeout}\n" + _page(f"order/view/{n}", f"Order {n}"),
                             is_error=True).action for bid, n in (("1379", 197), ("1381", 196), ("1383", 195))]
    assert orders() == ["allow"] * 3
    assert "warn" in orders(Config(thresholds=Thresholds(fact_result=10 ** 9)))


def test_an_error_over_another_page_of_a_list_is_not_the_same_failure(monkeypatch):
    """Pages 2, 3 and 4 of an order history, each reached by a click BrowserGym reports as timed
    out: the rows differ little, but each result's first line names another page, so they are not
    one failure repeated. Mutation: drop the first-line check for errors with a whole page."""
    timeout = "TimeoutError: Locator.click: Timeout 500ms exceeded."

    def history_pages():
        guard = LoopGuard(Config(), embedder=_intents("click"))
        return [guard.record("click", {"bid": bid}, _page(f"sales/order/history/?p={p}", "My Orders").replace(
            "\n", f"\n{timeout}\n", 1) + f" page {p}", is_error=True).action
            for bid, p in (("1447", 2), ("1498", 3), ("1512", 4))]
    assert history_pages() == ["allow"] * 3
    real_head = features.result_head
    monkeypatch.setattr(features, "result_head", lambda text, head_words: real_head("the same first line for every page"))
    assert "warn" in history_pages()


@pytest.mark.parametrize("check, output", [
    ("pytest -q", "..........                                 [100%]\n10 passed in 0.42s"),
    ("npm test", "> app@1.0.0 test\n> jest\n\nTest Suites: 4 passed, 4 total\nTests:       31 passed, 31 total"),
    ("npx tsc --noEmit", ""),
    ("ruff check .", "All checks passed!"),
    ("git status --short", " M src/app.py"),
    ("pyright src", "0 errors, 0 warnings, 0 informations"),
])
def test_a_clean_check_after_each_edit_is_refactoring(check, output):
    """Edit, run the checks, all clean; five times. The check's output never changes, and that is
    the point: the work is the edits. (A rule counting the same call with the same output across
    edits caught a no-op script re-run between edits in a labeled run, and warned all of these.)
    Mutations: count identical successful runs across writes; a zero count of failures no pass
    (`features.reports_success`: pyright's summary has no success word); `novelty.says_its_own`
    without the echoes (` M src/app.py`)."""
    guard = LoopGuard(Config())
    actions = []
    for i in range(5):
        actions.append(guard.record("Edit", {"file_path": "/repo/src/app.py", "old_string": f"v{i}", "new_string": f"v{i + 1}"},
                                    "The file /repo/src/app.py has been updated.").action)
        actions.append(guard.record("Bash", {"command": check}, output).action)
    assert actions == ["allow"] * 10


def _pending(output: str) -> bool:
    result = features.normalize_result(output)
    return features.is_pending(result, features.result_sketch(result)[1])


def test_a_product_name_is_not_a_pending_status():
    """A retail order lists "running shoes"; that is not a status still in progress, so looking the
    same order up again and again is a repeat at the usual count, not a poll given more patience
    (CTU Qwen3 run task96: the lookups' "running" also turned off the cycle check). In a JSON
    record only a status field says pending. Mutation: search the whole record's head again."""
    order = json.dumps({"order_id": "#W4073673", "user_id": "lei_wilson_4541", "items": [
        {"name": "Running Shoes", "item_id": "1775591963", "price": 154.75}], "status": "delivered"})
    assert not _pending(order)
    assert _pending(json.dumps({"id": 7, "status": "processing"}))
    assert _pending("Building... 3 of 7 layers")
    guard = LoopGuard(Config())
    actions = [guard.record("get_order_details", {"order_id": "#W4073673"}, order).action for _ in range(3)]
    assert actions == ["allow", "allow", "warn"]


def test_a_cycle_of_tool_calls_with_talk_between_is_a_cycle():
    """Look the order up, look the product up, try the exchange (an error), then the order and the
    very same exchange again, and the order once more, with a message to the customer after every
    call: the replies are new every time, the calls and their results are not (CTU Qwen3 run
    task96). Only the cycle sees it: the product lookup was news, so no single call has repeated
    often enough since. Mutation: keep the messages in the cycle's sequence."""
    order = json.dumps({"order_id": "#W4073673", "items": [{"name": "Laptop", "item_id": "2216662955"}],
                        "status": "delivered"})
    product = json.dumps({"name": "Laptop", "variants": {"9844888101": {"processor": "i7", "ram": "8GB"}}})
    exchange = {"order_id": "#W4073673", "item_ids": ["2216662955", "2216662955"], "new_item_ids": ["9844888101"] * 2}
    calls = [("get_order_details", {"order_id": "#W4073673"}, order, False),
             ("get_product_details", {"product_id": "4760268021"}, product, False),
             ("exchange_delivered_order_items", exchange, "Error: 2216662955 not found", True),
             ("get_order_details", {"order_id": "#W4073673"}, order, False),
             ("exchange_delivered_order_items", exchange, "Error: 2216662955 not found", True),
             ("get_order_details", {"order_id": "#W4073673"}, order, False)]
    guard = LoopGuard(Config())
    actions = []
    for n, (tool, args, result, failed) in enumerate(calls):
        actions.append(guard.record(tool, args, result, is_error=failed).action)
        guard.record("respond", {"content": f"Update {n}: still working on your exchange."}, f"Reply {n}, new words {n * 7}.")
    assert actions == ["allow"] * 5 + ["warn"]
    # the same agent moving on (another order each time) is not a cycle
    other = LoopGuard(Config())
    for n in range(4):
        record = order.replace("4073673", f"40736{n}0").replace("2216662955", f"55{n}1209{n}7")
        assert other.record("get_order_details", {"order_id": f"#W40736{n}0"}, record).action == "allow"
        assert other.record("respond", {"content": f"Order {n} looks fine."}, "Thanks, next one.").action == "allow"


def test_the_first_clean_view_of_a_page_is_news():
    """A list, an order opened by a click BrowserGym reports as timed out, a note taken on the order
    (the same page, now without the error), back to the list; three orders. The orders were news,
    but each first came with an error, which is never progress, and the note's clean page matched
    it: the third "back to the list" read as the same call with nothing new since. Only what a
    successful call showed makes a result old. Mutation: compare novelty against error steps too."""
    timeout = "TimeoutError: Locator.click: Timeout 500ms exceeded."
    guard = LoopGuard(Config(), embedder=_intents("click"))
    actions = []
    for bid, n in (("1461", 65), ("1498", 125), ("1535", 180)):
        order = _page(f"sales/order/view/{n}", f"Order {n}")
        actions.append(guard.record("click", {"bid": bid}, f"{timeout}\n{order}", is_error=True).action)
        actions.append(guard.record("take_note", {"note": f"Order {n}: 3 items"}, order).action)
        actions.append(guard.record("click", {"bid": "730"}, _page("sales/order", "Orders")).action)
    assert actions == ["allow"] * 9
    # the same order opened again and again is no news: still a repeat
    again = LoopGuard(Config(), embedder=_intents("click"))
    order = _page("sales/order/view/65", "Order 65")
    assert "warn" in [again.record(*call).action for _ in range(3) for call in (
        ("click", {"bid": "1461"}, f"{timeout}\n{order}", True), ("click", {"bid": "730"}, _page("sales/order", "Orders")))]


# -- an error object is an error, in any language (tau2 student domains, benchmarks/labels) ---------

def test_a_json_error_object_is_an_error(monkeypatch):
    """`{"error": "Producto 'Urea' no encontrado."}` for three guessed names: the tool said it
    failed, in a key, not in English words. A null or empty error is not one. Mutation: drop the
    JSON-error alternative from the "error" class (the lookups then look like three answers)."""
    assert features.error_class('{"error": "Producto \'Urea\' no encontrado."}') == "error"
    assert features.error_class('{"errors": ["bad date"]}') == "error"
    for fine in ('{"error": null, "data": 1}', '{"error": ""}', '{"error": false}', '{"result": "ok"}'):
        assert features.error_class(fine) is None

    def lookups():
        guard = LoopGuard(Config(), embedder=_intents("producto"))
        return [guard.record("get_producto_details", {"producto_id": name},
                             json.dumps({"error": f"Producto '{name}' no encontrado."}, ensure_ascii=False)).action
                for name in ("Ammonium Sulfate", "Urea Arroz", "NPK 15-15-15 Arroz")]
    assert lookups() == ["allow", "allow", "warn"]
    classes = [(name, pattern) for name, pattern in features._ERROR_CLASSES]
    error = dict(classes)["error"]
    english_only = __import__("re").compile(error.pattern.split("|^\\{")[0])
    monkeypatch.setattr(features, "_ERROR_CLASSES", [(n, english_only if n == "error" else p) for n, p in classes])
    monkeypatch.setattr(features, "_ANY_ERROR", __import__("re").compile(
        "|".join(f"(?P<{n}>{(english_only if n == 'error' else p).pattern})" for n, p in classes)))
    assert lookups() == ["allow"] * 3


# -- talk moves a call on only when the call uses something new (tau2 student domains) ------------
# The customer's replies are the results of the agent's messages, new every time; they used to count
# as progress for every call. Mutations: `since_progress` ignoring `talk`; `uses_new_value` always
# False (a retry with the customer's next id is then a loop).

def _conversation(calls, replies, monkeypatch=None):
    """Alternate each (tool, input, output) call with an agent statement and the customer's reply;
    the actions of the calls, in order."""
    guard = LoopGuard(Config(), embedder=_intents("lookup", "respond"))
    actions = []
    for (tool, tool_input, output), reply in zip(calls, replies):
        actions.append(guard.record(tool, tool_input, output).action)
        guard.record("respond", {"content": f"The system says: {output[:40]}"}, reply)
    return actions


REPLIES = ["I'm sure I had surgery scheduled, it was my knee.",
           "It was last June or July, at CESFAM Rivadavia.",
           "My doctor there was Dr. Soto, if that helps."]


def test_the_same_lookup_after_new_replies_is_still_a_repeat(monkeypatch):
    """The same lookup, the same answer, three times, the customer saying something new in between
    that the call never uses: the replies did not move the lookup on."""
    lookup = ("search_waiting_list_by_rut", {"rut": "99.999.999-9"},
              "RESULTADO: El paciente no registra interconsultas pendientes en la lista de espera.")
    assert _conversation([lookup] * 3, REPLIES) == ["allow", "allow", "warn"]
    real = novelty.since_progress
    monkeypatch.setattr(signals, "since_progress", lambda state, step, talk=True: real(state, step))
    assert _conversation([lookup] * 3, REPLIES) == ["allow"] * 3


def test_retries_of_an_id_that_failed_are_the_same_failure_whatever_was_said():
    """Varied calls on one rejected id, each failing the same way, with talk between: the same
    failure. (The calls differ, so only `repeated_result` can see it.)"""
    error = "ERROR: El RUT ingresado no existe en el registro civil simulado."
    calls = [("get_patient_details", {"rut": "12888999-0"}, error),
             ("get_patient_details", {"rut": "12888999-0", "include_history": True}, error),
             ("get_patient_details", {"rut": "12888999-0", "source": "registro"}, error)]
    assert _conversation(calls, REPLIES) == ["allow", "allow", "warn"]


def test_each_retry_with_the_customers_next_id_is_progress(monkeypatch):
    """Each lookup uses the id the customer just gave and each fails "not found": the customer is
    correcting themselves, the agent acting on it. Mutation: `uses_new_value` always False."""
    calls = [("get_customer_details", {"customer_id": cid}, f'{{"error": "No customer with ID \'{cid}\'."}}')
             for cid in ("1234567", "7654321", "555-123-4567")]
    replies = ["Sorry, it is actually 7654321.", "Then try my phone, 555-123-4567.", "Thanks."]
    assert _conversation(calls, replies) == ["allow"] * 3
    monkeypatch.setattr(signals, "uses_new_value", lambda state, step: False)
    assert _conversation(calls, replies) == ["allow", "allow", "warn"]


# -- a conversation that keeps failing to end ------------------------------------------------------
# A real Qwen3 retail run (tau_conversations, 8b task52): the customer will come back with an item
# id and keeps saying thanks; the agent answers each thanks with another goodbye.

GOODBYES = ["You're welcome, Sofia! Feel free to reach out once you've found the item ID. Have a great day! 😊",
            "You're very welcome, Sofia! I'm here to help. Have a great day! 😊",
            "You're welcome, Sofia! Don't hesitate to reach out when you're ready with the item ID. Have a fantastic day!"]
THANKS = ["Thanks so much! I'll reach out once I have the item ID.", "Thanks again! I'll come back later.",
          "Thanks a lot! Take care!"]


def test_closing_messages_are_courtesies_only():
    """Thanks, welcomes and "reach out" lines close; a question, an offer to act and a statement of
    what was done do not. Mutations: `all(` → `any(` in `features.is_closing`; drop its
    `not message_asks(…)`; the number check, for short sentences or for all."""
    assert all(features.is_closing(text) for text in GOODBYES)
    assert features.is_closing("Thank you! Goodbye.")
    assert not features.is_closing("Thank you! Could you please provide the order ID?")
    assert not features.is_closing("Thanks! Please reach out with your order ID.")  # courtesy words, an ask
    assert not features.is_closing("Would you like me to proceed with the exchange?")
    assert not features.is_closing("Your refund of $20.61 has been issued. Have a great day!")
    assert not features.is_closing("Refund: $20.61. Have a great day!")
    assert not features.is_closing("Thanks, order #W4284542 is cancelled.")  # a courtesy that reports
    assert not features.is_closing("Glad you asked. The blue chair is the best option here.")
    assert not features.is_closing("")


def _goodbyes(guard: LoopGuard, between=None) -> list[str]:
    actions = []
    for i, (message, reply) in enumerate(zip(GOODBYES, THANKS)):
        if between and i == 2:
            guard.record(*between)
        actions.append(guard.record_message(message, reply).action)
    return actions


def test_a_third_goodbye_in_a_row_is_a_conversation_loop():
    """Three closing messages in a row: the third warns, naming the two before it. A goodbye, a
    last word and a goodbye are normal; a tool call between the goodbyes is work. Mutations: drop
    the closing branch of `repeated_message`; `len(last) < cfg.message_repeats` → `<= 1`;
    `closing=is_message and …` in `guard._step` → any step (a tool's "Thank you!" is not a message)."""
    guard = LoopGuard(Config(), embedder=_intents("welcome"))
    assert _goodbyes(guard) == ["allow", "allow", "warn"]
    assert guard.state.last_related == (0, 1) and guard.state.last_kind == "conversation"
    lookup = ("get_order_details", {"order_id": "#W2890441"}, json.dumps({"status": "delivered"}))
    assert _goodbyes(LoopGuard(Config(), embedder=_intents("welcome")), between=lookup) == ["allow"] * 3
    assert LoopGuard(Config(), embedder=_intents("welcome")).record_message(GOODBYES[0]).action == "allow"
    echo = ("notify", {"text": "Thank you! Have a great day!"}, "Thank you! Have a great day!")
    assert _goodbyes(LoopGuard(Config(), embedder=_intents("welcome")), between=echo) == ["allow"] * 3


def test_goodbyes_need_as_many_repeats_as_any_ask():
    """`message_repeats` sets how many earlier closings make the loop, as for asks."""
    guard = LoopGuard(Config(message_repeats=3), embedder=_intents("welcome"))
    assert _goodbyes(guard) == ["allow"] * 3
    assert guard.record_message(GOODBYES[0], THANKS[0]).action == "warn"


# -- argument drift with a short answer (issue 7, family 3) -----------------------------------------
# A creeping max_depth whose answer is a short but detailed listing used to pass: the skeleton rule
# compared only results of short_result words or more. Mutation: drop the short-answer branch of
# `same_step` (the crawl then never warns).

PAGES = "Found 12 pages: /, /about, /blog, /contact, /pricing, /docs, /docs/a, /docs/b, /blog/1, /blog/2, /careers, /legal"


def _crawl(outputs):
    guard = LoopGuard(Config(), embedder=_intents("crawl"))
    return [guard.record("crawl", {"url": "https://x.com", "max_depth": depth}, out).action
            for depth, out in zip((2, 3, 4, 5), outputs)]


def test_a_creeping_depth_with_the_same_short_listing_is_a_repeat(monkeypatch):
    assert _crawl([PAGES] * 4) == ["allow", "allow", "warn", "stop"]
    # more found each time: progress, whatever crept
    growing = [f"Found {n} pages: " + ", ".join(f"/p{i}" for i in range(n)) for n in (3, 5, 8, 12)]
    assert _crawl(growing) == ["allow"] * 4
    # a bare acknowledgement for each depth says too little to call it the same answer
    assert _crawl(["ok: crawl queued"] * 4) == ["allow"] * 4
    monkeypatch.setattr(same_action, "same_detailed_short_result", lambda a, b, th=None: False)
    assert _crawl([PAGES] * 4) == ["allow"] * 4


# -- found by probing the loop families with hand-written scenarios ---------------------------------

def test_a_request_id_under_a_json_key_is_volatile():
    """`{"request_id": "req_8fA2kq"}`: the key's closing quote sits between the key and the value,
    and the keyed mask missed it, so three identical declined charges looked like three new
    answers. Mutation: drop the optional quote after the key in `_VOLATILE_KEYED`."""
    def declined(req):
        return json.dumps({"error": "card_declined", "request_id": req, "message": "Your card was declined."})
    assert features.normalize_result(declined("req_8fA2kq")) == features.normalize_result(declined("req_Zx91Lm"))
    guard = LoopGuard(Config(), embedder=_intents("charge"))
    actions = [guard.record("http_post", {"url": "https://api.x.com/v1/charge", "json": {"amount": 100}},
                            declined(req)).action for req in ("req_8fA2kq", "req_Zx91Lm", "req_Qp33Rt")]
    assert actions == ["allow", "allow", "warn"]


def test_one_announcement_sent_to_many_recipients_is_batch_work(monkeypatch):
    """The same wording to six recipients, each answered `{"status": "sent"}`: the answer only says
    the call ran (`ACK_WORDS`), so it cannot tell that two calls did the same thing. The mail's
    shared times made the calls' entities overlap by half, and six recipients were warned and then
    stopped. Mutation: "sent" not an acknowledgement word."""
    def announce():
        guard = LoopGuard(Config(), embedder=_intents("Maintenance"))
        return [guard.record("send_email", {"to": f"{name}@x.com", "subject": "Maintenance tonight",
                                            "body": "Hi, the service will be down from 22:00 to 23:00 UTC tonight."},
                             '{"status": "sent"}').action for name in ("ann", "bob", "cy", "dee", "eve", "fay")]
    assert announce() == ["allow"] * 6
    monkeypatch.setattr(features, "ACK_WORDS", features.ACK_WORDS - {"sent"})
    assert "warn" in announce()


def test_different_edits_of_one_file_answered_by_a_fixed_sentence_are_work(monkeypatch):
    """Five edits of one file, each a different change, each answered "The file /repo/a.py has
    been updated.": the answer says only that the edit ran ("the", "has", "been" carry no news), so
    the calls' likeness cannot make them repeats. They were warned and then stopped. The same edit
    again is still a repeat. (A tool whose arguments do not say it edits: `find` / `replace`, not
    an edit tool's `old_string` / `new_string`, which `features.is_edit` knows.) Mutation: no
    `FUNCTION_WORDS`."""
    def edits(changes):
        guard = LoopGuard(Config(), embedder=_intents("a.py"))
        return [guard.record("update_file", {"file": "/repo/a.py", "find": old, "replace": new},
                             "The file /repo/a.py has been updated.").action for old, new in changes]
    different = [(f"x{i} = 1", f"x{i} = 2") for i in range(5)]
    assert edits(different) == ["allow"] * 5
    assert "warn" in edits([("x0 = 1", "x0 = 2")] * 3)
    monkeypatch.setattr(features, "FUNCTION_WORDS", frozenset())
    assert "warn" in edits(different)


def test_a_build_after_each_written_file_checks_the_write(monkeypatch):
    """Write a file ("File written successfully to src/c0.ts."), build, write another, build: the
    build's unchanged "Build completed" checks each write. The answer's "to" kept the write from
    being known as one, and the third build was warned. (A tool whose arguments do not say it
    writes: `features.is_edit` knows `path` with `content`.) Mutation: no `FUNCTION_WORDS`."""
    def cycle():
        guard = LoopGuard(Config(), embedder=_intents("npm"))
        actions = []
        for i in range(3):
            guard.record("save_file", {"name": f"src/c{i}.ts", "text": f"export const c{i} = {i};"},
                         f"File written successfully to src/c{i}.ts.")
            actions.append(guard.record("Bash", {"command": "npm run build"},
                                        "> app@1.0.0 build\n> tsc -p .\n\nBuild completed in 4.2s").action)
        return actions
    assert cycle() == ["allow"] * 3
    monkeypatch.setattr(features, "FUNCTION_WORDS", frozenset())
    assert "warn" in cycle()


# -- one word swapped is another target; a pending word only in a brief status --------------------

def _django_run(module: str, tests: int, skipped: int, case: str) -> str:
    clones = "\n".join("Cloning test database for alias 'default'..." for _ in range(3))
    destroys = "\n".join("Destroying test database for alias 'default'..." for _ in range(4))
    skips = "\n".join(f"{case}.test_{i} ({module}.tests.{case}) skipped: Database doesn't support feature(s): "
                      f"supports_over_clause, allows_group_by_select_index" for i in range(skipped))
    return (f"Testing against Django installed in '/testbed/django' with up to 8 processes\n"
            f"System check identified no issues (0 silenced).\nCreating test database for alias 'default'...\n"
            f"{clones}\n{'.' * tests}\n{skips}\n{'-' * 70}\nRan {tests} tests in 0.{tests}s\n\nOK (skipped={skipped})\n{destroys}")


def test_test_runs_of_different_modules_are_different_work():
    """`runtests.py expressions_window`, `expressions`, `queries`: three test modules whose outputs
    share nearly every word (the runner's boilerplate) and contain one another. One word swapped in
    a call is the same action on another target, as batch work is (mini-swe-agent django-13028,
    13315 and 15022 were warned for it). Mutation: drop `same_action.swapped_target` from `same_step`."""
    guard = LoopGuard(Config(), embedder=_intents("runtests"))  # the embedding calls them one intent
    actions = [guard.record("bash", {"command": f"python3 tests/runtests.py {module}"},
                            _django_run(module, tests, skipped, case)).action
               for module, tests, skipped, case in (("expressions_window", 49, 3, "WindowFunctionTests"),
                                                    ("expressions", 164, 2, "FTimeDeltaTests"),
                                                    ("queries", 412, 2, "QuerySetSupportsPythonIdioms"),
                                                    ("aggregation", 97, 1, "AggregateTestCase"))]
    assert actions == ["allow"] * 4


def test_one_word_swapped_with_the_very_same_answer_is_a_repeat():
    """The limits of the rule above: a swapped word that brings back the very same content was the
    same target (a namespace spelled two ways). Mutation: refuse every swapped pair, whatever the
    results. And the same error for guessed directories stays a repeat (SWE-agent dubbo-9187, lost
    by the rule's first version, which refused swapped pairs before comparing their results)."""
    pods = "\n".join(f"web-{i}   1/1   Running   0   {i}d" for i in range(30))
    guard = LoopGuard(Config(), embedder=_intents("kubectl"))
    actions = [guard.record("bash", {"command": f"kubectl get pods -n {ns}"}, f"NAMESPACE {ns}\n{pods}").action
               for ns in ("prod", "production", "prd")]
    assert actions == ["allow", "allow", "warn"]
    guard = LoopGuard(Config(), embedder=_intents("search_dir"))
    actions = [guard.record("bash", {"command": f'search_dir "ExtensionLoader" {d}'}, f"Directory {d} not found").action
               for d in ("src", "dubbo", "main")]
    assert "warn" in actions


def test_a_pending_word_in_a_long_output_is_not_a_status():
    """"running tests with astropy version …" in a pytest header, "building dependency tree" in an
    apt log, "creating …" in docs: one word among hundreds is not the state of what is being
    polled, so the same run with the same output is a repeat at the usual count, not a poll given
    `poll_repeats` of patience (mini-swe-agent sphinx-9229 was caught at step 132 instead of 36).
    A brief status line still is one, and a reply never is (the customer's "a pending order").
    Mutation: read pending words in any text result, or in replies."""
    header = ("Internet access disabled\n============================= test session starts ==============================\n"
              "platform linux -- Python 3.9.20, pytest-7.4.0, pluggy-1.3.0\nRunning tests with astropy version 5.2.dev.\n"
              "Running tests in astropy/io/fits/tests/test_header.py.\n")
    failure = header + "\n".join(f"FAILED astropy/io/fits/tests/test_header.py::test_card_{i} - AssertionError: "
                                 f"expected {i} cards, got {i + 1}" for i in range(12))
    assert not _pending(failure) and _pending("Deployment status: building (3 of 7 steps)")
    guard = LoopGuard(Config())
    run = {"command": "python -m pytest astropy/io/fits/tests/test_header.py -x"}
    assert [guard.record("bash", run, failure).action for _ in range(3)] == ["allow", "allow", "warn"]
    guard = LoopGuard(Config())
    actions = []
    for _ in range(4):
        guard.record("bash", {"command": "sleep 30"}, "")  # a poll: time passes between the checks
        actions.append(guard.record("bash", {"command": "deploy status web"}, "Deployment status: building").action)
    assert actions == ["allow"] * 4
    guard = LoopGuard(Config())
    reply = guard._step("respond", {"content": "Could you tell me the order id?"},
                        "I don't have it, it's the pending order from last week.", False)
    assert reply.is_message and not reply.pending


def test_a_reworded_search_is_not_another_target():
    """"Python 3.12 release date", "launch date", "GA date": one word swapped in a search is a
    reworded query, and its results page differs a little each time (one result more, the query
    echoed), so it is judged as a paraphrase, not as another target. Mutation: let
    `swapped_target` take searches."""
    links = [f"{i}. Python 3.12: facts and figures | site{i}.org\nPython 3.12 was released on October 2, 2023 "
             f"after {i} release candidates; see the changelog {i}." for i in range(8)]

    extras = ["Reddit discussion of the schedule", "Mailing list announcement archive", "Stack Overflow answer, upvoted"]

    def page(query: str, extra: int) -> str:
        return f'Web search results for query: "{query}"\n' + "\n".join(links + [f"9. {extras[extra]}"])

    guard = LoopGuard(Config(), embedder=_intents("Python 3.12"))
    actions = [guard.record("WebSearch", {"query": q}, page(q, n)).action
               for n, q in enumerate(("Python 3.12 release date", "Python 3.12 launch date", "Python 3.12 GA date"))]
    assert actions == ["allow", "allow", "warn"]


# -- a page seen again with its elements numbered anew is the same page -------------------------

def _review_page(page: int, first_bid: int) -> str:
    """A product page's reviews, page 1 or 2, as BrowserGym's accessibility tree: every render
    numbers the elements anew (task_673 of browser batch 8: 2226, 2321, 2584, … for one link), and
    as on a real page most lines are widgets that repeat, so the ids are most of its distinct words."""
    title = "wheel drifts left" if page == 2 else "great wheel, solid pedals"
    widgets = ["StaticText 'Rating'", "StaticText 'Quality'", "button 'Helpful'", "button 'Report'", "separator ''"]
    lines = [f"StaticText 'Review {page}.{i}: {title}'" if j == 0 else widgets[j - 1]
             for i in range(12) for j in range(6)] + ["link 'Page 1'", "link 'Page 2'"]
    return ("URL: http://shop.test/racing-wheel-overdrive\nRootWebArea 'Racing Wheel Overdrive', focused\n"
            + "\n".join(f"\t[{first_bid + i}] {line}" for i, line in enumerate(lines)))


def test_a_page_seen_again_with_new_element_ids_is_the_same_page():
    """Review page 2, page 1, page 2, page 1 …: every click names a new element id and every
    page differs in every id, so nothing matched and 7 of 12 loops of browser batch 8 (blind) went
    unseen. Element ids at the head of a tree line are masked like a clock. Mutation: drop
    `features._ELEMENT_REF`."""
    guard = LoopGuard(Config())
    actions, bid = [], 2000
    for step in range(8):
        page = 2 if step % 2 == 0 else 1
        actions.append(guard.record("click", {"bid": str(bid + 73 if page == 2 else bid + 72)},
                                    _review_page(page, bid + 100)).action)
        bid += 100
    assert actions[:2] == ["allow", "allow"] and "warn" in actions[:5]


_SHOP_MENU = ("Home Account Wishlist Compare Cart Checkout Beauty Electronics Garden Kitchen Office Sports Toys "
              "Books Music Movies Grocery Health Pets Baby Outdoor Automotive Tools Jewelry Shoes Clothing").split()
_PRODUCTS = ("kettle lamp sofa rug desk chair mug vase clock fan shelf bench stool mirror towel pillow blanket "
             "curtain basket candle tray bowl plate spoon fork knife jar bottle box bag hat scarf glove sock "
             "boot shoe belt watch ring band cable charger mouse keyboard monitor speaker camera tripod lens "
             "drone router modem printer scanner tablet phone case stand dock hub drive card reader battery").split()


_SHOP_FOOTER = ("About us; Customer service; Privacy and cookie policy; Search terms; Advanced search; "
                "Contact us; Orders and returns; Newsletter subscription; Store locator; Gift cards; Careers; "
                "Press room; Affiliate program; Shipping rates; Payment options; Report all bugs").split("; ")


def _shop_page(url: str, title: str, lines: list[str], first_bid: int) -> str:
    """An accessibility tree as BrowserGym shows it: the shop's menu, then this page's lines, every
    element numbered from `first_bid` (numbered anew on every render)."""
    tree = [f"\t[{first_bid + i}] link '{name}'" for i, name in enumerate(_SHOP_MENU)]
    tree += [f"\t[{first_bid + 100 + i}] {line}" for i, line in enumerate(lines)]
    tree += [f"\t[{first_bid + 200 + i}] link '{name}'" for i, name in enumerate(_SHOP_FOOTER)]
    return f"URL: http://shop.test/{url}\nRootWebArea '{title}', focused\n" + "\n".join(tree)


def _order_list(first_bid: int) -> str:
    return _shop_page("sales/order/history/", "My Orders",
                      [f"link 'View Order {180 + i}' StaticText 'Placed {i + 1}/3/23'" for i in range(10)], first_bid)


def _order_page(n: int, first_bid: int, reorders: bool = False) -> str:
    """Order `n`'s page: ten products of its own, or (`reorders`) the same ten as order 180."""
    first = 0 if reorders else (n - 180) * 10
    return _shop_page(f"sales/order/view/order_id/{n}/", f"Order {n}",
                      [f"StaticText '{_PRODUCTS[first + i]}'" for i in range(10)], first_bid)


def _list_and_orders(orders: list[int], timeout: str = "", reorders: bool = False) -> list[str]:
    """Order → list → order → list …, each click answered by the page it opened (after `timeout`,
    BrowserGym's error line, when given: then every step is an error)."""
    guard, actions, bid = LoopGuard(Config()), [], 1000
    for n in orders:
        for bid_clicked, page in ((bid + 100 + n - 180, _order_page(n, bid + 1000, reorders)),
                                  (bid + 1000, _order_list(bid + 2000))):
            url_line, tree = page.split("\n", 1)
            output = f"{url_line}\n{timeout}\n{tree}" if timeout else page
            actions.append(guard.record("click", {"bid": str(bid_clicked)}, output, is_error=bool(timeout)).action)
        bid += 2000
    return actions


def test_a_list_and_its_items_one_after_another_is_traversal():
    """List → order A → list → order B → …: the list page comes back (its ids numbered anew), but
    each order page is new, so the agent moves on. Masking the ids must not make the returns to the
    list a loop."""
    assert _list_and_orders(list(range(180, 186))) == ["allow"] * 12


# -- an error over a whole new page is news ---------------------------------------------------------

def test_a_traversal_whose_every_click_times_out_is_still_traversal(monkeypatch):
    """BrowserGym answers "Timeout 500ms exceeded" on clicks that did open the next page, over that
    page. When every click of a list → order → list → order traversal is such an error, the order
    pages are still news (a URL no window step showed), so the returns to the list are not one
    failure again and again (browser runs task_323, task_333, task_528), even when the orders hold
    the same products and only their numbers differ. The same order re-opened under the error is
    not news: that is a loop. Mutations: an error is never news (`_is_novel` returns False for
    every error); the new-first-line branch dropped."""
    timeout = "TimeoutError: Locator.click: Timeout 500ms exceeded."
    assert _list_and_orders(list(range(180, 186)), timeout) == ["allow"] * 12
    assert _list_and_orders(list(range(180, 186)), timeout, reorders=True) == ["allow"] * 12
    assert "warn" in _list_and_orders([180] * 4, timeout)
    real = novelty.is_novel
    monkeypatch.setattr(novelty, "is_novel", lambda step, state, cfg: not step.is_error and real(step, state, cfg))
    assert "warn" in _list_and_orders(list(range(180, 186)), timeout)


def test_a_new_page_of_one_site_is_news_though_its_menus_are_old():
    """Two pages of one site share their menus: most words of the smaller page are in the larger
    one. Containment (one result inside the other) tells `head -n` from `cat` of one file, but for
    two whole pages it says "same site", not "nothing new" (browser dev run task_373: map searches
    whose pages share one big panel). Only brief results are compared by containment for novelty.
    Mutation: compare long results by containment again."""
    kinds = "home account wishlist cart beauty garden kitchen office sports toys books music movies grocery health pets " \
            "baby outdoor tools jewelry".split()
    menu = "\n".join(f"[{i}] link '{kind} {shelf}'" for i, (kind, shelf) in enumerate(
        (k, s) for k in kinds for s in ("deals", "new", "top", "gifts", "brands")))  # 100 entries, 25 words
    menu += "\n" + " ".join(f"category{i}" for i in range(80))  # the footer's category links
    listing = menu + "\n" + "\n".join(f"View Order {n}: {w}" for n, w in enumerate(_PRODUCTS[:40], 150))
    detail = menu + "\nOrder 166 items: reading lamp wool rug ceramic teapot; shipped Pittsburgh courier tracking signature"
    guard = LoopGuard(Config())
    guard.record("click", {"bid": "12"}, listing)
    guard.record("click", {"bid": "40"}, detail)
    assert guard.state.window[-1].novel
