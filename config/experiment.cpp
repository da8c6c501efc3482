#include "config/experiment.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/bounded_json.h"
#include "common/regular_file.h"
#include "common/errors.h"
#include "common/nearest_names.h"
#include "config/hparam_values.h"
#include "models/checkpoint_policy.h"

namespace paxocl::config {

namespace {
constexpr std::size_t kMaxExperimentFileBytes = 1 << 20;
}  // namespace

const std::vector<HParamSpec>& Experiment::schema() {
  using T = HParamType;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kDim = models::GptConfig::kMaxDimension;
  constexpr double kIntMax = std::numeric_limits<int>::max();
  static const std::vector<HParamSpec> specs = {
      {.name = "ARCHITECTURE", .type = T::kString,
       .help = "model family: gpt (LayerNorm, learned positions, GELU MLP, tied head) or llama (RMSNorm, rotary "
               "positions, SwiGLU MLP, grouped-query attention, untied head, no biases)",
       .choices = {"gpt", "llama"}},
      {.name = "NUM_LAYERS", .type = T::kInt, .help = "transformer blocks", .min = 1, .max = 1 << 16},
      {.name = "MODEL_DIMS", .type = T::kInt, .help = "model width", .min = 1, .max = kDim},
      {.name = "HIDDEN_DIMS", .type = T::kInt, .help = "MLP width", .min = 1, .max = kDim},
      {.name = "NUM_HEADS", .type = T::kInt, .help = "attention heads", .min = 1, .max = kDim},
      {.name = "NUM_KV_HEADS", .type = T::kInt,
       .help = "llama: key/value heads of grouped-query attention, dividing NUM_HEADS (1: multi-query; 0: NUM_HEADS)",
       .min = 0, .max = kDim},
      {.name = "DIMS_PER_HEAD", .type = T::kInt, .help = "width of one head", .min = 1, .max = kDim},
      {.name = "ROPE_BASE", .type = T::kFloat, .help = "llama: rotary embedding base (Hugging Face rope_theta)", .min = 1,
       .max = kInf, .min_exclusive = true},
      {.name = "NORM_EPSILON", .type = T::kFloat, .help = "llama: RMSNorm epsilon (Hugging Face rms_norm_eps)", .min = 0,
       .max = 1, .min_exclusive = true},
      {.name = "BLOCK_KINDS", .type = T::kString,
       .help = "gpt: each block's token mixer, attention or ssm (praxis's S4D SSM layer in place of attention), a "
               "comma-separated pattern repeated over NUM_LAYERS, e.g. attention,ssm"},
      {.name = "SSM_NHEADS", .type = T::kInt, .help = "SSM blocks: state size N per channel (praxis SSM nheads)", .min = 1,
       .max = 1 << 16},
      {.name = "SSM_STEP_SIZE", .type = T::kFloat, .help = "SSM blocks: the frozen discretization step dt", .min = 0,
       .max = kInf, .min_exclusive = true},
      {.name = "SSM_HIPPO_TYPE", .type = T::kString,
       .help = "SSM blocks: the frozen diagonal A: ss4d-1d (a = -0.5 + i pi-spaced), ss4d-legs or ss4d-lagt (HiPPO "
               "eigenvalues)",
       .choices = {"ss4d-1d", "ss4d-legs", "ss4d-lagt"}},
      {.name = "SSM_L_MAX", .type = T::kInt, .help = "SSM blocks: longest sequence the kernel covers (0: MAX_SEQ_LEN)",
       .min = 0, .max = kDim},
      {.name = "SSM_CONVOLUTION", .type = T::kString,
       .help = "SSM blocks: auto (direct on CPU devices up to 256 positions, where it is faster; else fft), fft "
               "(clFFT; the direct kernel where clFFT fails its self-check) or direct (O(T^2))",
       .choices = {"auto", "fft", "direct"}},
      {.name = "MAX_SEQ_LEN", .type = T::kInt, .help = "tokens per sequence", .min = 1, .max = kDim},
      {.name = "VOCAB_SIZE", .type = T::kInt, .help = "vocabulary size (must equal the tokenizer's)", .min = 1, .max = kDim},
      {.name = "INIT_STD", .type = T::kFloat, .help = "Gaussian init std of every matrix", .min = 0, .max = kInf, .min_exclusive = true},
      {.name = "PERCORE_BATCH_SIZE", .type = T::kFloat, .help = "sequences per device per step (may be fractional)",
       .min = 0, .max = 1 << 20, .min_exclusive = true},
      {.name = "ICI_MESH_SHAPE", .type = T::kIntList,
       .help = "devices per process along [data, fsdp, tensor], or [stage, data, fsdp, tensor]", .min = 1, .max = 1 << 16,
       .list_sizes = {3, 4}},
      {.name = "DCN_MESH_SHAPE", .type = T::kIntList,
       .help = "processes along [data, fsdp, tensor], or [stage, data, fsdp, tensor]", .min = 1, .max = 1 << 20,
       .list_sizes = {3, 4}},
      {.name = "FPROP_DTYPE", .type = T::kString,
       .help = "activations and the weights as a step reads them (parameters, gradients, Adam stay float32); auto: "
               "bfloat16 on CPUs with bfloat16 matrix instructions where a bfloat16 GEMM measures faster, float32 elsewhere "
               "(stated at start-up)",
       .choices = {"auto", "float32", "bfloat16", "float16"}},
      {.name = "MATMUL_PRECISION", .type = T::kString,
       .help = "float32 GEMMs: float32, or tf32 (operands rounded to TF32, on tensor cores where the probe found them)",
       .choices = {"float32", "tf32"}},
      {.name = "LOSS_SCALE_INITIAL", .type = T::kFloat,
       .help = "float16: first dynamic loss scale (a power of two; halves on overflow)", .min = 1, .max = 16777216},
      {.name = "LOSS_SCALE_GROWTH_INTERVAL", .type = T::kInt,
       .help = "float16: clean steps after which the loss scale doubles", .min = 1, .max = kInf},
      {.name = "LEARNING_RATE", .type = T::kFloat, .help = "peak learning rate", .min = 0, .max = kInf},
      {.name = "LR_SCHEDULE", .type = T::kString, .help = "learning-rate schedule (linear_rampup_cosine_decay)",
       .choices = {"linear_rampup_cosine_decay"}},
      {.name = "LR_COS_WARMUP", .type = T::kInt, .help = "linear warm-up steps", .min = 0, .max = kInf},
      {.name = "LR_COS_DECAY_START", .type = T::kInt, .help = "step where the cosine decay starts", .min = 0, .max = kInf},
      {.name = "LR_COS_DECAY_END", .type = T::kInt, .help = "step where it ends", .min = 0, .max = kInf},
      {.name = "LR_COS_MIN_RATIO", .type = T::kFloat, .help = "final learning rate / peak", .min = 0, .max = 1},
      {.name = "ADAM_BETA1", .type = T::kFloat, .help = "Adam beta1", .min = 0, .max = 1, .max_exclusive = true},
      {.name = "ADAM_BETA2", .type = T::kFloat, .help = "Adam beta2", .min = 0, .max = 1, .max_exclusive = true},
      {.name = "ADAM_EPSILON", .type = T::kFloat, .help = "Adam epsilon", .min = 0, .max = kInf, .min_exclusive = true},
      {.name = "WEIGHT_DECAY", .type = T::kFloat, .help = "decoupled weight decay on matrices", .min = 0, .max = kInf},
      {.name = "CLIP_GRADIENT_NORM_TO_VALUE", .type = T::kFloat, .help = "global gradient-norm clip (<= 0: off)",
       .min = -kInf, .max = kInf},
      {.name = "MAX_STEPS", .type = T::kInt, .help = "training steps", .min = 0, .max = kInf},
      {.name = "EVAL_INTERVAL_STEPS", .type = T::kInt, .help = "steps between evaluations (0: none)", .min = 0, .max = kInf},
      {.name = "EVAL_LOOP_NUM_BATCHES", .type = T::kInt, .help = "batches per evaluation, at most one pass over the split; -1 for the whole pass", .min = -1,
       .max = kInf},
      {.name = "SUMMARY_INTERVAL_STEPS", .type = T::kInt, .help = "steps between summaries and console lines", .min = 1,
       .max = kInf},
      {.name = "CHECKPOINT_EVERY_N_STEPS", .type = T::kInt,
       .help = "steps between checkpoints (job_log_dir/checkpoints; 0: only the first, the last and on preemption)", .min = 0,
       .max = kInf},
      {.name = "CHECKPOINT_MAX_TO_KEEP", .type = T::kInt,
       .help = "checkpoints kept (the newest), besides those of CHECKPOINT_KEEP_INTERVAL_HOURS", .min = 1, .max = kIntMax},
      {.name = "CHECKPOINT_KEEP_INTERVAL_HOURS", .type = T::kFloat, .help = "also keep one checkpoint per this many hours (0: none)",
       .min = 0, .max = kInf},
      {.name = "ENABLE_CHECKPOINT_SAVING", .type = T::kBool,
       .help = "save checkpoints (false: none; a job still resumes from existing ones)"},
      {.name = "ASYNC_CHECKPOINTING", .type = T::kBool, .help = "write checkpoints in the background while training goes on"},
      {.name = "PREEMPTION_GRACE_SECONDS", .type = T::kInt,
       .help = "after SIGTERM/SIGUSR1: seconds to finish the step and save before the process ends anyway", .min = 0,
       .max = 7 * 24 * 3600},
      {.name = "SEED", .type = T::kInt, .help = "seed of the initialisation and the data order", .min = 0, .max = kInf},
      {.name = "DATA", .type = T::kString, .help = "kjv | synthetic | dataset or llm.c directory | text:FILES | token shards"},
      {.name = "TOKENIZER", .type = T::kString, .help = "SentencePiece .model for DATA=text:FILES"},
      {.name = "PREFETCH_DEPTH", .type = T::kInt, .help = "batches prepared ahead by the input thread", .min = 0, .max = 1024},
      {.name = "OVERLAP_COMMUNICATION", .type = T::kBool,
       .help = "overlap collectives with compute: gradient reductions during the backward, FSDP all-gathers ahead of their "
               "block (false: every collective runs alone)"},
      {.name = "ICI_ALGORITHM", .type = T::kString,
       .help = "collectives among this process's devices: ring (devices of a platform share a context; device-to-device "
               "copies) or host (staged through host memory)",
       .choices = {"ring", "host"}},
      {.name = "SEQUENCE_PARALLEL", .type = T::kBool,
       .help = "with a tensor axis > 1: Megatron-LM's sequence parallelism: norms and residual adds on each tensor "
               "rank's rows of the batch (activation memory), reduce-scatter + all-gather instead of all-reduces"},
      {.name = "CHECKPOINT_POLICY", .type = T::kString,
       .help = "rematerialization, praxis's names: which forward results each block keeps for its backward; the rest "
               "is recomputed just before it (SAVE_EVERYTHING: none)",
       .choices = models::checkpoint_policy_names()},
      {.name = "NUM_SUB_BATCHES", .type = T::kInt,
       .help = "gradient accumulation: each device's batch runs as this many sub-batches whose gradients are summed "
               "before one optimizer step (activations of one sub-batch; praxis's ShardedStaticAccumulator)",
       .min = 1, .max = 1 << 20},
      {.name = "NUM_MICROBATCHES", .type = T::kInt,
       .help = "with a stage axis > 1: microbatches each model replica's batch is pipelined as (0: MICROBATCH_SIZE "
               "decides, else one sequence each)",
       .min = 0, .max = 1 << 20},
      {.name = "MICROBATCH_SIZE", .type = T::kInt,
       .help = "with a stage axis > 1: sequences per microbatch, instead of NUM_MICROBATCHES (0: not set)", .min = 0,
       .max = 1 << 20},
      {.name = "PIPELINE_SCHEDULE", .type = T::kString,
       .help = "with a stage axis > 1: gpipe (every forward, then every backward: all microbatches' activations held), "
               "1f1b (a stage holds at most as many microbatches as stages after it, plus one) or circular "
               "(CIRCULAR_REPEAT chunks of blocks per stage, round robin; a smaller bubble)",
       .choices = {"1f1b", "gpipe", "circular"}},
      {.name = "CIRCULAR_REPEAT", .type = T::kInt,
       .help = "PIPELINE_SCHEDULE=circular: how many chunks of blocks each stage holds (the microbatches pass the "
               "stages this many times)",
       .min = 1, .max = 1 << 16},
      {.name = "FSDP_PREFETCH_DEPTH", .type = T::kInt,
       .help = "FSDP: blocks whose all-gather is in flight ahead of the block computing (each costs a block of device memory)",
       .min = 0, .max = 1 << 16},
      {.name = "GRADIENT_BUCKET_BYTES", .type = T::kInt,
       .help = "with OVERLAP_COMMUNICATION: combine finished blocks' gradients into one reduction of at least this many "
               "bytes (0: one per block)",
       .min = 0, .max = kInf},
      {.name = "TRACE_STEPS", .type = T::kIntList, .help = "steps written to job_log_dir/trace.json (Perfetto), e.g. [5,6]",
       .min = 1, .max = kInf},
  };
  return specs;
}

namespace {

using Values = std::map<std::string, HParamValue>;

// The base every experiment starts from: a small CPU-friendly GPT on the KJV.
Values defaults() {
  return {{"ARCHITECTURE", std::string("gpt")},
          {"NUM_LAYERS", 4L},
          {"MODEL_DIMS", 256L},
          {"HIDDEN_DIMS", 1024L},
          {"NUM_HEADS", 4L},
          {"NUM_KV_HEADS", 0L},
          {"DIMS_PER_HEAD", 64L},
          {"ROPE_BASE", 10000.0},
          {"NORM_EPSILON", 1e-5},
          {"BLOCK_KINDS", std::string("attention")},
          {"SSM_NHEADS", 64L},
          {"SSM_STEP_SIZE", 0.01},
          {"SSM_HIPPO_TYPE", std::string("ss4d-1d")},
          {"SSM_L_MAX", 0L},
          {"SSM_CONVOLUTION", std::string("auto")},
          {"MAX_SEQ_LEN", 128L},
          {"VOCAB_SIZE", 4096L},
          {"INIT_STD", 0.023},
          {"PERCORE_BATCH_SIZE", 8.0},
          {"ICI_MESH_SHAPE", std::vector<long>{1, 1, 1}},
          {"DCN_MESH_SHAPE", std::vector<long>{1, 1, 1}},
          {"FPROP_DTYPE", std::string("auto")},
          {"MATMUL_PRECISION", std::string("float32")},
          {"LOSS_SCALE_INITIAL", 65536.0},
          {"LOSS_SCALE_GROWTH_INTERVAL", 2000L},
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
          {"SEQUENCE_PARALLEL", false},
          {"CHECKPOINT_POLICY", std::string("SAVE_EVERYTHING")},
          {"NUM_SUB_BATCHES", 1L},
          {"NUM_MICROBATCHES", 0L},
          {"MICROBATCH_SIZE", 0L},
          {"PIPELINE_SCHEDULE", std::string("1f1b")},
          {"CIRCULAR_REPEAT", 1L},
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

// Pax's LLaMA-2 configs (paxml/contrib/gpu/scripts_gpu/llama_utils.py, configs.py; ../shared/reference/
// pax-notes.md section 2.2): shapes for planning and sweeps; their weights and data are not shipped.
void llama_gpu(Values& v, long layers, long dims, long hidden, long heads, long kv_heads, double pbs,
               std::vector<long> ici, std::vector<long> dcn) {
  v["ARCHITECTURE"] = std::string("llama");
  v["NUM_LAYERS"] = layers;
  v["MODEL_DIMS"] = dims;
  v["HIDDEN_DIMS"] = hidden;
  v["NUM_HEADS"] = heads;
  v["NUM_KV_HEADS"] = kv_heads;
  v["DIMS_PER_HEAD"] = 128L;
  v["MAX_SEQ_LEN"] = 4096L;
  v["VOCAB_SIZE"] = 32000L;
  v["ROPE_BASE"] = 10000.0;
  v["NORM_EPSILON"] = 1e-5;
  v["INIT_STD"] = 0.02;
  v["PERCORE_BATCH_SIZE"] = pbs;
  v["ICI_MESH_SHAPE"] = std::move(ici);
  v["DCN_MESH_SHAPE"] = std::move(dcn);
  v["FPROP_DTYPE"] = std::string("bfloat16");
  v["LEARNING_RATE"] = 2e-5;  // fine-tuning rates: Pax runs these from a converted checkpoint
  v["LR_COS_WARMUP"] = 100L;
  v["LR_COS_DECAY_START"] = 101L;
  v["LR_COS_DECAY_END"] = 10000L;
  v["MAX_STEPS"] = 10000L;
  v["SUMMARY_INTERVAL_STEPS"] = 10L;
  v["CHECKPOINT_EVERY_N_STEPS"] = 500L;
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
      // The Default's size and data as a LLaMA: RMSNorm, rotary positions, SwiGLU (F = 8C/3 rounded up
      // to 16), grouped-query attention with 2 key/value heads for 4 query heads.
      {"LlamaKJV",
       [](Values& v) {
         v["ARCHITECTURE"] = std::string("llama");
         v["HIDDEN_DIMS"] = 688L;
         v["NUM_KV_HEADS"] = 2L;
         v["INIT_STD"] = 0.02;
       }},
      // praxis's SSMTransformer on the Default's data: every block's attention replaced by the S4D SSM;
      // the MLP widened (HIDDEN_DIMS 1024 -> 1472) to the Default's parameter count (within 0.1%).
      {"SsmKJV",
       [](Values& v) {
         v["BLOCK_KINDS"] = std::string("ssm");
         v["HIDDEN_DIMS"] = 1472L;
       }},
      // Attention and SSM blocks alternating, at the Default's parameter count (HIDDEN_DIMS 1248).
      {"HybridKJV",
       [](Values& v) {
         v["BLOCK_KINDS"] = std::string("attention,ssm");
         v["HIDDEN_DIMS"] = 1248L;
       }},
      {"LLaMA2_7B", [](Values& v) { llama_gpu(v, 32, 4096, 11008, 32, 32, 16, {1, 8, 1}, {1, 1, 1}); }},
      {"LLaMA2_70B", [](Values& v) { llama_gpu(v, 80, 8192, 28672, 64, 8, 4, {1, 8, 1}, {1, 2, 1}); }},
      {"Pile126M", [](Values& v) { gpt_gpu(v, 12, 768, 12, 64, 50304, 4, {8, 1, 1}, {8, 1, 1}, 6e-4, 636, 500000, 600000, 100, 5000, 0.023); }},
      {"GPT5B", [](Values& v) {
         gpt_gpu(v, 24, 4096, 32, 128, 50304, 8, {1, 8, 1}, {1, 32, 1}, 1.6e-4, 115, 62500, 75000, 10, 250, 0.01);
         v["CHECKPOINT_POLICY"] = std::string("SAVE_DOT_WITH_NO_BATCH_DIM");  // Pax's GPT5B
       }},
      {"GPT175B", [](Values& v) {
         gpt_gpu(v, 96, 12288, 96, 128, 50257, 6, {1, 8, 1}, {1, 32, 1}, 2e-5, 265, 108600, 75000, 10, 100, 0.023);
         v["CHECKPOINT_POLICY"] = std::string("SAVE_NOTHING");  // Pax's GPT175B (inherited)
       }},
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

// "[0, 1)", "at least 1", ...: the documented range of a numeric field.
std::string describe_range(const HParamSpec& s) {
  const bool low = std::isfinite(s.min), high = std::isfinite(s.max);
  if (low && high) return fmt::format("in {}{}, {}{}", s.min_exclusive ? '(' : '[', s.min, s.max, s.max_exclusive ? ')' : ']');
  if (low) return fmt::format("{} {}", s.min_exclusive ? "greater than" : "at least", s.min);
  return fmt::format("{} {}", s.max_exclusive ? "less than" : "at most", s.max);
}

bool in_range(const HParamSpec& s, double v) {
  return (s.min_exclusive ? v > s.min : v >= s.min) && (s.max_exclusive ? v < s.max : v <= s.max);
}

// ConfigError unless `value` lies in the field's documented range (or, for strings, its choices).
void check_range(const HParamSpec& s, const HParamValue& value, const std::string& shown) {
  auto out_of_range = [&](const std::string& what) {
    throw ConfigError(fmt::format("{}={}: {} must be {} ({})", s.name, shown, what, describe_range(s), s.help));
  };
  if (const auto* i = std::get_if<long>(&value)) {
    if (!in_range(s, static_cast<double>(*i))) out_of_range("the value");
  } else if (const auto* f = std::get_if<double>(&value)) {
    if (!in_range(s, *f)) out_of_range("the value");
  } else if (const auto* list = std::get_if<std::vector<long>>(&value)) {
    if (!s.list_sizes.empty() &&
        std::find(s.list_sizes.begin(), s.list_sizes.end(), list->size()) == s.list_sizes.end()) {
      throw ConfigError(fmt::format("{}={}: expected {} entries, got {} ({})", s.name, shown,
                                    fmt::join(s.list_sizes, " or "), list->size(), s.help));
    }
    for (long v : *list) {
      if (!in_range(s, static_cast<double>(v))) out_of_range(fmt::format("every entry (here {})", v));
    }
  } else if (const auto* text = std::get_if<std::string>(&value); text != nullptr && !s.choices.empty()) {
    if (std::find(s.choices.begin(), s.choices.end(), *text) == s.choices.end()) {
      throw ConfigError(fmt::format("{}={}: use one of {}", s.name, shown, fmt::join(s.choices, ", ")));
    }
  }
}

}  // namespace

void check_hparam_range(const HParamSpec& spec, const HParamValue& value) {
  check_range(spec, value, std::visit([](const auto& v) { return fmt::format("{}", v); }, value));
}

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
  for (const auto& [field, value] : e.values_) check_hparam_range(e.spec(field), value);  // the registry keeps the ranges too
  return e;
}

Experiment Experiment::from_file(const std::filesystem::path& file) {
  if (const std::string why = why_not_regular_file(file); !why.empty()) {
    throw ConfigError(fmt::format("--fdl_config_file={}: cannot be read ({})", file.string(), why));
  }
  nlohmann::json j;
  try {
    j = read_json_file_bounded(file, kMaxJsonDepth, kMaxExperimentFileBytes);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(fmt::format("--fdl_config_file={}: not valid JSON ({})", file.string(), e.what()));
  }
  Experiment e = from_json(j, fmt::format("--fdl_config_file={}", file.string()));
  e.name_ = file.stem().string();
  return e;
}

Experiment Experiment::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object() || !j.contains("fdl_config") || !j["fdl_config"].is_string()) {
    throw ConfigError(fmt::format("{}: expected a JSON object with \"fdl_config\": \"<experiment to "
                                  "inherit from>\" and UPPER_CASE hyper-parameters",
                                  source));
  }
  Experiment e = named(j["fdl_config"].get<std::string>());
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
  const HParamSpec& s = spec(field);
  HParamValue value;
  switch (s.type) {
    case HParamType::kInt: value = parse_int_value(field, text); break;
    case HParamType::kFloat: value = parse_float_value(field, text); break;
    case HParamType::kBool: value = parse_bool_value(field, text); break;
    case HParamType::kString: value = parse_string_value(field, text); break;
    case HParamType::kIntList: value = parse_int_list_value(field, text); break;
  }
  check_range(s, value, std::string(text));
  values_[field] = std::move(value);
}

void Experiment::set_json(const std::string& field, const nlohmann::json& v) {
  const HParamSpec& s = spec(field);
  const bool ok = (s.type == HParamType::kInt && v.is_number_integer()) || (s.type == HParamType::kFloat && v.is_number()) ||
                  (s.type == HParamType::kBool && v.is_boolean()) || (s.type == HParamType::kString && v.is_string()) ||
                  (s.type == HParamType::kIntList && v.is_array() &&
                   std::all_of(v.begin(), v.end(), [](const auto& x) { return x.is_number_integer(); }));
  // JSON integers above LONG_MAX arrive unsigned and would wrap in get<long>().
  auto fits_long = [](const nlohmann::json& x) {
    return !x.is_number_unsigned() || x.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<long>::max());
  };
  // Only once the type is right: get<double>() of a string throws nlohmann's type_error (fuzz_experiment).
  const bool fits = ok && (s.type != HParamType::kInt || fits_long(v)) &&
                    (s.type != HParamType::kIntList || std::all_of(v.begin(), v.end(), fits_long)) &&
                    (s.type != HParamType::kFloat || std::isfinite(v.get<double>()));
  if (!ok || !fits) throw ConfigError(fmt::format("{}={}: expected {}", field, v.dump(), type_name(s.type)));
  HParamValue value;
  switch (s.type) {
    case HParamType::kInt: value = v.get<long>(); break;
    case HParamType::kFloat: value = v.get<double>(); break;
    case HParamType::kBool: value = v.get<bool>(); break;
    case HParamType::kString: value = v.get<std::string>(); break;
    case HParamType::kIntList: value = v.get<std::vector<long>>(); break;
  }
  check_range(s, value, v.dump());
  values_[field] = std::move(value);
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

void Experiment::set_model(const models::ModelConfig& model) {
  set_json("ARCHITECTURE", std::string(model.architecture()));
  model.visit([&](const auto& c) {  // the fields every family has
    set_json("NUM_LAYERS", c.num_layers);
    set_json("MODEL_DIMS", c.model_dims);
    set_json("HIDDEN_DIMS", c.hidden_dims);
    set_json("NUM_HEADS", c.num_heads);
    set_json("DIMS_PER_HEAD", c.dims_per_head);
    set_json("MAX_SEQ_LEN", c.max_seq_len);
    set_json("VOCAB_SIZE", c.vocab_size);
  });
  if (model.is_gpt() && model.gpt().ssm_blocks() > 0) {
    const models::GptConfig& c = model.gpt();
    set_json("BLOCK_KINDS", models::block_kinds_text(c.block_kinds));
    set_json("SSM_NHEADS", c.ssm.state_size);
    set_json("SSM_STEP_SIZE", c.ssm.step_size);
    set_json("SSM_HIPPO_TYPE", c.ssm.hippo_type);
    set_json("SSM_L_MAX", c.ssm.l_max);
  } else {
    set_json("BLOCK_KINDS", std::string("attention"));
  }
  if (model.is_llama()) {
    const models::LlamaConfig& c = model.llama();
    set_json("NUM_KV_HEADS", c.num_kv_heads);
    set_json("ROPE_BASE", c.rope_base);
    set_json("NORM_EPSILON", c.norm_epsilon);
  } else {
    set_json("NUM_KV_HEADS", 0);
  }
}

void Experiment::override_field(const std::string& field, std::string_view text) {
  set(field, text);
  overridden_.insert(field);
}

void Experiment::adopt_model(const models::ModelConfig& model, const std::string& source) {
  Experiment from_file = *this;
  from_file.set_model(model);
  // Floats compare as the float the model holds (SSM_STEP_SIZE 0.01 is 0.00999999977 there).
  auto same = [](const HParamValue& a, const HParamValue& b) {
    if (std::holds_alternative<double>(a) && std::holds_alternative<double>(b)) {
      return static_cast<float>(std::get<double>(a)) == static_cast<float>(std::get<double>(b));
    }
    return a == b;
  };
  for (const std::string& field : overridden_) {
    if (same(values_.at(field), from_file.values_.at(field))) continue;
    auto text = [&](const Experiment& e) {  // floats as the model's float holds them: 0.02, not 0.0199999995
      const HParamValue& v = e.values_.at(field);
      return std::holds_alternative<double>(v) ? fmt::format("{}", static_cast<float>(std::get<double>(v)))
                                               : e.to_json()[field].dump();
    };
    throw ConfigError(fmt::format("--fdl.{}={} contradicts {}, which records {}={}; leave the flag out: the file's "
                                  "settings are used",
                                  field, text(*this), source, field, text(from_file)));
  }
  values_ = std::move(from_file.values_);
}

models::ModelConfig Experiment::model_config() const {
  // Every field was range-checked when set, so the narrowing casts below are exact.
  std::vector<models::BlockKind> kinds = models::parse_block_kinds(get_string("BLOCK_KINDS"));
  const bool any_ssm = std::count(kinds.begin(), kinds.end(), models::BlockKind::kSsm) > 0;
  if (!any_ssm) kinds.clear();  // all attention: the plain GPT
  if (get_string("ARCHITECTURE") == "llama") {
    if (any_ssm) {
      throw ConfigError(fmt::format("BLOCK_KINDS={}: SSM blocks are built on the gpt architecture; use "
                                    "ARCHITECTURE=gpt", get_string("BLOCK_KINDS")));
    }
    models::LlamaConfig c;
    c.num_layers = static_cast<int>(get_int("NUM_LAYERS"));
    c.model_dims = static_cast<int>(get_int("MODEL_DIMS"));
    c.hidden_dims = static_cast<int>(get_int("HIDDEN_DIMS"));
    c.num_heads = static_cast<int>(get_int("NUM_HEADS"));
    const long kv = get_int("NUM_KV_HEADS");
    c.num_kv_heads = kv == 0 ? c.num_heads : static_cast<int>(kv);
    c.dims_per_head = static_cast<int>(get_int("DIMS_PER_HEAD"));
    c.max_seq_len = static_cast<int>(get_int("MAX_SEQ_LEN"));
    c.vocab_size = static_cast<int>(get_int("VOCAB_SIZE"));
    c.init_std = static_cast<float>(get_float("INIT_STD"));
    c.rope_base = static_cast<float>(get_float("ROPE_BASE"));
    c.norm_epsilon = static_cast<float>(get_float("NORM_EPSILON"));
    c.validate();
    return c;
  }
  if (const long kv = get_int("NUM_KV_HEADS"); kv != 0 && kv != get_int("NUM_HEADS")) {
    throw ConfigError(fmt::format("NUM_KV_HEADS={}: the gpt architecture has one key/value head per query head; use "
                                  "ARCHITECTURE=llama for grouped-query attention", kv));
  }
  models::GptConfig c;
  c.num_layers = static_cast<int>(get_int("NUM_LAYERS"));
  c.model_dims = static_cast<int>(get_int("MODEL_DIMS"));
  c.hidden_dims = static_cast<int>(get_int("HIDDEN_DIMS"));
  c.num_heads = static_cast<int>(get_int("NUM_HEADS"));
  c.dims_per_head = static_cast<int>(get_int("DIMS_PER_HEAD"));
  c.max_seq_len = static_cast<int>(get_int("MAX_SEQ_LEN"));
  c.vocab_size = static_cast<int>(get_int("VOCAB_SIZE"));
  c.init_std = static_cast<float>(get_float("INIT_STD"));
  c.block_kinds = std::move(kinds);
  c.ssm.state_size = static_cast<int>(get_int("SSM_NHEADS"));
  c.ssm.step_size = static_cast<float>(get_float("SSM_STEP_SIZE"));
  c.ssm.hippo_type = get_string("SSM_HIPPO_TYPE");
  c.ssm.l_max = static_cast<int>(get_int("SSM_L_MAX"));
  c.ssm.convolution = get_string("SSM_CONVOLUTION");
  c.validate();
  return c;
}

}  // namespace paxocl::config
