"""The synthetic trajectory generator behind benchmarks/generate.py (see benchmarks/GENERATOR.md)."""
# Ctx.pool needs every module's constant lists counted, which assemble does once it has imported them all:
# importing any part of the package imports assemble first.
from . import assemble  # noqa: F401
