// Tensor-core primitives shared by the programs that run mma.sync (gemm_mma.cl, flash_attention_mma.cl);
// program_loader.cpp prepends this file to them, after dtype.cl. Build options:
//   -DMMA_AB_BF16 | -DMMA_AB_F16 | -DMMA_AB_TF32   the operands' dtype
//   -DPAX_NVIDIA_PTX   the PTX instructions (the host adds it once the tensor-core probe passed), or
//   -DPAX_MMA_EMULATE  each instruction replaced by portable OpenCL C with its documented per-lane
//                      semantics (a warp exchanging through local memory, with barriers; slow), so
//                      a kernel's index math runs against the float64 references on any device.
// Every helper takes `xch`, local scratch of (work-group size) x 8 words that only the emulation
// uses; under emulation every work-item of the group must call each helper the same number of times
// (they hold barriers).
//   ldmatrix_x4     four 8 x 8 16-bit matrices from local memory into fragment registers
//   mma_16816       d += a (16 x 16) b (16 x 8), 16-bit operands, float32 accumulation
//   mma_1688, to_tf32   the TF32 form (m16n8k8) and its operand rounding
//   mma_pack        two floats rounded (to nearest even) to the operand dtype, packed in one register
//   shfl_xor        a float from lane (lane ^ mask) of the warp
#if defined(PAX_NVIDIA_PTX) == defined(PAX_MMA_EMULATE)
#error "mma_ops.cl: build with exactly one of -DPAX_NVIDIA_PTX (after the tensor-core probe) and -DPAX_MMA_EMULATE"
#endif
#if defined(MMA_AB_BF16)
#define MMA_AB "bf16"
#elif defined(MMA_AB_F16)
#define MMA_AB "f16"
#elif defined(MMA_AB_TF32)
#define MMA_TF32 1
#else
#error "mma_ops.cl: -DMMA_AB_BF16, -DMMA_AB_F16 or -DMMA_AB_TF32 selects the operands' dtype"
#endif
#if MMA_TF32
#define KSTEP 8   // k of one mma (m16n8k8)
#else
#define KSTEP 16  // m16n8k16
#endif

// Every helper is inlined into the kernels, so the transposes and trip counts are constants there,
// and the loops over fragments are unrolled, which keeps the accumulators in registers. (Not in the
// emulation: there each unrolled copy of a barrier would multiply a CPU compiler's work.)
#define MMA_FN static inline __attribute__((always_inline))
#if defined(PAX_NVIDIA_PTX)
#define UNROLL _Pragma("unroll")
#else
#define UNROLL
#endif

// ---- The PTX instructions (and their emulation) --------------------------------------------------
// xch: local scratch for the emulation (THREADS * 8 words), unused with PTX.

#if defined(PAX_NVIDIA_PTX)
// The 32-bit shared-window address of a __local pointer (NVVM keeps them as window offsets).
#define SHARED_ADDR(p) ((uint)(size_t)(p))

// ldmatrix x4: lane l gives the row address tile + off of row l % 8 of matrix l / 8; register j
// receives matrix j's elements (l / 4, 2 (l % 4) + {0, 1}), or with .trans (2 (l % 4) + {0, 1}, l / 4).
MMA_FN void ldmatrix_x4(uint r[4], __local const ushort* tile, uint off, bool trans, __local uint* xch) {
  (void)xch;
  if (trans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(SHARED_ADDR(tile + off)) : "memory");
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(SHARED_ADDR(tile + off)) : "memory");
  }
}

#if !MMA_TF32
// d += a (16 x 16, row) * b (16 x 8, col); fragments as in the PTX ISA (m16n8k16, 16-bit inputs).
MMA_FN void mma_16816(float d[4], const uint a[4], const uint b[2], __local uint* xch) {
  (void)xch;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." MMA_AB "." MMA_AB ".f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

// d += a (16 x 8, row) * b (8 x 8, col), TF32 inputs (m16n8k8): a_i is (g + 8 (i % 2), t + 4 (i / 2)),
// b_i is (t + 4 i, g), as tensor_core_probe.cl checks.
MMA_FN void mma_1688(float d[4], const uint a[4], const uint b[2], __local uint* xch) {
  (void)xch;
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// A float32's bits rounded to the nearest TF32 (ties away from zero), as mma's .tf32 operand.
MMA_FN uint to_tf32(uint bits) {
  uint out;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(out) : "f"(as_float(bits)));
  return out;
}

#if !MMA_TF32
// {lo, hi} rounded to nearest even to the operand dtype: lo in the low half (cvt puts its first
// source in the high half).
MMA_FN uint mma_pack(float lo, float hi) {
  uint out;
  asm("cvt.rn." MMA_AB "x2.f32 %0, %1, %2;" : "=r"(out) : "f"(hi), "f"(lo));
  return out;
}
#endif

// v of lane (lane ^ mask) of this warp (every lane takes part).
MMA_FN float shfl_xor(float v, uint mask, __local uint* xch) {
  (void)xch;
  float out;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(out) : "f"(v), "r"(mask));
  return out;
}

