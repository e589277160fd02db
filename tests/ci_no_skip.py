"""pytest plugin (loaded by tests/conftest.py): under CI, a skip is a failure.

CI installs every extra (`.[all]`), so a test that skips there is hiding something: a missing
dependency, or an ImportError raised by semloop itself behind a `try/except ImportError`. With the
environment variable CI set (CI=true, as `.ci/run` and most CI services set it), every skip -- a
skipped test, or a test module skipped at collection (`pytest.importorskip`) -- is reported as a
failure that carries the skip's reason. Outside CI, skips stay skips, and their reasons are
always printed (`-rs`)."""

from __future__ import annotations

import os

import pytest


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pytest_configure(config):
    chars = config.option.reportchars or ""
    if not any(c in chars for c in "saA"):
        config.option.reportchars = chars + "s"  # `-rs`: say why anything skipped


def _skip_reason(longrepr) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (path, lineno, "Skipped: reason")
        return f"{longrepr[2]} ({longrepr[0]}:{longrepr[1]})"
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if under_ci() and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI (CI={os.environ.get('CI')}): {_skip_reason(report.longrepr)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if under_ci() and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"module skipped under CI (CI={os.environ.get('CI')}): {_skip_reason(report.longrepr)}"
