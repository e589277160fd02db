"""The suite's own rules: under CI a skip fails the run, and no test file hides a semloop import
behind a `try/except ImportError` (a typo in semloop would then read as "skipped", exit 0)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

SKIPPING = '''
import pytest

def test_runs():
    pass

def test_skips():
    pytest.skip("the optional dependency is missing")
'''

SKIPPED_MODULE = '''
import pytest
pytest.importorskip("no_such_module_semloop_ci_probe")

def test_never_collected():
    pass
'''


def run_pytest(tmp_path: Path, source: str, ci: str | None) -> subprocess.CompletedProcess:
    (tmp_path / "test_probe.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # a bare pytest: the probe needs no other plugin
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "ci_no_skip", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), "-q", str(tmp_path / "test_probe.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_skip_is_a_skip_with_its_reason_outside_ci(tmp_path):
    out = run_pytest(tmp_path, SKIPPING, ci=None)
    assert out.returncode == 0, out.stdout
    assert "1 passed, 1 skipped" in out.stdout
    assert "SKIPPED" in out.stdout and "the optional dependency is missing" in out.stdout  # -rs


def test_under_ci_a_skipped_test_fails_with_its_reason(tmp_path):
    out = run_pytest(tmp_path, SKIPPING, ci="true")
    assert out.returncode == 1, out.stdout
    assert "1 failed, 1 passed" in out.stdout
    assert "skipped under CI" in out.stdout and "the optional dependency is missing" in out.stdout


def test_under_ci_a_module_skipped_at_collection_fails(tmp_path):
    out = run_pytest(tmp_path, SKIPPED_MODULE, ci="true")
    assert out.returncode != 0, out.stdout
    assert "no_such_module_semloop_ci_probe" in out.stdout and "skipped" not in out.stdout.splitlines()[-1]


def test_ci_false_is_not_ci(tmp_path):
    assert run_pytest(tmp_path, SKIPPING, ci="false").returncode == 0


def _imports(nodes) -> list[str]:
    names = []
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.ImportFrom) and sub.module:
                names.append(sub.module)
            elif isinstance(sub, ast.Import):
                names += [a.name for a in sub.names]
    return names


def test_no_test_file_guards_a_semloop_import_with_except_importerror():
    offenders = []
    for path in sorted(TESTS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Try):
                continue
            caught = [ast.unparse(h.type) if h.type else "" for h in node.handlers]
            if not any(c == "" or "ImportError" in c or "ModuleNotFoundError" in c or "Exception" in c
                       for c in caught):
                continue
            ours = [m for m in _imports(node.body) if m == "semloop" or m.startswith("semloop.")]
            if ours:
                offenders.append(f"{path.name}:{node.lineno} {ours}")
    assert offenders == []
