#!/usr/bin/env bash
# One invocation, one machine: pax-ocl's training step and PyTorch CPU references of the same
# model (bench/torch_reference.py: same configs, optimizer and thread count) — eager with the
# matmul attention, eager with SDPA, and torch.compile with SDPA — then the same in bfloat16:
# pax-ocl's FPROP_DTYPE=bfloat16 beside PyTorch's eager SDPA step under bfloat16 autocast — then
# pax-ocl's GEMMs (oneDNN, BLIS and the OpenCL kernels) against OpenBLAS on the model's GEMM shapes.
# Usage: bench/compare.sh [CONFIGS (default "A B C D")] [STEPS (default 3)]
# Env:   TORCH_PYTHON   a python with torch (default: /tmp/torch-venv/bin/python, created from
#                       bench/requirements-torch.txt when missing; PyTorch is a benchmark-only
#                       dependency, never needed to build or test pax-ocl)
#        THREADS        CPU threads for both (default: nproc)
#        MIN_SECONDS    both time more than STEPS steps until this many seconds were timed
#                       (default 2: a small config's 3 steps took 48 to 71 ms on a drifting VM)
set -euo pipefail
cd "$(dirname "$0")/.."
configs=${1:-"A B C D"}
steps=${2:-3}
threads=${THREADS:-$(nproc)}
min_seconds=${MIN_SECONDS:-2}
[[ -x build/bench/bench_train_step ]] || { echo "bench/compare.sh: build first (scripts/setup.sh)" >&2; exit 2; }

python=${TORCH_PYTHON:-/tmp/torch-venv/bin/python}
if ! "$python" -c "import torch" 2>/dev/null; then
  echo "# installing PyTorch for the comparison into /tmp/torch-venv (bench/requirements-torch.txt)"
  python3 -m venv /tmp/torch-venv
  /tmp/torch-venv/bin/pip install -q -r bench/requirements-torch.txt
  python=/tmp/torch-venv/bin/python
fi

echo "# host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); threads: $threads"
# pax-ocl: one PoCL device with every core (the comparison is one device against one process).
pax=(env POCL_DEVICES=pthread POCL_MAX_PTHREAD_COUNT="$threads" BENCH_MIN_SECONDS="$min_seconds" build/bench/bench_train_step)
torch=("$python" bench/torch_reference.py --steps "$steps" --min-seconds "$min_seconds" --warmup 2 --threads "$threads")
for c in $configs; do "${pax[@]}" "$c" "$steps"; done
for variant in "" "--sdpa" "--sdpa --compile"; do
  # shellcheck disable=SC2086  # the variant's flags split on purpose
  for c in $configs; do "${torch[@]}" --config "$c" $variant; done
done
echo "# bfloat16: pax-ocl FPROP_DTYPE=bfloat16, PyTorch eager SDPA under bfloat16 autocast"
for c in $configs; do "${pax[@]}" "$c" "$steps" auto bfloat16; done
for c in $configs; do "${torch[@]}" --config "$c" --sdpa --precision bf16; done
if [[ -x build/bench/bench_gemm ]]; then
  POCL_DEVICES=pthread POCL_MAX_PTHREAD_COUNT=$threads OPENBLAS_NUM_THREADS=$threads build/bench/bench_gemm all 3
fi
