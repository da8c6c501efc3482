// Argument checks shared by the typed launchers (nn_kernels.cpp, ssm_kernels.cpp): a program built
// for one activation dtype, act buffers of that dtype, buffers long enough for the shape. Each
// failure is a one-line DeviceError naming the kernel.
#pragma once

#include <initializer_list>
#include <string_view>

#include <fmt/format.h>

#include "common/errors.h"
#include "device/typed_buffer.h"
#include "kernels_cl/kernel_set.h"

namespace paxocl::kernels {

// A program whose act_t is `act`.
inline KernelSet act_program(device::ProgramCache& cache, device::Device& device, std::string_view program,
                             std::initializer_list<const char*> kernel_names, device::DType act) {
  return KernelSet(cache, device, program, kernel_names, device::dtype_build_option(act));
}

// Every act buffer handed to `kernel` must hold the dtype its program was built for: another
// would be read as garbage, not converted.
template <typename... Buffers>
void require_act(device::DType act, std::string_view kernel, const Buffers&... buffers) {
  for (const device::TypedBuffer* b : {&buffers...}) {
    if (b->dtype() != act) {
      throw DeviceError(fmt::format("{}: an activation buffer holds {} but the kernels were built for {}", kernel,
                                    device::dtype_name(b->dtype()), device::dtype_name(act)));
    }
  }
}

// Every buffer handed to `kernel` must hold at least `count` elements (a shape beyond a buffer
// would read or write past its end).
template <typename... Buffers>
void require_count(std::string_view kernel, std::size_t count, const Buffers&... buffers) {
  for (std::size_t have : {buffers.count()...}) {
    if (have < count) {
      throw DeviceError(fmt::format("{}: a buffer of {} elements is shorter than the {} the shape needs", kernel, have,
                                    count));
    }
  }
}

}  // namespace paxocl::kernels
