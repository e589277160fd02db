"""The one base of semloop's framework integrations (anthropic, langchain, crewai, ...). Each
integration is its framework's glue around these parts:

* `Extra` and `require(module, extra)`: the framework is imported only when it is used; without
  it, one ImportError line that names the package and the command that installs it
  (`semloop.messages.install_hint`).
* `Sessions`: session (or run) key → its guard, or a record that holds it; the least recently used
  dropped past `KEPT_SESSIONS`. The one session map of every integration.
* `FailOpen`: `with FailOpen(config, what):` — an error inside is logged in one line and never
  reaches the agent (`Config.fail_open`; off, the error is raised).
* `Integration`: what every integration object has — `config`, `verdicts` (the latest warn / stop
  verdicts), `last_stop`, `note()`, `fails_open()`, `guarded()`, `new_guard()`.
* `GuardedRuns`: an `Integration` with one guard per run (or the one given).

Lifting a stop when the user steps in is `LoopGuard.resume()`; a guard kept in a shared store is
`LoopGuard(session=..., store=...)`. docs/architecture.md shows how a new integration is written.
"""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .. import messages
from ..config import Config, fail_open
from ..verdict import Verdict
from . import keep_verdict

if TYPE_CHECKING:  # importing an integration imports neither its framework nor numpy (the guard)
    from ..guard import LoopGuard

KEPT_SESSIONS = 256
"""Sessions (or runs) an integration keeps a guard for; the least recently used is dropped first.
Every integration's `max_sessions=` defaults to it."""

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")


def configured(config: Config | None, overrides: dict[str, Any]) -> Config:
    """`config` (default `Config()`) with keyword overrides, as `LoopGuard(config, **overrides)`."""
    base = config if config is not None else Config()
    return base.replace(**overrides) if overrides else base


# -- the framework, imported on use ---------------------------------------------------------------


@dataclass(frozen=True)
class Extra:
    """An integration's optional framework: the extra that installs it (`name`), the integration
    in words ("Anthropic integration") and what it needs ("the `anthropic` package")."""

    name: str
    integration: str
    package: str

    @property
    def hint(self) -> str:
        """The ImportError's line: `semloop's <integration> needs <package>: pip install ...`."""
        return messages.needs(self.integration, self.package, self.name)


