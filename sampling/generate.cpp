#include "sampling/generate.h"

#include <chrono>
#include <span>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::sampling {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

void validate(const GenerateOptions& options) {
  validate(options.sampling);
  if (options.num_samples < 1) throw ConfigError(fmt::format("--num_samples={}: must be at least 1", options.num_samples));
  if (options.max_decode_steps < 1) {
    throw ConfigError(fmt::format("--max_decode_steps={}: must be at least 1", options.max_decode_steps));
  }
}

void check_prompt(const std::vector<int>& prompt, std::size_t max_seq_len) {
  if (prompt.empty()) throw ConfigError("the prompt is empty: give at least one token");
  if (prompt.size() >= max_seq_len) {
    throw ConfigError(fmt::format("the prompt has {} tokens; the model reads at most MAX_SEQ_LEN={} and needs room to "
                                  "write: shorten the prompt", prompt.size(), max_seq_len));
  }
}

Generation generate(models::Model& model, const std::vector<int>& prompt, const GenerateOptions& options) {
  validate(options);
  check_prompt(prompt, model.max_seq_len());
  const int max_len = static_cast<int>(model.max_seq_len());
  const auto B = static_cast<std::size_t>(options.num_samples);
  const std::size_t V = static_cast<std::size_t>(model.vocab_size());
  std::mt19937_64 rng(options.seed);
  Generation out;
  out.samples.resize(B);
  std::vector<bool> finished(B, false);

  std::vector<int> tokens;
  for (std::size_t b = 0; b < B; ++b) tokens.insert(tokens.end(), prompt.begin(), prompt.end());
  auto t0 = std::chrono::steady_clock::now();
  model.begin_decode(B);
  std::vector<float> logits = model.decode(tokens, prompt.size());
  out.prefill_seconds = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const int room = max_len - static_cast<int>(prompt.size());
  for (int step = 0; step < std::min(options.max_decode_steps, room); ++step) {
    std::vector<int> next(B);
    bool all_done = true;
    for (std::size_t b = 0; b < B; ++b) {
      if (finished[b]) {
        next[b] = out.samples[b].back();  // a finished row keeps the batch shape; its output is ignored
        continue;
      }
      next[b] = sample_token(std::span<const float>(logits.data() + b * V, V), options.sampling, rng);
      out.samples[b].push_back(next[b]);
      finished[b] = options.eos_id && next[b] == *options.eos_id;
      all_done = all_done && finished[b];
    }
    if (all_done || step + 1 == std::min(options.max_decode_steps, room)) break;  // the last token needs no logits
    logits = model.decode(next, 1);
    ++out.decode_steps;
  }
  out.decode_seconds = seconds_since(t0);
  return out;
}

}  // namespace paxocl::sampling
