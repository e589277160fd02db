#!/usr/bin/env python3
"""Convert real BrowserGym web-agent runs (AgentLab-style ``steps_info_<n>.json`` folders) to semloop
traces and join our labels.

BrowserGym (https://github.com/ServiceNow/BrowserGym) has the model answer each page with an action
in Python call syntax (``click('431')``, ``fill('749', '01/01/2022')``, ``goto('http://...')``,
``send_msg_to_user('...')``); ``steps_info_<n>.json`` holds the page the agent saw at step n
(``obs``: URL, accessibility tree, the previous action's error) and the action it chose.  Action n
becomes one step: tool = the action's name, input its literal arguments under BrowserGym's parameter
names (``{"bid": "431"}``), output
the page after it — ``URL: <url>``, the action's error if any, then the accessibility tree — and
``is_error`` when BrowserGym reported an error.  An action that is not a single call (several
lines, or text the parser rejects) becomes tool ``browser`` with input ``{"action": <text>}``.  The
runs listed in ``summary_info.json`` count ``n_steps`` actions; the last folder entry is the final
page.  The runs are not in this repository; see ``benchmarks/labels/README.md`` for where they come from.

Usage::

    python benchmarks/convert/browsergym.py --runs <dir with task_*/steps_info_*.json> \\
        --name webarena/colorbrowser-gpt-5 --labels benchmarks/labels/webarena_browsergym.jsonl --out /work/data-extra
"""
from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by file path (the tests)
from labeled_splits import parser, write_named  # noqa: E402

# BrowserGym's action functions and their parameter names (browsergym.core.action.functions), so a
# positional call becomes the keyword input a tool-calling integration would record.
PARAMETERS = {
    "click": ("bid", "button", "modifiers"), "dblclick": ("bid", "button", "modifiers"), "hover": ("bid",),
    "fill": ("bid", "value"), "select_option": ("bid", "options"), "press": ("bid", "key_comb"),
    "focus": ("bid",), "clear": ("bid",), "check": ("bid",), "uncheck": ("bid",),
    "drag_and_drop": ("from_bid", "to_bid"), "upload_file": ("bid", "file"), "goto": ("url",),
    "tab_focus": ("index",), "send_msg_to_user": ("text",), "report_infeasible": ("reason",),
    "scroll": ("delta_x", "delta_y"), "keyboard_press": ("key",), "keyboard_type": ("text",), "noop": ("wait_ms",),
    "take_note": ("note",), "calculate": ("expression",),  # the two this fork of BrowserGym adds
}
_ACTION = re.compile(r"<action>\s*(.*?)\s*(?:</action>|$)", re.S)  # the closing tag is often cut (a stop sequence)


def parse_action(text: str) -> tuple[str, dict]:
    """``click('431', button='left')`` → ("click", {"bid": "431", "button": "left"}) (`PARAMETERS`; a
    function not listed keeps ``{"args": [...]}``); anything else → ("browser", {"action": text})."""
    match = _ACTION.search(text)
    code = (match.group(1) if match else text).strip().lstrip("`").split("```")[0].strip()
    try:
        body = ast.parse(code).body
        if len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(call := body[0].value, ast.Call) \
                and isinstance(call.func, ast.Name) and all(k.arg for k in call.keywords):
            args = [ast.literal_eval(arg) for arg in call.args]
            names = PARAMETERS.get(call.func.id, ())
            named = dict(zip(names, args)) if len(args) <= len(names) else {"args": args}
            return call.func.id, {**named, **{k.arg: ast.literal_eval(k.value) for k in call.keywords}}
    except (SyntaxError, ValueError):
        pass
    return "browser", {"action": code}


def page_text(obs: dict) -> str:
    urls, active = obs.get("open_pages_urls") or [], obs.get("active_page_index") or [0]
    index = active[0] if isinstance(active, list) and active else 0
    url = urls[index] if 0 <= index < len(urls) else (urls[-1] if urls else "")
    error = obs.get("last_action_error") or ""
    return f"URL: {url}\n" + (f"{error}\n" if error else "") + (obs.get("axtree_txt") or "")


def run_steps(folder: Path) -> list[dict]:
    infos = {int(m.group(1)): p for p in folder.glob("steps_info_*.json")
             if (m := re.fullmatch(r"steps_info_(\d+)\.json", p.name))}
    summary = folder / "summary_info.json"
    n_steps = json.loads(summary.read_text()).get("n_steps") if summary.exists() else None
    n_steps = n_steps if isinstance(n_steps, int) else max(infos, default=0)
    steps = []
    for n in range(n_steps):
        if n not in infos:
            break
        tool, tool_input = parse_action(json.loads(infos[n].read_text()).get("action") or "")
        after = json.loads(infos[n + 1].read_text())["obs"] if n + 1 in infos else {}
        step = {"tool": tool, "input": tool_input, "output": page_text(after) if after else ""}
        if after.get("last_action_error"):
            step["is_error"] = True
        steps.append(step)
    return steps


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__, "--runs", "directory holding task_*/steps_info_*.json").parse_args(argv)
    write_named([{"id": f"{args.name}/{folder.name}", "source": args.name.replace("/", ":", 1),
                  "steps": run_steps(folder)}
                 for folder in sorted(args.runs.glob("task_*")) if folder.is_dir()], args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
