"""Every number in the benchmark table of README.md, docs/benchmarks.md and the calibration section
of docs/usage.md, from the results files (none typed by hand).

    python benchmarks/readme_table.py           # print the generated blocks
    python benchmarks/readme_table.py --write   # rewrite them in those files, between their markers
    python benchmarks/readme_table.py --check   # exit 1 if a file is out of date (the tests run this)

Sources: benchmarks/results/results.json (`semloop bench`, via benchmarks/run.sh) and
benchmarks/results/calibration.json (`semloop calibrate`, also run by benchmarks/run.sh).
In each file a block sits between `<!-- generated: NAME -->` and `<!-- /generated -->`.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
PAGES = (README, HERE.parent / "docs" / "benchmarks.md", HERE.parent / "docs" / "usage.md")  # where blocks go
RESULTS = HERE / "results"


def pct(x):
    return "–" if x is None else f"{100 * x:.1f}%"


def num(x):
    return "–" if x is None else f"{x:.2f}"


REAL_TEST = ("whowhen.test", "tau_airline.test")


def table(results: dict) -> str:
    rows = ["| detector | Who&When test F1 (R) | tau airline test F1 (R) | real test FPR | synth_dev F1 "
            "| synth_test P / R / F1 | synth_test hard-neg FPR | delay med | p50 ms/step | × exact |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in results["detectors"]:
        web, tau, dev, test = (results["per_dataset"][d][name]
                               for d in ("whowhen.test", "tau_airline.test", "synth_dev", "synth_test"))
        real_fpr = (web["fp"] + tau["fp"]) / max(web["negatives"] + tau["negatives"], 1)
        lat = results["latency"].get(name)  # a peer run through its own package has no in-process latency
        cost = f"{lat['p50_ms']:.2f} | {lat['p50_vs_exact']:.1f}" if lat else "– | –"
        rows.append(f"| `{name}` | {num(web['f1'])} ({num(web['recall'])}) | {num(tau['f1'])} ({num(tau['recall'])}) "
                    f"| {pct(real_fpr)} | {num(dev['f1'])} "
                    f"| {num(test['precision'])} / {num(test['recall'])} / **{num(test['f1'])}** | {pct(test['hard_fpr'])} "
                    f"| {num(results['overall'][name]['delay_median'])} | {cost} |")
    return "\n".join(rows)


def data(results: dict) -> str:
    d = {k: results["per_dataset"][k]["exact"] for k in results["per_dataset"]}
    return (f"- Who&When (`real_dev.jsonl`): real Magentic-One web/file and AG2 code-executing runs, labeled by "
            f"reading them (ag2ai/Agents_Failure_Attribution, MIT, see `LICENSE-who-and-when.txt`), split by "
            f"`benchmarks/split_real.py` into dev ({d['whowhen.dev']['traces']} runs, {d['whowhen.dev']['loops']} loops) "
            f"and test ({d['whowhen.test']['traces']} runs, {d['whowhen.test']['loops']} loops).\n"
            f"- tau airline (`real_tau_airline_dev.jsonl`): real gpt-4o customer-service conversations "
            f"(sierra-research/tau-bench, MIT), split by task into dev ({d['tau_airline.dev']['traces']} runs, "
            f"{d['tau_airline.dev']['loops']} loops) and test ({d['tau_airline.test']['traces']} runs, "
            f"{d['tau_airline.test']['loops']} loops).\n"
            f"- `synth_dev.jsonl` / `synth_test.jsonl`: {d['synth_dev']['traces']} and {d['synth_test']['traces']} traces "
            f"({d['synth_dev']['loops']} and {d['synth_test']['loops']} loops) from the seeded generator")


def notes(results: dict) -> str:
    early = {d: results["overall"][d]["early"] for d in ("semantic", "exact", "count") if d in results["overall"]}
    return (f"F1 and recall are trace-level (a loop trace counts as caught if flagged at any step; the semantic "
            f"stack flagged a loop trace before its onset {early.get('semantic')} time(s), exact matching "
            f"{early.get('exact')}, the count baseline {early.get('count')}).")


def kinds(results: dict) -> str:
    sem, exact = results["per_kind"]["semantic"], results["per_kind"]["exact"]
    names = [k.split(":", 1)[1] for k in sem if k.startswith("loop:")]
    return "Recall per loop kind, all files (semantic vs exact): " + ", ".join(
        f"{k} {num(sem['loop:' + k]['recall'])} vs {num(exact['loop:' + k]['recall'])}" for k in names) + "."


def process(results: dict) -> str:
    proc, sem = results["process"], results["latency"]["semantic"]
    return (f"Process costs (same run, on a shared machine: read the ratios, not the milliseconds): "
            f"`import semloop` {proc['import']['import_semloop_ms']:.0f} ms; the static model loads in "
            f"{proc['memory']['model_load_ms']:.0f} ms and adds {proc['memory']['model_rss_mb']:.0f} MB of RSS; "
            f"first verdict in a fresh process {proc['first_verdict']['first_verdict_ms']:.0f} ms after import "
            f"starts; `LoopGuard.record` p50 {sem['p50_ms']:.2f} ms per step ({sem['p50_vs_exact']:.1f}× exact).")


def targets(results: dict) -> str:
    test = results["per_dataset"]["synth_test"]["semantic"]
    per = results["per_dataset"]
    real = {k: sum(per[d]["semantic"][k] for d in REAL_TEST) for k in ("tp", "fp", "loops", "negatives")}
    real["recall"] = real["tp"] / max(real["loops"], 1)
    para = results["per_kind"]["semantic"].get("loop:paraphrase", {})
    return (f"On `synth_test` the semantic stack reaches F1 {num(test['f1'])} with a hard-negative FPR of "
            f"{pct(test['hard_fpr'])} and a median delay of {results['overall']['semantic']['delay_median']:.0f} "
            f"step(s). On the real test halves its recall is {num(real['recall'])} ({real['tp']} of {real['loops']} "
            f"loops, {real['fp']} false alarm(s) on {real['negatives']} clean runs); paraphrase recall over all "
            f"files is {num(para.get('recall'))}.")


def calibration(cal: dict) -> str:
    chosen, default, snippet = cal["chosen"], cal["default"], cal["snippet"]
    keys = {k: snippet[k] for k in ("call_threshold", "result_threshold") if k in snippet}
    return (f"On our dev data (the dev halves of the real traces + `synth_dev`, {cal['traces']} traces, target FPR "
            f"{cal['target_fpr']:g}) it suggests `{json.dumps(keys)}` (recall {chosen['recall']:.3f}, FPR "
            f"{pct(chosen['fpr'])}) against the defaults' recall {default['recall']:.3f}, FPR {pct(default['fpr'])}.")


def real_runs(summary: dict) -> str:
    """The README's table: the real runs `benchmarks/trust.py --summary` measured, test halves with
    the dev halves (tuned on) in brackets, soft and hard block apart."""
    test, dev = summary["test"], summary.get("dev") or {}

    def cell(name: str, kind: str, of: str) -> str:
        def rate(half: dict) -> str:
            c = half[name]
            x = c[f"{kind}_{'tp' if of == 'loops' else 'fp'}"] / c[of]
            return f"{100 * x:.2f}%" if 0 < x < 0.01 else pct(x)

        return rate(test) + (f" ({rate(dev)})" if name in dev else "")

    labels = {"semloop": "semloop (default)", "exact": "exact matching, window 3"}
    names = ["semloop", "exact", *(k for k in test if k.startswith("agent-loop-guard"))]
    rows = ["| detector | soft block: loops caught | soft block: clean runs warned "
            "| hard block: loops ended | hard block: clean runs stopped |",
            "|---|---:|---:|---:|---:|"]
    for name in names:
        version = summary.get("versions", {}).get(name)
        label = labels.get(name, f"`{name}`{' ' + version if version else ''} (PyPI)")
        rows.append(f"| {label} | {cell(name, 'soft', 'loops')} | {cell(name, 'soft', 'clean')} "
                    f"| {cell(name, 'hard', 'loops')} | {cell(name, 'hard', 'clean')} |")
    c = test["semloop"]
    only = test["exact_only_loops"] + dev.get("exact_only_loops", 0)
    rows.append("")
    rows.append(f"Test halves: {c['loops'] + c['clean']:,} real runs of coding, browser and customer-service agents "
                f"({c['loops']} loops), never tuned on; in brackets the dev halves"
                + (f" ({dev['semloop']['loops'] + dev['semloop']['clean']:,} runs, {dev['semloop']['loops']} loops)"
                   if "semloop" in dev else "")
                + f". Loops exact matching catches and semloop misses: {only}.")
    return "\n".join(rows)


def blocks() -> dict[str, str]:
    results = json.loads((RESULTS / "results.json").read_text())
    out = {"bench-table": table(results), "bench-data": data(results), "bench-notes": notes(results),
           "bench-kinds": kinds(results), "bench-process": process(results), "bench-targets": targets(results)}
    trust_path = RESULTS / "trust_summary.json"
    if trust_path.exists():
        out["real-runs"] = real_runs(json.loads(trust_path.read_text()))
    cal_path = RESULTS / "calibration.json"
    if cal_path.exists():
        out["calibration"] = calibration(json.loads(cal_path.read_text()))
    return out


_BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- /generated -->)", re.S)


def render(readme: str, generated: dict[str, str], page: str = "README.md") -> str:
    def replace(m: re.Match) -> str:
        name = m.group(2)
        if name not in generated:
            raise SystemExit(f"{page} has a block {name!r} that readme_table.py does not generate")
        return m.group(1) + generated[name] + "\n" + m.group(4)

    return _BLOCK.sub(replace, readme)


def main(argv: list[str]) -> int:
    generated = blocks()
    if "--write" in argv or "--check" in argv:
        stale = []
        for page in (p for p in PAGES if p.exists()):
            text = page.read_text(encoding="utf-8")
            fresh = render(text, generated, page.name)
            if fresh != text:
                stale.append(page)
                if "--write" in argv:
                    page.write_text(fresh, encoding="utf-8")
                    print(f"updated {page}")
        if "--check" in argv and stale:
            names = ", ".join(str(p.relative_to(HERE.parent)) for p in stale)
            print(f"{names}: out of date: run python benchmarks/readme_table.py --write", file=sys.stderr)
            return 1
        return 0
    for name, text in generated.items():
        print(f"<!-- generated: {name} -->\n{text}\n<!-- /generated -->\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
