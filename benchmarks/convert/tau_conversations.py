#!/usr/bin/env python3
"""Convert real tau-bench / tau2-bench customer-service runs to semloop traces and join our labels.

The runs themselves are not in this repository (see ``benchmarks/labels/README.md`` for where each
one comes from and how to fetch it); this script reads them from wherever they were fetched, turns
every run into one semloop trace, joins our hand-written labels by trace id, and writes
``<out>/<name>_dev.jsonl`` and ``<out>/<name>_test.jsonl``.

How a conversation becomes steps (the same convention as ``shared/data/real_tau_airline_dev.jsonl``):

- every agent message to the user is a ``respond`` step: input ``{"content": <message>}`` (without
  a ``<think>`` block, which the user is not shown), output the user's next text reply (``""`` when
  the conversation ended there);
- every agent tool call is a step with the call's arguments as input and the tool's reply as output;
  ``is_error`` is set when the environment marks the reply as an error (tau2) or the reply starts
  with ``Error`` (tau-bench v1);
- the user's first message, tau2's fixed greeting ("Hi! How can I help you today?") and the
  simulated user's own device tool calls (tau2 telecom) are not steps: the agent does not make them.

Usage::

    python benchmarks/convert/tau_conversations.py \\
        --run tau1:taubench_grok-3-retail:/work/data-extra/raw/taubench_pr68_grok-3-retail.json \\
        --run tau2:tau2_gpt-4.1-retail:/work/data-extra/raw/tau2_gpt-4.1_retail_....json \\
        --labels benchmarks/labels/tau_conversations.jsonl --out /work/data-extra

``--unlabeled`` also writes every converted run, labeled or not, to ``<name>_all.jsonl`` (for reading
and labeling new runs).
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by file path (the tests)
from labeled_splits import add_output_args, load_labels, write_labeled  # noqa: E402

TAU2_GREETING = "Hi! How can I help you today?"


def _args(raw: Any) -> Any:
    """Tool-call arguments as a dict: tau-bench v1 keeps them as a JSON string."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return {"arguments": raw}
    return raw if raw is not None else {}


def _next_user_text(messages: list[dict], start: int) -> str:
    """The next text the user sends after ``messages[start - 1]``; user tool calls are skipped."""
    for msg in messages[start:]:
        if msg.get("role") == "user" and msg.get("content"):
            return msg["content"]
        if msg.get("role") == "assistant":
            return ""
    return ""


def tau1_steps(traj: list[dict]) -> list[dict]:
    """Steps of a tau-bench v1 ``traj`` (OpenAI chat messages: system, user, assistant, tool ...)."""
    results = {m.get("tool_call_id"): m.get("content", "") for m in traj if m.get("role") == "tool"}
    steps: list[dict] = []
    for i, msg in enumerate(traj):
        if msg.get("role") != "assistant":
            continue
        calls = msg.get("tool_calls") or []
        if calls:
            for call in calls:
                fn = call.get("function", call)
                out = str(results.get(call.get("id"), ""))
                step = {"tool": fn.get("name", "?"), "input": _args(fn.get("arguments")), "output": out}
                if out.startswith("Error"):
                    step["is_error"] = True
                steps.append(step)
        elif text := _visible(msg.get("content") or ""):
            steps.append({"tool": "respond", "input": {"content": text},
                          "output": _next_user_text(traj, i + 1)})
    return steps


_THINK = re.compile(r"<think>.*?(</think>|$)\s*", re.S)


def _visible(text: str) -> str:
    """A message without the model's `<think>` reasoning (Qwen3 keeps it in the content): what
    the other side is told. Empty when the message was all reasoning."""
    return _THINK.sub("", text).strip()


def tau2_steps(messages: list[dict]) -> list[dict]:
    """Steps of a tau2-bench simulation's ``messages`` (agent calls only; user device calls skipped)."""
    results: dict[str, dict] = {}
    for msg in messages:
        if msg.get("role") == "tool" and msg.get("requestor", "assistant") == "assistant":
            results[msg.get("id")] = msg
    steps: list[dict] = []
    for i, msg in enumerate(messages):
        if msg.get("role") != "assistant":
            continue
        calls = msg.get("tool_calls") or []
        if calls:
            for call in calls:
                res = results.get(call.get("id"), {})
                step = {"tool": call.get("name", "?"), "input": _args(call.get("arguments")),
                        "output": str(res.get("content") or "")}
                if res.get("error"):
                    step["is_error"] = True
                steps.append(step)
        elif msg.get("content"):
            if i == 0 and msg["content"].strip() == TAU2_GREETING:
                continue
            steps.append({"tool": "respond", "input": {"content": msg["content"]},
                          "output": _next_user_text(messages, i + 1)})
    return steps


