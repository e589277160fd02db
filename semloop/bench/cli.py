"""`semloop bench` and `semloop calibrate` subcommands (registered by `semloop.cli`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..config import EMBEDDINGS, Config
from ..traces import FORMATS, format_help

MEMORY_STEPS = 10_000
"""Default length of the long session whose memory `semloop bench` reports (100,000 steps take
about a minute; the committed results are measured with that many)."""


def add_cli(subparsers) -> None:
    from . import DETECTORS, PEERS

    p = subparsers.add_parser(
        "bench", help="benchmark detectors on labelled traces",
        description="Precision/recall/FPR, detection delay, steps saved, a call-threshold sweep and "
                    "latency/memory for each detector, written as results.md, results.json and PNG plots.")
    p.add_argument("data", nargs="+", metavar="DATA",
                   help="labelled trace files or glob patterns, any format `semloop scan` reads")
    p.add_argument("--detectors", default="all",
                   help=f"comma-separated subset of: {','.join([*DETECTORS, *PEERS])} (default: all; a peer "
                        "whose package is not installed is skipped)")
    p.add_argument("--out", metavar="DIR",
                   help="output directory, created if missing (default: a new folder "
                        "./semloop-bench-YYYYmmdd-HHMMSS, so committed results are never overwritten; "
                        "benchmarks/run.sh passes --out benchmarks/results)")
    p.add_argument("--config", metavar="PATH", help="base JSON/TOML config (thresholds etc.) for every detector")
    p.add_argument("--latency-steps", type=int, default=1000, metavar="N",
                   help="steps timed per detector for the latency table (default 1000)")
    p.add_argument("--latency-budget", type=float, default=20.0, metavar="SEC",
                   help="stop timing a detector after this many seconds of timed calls (default 20)")
    p.add_argument("--perf-runs", type=int, default=5, metavar="N",
                   help="fresh-process runs for import/first-verdict timing; 0 skips them (default 5)")
    p.add_argument("--memory-steps", type=int, default=MEMORY_STEPS, metavar="N",
                   help="steps of one long session whose RSS and stored state size are reported, run beside the "
                        f"other stages; 0 skips (default {MEMORY_STEPS:,}; benchmarks/run.sh passes 100000)")
    p.add_argument("--no-sweep", action="store_true", help="skip the call-threshold sweep")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="worker processes for the sweep and the peers (default: one per CPU)")
    p.add_argument("--peer-cache", metavar="DIR",
                   help="keep each peer's verdicts per trace here (keyed by a hash of the trace and the peer's "
                        "version), so a second run over the same traces does not replay the peer")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--outcomes", action="store_true",
                   help="also write outcomes.jsonl (first flag/stop per detector and trace)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars or stage lines on stderr")
    p.set_defaults(func=cmd_bench)

    p = subparsers.add_parser(
        "calibrate", help="tune semantic thresholds on your labelled traces",
        description="Sweep call_threshold x result_threshold (then min_repeats x cluster_stale_limit) and "
                    "print the config with the best recall whose false-positive rate is <= --target-fpr.")
    p.add_argument("data", nargs="+", metavar="DATA", help="labelled trace file(s), any format `semloop scan` reads")
    p.add_argument("--target-fpr", type=float, default=0.02, help="maximum false-positive rate (default 0.02)")
    p.add_argument("--out", default=".", metavar="DIR",
                   help="where calibration.png and calibration.json go, created if missing "
                        "(default: current directory)")
    p.add_argument("--write", metavar="PATH", help="also write the config snippet to this JSON file")
    p.add_argument("--per-tool", action="store_true", help="also suggest per-tool call_threshold overrides")
    p.add_argument("--min-tool-loops", type=int, default=3, metavar="N",
                   help="--per-tool: labelled loops a tool needs before it gets an override (default 3)")
    p.add_argument("--config", metavar="PATH", help="base JSON/TOML config to start from")
    p.add_argument("--embedding", choices=EMBEDDINGS, help="embedding backend (default: static)")
    p.add_argument("--format", choices=FORMATS, default="auto", help=format_help())
    p.add_argument("--jobs", type=int, metavar="N", help="worker processes for the sweep (default: one per CPU)")
    p.add_argument("--no-plot", action="store_true", help="skip calibration.png")
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    p.set_defaults(func=cmd_calibrate)


def _base_config(args: argparse.Namespace) -> Config:
    base = Config.from_file(args.config) if args.config else Config()
    if getattr(args, "embedding", None):
        base = base.replace(embedding=args.embedding)
    return base


def _progress(args: argparse.Namespace) -> bool:
    return not args.no_progress and sys.stderr.isatty()


def cmd_bench(args: argparse.Namespace) -> int:
    from ..cli import check_out_path, make_parents
    from ..traces import STDIN, expand_paths
    from .report import write_results
    from .runner import load_datasets, parse_detectors, run_bench

    detectors = parse_detectors(args.detectors)
    out = check_out_path(args.out or _fresh_dir("semloop-bench"), is_dir=True)
    if not args.no_plots:
        from ..report import pyplot

        pyplot()  # a missing matplotlib is an error before the run (or pass --no-plots)
    paths = expand_paths(args.data)
    if STDIN in paths:  # the long-session measurement reads the files again in a second process
        raise ValueError("semloop bench reads files, not standard input")
    datasets = load_datasets(paths)  # every file and label checked before the run
    say = (lambda msg: None) if args.no_progress else (lambda msg: print(msg, file=sys.stderr, flush=True))
    say(f"semloop bench: {sum(len(d.traces) for d in datasets)} traces in {len(datasets)} file(s), "
        f"detectors {', '.join(detectors)}")
    results = run_bench(paths, detectors, _base_config(args), progress=_progress(args),
                        latency_steps=args.latency_steps, latency_budget_s=args.latency_budget,
                        perf_runs=args.perf_runs, sweep=not args.no_sweep, jobs=args.jobs,
                        memory_steps=args.memory_steps, log=say, datasets=datasets, peer_cache=args.peer_cache)
    written = write_results(results, make_parents(out), plots=not args.no_plots, write_outcomes=args.outcomes)
    print(_bench_summary(results))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def _fresh_dir(prefix: str) -> Path:
    """A directory name in the current directory that does not exist yet."""
    import time

    base = Path(f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}")
    path, n = base, 1
    while path.exists():
        n += 1
        path = Path(f"{base}-{n}")
    return path


def _bench_summary(results) -> str:
    from .report import fmt, pct

    lines = [f"{'detector':18} {'prec':>6} {'recall':>6} {'F1':>6} {'FPR':>7} {'delay':>6} {'p50 ms':>8}"]
    for det, s in results["overall"].items():
        lat = results["latency"].get(det, {})
        lines.append(f"{det:18} {fmt(s['precision']):>6} {fmt(s['recall']):>6} {fmt(s['f1']):>6} "
                     f"{pct(s['fpr']):>7} {fmt(s['delay_median'], 1):>6} {fmt(lat.get('p50_ms'), 3):>8}")
    for det, why in results["skipped"].items():
        lines.append(f"{det:18} skipped: {why}")
    return "\n".join(lines + _perf_summary(results))


def _perf_summary(results) -> list[str]:
    """Per-step cost against the seed-style exact detector timed on the same steps, scan
    throughput, memory."""
    from .report import fmt

    lines = ["", f"{'per step':18} {'p50 ms':>8} {'p99 ms':>8} {'p50 × seed':>10} {'p99 × seed':>10}   "
                 f"{'CPU p50':>8} {'CPU p99':>8} {'p50 × seed':>10} {'p99 × seed':>10}"]
    for det, lat in results["latency"].items():
        lines.append(f"{det:18} {fmt(lat.get('p50_ms'), 3):>8} {fmt(lat.get('p99_ms'), 3):>8} "
                     f"{fmt(lat.get('p50_vs_seed'), 1):>10} {fmt(lat.get('p99_vs_seed'), 1):>10}   "
                     f"{fmt(lat.get('cpu_p50_ms'), 3):>8} {fmt(lat.get('cpu_p99_ms'), 3):>8} "
                     f"{fmt(lat.get('cpu_p50_vs_seed'), 1):>10} {fmt(lat.get('cpu_p99_vs_seed'), 1):>10}")
    seed: dict[str, Any] = next(iter(results["latency"].values()), {})
    if "seed_p50_ms" in seed:
        lines.append(f"{'seed-style exact':18} {fmt(seed['seed_p50_ms'], 4):>8} {fmt(seed['seed_p99_ms'], 4):>8} "
                     f"{'':>10} {'':>10}   {fmt(seed.get('cpu_seed_p50_ms'), 4):>8} "
                     f"{fmt(seed.get('cpu_seed_p99_ms'), 4):>8}")
    tp = results.get("throughput") or {}
    if tp:
        lines.append(f"scan, semantic, {tp['steps']} steps: " + ", ".join(
            f"{k.replace('_steps_per_s', '').replace('_steps_per_cpu_s', ' (CPU)')} {v:,.0f} steps/s"
            for k, v in tp.items() if k.endswith(("_steps_per_s", "_steps_per_cpu_s"))))
    mem, session = results["process"].get("memory", {}), results["process"].get("session", {})
    if "rss_after_model_mb" in mem:
        lines.append(f"RSS: {mem['rss_before_model_mb']:.0f} MB → {mem['rss_after_model_mb']:.0f} MB with the model")
    if "rss_after_mb" in session:
        lines.append(f"one session of {session['steps']:,} steps: RSS {session['rss_model_loaded_mb']:.0f} → "
                     f"{session['rss_half_mb']:.0f} (half-way) → {session['rss_after_mb']:.0f} MB, stored state "
                     f"{session['state_bytes_half'] / 1024:.0f} → {session['state_bytes_after'] / 1024:.0f} KB")
    return lines


def cmd_calibrate(args: argparse.Namespace) -> int:
    from ..cli import check_out_path, make_parents
    from ..traces import expand_paths
    from .calibrate import plot_curve, run_calibrate
    from .metrics import jsonable
    from .report import fmt, pct

    if args.min_tool_loops < 1:
        raise ValueError("--min-tool-loops must be >= 1")
    out = check_out_path(args.out, is_dir=True)
    if args.write:
        check_out_path(args.write)
    result = run_calibrate(expand_paths(args.data), _base_config(args), args.target_fpr, args.per_tool,
                           args.min_tool_loops, args.format, _progress(args), args.jobs)
    make_parents(out)
    saved = []
    dump = {k: v for k, v in result.items() if k != "config"}
    (out / "calibration.json").write_text(json.dumps(jsonable(dump), indent=2, allow_nan=False) + "\n")
    saved.append(out / "calibration.json")
    if not args.no_plot:
        try:
            saved.append(plot_curve(result, out / "calibration.png"))
        except ImportError as exc:
            print(f"semloop calibrate: no plot: {exc}", file=sys.stderr)

    c, d = result["chosen"], result["default"]
    err = sys.stderr
    print(f"semloop calibrate: {result['traces']} traces, target FPR <= {args.target_fpr:g}", file=err)
    print(f"  defaults: recall {fmt(d['recall'])}, precision {fmt(d['precision'])}, FPR {pct(d['fpr'])}", file=err)
    print(f"  chosen:   recall {fmt(c['recall'])}, precision {fmt(c['precision'])}, FPR {pct(c['fpr'])} "
          f"({c['fp']} of {c['negatives']} clean traces flagged)", file=err)
    for note in result["notes"]:
        print(f"  note: {note}", file=err)
    print(f"  saved {', '.join(str(p) for p in saved)}", file=err)
    text = json.dumps(result["snippet"], indent=2)
    if args.write:
        make_parents(Path(args.write).parent).joinpath(Path(args.write).name).write_text(text + "\n", encoding="utf-8")
        print(f"  config written to {args.write} (use it with --config)", file=err)
    print(text)
    if not result["feasible"]:
        print(f"semloop calibrate: no setting meets --target-fpr {args.target_fpr:g}", file=err)
        return 1
    return 0
