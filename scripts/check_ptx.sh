#!/bin/bash
# Offline check of the NVIDIA-only OpenCL programs (kernels_cl/gemm_mma.cl, tensor_core_probe.cl)
# without a GPU: each build variant the host requests is compiled to PTX with clang (OpenCL C 1.2,
# the dtype prelude prepended as program_loader.cpp does) and assembled by NVIDIA's ptxas for
# sm_90, which validates the inline PTX and reports registers, shared memory and spills per kernel.
# A dev tool, not a build dependency. ptxas: `pip install nvidia-cuda-nvcc-cu12` (a virtual
# environment will do) and pass its path, e.g.
#   PTXAS=.venv/lib/python3.*/site-packages/nvidia/cuda_nvcc/bin/ptxas scripts/check_ptx.sh [TILE...]
# TILE: "BMxBNxBKxWMxWNxSTAGES" (default: every MmaTile candidate, tensor_core_gemm.cpp).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
clang="${CLANG:-clang-16}"
ptxas="${PTXAS:-ptxas}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# NVIDIA's driver supplies the OpenCL builtins; clang's NVPTX target does not, so define the few
# the kernels call (ptxas rejects unresolved functions).
cat > "$work/shim.cl" <<'SHIM'
size_t __attribute__((overloadable)) get_local_id(uint d) {
  return d == 0 ? __nvvm_read_ptx_sreg_tid_x() : d == 1 ? __nvvm_read_ptx_sreg_tid_y() : __nvvm_read_ptx_sreg_tid_z();
}
size_t __attribute__((overloadable)) get_group_id(uint d) {
  return d == 0 ? __nvvm_read_ptx_sreg_ctaid_x() : d == 1 ? __nvvm_read_ptx_sreg_ctaid_y() : __nvvm_read_ptx_sreg_ctaid_z();
}
void __attribute__((overloadable)) barrier(cl_mem_fence_flags f) { __nvvm_barrier_sync(0); }
float __attribute__((overloadable)) vload_half(size_t i, const __global half* p) {
  float r;
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(((const __global ushort*)p)[i]));
  return r;
}
void __attribute__((overloadable)) vstore_half_rte(float v, size_t i, __global half* p) {
  ushort h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  ((__global ushort*)p)[i] = h;
}
SHIM
compile() {  # program output.ptx defines...
  local program=$1 out=$2
  shift 2
  { cat "$root/kernels_cl/dtype.cl"; echo '#line 1'; cat "$root/kernels_cl/$program.cl"; } > "$work/in.cl"
  # -fgnu-keywords: clang's OpenCL mode lacks the `asm` keyword NVIDIA's compiler takes.
  "$clang" -target nvptx64-nvidia-cuda -march=sm_90 -x cl -cl-std=CL1.2 -cl-mad-enable -Xclang -finclude-default-header \
    -fgnu-keywords -include "$work/shim.cl" -Wno-unknown-cuda-version -DPAX_NVIDIA_PTX "$@" -S -O2 -o "$out" "$work/in.cl"
}
report() {  # label ptx
  echo "== $1"
  "$ptxas" -arch=sm_90 "$2" -o /dev/null -v 2>&1 | awk '/Compiling entry/ {k=$(NF-2)} /spill/ {s=$0} /Used/ {print "  " k ": " $0 " |" s}'
}
for p in BF16 F16 TF32; do
  compile tensor_core_probe "$work/probe.ptx" -DPROBE_$p
  report "tensor_core_probe -DPROBE_$p" "$work/probe.ptx"
done
tiles=("$@")
[ ${#tiles[@]} -gt 0 ] || tiles=(128x128x32x64x32x2 128x128x16x64x32x3 128x128x16x64x32x4 128x256x16x64x64x2
                                  256x128x16x64x64x2 128x128x32x32x64x2)
for t in "${tiles[@]}"; do
  IFS=x read -r bm bn bk wm wn st <<< "$t"
  for ab in BF16 F16; do
    for c in "" -DPAX_ACT_BF16 -DPAX_ACT_F16; do
      for async in 1 0; do
        defs=(-DMMA_AB_$ab $c -DASYNC_COPY=$async -DBM=$bm -DBN=$bn -DBK=$bk -DWM=$wm -DWN=$wn -DSTAGES=$st)
        compile gemm_mma "$work/gemm.ptx" "${defs[@]}"
        report "gemm_mma ${defs[*]}" "$work/gemm.ptx"
      done
    done
  done
done
