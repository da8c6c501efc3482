#!/usr/bin/env bash
# A hardware sweep on Slurm: one short training job (scripts/slurm/train.sub) per combination of
# experiment x PERCORE_BATCH_SIZE x ICI mesh x node count, submitted together, waited for, and
# gathered into one CSV (a row per job, failed ones included with their state).
#   EXPERIMENTS="Default SyntheticBench" BATCHES="2 4" ICI_MESHES="[1,1,1] [2,1,1]" NODE_COUNTS="1 2" \
#     scripts/slurm/sweep.sh sweep.csv
# Env: EXPERIMENTS (default Default), BATCHES (default 4), ICI_MESHES (default [1,1,1]; devices per
#   node = their product), NODE_COUNTS (default 1), STEPS (default 30), SWEEP_DIR (job directories,
#   default runs/sweep-<time>), ADDITIONAL_ARGS (passed to every job), SBATCH_ARGS (e.g. "-p gpu"),
#   and train.sub's own variables (PAX_OCL, WORKSPACE, DATA_DIR, ...).
# CSV columns: experiment,percore_batch_size,ici_mesh,nodes,dcn_mesh,job,state,tokens_per_sec,
#   step_ms,mfu_percent,loss,state_mib_per_device
set -uo pipefail
out=${1:-sweep.csv}
here=$(cd "$(dirname "$0")" && pwd)
sweep_dir=${SWEEP_DIR:-$PWD/runs/sweep-$(date +%Y%m%d-%H%M%S)}
steps=${STEPS:-30}
mkdir -p "$sweep_dir"
declare -a rows=()
for experiment in ${EXPERIMENTS:-Default}; do
  for batch in ${BATCHES:-4}; do
    for mesh in ${ICI_MESHES:-[1,1,1]}; do
      for nodes in ${NODE_COUNTS:-1}; do
        devices=$(( $(tr -d '[]' <<<"$mesh" | tr ',' '*') ))
        name="$experiment-b$batch-ici$(tr -d '[],' <<<"$mesh")-n$nodes"
        # shellcheck disable=SC2086
        job=$(CONFIG=$experiment PERCORE_BATCH_SIZE=$batch DEVICES_PER_NODE=$devices ICI_MESH_SHAPE=$mesh \
              LOG_DIR="$sweep_dir/$name" \
              ADDITIONAL_ARGS="--fdl.MAX_STEPS=$steps --fdl.SUMMARY_INTERVAL_STEPS=$steps --fdl.EVAL_INTERVAL_STEPS=0 --enable_checkpoint_saving=false ${ADDITIONAL_ARGS:-}" \
              sbatch --parsable -N "$nodes" --job-name="sweep-$name" --output="$sweep_dir/$name.out" ${SBATCH_ARGS:-} \
                "$here/train.sub" </dev/null) || { echo "sweep.sh: sbatch refused $name" >&2; continue; }
        rows+=("$experiment|$batch|$mesh|$nodes|$job|$sweep_dir/$name")  # meshes hold commas
        echo "submitted $name as job $job"
      done
    done
  done
done

state_of() { scontrol show job "$1" 2>/dev/null | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2; }
for row in "${rows[@]}"; do  # wait for every job to leave the queue
  job=$(cut -d'|' -f5 <<<"$row")
  while true; do
    case $(state_of "$job") in PENDING|RUNNING|CONFIGURING|COMPLETING|REQUEUED|"") ;; *) break ;; esac
    [[ -z $(state_of "$job") ]] && break
    sleep 1
  done
done

echo "experiment,percore_batch_size,ici_mesh,nodes,dcn_mesh,job,state,tokens_per_sec,step_ms,mfu_percent,loss,state_mib_per_device" >"$out"
for row in "${rows[@]}"; do
  IFS='|' read -r experiment batch mesh nodes job dir <<<"$row"
  log="$dir/output-$job-0-0.txt"
  summary=$(grep -E "^step +[0-9]+/[0-9]+  loss" "$log" 2>/dev/null | tail -1)
  tokens=$(grep -oE '[0-9]+ x [0-9]+ tokens per step' "$log" 2>/dev/null | head -1 | awk '{print $1 * $3}')
  tps=$(grep -oE '[0-9]+ tok/s' <<<"$summary" | cut -d' ' -f1)
  step_ms=$([[ -n $tps && -n $tokens ]] && awk -v t="$tokens" -v r="$tps" 'BEGIN { printf "%.1f", 1000 * t / r }')
  mfu=$(grep -oE 'MFU [0-9.]+' <<<"$summary" | cut -d' ' -f2)
  loss=$(awk '{print $4}' <<<"$summary")
  memory=$(grep -oE 'training state: [0-9.]+' "$log" 2>/dev/null | head -1 | awk '{print $3}')
  dcn=$(grep -oE 'DCN \[[0-9,]+\]' "$dir.out" 2>/dev/null | head -1 | cut -d' ' -f2)
  echo "$experiment,$batch,\"$mesh\",$nodes,\"$dcn\",$job,$(state_of "$job"),$tps,$step_ms,$mfu,$loss,$memory" >>"$out"
done
echo "wrote $out (${#rows[@]} job(s))"
