"""TOML config files on every supported Python: `tomllib` on 3.11+, the `tomli` backport on 3.10
(`requires-python >= 3.10`; pyproject declares `tomli; python_version < "3.11"`)."""

from __future__ import annotations

import sys

import pytest

from semloop import Config

TOML = "[semloop]\ncall_threshold = 0.77\nmax_warnings = 3\n[semloop.tool_overrides.WebSearch]\ncall_threshold = 0.9\n"


def test_python_3_10_reads_toml_with_the_tomli_backport(tmp_path, monkeypatch):
    pytest.importorskip("tomli")  # in the `test` extra: under CI this never skips
    path = tmp_path / "semloop.toml"
    path.write_text(TOML)
    monkeypatch.setattr(sys, "version_info", (3, 10, 14, "final", 0))
    monkeypatch.setitem(sys.modules, "tomllib", None)  # as on 3.10: `import tomllib` fails
    monkeypatch.delitem(sys.modules, "tomli", raising=False)
    config = Config.from_file(path)
    assert "tomli" in sys.modules  # the backport did the parsing
    assert (config.call_threshold, config.max_warnings) == (0.77, 3)
    assert config.for_tool("WebSearch").call_threshold == 0.9


def test_python_3_11_reads_toml_without_the_backport(tmp_path, monkeypatch):
    path = tmp_path / "semloop.toml"
    path.write_text(TOML)
    if sys.version_info >= (3, 11):
        monkeypatch.setitem(sys.modules, "tomli", None)  # the backport is not needed (nor installed) there
    assert Config.from_file(path).max_warnings == 3
