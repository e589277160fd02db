#!/usr/bin/env bash
# Set up a fresh virtualenv with every extra and run the whole test suite.
# torch is pinned: an unpinned torch pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
step() { echo "tests/run.sh [$(date +%H:%M:%S)] $*" >&2; }
if [ -x .venv/bin/python ]; then
    step "using the existing .venv"
else
    step "1/5 creating .venv"
    "$PY" -m venv .venv
fi
. .venv/bin/activate
step "2/5 upgrading pip"
python -m pip install -q --upgrade pip
step "3/5 installing torch 2.13.0 (CPU; ~200 MB, the slow step)"
python -m pip install -q "torch==2.13.0"
step "4/5 installing semloop with every extra (.[all])"
# the distribution was renamed semloop-guard: an older `semloop` install here (ours, or PyPI's other
# project of that name) would claim the same `import semloop`
python -m pip uninstall -q -y semloop 2>/dev/null || true
python -m pip install -q -e ".[all]"
step "5/5 running pytest"
python -m pytest "$@"
