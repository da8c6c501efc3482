#!/usr/bin/env bash
# The training step under data parallelism (DP), FSDP, tensor parallelism (TP), pipeline
# parallelism (PP) and their combinations, overlap of communication with compute on and off, over this process's devices
# (ICI) and over MPI processes (DCN). For each setup: the last summary's tok/s and step time, the
# loss (equal across rows: the correctness check; the layouts differ only in fp32 rounding), the
# device memory of parameters + gradients + Adam state and of activations, from the step trace how
# much of the communication ran hidden behind compute, and `pax-ocl plan`'s estimate of the step
# time on this host for the same layout (plan/plan.h: compute at its MFU, communication at assumed
# link speeds), beside the measured one.
# Usage: bench/parallel_steps.sh [CONFIG (default Default)] [STEPS (default 30)]
# Env:   DEVICES   PoCL devices per process for ICI (default 2; the rows combining axes use 4);
#        BATCH sequences per device
#        (default 4; the 1-device row takes DEVICES x BATCH, the same global batch); MPIEXEC
#        (default mpirun). DCN uses 2 processes of 1 device: its loss matches when DEVICES=2.
#        ROWS: an extended regex; only the rows whose names match run (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-Default}
steps=${2:-30}
devices=${DEVICES:-2}
batch=${BATCH:-4}
mpiexec=${MPIEXEC:-mpirun}
[[ -x build/pax-ocl ]] || { echo "bench/parallel_steps.sh: build first (scripts/setup.sh)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The last summary covers the second half of the steps: start-up (compiles, GEMM timing) stays out.
common="--fdl_config=$config --fdl.MAX_STEPS=$steps --fdl.SUMMARY_INTERVAL_STEPS=$((steps / 2)) --fdl.EVAL_INTERVAL_STEPS=0
        --fdl.TRACE_STEPS=[$((steps - 5)),$((steps - 4))]"
common_plan="--fdl_config=$config"
pocl_devices=$(printf 'pthread %.0s' $(seq "$devices"))

# run NAME LAUNCHER ARGS...: one training run, one result row.
run() {
  local name=$1 launcher=$2
  shift 2
  [[ -z ${ROWS:-} || $name =~ $ROWS ]] || return 0
  local out="$work/$name.out"
  # shellcheck disable=SC2086
  POCL_DEVICES=${POCL_DEVICES_OVERRIDE:-$pocl_devices} $launcher build/pax-ocl train $common "$@" \
    --job_log_dir="$work/$name" >"$out" 2>&1 || { echo "$name: failed, log follows" >&2; cat "$out" >&2; exit 1; }
  local summary hidden memory activations tokens tok_s planned fdl=()
  summary=$(grep -E "step +$steps/$steps  loss" "$out" | tail -1)
  memory=$(grep -oE 'state: [0-9.]+ MiB per device' "$out" | head -1 | grep -oE '[0-9.]+ MiB')
  activations=$(grep -oE 'activations: [0-9.]+ MiB per device' "$out" | head -1 | grep -oE '[0-9.]+ MiB')
  hidden=$(grep -oE '[0-9]+% hidden' "$out" | tr -d '% hidden' | paste -sd/ - || true)
  if [[ -n $hidden ]]; then hidden="$hidden%"; else hidden=n/a; fi
  tokens=$(grep -oE '[0-9]+ x [0-9]+ tokens per step' "$out" | head -1 | awk '{print $1 * $3}')
  tok_s=$(grep -oE '[0-9]+ tok/s' <<<"$summary" | cut -d' ' -f1)
  for a in "$@"; do [[ $a == --fdl.* ]] && fdl+=("$a"); done
  planned=$(build/pax-ocl plan $common_plan "${fdl[@]}" 2>/dev/null | grep -oE '=> [0-9.e+-]+ s per step' | awk '{print $2}')
  printf '%-40s loss %s  %6s tok/s  %6.0f ms/step (plan %6.0f)  state %10s  activations %10s  hidden %s\n' "$name" \
    "$(awk '{print $4}' <<<"$summary")" "$tok_s" "$(awk -v t="$tokens" -v r="$tok_s" 'BEGIN {print 1000 * t / r}')" \
    "$(awk -v p="${planned:-0}" 'BEGIN {print 1000 * p}')" "$memory" "$activations" "$hidden"
}

echo "# host: $(nproc) cores; config $config, $steps steps; hidden: per traced step (and per rank under MPI)"
POCL_DEVICES_OVERRIDE=pthread run "1 device" "" --fdl.PERCORE_BATCH_SIZE=$((devices * batch))
for overlap in true false; do
  run "ICI [$devices,1,1] overlap=$overlap" "" --fdl.PERCORE_BATCH_SIZE=$batch --fdl.ICI_MESH_SHAPE=[$devices,1,1] --fdl.OVERLAP_COMMUNICATION=$overlap
done
run "ICI [$devices,1,1] ICI_ALGORITHM=host" "" --fdl.PERCORE_BATCH_SIZE=$batch --fdl.ICI_MESH_SHAPE=[$devices,1,1] --fdl.ICI_ALGORITHM=host
run "ICI [$devices,1,1] bucket=4MB" "" --fdl.PERCORE_BATCH_SIZE=$batch --fdl.ICI_MESH_SHAPE=[$devices,1,1] --fdl.GRADIENT_BUCKET_BYTES=4000000
for overlap in true false; do
  POCL_DEVICES_OVERRIDE=pthread run "DCN [2,1,1] overlap=$overlap" "$mpiexec --oversubscribe -np 2" \
    --devices=0 --fdl.PERCORE_BATCH_SIZE=$batch --fdl.DCN_MESH_SHAPE=[2,1,1] --fdl.OVERLAP_COMMUNICATION=$overlap
done
for overlap in true false; do
  run "FSDP ICI [1,$devices,1] overlap=$overlap" "" --fdl.PERCORE_BATCH_SIZE=$batch --fdl.ICI_MESH_SHAPE=[1,$devices,1] --fdl.OVERLAP_COMMUNICATION=$overlap
done
run "FSDP ICI [1,$devices,1] prefetch=2" "" --fdl.PERCORE_BATCH_SIZE=$batch --fdl.ICI_MESH_SHAPE=[1,$devices,1] --fdl.FSDP_PREFETCH_DEPTH=2
for overlap in true false; do
  POCL_DEVICES_OVERRIDE=pthread run "FSDP DCN [1,2,1] overlap=$overlap" "$mpiexec --oversubscribe -np 2" \
    --devices=0 --fdl.PERCORE_BATCH_SIZE=$batch --fdl.DCN_MESH_SHAPE=[1,2,1] --fdl.OVERLAP_COMMUNICATION=$overlap
done
for overlap in true false; do
  run "TP ICI [1,1,$devices] overlap=$overlap" "" --fdl.PERCORE_BATCH_SIZE=$batch --fdl.ICI_MESH_SHAPE=[1,1,$devices] --fdl.OVERLAP_COMMUNICATION=$overlap
done
run "TP+SP ICI [1,1,$devices]" "" --fdl.PERCORE_BATCH_SIZE=$batch --fdl.ICI_MESH_SHAPE=[1,1,$devices] --fdl.SEQUENCE_PARALLEL=True
POCL_DEVICES_OVERRIDE=pthread run "TP DCN [1,1,2]" "$mpiexec --oversubscribe -np 2" \
  --devices=0 --fdl.PERCORE_BATCH_SIZE=$batch --fdl.DCN_MESH_SHAPE=[1,1,2]
# Two axes at once on 4 devices: half the batch per device keeps the global batch of the rows above.
POCL_DEVICES_OVERRIDE="pthread pthread pthread pthread" run "TP x DP ICI [2,1,2]" "" \
  --fdl.PERCORE_BATCH_SIZE=$((batch * devices / 4)) --fdl.ICI_MESH_SHAPE=[2,1,2]
POCL_DEVICES_OVERRIDE="pthread pthread pthread pthread" run "TP x FSDP ICI [1,2,2]" "" \
  --fdl.PERCORE_BATCH_SIZE=$((batch * devices / 4)) --fdl.ICI_MESH_SHAPE=[1,2,2]
# Pipeline parallelism: the blocks split over the stage axis, 4 or 8 microbatches per step.
for schedule in 1f1b gpipe; do
  run "PP ICI [$devices,1,1,1] $schedule m=4" "" --fdl.PERCORE_BATCH_SIZE=$batch --fdl.ICI_MESH_SHAPE=[$devices,1,1,1] \
    --fdl.PIPELINE_SCHEDULE=$schedule --fdl.NUM_MICROBATCHES=4
done
run "PP ICI [$devices,1,1,1] 1f1b m=$((devices * batch))" "" --fdl.PERCORE_BATCH_SIZE=$batch \
  --fdl.ICI_MESH_SHAPE=[$devices,1,1,1] --fdl.MICROBATCH_SIZE=1
POCL_DEVICES_OVERRIDE=pthread run "PP DCN [2,1,1,1] m=4" "$mpiexec --oversubscribe -np 2" \
  --devices=0 --fdl.PERCORE_BATCH_SIZE=$batch --fdl.DCN_MESH_SHAPE=[2,1,1,1] --fdl.NUM_MICROBATCHES=4
POCL_DEVICES_OVERRIDE="pthread pthread pthread pthread" run "PP x DP ICI [2,2,1,1] m=2" "" \
  --fdl.PERCORE_BATCH_SIZE=$((batch * devices / 4)) --fdl.ICI_MESH_SHAPE=[2,2,1,1] --fdl.NUM_MICROBATCHES=2
# FSDP inside the stages: the same rows as PP x DP, each stage's Adam moments sharded.
POCL_DEVICES_OVERRIDE="pthread pthread pthread pthread" run "PP x FSDP ICI [2,1,2,1] m=2" "" \
  --fdl.PERCORE_BATCH_SIZE=$((batch * devices / 4)) --fdl.ICI_MESH_SHAPE=[2,1,2,1] --fdl.NUM_MICROBATCHES=2
POCL_DEVICES_OVERRIDE="pthread pthread" run "PP x FSDP ICI [2,1,1,1] x DCN [1,1,2,1]" "$mpiexec --oversubscribe -np 2" \
  --fdl.PERCORE_BATCH_SIZE=$((batch * devices / 4)) --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.DCN_MESH_SHAPE=[1,1,2,1] \
  --fdl.NUM_MICROBATCHES=2
# Tensor parallelism inside the stages: one pipeline of all the rows, microbatches of 2.
POCL_DEVICES_OVERRIDE="pthread pthread pthread pthread" run "PP x TP ICI [2,1,1,2] m=4" "" \
  --fdl.PERCORE_BATCH_SIZE=$((batch * devices / 4)) --fdl.ICI_MESH_SHAPE=[2,1,1,2] --fdl.NUM_MICROBATCHES=4
POCL_DEVICES_OVERRIDE="pthread pthread" run "PP x TP ICI [1,1,1,2] x DCN [2,1,1,1]" "$mpiexec --oversubscribe -np 2" \
  --fdl.PERCORE_BATCH_SIZE=$((batch * devices / 4)) --fdl.ICI_MESH_SHAPE=[1,1,1,2] --fdl.DCN_MESH_SHAPE=[2,1,1,1] \
  --fdl.NUM_MICROBATCHES=4
