#include "models/experiment.h"

#include <fstream>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/nearest_names.h"
#include "device/errors.h"
#include "models/hparam_values.h"

namespace paxocl::models {

const std::vector<HParamSpec>& Experiment::schema() {
  using T = HParamType;
  static const std::vector<HParamSpec> specs = {
      {"NUM_LAYERS", T::kInt, "transformer blocks"},
      {"MODEL_DIMS", T::kInt, "model width"},
      {"HIDDEN_DIMS", T::kInt, "MLP width"},
      {"NUM_HEADS", T::kInt, "attention heads"},
      {"DIMS_PER_HEAD", T::kInt, "width of one head"},
      {"MAX_SEQ_LEN", T::kInt, "tokens per sequence"},
      {"VOCAB_SIZE", T::kInt, "vocabulary size (must equal the tokenizer's)"},
      {"INIT_STD", T::kFloat, "Gaussian init std of every matrix"},
      {"PERCORE_BATCH_SIZE", T::kFloat, "sequences per device per step (may be fractional)"},
      {"ICI_MESH_SHAPE", T::kIntList, "devices per process along [data, fsdp, tensor]"},
      {"DCN_MESH_SHAPE", T::kIntList, "processes along [data, fsdp, tensor]"},
      {"FPROP_DTYPE", T::kString, "compute precision (pax-ocl computes in float32)"},
      {"LEARNING_RATE", T::kFloat, "peak learning rate"},
      {"LR_SCHEDULE", T::kString, "learning-rate schedule (linear_rampup_cosine_decay)"},
      {"LR_COS_WARMUP", T::kInt, "linear warm-up steps"},
      {"LR_COS_DECAY_START", T::kInt, "step where the cosine decay starts"},
      {"LR_COS_DECAY_END", T::kInt, "step where it ends"},
      {"LR_COS_MIN_RATIO", T::kFloat, "final learning rate / peak"},
      {"ADAM_BETA1", T::kFloat, "Adam beta1"},
      {"ADAM_BETA2", T::kFloat, "Adam beta2"},
      {"ADAM_EPSILON", T::kFloat, "Adam epsilon"},
      {"WEIGHT_DECAY", T::kFloat, "decoupled weight decay on matrices"},
      {"CLIP_GRADIENT_NORM_TO_VALUE", T::kFloat, "global gradient-norm clip (<= 0: off)"},
      {"MAX_STEPS", T::kInt, "training steps"},
      {"EVAL_INTERVAL_STEPS", T::kInt, "steps between evaluations (0: none)"},
      {"EVAL_LOOP_NUM_BATCHES", T::kInt, "batches per evaluation, -1 for one full epoch"},
      {"SUMMARY_INTERVAL_STEPS", T::kInt, "steps between summaries and console lines"},
      {"CHECKPOINT_EVERY_N_STEPS", T::kInt, "steps between checkpoints (job_log_dir/checkpoints; 0: only the first, the last and on preemption)"},
      {"CHECKPOINT_MAX_TO_KEEP", T::kInt, "checkpoints kept (the newest), besides those of CHECKPOINT_KEEP_INTERVAL_HOURS"},
      {"CHECKPOINT_KEEP_INTERVAL_HOURS", T::kFloat, "also keep one checkpoint per this many hours (0: none)"},
      {"ENABLE_CHECKPOINT_SAVING", T::kBool, "save checkpoints (false: none; a job still resumes from existing ones)"},
      {"ASYNC_CHECKPOINTING", T::kBool, "write checkpoints in the background while training goes on"},
      {"PREEMPTION_GRACE_SECONDS", T::kInt, "after SIGTERM/SIGUSR1: seconds to finish the step and save before the process ends anyway"},
      {"SEED", T::kInt, "seed of the initialisation and the data order"},
      {"DATA", T::kString, "kjv | synthetic | dataset directory | text:FILES | token shards"},
      {"TOKENIZER", T::kString, "SentencePiece .model for DATA=text:FILES"},
      {"PREFETCH_DEPTH", T::kInt, "batches prepared ahead by the input thread"},
      {"OVERLAP_COMMUNICATION", T::kBool, "overlap collectives with compute: gradient reductions during the backward, FSDP all-gathers ahead of their block (false: every collective runs alone)"},
      {"ICI_ALGORITHM", T::kString, "collectives among this process's devices: ring (devices of a platform share a context; device-to-device copies) or host (staged through host memory)"},
      {"FSDP_PREFETCH_DEPTH", T::kInt, "FSDP: blocks whose all-gather is in flight ahead of the block computing (each costs a block of device memory)"},
      {"GRADIENT_BUCKET_BYTES", T::kInt, "with OVERLAP_COMMUNICATION: combine finished blocks' gradients into one reduction of at least this many bytes (0: one per block)"},
      {"TRACE_STEPS", T::kIntList, "steps written to job_log_dir/trace.json (Perfetto), e.g. [5,6]"},
  };
  return specs;
}

namespace {

using Values = std::map<std::string, HParamValue>;

// The base every experiment starts from: a small CPU-friendly GPT on the KJV.
Values defaults() {
  return {{"NUM_LAYERS", 4L},
          {"MODEL_DIMS", 256L},
          {"HIDDEN_DIMS", 1024L},
          {"NUM_HEADS", 4L},
          {"DIMS_PER_HEAD", 64L},
          {"MAX_SEQ_LEN", 128L},
          {"VOCAB_SIZE", 4096L},
          {"INIT_STD", 0.023},
          {"PERCORE_BATCH_SIZE", 8.0},
          {"ICI_MESH_SHAPE", std::vector<long>{1, 1, 1}},
          {"DCN_MESH_SHAPE", std::vector<long>{1, 1, 1}},
          {"FPROP_DTYPE", std::string("float32")},
          {"LEARNING_RATE", 1e-3},
          {"LR_SCHEDULE", std::string("linear_rampup_cosine_decay")},
          {"LR_COS_WARMUP", 50L},
          {"LR_COS_DECAY_START", 51L},
          {"LR_COS_DECAY_END", 1000L},
          {"LR_COS_MIN_RATIO", 0.1},
          {"ADAM_BETA1", 0.9},
          {"ADAM_BETA2", 0.95},
          {"ADAM_EPSILON", 1e-8},
          {"WEIGHT_DECAY", 0.1},
          {"CLIP_GRADIENT_NORM_TO_VALUE", 1.0},
          {"MAX_STEPS", 1000L},
          {"EVAL_INTERVAL_STEPS", 100L},
          {"EVAL_LOOP_NUM_BATCHES", 20L},
          {"SUMMARY_INTERVAL_STEPS", 20L},
          {"CHECKPOINT_EVERY_N_STEPS", 1000L},
          {"CHECKPOINT_MAX_TO_KEEP", 10L},
          {"CHECKPOINT_KEEP_INTERVAL_HOURS", 0.0},
          {"ENABLE_CHECKPOINT_SAVING", true},
          {"ASYNC_CHECKPOINTING", true},
          {"PREEMPTION_GRACE_SECONDS", 60L},
          {"SEED", 1234L},
          {"DATA", std::string("kjv")},
          {"TOKENIZER", std::string("")},
          {"PREFETCH_DEPTH", 2L},
          {"OVERLAP_COMMUNICATION", true},
          {"FSDP_PREFETCH_DEPTH", 1L},
          {"ICI_ALGORITHM", std::string("ring")},
          {"GRADIENT_BUCKET_BYTES", 0L},
          {"TRACE_STEPS", std::vector<long>{}}};
}

// Pax's GPU GPT configs (paxml/contrib/gpu/scripts_gpu/configs.py; ../shared/reference/pax-notes.md
// section 2.1). Their data (the Pile) is not shipped, so they read DATA=synthetic unless overridden.
void gpt_gpu(Values& v, long layers, long dims, long heads, long dims_per_head, long vocab, double pbs,
             std::vector<long> ici, std::vector<long> dcn, double lr, long warmup, long decay_end, long max_steps,
             long summary, long checkpoint, double init_std) {
  v["NUM_LAYERS"] = layers;
  v["MODEL_DIMS"] = dims;
  v["HIDDEN_DIMS"] = 4 * dims;
  v["NUM_HEADS"] = heads;
  v["DIMS_PER_HEAD"] = dims_per_head;
  v["MAX_SEQ_LEN"] = 2048L;
  v["VOCAB_SIZE"] = vocab;
  v["PERCORE_BATCH_SIZE"] = pbs;
  v["ICI_MESH_SHAPE"] = std::move(ici);
  v["DCN_MESH_SHAPE"] = std::move(dcn);
  v["FPROP_DTYPE"] = std::string("bfloat16");
  v["LEARNING_RATE"] = lr;
  v["LR_COS_WARMUP"] = warmup;
  v["LR_COS_DECAY_START"] = warmup + 1;
  v["LR_COS_DECAY_END"] = decay_end;
  v["LR_COS_MIN_RATIO"] = 0.1;
  v["MAX_STEPS"] = max_steps;
  v["EVAL_INTERVAL_STEPS"] = 100L;
  v["SUMMARY_INTERVAL_STEPS"] = summary;
  v["CHECKPOINT_EVERY_N_STEPS"] = checkpoint;
  v["INIT_STD"] = init_std;
  v["DATA"] = std::string("synthetic");
}

const std::map<std::string, std::function<void(Values&)>>& registry() {
  static const std::map<std::string, std::function<void(Values&)>> r = {
      // The default: about 4M parameters on the KJV, a few minutes on 2 CPU cores.
      {"Default", [](Values&) {}},
      // Config C of the benchmarks (17M parameters) on the synthetic stream.
      {"SyntheticBench",
       [](Values& v) {
         v["NUM_LAYERS"] = 6L;
         v["MODEL_DIMS"] = 384L;
         v["HIDDEN_DIMS"] = 1536L;
         v["NUM_HEADS"] = 6L;
         v["DIMS_PER_HEAD"] = 64L;
         v["MAX_SEQ_LEN"] = 256L;
         v["VOCAB_SIZE"] = 16384L;
         v["MAX_STEPS"] = 20L;
         v["EVAL_INTERVAL_STEPS"] = 0L;
         v["SUMMARY_INTERVAL_STEPS"] = 5L;
         v["DATA"] = std::string("synthetic");
       }},
      {"Pile126M", [](Values& v) { gpt_gpu(v, 12, 768, 12, 64, 50304, 4, {8, 1, 1}, {8, 1, 1}, 6e-4, 636, 500000, 600000, 100, 5000, 0.023); }},
      {"GPT5B", [](Values& v) { gpt_gpu(v, 24, 4096, 32, 128, 50304, 8, {1, 8, 1}, {1, 32, 1}, 1.6e-4, 115, 62500, 75000, 10, 250, 0.01); }},
      {"GPT175B", [](Values& v) { gpt_gpu(v, 96, 12288, 96, 128, 50257, 6, {1, 8, 1}, {1, 32, 1}, 2e-5, 265, 108600, 75000, 10, 100, 0.023); }},
  };
  return r;
}

std::vector<std::string> field_names() {
  std::vector<std::string> names;
  for (const HParamSpec& s : Experiment::schema()) names.push_back(s.name);
  return names;
}

const char* type_name(HParamType t) {
  switch (t) {
    case HParamType::kInt: return "an integer";
    case HParamType::kFloat: return "a number";
    case HParamType::kBool: return "a boolean";
    case HParamType::kString: return "a string";
    case HParamType::kIntList: return "a list of integers";
  }
  return "a value";
}

}  // namespace

std::vector<std::string> Experiment::names() {
  std::vector<std::string> n;
  for (const auto& [name, f] : registry()) n.push_back(name);
  return n;
}

Experiment Experiment::named(const std::string& name) {
  const auto& r = registry();
  const auto it = r.find(name);
  if (it == r.end()) {
    const auto all = names();
    throw ConfigError(fmt::format("--fdl_config={}: no such experiment{}; known: {}", name, did_you_mean(name, all, ""),
                                  fmt::join(all, ", ")));
  }
  Experiment e;
  e.name_ = name;
  e.base_ = name;
  e.values_ = defaults();
  it->second(e.values_);
  return e;
}

Experiment Experiment::from_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError(fmt::format("--fdl_config_file={}: cannot be read", file.string()));
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(fmt::format("--fdl_config_file={}: not valid JSON ({})", file.string(), e.what()));
  }
  if (!j.is_object() || !j.contains("fdl_config") || !j["fdl_config"].is_string()) {
    throw ConfigError(fmt::format("--fdl_config_file={}: expected a JSON object with \"fdl_config\": \"<experiment to "
                                  "inherit from>\" and UPPER_CASE hyper-parameters",
                                  file.string()));
  }
  Experiment e = named(j["fdl_config"].get<std::string>());
  e.name_ = file.stem().string();
  for (const auto& [key, value] : j.items()) {
    if (key != "fdl_config") e.set_json(key, value);
  }
  return e;
}

