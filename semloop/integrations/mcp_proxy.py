"""semloop as an MCP proxy (`pip install "semloop-guard[mcp]"`): `semloop mcp-proxy -- <server command …>`.

Any MCP client (Claude Desktop, Cursor, Claude Code, ...) talks to the proxy over stdio instead of
to the server itself; the proxy starts the real ("upstream") server as a subprocess and forwards
everything to it:

* `tools/list`, `resources/*`, `prompts/*`, `completion/complete`: forwarded unchanged (only the
  capabilities the upstream server declares are offered).
* `tools/call`: `LoopGuard.check` first. A call that continues a loop already warned about to the
  limit (or any call after a stop) is not forwarded: the client gets an error result that says
  why. Otherwise the call is forwarded, and `LoopGuard.record` sees its result. On "warn" the
  real result comes back with semloop's note as one more text block; on "stop" with the
  explanation appended. `isError`, `structuredContent` and `_meta` are kept as they are.

One `LoopGuard` per proxy process, which is one client session. MCP clients keep a server
process for a long time (across conversations, in Claude Desktop), and the proxy cannot see a new
user message; so a stop is lifted after `resume_after` seconds without tool calls (the loop
memory is kept: the same loop is flagged again at once).

When the upstream exits (it crashed, or quit), the proxy exits too, with the upstream's exit
status, as a client running the server directly would see it: it does not stay up answering
"Connection closed" (-32000), and a call lost with the upstream is never recorded as a repeat.

Fails open: if semloop itself hits an error, the call is forwarded unchanged. Not forwarded:
the upstream's own requests to the client (sampling, elicitation, roots) and its notifications
(list changes, log messages, progress).

`mcp` is imported only when the proxy runs: `semloop.cli` imports this module for its `add_cli`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, NamedTuple

from ..config import Config
from ..verdict import Verdict
from ._base import Extra, Integration, require

__all__ = ["GuardedTools", "run_proxy", "serve_stdio"]

log = logging.getLogger("semloop")

EXTRA = Extra("mcp", "MCP proxy", "the `mcp` package (2.x)")
INSTALL_HINT = EXTRA.hint
DEFAULT_RESUME_AFTER = 120.0  # seconds without tool calls after which a stop is lifted
CONNECTION_CLOSED = -32000  # the JSON-RPC error code `mcp` gives a request whose connection closed
UPSTREAM_STOP_GRACE = 2.0  # seconds the upstream gets to exit after its stdin closes (then SIGTERM, SIGKILL)
STOP_NOTE = ("No tool of this server will run for now. Telling the user what is blocking progress "
             "lets them decide how to go on.")


class GuardedTools(Integration):
    """The proxy's `tools/call` logic over an upstream `mcp.ClientSession`: check, forward,
    record, annotate. One guard for the client session.

    `call(params)` takes and returns the SDK's own objects (`CallToolRequestParams` →
    `CallToolResult`), so it also works inside your own `mcp.server.Server` handlers.
    """

    WHAT = "detector"

    def __init__(self, upstream: Any, config: Config | None = None, *, guard: Any = None,
                 resume_after: float = DEFAULT_RESUME_AFTER, clock: Any = time.monotonic) -> None:
        from ..guard import LoopGuard
        from ..messages import with_resume

        self.upstream = upstream
        if guard is None:  # its refusals say how a stop is lifted here: a quiet spell
            guard = LoopGuard(with_resume(config or Config(), "resume_mcp", seconds=f"{resume_after:g}"))
        super().__init__(guard.config)
        self.guard = guard
        self.resume_after = resume_after
        self.clock = clock
        self.upstream_status: int | None = None  # the upstream's exit status, once it exited (run_proxy)
        self._last_call: float | None = None

    async def call(self, params: Any) -> Any:
        from mcp import types

        name, arguments = params.name, params.arguments or {}
        verdict = self._check(name, arguments)
        if verdict is not None and verdict.action == "stop":
            text = f"{verdict.message}\n\n{STOP_NOTE}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        try:
            result = await self.upstream.send_request(types.CallToolRequest(params=params), types.CallToolResult)
        except Exception as exc:
            from mcp import MCPError

            # the upstream answered with a JSON-RPC error: still a result. A closed connection is
            # not an answer (the upstream is gone: the proxy exits), so it is never a repeat
            if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:
                self._record(name, arguments, exc.message, True)
            raise
        verdict = self._record(name, arguments, _plain(result), bool(result.is_error))
        if verdict is None or verdict.action == "allow" or not verdict.message:
            return result
        note = verdict.message if verdict.action == "warn" else f"{verdict.message}\n\n{STOP_NOTE}"
        content = [*result.content, types.TextContent(type="text", text=note)]
        return result.model_copy(update={"content": content})

    def _check(self, name: str, arguments: Any) -> Verdict | None:
        with self.fails_open(consequence="forwarding the call"):
            now = self.clock()
            if (self.guard.stopped and self._last_call is not None
                    and now - self._last_call >= self.resume_after):
                self.guard.resume()  # a quiet spell: the user has stepped in
            self._last_call = now
            return self.note(self.guard.check(name, arguments))
        return None

    def _record(self, name: str, arguments: Any, output: Any, is_error: bool) -> Verdict | None:
        with self.fails_open(consequence="forwarding the call"):
            return self.note(self.guard.record(name, arguments, output, is_error=is_error))
        return None

    def note(self, verdict: Verdict, key: Any = None) -> Verdict:
        """`Integration.note`, and a line in the log (`semloop mcp-proxy --verbose`)."""
        if verdict.action != "allow":
            log.info("semloop: %s at step %d: %s", verdict.action, verdict.step, verdict.message)
        return super().note(verdict, key)


def _plain(result: Any) -> Any:
    """A `CallToolResult` as the guard reads it: its content blocks as dicts (the structured
    content when there are none)."""
    blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in result.content]
    if not blocks and result.structured_content is not None:
        return result.structured_content
    return blocks


def build_server(upstream: Any, initialized: Any, tools: GuardedTools) -> Any:
    """An `mcp.server.Server` that offers what `upstream` offers (per its `InitializeResult`),
    forwarding each request, with `tools/call` going through `tools`."""
    from mcp import types
    from mcp.server import Server

    def forward(request_type: Any, result_type: Any) -> Any:
        async def handler(ctx: Any, params: Any) -> Any:
            return await upstream.send_request(request_type(params=params), result_type)

        return handler

    async def call_tool(ctx: Any, params: Any) -> Any:
        return await tools.call(params)

    caps = initialized.capabilities
    handlers: dict[str, Any] = {}
    if caps.tools is not None:
        handlers.update(on_list_tools=forward(types.ListToolsRequest, types.ListToolsResult), on_call_tool=call_tool)
    if caps.resources is not None:
        handlers.update(
            on_list_resources=forward(types.ListResourcesRequest, types.ListResourcesResult),
            on_list_resource_templates=forward(types.ListResourceTemplatesRequest,
                                               types.ListResourceTemplatesResult),
            on_read_resource=forward(types.ReadResourceRequest, types.ReadResourceResult))
    if caps.prompts is not None:
        handlers.update(on_list_prompts=forward(types.ListPromptsRequest, types.ListPromptsResult),
                        on_get_prompt=forward(types.GetPromptRequest, types.GetPromptResult))
    if caps.completions is not None:
        handlers.update(on_completion=forward(types.CompleteRequest, types.CompleteResult))
    info = initialized.server_info
    return Server(info.name, version=info.version or "", title=info.title,
                  instructions=initialized.instructions, **handlers)


class Upstream(NamedTuple):
    """The upstream server process, the two streams an `mcp.ClientSession` talks over, and an
    event set when the upstream's stdout has ended (it exited, or closed it)."""

    process: Any
    read_stream: Any
    write_stream: Any
    ended: Any


