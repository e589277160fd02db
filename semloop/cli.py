"""`semloop` command line: scan, bench, calibrate, demo, and the Claude Code hook commands.

Subcommands import what they need when they run, so `semloop hook` starts fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .config import DETECTORS, EMBEDDINGS, Config
from .store import StoreError
from .traces import FORMATS, TraceError


def build_config(args: argparse.Namespace) -> Config:
    """--config file, then --detector / --threshold / --embedding on top."""
    config = Config.from_file(args.config) if getattr(args, "config", None) else Config()
    changes = {}
    if getattr(args, "detector", None):
        changes["detector"] = args.detector
    if getattr(args, "threshold", None) is not None:
        changes["call_threshold"] = args.threshold
    if getattr(args, "embedding", None):
        changes["embedding"] = args.embedding
    return config.replace(**changes) if changes else config


_FORMAT_HELP = ("input format (default: auto-detected): jsonl = semloop traces, one per line; anthropic = a Messages "
                "API message list; openai = chat messages with tool_calls; claude-code = a session transcript")


def _add_detector_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--detector", choices=DETECTORS, help="signal set (default: semantic)")
    p.add_argument("--threshold", type=float, help="call similarity threshold (default from config)")
    p.add_argument("--embedding", choices=EMBEDDINGS, help="embedding backend (default: static)")
    p.add_argument("--config", metavar="PATH", help="JSON or TOML config file")


def cmd_scan(args: argparse.Namespace) -> int:
    from .scan import iter_scan, scan_trace
    from .traces import iter_traces

    config = build_config(args)
    if args.jobs < 1:
        raise ValueError("--jobs must be >= 1")

    def skipped(error: TraceError) -> None:
        print(f"semloop: skipped: {error}", file=sys.stderr)

    if args.engine == "ray":
        from .distributed import scan_file_with_ray

        pairs = scan_file_with_ray(args.file, config, address=args.ray_address, skip_invalid=args.skip_invalid,
                                   on_skip=skipped)
    else:
        traces = list(iter_traces(args.file, args.format, args.skip_invalid, skipped))
        if args.no_batch:  # one text embedded per step, as in a live agent (benchmarks compare the two)
            results = (scan_trace(trace, config) for trace in traces)
        else:
            results = iter_scan(traces, config, jobs=args.jobs)
        pairs = zip(traces, results)
    flagged = total = 0
    for trace, result in pairs:
        total += 1
        flagged += bool(result.events)
        if args.json:
            print(json.dumps(result.to_dict(), ensure_ascii=False), flush=True)
        else:
            _print_report(result, trace)
    if not args.json:
        print(f"\n{total} trace(s) scanned with detector '{config.detector}': {flagged} flagged, "
              f"{total - flagged} clean.")
    return 0


def _print_report(result, trace) -> None:
    if not result.events:
        print(f"✓ {result.id}: {result.steps} steps, no loop")
        return
    stop = f", stop at step {result.first_stop}" if result.first_stop is not None else ""
    print(f"✗ {result.id}: {result.steps} steps, first warning at step {result.first_warn}{stop}")
    quiet: list[int] = []  # steps after the stop with no evidence of their own: one line for the run

    def flush() -> None:
        if quiet:
            span = f"step {quiet[0]}" if len(quiet) == 1 else f"steps {quiet[0]}-{quiet[-1]}"
            print(f"    {span} stop  (after the stop: a guarded run would have ended)")
            quiet.clear()

    for v in result.events:  # every warn and stop, each with its evidence
        if not v.signals:
            quiet.append(v.step)
            continue
        flush()
        tool = f"  ({trace.steps[v.step].tool})" if trace is not None else ""  # None: results from Ray
        for s in v.signals:
            print(f"    step {v.step} {v.action:4}  {s.kind:11} score={s.score:.2f}  "
                  f"matches steps {list(s.related_steps)}{tool}")
    flush()


def cmd_demo(args: argparse.Namespace) -> int:
    """Scan the bundled example traces with `exact` and with `semantic`, side by side."""
    from .scan import scan_trace
    from .traces import load_traces

    path = Path(args.file) if args.file else Path(__file__).with_name("examples.jsonl")
    traces = load_traces(path)
    detectors = ("exact", "semantic")
    print(f"semloop demo: {len(traces)} example traces from {path.name}\n")
    print(f"{'trace':30} {'truth':22} " + " ".join(f"{d:>10}" for d in detectors))
    for trace in traces:
        label = trace.label or {}
        truth = f"loop@{label.get('onset')} ({label.get('kind')})" if label.get("loop") else "no loop"
        cells = []
        for d in detectors:
            first = scan_trace(trace, Config(detector=d)).first_flag
            cells.append("—" if first is None else f"warn@{first}")
        print(f"{trace.id:30} {truth:22} " + " ".join(f"{c:>10}" for c in cells))
    print("\n'warn@N' = first soft block at step N (0-based). Hard negatives should show '—'.")
    return 0


# -- semloop report (semloop/report.py) ----------------------------------------------------


def _add_report_parser(sub) -> None:
    p = sub.add_parser(
        "report", help="write an HTML page showing the loops in traces (timeline + heatmaps)",
        description="Replay traces through the guard and write one self-contained HTML file (no network): per "
                    "trace a timeline of the steps with where warn and stop fired, and call- and result-similarity "
                    "heatmaps; for several traces a summary table sorted by steps wasted. Labeled traces also show "
                    "whether the loop was caught.")
    p.add_argument("files", nargs="+", metavar="FILE", help="traces, any format `semloop scan` reads")
    p.add_argument("--trace", action="append", default=[], metavar="ID",
                   help="only the trace(s) with this id (repeatable; default: every trace)")
    p.add_argument("--out", default="report.html", metavar="PATH", help="the HTML file to write (default: report.html)")
    p.add_argument("--png", metavar="DIR", help="also write each trace's heatmaps as DIR/<trace id>.png (needs matplotlib)")
    p.add_argument("--title", default="semloop report", help="page title")
    _add_detector_args(p)
    p.add_argument("--format", choices=FORMATS, default="auto", help=_FORMAT_HELP)
    p.add_argument("--skip-invalid", action="store_true", help="report bad lines on stderr and skip them")
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from .report import build_reports, render_html, write_pngs

    config = build_config(args)
    reports = build_reports(args.files, config, args.trace, args.format, args.skip_invalid,
                            lambda error: print(f"semloop: skipped: {error}", file=sys.stderr))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(reports, args.title, config), encoding="utf-8")
    flagged = sum(bool(r.events) for r in reports)
    print(f"wrote {out} ({len(reports)} trace(s), {flagged} flagged)")
    if args.png:
        for path in write_pngs(reports, args.png):
            print(f"wrote {path}")
    return 0


# -- end of semloop report ------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    from . import __version__

    parser = argparse.ArgumentParser(prog="semloop", description="Stop LLM agents from spinning in tool-call loops.")
    parser.add_argument("--version", action="version", version=f"semloop {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("scan", help="scan recorded traces for loops")
    p.add_argument("file", help="JSONL traces (or a message list / Claude Code transcript)")
    _add_detector_args(p)
    p.add_argument("--format", choices=FORMATS, default="auto", help=_FORMAT_HELP)
    p.add_argument("--json", action="store_true", help="one JSON object per trace per line on stdout")
    p.add_argument("--skip-invalid", action="store_true", help="report bad lines on stderr and skip them")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="ray: scan on a Ray cluster (JSONL or Parquet; pip install 'semloop[ray]')")
    p.add_argument("--ray-address", metavar="ADDR", help="Ray cluster to join (default: RAY_ADDRESS or a local one)")
    p.add_argument("--no-batch", action="store_true", help="embed one call at a time (slower; for comparison)")
    p.set_defaults(func=cmd_scan)

    p = sub.add_parser("demo", help="exact vs semantic on the bundled example traces",
                       description="Scan the bundled example traces (five loops, four hard negatives) with exact "
                                   "matching and with the default semantic stack, and print where each first warns.")
    p.add_argument("file", nargs="?", help="traces to use instead of the bundled examples")
    p.set_defaults(func=cmd_demo)

    _add_report_parser(sub)

    from .integrations import claude_code, hook_cli

    hook_cli.register_targets(claude_code.INSTALL_TARGETS)  # codex, copilot, cursor, openhands
    for module in _optional_cli_modules():
        module.add_cli(sub)

    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # `semloop scan ... | head`
        return 0
    except (TraceError, ValueError, OSError, StoreError) as exc:  # StoreError: `sessions` on a store that is down
        print(f"semloop: error: {exc}", file=sys.stderr)
        return 2


def _optional_cli_modules():
    import importlib

    for name in ("semloop.bench.cli", "semloop.integrations.claude_code", "semloop.integrations.hook_server",
                 "semloop.integrations.mcp_proxy", "semloop.sessions"):
        try:
            yield importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
