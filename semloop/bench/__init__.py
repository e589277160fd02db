"""`semloop bench` and `semloop calibrate`: detectors measured on labeled traces.

Benchmark names → (detector, embedding backend). Kept here, numpy-free, so that building the
CLI parser (which every `semloop` command does, hooks included) stays cheap.
"""

DETECTORS: dict[str, tuple[str, str | None]] = {
    "exact": ("exact", None),
    "normalized": ("normalized", None),
    "count": ("count", None),
    "semantic": ("semantic", "static"),
    "semantic-st": ("semantic", "sentence-transformers"),
    "semantic-hashing": ("semantic", "hashing"),
    "openhands": ("openhands", None),
    "gemini-cli": ("gemini-cli", None),
    "roo-code": ("roo-code", None),
    "crewai": ("crewai", None),
}

PEERS: tuple[str, ...] = ("agent-loop-guard",)
"""Other projects' detectors, run through their own packages (`semloop.bench.peers`)."""