@contextlib.asynccontextmanager
async def spawn_upstream(command: Sequence[str], env: dict[str, str] | None = None,
                         cwd: str | None = None) -> AsyncIterator[Upstream]:
    """Start the upstream MCP server (stdio: one JSON-RPC message per line each way; its stderr is
    ours) and hold its process, so the proxy knows when it exits and with what status. On exit:
    stdin closed, `UPSTREAM_STOP_GRACE` seconds to exit, then SIGTERM, then SIGKILL."""
    import anyio
    from mcp import types
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(list(command), env=env, cwd=cwd, stderr=None)
    stdout, stdin = process.stdout, process.stdin
    assert stdout is not None and stdin is not None  # (opened as pipes)
    to_session, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, from_session = anyio.create_memory_object_stream[Any](0)
    ended = anyio.Event()

    async def reader() -> None:
        buffer = b""
        async with to_session:
            try:
                async for chunk in stdout:
                    *lines, buffer = (buffer + chunk).split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        try:
                            message: Any = SessionMessage(types.jsonrpc_message_adapter.validate_json(line))
                        except ValueError as exc:  # the session reports it
                            message = exc
                        await to_session.send(message)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass
            finally:
                ended.set()

    async def writer() -> None:
        async with from_session:
            try:
                async for message in from_session:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(text.encode("utf-8") + b"\n")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                await to_session.aclose()  # the upstream stopped reading: the session sees the end

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield Upstream(process, read_stream, write_stream, ended)
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
            tg.cancel_scope.cancel()


async def _stop(process: Any) -> None:
    import anyio

    with contextlib.suppress(Exception):
        await process.stdin.aclose()
    for signal_process in (None, process.terminate, process.kill):
        if signal_process is not None:
            with contextlib.suppress(ProcessLookupError):
                signal_process()
        with anyio.move_on_after(UPSTREAM_STOP_GRACE):
            while process.returncode is None:
                await anyio.sleep(0.02)
        if process.returncode is not None:
            return


