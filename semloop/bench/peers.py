"""Other projects' loop detectors, run through their own packages (not re-implementations).

`agent-loop-guard` (PyPI; import name `loop_guard`, installed by the `bench` extra): sliding-window
similarity scoring over tool, arguments and output. Its `check(tool, args, output)` answers
CONTINUE, WARN, STOP or ESCALATE; a trace is flagged at its first WARN or worse and stopped at its
first STOP or ESCALATE, with the package's default settings.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import features
from .metrics import TraceOutcome
from .runner import Prepared


def _agent_loop_guard() -> Callable[[Prepared], TraceOutcome]:
    from loop_guard import Action, LoopGuard

    def run(p: Prepared) -> TraceOutcome:
        guard = LoopGuard()
        first_flag = first_stop = None
        for i, step in enumerate(p.trace.steps):
            args = step.input if isinstance(step.input, (dict, str)) or step.input is None else {"input": step.input}
            decision = guard.check(str(step.tool), args, features.render_value(step.output))
            if decision.action != Action.CONTINUE and first_flag is None:
                first_flag = i
            if decision.action in (Action.STOP, Action.ESCALATE):
                first_stop = i
                break
        return p.outcome(first_flag, first_stop)

    return run


PEERS: dict[str, Callable[[], Callable[[Prepared], TraceOutcome]]] = {"agent-loop-guard": _agent_loop_guard}


def available() -> list[str]:
    """The peers whose package is installed."""
    out = []
    for name, load in PEERS.items():
        try:
            load()
        except ImportError:
            continue
        out.append(name)
    return out


def replay(name: str, p: Prepared) -> TraceOutcome:
    return PEERS[name]()(p)
