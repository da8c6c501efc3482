#include "kernels_cl/openmp_wait_policy.h"

#include <unistd.h>

#include <cstdlib>

namespace paxocl::kernels {

void restart_with_passive_openmp_waits(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
  execv("/proc/self/exe", argv);  // returns only on failure: go on with libgomp's default
}

const char* openmp_wait_policy() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return policy != nullptr ? policy : "unset (libgomp spins)";
}

}  // namespace paxocl::kernels