const HParamSpec& Experiment::spec(const std::string& field) const {
  for (const HParamSpec& s : schema()) {
    if (s.name == field) return s;
  }
  const auto all = field_names();
  throw ConfigError(fmt::format("unknown hyper-parameter {}{}", field, did_you_mean(field, all, "")));
}

void Experiment::set(const std::string& field, std::string_view text) {
  switch (spec(field).type) {
    case HParamType::kInt: values_[field] = parse_int_value(field, text); break;
    case HParamType::kFloat: values_[field] = parse_float_value(field, text); break;
    case HParamType::kBool: values_[field] = parse_bool_value(field, text); break;
    case HParamType::kString: values_[field] = parse_string_value(field, text); break;
    case HParamType::kIntList: values_[field] = parse_int_list_value(field, text); break;
  }
}

void Experiment::set_json(const std::string& field, const nlohmann::json& v) {
  const HParamSpec& s = spec(field);
  const bool ok = (s.type == HParamType::kInt && v.is_number_integer()) || (s.type == HParamType::kFloat && v.is_number()) ||
                  (s.type == HParamType::kBool && v.is_boolean()) || (s.type == HParamType::kString && v.is_string()) ||
                  (s.type == HParamType::kIntList && v.is_array() &&
                   std::all_of(v.begin(), v.end(), [](const auto& x) { return x.is_number_integer(); }));
  if (!ok) throw ConfigError(fmt::format("{}={}: expected {}", field, v.dump(), type_name(s.type)));
  switch (s.type) {
    case HParamType::kInt: values_[field] = v.get<long>(); break;
    case HParamType::kFloat: values_[field] = v.get<double>(); break;
    case HParamType::kBool: values_[field] = v.get<bool>(); break;
    case HParamType::kString: values_[field] = v.get<std::string>(); break;
    case HParamType::kIntList: values_[field] = v.get<std::vector<long>>(); break;
  }
}

