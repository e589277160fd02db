"""docs/google-adk.md's example, run as written with a scripted model in place of Gemini: `ask`
works on a session id it has not seen (it raised SessionNotFoundError: no session was created)."""

from __future__ import annotations

import asyncio
import re

import pytest

pytest.importorskip("google.adk")
from conftest import ROOT  # noqa: E402
from test_google_adk import Scripted  # noqa: E402


def test_the_documented_ask_runs_a_conversation():
    page = (ROOT / "docs" / "google-adk.md").read_text()
    code = re.findall(r"```python\n(.*?)```", page, re.S)[0]
    assert 'model="gemini-2.5-flash"' in code
    script = lambda done: ("read_file", {"path": "/etc/app.yaml"}) if done == 0 else "done"  # noqa: E731
    namespace: dict = {"__name__": "doc_example", "scripted": Scripted(script=script)}
    exec(code.replace('model="gemini-2.5-flash"', "model=scripted"), namespace)
    ask = namespace["ask"]
    assert asyncio.run(ask("s1", "Fix the failing tests.")) == "done"
    assert asyncio.run(ask("s1", "And again?")) == "done"  # the same session, now existing
    assert asyncio.run(ask("s2", "A second conversation.")) == "done"
