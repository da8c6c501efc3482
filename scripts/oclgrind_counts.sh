#!/usr/bin/env bash
# Global memory traffic of the GPU kernels as Oclgrind counts it (--inst-counts): per kernel, the
# bytes its work-items loaded from and stored to global memory, summed over the calls a test filter
# makes. Divided by a tensor's size it says how often a kernel touches each element (a kernel that
# reads its input once shows its input's bytes). A dev tool; docs/benchmarks.md has its output.
#   scripts/oclgrind_counts.sh TEST_BINARY GTEST_FILTER [GROUP_SIZE]
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 TEST_BINARY GTEST_FILTER [GROUP_SIZE]" >&2
  exit 2
fi
command -v oclgrind > /dev/null || { echo "oclgrind_counts.sh: oclgrind not found (apt-get install oclgrind)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
PAX_OCL_KERNELS=gpu PAX_OCL_GPU_GROUP_SIZE="${3:-256}" PAX_OCL_CACHE_DIR="$work/programs" \
  oclgrind --inst-counts "$1" --gtest_filter="$2" > "$work/out" 2> "$work/err"
echo "| kernel | global loads (bytes) | global stores (bytes) |"
echo "| --- | ---: | ---: |"
awk '/^Instructions executed for kernel/ { split($0, q, "\047"); k = q[2]; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
     / - load global \(/ { b = $0; sub(/.*\(/, "", b); sub(/ bytes.*/, "", b); ld[k] += b }
     / - store global \(/ { b = $0; sub(/.*\(/, "", b); sub(/ bytes.*/, "", b); st[k] += b }
     END { for (i = 1; i <= n; ++i) printf "| %s | %d | %d |\n", order[i], ld[order[i]], st[order[i]] }' "$work/out"
