"""semloop — stop LLM agents from spinning in tool-call loops.

Flow (one module each): a call → `features` (signatures, text, result fingerprint) and
`embeddings` → `same_action` ("is this the same action?") → `novelty` ("did this step bring new
information?") → `signals` (pure functions over the bounded `state`) → `policy` (warn → stop) →
`verdict`. `LoopGuard` ties them together; `integrations/` and `cli` sit at the edges. Every
threshold is a field of `Config` or of its `Config.thresholds` (`Thresholds`).

`LoopGuard` is imported on first use (PEP 562), so that `import semloop` — and the console
script's hook client — start without numpy.
"""

from typing import TYPE_CHECKING, Any

from .config import Config, Thresholds
from .guidance import guidance
from .verdict import LoopStopped, Signal, Verdict

if TYPE_CHECKING:  # pragma: no cover
    from . import scan
    from .guard import LoopGuard

__all__ = ["LoopGuard", "Config", "Thresholds", "Verdict", "Signal", "LoopStopped", "guidance", "scan"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "LoopGuard":
        from .guard import LoopGuard

        return LoopGuard
    if name == "scan":  # the module is callable: `semloop.scan(traces)` (see semloop/scan.py)
        import importlib

        return importlib.import_module(".scan", __name__)
    raise AttributeError(f"module 'semloop' has no attribute {name!r}")
