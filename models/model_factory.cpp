#include "models/model_factory.h"

#include "common/errors.h"
#include "models/gpt_model.h"

namespace paxocl::models {

namespace {
std::unique_ptr<Model> build(kernels::DeviceRuntime& runtime, const GptConfig& config, const ModelOptions& options) {
  return std::make_unique<GptModel>(runtime, config, options);
}
std::unique_ptr<Model> build(kernels::DeviceRuntime&, const LlamaConfig&, const ModelOptions&) {
  throw ConfigError("ARCHITECTURE=llama: the LLaMA model is not built yet");  // LlamaModel lands next
}
}  // namespace

std::unique_ptr<Model> build_model(kernels::DeviceRuntime& runtime, const ModelConfig& config,
                                   const ModelOptions& options) {
  return config.visit([&](const auto& family) { return build(runtime, family, options); });
}

}  // namespace paxocl::models
