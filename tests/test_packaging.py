"""The distribution is `semloop-guard` (`semloop` on PyPI is another project): every install hint
names it, the name and the version each live in one place. The built wheel itself is installed and
run by .ci/wheel-smoke."""

import os
import re
import sys

import semloop
from conftest import ROOT
from semloop.messages import DISTRIBUTION, install_hint

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# `pip install semloop`, `pip install -U 'semloop'`, and an extra of the bare name anywhere
# ("semloop[redis]", 'semloop[st]', `semloop[all]`): each would install the other project
BARE_INSTALL = re.compile(r"pip3? install\s+(?:-[-\w]+\s+)*[\"']?semloop(?![-\w])")
BARE_EXTRA = re.compile(r"(?<![\w./-])semloop\[")
SKIP_DIRS = {".git", ".venv", ".venv-crewai", ".gemini-cli", "node_modules", "build", "dist", "__pycache__",
             ".hypothesis", ".ruff_cache", ".mypy_cache", "mutants", "results"}
TEXT = {".py", ".md", ".toml", ".sh", ".txt", ".cfg", ".ini", ".yml", ".yaml", ".json", ".html", ""}


def _text_files():
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        for name in files:
            path = os.path.join(folder, name)
            if os.path.splitext(name)[1] in TEXT and os.path.getsize(path) < 2_000_000:
                yield path


def _pyproject():
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def test_no_install_hint_names_the_other_project():
    here = os.path.abspath(__file__)
    found = []
    for path in _text_files():
        if path == here:
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                if BARE_INSTALL.search(line) or BARE_EXTRA.search(line):
                    found.append(f"{os.path.relpath(path, ROOT)}:{number}: {line.strip()}")
    assert not found, "install hints naming PyPI's other `semloop`:\n" + "\n".join(found)


def test_the_patterns_catch_the_old_hints():
    for old in ("pip install semloop", "pip install 'semloop[ray]'", 'pip install -U "semloop[st]"',
                "runtime_env={'pip': ['semloop[ray]']}", "not part of `semloop[all]`"):
        assert BARE_INSTALL.search(old) or BARE_EXTRA.search(old), old
    for new in (install_hint("ray"), "pip install semloop-guard", 'pip install -e ".[mcp]"', "import semloop",
                "pip install semloop_guard-0.1.0-py3-none-any.whl"):
        assert not (BARE_INSTALL.search(new) or BARE_EXTRA.search(new)), new


def test_distribution_name_and_version_have_one_source():
    project = _pyproject()["project"]
    assert project["name"] == DISTRIBUTION == "semloop-guard"
    assert "version" not in project and project["dynamic"] == ["version"]
    setuptools = _pyproject()["tool"]["setuptools"]
    assert setuptools["dynamic"]["version"] == {"attr": "semloop.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", semloop.__version__)
    # the `all` extra refers to this distribution's own extras, not the other project's
    (everything,) = project["optional-dependencies"]["all"]
    assert everything.startswith(f"{DISTRIBUTION}[")


def test_the_package_carries_its_data_and_marker():
    data = _pyproject()["tool"]["setuptools"]["package-data"]
    for pattern in data["semloop"]:
        assert list((ROOT / "semloop").glob(pattern)), pattern
    assert "py.typed" in data["semloop"] and (ROOT / "semloop" / "py.typed").exists()
    assert list((ROOT / "models").glob(data["semloop._models"][0]))
