"""Integrations with agent SDKs, frameworks and CLIs. Each module imports its framework only when
used. What they all do alike lives here: keep a bounded list of the verdicts they saw, and fail
open when the detector itself fails."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("semloop")

KEPT_VERDICTS = 256  # an integration's `.verdicts` keeps the latest ones: a long-lived handler stays small


def keep_verdict(verdicts: list, item: Any) -> None:
    """Append `item` (a verdict, or a (key, verdict) pair) to an integration's `.verdicts`."""
    verdicts.append(item)
    del verdicts[:-KEPT_VERDICTS]


def fail_open(config: Any, exc: Exception, what: str, consequence: str = "allowing the call") -> None:
    """A detector failure must not kill the agent's run: log it and let the call go on — unless
    `config.fail_open` is off, then re-raise. `what` names the failing part in the log line."""
    if not config.fail_open:
        raise exc
    log.warning("semloop: %s error, %s: %r", what, consequence, exc)
