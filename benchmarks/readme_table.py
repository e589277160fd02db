"""Prints the README's benchmark table from benchmarks/results/results.json (no numbers typed by hand).

    python benchmarks/readme_table.py
"""

import json
from pathlib import Path

results = json.loads((Path(__file__).parent / "results" / "results.json").read_text())


def pct(x):
    return "–" if x is None else f"{100 * x:.1f}%"


def num(x):
    return "–" if x is None else f"{x:.2f}"


rows = ["| detector | real_dev F1 (R) | real_dev FPR | synth_dev F1 | synth_test P / R / F1 | synth_test hard-neg FPR "
        "| delay med | p50 ms/step | × exact |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
for name in results["detectors"]:
    real, dev, test = (results["per_dataset"][d][name] for d in ("real_dev", "synth_dev", "synth_test"))
    lat = results["latency"][name]
    rows.append(f"| `{name}` | {num(real['f1'])} ({num(real['recall'])}) | {pct(real['fpr'])} | {num(dev['f1'])} "
                f"| {num(test['precision'])} / {num(test['recall'])} / **{num(test['f1'])}** | {pct(test['hard_fpr'])} "
                f"| {num(results['overall'][name]['delay_median'])} | {lat['p50_ms']:.2f} | {lat['p50_vs_exact']:.1f} |")
print("\n".join(rows))
