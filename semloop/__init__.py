"""semloop — stop LLM agents from spinning in tool-call loops.

Flow (one module each): a call → `features` (signatures, text, result fingerprint) and
`embeddings` → `same_action` ("is this the same action?") → `novelty` ("did this step bring new
information?") → `signals` (pure functions over the bounded `state`) → `policy` (warn → stop) →
`verdict`. `LoopGuard` ties them together; `integrations/` and `cli` sit at the edges. Every
threshold is a field of `Config` or of its `Config.thresholds` (`Thresholds`).

`LoopGuard`, `Config` and the verdict types are imported on first use (PEP 562), so that
`import semloop` — and the console script's hook client — start without numpy or dataclasses.
"""

from __future__ import annotations

from .guidance import guidance

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (hook processes start faster)

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from . import scan
    from .config import Config, Thresholds
    from .guard import LoopGuard
    from .verdict import LoopStopped, Signal, Verdict

# name → the module that defines it, imported on first use (the hook client needs none of them)
_LAZY = {"LoopGuard": ".guard", "Config": ".config", "Thresholds": ".config", "Verdict": ".verdict",
         "Signal": ".verdict", "LoopStopped": ".verdict"}

__all__ = ["LoopGuard", "Config", "Thresholds", "Verdict", "Signal", "LoopStopped", "guidance", "scan"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    if name == "scan":  # the module is callable: `semloop.scan(traces)` (see semloop/scan.py)
        import importlib

        return importlib.import_module(".scan", __name__)
    raise AttributeError(f"module 'semloop' has no attribute {name!r}")
