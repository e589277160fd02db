"""What the hook-style integrations (smolagents, Strands Agents, Agent Framework) share: importing
their framework with an install hint, one guard per run (or the one given), and every guard call
failing open while its warn / stop verdicts are kept."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

from ..config import Config, fail_open
from ..guard import LoopGuard
from ..verdict import Verdict
from . import keep_verdict


def require(module: str, hint: str) -> Any:
    """`module` imported, or ImportError with `hint` (how to install the extra)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(hint) from exc


class GuardedRuns:
    """The guard of the current run and the verdicts seen. `config` configures each run's guard;
    `guard` keeps that one guard across runs instead. `verdicts` holds the last 256 warn / stop
    verdicts, `last_stop` the latest stop."""

    WHAT = "integration"  # names the integration in the fail-open log line

    def __init__(self, config: Config | None = None, *, guard: LoopGuard | None = None) -> None:
        self.config = config
        self.guard = guard
        self.verdicts: list[Verdict] = []
        self.last_stop: Verdict | None = None
        self._guard: LoopGuard | None = guard
        self._lock = threading.RLock()  # frameworks run the calls of one turn in threads (smolagents)

    def _new_run(self) -> None:
        """The next guard call starts a new run: a fresh guard, unless one was given."""
        self._guard = self.guard

    def _run_guard(self) -> LoopGuard:
        with self._lock:
            if self._guard is None:
                self._guard = LoopGuard(self.config)
            return self._guard

    def _guarded(self, fn: Callable[[], Verdict]) -> Verdict | None:
        """`fn()` (a guard call), failing open: None when it raised."""
        try:
            with self._lock:
                verdict = fn()
        except Exception as exc:
            fail_open(self.config or Config(), exc, self.WHAT)
            return None
        if verdict.action != "allow":
            keep_verdict(self.verdicts, verdict)
        return verdict
