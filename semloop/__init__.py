"""semloop — stop LLM agents from spinning in tool-call loops.

Flow (one module each): a call → `features` (signatures, text, result fingerprint) and
`embeddings` → `signals` (pure functions over the bounded `state`) → `policy` (warn → stop) →
`verdict`. `LoopGuard` ties them together; `integrations/` and `cli` sit at the edges.
"""

from .config import Config
from .guard import LoopGuard
from .verdict import Signal, Verdict

__all__ = ["LoopGuard", "Config", "Verdict", "Signal"]
__version__ = "0.1.0"
