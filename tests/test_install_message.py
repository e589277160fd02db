"""`semloop install claude-code` tells the truth about when the hooks apply (issue 9.8): current
Claude Code reloads its settings files itself, so no "restart"/"new session" is needed."""

import subprocess
import sys
from pathlib import Path


def test_install_does_not_ask_for_a_new_session(tmp_path):
    script = Path(sys.executable).parent / "semloop"
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "semloop"]
    out = subprocess.run(cmd + ["install", "claude-code", "--settings", str(tmp_path / "settings.json")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "new session" not in out.stdout and "restart" not in out.stdout.lower()
    assert "reloads its settings" in out.stdout
