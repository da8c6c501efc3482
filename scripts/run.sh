#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs the dependencies, builds, and runs the
# default experiment. Until training lands, that is the device inventory with a verified kernel
# run on every selected device: `pax-ocl devices --check`. Extra arguments go to pax-ocl.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec "${BUILD_DIR:-build}/pax-ocl" devices --check "$@"
