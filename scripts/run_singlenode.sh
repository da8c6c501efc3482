#!/usr/bin/env bash
# Training on one machine, like Pax's run_pile_singlenode.sh: one process driving DEVICES devices
# (ICI [DEVICES,1,1]), or PROCESSES processes under mpirun with DEVICES devices each
# (DCN [PROCESSES,1,1]). Re-running with the same LOG_DIR resumes from its newest checkpoint.
# Usage: scripts/run_singlenode.sh [CONFIG (Default)] [DEVICES (1)] [PERCORE_BATCH_SIZE (4)] [LOG_DIR] [pax-ocl flags...]
#   scripts/run_singlenode.sh Pile126M 2 4 runs/pile --fdl.DATA=/data/pile
#   PROCESSES=2 scripts/run_singlenode.sh Default 1 4 runs/two-processes
# Env: PROCESSES (default 1), PAX_OCL (default build/pax-ocl), MPIEXEC (default mpirun).
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-Default}
devices=${2:-1}
batch=${3:-4}
log_dir=${4:-runs/$config-singlenode}
shift $(( $# < 4 ? $# : 4 ))
processes=${PROCESSES:-1}
pax=${PAX_OCL:-build/pax-ocl}
[[ -x $pax ]] || { echo "run_singlenode.sh: $pax not found; build first (scripts/setup.sh)" >&2; exit 2; }
cmd=("$pax" train --fdl_config="$config" --job_log_dir="$log_dir" --devices="0-$((devices - 1))"
     --fdl.PERCORE_BATCH_SIZE="$batch" --fdl.ICI_MESH_SHAPE="[$devices,1,1]" --fdl.DCN_MESH_SHAPE="[$processes,1,1]" "$@")
if (( processes > 1 )); then
  [[ $(id -u) == 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  exec "${MPIEXEC:-mpirun}" --oversubscribe -np "$processes" "${cmd[@]}"
fi
exec "${cmd[@]}"