_BLOCK = re.compile(r"^(\d+)\. (Assistant TOOL CALL -> |Assistant: |User: |Tool [^:\n]*: )", re.M)


def transcript_steps(text: str) -> list[dict]:
    """Steps of a tau2 conversation printed as a numbered transcript (tau2-bench PR #103's judge files).

    Blocks look like ``7. Assistant: ...``, ``8. Assistant TOOL CALL -> name {python dict}``,
    ``9. Tool call_x: output`` and ``10. User: ...``; a block may span lines, and message text can itself
    contain numbered lists, so a header only counts when its number is the next one in sequence.
    Consecutive tool calls are answered by the same number of consecutive tool lines, in order.
    An assistant text that is followed by a tool call rather than a user reply is narration the user
    never saw, and is not a step.
    """
    body = text.split("Conversation transcript:", 1)[-1].split("\nJudging instructions:", 1)[0]
    blocks: list[tuple[str, str]] = []
    expect, start, kind = 1, None, None
    for m in _BLOCK.finditer(body):
        if int(m.group(1)) != expect:
            continue
        if kind is not None:
            blocks.append((kind, body[start:m.start()].strip()))
        head = m.group(2)
        kind = "Assistant CALL" if "TOOL CALL" in head else head.split()[0].rstrip(":")
        start, expect = m.end(), expect + 1
    if kind is not None:
        blocks.append((kind, body[start:].strip()))
    steps: list[dict] = []
    pending: list[dict] = []
    for i, (kind, content) in enumerate(blocks):
        nxt = blocks[i + 1][0] if i + 1 < len(blocks) else None
        if kind == "Assistant CALL":
            name, _, raw = content.partition(" ")
            try:
                args = ast.literal_eval(raw.strip()) if raw.strip() else {}
            except (ValueError, SyntaxError):
                args = {"arguments": raw.strip()}
            step = {"tool": name, "input": args, "output": ""}
            steps.append(step)
            pending.append(step)
        elif kind == "Tool":
            if pending:
                step = pending.pop(0)
                step["output"] = content
                if content.startswith("Error"):
                    step["is_error"] = True
        elif kind == "Assistant":
            pending.clear()
            if nxt == "User" and not (i == 0 and content == TAU2_GREETING):
                steps.append({"tool": "respond", "input": {"content": content},
                              "output": blocks[i + 1][1]})
            elif nxt is None:
                steps.append({"tool": "respond", "input": {"content": content}, "output": ""})
    return steps


def convert(kind: str, name: str, path: Path) -> Iterator[dict]:
    """Yield unlabeled traces (id, source, steps) from one results file."""
    data = json.loads(path.read_text()) if kind in ("tau1", "tau2") else None
    if kind == "tau1":
        for run in data:
            yield {"id": f"{name}/task{run['task_id']}/trial{run.get('trial', 0)}",
                   "source": name.replace("/", ":", 1), "steps": tau1_steps(run["traj"])}
    elif kind == "tau2":
        for sim in data["simulations"]:
            yield {"id": f"{name}/task{sim['task_id']}/trial{sim.get('trial', 0)}",
                   "source": name.replace("/", ":", 1), "steps": tau2_steps(sim["messages"])}
    elif kind == "tau2-transcript":
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for row in rows:
            yield {"id": f"{name}/task{row['task_id']}/trial0",
                   "source": name.replace("/", ":", 1), "steps": transcript_steps(row["prompt"])}
    else:
        raise SystemExit(f"unknown run kind {kind!r}: use tau1, tau2 or tau2-transcript")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", action="append", required=True, metavar="KIND:NAME:PATH",
                    help="kind tau1|tau2|tau2-transcript, trace-id prefix (e.g. tau2/gpt-4.1-retail), results file")
    add_output_args(ap)
    args = ap.parse_args(argv)

    labels = load_labels(args.labels)
    args.out.mkdir(parents=True, exist_ok=True)
    used: set[str] = set()
    for spec in args.run:
        kind, name, path = spec.split(":", 2)
        traces = list(convert(kind, name, Path(path)))
        stem = name.replace("/", "_")
        used |= write_labeled(traces, labels, args.out, stem, args.unlabeled)
    missing = sorted(set(labels) - used)
    prefixes = tuple(spec.split(":", 2)[1] + "/" for spec in args.run)
    missing = [m for m in missing if m.startswith(prefixes)]
    if missing:
        print(f"warning: {len(missing)} labels match no converted run, e.g. {missing[:3]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