#else  // PAX_MMA_EMULATE: the same semantics in portable OpenCL C, a warp exchanging through xch.

MMA_FN float mma_operand(ushort bits) {
#if defined(MMA_AB_BF16)
  return as_float((uint)bits << 16);
#else
  const uint sign = (uint)(bits & 0x8000u) << 16, e = (bits >> 10) & 0x1fu, f = bits & 0x3ffu;
  if (e == 0) return as_float(sign) + (sign ? -1.0f : 1.0f) * (float)f * 0x1.0p-24f;  // zero, subnormal
  if (e == 31) return as_float(sign | 0x7f800000u | (f << 13));
  return as_float(sign | ((e + 112u) << 23) | (f << 13));
#endif
}

MMA_FN void ldmatrix_x4(uint r[4], __local const ushort* tile, uint off, bool trans, __local uint* xch) {
  const uint tid = get_local_id(0), lane = tid % 32, warp0 = tid - lane;
  xch[tid] = off;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint j = 0; j < 4; ++j) {
    ushort e[2];
    for (uint h = 0; h < 2; ++h) {
      const uint row = trans ? 2 * (lane % 4) + h : lane / 4, col = trans ? lane / 4 : 2 * (lane % 4) + h;
      e[h] = tile[xch[warp0 + j * 8 + row] + col];
    }
    r[j] = (uint)e[0] | ((uint)e[1] << 16);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

// One operand element of a fragment register: the low or high half of a 16-bit pair (`part`), or
// the whole TF32 word.
MMA_FN float mma_element(uint word, uint part) {
#if MMA_TF32
  (void)part;
  return as_float(word);
#else
  return mma_operand((ushort)(word >> (16 * part)));
#endif
}

// mma.sync for one warp (both mma_16816 and mma_1688): d += a (16 x KSTEP, row) * b (KSTEP x 8,
// col), m16n8k16 with 16-bit operands, epr = 2 per register, or m16n8k8 with TF32 ones, epr = 1.
// A element (row, kk) sits in lane 4 (row % 8) + (kk % 4 epr) / epr, register (row / 8) +
// 2 (kk / (4 epr)), part kk % epr; B element (kk, col) in lane 4 col + (kk % 4 epr) / epr,
// register kk / (4 epr).
MMA_FN void mma_emulated(float d[4], const uint a[4], const uint b[2], __local uint* xch) {
  const uint tid = get_local_id(0), lane = tid % 32, warp0 = tid - lane;
  for (uint i = 0; i < 4; ++i) xch[tid * 8 + i] = a[i];
  xch[tid * 8 + 4] = b[0];
  xch[tid * 8 + 5] = b[1];
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint g = lane / 4, t = lane % 4, epr = KSTEP / 8, span = 4 * epr;
  for (uint i = 0; i < 4; ++i) {
    const uint row = g + (i & 2u ? 8 : 0), col = 2 * t + (i & 1u);
    float acc = d[i];
    for (uint kk = 0; kk < KSTEP; ++kk) {
      const uint a_word = xch[(warp0 + 4 * (row % 8) + (kk % span) / epr) * 8 + row / 8 + 2 * (kk / span)];
      const uint b_word = xch[(warp0 + 4 * col + (kk % span) / epr) * 8 + 4 + kk / span];
      acc += mma_element(a_word, kk % epr) * mma_element(b_word, kk % epr);
    }
    d[i] = acc;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}
#define mma_16816 mma_emulated
#define mma_1688 mma_emulated

// cvt.rna.tf32.f32: round half away from zero at mantissa bit 13, low 13 bits cleared; NaN and
// infinity pass through.
MMA_FN uint to_tf32(uint bits) {
  if ((bits & 0x7f800000u) == 0x7f800000u) return bits;
  return (bits + 0x1000u) & 0xffffe000u;
}

#if !MMA_TF32
MMA_FN ushort mma_round(float v) {
#if defined(MMA_AB_BF16)
  return pax_float_to_bf16(v);
#else
  ushort bits[1];
  vstore_half_rte(v, 0, (__private half*)bits);
  return bits[0];
#endif
}
MMA_FN uint mma_pack(float lo, float hi) { return (uint)mma_round(lo) | ((uint)mma_round(hi) << 16); }
#endif

MMA_FN float shfl_xor(float v, uint mask, __local uint* xch) {
  const uint tid = get_local_id(0), lane = tid % 32;
  xch[tid] = as_uint(v);
  barrier(CLK_LOCAL_MEM_FENCE);
  const float out = as_float(xch[tid - lane + (lane ^ mask)]);
  barrier(CLK_LOCAL_MEM_FENCE);
  return out;
}
#endif