async def run_proxy(command: Sequence[str], read_stream: Any, write_stream: Any, *,
                    config: Config | None = None, resume_after: float = DEFAULT_RESUME_AFTER,
                    env: dict[str, str] | None = None, cwd: str | None = None,
                    on_upstream_exit: Callable[[int | None], Any] | None = None) -> GuardedTools:
    """Start `command` as the upstream MCP server and serve the proxy on the given streams until
    the client disconnects or the upstream exits: then `tools.upstream_status` is its exit status
    (None if it did not exit within `UPSTREAM_STOP_GRACE` of closing its stdout), and
    `on_upstream_exit(status)` is called first. The upstream gets this process's environment
    (`env`: instead)."""
    require("mcp.server", EXTRA)
    import anyio
    from mcp import ClientSession

    if not command:
        raise ValueError("no upstream server command: semloop mcp-proxy -- <command> [args ...]")
    async with spawn_upstream(command, dict(os.environ) if env is None else env, cwd) as up, \
            ClientSession(up.read_stream, up.write_stream) as upstream:
        initialized = await upstream.initialize()
        tools = GuardedTools(upstream, config, resume_after=resume_after)
        server = build_server(upstream, initialized, tools)
        async with anyio.create_task_group() as tg:
            async def serve() -> None:
                await server.run(read_stream, write_stream, server.create_initialization_options())
                if not up.ended.is_set():  # the client is gone (if the upstream went first, `watch` ends it all)
                    tg.cancel_scope.cancel()

            async def watch() -> None:
                await up.ended.wait()
                # its exit status (not process.wait(): a child may hold the pipes)
                with anyio.move_on_after(UPSTREAM_STOP_GRACE):
                    while up.process.returncode is None:
                        await anyio.sleep(0.02)
                tools.upstream_status = up.process.returncode
                if on_upstream_exit is not None:
                    on_upstream_exit(tools.upstream_status)
                tg.cancel_scope.cancel()  # the upstream is gone: so is the proxy

            tg.start_soon(serve)
            tg.start_soon(watch)
        return tools


async def serve_stdio(command: Sequence[str], **options: Any) -> GuardedTools:
    """`run_proxy` on this process's stdin / stdout. When the upstream exits, so does this
    process, at once and with the upstream's exit status (a signal N gives 128 + N; 1 if unknown),
    as a client running the server directly sees it: the reader of stdin sits in a thread that only
    a new message from the client would wake, so nothing short of an exit ends it."""
    require("mcp.server", EXTRA)
    from mcp.server.stdio import stdio_server

    def exit_with(status: int | None) -> None:
        print(f"semloop: the upstream MCP server ({' '.join(command)}) exited with status {status}; "
              "the proxy exits too", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(1 if status is None else status if status >= 0 else 128 - status)

    async with stdio_server() as (read_stream, write_stream):
        return await run_proxy(command, read_stream, write_stream, on_upstream_exit=exit_with, **options)


# -- command line ---------------------------------------------------------------------------------


def cmd_mcp_proxy(args: Any) -> int:
    import anyio

    from ..cli import build_config

    command = list(args.upstream)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("semloop: error: no upstream server command: semloop mcp-proxy -- <command> [args ...]",
              file=sys.stderr)
        return 2
    try:
        require("mcp.server", EXTRA)
    except ImportError as exc:
        print(f"semloop: error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(message)s")  # stdout is the MCP channel: logs go to stderr only
    config = build_config(args)
    try:
        anyio.run(lambda: serve_stdio(command, config=config, resume_after=args.resume_after))
    except KeyboardInterrupt:
        return 0
    except Exception as exc:  # the upstream could not be started, or it broke the connection
        cause = _leaf(exc)
        print(f"semloop: error: the upstream MCP server ({' '.join(command)}) failed: "
              f"{type(cause).__name__}: {cause}", file=sys.stderr)
        return 1
    return 0


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups of anyio's task groups."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def add_cli(subparsers: Any) -> None:
    import argparse

    p = subparsers.add_parser(
        "mcp-proxy", help="run an MCP server behind semloop (stdio)",
        description="An MCP server over stdio that starts the upstream server, forwards everything to "
                    "it, and watches tools/call for loops: a note on warn, a refusal on stop.",
        usage="semloop mcp-proxy [options] -- <upstream server command> [args ...]")
    p.add_argument("--config", metavar="PATH", help="JSON or TOML semloop config file")
    p.add_argument("--resume-after", type=float, default=DEFAULT_RESUME_AFTER, metavar="SECONDS",
                   help=f"lift a stop after this many seconds without tool calls (default {DEFAULT_RESUME_AFTER:g})")
    p.add_argument("--verbose", action="store_true", help="log each warn / stop on stderr")
    p.add_argument("upstream", nargs=argparse.REMAINDER, help="the upstream server's command line, after --")
    p.set_defaults(func=cmd_mcp_proxy)
