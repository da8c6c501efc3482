#include <chrono>

#include <fmt/format.h>

#include "bench/suite/benches.h"
#include "common/errors.h"
#include "kernels_cl/device_runtime.h"
#include "models/initial_parameters.h"
#include "models/model_factory.h"
#include "sampling/generate.h"

namespace paxocl::bench {

Table bench_decode(device::Device& device, device::ProgramCache& cache, const models::ModelConfig& model,
                   const std::vector<int>& batches, int prompt_len, int steps, device::DType act) {
  if (prompt_len + steps > model.max_seq_len()) {
    throw ConfigError(fmt::format("decode bench: a prompt of {} and {} steps exceed MAX_SEQ_LEN={}", prompt_len, steps,
                                  model.max_seq_len()));
  }
  Table t{"decode",
          fmt::format("Decoding {} ({}), {}: {} prompt tokens then {} tokens per sequence, key/value cache, greedy",
                      model.architecture(), model.describe(), device::dtype_name(act), prompt_len, steps),
          {"batch", "prefill_ms", "prefill_tokens_per_s", "decode_ms_per_step", "decode_tokens_per_s"},
          {},
          std::nullopt,
          {"batch"}};
  kernels::DeviceRuntime runtime(device, cache, act, "auto");
  for (int batch : batches) {
    auto m = models::build_model(runtime, model, models::ModelOptions{static_cast<std::size_t>(batch), 0, 64u << 20, 0});
    m->set_parameters(models::initial_parameters(m->layout(), 1, model.init_std()));
    std::vector<int> prompt(static_cast<std::size_t>(prompt_len));
    for (int i = 0; i < prompt_len; ++i) prompt[static_cast<std::size_t>(i)] = (7 * i + 3) % model.vocab_size();
    sampling::GenerateOptions options;
    options.sampling.temperature = 0;  // greedy: the draws cost nothing, the model everything
    options.num_samples = batch;
    options.max_decode_steps = steps;
    sampling::generate(*m, prompt, options);  // warm-up: kernels built, GEMMs chosen
    const sampling::Generation g = sampling::generate(*m, prompt, options);
    const double decode_tokens = static_cast<double>(g.decode_steps) * batch;
    t.add({batch, 1e3 * g.prefill_seconds, batch * prompt_len / g.prefill_seconds,
           g.decode_steps > 0 ? 1e3 * g.decode_seconds / static_cast<double>(g.decode_steps) : 0.0,
           g.decode_seconds > 0 ? decode_tokens / g.decode_seconds : 0.0});
  }
  return t;
}

}  // namespace paxocl::bench
