"""Detection II: conversation loops, volatile results, argument drift, same facts in other words,
patient polling. Each signal has positives and near-miss negatives; the conversation cases use the
real bundled static model, and a fake embedder shows where only the embedding can decide."""

import json

import numpy as np
import pytest

from semloop import Config, LoopGuard, features
from semloop.scan import scan_trace
from semloop.state import SessionState, StepRecord
from semloop.traces import Step, Trace


def run(steps, config=None, embedder=None):
    trace = Trace("t", tuple(Step(*s) for s in steps))
    return scan_trace(trace, config or Config(), embedder)


def kinds(result):
    return {s.kind for v in result.events for s in v.signals}


def vector_embedder(table):
    """Fake embedder: each text gets the vector of the first key it contains (else a unique axis)."""
    keys = list(table)

    def embed(texts):
        rows = []
        for text in texts:
            hit = next((k for k in keys if k in text), None)
            vec = np.asarray(table[hit], dtype=np.float32) if hit else np.eye(8, dtype=np.float32)[7]
            rows.append(vec / np.linalg.norm(vec))
        return np.stack(rows)
    return embed


# -- conversation loops -------------------------------------------------------------------------

ASKS = [("respond", {"content": "To change your flight I need the reservation ID. Could you please provide it?"},
         "I don't have it with me, sorry."),
        ("respond", {"content": "Once you have the reservation ID, please provide it and I will change your flight."},
         "Let me check my email. Meanwhile I also want to add a bag."),
        ("respond", {"content": "I can add the bag too. Once you have the reservation ID, please provide it."},
         "Can't you look it up with my name?")]


def test_reworded_asks_with_differing_replies_are_a_conversation_loop():
    r = run(ASKS)
    assert r.first_flag == 2 and kinds(r) == {"conversation"}
    sig = r.events[0].signals[0]
    assert sig.related_steps == (0, 1) and sig.score >= Config().message_threshold


def test_a_conversation_that_asks_for_new_things_is_not_a_loop():
    steps = [("respond", {"content": "Could you please provide your user ID?"}, "It is mia_li_3668."),
             ("respond", {"content": "Could you tell me the origin and destination airports?"}, "JFK to SEA."),
             ("respond", {"content": "Which payment method would you like to use: credit card or gift card?"},
              "Credit card."),
             ("respond", {"content": "Please let me know how many checked bags you need."}, "Two bags.")]
    assert run(steps).first_flag is None


def test_tool_work_between_asks_ends_the_conversation_loop():
    lookup = ("get_user_details", {"user_id": "mia_li_3668"},
              '{"name": "Mia Li", "reservations": ["NO6JO3", "AIXC49"], "membership": "gold"}')
    steps = [ASKS[0], ASKS[1], lookup, ASKS[2]]
    assert run(steps).first_flag is None


def test_an_answer_with_a_new_identifier_is_progress():
    steps = [("respond", {"content": "Could you please provide your email address?"}, "I forgot it."),
             ("respond", {"content": "Please provide your email address so I can find your account."},
              "Try yara.silva@example.com"),
             ("respond", {"content": "Could you please provide the email address on the account?"},
              "Oh, maybe yara@example.org?")]
    assert run(steps).first_flag is None  # the 2nd ask got an answer: the 3rd is a new turn


def test_repeated_confirmation_requests_are_not_asks():
    steps = [("respond", {"content": f"Can you please confirm with a 'yes' that you want to exchange {what}?"}, reply)
             for what, reply in [("the lamp and the bottle", "Only the lamp."), ("just the lamp", "Wait, which lamp?"),
                                 ("the silver lamp", "Yes.")]]
    assert run(steps).first_flag is None
    assert features.message_asks(steps[0][1]["content"]) == ""


def test_only_the_embedding_decides_what_a_message_asks_for():
    same = vector_embedder({"alpha": [1, 0.1, 0, 0, 0, 0, 0, 0], "beta": [1, 0, 0.1, 0, 0, 0, 0, 0],
                            "gamma": [1, 0, 0, 0.1, 0, 0, 0, 0]})
    msgs = [("respond", {"content": f"Could you send me the {w} please?"}, f"reply {i}")
            for i, w in enumerate(["alpha", "beta", "gamma"])]
    assert run(msgs, embedder=same).first_flag == 2  # no shared content word, one intent
    apart = vector_embedder({"alpha": np.eye(8)[0], "beta": np.eye(8)[1], "gamma": np.eye(8)[2]})
    assert run(msgs, embedder=apart).first_flag is None  # same wording, different intents


