"""`semloop` command line: scan, bench, calibrate, demo, and the coding-agent hook commands.

Subcommands import what they need when they run. `semloop hook <target>` — a process per tool
call of the agent — does not even build the argument parser: `integrations.hook_entry` reads its
few options, so the process imports only the hook client (no numpy, argparse or trace readers).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (hook processes start faster)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterable, Sequence

    from .config import Config
    from .scan import ScanResult
    from .traces import Trace, TraceError


def build_config(args: argparse.Namespace) -> Config:
    """--config file, then --detector / --threshold / --embedding on top."""
    from .config import Config

    config = Config.from_file(args.config) if getattr(args, "config", None) else Config()
    changes = {}
    if getattr(args, "detector", None):
        changes["detector"] = args.detector
    if getattr(args, "threshold", None) is not None:
        changes["call_threshold"] = args.threshold
    if getattr(args, "embedding", None):
        changes["embedding"] = args.embedding
    return config.replace(**changes) if changes else config


FAIL_ON_HELP = ("exit 1 when a trace reaches this level: warn = any warning or stop, stop = a hard stop "
                "(default: exit 0 whatever is found; bad input is always exit 2)")
INPUTS_HELP = "trace files, glob patterns (quoted: 'runs/*.jsonl', '**' too) or - for standard input"


def failed_on(level: str | None, results) -> bool:
    """Whether `--fail-on level` fails for `results` (anything with `events` and `first_stop`)."""
    if level == "stop":
        return any(r.first_stop is not None for r in results)
    return level == "warn" and any(r.events for r in results)


def check_out_path(path: str | Path, is_dir: bool = False) -> Path:
    """Fail early, before any work, when `path` (a file to write, or with `is_dir` a folder) cannot
    be written: its nearest existing ancestor must be a writable folder. Missing folders are
    created later by `make_parents`, which says so."""
    import os

    path = Path(path)
    if path.exists() and path.is_dir() != is_dir:
        raise ValueError(f"{path}: is {'not ' if is_dir else ''}a folder")
    ancestor = path if is_dir and path.exists() else path.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ValueError(f"{path}: {ancestor} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"{path}: cannot write in {ancestor}")
    return path


def make_parents(folder: str | Path) -> Path:
    """Create `folder` (and its parents) if missing, saying so on stderr."""
    folder = Path(folder)
    if not folder.exists():
        folder.mkdir(parents=True, exist_ok=True)
        print(f"semloop: created folder {folder}", file=sys.stderr)
    return folder
_PER_AGENT_HELP = "span formats: one trace per agent invocation instead of one per run"


def _add_detector_args(p: argparse.ArgumentParser) -> None:
    from .config import DETECTORS, EMBEDDINGS

    p.add_argument("--detector", choices=DETECTORS, help="signal set (default: semantic)")
    p.add_argument("--threshold", type=float, help="call similarity threshold (default from config)")
    p.add_argument("--embedding", choices=EMBEDDINGS, help="embedding backend (default: static)")
    p.add_argument("--config", metavar="PATH", help="JSON or TOML config file")


def cmd_scan(args: argparse.Namespace) -> int:
    from .scan import iter_scan, scan_trace
    from .traces import STDIN, expand_paths, iter_traces

    config = build_config(args)
    if args.jobs < 1:
        raise ValueError("--jobs must be >= 1")
    paths = expand_paths(args.files)

    def skipped(error: TraceError) -> None:
        print(f"semloop: skipped: {error}", file=sys.stderr)

    pairs: Iterable[tuple[Trace | None, ScanResult]]
    results: Iterable[ScanResult]
    if args.engine == "ray":
        from .distributed import scan_file_with_ray

        if STDIN in paths:
            raise ValueError("--engine ray reads files, not standard input")
        pairs = (pair for path in paths for pair in scan_file_with_ray(
            path, config, address=args.ray_address, skip_invalid=args.skip_invalid, on_skip=skipped))
    else:
        traces = [trace for path in paths
                  for trace in iter_traces(path, args.format, args.skip_invalid, skipped, args.per_agent)]
        if config.detector == "semantic" and traces:
            from .embeddings import load_embedder

            load_embedder(config.embedding, config.model_path)  # a missing backend is an error, not "no loop"
        if not args.no_redact:  # secret-shaped text in inputs and outputs never reaches the output
            from .redact import redact_trace

            traces = [redact_trace(trace) for trace in traces]
        if args.no_batch:  # one text embedded per step, as in a live agent (benchmarks compare the two)
            results = (scan_trace(trace, config) for trace in traces)
        else:
            results = iter_scan(traces, config, jobs=args.jobs)
        pairs = zip(traces, results, strict=True)
    seen: list[ScanResult] = []
    for trace, result in pairs:
        seen.append(result)
        if args.json:
            print(json.dumps(result.to_dict(), ensure_ascii=False), flush=True)
        else:
            _print_report(result, trace)
    flagged = sum(bool(r.events) for r in seen)
    stopped = sum(r.first_stop is not None for r in seen)
    if not args.json:
        files = f" from {len(paths)} files" if len(paths) > 1 else ""
        print(f"\n{len(seen)} trace(s){files} scanned with detector '{config.detector}': "
              f"{flagged} flagged ({stopped} stopped), {len(seen) - flagged} clean.")
    return 1 if failed_on(args.fail_on, seen) else 0


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
    from .config import Config
    from .scan import scan_trace
    from .traces import load_traces

    path = Path(args.file) if args.file else Path(__file__).with_name("examples.jsonl")
    traces = load_traces(path)
    detectors = ("exact", "semantic")
    print(f"semloop demo: {len(traces)} example traces from {path.name}\n")
    print(f"{'trace':30} {'truth':22} " + " ".join(f"{d:>10}" for d in detectors))
    for trace in traces:
        label = trace.label or {}
        if "loop" not in label:
            truth = "unlabeled"
        elif label["loop"]:
            truth = f"loop@{label.get('onset')} ({label.get('kind') or 'kind not given'})"
        else:
            truth = "no loop"
        cells = []
        for d in detectors:
            first = scan_trace(trace, Config(detector=d)).first_flag
            cells.append("—" if first is None else f"warn@{first}")
        print(f"{trace.id:30} {truth:22} " + " ".join(f"{c:>10}" for c in cells))
    print("\n'warn@N' = first soft block at step N (0-based). Hard negatives should show '—'.")
    return 0


# -- semloop report (semloop/report.py) ----------------------------------------------------


_NO_REDACT_HELP = ("show tool inputs and outputs as recorded (default: secret-shaped text, e.g. keys, tokens, "
                   "passwords in commands and URLs, is replaced by redacted:<digest>)")


def _add_report_parser(sub) -> None:
    from .messages import install_hint
    from .traces import FORMATS, format_help

    p = sub.add_parser(
        "report", help="write an HTML page showing the loops in traces (timeline + heatmaps)",
        description="Replay traces through the guard and write one self-contained HTML file (no network): per "
                    "trace a timeline of the steps with where warn and stop fired, and call- and result-similarity "
                    "heatmaps; for several traces a summary table sorted by steps wasted. Labeled traces also show "
                    "whether the loop was caught.")
    p.add_argument("files", nargs="+", metavar="FILE", help=INPUTS_HELP + "; any format `semloop scan` reads")
    p.add_argument("--trace", action="append", default=[], metavar="ID",
                   help="only the trace(s) with this id (repeatable; default: every trace)")
    p.add_argument("--out", default="report.html", metavar="PATH",
                   help="the HTML file to write (default: report.html; missing folders are created, "
                        "and named on stderr)")
    p.add_argument("--png", metavar="DIR",
                   help="also write each trace's heatmaps as DIR/<trace id>.png "
                        f"(needs matplotlib: {install_hint('bench')})")
    p.add_argument("--title", default="semloop report", help="page title")
    _add_detector_args(p)
    p.add_argument("--format", choices=FORMATS, default="auto", help=format_help())
    p.add_argument("--skip-invalid", action="store_true", help="report bad lines on stderr and skip them")
    p.add_argument("--fail-on", choices=("warn", "stop"), help=FAIL_ON_HELP)
    p.add_argument("--per-agent", action="store_true", help=_PER_AGENT_HELP)
    p.add_argument("--no-redact", action="store_true", help=_NO_REDACT_HELP)
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from .report import build_reports, render_html, write_pngs
    from .traces import expand_paths

    config = build_config(args)
    out = check_out_path(args.out)
    if args.png:
        check_out_path(args.png, is_dir=True)
        from .report import pyplot

        pyplot()  # a missing matplotlib is an error before the work, not after it
    reports = build_reports(expand_paths(args.files), config, args.trace, args.format, args.skip_invalid,
                            lambda error: print(f"semloop: skipped: {error}", file=sys.stderr), args.per_agent,
                            redact=not args.no_redact)
    make_parents(out.parent)
    out.write_text(render_html(reports, args.title, config), encoding="utf-8")
    flagged = sum(bool(r.events) for r in reports)
    print(f"wrote {out} ({len(reports)} trace(s), {flagged} flagged)")
    if args.png:
        for path in write_pngs(reports, make_parents(args.png)):
            print(f"wrote {path}")
    return 1 if failed_on(args.fail_on, reports) else 0


# -- end of semloop report ------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["hook"]:  # a hook process: the light path, no argument parser
        from .integrations.hook_entry import run_hook_command

        code = run_hook_command(args_list[1:])
        if code is not None:
            return code
    import argparse

    from . import __version__
    from .messages import install_hint
    from .store import StoreError
    from .traces import FORMATS, TraceError, format_help

    parser = argparse.ArgumentParser(prog="semloop", description="Stop LLM agents from spinning in tool-call loops.")
    parser.add_argument("--version", action="version", version=f"semloop {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "scan", help="scan recorded traces for loops",
        description="Replay recorded traces through a fresh guard each and print where it would have warned and "
                    "stopped. Exit status: 0 = scanned (loops or not), 1 = --fail-on and a trace reached that "
                    "level, 2 = bad input or a missing optional dependency (one line on stderr).")
    p.add_argument("files", nargs="+", metavar="FILE", help=INPUTS_HELP)
    _add_detector_args(p)
    p.add_argument("--format", choices=FORMATS, default="auto", help=format_help())
    p.add_argument("--json", action="store_true", help="one JSON object per trace per line on stdout")
    p.add_argument("--skip-invalid", action="store_true",
                   help="report bad lines (and empty files) on stderr and skip them")
    p.add_argument("--fail-on", choices=("warn", "stop"), help=FAIL_ON_HELP)
    p.add_argument("--per-agent", action="store_true", help=_PER_AGENT_HELP)
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help=f"ray: scan on a Ray cluster (JSONL or Parquet; {install_hint('ray')})")
    p.add_argument("--ray-address", metavar="ADDR", help="Ray cluster to join (default: RAY_ADDRESS or a local one)")
    p.add_argument("--no-batch", action="store_true", help="embed one call at a time (slower; for comparison)")
    p.add_argument("--no-redact", action="store_true", help=_NO_REDACT_HELP)
    p.set_defaults(func=cmd_scan)

    p = sub.add_parser("demo", help="exact vs semantic on the bundled example traces",
                       description="Scan the bundled example traces (five loops, four hard negatives) with exact "
                                   "matching and with the default semantic stack, and print where each first warns.")
    p.add_argument("file", nargs="?", help="traces to use instead of the bundled examples")
    p.set_defaults(func=cmd_demo)

    _add_report_parser(sub)

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
    except ImportError as exc:  # an optional dependency that is not installed
        hint = missing_extra(exc)
        if hint is None:
            raise
        print(f"semloop: error: {hint}", file=sys.stderr)
        return 2


# optional modules -> the extra of semloop-guard that installs them
EXTRAS = {"matplotlib": "bench", "tqdm": "bench", "sklearn": "learn", "sentence_transformers": "st", "torch": "st",
          "ray": "ray", "redis": "redis", "mcp": "mcp", "pyarrow": "ray", "pandas": "ray"}


def missing_extra(exc: ImportError) -> str | None:
    """The one line to print for an ImportError of a missing optional dependency (its own message
    when it already says what to install), or None for any other ImportError (a bug: re-raised)."""
    from .messages import install_hint

    message = str(exc)
    if "pip install" in message:
        return message
    top = (exc.name or "").split(".")[0]
    if top in EXTRAS:
        return f"{top} is not installed: {install_hint(EXTRAS[top])}"
    return None


def _optional_cli_modules():
    import importlib

    for name in ("semloop.bench.cli", "semloop.integrations.hook_install", "semloop.integrations.hook_server",
                 "semloop.integrations.mcp_proxy", "semloop.sessions"):
        try:
            yield importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
