// GELU's tanh approximation (Pax: approximate=True), prepended to every program after dtype.cl
// (program_loader.cpp): the GELU kernels of each set and the direct GEMM's fused epilogue
// (gemm_direct.cl) evaluate one formula.
//   gelu(x) = 0.5 x (1 + tanh(u)),  u = k (x + 0.044715 x^3),  k = sqrt(2/pi)
// Evaluated through s = 0.5 (1 + tanh(u)) = sigmoid(2u), which keeps full relative precision in
// the far negative tail where 1 + tanh(u) would cancel to zero in float:
//   gelu(x) = x s,   gelu'(x) = s + 2 x s (1 - s) u'   (since sech^2(u) = 4 s (1 - s))
#define GELU_K 0.7978845608028654f

// s and gelu'(x) for one float; the vector twins (gelu_cpu.cl, gelu_gpu.cl) write the same
// expressions in float16 and float4.
static inline float gelu_sigmoid(const float x) {
  const float u = GELU_K * (x + 0.044715f * x * x * x);
  return 1.0f / (1.0f + exp(-2.0f * u));
}
static inline float gelu_grad(const float x) {
  const float s = gelu_sigmoid(x);
  return s + 2.0f * x * s * (1.0f - s) * (GELU_K * (1.0f + 3.0f * 0.044715f * x * x));
}
