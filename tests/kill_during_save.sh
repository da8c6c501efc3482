#!/usr/bin/env bash
# kill -9 of a training process at random moments, while it saves a checkpoint every step in the
# background, repeated ROUNDS times (default 20) on one job directory. After every kill the newest
# checkpoint must read back whole (pax-ocl export verifies sizes and CRC32C of every file), and the
# restarted job must resume from the newest checkpoint on disk: nothing before it is lost, and no
# half-written checkpoint is ever taken for one. Usage: kill_during_save.sh PAX_OCL [ROUNDS]
set -u
pax=$1 rounds=${2:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
job="$work/job"
args=(train --devices=0 --fdl.DATA=synthetic --fdl.VOCAB_SIZE=512 --fdl.NUM_LAYERS=2 --fdl.MODEL_DIMS=64
      --fdl.HIDDEN_DIMS=256 --fdl.NUM_HEADS=4 --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=32 --fdl.PERCORE_BATCH_SIZE=4
      --fdl.MAX_STEPS=1000000 --fdl.EVAL_INTERVAL_STEPS=0 --fdl.SUMMARY_INTERVAL_STEPS=1000
      --fdl.CHECKPOINT_EVERY_N_STEPS=1 --fdl.CHECKPOINT_MAX_TO_KEEP=3 --job_log_dir="$job")
newest() { ls "$job/checkpoints" 2>/dev/null | grep -E '^checkpoint_[0-9]{8}$' | sort | tail -1; }
previous=-1
for round in $(seq 1 "$rounds"); do
  before=$(newest)
  "$pax" "${args[@]}" >"$work/out" 2>&1 &
  pid=$!
  # Odd rounds kill at a random moment from the start (restores included). Even rounds, and every
  # round until a first checkpoint exists, first wait for a new save: on a loaded machine start-up
  # alone can outlast the kill window, and then no round would ever get further than the last.
  if (( round % 2 == 0 )) || [[ -z $before ]]; then
    for _ in $(seq 1 1200); do
      [[ $(newest) != "$before" ]] && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  # Let it restore and train a little: 0.2 to 1.4 s, so kills land in restores, steps and saves.
  sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.2 + (r % 120) / 100 }')"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  # A run that got past its restore (it saved or trained) resumed, and from the newest checkpoint
  # there was: starting afresh beside a good checkpoint is as wrong as taking an older one.
  if [[ -n $before ]]; then
    if grep -q "resumed from" "$work/out"; then
      if ! grep -q "resumed from $job/checkpoints/$before " "$work/out"; then
        echo "FAIL: round $round did not resume from $before"; grep resumed "$work/out"; exit 1
      fi
    elif grep -qE "first step done|checkpoint of step" "$work/out"; then
      echo "FAIL: round $round started afresh although $before existed"; tail -n 5 "$work/out"; exit 1
    fi
  fi
  latest=$(newest)
  [[ -n $latest ]] || continue  # killed before the first save
  if ! "$pax" export --job_log_dir="$job" --output="$work/check.bin" >"$work/export" 2>&1; then
    echo "FAIL: round $round: no checkpoint reads back"; cat "$work/export"; exit 1
  fi
  if grep -q "skipping" "$work/export"; then echo "FAIL: round $round: a committed checkpoint is damaged"; cat "$work/export"; exit 1; fi
  step=$((10#${latest#checkpoint_}))
  if (( step < previous )); then echo "FAIL: round $round: newest checkpoint went back from $previous to $step"; exit 1; fi
  previous=$step
done
(( previous > 0 )) || { echo "FAIL: no checkpoint after $rounds rounds; the last run printed:"; tail -n 20 "$work/out"; exit 1; }
echo "PASS: $rounds kills; every restart found a complete checkpoint; the newest reached step $previous"
