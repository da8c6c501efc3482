#!/usr/bin/env bash
# When one rank of a data-parallel, FSDP, tensor- or pipeline-parallel job dies (SIGKILL, as on a lost node), the launcher
# must end the whole job with a non-zero status within a bounded time instead of leaving the others
# hanging in a collective or a pipeline stage's receive.
# Usage: rank_death.sh MPIEXEC PAX_OCL [DCN_MESH_SHAPE (default [2,1,1])] [NUM_LAYERS (default 1)]
set -u
mpiexec=$1 pax=$2 mesh=${3:-[2,1,1]} layers=${4:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$mpiexec" --oversubscribe -np 2 "$pax" train --devices=0 --fdl.DATA=synthetic --fdl.VOCAB_SIZE=512 \
  --fdl.NUM_LAYERS="$layers" --fdl.MODEL_DIMS=64 --fdl.HIDDEN_DIMS=128 --fdl.NUM_HEADS=2 --fdl.DIMS_PER_HEAD=32 \
  --fdl.MAX_SEQ_LEN=32 --fdl.PERCORE_BATCH_SIZE=2 --fdl.DCN_MESH_SHAPE="$mesh" --fdl.MAX_STEPS=1000000 \
  --fdl.EVAL_INTERVAL_STEPS=0 --fdl.PREEMPTION_GRACE_SECONDS=5 --job_log_dir="$work/job" >"$work/out" 2>&1 &
launcher=$!
# Wait until rank 1 is training (its log says so), then kill it.
victim=""
for _ in $(seq 1 1800); do  # up to 3 min: a cold cache compiles every kernel first
  if grep -q "first step done" "$work/job/train-rank1.log" 2>/dev/null; then
    for p in $(pgrep -f "pax-ocl train"); do
      if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then victim=$p; fi
    done
    break
  fi
  sleep 0.1
done
stop_all() { pkill -9 -f "$work/job" 2>/dev/null; kill -9 $launcher 2>/dev/null; }
[[ -n $victim ]] || { echo "FAIL: rank 1 never started training"; tail -5 "$work/out"; stop_all; exit 1; }
kill -9 "$victim"
start=$(date +%s)
while kill -0 $launcher 2>/dev/null; do
  if (( $(date +%s) - start > 60 )); then
    echo "FAIL: the job still runs 60 s after rank 1 died"; stop_all; exit 1
  fi
  sleep 0.2
done
wait $launcher
rc=$?
elapsed=$(( $(date +%s) - start ))
if [[ $rc -eq 0 ]]; then echo "FAIL: the job exited 0 after rank 1 died"; exit 1; fi
echo "PASS: the job ended with status $rc ${elapsed}s after rank 1 died"
