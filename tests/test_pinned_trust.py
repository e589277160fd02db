"""Rules of the trust pass (issue 26): where seed-style exact matching fires, semloop fires too
unless the results changed in content that matters; polling patience only with evidence that time
passed. Each test names the mutation it catches (tests/test_pinned_rules.py style)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from semloop import Config, LoopGuard, features, volatile
from semloop.bench import runner, trust

ROOT = Path(__file__).resolve().parent.parent


def _actions(steps, config=None):
    guard = LoopGuard(config or Config(embedding="hashing"))
    return [guard.record(tool, args, out).action for tool, args, out in steps]


# -- volatile places learned from the stream -------------------------------------------------------
# Mutation: drop `volatile.learn` from `LoopGuard._apply` (each test below then stays "allow").

def test_a_counter_and_a_flipping_path_are_noise_once_they_change_at_every_repeat():
    """`durationMs=180` / `233` / `286` and a `cwd=` that flips: no fixed mask knows either. The
    third identical call is flagged, as exact matching flags it."""
    steps = [("bash", {"command": "npm test"}, f"Tests: 3 passed, 1 failed\ndurationMs={d} cwd=/repo/{p}")
             for d, p in ((180, "b"), (233, "a"), (286, "b"), (339, "a"))]
    assert _actions(steps)[:3] == ["allow", "allow", "warn"]


def test_a_relaunch_with_a_new_session_and_pid_each_time_is_the_same_result():
    steps = [("bash", {"command": "tail -f logs/app.log"},
              f"[session sess-{k + 3}, pid {4000 + 77 * k}] tail: logs/app.log: waiting for new lines") for k in range(3)]
    assert _actions(steps) == ["allow", "allow", "warn"]


def test_a_send_answered_with_new_ids_and_receipts_is_the_same_answer():
    steps = [("post_webhook", {"url": "https://hooks.example/ops", "text": "deploy done"},
              json.dumps({"ok": True, "messageId": f"m{k}x9", "runId": f"r-{31 * k}", "receipt": f"rc{7 * k}k"}))
             for k in range(3)]
    assert _actions(steps) == ["allow", "allow", "warn"]


def test_content_that_stays_then_changes_is_news():
    """`pending` → `pending` → `running` (with a duration that changes every time): the status
    place did not change before, so its change is news. And a status moving through new words at
    every repeat (`pending` → `processing` → `succeeded`) is never noise: a volatile value has a
    digit or flips back. Nor is a count against a whole (`ready 2/4`). Mutations: accept any
    change at the same places (drop the digit / flip test), or drop the progress-count test."""
    steps = [("get_job", {"id": "j1"}, f"job j1: {s}, took {d}ms-ish t={d}")
             for s, d in (("pending", 11), ("pending", 17), ("running", 23))]
    assert _actions(steps) == ["allow", "allow", "allow"]
    steps = [("get_refund_status", {"refund_id": "re_b99b"}, json.dumps({"refund_id": "re_b99b", "status": s}))
             for s in ("pending", "processing", "succeeded")]
    assert _actions(steps) == ["allow"] * 3
    steps = [("bash", {"command": "kubectl get pod web-1"}, f"web-1 status: Starting, ready {i}/4, restarts {i * 3}")
             for i in range(4)]
    assert _actions(steps) == ["allow"] * 4


def test_changed_places_names_each_place_by_what_precedes_it():
    tok = features.result_tokens
    a, b = tok("tests ok: 3 passed, durationms=180 cwd=/repo/a"), tok("tests ok: 3 passed, durationms=233 cwd=/repo/b")
    places = volatile.changed_places(a, b, seen=frozenset(tok("cwd=/repo/a")))
    assert places is not None and len(places) == 1  # side by side: one place
    assert volatile.changed_places(tok("5 failed, 15 passed"), tok("3 failed, 17 passed")) is None  # counts
    assert volatile.changed_places(a, a) == frozenset()
    assert volatile.changed_places(tok("status: pending"), tok("status: running")) is None  # new words
    long_a, long_b = tok(" ".join(f"w{i}" for i in range(30))), tok(" ".join(f"v{i}" for i in range(30)))
    assert volatile.changed_places(long_a, long_b) is None  # most of it changed: content
    assert features.result_tokens("x" * (features.KEYED_MASK_CHARS + 1)) == ()


# -- polling needs evidence that time passed -----------------------------------------------------
# Mutation: `poll_needed` returns `poll_repeats` for every pending result (the old rule).

def test_back_to_back_identical_pending_answers_are_not_polling():
    """The same order-status lookup four times in a row with the very same "pending": nothing
    waited between, so there is nothing to be patient about (exact matching flags it too)."""
    lookup = ("get_order_status", {"order_id": "#W123"}, json.dumps({"order_id": "#W123", "status": "pending"}))
    assert _actions([lookup] * 4) == ["allow", "allow", "warn", "stop"]


def test_a_wait_between_checks_or_a_moving_clock_earns_patience():
    check = ("http_get", {"url": "https://ci.example/builds/7"}, json.dumps({"id": 7, "status": "BUILDING"}))
    steps = [s for _ in range(4) for s in (("bash", {"command": "sleep 30"}, ""), check)]
    assert _actions(steps) == ["allow"] * 8
    clocked = [("gh_run_view", {"id": 8465}, f"STATUS: queued (checked 2026-12-03 12:0{m}:00)") for m in range(4)]
    assert _actions(clocked) == ["allow"] * 4


def test_growing_waits_earn_more_patience_and_a_stuck_poll_is_still_flagged():
    """wait 30 / BUILDING / wait 45 / BUILDING / wait 60 / … (a backoff) is patient for
    `backoff_poll_repeats` checks; waits that do not grow are flagged after `poll_repeats`.
    Mutation: drop the backoff branch of `poll_needed` (the fifth BUILDING is then flagged)."""
    check = ("http_get", {"url": "https://ci.example/builds/7"}, json.dumps({"id": 7, "status": "BUILDING"}))
    backoff = [s for w in (30, 45, 60, 90, 120, 180) for s in (("wait", {"seconds": w}, f"waited {w}s"), check)]
    assert _actions(backoff) == ["allow"] * 12
    steady = [s for _ in range(6) for s in (("wait", {"seconds": 30}, "waited 30s"), check)]
    assert "warn" in _actions(steady)


def test_wait_seconds_reads_wait_tools_and_sleep_commands():
    assert features.wait_seconds("wait", ["45"]) == 45.0
    assert features.wait_seconds("mcp__ci__wait_for", []) == 0.0
    assert features.wait_seconds("bash", ["make && sleep 2.5"]) == 2.5
    assert features.wait_seconds("bash", ["pytest -q"]) == -1.0
    assert features.wait_seconds("waitlist_add", ["7"]) == -1.0


def test_a_wait_check_alternation_is_not_a_cycle():
    """`sleep 30` / check → Building, again and again: waiting, not an A-B-A-B cycle (the
    checks are counted patiently instead). Mutation: drop the wait/pending test of `cycle`."""
    check = ("http_get", {"url": "https://ci.example/builds/7"}, json.dumps({"id": 7, "status": "BUILDING"}))
    steps = [s for _ in range(3) for s in (("bash", {"command": "sleep 30"}, ""), check)]
    guard = LoopGuard(Config(embedding="hashing"))
    kinds = [s.kind for tool, args, out in steps for s in guard.record(tool, args, out).signals]
    assert "cycle" not in kinds


# -- the invariant over every labeled trace in the repository -------------------------------------

_LABELED = sorted(str(p) for p in [ROOT / "benchmarks/data/real_dev.jsonl", ROOT / "benchmarks/data/real_tau_airline_dev.jsonl",
                                   ROOT / "semloop/examples.jsonl",
                                   *(ROOT / "benchmarks/data").glob("synth_*.jsonl")] if p.exists())


@pytest.mark.parametrize("path", _LABELED, ids=lambda p: Path(p).name)
def test_where_exact_matching_fires_on_unchanged_results_semloop_has_flagged(path):
    """Seed-style exact matching (three identical calls in a row) on results that are equal once
    normalized: semloop has flagged by that step, on every labeled trace the repository holds (the
    synthetic sets too, when generated). Mutation: `min_repeats` 3, or the old polling patience."""
    base = Config(embedding="hashing")
    datasets = _examples(path) if path.endswith("examples.jsonl") else runner.load_datasets([path])
    prepared = runner.prepare(datasets, base)
    embedder, _ = runner.load_backend("hashing")
    runner.embed_all(prepared, "hashing", embedder)
    sem = [runner.replay(p, base) for p in prepared]
    exact = [runner.replay(p, runner.config_for("exact", base)) for p in prepared]
    violations = trust.invariant_violations(prepared, sem, exact, base.exact_window)
    assert violations["unchanged"] == []
    fired = sum(trust.exact_fires(p, base.exact_window) is not None for p in prepared)
    assert fired or "tau_airline" in path or "examples" in path  # the check has cases to check


def _examples(path):
    from semloop.traces import load_traces

    traces = [t for t in load_traces(path) if isinstance(t.label, dict) and "loop" in t.label]
    return [runner.Dataset("examples", path, traces)] if traces else []


def test_the_invariant_check_finds_a_violation():
    """The check above can fail: with the repeats needed raised to 3, a three-call exact loop is
    flagged only at its fourth call."""
    from semloop.traces import Step, Trace

    step = Step("bash", {"command": "ls /nope"}, "ls: cannot access '/nope': No such file or directory")
    trace = Trace("t", (step,) * 3, {"loop": True, "onset": 1, "kind": "exact"})
    base = Config(embedding="hashing", min_repeats=3, error_repeats=3)
    prepared = runner.prepare([runner.Dataset("t", "t", [trace])], base)
    embedder, _ = runner.load_backend("hashing")
    runner.embed_all(prepared, "hashing", embedder)
    sem = [runner.replay(p, base) for p in prepared]
    exact = [runner.replay(p, runner.config_for("exact", base)) for p in prepared]
    assert trust.invariant_violations(prepared, sem, exact, 3) == {"loops": ["t"], "unchanged": ["t"]}


# -- the hard block needs a second view: the flag continues the loop already warned about ---------
# Mutation: `stop_allowed` always True (the old "third flag stops" rule): the first assertion fails.

def test_three_flags_about_three_different_calls_do_not_stop_the_run():
    """Warnings about three unrelated moments were each heeded: the agent moved on. The flag that
    continues a warned loop (its evidence shares a step with the previous flag's) stops."""
    calls = [("bash", {"command": "git status"}, "On branch main\nnothing to commit, working tree clean"),
             ("read_file", {"path": "README.md"}, "# Billing service\nRun make test before pushing."),
             ("http_get", {"url": "https://api.example/v1/health"}, '{"ok": true, "version": "4.2.1"}')]
    steps = [call for call in calls for _ in range(3)]
    steps.append(steps[-1])
    actions = _actions(steps)
    assert actions[2] == actions[5] == actions[8] == "warn" and "stop" not in actions[:9]
    assert actions[9] == "stop"
    assert _actions(steps, Config(embedding="hashing", stop_gate="rules"))[8] == "stop"


def test_the_first_flag_stops_when_no_warning_is_wanted():
    loop = ("bash", {"command": "cat /nope"}, "cat: /nope: No such file or directory")
    assert _actions([loop] * 3, Config(embedding="hashing", max_warnings=0)) == ["allow", "allow", "stop"]
    with pytest.raises(ValueError, match="stop_gate"):
        Config(stop_gate="sometimes")


# -- batch work over records is not a cycle -------------------------------------------------------
# Mutation: `different_ids` always False (the lookup/cancel alternation below is then a `cycle`).

def test_look_up_and_cancel_over_different_reservations_is_batch_work():
    """Look up A, cancel A, look up B, cancel B, …: the same two calls over other records (ids
    without digits, `HXDUBJ`, are ids too: they sit under a `reservation_id` key). A browser's
    element ids (`bid`) are not record ids: the page renumbers them."""
    record = {"user_id": "mia_li_3668", "origin": "JFK", "destination": "SEA", "flight_type": "round_trip",
              "cabin": "economy", "passengers": 2, "payment": "credit_card", "insurance": "no"}
    steps = []
    for rid in ("NO6JOQ", "AJVCTQ", "HXDUBJ", "PQRSTU"):
        steps.append(("get_reservation_details", {"reservation_id": rid},
                      json.dumps({"reservation_id": rid, **record, "status": "confirmed"})))
        steps.append(("cancel_reservation", {"reservation_id": rid},
                      json.dumps({"reservation_id": rid, **record, "status": "cancelled"})))
    assert _actions(steps, Config()) == ["allow"] * 8
    assert features.id_values({"reservation_id": "HXDUBJ", "bid": "12", "nested": {"order_ids": ["#W1"]}}) == \
        frozenset({"hxdubj", "#w1"})


# -- LoopGuard.resume and the one list of signal kinds --------------------------------------------

def test_resume_lifts_a_stop_and_keeps_the_loop_memory(tmp_path):
    """Mutation: `resume` forgets the window (the loop is then flagged only after two more calls)."""
    from semloop.verdict import SignalKind

    loop = ("bash", {"command": "cat /nope"}, "cat: /nope: No such file or directory")
    for guard in (LoopGuard(Config(embedding="hashing")),
                  LoopGuard(Config(embedding="hashing"), store=f"sqlite:///{tmp_path / 's.db'}", session="s1")):
        actions = [guard.record(*loop).action for _ in range(5)]
        assert actions[-1] == "stop" and guard.stopped
        assert guard.resume() is guard and not guard.stopped and guard.state.warnings == 0
        verdict = guard.record(*loop)
        assert verdict.action == "warn" and verdict.signals[0].kind == SignalKind.EXACT == "exact"
    assert [k.value for k in SignalKind][:7] == list(__import__("semloop").policy.KIND_ORDER)


# -- the very same call, results flipping between two ---------------------------------------------
# Mutation: drop `_flipping` from `repeated_call` (the toggle below is then never flagged).

def test_a_toggle_clicked_again_and_again_is_a_repeat_though_its_two_pages_differ():
    """Sort by price, click the same header again and again: the page flips between ascending and
    descending (WebArena task_226 on dev). No result is new to the run; exact matching flags the
    third click. Changed once and then the same (A, B, B) is news."""
    rows = [f"Amazon Basics item {i}: ${i * 7 + 3}.99" for i in range(40)]
    up, down = "\n".join(rows[:20]), "\n".join(rows[-20:][::-1])
    click = ("click", {"bid": "1392"})
    assert _actions([(*click, up), (*click, down), (*click, up)])[2] == "warn"
    assert _actions([(*click, up), (*click, down), (*click, down)])[2] == "allow"


# -- the second view: a logistic score over the flag's evidence gates both levels (semloop.gate) ---

def _bias_only(score: float) -> tuple[float, ...]:
    """Gate coefficients that give every flag the same score."""
    import math

    from semloop import gate

    return (math.log(score / (1 - score)),) + (0.0,) * (len(gate.FEATURES) - 1)


def test_growing_views_of_one_long_function_are_flagged_by_the_rules_and_hidden_by_the_gate():
    """`sed -n '1,60p'`, then 80, 100, 120 lines of one file: the rules read a number creeping over
    the same content (a paraphrase); the second view reads large results and no repeat in a row,
    and hides it. Mutation: `gate.score` ignoring the features (always 0.5): the views warn."""
    body = [f"    value_{i} = compute_{i}(table[{i}], options)  # step {i} of the transform" for i in range(120)]
    steps = [("bash", {"command": f"sed -n '1,{n}p' pkg/transform.py"}, "\n".join(body[:n])) for n in (60, 80, 100, 120)]
    assert "warn" in _actions(steps, Config(embedding="hashing", gate_coefs=()))
    assert _actions(steps) == ["allow"] * 4


def test_a_tight_loop_is_warned_and_stopped_through_the_gate():
    """The very same failing call again and again: the second view is sure of the second flag
    (`sure_score`), which continues the loop just warned about, so one warning is enough; with
    the early stop off, the stop waits for `max_warnings` warnings. Mutation: ignore `sure` in
    `policy.escalate` (the fourth call warns again)."""
    loop = ("bash", {"command": "cat /etc/app.conf"}, "cat: /etc/app.conf: Permission denied")
    assert _actions([loop] * 5) == ["allow", "allow", "warn", "stop", "stop"]
    assert _actions([loop] * 5, Config(sure_score=1.0)) == ["allow", "allow", "warn", "warn", "stop"]


def test_a_sure_flag_on_another_loop_does_not_stop_after_one_warning():
    """One warning, then a different loop the second view is just as sure of: that warning was about
    something else, so it was not ignored; the new loop gets its own warning first, whatever the
    stop gate. Mutation: drop `continues_loop` from the early stop in `LoopGuard._apply` (with
    `stop_gate="rules"` the new loop's first flag then stops)."""
    first = ("bash", {"command": "cat /etc/app.conf"}, "cat: /etc/app.conf: Permission denied")
    second = ("weather", {"city": "Tokyo"}, "Tokyo: 21C, clear skies, humidity 40%, wind 5 km/h, sunrise 06:12")
    for cfg in (Config(), Config(stop_gate="rules")):
        assert _actions([first] * 3 + [second] * 4, cfg) == ["allow", "allow", "warn", "allow", "allow", "warn", "stop"]


def test_what_exact_matching_flags_is_shown_whatever_the_score():
    """The floor: a flag on three identical calls in a row is shown even when the gate scores it
    low; a reworded repeat with the same low score is not. Mutation: drop `gate.exact_run`."""
    low = Config(embedding="hashing", gate_coefs=_bias_only(0.05))
    same = ("bash", {"command": "ls /srv/none"}, "ls: cannot access '/srv/none': No such file or directory")
    assert _actions([same] * 3, low) == ["allow", "allow", "warn"]
    reworded = [("bash", {"command": c}, "ls: cannot access '/srv/none': No such file or directory")
                for c in ("ls /srv/none", "ls -la /srv/none", "ls -l /srv/none/")]
    assert "warn" in _actions(reworded, Config(embedding="hashing", gate_coefs=()))
    assert _actions(reworded, low) == ["allow"] * 3


def test_a_flag_below_stop_score_warns_but_never_stops_and_check_does_not_stop_either():
    """Mutation: ignore `stop_score` in `LoopGuard._apply` (the fifth call stops), or in `_check`."""
    cfg = Config(embedding="hashing", gate_coefs=_bias_only(0.3))  # above warn_score 0.2, below stop_score 0.35
    loop = ("bash", {"command": "cat /etc/app.conf"}, "cat: /etc/app.conf: Permission denied")
    guard = LoopGuard(cfg)
    actions = [guard.record(*loop).action for _ in range(6)]
    assert actions == ["allow", "allow", "warn", "warn", "warn", "warn"] and not guard.stopped
    assert guard.check(loop[0], loop[1]).action == "allow"
    assert _actions([loop] * 5, cfg.replace(stop_score=0.25))[-1] == "stop"


def test_a_hidden_flag_counts_towards_the_stop_but_is_never_the_last_warning():
    """A run is stopped only after the user saw a warning. Mutation: let a hidden flag raise the
    warnings to `max_warnings` (then the first shown flag stops)."""
    from semloop import policy
    from semloop.state import SessionState
    from semloop.verdict import Signal

    cfg, flag = Config(), [Signal("paraphrase", 0.9, (0,))]
    state = SessionState.new(12)
    assert [policy.escalate(state, flag, False, cfg, shown=False) for _ in range(3)] == ["allow"] * 3
    assert state.warnings == cfg.max_warnings - 1
    assert policy.escalate(state, flag, False, cfg) == "warn"
    assert policy.escalate(state, flag, False, cfg) == "stop"


def test_gate_coefs_are_checked():
    from semloop import gate

    with pytest.raises(ValueError, match="gate_coefs"):
        Config(gate_coefs=(1.0, 2.0))
    with pytest.raises(ValueError, match="warn_score"):
        Config(warn_score=1.5)
    assert len(Config().gate_coefs) == len(gate.FEATURES)
    assert Config.from_dict(Config().to_dict()) == Config()


# -- a hub page walked: the same listing between new pages -----------------------------------------
# Mutations: drop the `novelty.led_on` test in `signals.update_clusters` (the walk is then a stale
# cluster) or in `repeated_call`'s very-same-failure rule (the walk is then an exact repeat).

_FILLER = " ".join(f"[{i}] link '{w} {v}'" for i, (w, v) in enumerate(
    (w, v) for w in ("account", "wishlist", "reviews", "newsletter", "billing", "shipping", "returns", "help",
                     "contact", "privacy", "orders", "coupons") for v in ("page", "settings", "list", "details",
                                                                        "history", "summary", "options", "export")))


_TIMEOUT = "TimeoutError: Locator.click: Timeout 500ms exceeded."  # the click navigated all the same


def _list_page(orders):
    rows = "\n".join(f"[{1300 + 11 * k}] link 'View Order' order {o} placed 2023" for k, o in enumerate(orders))
    return f"URL: http://shop.test/sales/order/history/\n{_TIMEOUT}\nRootWebArea 'My Orders'\n{rows}\n{_FILLER}"


def _order_page(order):
    return (f"URL: http://shop.test/sales/order/view/order_id/{order}/\n{_TIMEOUT}\nRootWebArea 'Order # {order}'\n"
            f"items of order {order}: {' '.join(f'sku{order}{i}' for i in range(12))}\n{_FILLER}")


def _error_actions(steps):
    guard = LoopGuard(Config(embedding="hashing"))
    return [guard.record(tool, args, out, True).action for tool, args, out in steps]


def test_a_listing_walked_item_by_item_is_not_a_loop():
    """List → order 197 → list → order 196 → … (each click timing out over the page it opened, as
    a browser agent's clicks do): the list comes back unchanged each time, but each visit led to a
    new page through an id the list showed (`novelty.led_on`)."""
    orders = [197, 196, 195, 194, 193, 192]
    steps = [("click", {"bid": "1466"}, _list_page(orders))]
    for k, o in enumerate(orders):
        steps.append(("click", {"bid": str(1300 + 11 * k)}, _order_page(o)))
        steps.append(("click", {"bid": "1466"}, _list_page(orders)))
    assert _error_actions(steps) == ["allow"] * len(steps)


def test_a_page_revisited_between_pages_it_did_not_lead_to_is_still_a_loop():
    """The same cart page between product pages reached by ids the cart never showed: nothing on
    the page was followed, so coming back to it again and again is the loop."""
    cart = f"URL: http://shop.test/cart\n{_TIMEOUT}\nRootWebArea 'Your cart'\n[2041] Pioneer Water Bottle x1\n{_FILLER}"
    steps = [("navigate", {"url": "http://shop.test/cart"}, cart)]
    for k in range(6):
        product = 4411 + 7 * k
        steps.append(("navigate", {"url": f"http://shop.test/products/{product}"}, _order_page(product)))
        steps.append(("navigate", {"url": "http://shop.test/cart"}, cart))
    assert "warn" in _error_actions(steps)


def test_result_refs_keep_three_to_nine_digit_numbers_as_hashes():
    refs = features.result_refs("[1390] link order 000000197 total 29.99 card 4111111111111111 id 42")
    assert features.ref_hash("1390") in refs and features.ref_hash("000000197") in refs
    assert features.ref_hash("4111111111111111") not in refs and features.ref_hash("42") not in refs
    assert all(isinstance(r, int) for r in refs)


# -- the benchmarks replay what a live guard decides ------------------------------------------------
# Mutation: leave a feature out of `runner.prepare`'s records (it builds them with an `exact`
# feature guard, to skip the embedding): e.g. compute `result_refs` for the semantic detector only.

def test_the_benchmark_replay_decides_what_a_live_guard_decides(tmp_path):
    orders = [197, 196, 195, 194, 193, 192]
    walk = [("click", {"bid": "1466"}, _list_page(orders))]
    for k, o in enumerate(orders):
        walk += [("click", {"bid": str(1300 + 11 * k)}, _order_page(o)), ("click", {"bid": "1466"}, _list_page(orders))]
    extra = tmp_path / "walk.jsonl"
    extra.write_text(json.dumps({"id": "walk", "label": {"loop": False}, "steps": [
        {"tool": t, "input": a, "output": o, "is_error": True} for t, a, o in walk]}) + "\n")
    paths = [str(ROOT / "semloop/examples.jsonl"), str(ROOT / "benchmarks/data/split/whowhen.dev.jsonl"),
             str(ROOT / "benchmarks/data/split/tau_airline.dev.jsonl"), str(extra)]
    base = Config(embedding="hashing")
    prepared = runner.prepare(runner.load_datasets(paths), base)
    embedder, _ = runner.load_backend("hashing")
    runner.embed_all(prepared, "hashing", embedder)
    for p in prepared:
        live = runner.first_verdicts(LoopGuard(base.replace(fail_open=False)), p.trace)
        replayed = runner.replay(p, base)
        assert (replayed.first_flag, replayed.first_stop) == live, p.trace.id


def test_a_status_polled_until_it_converges_is_not_flagged():
    """A release status fetched again and again, each stage seen twice before the next: the very
    same call whose answer stayed and then changed moved on, so the cluster's stale count starts
    again at each new stage (`signals.update_clusters`). Mutation: drop that restart (the sixth
    fetch is then warned)."""
    steps = []
    for n, stage in enumerate(["Queued", "Queued", "Building", "Building", "Testing", "Testing", "Live", "Live"]):
        seconds = 37 * (n + 1)
        steps.append(("WebFetch", {"url": "https://deploy.example.com/releases/4471", "prompt": "What is the release status?"},
                      f"Release 4471 | Status: {stage} | Last update: 2024-05-18T04:{seconds // 60:02d}:{seconds % 60:02d}Z\n\n"
                      "The release pipeline reports its current stage above."))
    assert _actions(steps) == ["allow"] * 8


def test_a_flag_on_the_cluster_count_alone_is_never_sure_enough_for_the_early_stop():
    """`policy.sure_of`: the early stop needs direct evidence (a repeat, a cycle, the same error)
    on the loop just warned about, not the session-wide cluster count alone. Mutation: drop the
    direct-evidence condition."""
    from semloop import policy
    from semloop.state import SessionState
    from semloop.verdict import Signal
    state = SessionState.new(12)
    state.flagged_sigs = {"sig": 2}
    state.last_related = (1, 2)
    assert policy.sure_of(state, [Signal("exact", 1.0, (1, 2))], "sig")
    assert not policy.sure_of(state, [Signal("cluster", 0.9, (1, 2))], "sig")
    assert policy.sure_of(state, [Signal("cluster", 0.9, (1, 2)), Signal("paraphrase", 0.9, (2,))], "sig")


# -- a poll that moves on, an edit that says nothing, an overlay over every click ---------------------

def _tracking(status, minute):
    return (f"URL: https://shop.example/orders/622689/tracking\nTitle: Track order\n\n# Order #622689\n"
            f"Status: {status}\nLast update: 2024-04-05T23:{minute:02d}:00Z")


def test_a_status_polled_to_a_terminal_failure_is_not_a_repeat_of_its_pending_answers():
    """pending, processing, failed, failed: the two answers in progress did nothing, so they are
    not the success a failure repeats (`signals._succeeded_before`); a third "failed" is the
    repeat. Mutation: count pending successes in `_succeeded_before` (the fourth call then warns)."""
    def status(s, t):
        return ("get_refund_status", {"refund_id": "re_896e"},
                json.dumps({"refund_id": "re_896e", "status": s, "updated_at": f"2024-01-30T17:5{t}:00Z"}))
    moved = [status("pending", 1), status("processing", 2), status("failed", 3), status("failed", 4)]
    assert _actions(moved) == ["allow"] * 4
    assert _actions(moved + [status("failed", 5)])[-1] == "warn"


def test_a_short_page_whose_status_changed_does_not_state_the_same_facts():
    """A tracking page opened, then reloaded: "Label created", then "In transit". Its facts (the
    order number, the URL) are the same; its status word is the news (`same_action.same_facts`
    leaves short results of one form to their words). The same status again and again is still a
    repeat. Mutation: drop the same-form test in `same_facts` (the third call then warns)."""
    page = "https://shop.example/orders/622689/tracking"
    steps = [("browser", {"action": "navigate", "url": page}, _tracking("Label created", 0)),
             ("browser", {"action": "reload"}, _tracking("In transit", 1)),
             ("browser", {"action": "reload"}, _tracking("In transit", 2))]
    assert _actions(steps) == ["allow"] * 3
    assert _actions(steps + [("browser", {"action": "reload"}, _tracking("In transit", 3))])[-1] == "warn"


def test_each_stage_of_a_status_seen_twice_is_a_poll_not_a_stale_cluster():
    """Pending, Pending, ContainerCreating, ContainerCreating, Running, Running: the very same call
    whose result stayed and then changed moved on, and its cluster's stale count starts again
    (`signals.update_clusters`). A status that stops moving is still flagged. Mutation: drop the
    restart (the sixth call then warns as a stale cluster)."""
    def pods(state):
        return ("bash", {"command": "kubectl get pods -n ingest -l app=cobaltq"},
                f"NAME                      READY   STATUS    RESTARTS   AGE\ncobaltq-api-56c5d55b1-a43f1   0/1   {state}   0   12s")
    staged = [pods(s) for s in ("Pending", "Pending", "ContainerCreating", "ContainerCreating", "Running", "Running")]
    assert _actions(staged) == ["allow"] * 6
    assert "warn" in _actions(staged + [pods("Running")] * 2)


def test_a_silent_in_place_edit_is_a_write_and_the_rerun_checks_it():
    """`sed -i` answers nothing (Claude Code's Bash gives an empty stdout): the call says it wrote
    (`features.is_edit`), so the test run after it checks the edit, and fewer failures each round
    is progress, not the same failure again (the runs share an error class, "timeout", from the
    first test's name). Mutation: drop `_SHELL_EDIT` from `is_edit` (the third run then warns)."""
    tests = ("schedule_coupon_timeout", "compute_invoice", "apply_request", "build_webhook", "merge_ledger", "flush_cache")
    def run(failed, passed):
        sections = "".join(f"____ test_{name} ____\n    def test_{name}():\n>       assert {name}(record) == {i + 80}\n"
                           f"E       AssertionError: assert {i + 7} == {i + 80}\ntests/test_templates.py:{120 + i}\n"
                           for i, name in enumerate(tests[:failed]))
        return ("bash", {"command": "python -m pytest -q tests/test_templates.py"},
                f"{'F' * failed}{'.' * passed}  [100%]\n==== FAILURES ====\n{sections}{failed} failed, {passed} passed")
    guard = LoopGuard(Config(embedding="hashing"))
    actions = []
    for k, (failed, passed) in enumerate(((6, 0), (4, 2), (2, 4), (1, 5))):
        actions.append(guard.record(*run(failed, passed), is_error=True).action)  # exit code 1
        actions.append(guard.record("bash", {"command": f"sed -i 's|old_{k}|new_{k}|' src/templates.py"}, "").action)
    assert actions == ["allow"] * 8


def test_edit_tools_patches_and_in_place_shell_edits_are_edits():
    edits = [
        {"file_path": "/repo/a.py", "old_string": "x = 1", "new_string": "x = 2"},  # Claude Code Edit, Gemini replace
        {"file_path": "/repo/a.py", "edits": [{"old_string": "a", "new_string": "b"}]},  # MultiEdit
        {"file_path": "/repo/new.py", "content": "print(1)\n"},  # Write, write_file
        {"path": "/repo/a.py", "old_str": "a", "new_str": "b"},  # Copilot CLI edit
        {"command": "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch"},  # Codex apply_patch
        {"command": "sed -i 's/a/b/' src/a.py"}, {"command": "cd /repo && sed -E -i.bak 's/a/b/' a.py"},
        {"command": "perl -pi -e 's/a/b/' a.py"},
    ]
    for tool_input in edits:
        assert features.is_edit(tool_input, features.call_values(tool_input)), tool_input
    reads = [{"file_path": "/repo/a.py"}, {"content": "Could you share the order id?"},
             {"command": "sed -n '1,5p' a.py"}, {"command": "grep -i error log.txt"}, {"command": "python sed_i.py"}]
    for tool_input in reads:
        assert not features.is_edit(tool_input, features.call_values(tool_input)), tool_input


def test_an_overlay_that_intercepts_every_click_is_the_same_error():
    """Three different clicks, each refused because a cookie banner receives the click: one
    reason (`intercepted`), whatever the coordinates. Mutation: drop the class (the generic
    "error" class then needs equal results, and the coordinates differ)."""
    steps = [("click", {"selector": s}, f"Error: Element is not clickable at point ({x}, {y}). Other element would "
              "receive the click: <div class=\"cookie-consent-overlay\" role=\"dialog\">…</div>")
             for s, x, y in (("footer a.returns", 276, 621), ("#add-to-cart", 558, 354), ("#newsletter-close", 156, 366))]
    guard = LoopGuard(Config(embedding="hashing"))
    assert [guard.record(tool, args, out, is_error=True).action for tool, args, out in steps] == ["allow", "allow", "warn"]
    assert features.error_class("Error: <div class=\"overlay\"> intercepts pointer events", True) == "intercepted"
    assert features.error_class("ElementClickInterceptedException: element click intercepted", True) == "intercepted"


def test_result_refs_are_the_first_numbers_in_page_order():
    """Past `limit` numbers the refs are the first ones on the page, whatever the process's hash
    seed (a set's order is not: replays differed from run to run). Mutation: keep them in a set."""
    page = " ".join(f"[{1000 + 7 * i}] link" for i in range(600))
    assert features.result_refs(page, limit=3) == {features.ref_hash(str(1000 + 7 * i)) for i in range(3)}


# -- an edit's text is the change ------------------------------------------------------------------

def _claude_edit(path: str, old: str, new: str) -> tuple[str, dict, str]:
    """Claude Code's Edit as the hook sees it: the arguments, and the answer its tool_response
    renders to (`claude_code.normalize_response`: the file, both strings, the patch around them)."""
    body = 'MODE = "fast"\nUNIT = "cm"\nROUNDING = "floor"'
    answer = (f"filePath: {path}\noldString: {old}\nnewString: {new}\noriginalFile: {body}\n"
              f"structuredPatch: oldStart: 1 oldLines: 3 newStart: 1 newLines: 3 lines: -{old} +{new}\n"
              "userModified: false\nreplaceAll: false")
    return "Edit", {"file_path": path, "old_string": old, "new_string": new}, answer


def test_edits_of_different_lines_of_one_file_are_two_changes_not_one_made_twice():
    """Edit one line, the check fails; edit another line of the same file, it fails the same way:
    two tries (tests/test_edit_rerun.py), and neither edit repeats the other, however alike their
    answers read (same file, same patch around them). The third round with nothing moved is the
    loop, on the check. Mutation: `same_action.different_edits` always False (the pair of
    edits then matches, and the second check warns as a cycle)."""
    failing = ("Bash", {"command": "python check.py"}, "Exit code 1\ntotal is 7, expected 42")
    rounds = [('MODE = "fast"', 'MODE = "exact"'), ('UNIT = "cm"', 'UNIT = "mm"'), ('ROUNDING = "floor"', 'ROUNDING = "half"')]
    steps = []
    for old, new in rounds:
        steps += [_claude_edit("/repo/settings.py", old, new), failing]
    assert _actions(steps) == ["allow"] * 5 + ["warn"]


def test_a_short_failure_rerun_after_every_edit_is_a_loop_but_a_status_naming_the_edited_file_is_not():
    """Codex hands a hook a command's output without its exit code: `total is 7, expected 42`, five
    words, fewer than `tiny_result`. They are not words the agent wrote (its patches changed
    settings.py), so the output says something of its own, and the third run with nothing moved
    is the loop. `git status --short` printing ` M src/app.py` after each edit of src/app.py
    restates the edits: verification, as an empty output is. Mutation: `says_its_own` requiring
    `tiny_result` words again (the short failure is then never evidence)."""
    def patch(old: str, new: str):
        return ("apply_patch", {"command": f"*** Begin Patch\n*** Update File: settings.py\n@@\n-{old}\n+{new}\n*** End Patch"},
                "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM settings.py")
    rounds = [('MODE = "fast"', 'MODE = "exact"'), ('UNIT = "cm"', 'UNIT = "mm"'), ('ROUNDING = "floor"', 'ROUNDING = "half"')]
    check = ("Bash", {"command": "python check.py"}, "total is 7, expected 42")
    assert _actions([step for old, new in rounds for step in (patch(old, new), check)]) == ["allow"] * 5 + ["warn"]
    status = ("Bash", {"command": "git status --short"}, " M src/app.py")
    edits = [("Edit", {"file_path": "/repo/src/app.py", "old_string": f"v{i}", "new_string": f"v{i + 1}"},
              "The file /repo/src/app.py has been updated.") for i in range(5)]
    assert _actions([step for edit in edits for step in (edit, status)]) == ["allow"] * 10
    assert _actions([step for edit in edits for step in (edit, ("Bash", {"command": "python -c 'import app'"}, ""))]) == ["allow"] * 10


def test_a_nonzero_exit_code_is_no_pass_whatever_else_the_output_says():
    """Copilot CLI ends a command's output with `<shellId: N completed with exit code 1>`:
    "completed" reads as a success, the exit code says the check failed. Read as a pass, the
    rerun after every edit would be verification and the loop never flagged. Mutation: drop the
    exit code from `features._FAILURE`."""
    def passed(output: str) -> bool:
        return features.reports_success(features.normalize_result(output))
    assert not passed("total is 7, expected 42\n<shellId: 0 completed with exit code 1>")
    assert passed("Build finished\n<shellId: 1 completed with exit code 0>")
    assert passed("Ran 4 tests in 0.01s\n\nOK")


def test_two_different_edits_that_leave_the_very_same_file_are_one_action():
    """SWE-agent answers an edit with the whole file as it now is: a second, different edit of the
    block that leaves the very same file changed nothing. An empty answer (`sed -i`) cannot say
    so: two silent edits with other text are two. Mutation: drop the `result_hash` clause of
    `same_action.different_edits` (every pair of different edits is then two changes)."""
    from semloop import same_action

    view = "[File: /repo/merge.py (58 lines total)]\n" + "\n".join(f"{n}:    value_{n} = merge(existing_{n}, incoming)" for n in range(1, 40))
    guard = LoopGuard(Config(embedding="hashing"))
    a = guard._step("bash", {"command": "edit 18:26\ndef merge(existing, incoming):\n    return existing\nend_of_edit"}, view, False)
    b = guard._step("bash", {"command": "edit 18:34\ndef merge(existing, incoming):\n  return existing\nend_of_edit"}, view, False)
    assert a.edits and b.edits and same_action.same_step(b, a, guard.config) is not None
    quiet_a = guard._step("bash", {"command": "sed -i '516s/^    hit/        hit/' core.py"}, "", False)
    quiet_b = guard._step("bash", {"command": "sed -i '516s/^        hit/    hit/' core.py"}, "", False)
    assert same_action.same_step(quiet_b, quiet_a, guard.config) is None

