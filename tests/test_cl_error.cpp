// ClError messages name the call, the code's symbol and what was being done; the RAII wrappers
// raise them from real failing OpenCL calls.
#include <gtest/gtest.h>

#include "device/buffer.h"
#include "device/cl_error.h"
#include "device/device.h"
#include "device/device_info.h"

namespace paxocl::device {
namespace {

TEST(ClErrorNames, KnownCodesMapToTheirSymbols) {
  EXPECT_EQ(cl_error_name(CL_SUCCESS), "CL_SUCCESS");
  EXPECT_EQ(cl_error_name(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
  EXPECT_EQ(cl_error_name(CL_INVALID_BUFFER_SIZE), "CL_INVALID_BUFFER_SIZE");
  EXPECT_EQ(cl_error_name(CL_BUILD_PROGRAM_FAILURE), "CL_BUILD_PROGRAM_FAILURE");
  EXPECT_EQ(cl_error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
  EXPECT_EQ(cl_error_name(-12345), "CL_UNKNOWN_ERROR");
}

TEST(ClErrorMessage, NamesCallCodeAndContext) {
  const ClError e("clEnqueueReadBuffer", CL_INVALID_MEM_OBJECT, "reading the logits");
  EXPECT_EQ(std::string(e.what()),
            "clEnqueueReadBuffer failed with CL_INVALID_MEM_OBJECT (-38) while reading the logits");
  EXPECT_EQ(e.code(), CL_INVALID_MEM_OBJECT);
}

TEST(ClErrorFromDriver, ZeroSizedBufferRaisesWithTheBufferName) {
  const std::vector<DeviceInfo> all = enumerate_devices();
  ASSERT_FALSE(all.empty());
  Device dev(all.front());
  try {
    Buffer<float> empty(dev.context(), 0, "empty_activations");
    FAIL() << "a zero-sized clCreateBuffer must fail";
  } catch (const ClError& e) {
    EXPECT_EQ(e.code(), CL_INVALID_BUFFER_SIZE);
    const std::string what = e.what();
    EXPECT_NE(what.find("clCreateBuffer"), std::string::npos) << what;
    EXPECT_NE(what.find("CL_INVALID_BUFFER_SIZE"), std::string::npos) << what;
    EXPECT_NE(what.find("'empty_activations'"), std::string::npos) << what;
  }
}

TEST(ClHandle, CopiesShareAndReleaseTheObject) {
  const std::vector<DeviceInfo> all = enumerate_devices();
  ASSERT_FALSE(all.empty());
  Device dev(all.front());
  Buffer<float> a(dev.context(), 16, "a");
  cl_uint refs = 0;
  auto refcount = [&](cl_mem m) {
    EXPECT_EQ(clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, nullptr), CL_SUCCESS);
    return refs;
  };
  EXPECT_EQ(refcount(a.get()), 1u);
  {
    Buffer<float> b = a;  // retain
    EXPECT_EQ(b.get(), a.get());
    EXPECT_EQ(refcount(a.get()), 2u);
    Buffer<float> c = std::move(b);  // transfer, no retain
    EXPECT_EQ(b.get(), nullptr);
    EXPECT_EQ(refcount(a.get()), 2u);
  }  // c released
  EXPECT_EQ(refcount(a.get()), 1u);
}

}  // namespace
}  // namespace paxocl::device
