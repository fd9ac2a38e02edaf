#!/usr/bin/env bash
# The CUDA checks in one run, for a machine with a GPU and torch but no package index:
#
#     bash benchmarks/device_checks.sh [WHEELS]
#
# WHEELS: a folder holding a libcst wheel for that machine's python3 (`pip download --no-deps libcst
# --python-version 3.12 --only-binary=:all: --platform manylinux_2_28_x86_64 -d WHEELS` on a machine with one);
# without it, libcst must already be importable. Results go to $OUT (default: ./device-out): log.txt,
# trace_cuda.json, reference_cuda.json. Each step has its own time limit, so one that hangs leaves the others'.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-device-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
site=$(mktemp -d)
if [ -n "${1:-}" ]; then
    python3 -m pip install -q --no-index --no-deps --target "$site" "$1"/libcst-*.whl
fi
export PYTHONPATH="$site:$PWD" PYTHONDONTWRITEBYTECODE=1
date; nvidia-smi -L
python3 -c "import torch, libcst; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
echo "== pytest -m cuda"
timeout 300 python3 -m pytest -m cuda -q -p no:cacheprovider -rs tests/test_runtime.py tests/test_reference.py \
    tests/test_reference_cuda.py tests/test_observed_syncs.py 2>&1 | tail -40
echo "== benchmarks/trace_cuda.py"
timeout 150 python3 benchmarks/trace_cuda.py --json "$OUT/trace_cuda.json" 2>&1 | tail -30
echo "== benchmarks/reference_cuda.py"
timeout 300 python3 benchmarks/reference_cuda.py --json "$OUT/reference_cuda.json" 2>"$OUT/reference_cuda.stderr" | tail -40
date
