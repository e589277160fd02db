"""How long `semloop report` takes on one long session, as a ratio to `semloop scan` on the same
trace in the same run (the report replays the trace through the guard too, then embeds the calls,
compares the results pairwise and draws).

    python benchmarks/report_speed.py [--steps 2000]
"""

import argparse
import random
import time

from semloop import Config
from semloop.report import analyze_trace, render_html
from semloop.scan import scan_trace
from semloop.traces import Step, Trace


def long_session(n: int, seed: int = 3) -> Trace:
    """Distinct reads and greps, with two stretches of the same failing test run."""
    rng = random.Random(seed)
    steps = []
    for i in range(n):
        if n * 0.3 <= i < n * 0.32 or n * 0.75 <= i < n * 0.765:
            steps.append(Step("Bash", {"command": "pytest tests/test_x.py"}, "FAILED test_a - AssertionError\n1 failed", True))
        elif rng.random() < 0.5:
            steps.append(Step("Read", {"file_path": f"src/mod{i}.py"}, " ".join(f"w{rng.randint(0, 5000)}" for _ in range(200))))
        else:
            steps.append(Step("Grep", {"pattern": f"def f{i}", "path": "src"}, f"src/mod{i}.py:{i}: def f{i}(x): return {i}"))
    return Trace(f"long-{n}", tuple(steps))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    trace, config = long_session(args.steps), Config()
    scan_trace(long_session(20), config)  # load the model outside the timings
    t0 = time.perf_counter()
    scan_trace(trace, config)
    t1 = time.perf_counter()
    report = analyze_trace(trace, config)
    page = render_html([report])
    t2 = time.perf_counter()
    print(f"{args.steps} steps: scan {t1 - t0:.2f} s, report {t2 - t1:.2f} s ({(t2 - t1) / (t1 - t0):.1f}x scan), "
          f"heatmaps {report.call_similarity.shape[0]} cells a side ({report.bin_size} steps per cell), "
          f"page {len(page) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
