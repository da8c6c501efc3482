// EpilogueArgs: a GemmEpilogue (gemm.h) as the GPU GEMM kernels' trailing arguments (bias,
// bias_offset, aux, aux_offset, ld_aux, epilogue bits; gemm_epilogue.cl). Absent parts pass C's
// buffer, which the kernels then never touch.
#pragma once

#include <utility>

#include "kernels_cl/gemm.h"
#include "kernels_cl/kernel_set.h"

namespace paxocl::kernels {

struct EpilogueArgs {
  cl_mem bias, aux;
  cl_uint bias_offset = 0, aux_offset = 0, ld_aux = 0, bits = 0;

  EpilogueArgs(const GemmOperand& c, const GemmEpilogue& e) : bias(c.buffer), aux(c.buffer) {
    if (e.bias.buffer) {
      bias = e.bias.buffer;
      bias_offset = u32(e.bias.offset);
      bits |= 1u;  // GEMM_BIAS
    }
    for (const auto& [part, bit] : {std::pair{&e.gelu, 2u}, std::pair{&e.gelu_grad, 4u}}) {  // GEMM_GELU(_GRAD)
      if (!part->buffer) continue;
      aux = part->buffer;
      aux_offset = u32(part->offset);
      ld_aux = u32(part->ld);
      bits |= bit;
    }
  }
};

// Whether a GPU GEMM can apply `epilogue` as it stores C: a single product, every part in C's
// dtype, and not GELU and its gradient together.
inline bool epilogue_fusable(const GemmShape& s, const GemmOperand& c, const GemmEpilogue& epilogue) {
  bool in_c_dtype = true;
  for (const GemmOperand* x : {&epilogue.bias, &epilogue.gelu, &epilogue.gelu_grad}) {
    in_c_dtype = in_c_dtype && (!x->buffer || x->dtype == c.dtype);
  }
  return s.batch == 1 && in_c_dtype && !(epilogue.gelu.buffer && epilogue.gelu_grad.buffer);
}

}  // namespace paxocl::kernels
