#include "device/cl_error.h"

#include <string>

namespace paxocl::device {

std::string_view cl_error_name(cl_int code) {
  switch (code) {
#define PAXOCL_CL_CODE(name) \
  case name:                 \
    return #name;
    PAXOCL_CL_CODE(CL_SUCCESS)
    PAXOCL_CL_CODE(CL_DEVICE_NOT_FOUND)
    PAXOCL_CL_CODE(CL_DEVICE_NOT_AVAILABLE)
    PAXOCL_CL_CODE(CL_COMPILER_NOT_AVAILABLE)
    PAXOCL_CL_CODE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    PAXOCL_CL_CODE(CL_OUT_OF_RESOURCES)
    PAXOCL_CL_CODE(CL_OUT_OF_HOST_MEMORY)
    PAXOCL_CL_CODE(CL_PROFILING_INFO_NOT_AVAILABLE)
    PAXOCL_CL_CODE(CL_MEM_COPY_OVERLAP)
    PAXOCL_CL_CODE(CL_IMAGE_FORMAT_MISMATCH)
    PAXOCL_CL_CODE(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    PAXOCL_CL_CODE(CL_BUILD_PROGRAM_FAILURE)
    PAXOCL_CL_CODE(CL_MAP_FAILURE)
    PAXOCL_CL_CODE(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    PAXOCL_CL_CODE(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    PAXOCL_CL_CODE(CL_COMPILE_PROGRAM_FAILURE)
    PAXOCL_CL_CODE(CL_LINKER_NOT_AVAILABLE)
    PAXOCL_CL_CODE(CL_LINK_PROGRAM_FAILURE)
    PAXOCL_CL_CODE(CL_DEVICE_PARTITION_FAILED)
    PAXOCL_CL_CODE(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    PAXOCL_CL_CODE(CL_INVALID_VALUE)
    PAXOCL_CL_CODE(CL_INVALID_DEVICE_TYPE)
    PAXOCL_CL_CODE(CL_INVALID_PLATFORM)
    PAXOCL_CL_CODE(CL_INVALID_DEVICE)
    PAXOCL_CL_CODE(CL_INVALID_CONTEXT)
    PAXOCL_CL_CODE(CL_INVALID_QUEUE_PROPERTIES)
    PAXOCL_CL_CODE(CL_INVALID_COMMAND_QUEUE)
    PAXOCL_CL_CODE(CL_INVALID_HOST_PTR)
    PAXOCL_CL_CODE(CL_INVALID_MEM_OBJECT)
    PAXOCL_CL_CODE(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    PAXOCL_CL_CODE(CL_INVALID_IMAGE_SIZE)
    PAXOCL_CL_CODE(CL_INVALID_SAMPLER)
    PAXOCL_CL_CODE(CL_INVALID_BINARY)
    PAXOCL_CL_CODE(CL_INVALID_BUILD_OPTIONS)
    PAXOCL_CL_CODE(CL_INVALID_PROGRAM)
    PAXOCL_CL_CODE(CL_INVALID_PROGRAM_EXECUTABLE)
    PAXOCL_CL_CODE(CL_INVALID_KERNEL_NAME)
    PAXOCL_CL_CODE(CL_INVALID_KERNEL_DEFINITION)
    PAXOCL_CL_CODE(CL_INVALID_KERNEL)
    PAXOCL_CL_CODE(CL_INVALID_ARG_INDEX)
    PAXOCL_CL_CODE(CL_INVALID_ARG_VALUE)
    PAXOCL_CL_CODE(CL_INVALID_ARG_SIZE)
    PAXOCL_CL_CODE(CL_INVALID_KERNEL_ARGS)
    PAXOCL_CL_CODE(CL_INVALID_WORK_DIMENSION)
    PAXOCL_CL_CODE(CL_INVALID_WORK_GROUP_SIZE)
    PAXOCL_CL_CODE(CL_INVALID_WORK_ITEM_SIZE)
    PAXOCL_CL_CODE(CL_INVALID_GLOBAL_OFFSET)
    PAXOCL_CL_CODE(CL_INVALID_EVENT_WAIT_LIST)
    PAXOCL_CL_CODE(CL_INVALID_EVENT)
    PAXOCL_CL_CODE(CL_INVALID_OPERATION)
    PAXOCL_CL_CODE(CL_INVALID_GL_OBJECT)
    PAXOCL_CL_CODE(CL_INVALID_BUFFER_SIZE)
    PAXOCL_CL_CODE(CL_INVALID_MIP_LEVEL)
    PAXOCL_CL_CODE(CL_INVALID_GLOBAL_WORK_SIZE)
    PAXOCL_CL_CODE(CL_INVALID_PROPERTY)
    PAXOCL_CL_CODE(CL_INVALID_IMAGE_DESCRIPTOR)
    PAXOCL_CL_CODE(CL_INVALID_COMPILER_OPTIONS)
    PAXOCL_CL_CODE(CL_INVALID_LINKER_OPTIONS)
    PAXOCL_CL_CODE(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef PAXOCL_CL_CODE
    case -1001:  // CL_PLATFORM_NOT_FOUND_KHR (cl_khr_icd): the ICD loader found no platform
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "CL_UNKNOWN_ERROR";
  }
}

namespace {
std::string describe(std::string_view call, cl_int code, std::string_view doing) {
  std::string msg(call);
  msg += " failed with ";
  msg += cl_error_name(code);
  msg += " (" + std::to_string(code) + ")";
  if (!doing.empty()) {
    msg += " while ";
    msg += doing;
  }
  return msg;
}

// The log goes on following lines; the first line stays a one-line summary.
std::string describe_build(std::string_view program, std::string_view device, const std::string& log,
                           std::string_view origin) {
  return "OpenCL program '" + std::string(program) + "'" + (origin.empty() ? "" : " (" + std::string(origin) + ")") +
         " failed to compile for device '" +
         std::string(device) + "'; build log:\n" + log;
}
}  // namespace

ClError::ClError(std::string_view call, cl_int code, std::string_view doing)
    : DeviceError(describe(call, code, doing)), code_(code) {}

ProgramBuildError::ProgramBuildError(std::string_view program_name, std::string_view device_name,
                                     std::string log, std::string_view origin)
    : ClError(describe_build(program_name, device_name, log, origin), CL_BUILD_PROGRAM_FAILURE),
      log_(std::move(log)) {}

}  // namespace paxocl::device
