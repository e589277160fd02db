"""Added time per tool call of semloop's hooks in Codex CLI, Copilot CLI, Gemini CLI and
OpenHands, end to end with the real clients, as a ratio to what the client itself charges for an
empty hook.

    python benchmarks/cli_hook_latency.py [--runs 5] [--calls 6] [--cli codex copilot gemini-cli]
                                          [--out benchmarks/results/cli_hook_latency.md]
    .venv-openhands/bin/python benchmarks/cli_hook_latency.py --cli openhands --out ...

Each CLI (installed by `.ci/run`: `.codex-cli/`, `.copilot-cli/`, `.gemini-cli/`) runs against a
scripted local model API (the Responses API of tests/codex_cli.py; Gemini CLI: the Gemini API of
tests/gemini_cli.py), the same `--calls`-tool-call run (distinct shell commands, so semloop stays
quiet and records every call) with, in turn:

- no hooks (the baseline);
- an empty hook on the same events semloop hooks (`cat >/dev/null; echo {}`): what the CLI charges
  for running any command hook;
- a `python -c pass` hook on the same events: the floor of any hook written in Python (one
  interpreter start per event);
- semloop's hooks as `semloop install` writes them, the warm hook server already running;
- the same, handled in each hook process (`SEMLOOP_HOOK_SERVER=0`).

`--cli openhands` (with the OpenHands venv's Python) runs the same cases with a real
`openhands.sdk.Conversation` against the scripted Chat Completions API of tests/test_openhands.py.

Cases are interleaved run by run (after one warm-up round). Reported per case: the median run and
the added ms per tool call = (median(case) - median(no hooks)) / calls, and semloop's added time
as a ratio to the empty hook's. Absolute times depend on the machine and its load; the ratios
measured in the same run are the result. (A ratio to a hook that adds under 10 ms per call — within the
noise of a shared machine — is not shown: the `python -c pass` row is the yardstick then.)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import codex_cli  # noqa: E402
import copilot_cli  # noqa: E402
import gemini_cli  # noqa: E402
from codex_cli import ScriptedResponses, call  # noqa: E402
from timing import interleaved, write_page  # noqa: E402

SEMLOOP = str(Path(sys.executable).parent / "semloop")
EMPTY = "cat >/dev/null; echo '{}'"
PYTHON_FLOOR = f"{sys.executable} -c pass"


class CLI:
    """One CLI: where its hooks go, what its empty hook looks like, how a run is started."""

    def __init__(self, name: str, binary: str | None, script: list[dict], hooks_file: Callable[[Path], Path],
                 empty: Callable[[dict, str], dict], run: Callable, env: Callable[[Path, dict], dict], version: str,
                 server: type = ScriptedResponses, outputs: Callable[[Any], int] = lambda api: len(api.sent_outputs()),
                 settings: dict | None = None):
        self.name, self.binary, self.script, self.hooks_file = name, binary, script, hooks_file
        self.empty, self.run, self.env, self.version = empty, run, env, version
        # the scripted API, how many tool results it was sent, the settings the hooks file also holds
        self.server, self.outputs, self.settings = server, outputs, settings


def _empty_codex(installed: dict, command: str) -> dict:
    hooks = json.loads(json.dumps(installed))
    for groups in hooks["hooks"].values():
        for group in groups:
            for entry in group["hooks"]:
                entry["command"] = command
    return hooks


def _empty_copilot(installed: dict, command: str) -> dict:
    hooks = json.loads(json.dumps(installed))
    for entries in hooks["hooks"].values():
        for entry in entries:
            entry["bash"] = command
    return hooks


def _version(binary: str | None) -> str:
    if binary is None:
        return "?"
    return subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[0]


def _clis(calls: int) -> dict[str, CLI]:
    codex_bin, copilot_bin = codex_cli.codex_binary(), copilot_cli.copilot_binary()
    gemini_bin = gemini_cli.gemini_binary()
    return {
        "codex": CLI("Codex CLI", codex_bin, [codex_cli.shell(f"echo part-{i} > /dev/null; echo {i}") for i in range(calls)],
                     lambda home: home / ".codex" / "hooks.json", _empty_codex,
                     lambda api, home, work, env: codex_cli.run_codex(codex_bin, api, home, work, env=env),
                     codex_cli.clean_env, _version(codex_bin)),
        "copilot": CLI("Copilot CLI", copilot_bin,
                       [call("bash", command=f"echo part-{i} > /dev/null; echo {i}", description="step") for i in range(calls)],
                       lambda home: home / ".copilot" / "hooks" / "semloop.json", _empty_copilot,
                       lambda api, home, work, env: copilot_cli.run_copilot(copilot_bin, api, home, work, env=env),
                       copilot_cli.clean_env, _version(copilot_bin)),
        "gemini-cli": CLI("Gemini CLI", gemini_bin,
                      [gemini_cli.function_call("run_shell_command", command=f"echo part-{i} > /dev/null; echo {i}",
                                                description="step") for i in range(calls)],
                      lambda home: home / ".gemini" / "settings.json", _empty_codex,
                      lambda api, home, work, env: gemini_cli.run_gemini(gemini_bin, api, home, work, env=env),
                      lambda home, extra: gemini_cli.clean_env(home, "http://unused", extra), _version(gemini_bin),
                      server=gemini_cli.ScriptedGemini, outputs=lambda api: len(api.function_responses()),
                      settings=gemini_cli.base_settings()),
    }


def measure(cli: CLI, target: str, runs: int, calls: int) -> list[tuple[str, float, float]]:
    root = Path(tempfile.mkdtemp(prefix="slclibench-", dir="/tmp"))
    home, work = root / "h", root / "w"
    for folder in (".codex", ".copilot", ".gemini"):
        (home / folder).mkdir(parents=True)
    work.mkdir()
    hooks_file = cli.hooks_file(home)
    proc = subprocess.run([SEMLOOP, "install", target, "--settings", str(hooks_file), "--db", str(root / "s.db")],
                          env=cli.env(home, {}), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    installed = json.loads(hooks_file.read_text())
    variants = {"no hooks": None, "empty hook, same events": cli.empty(installed, EMPTY),
                "`python -c pass` hook, same events": cli.empty(installed, PYTHON_FLOOR),
                "semloop (warm hook server)": installed, "semloop (in each hook process)": installed}
    server_env = cli.env(home, {})
    subprocess.Popen([SEMLOOP, "hook-server", "--idle-timeout", "900"], env=server_env, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def case(name: str, hooks: dict | None) -> Callable[[int], float]:
        extra = {"SEMLOOP_HOOK_SERVER": "0"} if "each hook process" in name else {}

        def run_once(_round: int) -> float:
            if hooks is None and cli.settings is None:
                hooks_file.unlink(missing_ok=True)
            else:
                hooks_file.write_text(json.dumps({**(cli.settings or {}), **(hooks or {})}))
            with cli.server(cli.script) as api:
                run = cli.run(api, home, work, extra)
                outputs = cli.outputs(api)
            if run.returncode != 0 or outputs != calls:
                raise SystemExit(f"{cli.name} / {name}: the run did not complete as scripted "
                                 f"({outputs} tool outputs): {run.stderr[-500:]}")
            return run.seconds

        return run_once

    try:
        seconds = interleaved({n: case(n, h) for n, h in variants.items()}, runs, warmup=1,
                              after_round=lambda r, s: print(f"{cli.name} round {r}: " + ", ".join(
                                  f"{n} {v[-1]:.2f}s" for n, v in s.items()), flush=True))
    finally:
        subprocess.run([SEMLOOP, "hook-server", "--stop"], env=server_env, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
    base = statistics.median(seconds["no hooks"])
    return [(n, statistics.median(v), (statistics.median(v) - base) * 1000.0 / calls) for n, v in seconds.items()]


def measure_openhands(runs: int, calls: int) -> tuple[list[tuple[str, float, float]], str]:
    """The same cases with a real `openhands.sdk.Conversation` (tests/test_openhands.py's scripted
    Chat Completions API and shell tool); run with the OpenHands venv's Python (>= 3.12)."""
    import importlib.metadata

    os.environ.update(LITELLM_LOCAL_MODEL_COST_MAP="True", OPENHANDS_SUPPRESS_BANNER="1")
    from openhands.sdk.hooks import HookConfig
    from test_openhands import run_conversation

    root = Path(tempfile.mkdtemp(prefix="slohbench-", dir="/tmp"))
    work = root / "w"
    (work / ".openhands").mkdir(parents=True)
    hooks_file = work / ".openhands" / "hooks.json"
    proc = subprocess.run([SEMLOOP, "install", "openhands", "--settings", str(hooks_file), "--db", str(root / "s.db")],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    installed = json.loads(hooks_file.read_text())
    variants = {"no hooks": None, "empty hook, same events": _empty_codex(installed, EMPTY),
                "`python -c pass` hook, same events": _empty_codex(installed, PYTHON_FLOOR),
                "semloop (warm hook server)": installed, "semloop (in each hook process)": installed}
    script = [{"command": f"echo part-{i} > /dev/null; echo {i}"} for i in range(calls)]
    subprocess.Popen([SEMLOOP, "hook-server", "--idle-timeout", "900"], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def case(name: str, hooks: dict | None) -> Callable[[int], float]:
        def run_once(_round: int) -> float:
            if hooks is None:
                hooks_file.unlink(missing_ok=True)
            else:
                hooks_file.write_text(json.dumps(hooks))
            os.environ["SEMLOOP_HOOK_SERVER"] = "0" if "each hook process" in name else "1"
            start = time.perf_counter()
            _, api = run_conversation(work, script)
            seconds = time.perf_counter() - start
            if len(api.tool_results()) != calls:
                raise SystemExit(f"OpenHands / {name}: the run did not complete as scripted")
            return seconds

        return run_once

    assert HookConfig  # the SDK is importable: this is the OpenHands venv
    try:
        seconds = interleaved({n: case(n, h) for n, h in variants.items()}, runs, warmup=1,
                              after_round=lambda r, s: print(f"OpenHands round {r}: " + ", ".join(
                                  f"{n} {v[-1]:.2f}s" for n, v in s.items()), flush=True))
    finally:
        os.environ.pop("SEMLOOP_HOOK_SERVER", None)
        subprocess.run([SEMLOOP, "hook-server", "--stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
    base = statistics.median(seconds["no hooks"])
    rows = [(n, statistics.median(v), (statistics.median(v) - base) * 1000.0 / calls) for n, v in seconds.items()]
    return rows, f"openhands-sdk {importlib.metadata.version('openhands-sdk')}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--cli", nargs="+", choices=("codex", "copilot", "gemini-cli", "openhands"),
                    default=["codex", "copilot"],
                    help="openhands: run with the OpenHands venv's Python (.venv-openhands/bin/python)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "cli_hook_latency.md"))
    args = ap.parse_args(argv)
    clis = _clis(args.calls)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = ["# Coding-agent CLI hook latency, end to end", "",
             (f"`python benchmarks/cli_hook_latency.py --runs {args.runs} --calls {args.calls} --cli {' '.join(args.cli)}` "
             f"— each real client against a scripted local model API (Codex CLI, Copilot CLI: Responses; Gemini CLI: "
             f"the Gemini API; OpenHands: Chat Completions), the same {args.calls}-tool-call run per case, "
             f"{args.runs} interleaved "
             f"runs each after a warm-up round; {platform.system()} {platform.machine()}, Python "
             f"{platform.python_version()}, {os.cpu_count()} cores, load average {load:.1f} at the start (a shared "
             "machine: compare rows of one table, not machines). The empty hook and the `python -c pass` hook run on "
             "the same events as semloop's (Codex, OpenHands: PreToolUse, PostToolUse, UserPromptSubmit; Copilot: "
             "also permissionRequest and postToolUseFailure; Gemini CLI: BeforeTool, AfterTool, BeforeAgent)."), ""]
    for target in args.cli:
        if target == "openhands":
            rows, version = measure_openhands(args.runs, args.calls)
            title = f"OpenHands ({version}, a `Conversation` through LiteLLM)"
        else:
            cli = clis[target]
            if cli.binary is None:
                raise SystemExit(f"{cli.name} is not installed (.ci/run installs it)")
            rows = measure(cli, target, args.runs, args.calls)
            title = f"{cli.name} ({cli.version})"
        empty = next(added for name, _, added in rows if name.startswith("empty"))
        floor = next(added for name, _, added in rows if name.startswith("`python"))
        lines += [f"## {title}", "",
                  "| hooks | median run, s | added per tool call, ms | ÷ the empty hook's | ÷ `python -c pass`'s |",
                  "|---|---|---|---|---|"]

        def ratio(added: float, unit: float, name: str) -> str:
            return "—" if name == "no hooks" or unit < 10 else f"{added / unit:.1f}"

        for name, med, added in rows:
            lines.append(f"| {name} | {med:.2f} | {'—' if name == 'no hooks' else f'{added:+.0f}'} | "
                         f"{ratio(added, empty, name)} | {ratio(added, floor, name)} |")
        lines.append("")
    lines.append(f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.")
    write_page(args.out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