long Experiment::get_int(const std::string& field) const { return std::get<long>(values_.at(field)); }
double Experiment::get_float(const std::string& field) const { return std::get<double>(values_.at(field)); }
bool Experiment::get_bool(const std::string& field) const { return std::get<bool>(values_.at(field)); }
std::string Experiment::get_string(const std::string& field) const { return std::get<std::string>(values_.at(field)); }
std::vector<long> Experiment::get_int_list(const std::string& field) const {
  return std::get<std::vector<long>>(values_.at(field));
}

nlohmann::json Experiment::to_json() const {
  nlohmann::json j = {{"fdl_config", base_}};
  for (const auto& [field, value] : values_) std::visit([&](const auto& v) { j[field] = v; }, value);
  return j;
}

GptConfig Experiment::model_config() const {
  GptConfig c;
  c.num_layers = static_cast<int>(get_int("NUM_LAYERS"));
  c.model_dims = static_cast<int>(get_int("MODEL_DIMS"));
  c.hidden_dims = static_cast<int>(get_int("HIDDEN_DIMS"));
  c.num_heads = static_cast<int>(get_int("NUM_HEADS"));
  c.dims_per_head = static_cast<int>(get_int("DIMS_PER_HEAD"));
  c.max_seq_len = static_cast<int>(get_int("MAX_SEQ_LEN"));
  c.vocab_size = static_cast<int>(get_int("VOCAB_SIZE"));
  c.init_std = static_cast<float>(get_float("INIT_STD"));
  return c;
}

}  // namespace paxocl::models
