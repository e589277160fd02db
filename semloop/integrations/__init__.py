"""Integrations with agent SDKs, frameworks and CLIs. Each module imports its framework only when
used. The framework integrations are built on `_base` (session map, failing open, `require`); the
one thing every integration, hooks included, does alike lives here: keep a bounded list of the
verdicts they saw. (Failing open itself is `config.fail_open`, shared with `LoopGuard`.)"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (hook processes start faster)

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

KEPT_VERDICTS = 256  # an integration's `.verdicts` keeps the latest ones: a long-lived handler stays small


def keep_verdict(verdicts: list, item: Any) -> None:
    """Append `item` (a verdict, or a (key, verdict) pair) to an integration's `.verdicts`."""
    verdicts.append(item)
    del verdicts[:-KEPT_VERDICTS]
