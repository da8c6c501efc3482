#!/usr/bin/env bash
# pax-ocl on a real Slurm cluster: a local one of 2 emulated nodes (scripts/slurm/local_cluster.sh;
# it installs Debian's slurmctld, slurmd and munge if they are missing), and the project's own
# scripts/slurm/train.sub:
#   1. `sbatch -N 2`: both ranks train with DCN [2,1,1], each writes its own log, a checkpoint lands;
#   2. preemption: SIGUSR1 to the job -> pax-ocl saves and exits 75 -> the script requeues the job ->
#      it resumes from that checkpoint and finishes;
#   3. two jobs chained with --dependency=singleton: the second resumes from the first's checkpoint.
# Only the processes this test started are stopped. Usage: slurm_integration.sh REPO_ROOT PAX_OCL
set -u
repo=$1 pax=$2
work=$(mktemp -d /tmp/pax-ocl-slurm.XXXXXX)
chmod 755 "$work"  # munged (user munge) reaches its socket below it
cleanup() { "$repo/scripts/slurm/local_cluster.sh" down "$work/cluster" >/dev/null 2>&1; [[ -n ${KEEP:-} ]] || rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; scontrol show job "${job:-0}" 2>/dev/null | grep -E "JobState|Reason" | head -2; grep -h "resumed\|stopped\|error" "$work"/run*/train.log 2>/dev/null | tail -5; for f in "$work"/*.out; do echo "--- $f"; tail -20 "$f"; done; exit 1; }

export SLURM_PORT_BASE=$((16817 + ($$ % 40) * 20))
"$repo/scripts/slurm/local_cluster.sh" up "$work/cluster" 2 2 || fail "the local Slurm cluster did not start"
export SLURM_CONF=$work/cluster/slurm.conf
export OMPI_MCA_btl=self,tcp  # the emulated nodes share one hostname: no shared-memory transport between them
export POCL_DEVICES=pthread PAX_OCL=$pax PERCORE_BATCH_SIZE=2 WORKSPACE=$work
small="--fdl.DATA=synthetic --fdl.VOCAB_SIZE=512 --fdl.NUM_LAYERS=2 --fdl.MODEL_DIMS=64 --fdl.HIDDEN_DIMS=256"
small+=" --fdl.NUM_HEADS=4 --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=32 --fdl.EVAL_INTERVAL_STEPS=0"

field() { scontrol show job "$1" 2>/dev/null | grep -oE "$2=[^ ]+" | head -1 | cut -d= -f2; }
# wait_for JOB STATE SECONDS
wait_for() {
  for _ in $(seq $(($3 * 4))); do
    [[ $(field "$1" JobState) == "$2" ]] && return 0
    case $(field "$1" JobState) in FAILED|CANCELLED|TIMEOUT|NODE_FAIL) return 1 ;; esac
    sleep 0.25
  done
  return 1
}
submit() { sbatch --parsable "$@" "$repo/scripts/slurm/train.sub" </dev/null; }

# 1. Two nodes, one task each.
job=$(LOG_DIR=$work/run1 ADDITIONAL_ARGS="$small --fdl.MAX_STEPS=20 --fdl.CHECKPOINT_EVERY_N_STEPS=10" \
      submit -N 2 --job-name=train2 --output="$work/train2.out") || fail "sbatch refused the job"
wait_for "$job" COMPLETED 180 || fail "2-node job $job ended $(field "$job" JobState)"
[[ -s $work/run1/output-$job-0-0.txt && -s $work/run1/output-$job-1-1.txt ]] || fail "missing per-task logs output-$job-<node>-<task>.txt"
grep -q "data parallel over 2 device(s) (1 per process)" "$work/run1/output-$job-0-0.txt" || fail "rank 0 did not train DCN [2,1,1]"
grep -q "step 20 .*\|first step done" "$work/run1/train-rank1.log" || fail "rank 1 did not train"
[[ -f $work/run1/checkpoints/checkpoint_00000020/manifest.pb ]] || fail "no checkpoint of step 20"
echo "ok: 2-node job $job trained with DCN [2,1,1] and saved checkpoint_00000020"

# 2. Preempted with SIGUSR1 (as --signal=USR1@120 does), requeued, resumed.
job=$(LOG_DIR=$work/run2 ADDITIONAL_ARGS="$small --fdl.MAX_STEPS=300 --fdl.CHECKPOINT_EVERY_N_STEPS=0" \
      submit -N 2 --job-name=preempt --output="$work/preempt.out") || fail "sbatch refused the job"
for _ in $(seq 1200); do grep -q "first step done" "$work/run2/train.log" 2>/dev/null && break; sleep 0.25; done
scancel --signal=USR1 "$job"
for _ in $(seq 240); do [[ $(field "$job" Restarts) == 1 ]] && break; sleep 0.25; done
[[ $(field "$job" Restarts) == 1 ]] || fail "job $job was not requeued after SIGUSR1"
for _ in $(seq 120); do [[ $(field "$job" JobState) == PENDING ]] && break; sleep 0.25; done  # requeue settles
# Slurm holds a requeued job ~2 minutes; the test does not wait. By then slurmd has removed the
# PMIx directory and socket of the killed step, which the restart's step (same job and step id)
# creates again; the test waits for that cleanup, and clears what is still left after 30 s.
stale() { compgen -G "$work/cluster/tmp-node*/spmix_appdir_*_$job.*" || compgen -G "$work/cluster/spool-node*/stepd.slurm.pmix.$job.*"; }
for _ in $(seq 120); do
  [[ $(sinfo -h -o %t | sort -u | paste -sd,) == idle ]] && ! stale >/dev/null && break
  sleep 0.25
done
rm -rf "$work"/cluster/tmp-node*/spmix_appdir_*_"$job".* "$work"/cluster/spool-node*/stepd.slurm.pmix."$job".*
# Slurm revokes the killed instance's job credential at the requeue, to the second: a restart in
# that same second is killed as "non-startable: Job credential revoked" (users' requeued jobs wait
# minutes; this test's started within a second once the step's teardown had become quick).
sleep 2
scontrol update JobId="$job" StartTime=now
wait_for "$job" COMPLETED 300 || fail "requeued job $job ended $(field "$job" JobState)"
stopped=$(grep -oE "stopped at step [0-9]+" "$work/run2/train.log" | grep -oE "[0-9]+$") || fail "pax-ocl did not stop on SIGUSR1"
grep -q "resumed from $work/run2/checkpoints/checkpoint_$(printf %08d "$stopped") " "$work/run2/train.log" ||
  fail "the requeued job did not resume from the step-$stopped checkpoint"
grep -q "preempted: checkpoint saved; requeueing" "$work/preempt.out" || fail "train.sub did not requeue"
[[ -d $work/run2/checkpoints/checkpoint_00000300 ]] || fail "the resumed job did not finish"
echo "ok: job $job stopped at step $stopped on SIGUSR1, requeued itself, resumed from that checkpoint, finished"

# 3. Two jobs chained with --dependency=singleton share LOG_DIR: the second continues the first.
first=$(LOG_DIR=$work/run3 ADDITIONAL_ARGS="$small --fdl.MAX_STEPS=10" \
        submit -N 2 --job-name=chain --dependency=singleton --output="$work/chain1.out") || fail "sbatch refused"
second=$(LOG_DIR=$work/run3 ADDITIONAL_ARGS="$small --fdl.MAX_STEPS=20" \
         submit -N 2 --job-name=chain --dependency=singleton --output="$work/chain2.out") || fail "sbatch refused"
wait_for "$second" COMPLETED 300 || fail "chained job $second ended $(field "$second" JobState)"
[[ $(field "$first" JobState) == COMPLETED ]] || fail "the first chained job did not complete first"
grep -q "resumed from $work/run3/checkpoints/checkpoint_00000010 " "$work/run3/train.log" ||
  fail "the second chained job did not resume from the first's checkpoint"
echo "ok: singleton chain $first -> $second resumed at step 10"
# 4. A small sweep: 2 batch sizes x 1 and 2 nodes, gathered into one CSV.
SWEEP_DIR=$work/sweep EXPERIMENTS=Default BATCHES="1 2" ICI_MESHES="[1,1,1]" NODE_COUNTS="1 2" STEPS=10 \
  ADDITIONAL_ARGS="$small" "$repo/scripts/slurm/sweep.sh" "$work/sweep.csv" >"$work/sweep.out" 2>&1 || fail "sweep.sh failed"
rows=$(tail -n +2 "$work/sweep.csv" | grep -c ',COMPLETED,[0-9]')
[[ $rows == 4 ]] || { cat "$work/sweep.csv"; fail "the sweep CSV has $rows completed rows with tok/s, expected 4"; }
echo "ok: sweep of 4 jobs gathered into one CSV"
echo "PASS: Slurm: 2-node training, preemption with requeue and resume, singleton chain, sweep"
