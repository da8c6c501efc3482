#include "device/allocation_fault.h"

#include <cstdlib>

namespace paxocl::device {

bool allocation_fault_injected(std::string_view buffer_name) {
  const char* text = std::getenv(kFailAllocationEnvVar);  // read each time: tests set it per process
  return text != nullptr && *text != '\0' && buffer_name.find(text) != std::string_view::npos;
}

}  // namespace paxocl::device
