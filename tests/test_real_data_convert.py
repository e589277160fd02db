"""Converters for the real-run label sets (benchmarks/convert/): each source format becomes the
semloop trace format, labels join by id, and a label whose onset is outside its trace is refused.

The fixtures are tiny hand-written runs in each source's real shape (tau-bench v1 results, tau2
simulations, tau2 numbered transcripts, mini-swe-agent and SWE-agent trajectories, BrowserGym step
folders); the real files are not in the repository."""

import importlib.util
import json
from pathlib import Path

import pytest

from semloop.traces import load_traces

ROOT = Path(__file__).resolve().parents[1]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "convert" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tau = _load("tau_conversations")
mini = _load("mini_swe_agent")
swe = _load("swe_agent")
browsergym = _load("browsergym")


def _call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def test_tau1_messages_become_respond_and_tool_steps():
    traj = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "I want to return something."},
        {"role": "assistant", "content": "Could you give me your email?", "tool_calls": None},
        {"role": "user", "content": "a@b.c"},
        {"role": "assistant", "content": "Looking you up.",
         "tool_calls": [_call("c1", "find_user_id_by_email", {"email": "a@b.c"})]},
        {"role": "tool", "tool_call_id": "c1", "name": "find_user_id_by_email", "content": "Error: user not found"},
        {"role": "assistant", "content": "I could not find you.", "tool_calls": None},
    ]
    steps = tau.tau1_steps(traj)
    assert [s["tool"] for s in steps] == ["respond", "find_user_id_by_email", "respond"]
    assert steps[0] == {"tool": "respond", "input": {"content": "Could you give me your email?"}, "output": "a@b.c"}
    assert steps[1]["input"] == {"email": "a@b.c"} and steps[1]["is_error"] is True
    assert steps[2]["output"] == ""  # the conversation ended there


def test_tau1_messages_leave_the_models_reasoning_out():
    traj = [
        {"role": "user", "content": "Hi."},
        {"role": "assistant",
         "content": "<think>\nThe user greets me; ask for the email.\n</think>\n\nCould you give me your email?"},
        {"role": "user", "content": "a@b.c"},
        {"role": "assistant", "content": "<think>only reasoning, nothing said</think>"},
        {"role": "assistant", "content": "<think>cut off before the end"},
    ]
    steps = tau.tau1_steps(traj)
    assert steps == [{"tool": "respond", "input": {"content": "Could you give me your email?"}, "output": "a@b.c"}]


def test_tau2_skips_greeting_and_the_users_own_device_calls():
    messages = [
        {"role": "assistant", "content": "Hi! How can I help you today?"},
        {"role": "user", "content": "My data is slow."},
        {"role": "assistant", "content": "Please check your status bar."},
        {"role": "user", "content": None,
         "tool_calls": [{"id": "u1", "name": "check_status_bar", "arguments": {}, "requestor": "user"}]},
        {"role": "tool", "id": "u1", "content": "Airplane Mode", "requestor": "user", "error": False},
        {"role": "user", "content": "I see an airplane icon."},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "a1", "name": "get_line", "arguments": {"id": "L1"}, "requestor": "assistant"}]},
        {"role": "tool", "id": "a1", "content": "not found", "requestor": "assistant", "error": True},
    ]
    steps = tau.tau2_steps(messages)
    assert steps == [
        {"tool": "respond", "input": {"content": "Please check your status bar."}, "output": "I see an airplane icon."},
        {"tool": "get_line", "input": {"id": "L1"}, "output": "not found", "is_error": True},
    ]


def test_numbered_transcript_keeps_lists_inside_messages_and_pairs_consecutive_calls():
    text = (
        "Domain: retail\n\nConversation transcript:\n"
        "1. Assistant: Hi! How can I help you today?\n"
        "2. User: Which orders do I have?\n"
        "3. Assistant: Two things first:\n1. your email\n2. your zip code\n"
        "4. User: a@b.c, 10001\n"
        "5. Assistant TOOL CALL -> get_order_details {'order_id': '#W1'}\n"
        "6. Assistant TOOL CALL -> get_order_details {'order_id': '#W2'}\n"
        "7. Tool call_a: {\"order_id\": \"#W1\"}\n"
        "8. Tool call_b: Error: order not found\n"
        "9. Assistant: Here they are.\n"
        "10. User: Thanks ###STOP###\n"
        "\nJudging instructions:\n- be brief\n"
    )
    steps = tau.transcript_steps(text)
    assert steps[0] == {"tool": "respond", "input": {"content": "Two things first:\n1. your email\n2. your zip code"},
                        "output": "a@b.c, 10001"}
    assert [(s["input"], s["output"]) for s in steps[1:3]] == [
        ({"order_id": "#W1"}, '{"order_id": "#W1"}'), ({"order_id": "#W2"}, "Error: order not found")]
    assert steps[2]["is_error"] is True and "is_error" not in steps[1]
    assert steps[3]["output"] == "Thanks ###STOP###"


def test_mini_swe_agent_turns_including_rejected_ones():
    messages = [
        {"role": "system", "content": "..."},
        {"role": "user", "content": "<pr_description>fix it</pr_description>"},
        {"role": "assistant", "content": "THOUGHT: look\n\n```bash\nls\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>"},
        {"role": "assistant", "content": "THOUGHT: two at once\n\n```bash\necho 1\n```\n\n```bash\necho 2\n```"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},
        {"role": "assistant", "content": "THOUGHT: run\n\n```bash\npython a.py\n```"},
        {"role": "user", "content": "<returncode>1</returncode>\n<output>\nTraceback\n</output>"},
    ]
    steps = mini.traj_steps(messages)
    assert [s["input"]["command"] for s in steps] == ["ls", "echo 1\necho 2", "python a.py"]
    assert [bool(s.get("is_error")) for s in steps] == [False, True, True]
    assert steps[1]["output"].startswith("Please always provide EXACTLY ONE action")


