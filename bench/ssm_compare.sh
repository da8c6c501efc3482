#!/usr/bin/env bash
# Attention vs state-space vs hybrid at equal parameters and equal wall-clock (issue 21): the
# Default GPT (4 attention blocks), SsmKJV (praxis's SSMTransformer: every block's attention
# replaced by the S4D SSM, the MLP widened to the same parameter count) and HybridKJV (attention and
# SSM blocks alternating), each trained on the KJV for the same wall-clock budget on this host.
# Each model first runs CALIBRATION steps to measure its speed; its real run then gets as many steps
# as fit in the budget at that speed, with its learning-rate schedule fitted to them (warm-up 50,
# cosine decay to the last step), and evaluates on the test split 6 times along the way and at the
# end. Output: a table (parameters, tok/s, steps, the final validation log-perplexity) and, with
# gnuplot, a PNG of validation log-perplexity against training seconds (eval time excluded).
# Usage: bench/ssm_compare.sh [SECONDS per model (default 300)] [OUTPUT DIR (default docs/images)]
# Env:   EXPERIMENTS (default "Default SsmKJV HybridKJV"), EXTRA (more pax-ocl flags, e.g. --devices=0)
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:-300}
outdir=${2:-docs/images}
experiments=${EXPERIMENTS:-Default SsmKJV HybridKJV}
calibration=30
[[ -x build/pax-ocl ]] || { echo "bench/ssm_compare.sh: build first (scripts/setup.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$outdir"
tokens_per_step=1024  # the KJV experiments: 8 sequences x 128 tokens
common="--devices=0 --enable_checkpoint_saving=false --fdl.EVAL_LOOP_NUM_BATCHES=40 ${EXTRA:-}"

printf '# host: %s, %s cores; %s s of training per model\n' "$(lscpu | sed -n 's/^Model name: *//p' | head -1)" "$(nproc)" "$budget"
printf '%-10s %12s %9s %7s %16s\n' experiment parameters tok/s steps "val log_pplx"
: >"$work/curves.dat"
for exp in $experiments; do
  # Calibration: the speed over the second half of its steps (compiles and GEMM timing stay out).
  # shellcheck disable=SC2086
  build/pax-ocl train --fdl_config="$exp" --fdl.MAX_STEPS=$calibration --fdl.SUMMARY_INTERVAL_STEPS=$((calibration / 2)) \
    --fdl.EVAL_INTERVAL_STEPS=0 --fdl.EVAL_LOOP_NUM_BATCHES=1 $common --job_log_dir="$work/cal-$exp" >"$work/cal-$exp.out" 2>&1 ||
    { echo "$exp: calibration failed" >&2; cat "$work/cal-$exp.out" >&2; exit 1; }
  toks=$(grep -oP '[0-9.]+(?= tok/s)' "$work/cal-$exp.out" | tail -1)
  params=$(grep -oP '[0-9.]+M(?= parameters)' "$work/cal-$exp.out" | head -1)
  steps=$(awk -v b="$budget" -v t="$toks" -v n=$tokens_per_step 'BEGIN { printf "%d", b * t / n }')
  every=$(( steps / 6 > 0 ? steps / 6 : 1 ))
  # shellcheck disable=SC2086
  build/pax-ocl train --fdl_config="$exp" --fdl.MAX_STEPS="$steps" --fdl.LR_COS_WARMUP=50 --fdl.LR_COS_DECAY_START=51 \
    --fdl.LR_COS_DECAY_END="$steps" --fdl.EVAL_INTERVAL_STEPS="$every" --fdl.SUMMARY_INTERVAL_STEPS=$((every)) $common \
    --job_log_dir="$work/$exp" >"$work/$exp.out" 2>&1 || { echo "$exp: training failed" >&2; cat "$work/$exp.out" >&2; exit 1; }
  final=$(grep -oP 'eval_test at step [0-9]+: loss [0-9.]+  log_pplx \K[0-9.]+' "$work/$exp.out" | tail -1)
  printf '%-10s %12s %9.0f %7d %16s\n' "$exp" "$params" "$toks" "$steps" "$final"
  # The curve: seconds of training (steps at the calibrated speed) against validation log-perplexity.
  { echo "\"$exp\""
    grep -oP 'eval_test at step \K[0-9]+: loss [0-9.]+  log_pplx [0-9.]+' "$work/$exp.out" |
      awk -v t="$toks" -v n=$tokens_per_step '{ sub(":", "", $1); printf "%.1f %s\n", $1 * n / t, $5 }'
    printf '\n\n'; } >>"$work/curves.dat"
done
cp "$work/curves.dat" "$outdir/ssm_compare.dat"
if command -v gnuplot >/dev/null; then
  gnuplot <<GP
set terminal pngcairo size 800,500 noenhanced
set output "$outdir/ssm_compare.png"
set title "KJV, equal parameters, ${budget} s per model: validation log-perplexity"
set xlabel "training seconds (this host)"
set ylabel "eval_test log_pplx"
set grid
set key top right
plot for [i=0:*] "$outdir/ssm_compare.dat" index i using 1:2 with linespoints title columnheader(1)
GP
  echo "plot: $outdir/ssm_compare.png"
fi