def _hint_after_asks(**config) -> str:
    guard = LoopGuard(**config)
    verdicts = [guard.record_message(msg["content"], reply) for _, msg, reply in ASKS]
    assert [v.action for v in verdicts] == ["allow", "allow", "warn"]
    message = verdicts[-1].message
    assert message is not None
    return message


def test_a_repeated_message_gets_a_hint_about_messages():
    """The replies to a message change every time, so its hint says what a message loop is, not
    "the result did not change"; a user's own "warn" text still applies unless "warn_message" is
    given too, and a broken one falls back to the default."""
    message = _hint_after_asks()
    assert message.startswith("[semloop] This message repeats what message(s) 0, 1 already said")
    assert "did not change" not in message and "ending the conversation" in message
    assert "结束对话" in _hint_after_asks(language="zh")
    assert _hint_after_asks(messages={"warn": "Loop on {tool}."}) == "Loop on respond."
    assert _hint_after_asks(messages={"warn": "Loop on {tool}.", "warn_message": "Asked again ({steps})."}) \
        == "Asked again (0, 1)."
    assert _hint_after_asks(messages={"warn_message": "{nope}"}).startswith("[semloop] This message repeats")


def test_record_message_and_message_tool_names():
    guard = LoopGuard()
    for tool, step in zip(["respond", "mcp__chat__send_message", "Slack.ask_user"], ASKS, strict=True):
        v = guard.record(tool, step[1], step[2])
    assert v.action == "warn" and v.signals[0].kind == "conversation"
    assert "nothing new was looked up" in v.message

    guard = LoopGuard()
    for _, msg, reply in ASKS:
        v = guard.record_message(msg["content"], reply)
    assert v.signals and v.signals[0].kind == "conversation"

    not_messages = LoopGuard(message_tools=("notify",))  # respond is then an ordinary tool
    for step in ASKS:
        v = not_messages.record(*step)
    assert v.action == "allow"
    assert LoopGuard(message_tools="notify").config.message_tools == ("notify",)
    with pytest.raises(ValueError):
        Config(message_tools=("", "x"))
    assert Config.from_dict(Config(message_tools=("a", "B")).to_dict()).message_tools == ("a", "b")


def test_message_asks_leave_out_offers_and_courtesies():
    text = ("Unfortunately I cannot refund a basic economy ticket. If you have any other questions, please let "
            "me know! Would you like me to transfer you to a human agent?")
    assert features.message_asks(text) == ""
    assert features.message_asks("Thanks! Once you have the reservation ID, please send it.") == \
        "Once you have the reservation ID, please send it."
    # "once you have X" with no request is an offer: it closes an answer, it does not ask again
    assert features.message_asks("You can use one certificate per booking. Once you have your user ID and are "
                                 "ready to proceed, I can assist you in applying it.") == ""
    assert features.reply_answers("It's 19103.", "What is your zip code?")
    assert not features.reply_answers("I don't have it, sorry.", "What is your zip code?")
    assert not features.reply_answers("Yes, W123456 is right.", "Is your order W123456?")


# -- volatile details -------------------------------------------------------------------------

def test_identical_calls_whose_results_differ_only_in_volatile_details():
    steps = [("bash", {"command": "curl -s localhost:8080/health"},
              f"attempt {i} (pid {4000 + 17 * i}): request_id={i}f3a9c2 connection refused, retrying in {i}s ⠋")
             for i in range(1, 4)]
    r = run(steps)
    assert r.first_flag == 2 and "exact" in kinds(r)
    assert features.normalize_result(steps[0][2]) == features.normalize_result(steps[1][2])


def test_a_result_that_changes_in_a_real_value_is_news():
    steps = [("bash", {"command": "python -m pytest -q"}, f"{n} failed, {20 - n} passed in 1.{n}s")
             for n in (5, 3, 1)]
    assert run(steps).first_flag is None
    assert features.normalize_result("commit 3f2a9c1d") != features.normalize_result("commit 9b1e77aa")