def test_swe_agent_actions_become_bash_steps_named_by_model_and_instance(tmp_path):
    traj = {"environment": "swe_main", "history": [{"role": "system", "content": "..."}],
            "info": {"exit_status": "submitted"},
            "trajectory": [
                {"action": "open src/A.java\n", "observation": "[File: /repo/src/A.java (2 lines total)]\n1:class A {}",
                 "response": "...", "state": "{}", "thought": "look"},
                {"action": "javac A.java\n", "observation": "/bin/bash: line 1: javac: command not found",
                 "response": "...", "state": "{}", "thought": "compile"},
                {"action": "submit\n", "observation": None, "response": "...", "state": "{}", "thought": "done"},
            ]}
    run_dir = tmp_path / "trajs_root" / "20240825_SWE-agent_gpt-4o-mini" / "trajs"
    run_dir.mkdir(parents=True)
    (run_dir / "org__repo-12.traj").write_text(json.dumps(traj))
    (tmp_path / "labels.jsonl").write_text(json.dumps(
        {"id": "java/swe-agent/gpt-4o-mini/org__repo-12", "label": {"loop": False, "onset": None, "kind": None},
         "confidence": "high", "note": "three different steps", "split": "dev"}) + "\n")
    assert swe.main(["--trajs", str(tmp_path / "trajs_root"), "--name", "java/swe-agent", "--labels",
                     str(tmp_path / "labels.jsonl"), "--out", str(tmp_path / "out")]) == 0
    (trace,) = load_traces(tmp_path / "out" / "java_swe-agent_dev.jsonl")
    assert trace.id == "java/swe-agent/gpt-4o-mini/org__repo-12"
    assert [s.input["command"] for s in trace.steps] == ["open src/A.java", "javac A.java", "submit"]
    assert trace.steps[1].output.endswith("javac: command not found") and trace.steps[2].output == ""
    assert not any(s.is_error for s in trace.steps)  # SWE-agent records no exit codes


def test_browsergym_actions_become_calls_answered_by_the_next_page(tmp_path):
    def info(n, action, url, error="", tree="RootWebArea 'Dashboard'"):
        return {"step": n, "action": action, "obs": {"open_pages_urls": [url], "active_page_index": [0],
                                                     "last_action_error": error, "axtree_txt": tree}}
    run = tmp_path / "results" / "task_7"
    run.mkdir(parents=True)
    pages = [info(0, "<think>open it</think>\n<action>\n```click('431')```\n</action>", "http://shop/admin"),
             info(1, "<think>fill</think>\n<action>\n```fill('749', '01/01/2022')```", "http://shop/report",
                  tree="RootWebArea 'Bestsellers'"),
             info(2, "<action>\n```click(\"12\", button=\"left\")```</action", "http://shop/report",
                  error="TimeoutError: Locator.fill: Timeout 500ms exceeded."),
             info(3, "<action>\n```x = 1\nclick('3')```\n</action>", "http://shop/report"),
             info(4, "```send_msg_to_user('Quest Band')```", "http://shop/report"),
             info(5, "```send_msg_to_user('Quest Band')```", "http://shop/report")]  # the final page: not an action
    for n, page in enumerate(pages):
        (run / f"steps_info_{n}.json").write_text(json.dumps(page))
    (run / "summary_info.json").write_text(json.dumps({"n_steps": 5}))
    steps = browsergym.run_steps(run)
    assert [(s["tool"], s["input"]) for s in steps] == [
        ("click", {"bid": "431"}), ("fill", {"bid": "749", "value": "01/01/2022"}),
        ("click", {"bid": "12", "button": "left"}), ("browser", {"action": "x = 1\nclick('3')"}),
        ("send_msg_to_user", {"text": "Quest Band"})]
    assert steps[0]["output"] == "URL: http://shop/report\nRootWebArea 'Bestsellers'"  # the page the click led to
    assert steps[1]["is_error"] and steps[1]["output"].splitlines()[1].startswith("TimeoutError")
    assert not steps[0].get("is_error") and len(steps) == 5


def test_labels_join_by_id_and_the_output_loads_as_traces(tmp_path):
    run = [{"task_id": 7, "trial": 0, "reward": 0.0, "traj": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", "get_user_details", {"user_id": "x"})]},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: user not found"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c2", "get_user_details", {"user_id": "x"})]},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: user not found"},
    ]}]
    (tmp_path / "run.json").write_text(json.dumps(run))
    label = {"id": "src/x/task7/trial0", "label": {"loop": True, "onset": 1, "kind": "exact"},
             "confidence": "high", "note": "same call twice", "split": "test"}
    (tmp_path / "labels.jsonl").write_text(json.dumps(label) + "\n")
    out = tmp_path / "out"
    assert tau.main(["--run", f"tau1:src/x:{tmp_path / 'run.json'}", "--labels", str(tmp_path / "labels.jsonl"),
                     "--out", str(out)]) == 0
    assert (out / "src_x_dev.jsonl").read_text() == ""
    (trace,) = load_traces(out / "src_x_test.jsonl")
    assert trace.id == "src/x/task7/trial0" and len(trace.steps) == 2
    assert trace.steps[1].is_error and trace.label["onset"] == 1

    label["label"]["onset"] = 5
    (tmp_path / "labels.jsonl").write_text(json.dumps(label) + "\n")
    with pytest.raises(SystemExit, match="onset 5 outside"):
        tau.main(["--run", f"tau1:src/x:{tmp_path / 'run.json'}", "--labels", str(tmp_path / "labels.jsonl"),
                  "--out", str(out)])
