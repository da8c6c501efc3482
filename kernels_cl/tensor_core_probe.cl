// Tensor-core probe (kernels_cl/tensor_core_probe.h): one mma.sync tile by one warp, each lane
// loading its fragments from row-major matrices with the PTX ISA's fragment layout, so that a
// correct product proves both the instruction and the layout gemm_mma.cl relies on.
//   -DPROBE_BF16 / -DPROBE_F16: m16n8k16, a (16 x 16) and b (16 x 8) as raw 16-bit words
//   -DPROBE_TF32:               m16n8k8,  a (16 x 8) and b (8 x 8) as float
// d (16 x 8, row-major float32) = a b. Launch: one work-group of 32.
// Fragments (g = lane / 4, t = lane % 4); accumulators c0..c3 are (g + 8 (i / 2), 2 t + i % 2).
//   16-bit: a_i (g + 8 (i / 2 % 2), 2 t + i % 2 + 8 (i / 4)), two per register, low half first;
//           b_i (2 t + i % 2 + 8 (i / 2), g).
//   tf32:   a_i (g + 8 (i % 2), t + 4 (i / 2)), one per register; b_i (t + 4 i, g).
#ifndef PAX_NVIDIA_PTX
#error "tensor_core_probe.cl holds NVIDIA PTX: build it only through load_ptx_program on an NVIDIA device"
#endif

#if defined(PROBE_TF32)
__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void tc_probe(__global const float* a,
                                                                       __global const float* b, __global float* d) {
  const uint lane = get_local_id(0), g = lane / 4, t = lane % 4;
  uint af[4], bf[2];
  for (uint i = 0; i < 4; ++i) af[i] = as_uint(a[(g + 8 * (i % 2)) * 8 + t + 4 * (i / 2)]);
  for (uint i = 0; i < 2; ++i) bf[i] = as_uint(b[(t + 4 * i) * 8 + g]);
  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "r"(bf[0]), "r"(bf[1]));
#else
#if defined(PROBE_BF16)
#define PROBE_TYPE "bf16"
#elif defined(PROBE_F16)
#define PROBE_TYPE "f16"
#else
#error "tensor_core_probe.cl: -DPROBE_BF16, -DPROBE_F16 or -DPROBE_TF32"
#endif
__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void tc_probe(__global const ushort* a,
                                                                       __global const ushort* b, __global float* d) {
  const uint lane = get_local_id(0), g = lane / 4, t = lane % 4;
  uint af[4], bf[2];
  for (uint r = 0; r < 4; ++r) {
    uint word = 0;
    for (uint h = 0; h < 2; ++h) {
      const uint i = 2 * r + h;
      word |= (uint)a[(g + 8 * (i / 2 % 2)) * 16 + 2 * t + i % 2 + 8 * (i / 4)] << (16 * h);
    }
    af[r] = word;
  }
  for (uint r = 0; r < 2; ++r) {
    uint word = 0;
    for (uint h = 0; h < 2; ++h) {
      const uint i = 2 * r + h;
      word |= (uint)b[(2 * t + i % 2 + 8 * (i / 2)) * 8 + g] << (16 * h);
    }
    bf[r] = word;
  }
  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." PROBE_TYPE "." PROBE_TYPE ".f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "r"(bf[0]), "r"(bf[1]));
#endif
  for (uint i = 0; i < 4; ++i) d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = c[i];
}