# -- argument drift ----------------------------------------------------------------------------

TREE = "src\n  app.py\n  util.py\ntests\n  test_app.py\nREADME.md\nsetup.py\npyproject.toml\n" + "\n".join(
    f"docs/page{i}.md" for i in range(30))


def test_a_creeping_option_with_the_same_result_is_a_loop():
    steps = [("list_tree", {"path": ".", "max_depth": d}, TREE) for d in (2, 3, 4, 5)]
    r = run(steps, embedder=vector_embedder({"list_tree": np.eye(8)[0] + 0.0}))
    assert r.first_flag == 2


def test_edits_with_a_creeping_number_are_work_even_with_the_same_acknowledgement():
    """`case 1` -> `case 2` -> `case 3` in one file: the skeleton is the same, the answer is the
    same short "updated", but each edit changes the file (the bundled negative-test-fix-cycle)."""
    steps = [("Edit", {"file_path": "src/parser.py", "old_string": f"case {n}", "new_string": f"case {n + 1}"},
              "The file src/parser.py has been updated.") for n in range(5)]
    assert run(steps).first_flag is None


def test_a_lookup_reworded_past_the_call_threshold_with_the_same_detailed_answer_is_a_loop():
    """Tokyo, TYO, tokyo/metric, "Tokyo, Japan": the embeddings call these different (cosine ~0.3-0.8),
    the answer says they are one query: the same temperature, conditions, humidity and wind."""
    def weather(city, units):
        return json.dumps({"city": city, "temperature": 36, "units": "celsius", "conditions": "overcast",
                           "humidity": 61, "wind_kph": 53, "forecast": "rain later in the evening"}, indent=2)
    steps = [("get_weather", {"city": c, "units": u}, weather(c, u))
             for c, u in (("Tokyo", "celsius"), ("TYO", "celsius"), ("tokyo", "metric"), ("Tokyo, Japan", "metric"))]
    assert run(steps).first_flag == 2
    # the same detailed answer for different ids is not evidence of one query (batch updates)
    updated = [("update_user", {"user_id": n, "role": "viewer"},
                json.dumps({"user_id": n, "role": "viewer", "team": "analytics", "region": "eu-west",
                            "plan": "enterprise", "seats": 40, "status": "active", "updated": True}))
               for n in (72782, 56820, 22602, 75384)]
    assert run(updated).first_flag is None


def test_same_tool_over_different_ids_with_the_same_answer_is_batch_work():
    steps = [("update_ticket", {"ticket_id": f"T-{n}", "priority": "low"},
              f'{{"ticket_id": "T-{n}", "updated": true}}') for n in (79797, 50814, 50140, 41234)]
    assert run(steps).first_flag is None
    assert features.skeleton_signature("t", {"depth": 2}) == features.skeleton_signature("t", {"depth": 9})
    assert features.skeleton_signature("t", {"id": "T-1"}) != features.skeleton_signature("t", {"id": "T-2"})


# -- same facts, other words ---------------------------------------------------------------------

def test_reworded_commands_stating_the_same_version():
    steps = [("Bash", {"command": "pip show requests | head -2"}, "Name: requests\nVersion: 2.31.4"),
             ("Bash", {"command": "python -c 'import requests; print(requests.__version__)'"}, "2.31.4"),
             ("Bash", {"command": "pip list | grep -i requests"}, "requests             2.31.4")]
    r = run(steps)
    assert r.first_flag == 2 and "paraphrase" in kinds(r)


def test_reworded_commands_with_different_facts_are_not_repeats():
    steps = [("Bash", {"command": "pip show requests | head -2"}, "Name: requests\nVersion: 2.31.4"),
             ("Bash", {"command": "pip show urllib3 | head -2"}, "Name: urllib3\nVersion: 1.26.18"),
             ("Bash", {"command": "pip show certifi | head -2"}, "Name: certifi\nVersion: 2024.2.2")]
    assert run(steps).first_flag is None
    assert features.result_facts("commit 3f2a9c1d7e8b5a0f") == features.result_facts("3f2a9c1 fix")
    assert features.result_facts("http/1.1 200 ok") == frozenset()


