#!/usr/bin/env bash
# Runs a program of a relocated pax-ocl bundle with the bundle's environment (env.sh).
#   bin/pax-ocl ARGS...        pax-ocl itself (bin/pax-ocl is a link to this script)
#   bin/run PROGRAM ARGS...    any program in libexec/ (test_kernels, bench_train_step, ...)
set -euo pipefail
bin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=env.sh
source "$bin/../env.sh"
prog=$(basename "$0")
if [[ $prog == run ]]; then
  (($#)) || { echo "run: name a program: $(ls "$PAX_OCL_BUNDLE/libexec" | tr '\n' ' ')" >&2; exit 2; }
  prog=$1
  shift
fi
[[ -x "$PAX_OCL_BUNDLE/libexec/$prog" ]] || { echo "run: no program '$prog' in $PAX_OCL_BUNDLE/libexec" >&2; exit 2; }
if [[ -z $PAX_OCL_BUNDLE_DRIVERS ]]; then
  echo "pax-ocl: no OpenCL driver on this machine (looked for libnvidia-opencl.so.1, libamdocl64.so, libigdrcl.so, libpocl.so.2 and /etc/OpenCL/vendors); install one: the NVIDIA driver, ROCm's OpenCL runtime, intel-opencl-icd, or pocl-opencl-icd for CPUs" >&2
  exit 1
fi
exec "$PAX_OCL_BUNDLE/libexec/$prog" "$@"
