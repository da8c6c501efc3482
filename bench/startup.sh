#!/usr/bin/env bash
# Start-up of a training job as users see it: `pax-ocl train` on the default experiment for 2
# steps, from empty pax-ocl and PoCL caches (cold), then twice on the caches it left (warm), each a
# fresh process, ROUNDS times; prints each run's "step program built" and "first step done" figures
# from its start-up lines, and the step-2 loss (equal in every run).
# Usage: bench/startup.sh [ROUNDS] [BUILD_DIR]   (after scripts/setup.sh; default 2 rounds, build/)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
build=${2:-build}
[[ -x $build/pax-ocl ]] || { echo "bench/startup.sh: $build/pax-ocl not found; run scripts/setup.sh first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for round in $(seq "$rounds"); do
  rm -rf "${work:?}"/*
  export PAX_OCL_CACHE_DIR=$work/pax POCL_CACHE_DIR=$work/pocl
  for run in cold warm1 warm2; do  # a job directory each: a second run in one would resume at step 2
    out=$("$build/pax-ocl" train --fdl.MAX_STEPS=2 --job_log_dir="$work/run-$run" 2>&1)
    built=$(sed -n 's/.*step program built ([^)]*): \([0-9]*\) ms.*/\1/p' <<<"$out")
    first=$(sed -n 's/.*first step done \([0-9]*\) ms after start.*/\1/p' <<<"$out")
    loss=$(sed -n 's/.*step *2\/2  loss \([0-9.]*\).*/\1/p' <<<"$out")
    echo "round $round $run: step program built ${built:-?} ms, first step done ${first:-?} ms after start, loss ${loss:-?}"
  done
done
