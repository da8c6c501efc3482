#!/usr/bin/env bash
# Step-time overhead of checkpointing every K steps: saving off, synchronous, asynchronous
# (ASYNC_CHECKPOINTING: the training thread only copies the state to the host). Reports the mean
# tok/s over all steps (saves included), the time each save held the training thread, and the size.
# Usage: bench/checkpoint_overhead.sh [CONFIG (default Default)] [STEPS (default 60)] [K (default 10)]
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-Default}
steps=${2:-60}
every=${3:-10}
[[ -x build/pax-ocl ]] || { echo "bench/checkpoint_overhead.sh: build first (scripts/setup.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "# host: $(nproc) cores; config $config, $steps steps, a checkpoint every $every steps (and step 0, the end)"
for mode in off sync async; do
  case $mode in
    off) flags="--enable_checkpoint_saving=false" ;;
    sync) flags="--fdl.ASYNC_CHECKPOINTING=false" ;;
    async) flags="--fdl.ASYNC_CHECKPOINTING=true" ;;
  esac
  # shellcheck disable=SC2086
  build/pax-ocl train --fdl_config="$config" --fdl.MAX_STEPS="$steps" --fdl.SUMMARY_INTERVAL_STEPS="$steps" \
    --fdl.EVAL_INTERVAL_STEPS=0 --fdl.CHECKPOINT_EVERY_N_STEPS="$every" $flags --job_log_dir="$work/$mode" \
    >"$work/$mode.out" 2>&1 || { cat "$work/$mode.out" >&2; exit 1; }
  tok=$(grep -oE '[0-9]+ tok/s' "$work/$mode.out" | tail -1)
  paused=$(grep -oE 'training paused [0-9]+ ms' "$work/$mode.out" | grep -oE '[0-9]+' | paste -sd, - || true)
  size=$(du -sh "$work/$mode/checkpoints" 2>/dev/null | cut -f1 || echo 0)
  last=$(ls "$work/$mode/checkpoints" 2>/dev/null | grep -c '^checkpoint_' || true)
  printf '%-6s %12s  training paused per save: [%s] ms  kept %s checkpoint(s), %s\n' "$mode" "$tok" "${paused:-}" "$last" "$size"
done
