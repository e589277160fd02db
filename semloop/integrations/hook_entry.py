"""The start of a hook process: `semloop hook <target> [options]`, read without argparse.

An agent CLI runs a hook command once per event (two or three per tool call), so what the process
imports before it answers is paid on every call. `semloop.cli.main` hands `hook` here first: the
few options of the hook command are read by hand, and the process imports only the translation
table (`hook_cli`) and the warm server's client (`hook_protocol`: json, os, socket); the core
(numpy, the embedding model) is imported only when the event is handled in this process.
Anything this reader does not know — `--help`, an unknown target or option, a bad value — returns
None, and the full argument parser of `semloop hook` takes over (its help, its one-line errors).
"""

from __future__ import annotations

from types import SimpleNamespace

# the options of `semloop hook` (hook_install.add_cli registers the same ones for argparse)
_VALUES = {"--config": "config", "--db": "db", "--server-timeout": "server_timeout"}
_FLAGS = {"--no-server": "no_server", "--guidance": "guidance"}


def parse(argv: list[str]) -> SimpleNamespace | None:
    """`<target> [--config PATH] [--db PATH] [--no-server] [--server-timeout S] [--guidance]` →
    the namespace the hook commands read, or None when argparse should read `argv` instead."""
    from .hook_cli import DIALECTS

    if not argv or argv[0] not in DIALECTS:
        return None
    args = SimpleNamespace(target=argv[0], config=None, db=None, server_timeout=None, no_server=False,
                           guidance=False)
    rest = argv[1:]
    i = 0
    while i < len(rest):
        word = rest[i]
        if word in _FLAGS:
            setattr(args, _FLAGS[word], True)
            i += 1
            continue
        name, eq, value = word.partition("=")
        if name not in _VALUES:
            return None
        if not eq:
            if i + 1 >= len(rest) or rest[i + 1].startswith("-"):
                return None
            value = rest[i + 1]
            i += 1
        i += 1
        if name == "--server-timeout":
            try:
                args.server_timeout = float(value)
            except ValueError:
                return None
        else:
            setattr(args, _VALUES[name], value)
    return args


def run_hook_command(argv: list[str]) -> int | None:
    """Run `semloop hook` with `argv` (what follows "hook"), or None if argparse must read it."""
    args = parse(argv)
    if args is None:
        return None
    from .hook_cli import cmd_hook

    return cmd_hook(args)
