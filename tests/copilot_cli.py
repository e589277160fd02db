"""Drive the real GitHub Copilot CLI (`@github/copilot` from npm) against the scripted local
Responses API of tests/codex_cli.py, for end-to-end hook tests.

Copilot CLI runs without a GitHub account against a custom model provider ("BYOK"):
`COPILOT_OFFLINE=true` (no GitHub auth, telemetry or update checks), `COPILOT_PROVIDER_BASE_URL`
on 127.0.0.1, `COPILOT_PROVIDER_WIRE_API=responses`, `COPILOT_MODEL`. `run_copilot` runs
`copilot -p ... --yolo --output-format json` in a temporary HOME / COPILOT_HOME (whose
`hooks/semloop.json` is where `semloop install copilot` writes the hooks) and returns the parsed
JSONL event stream.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cli_run import CLIRun, run_stream_json
from codex_cli import ScriptedResponses
from hooked_cli import pinned_cli

MODEL = "gpt-5.1"


def copilot_binary() -> str | None:
    """`$SEMLOOP_COPILOT_CLI`, or the CLI `.ci/run` installs under `.copilot-cli/`, or None."""
    return pinned_cli("SEMLOOP_COPILOT_CLI", ".copilot-cli", "copilot")


@dataclass
class Run(CLIRun):
    """A `copilot -p ... --output-format json` run."""

    def session_id(self) -> str:
        return str(self.result.get("sessionId"))

    def tool_completions(self) -> list[dict]:
        return [e["data"] for e in self.events if e.get("type") == "tool.execution_complete"]


def clean_env(home: Path, extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("COPILOT_", "GITHUB_", "GH_", "SEMLOOP_")) or k == "SEMLOOP_MODEL_DIR"}
    env.update(HOME=str(home), COPILOT_HOME=str(home / ".copilot"), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_CONFIG_HOME=str(home / ".config"), COPILOT_OFFLINE="true", COPILOT_AUTO_UPDATE="false",
               COPILOT_MODEL=MODEL, COPILOT_PROVIDER_WIRE_API="responses", COPILOT_PROVIDER_API_KEY="test-dummy-key",
               COPILOT_ALLOW_ALL="true", NO_COLOR="1", TERM="dumb")
    env.update(extra or {})
    return env


def run_copilot(binary: str, api: ScriptedResponses, home: Path, cwd: Path, *, prompt: str = "Do the task.",
                env: dict | None = None, timeout: float = 180.0, resume: str | None = None) -> Run:
    cwd.mkdir(parents=True, exist_ok=True)
    argv = [binary, "-p", prompt, "--yolo", "--no-auto-update", "--output-format", "json"]
    if resume:
        argv.append(f"--resume={resume}")
    return Run(*run_stream_json(argv, cwd, clean_env(home, {"COPILOT_PROVIDER_BASE_URL": api.url + "/v1", **(env or {})}),
                                timeout))