def require(module: str, extra: Extra) -> Any:
    """`module` imported, or ImportError with `extra.hint` (what is missing, and how to install it)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(extra.hint) from exc


# -- one map of sessions ----------------------------------------------------------------------------


class Sessions(OrderedDict[K, V], Generic[K, V]):
    """Session (or run) key → its value: a guard, or a record that holds one. The least recently
    used key is dropped once there are more than `size` (`on_drop(key, value)` is told). `make(key)`
    builds the value of a key seen for the first time (`of`). Safe to share between threads."""

    def __init__(self, make: Callable[[K], V] | None = None, size: int = KEPT_SESSIONS,
                 on_drop: Callable[[K, V], object] | None = None) -> None:
        super().__init__()
        self.make, self.size, self.on_drop = make, size, on_drop
        self.lock = threading.RLock()

    def of(self, key: K, make: Callable[[K], V] | None = None) -> V:
        """The value of `key`, now the most recently used; a key seen for the first time gets
        `make(key)` (default: the map's `make`)."""
        with self.lock:
            if key in self:
                self.move_to_end(key)
                return self[key]
            make = make or self.make
            if make is None:
                raise KeyError(key)
            return self.keep(key, make(key))

    def keep(self, key: K, value: V) -> V:
        """Set `key` to `value` as the most recently used, dropping the least recently used past `size`."""
        with self.lock:
            self[key] = value
            self.move_to_end(key)
            while len(self) > max(self.size, 0):
                dropped, old = self.popitem(last=False)
                if self.on_drop is not None:
                    self.on_drop(dropped, old)
        return value


# -- failing open ---------------------------------------------------------------------------------


class FailOpen:
    """`with FailOpen(config, "plugin"):` — an exception inside is logged in one line ("semloop:
    plugin error, allowing the call: ...") and swallowed, so the agent's call goes on as if semloop
    were not there; the code after the block is the fallback. With `Config(fail_open=False)` the
    exception is raised instead. `failed` tells whether the block failed."""

    def __init__(self, config: Config, what: str, consequence: str = "allowing the call") -> None:
        self.config, self.what, self.consequence = config, what, consequence
        self.failed = False

    def __enter__(self) -> FailOpen:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if not isinstance(exc, Exception):  # no error, or one that is not ours to stop (cancellation)
            return False
        self.failed = True
        fail_open(self.config, exc, self.what, self.consequence)  # raises when fail_open is off
        return True


# -- the integration object -----------------------------------------------------------------------------


class Integration:
    """What every integration object has. `config` (and keyword overrides) configure its guards;
    `verdicts` keeps the latest 256 warn / stop verdicts (`note`), `last_stop` the latest stop.
    `WHAT` names the integration in the fail-open log line."""

    WHAT = "integration"

    def __init__(self, config: Config | None = None, **overrides: Any) -> None:
        self.config = configured(config, overrides)
        self.verdicts: list[Any] = []
        self.last_stop: Verdict | None = None
        self._lock = threading.RLock()  # frameworks run the calls of one turn in threads (smolagents)

    def new_guard(self, key: object = None) -> LoopGuard:
        """A guard for a new session or run (`key` is the session's, for `Sessions(make=...)`)."""
        from ..guard import LoopGuard

        return LoopGuard(self.config)

    def note(self, verdict: Verdict, key: Hashable | None = None) -> Verdict:
        """Keep `verdict` in `verdicts` unless it is "allow" (as a (key, verdict) pair with `key`);
        a stop becomes `last_stop`. Returns `verdict`."""
        if verdict.action != "allow":
            with self._lock:
                keep_verdict(self.verdicts, verdict if key is None else (key, verdict))
                if verdict.action == "stop":
                    self.last_stop = verdict
        return verdict

    def fails_open(self, what: str | None = None, consequence: str = "allowing the call") -> FailOpen:
        """`with self.fails_open(): ...` — see `FailOpen`; `what` defaults to `WHAT`."""
        return FailOpen(self.config, what or self.WHAT, consequence)

    def attempt(self, fn: Callable[[], T], what: str | None = None) -> T | None:
        """`fn()`, failing open: None when it raised."""
        with self.fails_open(what):
            return fn()
        return None

    def guarded(self, fn: Callable[[], Verdict], what: str | None = None) -> Verdict | None:
        """`fn()` (a guard call: `LoopGuard` is thread-safe itself), failing open (None when it
        raised); the verdict noted."""
        with self.fails_open(what):
            return self.note(fn())
        return None


class GuardedRuns(Integration):
    """An integration with one guard per run: `_new_run()` when a run starts, `_run_guard()` for
    the current run's guard. `guard` keeps that one guard across runs instead (its config is then
    the integration's)."""

    def __init__(self, config: Config | None = None, *, guard: LoopGuard | None = None) -> None:
        super().__init__(config if config is not None or guard is None else guard.config)
        self.guard = guard
        self._guard: LoopGuard | None = guard

    def _new_run(self) -> None:
        """The next guard call starts a new run: a fresh guard, unless one was given."""
        self._guard = self.guard

    def _run_guard(self) -> LoopGuard:
        with self._lock:
            if self._guard is None:
                self._guard = self.new_guard()
            return self._guard


# -- what the guard sees, what the model gets -----------------------------------------------------


def error_text(exc: BaseException) -> str:
    """A tool's exception as the guard records it (and the model would read it): "Type: message"."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def append_text(content: Any, text: str) -> Any:
    """Message or tool-result content with `text` after it: a string joined, a list of content
    blocks with one more text block, nothing replaced by `text`."""
    if content is None or content == "" or content == []:
        return text
    if isinstance(content, list):
        return [*content, {"type": "text", "text": text}]
    return f"{content}\n\n{text}"
