#!/usr/bin/env bash
# The relocatable bundle, end to end (ctest label slow): scripts/bundle.sh from BUILD_DIR, unpacked
# into a clean directory, then with `env -i` (no LD_LIBRARY_PATH, no OCL_ICD_VENDORS; PoCL found
# by env.sh among the machine's drivers): `devices --check`, a 3-step training run, one device test
# binary, a program that is not there, and `gpu_check.sh --quick` (every stage but torch passes;
# torch passes or skips).
#
# Usage: tests/bundle_test.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "bundle_test: FAIL: $*" >&2; exit 1; }

DIST_DIR=$work/dist SKIP_BUILD=1 "$src/scripts/bundle.sh" "$build" >"$work/bundle.log" 2>&1 || { cat "$work/bundle.log"; fail "bundle.sh"; }
tgz=$(ls "$work"/dist/*.tar.gz)
mkdir "$work/unpacked"
tar -C "$work/unpacked" -xzf "$tgz"
root=$(ls -d "$work"/unpacked/pax-ocl-*)
mb=$(du -sm "$root" | cut -f1)
# oneDNN alone is 38 MiB (its kernels for every instruction set); the rest was 69 MiB on 2026-11-26.
((mb < 120)) || fail "unpacked bundle is $mb MiB (limit 120)"
for f in bin/pax-ocl bin/run bin/run-tests bin/gpu_check.sh env.sh libexec/pax-ocl lib/libOpenCL.so.1 share/golden VERSION; do
  [[ -e $root/$f ]] || fail "bundle lacks $f"
done
ls "$root"/lib | grep -q -i pocl && fail "bundle carries an OpenCL driver (PoCL)"

clean() {  # a command with nothing from this environment but PoCL's device list and a private cache
  env -i HOME="$work/home" PATH=/usr/bin:/bin TMPDIR="$work" POCL_DEVICES="pthread" \
    POCL_CACHE_DIR="$work/pocl" PAX_OCL_CACHE_DIR="$work/programs" "$@"
}
mkdir -p "$work/home"
cd "$work"

clean "$root/bin/pax-ocl" devices --check >"$work/devices.log" 2>&1 || { cat "$work/devices.log"; fail "devices --check"; }
grep -q "pass" "$work/devices.log" || fail "devices --check printed no pass"

clean "$root/bin/pax-ocl" train --fdl_config=Default --fdl.MAX_STEPS=3 --fdl.EVAL_INTERVAL_STEPS=0 \
  --fdl.ENABLE_CHECKPOINT_SAVING=false --job_log_dir="$work/run" >"$work/train.log" 2>&1 || { tail -20 "$work/train.log"; fail "3-step training"; }
grep -q "step *3/3" "$work/train.log" || { tail -5 "$work/train.log"; fail "training did not reach step 3"; }

clean "$root/bin/run" test_dtype >"$work/test_dtype.log" 2>&1 || { tail -20 "$work/test_dtype.log"; fail "test_dtype"; }
grep -q "PASSED" "$work/test_dtype.log" || fail "test_dtype printed no PASSED"

if clean "$root/bin/run" no_such_program >"$work/missing.log" 2>&1; then fail "a missing program exited 0"; fi
grep -q "no program 'no_such_program'" "$work/missing.log" || fail "missing program: $(cat "$work/missing.log")"

clean "$root/bin/gpu_check.sh" --quick --out "$work/check" >"$work/check.log" 2>&1 || { cat "$work/check.log"; fail "gpu_check.sh --quick"; }
for stage in devices tests gemm step train; do
  grep -q "^$stage,pass," "$work/check/stages.csv" || { cat "$work/check/stages.csv"; fail "gpu_check stage $stage did not pass"; }
done
grep -Eq "^torch,(pass|skipped)" "$work/check/stages.csv" || fail "gpu_check stage torch: $(grep '^torch' "$work/check/stages.csv")"
for f in summary.md step.csv train.csv kernels.csv tests.csv results.json; do
  [[ -s $work/check/$f ]] || fail "gpu_check wrote no $f"
done
grep -q '^A,' "$work/check/step.csv" || fail "step.csv has no row for config A: $(cat "$work/check/step.csv")"
grep -q '"train": \[{"run": "default-3", "tok_s": [0-9]' "$work/check/results.json" || fail "results.json lacks the training run: $(cat "$work/check/results.json")"
grep -Eq '^default-3,2,[a-z_0-9]+,[0-9.]+,[1-9]' "$work/check/kernels.csv" || fail "kernels.csv has no kernel of the traced step 2: $(head -3 "$work/check/kernels.csv")"
echo "bundle_test: pass ($mb MiB unpacked; devices --check, 3 steps, test_dtype, gpu_check --quick)"
