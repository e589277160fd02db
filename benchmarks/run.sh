#!/usr/bin/env bash
# Reproduce benchmarks/results/ (the source of the README's tables and plots).
#   benchmarks/run.sh                 # everything (the sentence-transformers run takes a few minutes)
#   benchmarks/run.sh --detectors exact,semantic,semantic-hashing
# Extra arguments are passed to `semloop bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${VIRTUAL_ENV:-}" ] && [ -f .venv/bin/activate ]; then
    . .venv/bin/activate
fi
DATA=benchmarks/data
if [ ! -f "$DATA/synth_dev.jsonl" ] || [ ! -f "$DATA/synth_test.jsonl" ]; then
    python benchmarks/generate.py --seed 1 --out "$DATA"
fi
# Real traces in their fixed dev/test halves (benchmarks/split_real.py; tune on *.dev only).
# BENCH_EXTRA_DATA="a.jsonl b.jsonl" adds more labelled files (e.g. held-out real data kept outside the repo).
# shellcheck disable=SC2086
semloop bench "$DATA/split/whowhen.dev.jsonl" "$DATA/split/whowhen.test.jsonl" \
    "$DATA/split/tau_airline.dev.jsonl" "$DATA/split/tau_airline.test.jsonl" \
    "$DATA/synth_dev.jsonl" "$DATA/synth_test.jsonl" ${BENCH_EXTRA_DATA:-} \
    --out benchmarks/results --memory-steps 100000 "$@"
# the calibration numbers the README quotes (benchmarks/results/calibration.json, calibration.png)
semloop calibrate "$DATA/split/whowhen.dev.jsonl" "$DATA/split/tau_airline.dev.jsonl" "$DATA/synth_dev.jsonl" --out benchmarks/results --no-progress \
    > benchmarks/results/calibration-snippet.json
echo "README numbers: python benchmarks/readme_table.py --write"
