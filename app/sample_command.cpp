// `pax-ocl sample`: text from a trained model. The model: a job's checkpoint (--job_log_dir, its
// newest or --step) with the tokenizer of the job's data, or a weights file (--init_from: llm.c,
// GPT-2 safetensors, a Hugging Face LLaMA directory) with --prompt_ids. Decoding runs through the
// layers' key/value caches (sampling/generate.h) on the first selected device, float32.
#include <charconv>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "app/job_weights.h"
#include "app/sampling_flags.h"
#include "common/errors.h"
#include "common/regular_file.h"
#include "device/device_selection.h"
#include "inputs/dataset.h"
#include "inputs/tokenizer.h"
#include "kernels_cl/auto_gemm.h"
#include "kernels_cl/device_runtime.h"
#include "kernels_cl/cpu_flash_attention.h"
#include "models/model_factory.h"
#include "plan/decode_memory.h"
#include "sampling/generate.h"

namespace paxocl::app {

namespace {

const FlagSpec kSampleFlags[] = {
    kCommonFlags[0],
    kCommonFlags[1],
    {"job_log_dir", "DIR", "a training job: its newest checkpoint (or --step) and its data's tokenizer"},
    {"step", "N", "the checkpoint of step N (default: the newest good one)"},
    {"init_from", "PATH", "a weights file instead: llm.c .bin, GPT-2 .safetensors, or a Hugging Face LLaMA directory"},
    {"num_heads", "N", "--init_from a GPT-2 .safetensors that records no head count (neither pax-ocl's metadata nor a "
                       "config.json beside it): its NUM_HEADS"},
    {"prompt", "TEXT", "the text to continue (default: the start of a document)"},
    {"prompt_file", "FILE", "the text to continue, from a file"},
    {"prompt_ids", "5,6,7", "token ids to continue (models without a tokenizer: prints ids)"},
    {"max_decode_steps", "N", "tokens to write per sample (default 64)"},
    {"num_samples", "N", "samples side by side (default 1)"},
    {"seed", "N", "seed of the draws (default 0)"},
    kSamplingFlags[0],
    kSamplingFlags[1],
    kSamplingFlags[2],
    {"devices", "auto|gpu|cpu|0,1", "device selection; the first selected device decodes"},
    {"gemm", "auto|blis|onednn|clblast|cpu-8x48|cpu-12x32|gpu-64x64|gpu-direct|tensor-core", "GEMM implementation (env PAX_OCL_GEMM; default auto)"},
};

std::vector<int> parse_ids(const std::string& text) {
  std::vector<int> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    int id = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || id < 0) {
      throw ConfigError(fmt::format("--prompt_ids={}: '{}' is not a token id; give ids like 5,6,7", text, item));
    }
    ids.push_back(id);
  }
  if (ids.empty()) throw ConfigError("--prompt_ids is empty; give ids like 5,6,7");
  return ids;
}

}  // namespace

