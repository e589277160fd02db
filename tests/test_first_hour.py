"""What a new user meets in the first hour: --version, help texts, the readable scan report, where
`semloop bench` writes, a core that runs without scikit-learn, the license metadata."""

import json
import subprocess
import sys

import pytest

import semloop
from conftest import ROOT


def run(cmd, *args, cwd=None):
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_version(semloop_cmd):
    """pyproject.toml reads the version from semloop.__version__ (tests/test_packaging.py)."""
    proc = run(semloop_cmd, "--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"semloop {semloop.__version__}"


@pytest.mark.parametrize("command,needle", [
    (["scan"], "claude-code = a Claude Code session transcript"),
    (["scan"], "2 = bad input or a missing optional dependency"),
    (["calibrate"], "jsonl = semloop traces"),
    (["hook"], "Run as a hook of claude-code, gemini-cli, codex, copilot, cursor, openhands"),
    (["--help"], "add semloop's hooks to the settings of claude-code, gemini-cli, codex, copilot, cursor, openhands"),
    (["report"], "self-contained HTML"),
    (["demo"], "five loops, four hard negatives"),
    (["install"], "Add semloop's hooks to an agent's settings"),
    (["uninstall"], "every other hook is kept"),
    (["bench"], "so committed results are never overwritten"),
])
def test_help_texts(semloop_cmd, command, needle):
    proc = run(semloop_cmd, *command, "--help")
    assert proc.returncode == 0 and needle in " ".join(proc.stdout.split()), proc.stdout


def test_readable_scan_report_lists_every_warn_and_stop(semloop_cmd, tmp_path):
    denied = {"tool": "Bash", "input": {"command": "cat /etc/shadow"},
              "output": "cat: /etc/shadow: Permission denied", "is_error": True}
    other = {"tool": "Bash", "input": {"command": "ls /srv"}, "output": "app\ndata\nlogs", "is_error": False}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"id": "many", "steps": [denied] * 5 + [other] * 2}) + "\n")
    proc = run(semloop_cmd, "scan", str(path))
    assert proc.returncode == 0, proc.stderr
    as_json = json.loads(run(semloop_cmd, "scan", str(path), "--json").stdout)
    with_evidence = [e for e in as_json["events"] if e["signals"]]
    assert len(with_evidence) >= 3  # two warnings and the stop
    for event in with_evidence:
        for signal in event["signals"]:
            assert f"step {event['step']} {event['action']:4}  {signal['kind']:11}" in proc.stdout, proc.stdout
    after = [e["step"] for e in as_json["events"] if not e["signals"]]
    if after:
        assert (f"steps {after[0]}-{after[-1]} stop  (after the stop" in proc.stdout
                or f"step {after[0]} stop" in proc.stdout)


def test_bench_writes_to_a_fresh_folder_by_default(semloop_cmd, tmp_path):
    step = lambda cmd, out: {"tool": "Bash", "input": {"command": cmd}, "output": out}  # noqa: E731
    data = tmp_path / "tiny.jsonl"
    data.write_text("\n".join(json.dumps(t) for t in [
        {"id": "loop", "label": {"loop": True, "onset": 1, "kind": "exact"}, "steps": [step("ls", "a")] * 4},
        {"id": "clean", "label": {"loop": False}, "steps": [step(f"cat f{i}", f"text {i}") for i in range(4)]},
    ]) + "\n")
    args = ["bench", str(data), "--detectors", "exact", "--no-sweep", "--perf-runs", "0", "--no-plots",
            "--latency-steps", "4", "--no-progress"]
    first = run(semloop_cmd, *args, cwd=tmp_path)
    second = run(semloop_cmd, *args, cwd=tmp_path)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    folders = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert len(folders) == 2 and all(f.startswith("semloop-bench-") for f in folders)  # never the same one
    assert not (tmp_path / "benchmarks").exists()
    assert all((tmp_path / f / "results.json").exists() for f in folders)


def test_core_runs_without_scikit_learn():
    code = """
import sys
sys.modules["sklearn"] = None  # importing it now fails, as on an install without the extra
from semloop import LoopGuard
guard = LoopGuard()
actions = [guard.record("Bash", {"command": "ls /root"}, "ls: cannot open directory: Permission denied",
                        is_error=True).action for _ in range(3)]
print(actions)
try:
    LoopGuard(embedding="hashing", fail_open=False).record("Bash", {"command": "ls"}, "x")
except ImportError as exc:
    print(exc)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "['allow', 'allow', 'warn']"
    assert lines[1] == 'the "hashing" embedding backend needs scikit-learn: pip install "semloop-guard[learn]"'


def test_license_file_and_spdx_metadata():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the `tomli` backport (in the `test` extra), same API
        import tomli as tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "semloop authors" in text
    assert not any("scikit-learn" in d for d in project["dependencies"])


def test_readme_numbers_are_generated_from_the_results_files():
    """Every figure in the benchmark tables (README.md, docs/benchmarks.md) and the calibration
    section (docs/usage.md) comes from benchmarks/readme_table.py; `--write` regenerates them."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "readme_table.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    pages = {name: (ROOT / name).read_text() for name in ("README.md", "docs/benchmarks.md", "docs/usage.md")}
    assert "<!-- generated: real-runs -->" in pages["README.md"]
    for name in ("bench-table", "bench-data", "bench-kinds", "bench-process", "bench-targets"):
        assert f"<!-- generated: {name} -->" in pages["docs/benchmarks.md"], name
    assert "<!-- generated: calibration -->" in pages["docs/usage.md"]


def test_readme_has_no_references_outside_the_repo():
    import re

    readme = (ROOT / "README.md").read_text()
    assert "../" not in readme and not re.search(r"issue #?\d|#\d+\b", readme)
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if not target.startswith("http") and not target.startswith("docs/"):  # docs/ pages come from several branches
            assert (ROOT / target).exists(), target
