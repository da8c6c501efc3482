#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs the dependencies, builds, and trains the
# default experiment: a GPT of about 4M parameters on the King James Bible (Debian's bible-kjv,
# tokenised on first use), a few minutes on 2 CPU cores, with evaluations and TensorBoard
# summaries under ./runs/. Extra arguments go to `pax-ocl train` (e.g. --fdl.MAX_STEPS=100).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
"${BUILD_DIR:-build}/pax-ocl" devices
exec "${BUILD_DIR:-build}/pax-ocl" train "$@"
