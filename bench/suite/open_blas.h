// OpenBlas: OpenBLAS's cblas_sgemm on host arrays, the CPU reference of the GEMM benchmarks, loaded
// at run time: libopenblas0 need not be installed (the relocatable bundle leaves its 36 MB out), and
// BLIS's own CBLAS symbols in the binary must not shadow it. available() is false without it.
#pragma once

#include "kernels_cl/gemm.h"

namespace paxocl::bench {

class OpenBlas {
 public:
  OpenBlas();
  ~OpenBlas();
  OpenBlas(const OpenBlas&) = delete;
  OpenBlas& operator=(const OpenBlas&) = delete;

  bool available() const { return sgemm_ != nullptr; }
  int threads() const;  // openblas_get_num_threads(); 0 when unavailable

  // C = A B for each of s.batch row-major matrices, packed one after another: A (m, k) or (k, m)
  // with its transposes, leading dimensions the rows' lengths. Needs available().
  void sgemm(const kernels::GemmShape& s, const float* a, const float* b, float* c) const;

 private:
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
  void* handle_ = nullptr;
  Sgemm sgemm_ = nullptr;
};

}  // namespace paxocl::bench
