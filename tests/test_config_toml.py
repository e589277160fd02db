"""TOML config files on every supported Python: `tomllib` on 3.11+, the `tomli` backport on 3.10
(`requires-python >= 3.10`; pyproject declares `tomli; python_version < "3.11"`)."""

from __future__ import annotations

import sys

import pytest

from semloop import Config, LoopGuard
from semloop.config import Thresholds

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


THRESHOLDS_TOML = """[semloop]
call_threshold = 0.8
[semloop.thresholds]
same_facts = 0.9
[semloop.tool_overrides.Bash]
fact_result = 0
call_threshold = 0.7
"""


def test_detection_thresholds_are_set_in_a_config_file_and_per_tool(tmp_path):
    """`[semloop.thresholds]` sets `Config.thresholds`; a tool's overrides may name any threshold,
    and the guard's feature extraction and detection read the tool's value."""
    path = tmp_path / "semloop.toml"
    path.write_text(THRESHOLDS_TOML)
    config = Config.from_file(path)
    assert config.thresholds == Thresholds(same_facts=0.9)
    bash = config.for_tool("Bash")
    assert (bash.call_threshold, bash.thresholds.fact_result, bash.thresholds.same_facts) == (0.7, 0, 0.9)
    assert config.for_tool("Read") is config and config.thresholds.fact_result == Thresholds().fact_result
    assert Config.from_dict(config.to_dict()) == config
    guard = LoopGuard(config, embedding="hashing")
    # brief results are compared by the facts they state; with fact_result = 0 no Bash result is brief
    assert guard._step("Bash", {"command": "pip show numpy"}, "Version: 2.1.4", False).facts == frozenset()
    assert guard._step("python", {"code": "numpy.__version__"}, "Version: 2.1.4", False).facts == {"2.1.4"}


@pytest.mark.parametrize(("data", "error"), [
    ({"thresholds": {"same_fact": 0.9}}, "unknown threshold"),
    ({"thresholds": {"same_facts": 1.5}}, r"thresholds.same_facts must be in \[0, 1\]"),
    ({"thresholds": {"fact_result": 2.5}}, "thresholds.fact_result must be an integer"),
    ({"thresholds": 3}, "thresholds must be a table"),
    ({"tool_overrides": {"Bash": {"fact_result": -1}}}, r"tool_overrides\['Bash'\]: thresholds.fact_result"),
    ({"tool_overrides": {"Bash": {"windw": 3}}}, "cannot be set per tool"),
])
def test_bad_thresholds_are_one_clear_error(data, error):
    with pytest.raises(ValueError, match=error):
        Config.from_dict(data)
