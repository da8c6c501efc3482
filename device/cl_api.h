// The one place that includes the OpenCL headers, so every file agrees on the target version.
// CL_TARGET_OPENCL_VERSION is also set by CMake; 1.2 is what every ICD (NVIDIA, AMD, Intel, PoCL)
// implements, and pax-ocl needs nothing newer.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
