"""One coding session for the real-CLI edit → rerun tests: a settings file edited one line at a
time, and a check run after every edit. With `STUCK` the check prints the same failure after every
edit (a loop: the third run with nothing moved gets the note); with `MOVING` it reads what the
edits change and prints another total each time, then passes (progress: nothing added anywhere).
Each CLI test scripts the calls with its own edit, read and shell tools."""

from __future__ import annotations

import sys
from pathlib import Path

SETTINGS = 'MODE = "fast"\nUNIT = "cm"\nROUNDING = "floor"\n'
EDITS = [('MODE = "fast"', 'MODE = "exact"'), ('UNIT = "cm"', 'UNIT = "mm"'), ('ROUNDING = "floor"', 'ROUNDING = "half"')]
EDITED = "".join(f"{new}\n" for _, new in EDITS)
CHECK = ("import sys\nfrom pathlib import Path\n"
         "text = Path('settings.py').read_text()\n"
         "total = {total}\n"
         "print(f'total is {{total}}, expected 42')\n"
         "sys.exit(0 if total == 42 else 1)\n")
RUN_CHECK = f"{sys.executable} check.py"
STUCK = "7"
MOVING = '14 * sum(word in text for word in ("exact", "mm", "half"))'
STUCK_OUTPUT = "total is 7, expected 42"
MOVING_TOTALS = ["14", "28", "42"]


def prepare(work: Path, total: str) -> Path:
    """Write settings.py and check.py into `work`; returns the settings file's path."""
    (work / "settings.py").write_text(SETTINGS)
    (work / "check.py").write_text(CHECK.format(total=total))
    return work / "settings.py"


def totals(check_outputs: list[str]) -> list[str]:
    """The total each run of the check printed."""
    return [out.split("total is ", 1)[1].split(",")[0] for out in check_outputs if "total is " in out]
