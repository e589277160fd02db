#!/usr/bin/env python3
"""Convert real mini-swe-agent trajectories (``*.traj.json``) to semloop traces and join our labels.

mini-swe-agent (https://github.com/SWE-agent/mini-swe-agent) gives a model one tool, a bash shell: every
assistant message holds a THOUGHT and exactly one ```bash block; the environment's reply comes back as
the next user message (``<returncode>N</returncode><output>...</output>``).  Each assistant turn becomes
one step:

- a turn with a bash block: tool ``bash``, input ``{"command": <the block>}``, output the environment's
  reply; ``is_error`` when the return code is non-zero;
- a turn the harness rejects (no block, or several): tool ``bash``, input ``{"command": <the blocks it
  tried, joined>}`` (or the tail of its text when it gave none), output the harness's format error,
  ``is_error`` true (the agent did act, and wasted a step doing so).

The system prompt, the task description and the final submission diff are not steps.  The trajectories
are not in this repository; see ``benchmarks/labels/README.md`` for where they come from.

Usage::

    python benchmarks/convert/mini_swe_agent.py --trajs <dir with */*.traj.json> \\
        --name mini-swe-agent/gemini-3-pro --labels benchmarks/labels/mini_swe_agent.jsonl --out /work/data-extra
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by file path (the tests)
from labeled_splits import parser, write_named  # noqa: E402

_BASH = re.compile(r"```bash\s*\n(.*?)\n?```", re.S)
_RC = re.compile(r"<returncode>(-?\d+)</returncode>")


def traj_steps(messages: list[dict]) -> list[dict]:
    steps: list[dict] = []
    for i, msg in enumerate(messages):
        if msg.get("role") != "assistant":
            continue
        text = msg.get("content") or ""
        reply = ""
        if i + 1 < len(messages) and messages[i + 1].get("role") == "user":
            reply = messages[i + 1].get("content") or ""
        blocks = _BASH.findall(text)
        rc = _RC.search(reply)
        if len(blocks) == 1 and rc:
            step = {"tool": "bash", "input": {"command": blocks[0].strip()}, "output": reply}
            if rc.group(1) != "0":
                step["is_error"] = True
        elif len(blocks) == 1 and not reply:
            step = {"tool": "bash", "input": {"command": blocks[0].strip()}, "output": ""}
        elif reply.lstrip().startswith("diff --git") or "COMPLETE_TASK_AND_SUBMIT" in text and not rc:
            # the submission turn: the harness ends the run and the reply is the final diff
            step = {"tool": "bash", "input": {"command": blocks[0].strip() if blocks else ""},
                    "output": reply}
        else:
            # rejected by the harness (e.g. "found 3 actions"): the input is what the agent tried to run
            attempted = "\n".join(b.strip() for b in blocks) if blocks else text.strip()[-500:]
            step = {"tool": "bash", "input": {"command": attempted}, "output": reply, "is_error": True}
        steps.append(step)
    return steps


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__, "--trajs", "directory holding */<id>.traj.json").parse_args(argv)
    traces = []
    for path in sorted(args.trajs.glob("**/*.traj.json")):
        data = json.loads(path.read_text())
        instance = data.get("instance_id") or path.name.removesuffix(".traj.json")
        traces.append({"id": f"{args.name}/{instance}", "source": args.name.replace("/", ":", 1),
                       "steps": traj_steps(data["messages"])})
    write_named(traces, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
