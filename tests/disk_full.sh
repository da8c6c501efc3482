#!/usr/bin/env bash
# The disk fills up (a small tmpfs) during a checkpoint write and during `data prepare`: the job
# reports it and exits non-zero, every checkpoint saved before stays whole, a prepared dataset stays
# usable, and once there is room again the job resumes from the last checkpoint. Needs root (mount);
# prints SKIP otherwise. Usage: disk_full.sh PAX_OCL
set -u
pax=$1
work=$(mktemp -d)
disk="$work/disk"
mkdir -p "$disk"
cleanup() { umount "$disk" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
if ! mount -t tmpfs -o size=4m tmpfs "$disk" 2>/dev/null; then echo "SKIP: cannot mount a tmpfs here (needs root)"; exit 0; fi
fail() { echo "FAIL: $*"; exit 1; }

# --- a checkpoint write runs out of space -----------------------------------------------------
# ~1.6 MB per checkpoint: steps 0 and 2 fit in 4 MB, step 4 does not.
job="$disk/job"
args=(train --devices=0 --fdl.DATA=synthetic --fdl.VOCAB_SIZE=512 --fdl.NUM_LAYERS=2 --fdl.MODEL_DIMS=64
      --fdl.HIDDEN_DIMS=256 --fdl.NUM_HEADS=4 --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=32 --fdl.PERCORE_BATCH_SIZE=2
      --fdl.EVAL_INTERVAL_STEPS=0 --fdl.SUMMARY_INTERVAL_STEPS=1 --fdl.CHECKPOINT_EVERY_N_STEPS=2 --job_log_dir="$job")
"$pax" "${args[@]}" --fdl.MAX_STEPS=8 >"$work/out1" 2>"$work/err1"
status=$?
(( status == 3 )) || { cat "$work/err1"; fail "a full disk during a checkpoint write ended with status $status, expected 3"; }
grep -q "No space left on device" "$work/err1" || { cat "$work/err1"; fail "the error does not say the disk is full"; }
ls "$job/checkpoints" | grep -q '^checkpoint_00000002$' || fail "the checkpoint of step 2 is gone: $(ls "$job/checkpoints")"
"$pax" export --job_log_dir="$job" --output="$work/w.bin" >"$work/export" 2>&1 || { cat "$work/export"; fail "no checkpoint reads back"; }
grep -q "skipping" "$work/export" && { cat "$work/export"; fail "a committed checkpoint was damaged by the full disk"; }
grep -q "(step 2)" "$work/export" || { cat "$work/export"; fail "the newest whole checkpoint is not step 2"; }
# Room again: the job resumes from step 2 and finishes.
mount -o remount,size=64m "$disk" || fail "cannot grow the tmpfs"
"$pax" "${args[@]}" --fdl.MAX_STEPS=6 >"$work/out2" 2>"$work/err2" || { cat "$work/err2"; fail "the resumed job failed"; }
grep -q "resumed from $job/checkpoints/checkpoint_00000002 (step 2" "$work/err2" || { cat "$work/err2"; fail "did not resume from step 2"; }
ls "$job/checkpoints" | grep -q '^checkpoint_00000006$' || fail "the resumed job saved no final checkpoint"
ls "$job/checkpoints" | grep -q '^tmp\.' && fail "a temporary directory was left behind: $(ls "$job/checkpoints")"

# --- data prepare runs out of space -------------------------------------------------------------
text="$work/story.txt"
for i in $(seq 1 400); do echo "the quick brown fox $i jumps over the lazy dog and runs far away"; done >"$text"
data="$disk/data"
"$pax" data prepare --text="$text" --output_dir="$data" --vocab_size=64 --model_type=bpe >"$work/prep1" 2>&1 \
  || { cat "$work/prep1"; fail "the first prepare failed"; }
dd if=/dev/zero of="$disk/filler" bs=64k 2>/dev/null  # fill the disk (dd stops at ENOSPC)
"$pax" data prepare --text="$text" --output_dir="$data" --vocab_size=64 --model_type=bpe >"$work/prep2" 2>&1
status=$?
(( status != 0 )) || fail "prepare on a full disk reported success"
grep -q "No space left on device" "$work/prep2" || { cat "$work/prep2"; fail "prepare's error does not say the disk is full"; }
(( $(grep -c . "$work/prep2") <= 2 )) || { cat "$work/prep2"; fail "prepare's error is not one line"; }
"$pax" data inspect --data="$data" --batches=1 --fdl.MAX_SEQ_LEN=16 --fdl.PERCORE_BATCH_SIZE=2 >"$work/inspect" 2>&1 \
  || { cat "$work/inspect"; fail "the dataset prepared before the disk filled is no longer usable"; }
rm -f "$disk/filler"
"$pax" data prepare --text="$text" --output_dir="$data" --vocab_size=64 --model_type=bpe >"$work/prep3" 2>&1 \
  || { cat "$work/prep3"; fail "prepare failed once there was room again"; }
leftovers=$(ls -a "$disk" | grep -v -E '^(\.|\.\.|job|data|data\.lock)$')
[[ -z $leftovers ]] || fail "prepare left temporaries behind: $leftovers"
echo "PASS: full disk during a checkpoint write (status 3, steps 0 and 2 kept, resumed from 2) and during data prepare (old dataset usable)"
