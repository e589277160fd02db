"""What every converter in this folder does once its runs are semloop traces: join our hand-written
labels by trace id and write the labeled traces split into dev and test.

A label file holds one JSON object per line: ``{"id", "label", "confidence", "note", "split"}``
(see ``benchmarks/labels/README.md``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def load_labels(path: Path) -> dict[str, dict]:
    """Trace id → its label row; an id labeled twice is refused (which one would count?)."""
    labels: dict[str, dict] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            if row["id"] in labels:
                raise SystemExit(f"{path}:{n}: duplicate label for {row['id']}")
            labels[row["id"]] = row
    return labels


def join(trace: dict, label: dict) -> dict:
    """The trace with its label row's fields; refuses a label whose onset is not one of its steps."""
    onset = label["label"].get("onset")
    if onset is not None and not 0 <= onset < len(trace["steps"]):
        raise SystemExit(f"{trace['id']}: onset {onset} outside 0..{len(trace['steps']) - 1}")
    return {**trace, "label": label["label"], "confidence": label["confidence"],
            "note": label["note"], "split": label["split"]}


def write_labeled(traces: list[dict], labels: dict[str, dict], out: Path, stem: str, unlabeled: bool) -> set[str]:
    """Write the labeled `traces` to ``<out>/<stem>_dev.jsonl`` and ``<stem>_test.jsonl`` (with
    `unlabeled`, every trace to ``<stem>_all.jsonl`` too) and a summary line on stderr. Returns
    the ids that had a label."""
    by_split: dict[str, list[dict]] = {"dev": [], "test": []}
    for trace in traces:
        if trace["id"] in labels:
            row = join(trace, labels[trace["id"]])
            by_split[row["split"]].append(row)
    for split, rows in by_split.items():
        _write_jsonl(out / f"{stem}_{split}.jsonl", rows)
    if unlabeled:
        _write_jsonl(out / f"{stem}_all.jsonl", traces)
    loops = {s: sum(r["label"]["loop"] for r in rows) for s, rows in by_split.items()}
    print(f"{stem}: {len(traces)} runs, labeled dev {len(by_split['dev'])} ({loops['dev']} loops), "
          f"test {len(by_split['test'])} ({loops['test']} loops)", file=sys.stderr)
    return {row["id"] for rows in by_split.values() for row in rows}


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def parser(doc: str, source: str, source_help: str) -> argparse.ArgumentParser:
    """The command line of a converter of one source: `source` (a folder or file option), then
    ``--name`` (trace-id prefix), ``--labels``, ``--out`` and ``--unlabeled``."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument(source, type=Path, required=True, help=source_help)
    ap.add_argument("--name", required=True, help="trace-id prefix, e.g. mini-swe-agent/gemini-3-pro")
    add_output_args(ap)
    return ap


def add_output_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--labels", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--unlabeled", action="store_true", help="also write <name>_all.jsonl")


def write_named(traces: list[dict], args: argparse.Namespace) -> set[str]:
    """`write_labeled` for a converter made with `parser`: its labels, under ``<out>/<name>_*``."""
    args.out.mkdir(parents=True, exist_ok=True)
    return write_labeled(traces, load_labels(args.labels), args.out, args.name.replace("/", "_"), args.unlabeled)