int run_sample(const CliArgs& args, const collectives::ProcessWorld& world) {
  if (args.flag_bool("help")) {
    if (world.rank() == 0) {
      std::cout << "Usage: pax-ocl sample --job_log_dir=DIR [--prompt=TEXT] [flags]\n"
                   "       pax-ocl sample --init_from=PATH --prompt_ids=5,6,7 [flags]\n\n"
                   "Writes continuations of a prompt with a trained model (key/value-cached decoding; top-k is\n"
                   "applied before top-p, as in praxis).\n\nFlags:\n"
                << format_flags(kSampleFlags);
    }
    return kExitOk;
  }
  args.validate(kSampleFlags, {});
  const auto job = args.flag("job_log_dir");
  const auto init_from = args.flag("init_from");
  if (job.has_value() == init_from.has_value()) throw ConfigError("sample needs --job_log_dir=DIR or --init_from=PATH (one of them)");
  const int prompt_sources = args.flag("prompt").has_value() + args.flag("prompt_file").has_value() + args.flag("prompt_ids").has_value();
  if (prompt_sources > 1) throw ConfigError("give one of --prompt, --prompt_file and --prompt_ids");

  sampling::GenerateOptions options;
  options.sampling = sampling_options(args);
  options.max_decode_steps = integer_flag(args, "max_decode_steps", 64);
  options.num_samples = integer_flag(args, "num_samples", 1);
  options.seed = static_cast<std::uint64_t>(integer_flag(args, "seed", 0));
  sampling::validate(options);
  std::vector<int> prompt;
  if (const auto ids = args.flag("prompt_ids")) prompt = parse_ids(*ids);

  models::HostWeights weights;
  std::optional<inputs::Tokenizer> tokenizer;
  std::string source = init_from.value_or("");
  if (job) {
    JobWeights j = read_job_weights(*job, args.flag("step"));
    weights = std::move(j.weights);
    if (const auto model = inputs::tokenizer_of(j.experiment.get_string("DATA"), static_cast<int>(j.experiment.get_int("VOCAB_SIZE")),
                                                j.experiment.get_string("TOKENIZER"))) {
      tokenizer.emplace(*model);
    }
    source = fmt::format("{} (step {})", j.checkpoint, j.step);
  } else {
    // The file's own record of its heads rules; --num_heads only for a GPT-2 file that has none.
    const std::optional<int> heads =
        args.flag("num_heads") ? std::optional<int>(integer_flag(args, "num_heads", 0)) : std::nullopt;
    weights = models::load_weights_file(*init_from, heads, 1);
  }

  if (!prompt.empty()) {
    for (int id : prompt) {
      if (id >= weights.config.vocab_size()) {
        throw ConfigError(fmt::format("--prompt_ids: {} is outside the vocabulary [0, {})", id, weights.config.vocab_size()));
      }
    }
  } else if (!tokenizer) {
    throw ConfigError("this model has no tokenizer (weights file, or a job on synthetic or llm.c data): give --prompt_ids=5,6,7");
  } else {
    std::string text = args.flag("prompt").value_or("");
    if (const auto file = args.flag("prompt_file")) {
      if (const std::string why = why_not_regular_file(*file); !why.empty()) {  // a FIFO would block the open below
        throw ConfigError(fmt::format("--prompt_file={}: cannot read it ({})", *file, why));
      }
      std::ifstream in(*file);
      if (!in) throw ConfigError(fmt::format("--prompt_file={}: cannot read it", *file));
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    prompt = tokenizer->encode(text);
    // The documents a model trained on start after the separator: an empty prompt is that start.
    prompt.insert(prompt.begin(), tokenizer->eos_id());
  }
  sampling::check_prompt(prompt, static_cast<std::size_t>(weights.config.max_seq_len()));  // before any device work
  if (tokenizer) options.eos_id = tokenizer->eos_id();
  spdlog::info("sampling from {}", source);

  const auto selected = device::select_devices(device::enumerate_devices(),
                                               device::parse_device_selection(device::device_spec_from(args.flag("devices"))));
  // Its memory against the device before any buffer exists (too many samples once made PoCL abort).
  const device::DeviceInfo& info = selected.front();
  plan::require_decode_fits(plan::DecodeSpec{weights.config, static_cast<std::size_t>(std::max(1, options.num_samples)),
                                             info.base_address_align_bytes,
                                             [info](std::size_t hs) { return kernels::fused_attention(info, hs); }},
                            plan::MemoryLimits{static_cast<double>(info.global_mem_bytes), info.max_alloc_bytes}, info.name);
  device::Device device(selected.front());
  device::ProgramCache cache;
  kernels::DeviceRuntime runtime(device, cache, device::DType::kF32, kernels::gemm_policy_from(args.flag("gemm")));
  auto model = models::build_model(runtime, weights.config,
                                   models::ModelOptions{static_cast<std::size_t>(std::max(1, options.num_samples)), 0,
                                                        64u << 20, 0});
  model->set_parameters(model->flat_from_weights(weights));
  const sampling::Generation g = sampling::generate(*model, prompt, options);
  if (world.rank() != 0) return kExitOk;
  for (std::size_t i = 0; i < g.samples.size(); ++i) {
    if (g.samples.size() > 1) std::cout << fmt::format("--- sample {} ---\n", i + 1);
    if (tokenizer) {
      std::vector<int> all(prompt.begin() + 1, prompt.end());  // without the leading separator
      all.insert(all.end(), g.samples[i].begin(), g.samples[i].end());
      if (!all.empty() && options.eos_id && all.back() == *options.eos_id) all.pop_back();
      std::cout << tokenizer->decode(all) << "\n";
    } else {
      std::cout << fmt::format("{}\n", fmt::join(g.samples[i], ","));
    }
  }
  const long tokens = g.decode_steps * options.num_samples;
  spdlog::info("prompt of {} tokens in {:.0f} ms; {} tokens in {:.0f} ms ({:.0f} tokens/s after the prompt)", prompt.size(),
               1e3 * g.prefill_seconds, tokens, 1e3 * g.decode_seconds,
               g.decode_seconds > 0 ? static_cast<double>(tokens) / g.decode_seconds : 0.0);
  return kExitOk;
}

}  // namespace paxocl::app
