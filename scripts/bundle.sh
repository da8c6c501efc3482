#!/usr/bin/env bash
# Builds the relocatable release bundle: dist/pax-ocl-<version>-linux-x86_64/ and its .tar.gz.
#
# The bundle runs on a Linux x86_64 machine that has an OpenCL driver and a glibc at least as new as
# the build machine's (Debian 12: 2.36), and none of our Debian packages:
#   bin/       launchers: pax-ocl, run (any bundled program: `bin/run test_kernels`), run-tests
#   libexec/   the ELF programs: pax-ocl, the test binaries, the bench binaries
#   lib/       every shared library they load beyond glibc, and Open MPI's dlopened components
#   share/     tests/golden, the bench scripts, gpu_check.sh, torch_reference.py
#   env.sh     sets LD_LIBRARY_PATH and builds the OpenCL vendor list from the drivers that exist
# No OpenCL driver is bundled: the machine's own (NVIDIA, AMD, Intel, PoCL) is found by env.sh.
#
# Usage: scripts/bundle.sh [BUILD_DIR]     (default build; builds the targets first)
# Env:   DIST_DIR (default dist), SKIP_BUILD=1 (take the binaries as they are)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build}
dist=${DIST_DIR:-dist}
command -v ldd >/dev/null || { echo "bundle: ldd not found (Debian package libc-bin)" >&2; exit 1; }
[[ -f "$build/CMakeCache.txt" ]] || { echo "bundle: no CMake build in '$build'; run scripts/setup.sh first" >&2; exit 1; }
[[ "${SKIP_BUILD:-0}" == 1 ]] || cmake --build "$build" -j "$(nproc)" >/dev/null
version=$(sed -n 's/^project(pax-ocl VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
name=pax-ocl-$version-linux-x86_64
out=$dist/$name
rm -rf "$out" "$dist/$name.tar.gz"
mkdir -p "$out"/{bin,libexec,lib,share}

# Programs: pax-ocl, the device tests (scripts/bundle/device_tests.txt) and every bench_* binary.
progs=("$build/pax-ocl")
while read -r t; do progs+=("$build/tests/$t"); done < <(grep -v '^#' scripts/bundle/device_tests.txt)
while IFS= read -r f; do progs+=("$f"); done < <(find "$build/bench" -maxdepth 1 -type f -perm -u+x -name 'bench_*' | sort)
for p in "${progs[@]}"; do
  [[ $(head -c 4 "$p" | tail -c 3) == ELF ]] || continue
  cp "$p" "$out/libexec/"
done

# Libraries: the closure of what the programs load, minus glibc's own (the target machine's glibc
# must be used, with its loader) and any OpenCL driver.
is_glibc() {
  case "$1" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libresolv.so.*|libutil.so.*|libanl.so.*|libnsl.so.*) return 0 ;;
  esac
  return 1
}
ompi_components=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
pmix_components=/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
declare -A seen=()
copy_deps() {  # ELF files...
  local dep path base
  while read -r base path; do
    [[ -n "$path" && -f "$path" ]] || continue
    is_glibc "$base" && continue
    [[ -n "${seen[$base]:-}" ]] && continue
    seen[$base]=1
    cp -L "$path" "$out/lib/$base"
  done < <(ldd "$@" 2>/dev/null | awk '/=>/ { print $1, $3 }')
}
copy_deps "$out"/libexec/*
# Open MPI and PMIx open their components with dlopen; bundle them (a multi-process run needs them).
if [[ -d "$ompi_components" ]]; then
  mkdir -p "$out/lib/openmpi" "$out/lib/pmix"
  cp -L "$ompi_components"/*.so "$out/lib/openmpi/" 2>/dev/null || true
  [[ -d "$pmix_components" ]] && cp -L "$pmix_components"/*.so "$out/lib/pmix/" 2>/dev/null || true
  copy_deps "$out"/lib/openmpi/*.so "$out"/lib/pmix/*.so
fi
rm -f "$out"/lib/libOpenCL.so.1.* 2>/dev/null || true
[[ -f "$out/lib/libOpenCL.so.1" ]] || { echo "bundle: the programs do not load libOpenCL.so.1 (ocl-icd)?" >&2; exit 1; }

# Data and scripts the checks use.
cp -r tests/golden "$out/share/golden"
cp bench/torch_reference.py bench/requirements-torch.txt "$out/share/"
cp scripts/bundle/env.sh "$out/env.sh"
cp scripts/bundle/launch.sh "$out/bin/run"
cp scripts/gpu_check.sh "$out/bin/gpu_check.sh"
cp scripts/bundle/run_tests.sh "$out/bin/run-tests"
cp scripts/bundle/device_tests.txt "$out/share/"
ln -s run "$out/bin/pax-ocl"
chmod +x "$out"/bin/* "$out/env.sh"
printf 'pax-ocl %s (%s), built %s on %s\n' "$version" "$rev" "$(date -u +%Y-%m-%d)" \
  "$(. /etc/os-release && echo "$PRETTY_NAME")" >"$out/VERSION"
strip --strip-unneeded "$out"/libexec/* "$out"/lib/*.so* 2>/dev/null || true

tar -C "$dist" -czf "$dist/$name.tar.gz" "$name"
echo "bundle: $out ($(du -sh "$out" | cut -f1) unpacked, $(du -sh "$dist/$name.tar.gz" | cut -f1) packed)"
