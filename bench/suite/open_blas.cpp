#include "bench/suite/open_blas.h"

#include <dlfcn.h>

namespace paxocl::bench {

OpenBlas::OpenBlas() {
  handle_ = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (handle_ != nullptr) sgemm_ = reinterpret_cast<Sgemm>(dlsym(handle_, "cblas_sgemm"));
}

OpenBlas::~OpenBlas() {
  if (handle_ != nullptr) dlclose(handle_);
}

int OpenBlas::threads() const {
  if (handle_ == nullptr) return 0;
  const auto get = reinterpret_cast<int (*)()>(dlsym(handle_, "openblas_get_num_threads"));
  return get != nullptr ? get() : 0;
}

void OpenBlas::sgemm(const kernels::GemmShape& s, const float* a, const float* b, float* c) const {
  using kernels::Transpose;
  constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;  // CBLAS's enums
  const int lda = static_cast<int>(s.a == Transpose::kNo ? s.k : s.m);
  const int ldb = static_cast<int>(s.b == Transpose::kNo ? s.n : s.k);
  for (std::size_t i = 0; i < s.batch; ++i) {
    sgemm_(kRowMajor, s.a == Transpose::kYes ? kTrans : kNoTrans, s.b == Transpose::kYes ? kTrans : kNoTrans,
           static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, a + i * s.m * s.k, lda,
           b + i * s.k * s.n, ldb, 0.0f, c + i * s.m * s.n, static_cast<int>(s.n));
  }
}

}  // namespace paxocl::bench
