import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def semloop_cmd():
    """The installed console script, run as a real subprocess (falls back to `python -m semloop`)."""
    import shutil

    exe = shutil.which("semloop")
    return [exe] if exe else [sys.executable, "-m", "semloop"]
