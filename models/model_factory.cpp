#include "models/model_factory.h"

#include "models/gpt_model.h"
#include "models/llama_model.h"

namespace paxocl::models {

namespace {
std::unique_ptr<Model> build(kernels::DeviceRuntime& runtime, const GptConfig& config, const ModelOptions& options) {
  return std::make_unique<GptModel>(runtime, config, options);
}
std::unique_ptr<Model> build(kernels::DeviceRuntime& runtime, const LlamaConfig& config, const ModelOptions& options) {
  return std::make_unique<LlamaModel>(runtime, config, options);
}
}  // namespace

std::unique_ptr<Model> build_model(kernels::DeviceRuntime& runtime, const ModelConfig& config,
                                   const ModelOptions& options) {
  return config.visit([&](const auto& family) { return build(runtime, family, options); });
}

}  // namespace paxocl::models
