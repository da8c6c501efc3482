// build_model: the Model (model.h) of a ModelConfig's architecture on one device. The one place
// that knows every family's class; the step programs, tests and tools build models through it.
#pragma once

#include <memory>

#include "kernels_cl/device_runtime.h"
#include "models/model.h"
#include "models/model_config.h"

namespace paxocl::models {

std::unique_ptr<Model> build_model(kernels::DeviceRuntime& runtime, const ModelConfig& config,
                                   const ModelOptions& options);

}  // namespace paxocl::models
