#!/usr/bin/env bash
# One rank of a two-process FSDP job (each process writes its own part of every checkpoint), or
# of another layout (a pipeline's stages: one waits on the other's messages), is killed (SIGKILL, as on a lost node) while an asynchronous save is in flight. Then:
#   - the surviving process ends, non-zero, within 30 s;
#   - the newest checkpoint on disk is a complete one (pax-ocl export reads it back whole: sizes,
#     CRC32C) and the interrupted save never became a checkpoint unless it was complete;
#   - a restarted two-process job resumes from exactly that checkpoint and finishes.
# Usage: rank_death_during_save.sh MPIEXEC PAX_OCL [DCN_MESH_SHAPE (default [1,2,1])]
set -u
mpiexec=$1 pax=$2 mesh=${3:-[1,2,1]}
work=$(mktemp -d)
trap 'pkill -9 -f "$work/job" 2>/dev/null; rm -rf "$work"' EXIT
job="$work/job"
# A model whose state (parameters and both Adam moments: ~30 MB) takes a while to write, saved
# every step in the background, so a save is in flight most of the time.
args=(train --devices=0 --fdl.DATA=synthetic --fdl.VOCAB_SIZE=512 --fdl.NUM_LAYERS=4 --fdl.MODEL_DIMS=256
      --fdl.HIDDEN_DIMS=512 --fdl.NUM_HEADS=4 --fdl.DIMS_PER_HEAD=64 --fdl.MAX_SEQ_LEN=32 --fdl.PERCORE_BATCH_SIZE=2
      --fdl.DCN_MESH_SHAPE="$mesh" --fdl.EVAL_INTERVAL_STEPS=0 --fdl.EVAL_LOOP_NUM_BATCHES=1
      --fdl.CHECKPOINT_EVERY_N_STEPS=1 --fdl.CHECKPOINT_MAX_TO_KEEP=2 --fdl.ASYNC_CHECKPOINTING=true
      --fdl.PREEMPTION_GRACE_SECONDS=5 --job_log_dir="$job")
finals() { ls "$job/checkpoints" 2>/dev/null | grep -E '^checkpoint_[0-9]{8}$' | sort; }
"$mpiexec" --oversubscribe -np 2 "$pax" "${args[@]}" --fdl.MAX_STEPS=1000000 >"$work/out" 2>&1 &
launcher=$!
# Once two checkpoints are complete, wait for a save in flight (its temporary directory) and
# kill rank 1 at that moment.
victim="" inflight=""
for _ in $(seq 1 3600); do  # up to 6 min: a cold cache compiles every kernel first
  if (( $(finals | wc -l) >= 2 )); then  # steps trained, so "the one before" is not step 0
    inflight=$(ls "$job/checkpoints" 2>/dev/null | grep -E '^tmp\.checkpoint_[0-9]{8}$' | head -1)
    if [[ -n $inflight ]]; then
      for p in $(pgrep -f "$job"); do
        if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then victim=$p; fi
      done
      [[ -n $victim ]] && break
    fi
  fi
  kill -0 $launcher 2>/dev/null || break
  sleep 0.05
done
[[ -n $victim ]] || { echo "FAIL: never saw a save in flight with rank 1 running"; tail -5 "$work/out"; exit 1; }
kill -9 "$victim"
start=$(date +%s)
while kill -0 $launcher 2>/dev/null; do
  if (( $(date +%s) - start > 30 )); then echo "FAIL: the job still runs 30 s after rank 1 died mid-save"; exit 1; fi
  sleep 0.2
done
wait $launcher
rc=$?
elapsed=$(( $(date +%s) - start ))
(( rc != 0 )) || { echo "FAIL: the job exited 0 after rank 1 died"; exit 1; }
newest=$(finals | tail -1)
[[ -n $newest ]] || { echo "FAIL: no complete checkpoint left"; ls -la "$job/checkpoints"; exit 1; }
if ! "$pax" export --job_log_dir="$job" --output="$work/check.safetensors" >"$work/export" 2>&1 || grep -q skipping "$work/export"; then
  echo "FAIL: the newest checkpoint $newest does not read back whole"; cat "$work/export"; exit 1
fi
grep -q "exported $job/checkpoints/$newest " "$work/export" || { echo "FAIL: export did not take $newest"; cat "$work/export"; exit 1; }
# The restart resumes from exactly that checkpoint and runs two more steps.
step=$((10#${newest#checkpoint_}))
"$mpiexec" --oversubscribe -np 2 "$pax" "${args[@]}" --fdl.MAX_STEPS=$((step + 2)) >"$work/again" 2>&1
again=$?
(( again == 0 )) || { echo "FAIL: the restart exited $again"; tail -5 "$work/again"; exit 1; }
grep -q "resumed from $job/checkpoints/$newest " "$work/again" || { echo "FAIL: the restart did not resume from $newest"; grep -i resum "$work/again"; exit 1; }
echo "PASS: rank 1 killed while $inflight was being written; the job ended (status $rc) ${elapsed}s later; $newest read back whole and the restart resumed from it"