# -- polling -------------------------------------------------------------------------------------

def test_polling_a_status_that_changes_after_a_while_is_not_a_loop():
    poll = ("bash", {"command": "gh run view 8465702132"})
    steps = [(*poll, f"ci · Triggered via push about {m} minutes ago STATUS: queued") for m in (1, 2, 3, 4)]
    steps.append((*poll, "ci · Triggered via push about 5 minutes ago STATUS: completed success"))
    assert run(steps).first_flag is None


def test_a_poll_stuck_for_long_is_flagged():
    poll = ("bash", {"command": "kubectl rollout status deploy/web"})
    wait = ("bash", {"command": "sleep 20"}, "")
    steps = [s for _ in range(6) for s in (wait, (*poll, "Waiting for deployment 'web' rollout to finish: 1 of 3"))]
    # waits at 0, 2, 4 ..., checks at 1, 3, 5 ...: the (poll_repeats + 1)-th wait is flagged
    assert run(steps).first_flag == 2 * Config().poll_repeats


# -- state stays plain ---------------------------------------------------------------------------

def test_new_step_fields_are_plain_values() -> None:
    guard = LoopGuard(embedding="hashing")
    guard.record("respond", {"content": "Could you share the order id?"}, "It's #W123456")
    step: StepRecord = guard.state.window[-1]
    assert step.is_message and step.asks and step.answered
    assert isinstance(step.facts, frozenset) and all(isinstance(f, str) for f in step.facts)
    assert isinstance(step.skeleton_sig, str) and isinstance(step.pending, bool)
    assert isinstance(guard.state.last_work, int)
    assert SessionState.new(4).last_work == -1


# -- conversation mode in run_agent (real anthropic client, scripted Messages API) ----------------

def test_run_agent_records_the_agents_messages_across_user_turns():
    pytest.importorskip("anthropic")
    pytest.importorskip("httpx2")
    from semloop.integrations.anthropic import run_agent
    from test_anthropic import MODEL, TOOLS, ScriptedModel, files

    guard = LoopGuard()
    history = [{"role": "user", "content": "Change my flight to tomorrow."}]
    replies = ["I don't have it.", "Can't you look it up by my name?", "I really don't have it."]
    outcomes = []
    for reply, (_, ask, _) in zip(replies, ASKS, strict=True):
        model = ScriptedModel([ask["content"]])  # the model ends its turn asking the user
        result = run_agent(model.client(), model=MODEL, messages=history, tools=TOOLS, dispatch=files({}),
                           guard=guard)
        outcomes.append(result)
        history = [*result.messages, {"role": "user", "content": reply}]
    assert [r.verdicts for r in outcomes[:2]] == [(), ()]
    last = outcomes[2].verdicts
    assert len(last) == 1 and last[0].action == "warn" and last[0].signals[0].kind == "conversation"
    assert last[0].signals[0].related_steps == (0, 1)


def test_the_same_call_failing_the_same_way_is_flagged_across_unrelated_steps():
    book = ("book_reservation", {"user_id": "ivan_7015", "payment": [{"id": "gift_card_1", "amount": 299}]},
            "Error: payment amount does not add up, total price is 375, but paid 299")
    steps = [book, ("think", {"thought": "Maybe the price changed."}, ""),
             ("calculate", {"expression": "375-299"}, "76.0"), book,
             ("calculate", {"expression": "299+1"}, "300.0"), book]
    r = run(steps)
    assert r.first_flag == 5 and "exact" in kinds(r)
    retry_ok = [book, ("calculate", {"expression": "375-299"}, "76.0"), book,
                ("book_reservation", {"user_id": "ivan_7015", "payment": [{"id": "gift_card_1", "amount": 375}]},
                 '{"reservation_id": "HATHAU", "status": "booked"}')]
    assert run(retry_ok).first_flag is None  # one retry, then a changed call that works


def test_a_thought_is_the_input_of_a_think_tool():
    assert features.action({"thought": "check the cache"}) == {"thought": "check the cache"}
    assert features.action({"command": "ls", "description": "list"}) == {"command": "ls"}
    a = features.normalized_signature("think", {"thought": "check the cache"})
    assert a != features.normalized_signature("think", {"thought": "ask the user"})
