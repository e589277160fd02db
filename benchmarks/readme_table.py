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


rows = ["| detector | Who&When test F1 (R) | tau airline test F1 (R) | real test FPR | synth_dev F1 "
        "| synth_test P / R / F1 | synth_test hard-neg FPR | delay med | p50 ms/step | × exact |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for name in results["detectors"]:
    web, tau, dev, test = (results["per_dataset"][d][name]
                           for d in ("whowhen.test", "tau_airline.test", "synth_dev", "synth_test"))
    real_fpr = (web["fp"] + tau["fp"]) / max(web["negatives"] + tau["negatives"], 1)
    lat = results["latency"][name]
    rows.append(f"| `{name}` | {num(web['f1'])} ({num(web['recall'])}) | {num(tau['f1'])} ({num(tau['recall'])}) "
                f"| {pct(real_fpr)} | {num(dev['f1'])} "
                f"| {num(test['precision'])} / {num(test['recall'])} / **{num(test['f1'])}** | {pct(test['hard_fpr'])} "
                f"| {num(results['overall'][name]['delay_median'])} | {lat['p50_ms']:.2f} | {lat['p50_vs_exact']:.1f} |")
print("\n".join(rows))
