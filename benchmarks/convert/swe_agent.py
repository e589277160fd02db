#!/usr/bin/env python3
"""Convert real SWE-agent trajectories (``*.traj``, SWE-agent 0.x) to semloop traces and join our labels.

SWE-agent (https://github.com/princeton-nlp/SWE-agent) gives a model one shell with extra editor commands
(``open``, ``goto``, ``scroll_down``, ``edit``, ``search_dir``, ``submit``, ...).  A ``.traj`` file keeps
the run twice: ``history`` (the chat) and ``trajectory`` (one entry per executed action, with the
environment's reply as ``observation``).  Each ``trajectory`` entry becomes one step: tool ``bash``,
input ``{"command": <the action>}``, output the observation.  SWE-agent reports no exit codes, so no
step is marked ``is_error``; semloop's error classes read the text.  Replies the harness rejected
before running anything (format errors) are not in ``trajectory`` and are not steps.

Runs are grouped as ``<dir>/<date>_SWE-agent_<model>/trajs/<instance>.traj`` (the layout of the
swe-bench ``experiments`` repositories); the trace id is ``<name>/<model>/<instance>``.  The
trajectories are not in this repository; see ``benchmarks/labels/README.md`` for where they come from.

Usage::

    python benchmarks/convert/swe_agent.py --trajs <dir with */trajs/*.traj> \\
        --name multi-swe-bench-java/swe-agent --labels benchmarks/labels/swe_agent_java.jsonl --out /work/data-extra
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by file path (the tests)
from labeled_splits import parser, write_named  # noqa: E402


def traj_steps(trajectory: list[dict]) -> list[dict]:
    return [{"tool": "bash", "input": {"command": (entry.get("action") or "").strip()},
             "output": entry.get("observation") or ""} for entry in trajectory]


def model_of(run_dir: str) -> str:
    """``20240825_SWE-agent_gpt-4o-2024-05-13`` → ``gpt-4o-2024-05-13``."""
    return run_dir.split("_SWE-agent_", 1)[-1]


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__, "--trajs", "directory holding */trajs/<instance>.traj").parse_args(argv)
    traces = []
    for path in sorted(args.trajs.glob("*/trajs/*.traj")):
        model = model_of(path.parent.parent.name)
        data = json.loads(path.read_text())
        traces.append({"id": f"{args.name}/{model}/{path.stem}", "source": f"{args.name.replace('/', ':', 1)}:{model}",
                       "steps": traj_steps(data["trajectory"])})
    write_named(traces, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
