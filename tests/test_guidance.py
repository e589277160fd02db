"""`semloop.guidance()` and the session-start context of the hook CLIs (off by default)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import semloop
from semloop.integrations import claude_code as cc

SEMLOOP = [sys.executable, "-m", "semloop"]
START = {"session_id": "s-guid", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp", "hook_event_name": "SessionStart",
         "source": "startup"}


def _semloop(args: list[str], stdin: str = "", **env: str) -> subprocess.CompletedProcess:
    # a cache dir of its own: a warm server's http config in the user's cache would add its own message
    cache = env.pop("XDG_CACHE_HOME", None) or _private_cache()
    return subprocess.run(SEMLOOP + args, check=False, input=stdin, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SEMLOOP_HOOK_SERVER": "0", "XDG_CACHE_HOME": cache, **env})


def _private_cache() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="semloop-guidance-cache-")


def test_guidance_is_a_short_block_in_english_and_chinese():
    en, zh = semloop.guidance(), semloop.guidance("zh")
    assert en.startswith("Working with tools without going in circles:") and len(en) < 1200
    assert "same result twice" in en and "permission" in en and "[semloop]" in en
    assert zh.startswith("使用工具时避免原地打转") and "[semloop]" in zh
    with pytest.raises(ValueError, match="language must be one of"):
        semloop.guidance("fr")


def test_import_semloop_gives_guidance_without_numpy():
    code = "import sys, semloop; semloop.guidance('zh'); print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_session_start_adds_the_guidance_only_when_asked(tmp_path):
    plain = _semloop(["hook", "claude-code", "--no-server"], json.dumps(START))
    assert plain.returncode == 0 and json.loads(plain.stdout) == {}
    asked = _semloop(["hook", "claude-code", "--no-server", "--guidance"], json.dumps(START))
    assert json.loads(asked.stdout) == {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                               "additionalContext": semloop.guidance()}}
    config = tmp_path / "semloop.toml"
    config.write_text('language = "zh"\n')
    zh = _semloop(["hook", "claude-code", "--no-server", "--guidance", "--config", str(config)], json.dumps(START))
    assert json.loads(zh.stdout)["hookSpecificOutput"]["additionalContext"] == semloop.guidance("zh")
    config.write_text("language = 7\n")  # a broken config: the session starts, without the block
    broken = _semloop(["hook", "claude-code", "--no-server", "--guidance", "--config", str(config)],
                      json.dumps(START))
    assert broken.returncode == 0 and json.loads(broken.stdout) == {} and "no guidance" in broken.stderr


@pytest.mark.parametrize("hooks", ["command", "http"])
def test_install_guidance_writes_one_session_start_command_and_uninstall_removes_it(tmp_path, hooks):
    settings = tmp_path / "settings.json"
    home = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "SEMLOOP_HOOK_SERVER": "1"}  # with the server off, `--hooks http` writes command hooks
    out = _semloop(["install", "claude-code", "--settings", str(settings), "--hooks", hooks, "--guidance"], **home)
    assert out.returncode == 0 and "guidance: SessionStart adds semloop.guidance()" in out.stdout
    data = json.loads(settings.read_text())
    (group,) = data["hooks"]["SessionStart"]
    (entry,) = group["hooks"]
    assert entry["type"] == "command" and entry["command"].endswith("hook claude-code --guidance")
    assert all(not h.get("command", "").endswith("--guidance")
               for e in cc.EVENTS for g in data["hooks"][e] for h in g["hooks"])
    # installed again without it: the block is gone (command hooks need no SessionStart at all)
    _semloop(["install", "claude-code", "--settings", str(settings), "--hooks", hooks], **home)
    data = json.loads(settings.read_text())
    starts = [h["command"] for g in data["hooks"].get("SessionStart", []) for h in g["hooks"]]
    assert starts == ([] if hooks == "command" else [starts[0]]) and not any(c.endswith("--guidance") for c in starts)
    _semloop(["install", "claude-code", "--settings", str(settings), "--hooks", hooks, "--guidance"], **home)
    assert _semloop(["uninstall", "claude-code", "--settings", str(settings)], **home).returncode == 0
    assert "hooks" not in json.loads(settings.read_text())


def test_doc_states_the_exact_text():
    doc = (Path(__file__).resolve().parent.parent / "docs" / "guidance.md").read_text(encoding="utf-8")
    for language in ("en", "zh"):
        assert semloop.guidance(language) in doc
