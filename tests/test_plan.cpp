// pax-ocl plan (plan/) against what the runtime really allocates and against the formulas worked
// out by hand:
//   - real runs: for small GPT and LLaMA experiments on data-parallel, FSDP, tensor and pipeline
//     meshes (stage x tensor, stage x fsdp too) of the PoCL devices, in float32, bfloat16 and
//     float16, the plan's training state and activations equal
//     StepProgram::state_bytes_per_device() and activation_bytes_per_device() exactly (the plan
//     uses the device's base address alignment, as the model does);
//   - FLOPs: ModelConfig::flops_per_token x the global batch's tokens;
//   - communication of DP, FSDP (ICI and DCN parts), tensor and pipeline layouts, in bytes by hand;
//   - pipeline stages: a 2-stage GPT's per-stage memory, the bubble (p-1)/(m+p-1), the search
//     splitting a model by depth when only stages fit; the circular schedule's chunks summed per
//     device, its sends around the ring, the bubble (p-1)/(r m+p-1), its rules through
//     LayoutSpec::validate and the search skipping the stage axes they refuse; FSDP inside the
//     stages (ZeRO-2: Adam's moments over the device's shard of each chunk, counted from the
//     alignment blocks; the fsdp reduce-scatter and all-gather of each chunk) and the search
//     proposing stage x fsdp where only that fits;
//   - tensor parallelism: the parameters and activations of one tensor rank, written out here
//     from the split issue 20 describes (the real-run check of TP comes with the runtime's TP);
//   - the smallest fitting layout is the smallest (brute force over every candidate);
//   - GPT175B on 256 H100s gives sane figures and a verdict.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>

#include "collectives/process_world.h"
#include "common/errors.h"
#include "kernels_cl/cpu_flash_attention.h"
#include "kernels_cl/ssm_kernels.h"
#include "config/job_config.h"
#include "device/program_cache.h"
#include "models/attention_workspace.h"
#include "plan/layout_search.h"
#include "plan/plan.h"
#include "plan/plan_report.h"
#include "plan/tensor_parallel.h"
#include "scheduler/step_program.h"
#include "tests/device_fixture.h"
#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

using device::DType;
using device::MeshAxis;

const collectives::ProcessWorld& world() {
  static int argc = 0;
  static char** argv = nullptr;
  static collectives::ProcessWorld w(&argc, &argv);  // no launcher: one process, no MPI
  return w;
}

// A small experiment: every override as --fdl would give it.
config::Experiment experiment(const std::string& base, const std::vector<std::pair<std::string, std::string>>& overrides) {
  config::Experiment e = config::Experiment::named(base);
  e.set("DATA", "synthetic");
  for (const auto& [k, v] : overrides) e.set(k, v);
  return e;
}

// A GPT whose sizes are not multiples of 16: C 40, H 100, T 24, V 300 (Vp 384), 2 heads of 20.
std::vector<std::pair<std::string, std::string>> odd_gpt() {
  return {{"FPROP_DTYPE", "float32"}, {"NUM_LAYERS", "2"},  {"MODEL_DIMS", "40"}, {"HIDDEN_DIMS", "100"}, {"NUM_HEADS", "2"},
          {"DIMS_PER_HEAD", "20"}, {"MAX_SEQ_LEN", "24"}, {"VOCAB_SIZE", "300"}, {"PERCORE_BATCH_SIZE", "3"}};
}
// A grouped-query LLaMA: 4 heads over 2 kv heads of 12, F 80, T 20, V 200.
std::vector<std::pair<std::string, std::string>> odd_llama() {
  return {{"FPROP_DTYPE", "float32"}, {"ARCHITECTURE", "llama"}, {"NUM_LAYERS", "3"}, {"MODEL_DIMS", "48"}, {"HIDDEN_DIMS", "80"},
          {"NUM_HEADS", "4"},        {"NUM_KV_HEADS", "2"}, {"DIMS_PER_HEAD", "12"}, {"MAX_SEQ_LEN", "20"},
          {"VOCAB_SIZE", "200"},     {"PERCORE_BATCH_SIZE", "2"}};
}

std::vector<std::pair<std::string, std::string>> with(std::vector<std::pair<std::string, std::string>> base,
                                                      const std::vector<std::pair<std::string, std::string>>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

struct RealRunCase {
  std::string name;
  std::vector<std::pair<std::string, std::string>> overrides;
};

void PrintTo(const RealRunCase& c, std::ostream* os) { *os << c.name; }

class PlanAgainstRealRun : public ::testing::TestWithParam<RealRunCase> {};

TEST_P(PlanAgainstRealRun, StateAndActivationBytesAreExactlyWhatTheStepProgramAllocates) {
  const config::Experiment e = experiment("Default", GetParam().overrides);
  const auto selected = test_device_selection();
  const config::JobConfig job = config::resolve_job(e, config::JobFlags{}, 1, 0);
  if (static_cast<int>(selected.size()) < job.mesh.local_devices()) GTEST_SKIP() << "needs " << job.mesh.local_devices() << " devices";
  const device::Mesh mesh(job.mesh.ici, job.mesh.dcn, 1, job.mesh.local_devices());
  device::ProgramCache cache;
  const auto program = scheduler::make_step_program(selected, cache, world(), scheduler::StepOptions::of(job, mesh));

  plan::LayoutSpec spec = plan::layout_spec_of(e);
  spec.base_address_align_bytes = selected.front().base_address_align_bytes;
  spec.flash_attention = [info = selected.front()](std::size_t hs) { return kernels::fused_attention(info, hs); };
  spec.ssm_fft = [info = selected.front()](const std::string& convolution, std::size_t T) {
    return kernels::ssm_fft_requested(convolution, info, T);
  };
  const plan::DeviceMemory memory = plan::device_memory(spec);
  EXPECT_EQ(memory.state(), program->state_bytes_per_device());
  EXPECT_EQ(memory.activations, program->activation_bytes_per_device());
  EXPECT_EQ(memory.microbatches_in_flight, program->microbatches_held());
  if (job.mesh.along(device::MeshAxis::kTensor) == 1) {
    EXPECT_EQ(memory.activations_without_sp, memory.activations_with_sp);  // tensor 1: nothing to split
  }
  if (job.mesh.along(device::MeshAxis::kStage) == 1) {  // a pipeline's device 0 is one stage, the plan the largest
    EXPECT_EQ(memory.resident_floats, program->model().parameter_buffer().count());
    EXPECT_EQ(memory.layout_floats, program->model().layout().total());  // the device's (tensor: its parts)
  }
  std::printf("[ bytes    ] state %zu, activations %zu\n", memory.state(), memory.activations);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, PlanAgainstRealRun,
    ::testing::Values(
        RealRunCase{"GptOneDeviceF32", odd_gpt()},
        RealRunCase{"GptDataParallelBf16", with(odd_gpt(), {{"ICI_MESH_SHAPE", "[2,1,1]"}, {"FPROP_DTYPE", "bfloat16"}})},
        RealRunCase{"GptFsdpF32", with(odd_gpt(), {{"ICI_MESH_SHAPE", "[1,2,1]"}})},
        RealRunCase{"GptFsdpF16NoOverlap", with(odd_gpt(), {{"ICI_MESH_SHAPE", "[1,2,1]"}, {"FPROP_DTYPE", "float16"},
                                                            {"OVERLAP_COMMUNICATION", "false"}})},
        // T = 300 > 256: float32 attention runs in query blocks of 256, 16-bit in one block of T.
        RealRunCase{"GptLongSequenceF32", with(odd_gpt(), {{"NUM_LAYERS", "1"}, {"MAX_SEQ_LEN", "300"}, {"PERCORE_BATCH_SIZE", "1"}})},
        RealRunCase{"GptLongSequenceBf16", with(odd_gpt(), {{"NUM_LAYERS", "1"}, {"MAX_SEQ_LEN", "300"},
                                                            {"PERCORE_BATCH_SIZE", "1"}, {"FPROP_DTYPE", "bfloat16"}})},
        RealRunCase{"LlamaOneRowF32", with(odd_llama(), {{"PERCORE_BATCH_SIZE", "1"}, {"MAX_SEQ_LEN", "1"}})},
        RealRunCase{"LlamaDataParallelBf16", with(odd_llama(), {{"ICI_MESH_SHAPE", "[2,1,1]"}, {"FPROP_DTYPE", "bfloat16"}})},
        RealRunCase{"LlamaFsdpF16Prefetch2", with(odd_llama(), {{"ICI_MESH_SHAPE", "[1,2,1]"}, {"FPROP_DTYPE", "float16"},
                                                                {"FSDP_PREFETCH_DEPTH", "2"}})},
        RealRunCase{"LlamaFsdpF32Prefetch0", with(odd_llama(), {{"ICI_MESH_SHAPE", "[1,2,1]"}, {"FSDP_PREFETCH_DEPTH", "0"}})},
        // Tensor parallelism: device 0 is tensor rank 0 (the rank holding the row-parallel biases).
        RealRunCase{"GptTensor2F32", with(odd_gpt(), {{"ICI_MESH_SHAPE", "[1,1,2]"}})},
        RealRunCase{"GptTensor2Bf16", with(odd_gpt(), {{"ICI_MESH_SHAPE", "[1,1,2]"}, {"FPROP_DTYPE", "bfloat16"}})},
        RealRunCase{"LlamaTensor2KvSplit", with(odd_llama(), {{"ICI_MESH_SHAPE", "[1,1,2]"}})},
        RealRunCase{"LlamaTensor2KvReplicated", with(odd_llama(), {{"ICI_MESH_SHAPE", "[1,1,2]"}, {"NUM_KV_HEADS", "1"}})},
        // Sequence parallelism: the stream's buffers on N / t rows, and its workspaces.
        RealRunCase{"GptTensor2SequenceParallelF32", with(odd_gpt(), {{"ICI_MESH_SHAPE", "[1,1,2]"},
                                                                      {"SEQUENCE_PARALLEL", "true"}})},
        RealRunCase{"GptTensor2SequenceParallelBf16", with(odd_gpt(), {{"ICI_MESH_SHAPE", "[1,1,2]"},
                                                                       {"SEQUENCE_PARALLEL", "true"},
                                                                       {"FPROP_DTYPE", "bfloat16"}})},
        // SSM blocks (BLOCK_KINDS): a hybrid's units of two sizes in FSDP's slots, the SSM replicated over the tensor axis.
        RealRunCase{"HybridOneDeviceF32", with(odd_gpt(), {{"BLOCK_KINDS", "attention,ssm"}, {"SSM_NHEADS", "6"}})},
        RealRunCase{"HybridFsdpBf16", with(odd_gpt(), {{"BLOCK_KINDS", "ssm,attention"}, {"NUM_LAYERS", "4"},
                                                       {"ICI_MESH_SHAPE", "[1,2,1]"}, {"FPROP_DTYPE", "bfloat16"}})},
        RealRunCase{"SsmTensor2SequenceParallelF32", with(odd_gpt(), {{"BLOCK_KINDS", "ssm"}, {"ICI_MESH_SHAPE", "[1,1,2]"},
                                                                      {"SEQUENCE_PARALLEL", "true"}})},
        RealRunCase{"LlamaTensor2SequenceParallelKvReplicatedF16",
                    with(odd_llama(), {{"ICI_MESH_SHAPE", "[1,1,2]"}, {"NUM_KV_HEADS", "1"}, {"SEQUENCE_PARALLEL", "true"},
                                       {"FPROP_DTYPE", "float16"}})},
        // Rematerialization (CHECKPOINT_POLICY): the sites a policy does not keep, shared by the blocks.
        RealRunCase{"GptSaveNothingF32", with(odd_gpt(), {{"CHECKPOINT_POLICY", "SAVE_NOTHING"}})},
        RealRunCase{"GptDataParallelDotsNoBatchBf16", with(odd_gpt(), {{"ICI_MESH_SHAPE", "[2,1,1]"}, {"FPROP_DTYPE", "bfloat16"},
                                                                       {"CHECKPOINT_POLICY", "SAVE_DOT_WITH_NO_BATCH_DIM"}})},
        RealRunCase{"GptFsdpDotOnlyF32", with(odd_gpt(), {{"ICI_MESH_SHAPE", "[1,2,1]"}, {"CHECKPOINT_POLICY", "SAVE_DOT_ONLY"}})},
        RealRunCase{"GptTensor2ContextF32", with(odd_gpt(), {{"ICI_MESH_SHAPE", "[1,1,2]"}, {"CHECKPOINT_POLICY", "SAVE_CONTEXT"}})},
        RealRunCase{"GptTensor2SequenceParallelQkvOutProjBf16",
                    with(odd_gpt(), {{"ICI_MESH_SHAPE", "[1,1,2]"}, {"SEQUENCE_PARALLEL", "true"}, {"FPROP_DTYPE", "bfloat16"},
                                     {"CHECKPOINT_POLICY", "SAVE_QKV_OUT_PROJ"}})},
        RealRunCase{"GptLongSequenceContextAndOutProjBf16",
                    with(odd_gpt(), {{"NUM_LAYERS", "3"}, {"MAX_SEQ_LEN", "300"}, {"PERCORE_BATCH_SIZE", "1"},
                                     {"FPROP_DTYPE", "bfloat16"}, {"CHECKPOINT_POLICY", "SAVE_CONTEXT_AND_OUT_PROJ"}})},
        RealRunCase{"LlamaSaveNothingF32", with(odd_llama(), {{"CHECKPOINT_POLICY", "SAVE_NOTHING"}})},
        RealRunCase{"LlamaFsdpExceptLogitsFfn1F16", with(odd_llama(), {{"ICI_MESH_SHAPE", "[1,2,1]"}, {"FPROP_DTYPE", "float16"},
                                                                       {"CHECKPOINT_POLICY", "SAVE_DOT_EXCEPT_LOGITS_FFN1"}})},
        RealRunCase{"LlamaTensor2SequenceParallelOutProjF32",
                    with(odd_llama(), {{"ICI_MESH_SHAPE", "[1,1,2]"}, {"NUM_KV_HEADS", "1"}, {"SEQUENCE_PARALLEL", "true"},
                                       {"CHECKPOINT_POLICY", "SAVE_OUT_PROJ"}})},
        RealRunCase{"HybridFsdpSaveNothingBf16", with(odd_gpt(), {{"BLOCK_KINDS", "ssm,attention"}, {"NUM_LAYERS", "4"},
                                                                  {"ICI_MESH_SHAPE", "[1,2,1]"}, {"FPROP_DTYPE", "bfloat16"},
                                                                  {"CHECKPOINT_POLICY", "SAVE_NOTHING"}})},
        // Gradient accumulation (NUM_SUB_BATCHES): one sub-batch's activations; FSDP sums the shards.
        RealRunCase{"GptFsdpThreeSubBatchesF32", with(odd_gpt(), {{"ICI_MESH_SHAPE", "[1,2,1]"}, {"NUM_SUB_BATCHES", "3"}})},
        RealRunCase{"LlamaDataParallelTwoSubBatchesSaveNothingBf16",
                    with(odd_llama(), {{"ICI_MESH_SHAPE", "[2,1,1]"}, {"FPROP_DTYPE", "bfloat16"}, {"NUM_SUB_BATCHES", "2"},
                                       {"CHECKPOINT_POLICY", "SAVE_NOTHING"}})},
        RealRunCase{"SsmTensor2SequenceParallelDotOnlyF32",
                    with(odd_gpt(), {{"BLOCK_KINDS", "ssm"}, {"ICI_MESH_SHAPE", "[1,1,2]"}, {"SEQUENCE_PARALLEL", "true"},
                                     {"CHECKPOINT_POLICY", "SAVE_DOT_ONLY"}})},
        // Pipeline stages: a stage's layout and layers, its input / output-gradient buffers, the
        // microbatch instances in flight (1f1b: 2 on stage 0; gpipe: all 3).
        RealRunCase{"GptTwoStages1f1bF32", with(odd_gpt(), {{"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"NUM_MICROBATCHES", "3"}})},
        // A large vocabulary: the last stage (1 instance, its LM head's logits) holds more bytes than
        // stage 0 (2 instances of one block), so the count reported is the last stage's, 1.
        RealRunCase{"GptTwoStages1f1bLastStageHoldsMostF32",
                    with(odd_gpt(), {{"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"NUM_MICROBATCHES", "3"}, {"VOCAB_SIZE", "3000"}})},
        RealRunCase{"GptTwoStagesGpipeBf16", with(odd_gpt(), {{"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"NUM_MICROBATCHES", "3"},
                                                              {"PIPELINE_SCHEDULE", "gpipe"}, {"FPROP_DTYPE", "bfloat16"}})},
        RealRunCase{"LlamaTwoStagesMicrobatchSize2F32", with(odd_llama(), {{"NUM_LAYERS", "4"}, {"ICI_MESH_SHAPE", "[2,1,1,1]"},
                                                                          {"MICROBATCH_SIZE", "2"}})},
        RealRunCase{"LlamaTwoStagesGpipeF16", with(odd_llama(), {{"NUM_LAYERS", "2"}, {"ICI_MESH_SHAPE", "[2,1,1,1]"},
                                                                {"PIPELINE_SCHEDULE", "gpipe"}, {"FPROP_DTYPE", "float16"}})},
        RealRunCase{"GptTwoStagesSaveNothingBf16", with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"ICI_MESH_SHAPE", "[2,1,1,1]"},
                                                                    {"CHECKPOINT_POLICY", "SAVE_NOTHING"},
                                                                    {"FPROP_DTYPE", "bfloat16"}})},
        RealRunCase{"LlamaTwoStagesDotOnlyF32", with(odd_llama(), {{"NUM_LAYERS", "4"}, {"ICI_MESH_SHAPE", "[2,1,1,1]"},
                                                                   {"CHECKPOINT_POLICY", "SAVE_DOT_ONLY"},
                                                                   {"NUM_MICROBATCHES", "2"}})},
        // A hybrid split so that one stage holds only attention blocks, the other only SSM blocks.
        RealRunCase{"HybridTwoStagesF32", with(odd_gpt(), {{"BLOCK_KINDS", "attention,attention,ssm,ssm"}, {"NUM_LAYERS", "4"},
                                                           {"SSM_NHEADS", "6"}, {"ICI_MESH_SHAPE", "[2,1,1,1]"}})},
        // The circular schedule: a device's CIRCULAR_REPEAT chunks (virtual stages v = c p + s), each
        // with its own layout, Adam and m instances, summed per device; the ends on v = 0 and p r - 1.
        RealRunCase{"GptCircularRepeat2F32", with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"PERCORE_BATCH_SIZE", "2"},
                                                              {"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"NUM_MICROBATCHES", "4"},
                                                              {"PIPELINE_SCHEDULE", "circular"}, {"CIRCULAR_REPEAT", "2"}})},
        RealRunCase{"LlamaCircularRepeat2Bf16", with(odd_llama(), {{"NUM_LAYERS", "4"}, {"ICI_MESH_SHAPE", "[2,1,1,1]"},
                                                                   {"NUM_MICROBATCHES", "2"}, {"PIPELINE_SCHEDULE", "circular"},
                                                                   {"CIRCULAR_REPEAT", "2"}, {"FPROP_DTYPE", "bfloat16"}})},
        // Three chunks per device: the middle ones hold neither end.
        RealRunCase{"GptCircularRepeat3SaveNothingBf16",
                    with(odd_gpt(), {{"NUM_LAYERS", "6"}, {"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"NUM_MICROBATCHES", "2"},
                                     {"PIPELINE_SCHEDULE", "circular"}, {"CIRCULAR_REPEAT", "3"},
                                     {"CHECKPOINT_POLICY", "SAVE_NOTHING"}, {"FPROP_DTYPE", "bfloat16"}})},
        // Round robin over attention,ssm: device 0's chunks are attention blocks, device 1's SSM blocks.
        RealRunCase{"HybridCircularRepeat2F32", with(odd_gpt(), {{"BLOCK_KINDS", "attention,ssm"}, {"NUM_LAYERS", "4"},
                                                                 {"SSM_NHEADS", "6"}, {"ICI_MESH_SHAPE", "[2,1,1,1]"},
                                                                 {"NUM_MICROBATCHES", "2"}, {"PIPELINE_SCHEDULE", "circular"},
                                                                 {"CIRCULAR_REPEAT", "2"}})},
        // Tensor parallelism inside the stages (4 devices: the Plan.FourDevices test runs them):
        // tensor rank 0's parts of each stage's tensors, with and without sequence parallelism.
        RealRunCase{"GptTwoStagesTensor2F32FourDevices",
                    with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"ICI_MESH_SHAPE", "[2,1,1,2]"}, {"NUM_MICROBATCHES", "2"}})},
        RealRunCase{"LlamaTwoStagesTensor2SequenceParallelBf16FourDevices",
                    with(odd_llama(), {{"NUM_LAYERS", "4"}, {"ICI_MESH_SHAPE", "[2,1,1,2]"}, {"NUM_MICROBATCHES", "2"},
                                       {"SEQUENCE_PARALLEL", "true"}, {"FPROP_DTYPE", "bfloat16"}})},
        // FSDP inside the stages (4 devices): each chunk's parameters and gradients whole, Adam's
        // moments over the device's shard of the chunk's flat buffer (shard 0, the largest: the
        // layouts' sizes are not multiples of 2 alignment blocks); the rows split as for data.
        RealRunCase{"GptTwoStagesFsdp2F32FourDevices",
                    with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"ICI_MESH_SHAPE", "[2,1,2,1]"}, {"NUM_MICROBATCHES", "3"}})},
        RealRunCase{"LlamaTwoStagesFsdp2GpipeBf16FourDevices",
                    with(odd_llama(), {{"NUM_LAYERS", "2"}, {"ICI_MESH_SHAPE", "[2,1,2,1]"}, {"PIPELINE_SCHEDULE", "gpipe"},
                                       {"FPROP_DTYPE", "bfloat16"}})},
        RealRunCase{"GptCircularRepeat2Fsdp2Bf16FourDevices",
                    with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"PERCORE_BATCH_SIZE", "2"}, {"ICI_MESH_SHAPE", "[2,1,2,1]"},
                                     {"NUM_MICROBATCHES", "2"}, {"PIPELINE_SCHEDULE", "circular"},
                                     {"CIRCULAR_REPEAT", "2"}, {"FPROP_DTYPE", "bfloat16"}})}),
    [](const ::testing::TestParamInfo<RealRunCase>& c) { return c.param.name; });

plan::LayoutSpec spec_of(const std::vector<std::pair<std::string, std::string>>& overrides, const std::string& base = "Default") {
  return plan::layout_spec_of(experiment(base, overrides));
}

TEST(Plan, FlopsAreTheModelsFlopsPerTokenTimesTheGlobalBatchsTokens) {
  const plan::LayoutSpec spec = spec_of(with(odd_gpt(), {{"ICI_MESH_SHAPE", "[2,1,1]"}, {"DCN_MESH_SHAPE", "[1,3,1]"}}));
  const plan::Plan p = plan::make_plan(spec, plan::known_accelerator("A100"));
  const double tokens = 3.0 * 6 * 24;  // PERCORE 3 x 6 devices x T
  EXPECT_EQ(spec.global_batch, 18);
  EXPECT_DOUBLE_EQ(p.tokens_per_step, tokens);
  EXPECT_DOUBLE_EQ(p.flops_per_device * 6, spec.model.flops_per_token(24) * tokens);
  // The compute time is those FLOPs at the datasheet peak (FPROP_DTYPE float32: FP32) x the assumed MFU.
  EXPECT_NEAR(p.time.compute_s, p.flops_per_device / (19.5e12 * 0.5), 1e-15);
}

// The bytes one device sends, hierarchical ring: ICI (n_i - 1)/n_i S (x2 for all-reduce), DCN
// (n_d - 1)/n_d S / n_i (x2).
TEST(Plan, DataParallelGradientAllReduceBytesByHand) {
  const plan::LayoutSpec spec = spec_of(with(odd_gpt(), {{"ICI_MESH_SHAPE", "[2,1,1]"}, {"DCN_MESH_SHAPE", "[2,1,1]"}}));
  const models::ParameterLayout layout = plan::device_layout(spec);
  const std::vector<plan::Collective> c = plan::step_collectives(spec, layout);
  ASSERT_EQ(c.size(), 2u);
  const double block = 4.0 * layout.unit(0).size, rest = 4.0 * layout.unit(-1).size;
  EXPECT_EQ(c[0].operations, 2);  // one per block, hidden behind the backward
  EXPECT_EQ(c[0].exposed, 0);
  EXPECT_DOUBLE_EQ(c[0].ici_bytes, 2 * 0.5 * block);
  EXPECT_DOUBLE_EQ(c[0].dcn_bytes, 2 * 0.5 * block / 2);
  EXPECT_EQ(c[1].operations, 1);  // embeddings and the final norm, after the backward
  EXPECT_EQ(c[1].exposed, 1);
  EXPECT_DOUBLE_EQ(c[1].ici_bytes, rest);
  EXPECT_DOUBLE_EQ(c[1].dcn_bytes, rest / 2);
}

TEST(Plan, FsdpGathersReduceScattersAndTheDataAllReduceByHand) {
  // fsdp 2 (ICI) x 2 (DCN) = 4, data 2 over DCN; 3 blocks, prefetch 1: 2 slots, so the backward
  // gathers 3 - 2 blocks again.
  const plan::LayoutSpec spec = spec_of(with(odd_llama(), {{"ICI_MESH_SHAPE", "[1,2,1]"}, {"DCN_MESH_SHAPE", "[2,2,1]"}}));
  const models::ParameterLayout layout = plan::device_layout(spec);
  const double U = 4.0 * layout.unit(0).size, R = 4.0 * layout.unit(-1).size;
  std::map<std::string, plan::Collective> by_name;
  for (const plan::Collective& c : plan::step_collectives(spec, layout)) by_name[c.name] = c;
  ASSERT_EQ(by_name.size(), 7u);
  const plan::Collective& forward = by_name.at("FSDP all-gather, blocks (forward)");
  EXPECT_EQ(forward.operations, 3);
  EXPECT_EQ(forward.exposed, 1);  // the first; the others are prefetched
  EXPECT_DOUBLE_EQ(forward.ici_bytes, 0.5 * U);
  EXPECT_DOUBLE_EQ(forward.dcn_bytes, 0.5 * U / 2);
  EXPECT_EQ(by_name.at("FSDP all-gather, blocks (backward)").operations, 1);
  EXPECT_DOUBLE_EQ(by_name.at("FSDP all-gather, unit outside the blocks").ici_bytes, 0.5 * R);
  const plan::Collective& rs = by_name.at("FSDP reduce-scatter, blocks");
  EXPECT_EQ(rs.operations, 3);
  EXPECT_DOUBLE_EQ(rs.dcn_bytes, 0.5 * U / 2);
  // The gradient shard (U / 4) is averaged over the 2 data replicas, which are processes.
  const plan::Collective& data = by_name.at("DP all-reduce of FSDP gradient shards, blocks");
  EXPECT_DOUBLE_EQ(data.ici_bytes, 0.0);
  EXPECT_DOUBLE_EQ(data.dcn_bytes, 2 * 0.5 * U / 4);
}

TEST(Plan, WithoutOverlapEveryCollectiveIsExposed) {
  const plan::LayoutSpec spec =
      spec_of(with(odd_gpt(), {{"ICI_MESH_SHAPE", "[1,2,1]"}, {"OVERLAP_COMMUNICATION", "false"}}));
  for (const plan::Collective& c : plan::step_collectives(spec, plan::device_layout(spec))) {
    EXPECT_EQ(c.exposed, c.operations) << c.name;
  }
}

// One tensor rank's parameters, written out: GPT L=2 C=64 NH=4 hs=16 H=96 T=10 V=500 (Vp=512), t=2.
TEST(Plan, TensorRankParametersOfGptByHand) {
  const plan::LayoutSpec spec = spec_of({{"NUM_LAYERS", "2"}, {"MODEL_DIMS", "64"}, {"HIDDEN_DIMS", "96"},
                                         {"NUM_HEADS", "4"}, {"DIMS_PER_HEAD", "16"}, {"MAX_SEQ_LEN", "10"},
                                         {"VOCAB_SIZE", "500"}, {"ICI_MESH_SHAPE", "[1,1,2]"}, {"PERCORE_BATCH_SIZE", "0.5"}});
  const std::int64_t C = 64, D = 64, H = 96, Vp = 512, T = 10, t = 2;
  const std::int64_t per_block = 3 * D / t * C + 3 * D / t  // qkv rows of 2 heads, and their bias
                                 + C * (D / t) + C          // attention output columns; its bias on rank 0
                                 + H / t * C + H / t        // fc rows
                                 + C * (H / t) + C          // mlp output columns; its bias on rank 0
                                 + 4 * C;                   // ln1, ln2
  const std::int64_t want = Vp / t * C + T * C + 2 * per_block + 2 * C;  // wte rows, wpe (rank 0), lnf
  EXPECT_EQ(plan::device_layout(spec).parameter_count(), want);
  // Data parallel over tensor groups: 4 x the layout (parameters, gradients, m, v).
  const plan::DeviceMemory m = plan::device_memory(spec);
  EXPECT_EQ(m.state(), 16 * plan::device_layout(spec).total());
  EXPECT_EQ(spec.group_sequences(), 1);  // PERCORE 0.5 x 2 devices: one sequence for the pair
}

// LLaMA's kv heads: split when t divides NUM_KV_HEADS, one per device (replicated) when
// NUM_KV_HEADS divides t, refused otherwise.
TEST(Plan, TensorSplitOfGroupedQueryAttention) {
  const models::ModelConfig llama = spec_of(with(odd_llama(), {{"NUM_HEADS", "8"}, {"NUM_KV_HEADS", "2"}, {"HIDDEN_DIMS", "96"},
                                                               {"VOCAB_SIZE", "256"}})).model;
  const plan::TensorShard two = plan::tensor_shard(llama, 2);
  EXPECT_EQ(two.heads, 4);
  EXPECT_EQ(two.kv_heads, 1);
  EXPECT_EQ(two.qkv_rows, (4 + 2 * 1) * 12);
  const plan::TensorShard eight = plan::tensor_shard(llama, 8);
  EXPECT_EQ(eight.heads, 1);
  EXPECT_EQ(eight.kv_heads, 1);  // 2 kv heads, each on 4 devices
  EXPECT_EQ(eight.hidden, 12);
  EXPECT_EQ(eight.padded_vocab, 32);
  std::map<std::string, std::vector<std::int64_t>> shapes;
  for (const models::TensorDef& d : plan::tensor_rank_defs(llama, 8)) shapes[d.name] = d.shape;
  using Shape = std::vector<std::int64_t>;
  EXPECT_EQ(shapes.at("h0.attn.qkv.w"), (Shape{(1 + 2) * 12, 48}));  // 1 query head, its kv head's k and v
  EXPECT_EQ(shapes.at("h2.mlp.gate_up.w"), (Shape{2 * 12, 48}));
  EXPECT_EQ(shapes.at("h0.mlp.down.w"), (Shape{48, 12}));
  EXPECT_EQ(shapes.at("h1.attn.proj.w"), (Shape{48, 12}));
  EXPECT_EQ(shapes.at("embed"), (Shape{32, 48}));
  EXPECT_EQ(shapes.at("lm_head"), (Shape{32, 48}));
  EXPECT_EQ(shapes.at("norm.scale"), (Shape{48}));
  EXPECT_EQ(shapes.at("h0.attn_norm.scale"), (Shape{48}));
  EXPECT_EQ(plan::tensor_sizes(llama, 8), (std::vector<int>{1, 2, 4, 8}));
  const std::string three = plan::tensor_split_error(llama, 3).value_or("");
  EXPECT_NE(three.find("NUM_HEADS=8"), std::string::npos) << three;
  const models::ModelConfig six_heads =
      spec_of(with(odd_llama(), {{"NUM_HEADS", "12"}, {"NUM_KV_HEADS", "4"}, {"HIDDEN_DIMS", "96"}, {"VOCAB_SIZE", "384"}})).model;
  const std::string kv = plan::tensor_split_error(six_heads, 6).value_or("");  // 6 and 4: neither divides the other
  EXPECT_NE(kv.find("NUM_KV_HEADS=4"), std::string::npos) << kv;
  EXPECT_EQ(count_lines(kv), 0);
}

// The attention score workspace's passes (models/attention_workspace.h), worked by hand: per head
// and sequence 2 x Q x T floats (scores and their gradient) within the bound.
TEST(Plan, AttentionWorkspacePassesByHand) {
  using device::DType;
  constexpr std::size_t MiB = 1u << 20;
  // GPT-2 124M at T 1024, B 8: 2 MiB a head, all 12 heads in one chunk, 2 sequences in 64 MiB.
  models::AttentionWorkspace w = models::attention_workspace(DType::kF32, 12, 1, 1024, 8, 64 * MiB);
  EXPECT_EQ(w.query_block, 256u);
  EXPECT_EQ(w.chunk, 12u);
  EXPECT_EQ(w.sequences, 2u);
  EXPECT_EQ(w.floats(), 2u * 12 * 256);
  // T 2048: 4 MiB a head, 48 MiB a sequence: one sequence per pass.
  EXPECT_EQ(models::attention_workspace(DType::kF32, 12, 1, 2048, 8, 64 * MiB).sequences, 1u);
  // Config A (T 128, 4 heads, B 8): every sequence in one pass; never more than the batch.
  w = models::attention_workspace(DType::kF32, 4, 1, 128, 8, 64 * MiB);
  EXPECT_EQ(w.chunk, 4u);
  EXPECT_EQ(w.sequences, 8u);
  // A bound that holds 3 of 4 heads: chunks of 3, one sequence at a time.
  w = models::attention_workspace(DType::kF32, 4, 1, 128, 8, 3 * 2 * 128 * 128 * 4);
  EXPECT_EQ(w.chunk, 3u);
  EXPECT_EQ(w.sequences, 1u);
  // 16-bit: one block of T queries; grouped-query heads keep one sequence (dk, dv summed per
  // sequence in float32), multi-head ones do not.
  w = models::attention_workspace(DType::kBF16, 2, 4, 256, 8, 64 * MiB);
  EXPECT_EQ(w.query_block, 256u);
  EXPECT_EQ(w.sequences, 1u);
  EXPECT_EQ(models::attention_workspace(DType::kBF16, 8, 1, 256, 8, 64 * MiB).sequences, 8u);
}

// One tensor rank's activations, written out from the layers for GPT with t = 2 (a = 4 bytes):
// the C-wide buffers stay (N, C), the split ones narrow, sequence parallelism divides the norms'
// and residuals' rows by t and adds its workspaces.
TEST(Plan, TensorRankActivationsOfGptByHand) {
  const auto overrides = std::vector<std::pair<std::string, std::string>>{
      {"NUM_LAYERS", "3"}, {"MODEL_DIMS", "32"},  {"HIDDEN_DIMS", "64"},  {"NUM_HEADS", "4"},  {"DIMS_PER_HEAD", "8"},
      {"MAX_SEQ_LEN", "6"}, {"VOCAB_SIZE", "256"}, {"ICI_MESH_SHAPE", "[1,1,2]"}, {"PERCORE_BATCH_SIZE", "1.5"}};
  const std::size_t L = 3, C = 32, H = 64 / 2, h = 2, hs = 8, D = h * hs, T = 6, B = 3, N = B * T, Vp = 128, t = 2;
  // A block's buffers by site (models/checkpoint_policy.h); `per_block`: the sites each block keeps,
  // the others and every transient buffer once for all blocks.
  enum Site { kNorm1, kQkv, kContext, kOutProj, kNorm2, kFfn1, kFfn2, kSites };
  auto activations = [&](std::size_t outside, std::array<bool, kSites> per_block) {  // outside: the norms' rows
    const std::size_t norm = outside * C * 4 + 2 * outside * 4;  // y; mean, rstd
    std::array<std::size_t, kSites> site{};
    site[kNorm1] = norm;
    site[kQkv] = N * 3 * D * 4;                 // z
    site[kContext] = (B * h * T) * 4 + N * D * 4;  // lse; out
    site[kOutProj] = N * C * 4;                 // z
    site[kNorm2] = norm + outside * C * 4;      // and x2
    site[kFfn1] = 2 * N * H * 4;                // z, gelu
    site[kFfn2] = N * C * 4;                    // z
    const std::size_t transient = 2 * outside * C * 4               // ln1, ln2 dx
                                  + N * C * 4                       // qkv dx
                                  + (B * h * T) * 4 + 2 * (B * h * T * T) * 4 + N * 3 * D * 4  // delta; scores, dscores (B sequences, chunk h, Q = T); dqkv
                                  + N * D * 4                       // proj dx
                                  + N * H * 4 + N * C * 4           // fc dz, dx
                                  + N * H * 4;                      // fcproj dx
    std::size_t blocks = L * outside * C * 4 + transient;  // every block's output y
    for (int s = 0; s < kSites; ++s) blocks += (per_block[s] ? L : 1) * site[s];
    // zero row (C wide on tensor rank 1, which has no position table), ids/tokens/positions/starts, x
    const std::size_t embedding = C * 4 + 4 * (4 * N + 1) + N * C * 4;
    const std::size_t head = N * Vp * 4 + 3 * N * 4 + N * C * 4 + N * 4 + t * N * 3 * 4;  // logits; losses.. ; dy; targets; row stats
    return embedding + blocks + norm + outside * C * 4 + head;  // lnf with its dx
  };
  const struct {
    const char* policy;
    std::array<bool, kSites> per_block;
  } cases[] = {
      {"SAVE_EVERYTHING", {true, true, true, true, true, true, true}},
      {"SAVE_NOTHING", {}},
      {"SAVE_DOT_WITH_NO_BATCH_DIM", {false, true, false, true, false, true, false}},
      {"SAVE_DOT_ONLY", {false, true, true, true, false, true, false}},
      {"SAVE_QKV_OUT_PROJ", {false, true, false, true, false, false, false}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.policy);
    auto with_policy = overrides;
    with_policy.emplace_back("CHECKPOINT_POLICY", c.policy);
    const plan::DeviceMemory m = plan::device_memory(spec_of(with_policy));
    EXPECT_EQ(m.activations_without_sp, activations(N, c.per_block));
    // gathered input and gradient (N, C), first block's input and delta (N/t, C), 4 C packed norm
    // gradients and 4 C of earlier passes' set aside; out_proj is never kept under sequence
    // parallelism (its buffer is the reduce-scatter's)
    auto sp_blocks = c.per_block;
    if (std::string(c.policy) != "SAVE_EVERYTHING") sp_blocks[kOutProj] = false;
    const std::size_t workspaces = 2 * N * C * 4 + 2 * (N / t) * C * 4 + 2 * 4 * C * 4;
    EXPECT_EQ(m.activations_with_sp, activations(N / t, sp_blocks) + workspaces);
    EXPECT_EQ(m.activations, m.activations_without_sp);  // SEQUENCE_PARALLEL is not on
  }
}

TEST(Plan, SequenceParallelCollectivesByHand) {
  // t = 2 in a process; float32; 3 blocks; 2 sequences of 6 per group; GPT (LayerNorm: scale and bias).
  const plan::LayoutSpec spec = spec_of({{"NUM_LAYERS", "3"}, {"MODEL_DIMS", "32"}, {"HIDDEN_DIMS", "64"},
                                         {"NUM_HEADS", "4"}, {"DIMS_PER_HEAD", "8"}, {"MAX_SEQ_LEN", "6"},
                                         {"VOCAB_SIZE", "256"}, {"ICI_MESH_SHAPE", "[1,1,2]"},
                                         {"PERCORE_BATCH_SIZE", "1"}, {"SEQUENCE_PARALLEL", "true"}});
  const double S = 2.0 * 6 * 32 * 4;  // (N, C) float32
  const std::vector<plan::Collective> c = plan::step_collectives(spec, plan::device_layout(spec));
  ASSERT_EQ(c.size(), 7u);
  const struct {
    plan::CollectiveKind kind;
    double bytes;
    long operations;
  } want[] = {
      {plan::CollectiveKind::kReduceScatter, S, 2 * 3 + 1},  // attention's and the MLP's outputs; the embedding's
      {plan::CollectiveKind::kAllGather, S, 2 * 3 + 1},      // the norms' outputs; the final norm's
      {plan::CollectiveKind::kReduceScatter, S, 2 * 3 + 1},  // the column-parallel input gradients; the head's
      {plan::CollectiveKind::kAllGather, S, 4 * 3 + 1},      // gradients at both outputs, norms' outputs again; embedding's
      {plan::CollectiveKind::kAllReduce, 4.0 * 32 * 4, 3},   // ln1 and ln2 scale and bias gradients
      {plan::CollectiveKind::kAllReduce, 2.0 * 32 * 4, 1},   // lnf's
  };
  for (std::size_t i = 0; i < 6; ++i) {
    SCOPED_TRACE(c[i].name);
    EXPECT_EQ(c[i].kind, want[i].kind);
    EXPECT_DOUBLE_EQ(c[i].bytes, want[i].bytes);
    EXPECT_EQ(c[i].operations, want[i].operations);
    const double passes = want[i].kind == plan::CollectiveKind::kAllReduce ? 2.0 : 1.0;
    EXPECT_DOUBLE_EQ(c[i].ici_bytes, passes * 0.5 * want[i].bytes);
  }
}

// Rematerialization under tensor parallelism: every recomputed block (2 of 3) runs its forward's
// collectives again where the recompute needs them (models/layers/transformer_block.h).
TEST(Plan, RecomputeCollectivesByHand) {
  const double S = 2.0 * 6 * 32 * 4;  // (N, C) float32
  auto counts = [&](const std::string& policy, bool sp) {
    std::vector<std::pair<std::string, std::string>> o = {
        {"NUM_LAYERS", "3"}, {"MODEL_DIMS", "32"}, {"HIDDEN_DIMS", "64"}, {"NUM_HEADS", "4"}, {"DIMS_PER_HEAD", "8"},
        {"MAX_SEQ_LEN", "6"}, {"VOCAB_SIZE", "256"}, {"ICI_MESH_SHAPE", "[1,1,2]"}, {"PERCORE_BATCH_SIZE", "1"},
        {"SEQUENCE_PARALLEL", sp ? "true" : "false"}, {"CHECKPOINT_POLICY", policy}};
    const plan::LayoutSpec spec = spec_of(o);
    std::map<std::string, long> n;
    for (const plan::Collective& c : plan::step_collectives(spec, plan::device_layout(spec))) {
      if (c.name.find("recomputed") == std::string::npos) continue;
      EXPECT_DOUBLE_EQ(c.bytes, S) << c.name;
      n[c.name] = c.operations;
    }
    return n;
  };
  using Counts = std::map<std::string, long>;
  EXPECT_EQ(counts("SAVE_EVERYTHING", false), Counts{});
  EXPECT_EQ(counts("SAVE_NOTHING", false), (Counts{{"TP all-reduce, recomputed attention outputs", 2}}));
  EXPECT_EQ(counts("SAVE_QKV_OUT_PROJ", false), Counts{});  // out_proj kept: the residual sum needs no sum
  EXPECT_EQ(counts("SAVE_NOTHING", true), (Counts{{"TP all-gather, recomputed norm outputs", 4},
                                                  {"TP reduce-scatter, recomputed attention outputs", 2}}));
  // qkv_proj kept: only the MLP's input is gathered again; out_proj is recomputed under SP
  EXPECT_EQ(counts("SAVE_QKV_OUT_PROJ", true), (Counts{{"TP all-gather, recomputed norm outputs", 2},
                                                       {"TP reduce-scatter, recomputed attention outputs", 2}}));
}

// ... and inside pipeline stages, where each stage's last block is not recomputed either
// (models::recomputes_block): 4 blocks over 2 stages recompute 2, on each microbatch's pass.
TEST(Plan, RecomputeCollectivesInsideStagesSkipEachStagesLastBlock) {
  const plan::LayoutSpec spec =
      spec_of({{"NUM_LAYERS", "4"}, {"MODEL_DIMS", "32"}, {"HIDDEN_DIMS", "64"}, {"NUM_HEADS", "4"},
               {"DIMS_PER_HEAD", "8"}, {"MAX_SEQ_LEN", "6"}, {"VOCAB_SIZE", "256"}, {"ICI_MESH_SHAPE", "[2,1,1,2]"},
               {"PERCORE_BATCH_SIZE", "1"}, {"CHECKPOINT_POLICY", "SAVE_NOTHING"}});
  const long microbatches = spec.microbatches();
  ASSERT_GT(microbatches, 1);
  long recomputed = -1;
  for (const plan::Collective& c : plan::step_collectives(spec, plan::device_layout(spec))) {
    if (c.name == "TP all-reduce, recomputed attention outputs") recomputed = c.operations;
  }
  EXPECT_EQ(recomputed, 2 * microbatches);
}

TEST(Plan, TensorCollectivesByHand) {
  // t = 4: 2 devices of a process x 2 processes; bfloat16 activations; 3 blocks; 1 sequence per group.
  const plan::LayoutSpec spec = spec_of({{"NUM_LAYERS", "3"}, {"MODEL_DIMS", "32"}, {"HIDDEN_DIMS", "64"},
                                         {"NUM_HEADS", "4"}, {"DIMS_PER_HEAD", "8"}, {"MAX_SEQ_LEN", "6"},
                                         {"VOCAB_SIZE", "256"}, {"ICI_MESH_SHAPE", "[1,1,2]"}, {"DCN_MESH_SHAPE", "[1,1,2]"},
                                         {"PERCORE_BATCH_SIZE", "0.25"}, {"FPROP_DTYPE", "bfloat16"}});
  const double S = 6.0 * 32 * 2;  // (N, C) bfloat16
  const std::vector<plan::Collective> c = plan::step_collectives(spec, plan::device_layout(spec));
  ASSERT_EQ(c.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(c[static_cast<std::size_t>(i)].operations, 2 * 3 + 1);
    EXPECT_EQ(c[static_cast<std::size_t>(i)].exposed, 2 * 3 + 1);
    EXPECT_DOUBLE_EQ(c[static_cast<std::size_t>(i)].ici_bytes, 2 * 0.5 * S);
    EXPECT_DOUBLE_EQ(c[static_cast<std::size_t>(i)].dcn_bytes, 2 * 0.5 * S / 2);
  }
  EXPECT_DOUBLE_EQ(c[2].bytes, 4.0 * 6 * 3 * 4);  // (t, N, 3) floats
}

TEST(Plan, LayoutErrorsAreOneLineNamingTheNumbers) {
  const std::string heads = error_message<ConfigError>([] { spec_of(with(odd_gpt(), {{"ICI_MESH_SHAPE", "[1,1,3]"}})); });
  EXPECT_NE(heads.find("NUM_HEADS=2"), std::string::npos) << heads;
  EXPECT_NE(heads.find("tensor axis 3"), std::string::npos) << heads;
  const std::string batch = error_message<ConfigError>([] {
    spec_of(with(odd_gpt(), {{"ICI_MESH_SHAPE", "[2,1,1]"}, {"PERCORE_BATCH_SIZE", "0.5"}, {"DCN_MESH_SHAPE", "[3,1,1]"}}));
  });
  EXPECT_NE(batch.find("global batch of 3"), std::string::npos) << batch;
  const std::string accelerator = error_message<ConfigError>([] { plan::known_accelerator("Z80"); });
  EXPECT_NE(accelerator.find("NVIDIA H100 SXM5"), std::string::npos) << accelerator;
  for (const std::string& e : {heads, batch, accelerator}) EXPECT_EQ(count_lines(e), 0) << e;
}

// Nothing with fewer devices fits, and the layout found does: checked over every candidate.
TEST(Plan, SmallestFittingLayoutHasTheFewestDevices) {
  plan::LayoutSpec spec = spec_of(with(odd_llama(), {{"NUM_HEADS", "8"}, {"NUM_KV_HEADS", "2"}, {"DIMS_PER_HEAD", "6"},
                                                     {"VOCAB_SIZE", "256"}, {"PERCORE_BATCH_SIZE", "12"}, {"MAX_SEQ_LEN", "64"}}));
  const plan::DeviceMemory one = plan::device_memory(spec);
  const plan::MemoryLimits limits{static_cast<double>(one.total()) / 7, 0};
  const std::optional<plan::LayoutSpec> found = plan::smallest_fitting_layout(spec, limits);
  ASSERT_TRUE(found.has_value());
  EXPECT_FALSE(plan::misfit(plan::device_memory(*found), limits).has_value());
  EXPECT_EQ(found->global_batch, spec.global_batch);
  for (const int t : plan::tensor_sizes(spec.model, 64)) {
    for (long f = 1; f <= spec.global_batch; ++f) {
      if (spec.global_batch % f != 0 || f * t >= found->devices()) continue;
      for (const bool sp : {false, true}) {
        plan::LayoutSpec c = spec;
        c.sequence_parallel = sp;
        plan::assign_mesh(c, static_cast<int>(f), t, 1);
        EXPECT_TRUE(plan::misfit(plan::device_memory(c), limits).has_value()) << c.describe() << " fits too";
      }
    }
  }
  // Pipelines too, with FSDP inside the stages: every one the job accepts.
  for (int p = 2; p <= spec.model.num_blocks(); ++p) {
    if (spec.model.num_blocks() % p != 0) continue;
    for (long f = 1; f <= spec.global_batch; ++f) {
      if (spec.global_batch % f != 0 || p * f >= found->devices()) continue;
      plan::LayoutSpec c = spec;
      plan::assign_stage_mesh(c, p, 1, static_cast<int>(f));
      try {
        c.validate();
      } catch (const ConfigError&) {
        continue;
      }
      EXPECT_TRUE(plan::misfit(plan::device_memory(c), limits).has_value()) << c.describe() << " fits too";
    }
  }
}

TEST(Plan, RequireFitsNamesNeedsHasAndTheSmallestLayout) {
  const plan::LayoutSpec spec = spec_of(odd_gpt());
  const plan::DeviceMemory m = plan::device_memory(spec);
  EXPECT_NO_THROW(plan::require_fits(spec, {static_cast<double>(m.total()), m.largest.bytes}, "dev"));
  const std::string e = error_message<ConfigError>(
      [&] { plan::require_fits(spec, {static_cast<double>(m.total()) / 2, 0}, "tiny device"); });
  EXPECT_NE(e.find("'tiny device'"), std::string::npos) << e;
  EXPECT_NE(e.find("needs"), std::string::npos) << e;
  EXPECT_NE(e.find("the device has"), std::string::npos) << e;
  EXPECT_NE(e.find("the smallest layout that fits is"), std::string::npos) << e;
  EXPECT_EQ(count_lines(e), 0) << e;
  const std::string alloc = error_message<ConfigError>(
      [&] { plan::require_fits(spec, {1e12, m.largest.bytes - 1}, "dev"); });
  EXPECT_NE(alloc.find("exceeds the largest allocation"), std::string::npos) << alloc;
}

// Pipeline stages of odd_gpt (L 2, C 40, H 100, T 24, Vp 384, 2 heads of 20): PERCORE 3 x 2 stages
// = 6 sequences per pipeline, NUM_MICROBATCHES 3: microbatches of 2 sequences, N = 48 rows.
std::vector<std::pair<std::string, std::string>> two_stage_gpt(const std::string& schedule = "1f1b") {
  return with(odd_gpt(), {{"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"NUM_MICROBATCHES", "3"}, {"PIPELINE_SCHEDULE", schedule}});
}

std::map<std::string, plan::BufferSize> buffers_by_name(const std::vector<plan::BufferSize>& buffers) {
  std::map<std::string, plan::BufferSize> out;
  for (const plan::BufferSize& b : buffers) out[b.name] = b;
  return out;
}

TEST(Plan, TwoStageGptMemoryByHand) {
  const plan::LayoutSpec spec = spec_of(two_stage_gpt());
  EXPECT_EQ(spec.describe(), "stage 2 x data 1 x fsdp 1 x tensor 1 = 2 devices (ICI [2,1,1,1] x DCN [1,1,1], 1 process)");
  EXPECT_NE(spec.flags().find(" --fdl.NUM_MICROBATCHES=3 --fdl.PIPELINE_SCHEDULE=1f1b"), std::string::npos) << spec.flags();
  EXPECT_EQ(spec.group_sequences(), 6);
  EXPECT_EQ(spec.microbatches(), 3);
  EXPECT_EQ(spec.microbatch_sequences(), 2);

  // Each stage's tensors: its block, the first also wte and wpe, the last lnf and wte (the tied head).
  const std::int64_t C = 40, H = 100, T = 24, Vp = 384;
  const std::int64_t block = 3 * C * C + 3 * C + C * C + C + H * C + H + C * H + C + 4 * C;
  const models::ParameterLayout first = plan::stage_layout(spec, 0), last = plan::stage_layout(spec, 1);
  EXPECT_EQ(first.parameter_count(), Vp * C + T * C + block);
  EXPECT_EQ(last.parameter_count(), block + 2 * C + Vp * C);
  EXPECT_EQ(first.num_blocks(), 1);
  // The state is the larger stage's: parameters, gradients and Adam's m and v in float32.
  const plan::DeviceMemory m = plan::device_memory(spec);
  EXPECT_EQ(m.state(), 16 * std::max(first.total(), last.total()));
  EXPECT_EQ(plan::device_layout(spec).total(), std::max(first.total(), last.total()));

  // One microbatch instance per stage: the first has the embedding and sends its output (so keeps
  // a buffer for its gradient), the last receives its input and has the final norm and the head.
  auto instance = [&](int stage) {
    plan::ActivationShape shape;
    shape.sequences = 2;
    shape.seq_len = static_cast<std::size_t>(T);
    shape.stage = models::stage_span(2, 2, stage);
    return plan::activation_buffers(spec.model, shape);
  };
  const auto a0 = buffers_by_name(instance(0)), a1 = buffers_by_name(instance(1));
  const std::size_t NC = 2 * 24 * 40 * sizeof(float);
  EXPECT_EQ(a0.at("stage.output_gradient").total(), NC);
  EXPECT_EQ(a0.count("stage.input"), 0u);
  EXPECT_EQ(a0.count("embedding.x"), 1u);
  EXPECT_EQ(a0.count("lm_head.logits") + a0.count("lnf.y"), 0u);
  EXPECT_EQ(a1.at("stage.input").total(), NC);
  EXPECT_EQ(a1.count("stage.output_gradient") + a1.count("embedding.x"), 0u);
  EXPECT_EQ(a1.at("lm_head.logits").total(), 48u * 384 * sizeof(float));
  EXPECT_EQ(a0.at("h*.attn.out").copies, 1u);  // one block per stage
  const std::size_t i0 = plan::total_bytes(instance(0)), i1 = plan::total_bytes(instance(1));
  // 1f1b: stage 0 holds min(2 - 0, 3) = 2 microbatches, stage 1 min(2 - 1, 3) = 1; gpipe: all 3.
  // Both stages share the process (ICI_ALGORITHM=ring: one context), so each also keeps a staging
  // buffer per microbatch for what it receives device to device: 3 (N, C) messages.
  EXPECT_EQ(m.activations, std::max(2 * i0, i1) + 3 * NC);
  EXPECT_EQ(m.microbatches_in_flight, 2 * i0 >= i1 ? 2 : 1);
  const plan::DeviceMemory gpipe = plan::device_memory(spec_of(two_stage_gpt("gpipe")));
  EXPECT_EQ(gpipe.activations, 3 * std::max(i0, i1) + 3 * NC);
  EXPECT_EQ(gpipe.state(), m.state());
  plan::LayoutSpec host = spec;  // ICI_ALGORITHM=host: messages through host memory, no staging
  host.ici_ring = false;
  EXPECT_EQ(plan::device_memory(host).activations, std::max(2 * i0, i1));
}

TEST(Plan, PipelineBubbleStretchesTheComputeAndFlopsSplitOverTheStages) {
  const plan::Plan p = plan::make_plan(spec_of(two_stage_gpt()), plan::known_accelerator("A100"));
  EXPECT_DOUBLE_EQ(p.bubble_fraction, 1.0 / 4);  // (p-1)/(m+p-1), p 2, m 3
  EXPECT_DOUBLE_EQ(p.time.bubble_s, p.time.compute_s / 3);  // the compute stretched by (m+p-1)/m
  EXPECT_DOUBLE_EQ(p.time.step_s, std::max(p.time.compute_s * 4 / 3, p.time.hidden_s) + p.time.exposed_s);
  EXPECT_DOUBLE_EQ(p.flops_per_device * 2, p.spec.model.flops_per_token(24) * 6 * 24);
  // 4 stages, 6 microbatches: 3 / 9.
  const plan::Plan four = plan::make_plan(spec_of(with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"ICI_MESH_SHAPE", "[4,1,1,1]"},
                                                                   {"NUM_MICROBATCHES", "6"}})),
                                          plan::known_accelerator("A100"));
  EXPECT_DOUBLE_EQ(four.bubble_fraction, 3.0 / 9);
  EXPECT_DOUBLE_EQ(four.time.bubble_s, four.time.compute_s * 3 / 6);
  // No stage axis, no bubble.
  EXPECT_EQ(plan::make_plan(spec_of(odd_gpt()), plan::known_accelerator("A100")).time.bubble_s, 0.0);

  const std::string text = plan::format_plan(p, "two stages");
  EXPECT_NE(text.find("pipeline: 2 stages of 1 block(s), PIPELINE_SCHEDULE 1f1b, 3 microbatches of 2 sequence(s); at "
                      "most 2 in flight on a device; bubble (p-1)/(m+p-1) = 25.0% of the step"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("point to point (PP sends)"), std::string::npos) << text;
  const nlohmann::json j = plan::plan_json(p, "two stages");
  EXPECT_EQ(j["pipeline"]["stages"].get<int>(), 2);
  EXPECT_EQ(j["pipeline"]["microbatches"].get<int>(), 3);
  EXPECT_EQ(j["pipeline"]["schedule"].get<std::string>(), "1f1b");
  EXPECT_DOUBLE_EQ(j["pipeline"]["bubble_fraction"].get<double>(), 0.25);
  EXPECT_EQ(j["layout"]["stages"].get<int>(), 2);
  EXPECT_DOUBLE_EQ(j["step_time"]["bubble_s"].get<double>(), p.time.bubble_s);
}

// A message is one microbatch's (M, C) activations or their gradient: 2 x 24 x 40 x 4 bytes.
TEST(Plan, PipelineSendsByHand) {
  const double message = 2.0 * 24 * 40 * 4, tied = 384.0 * 40 * 4;  // GPT's wte gradient, float32
  {
    // Both stages in one process: stage 0 sends 3 activations forward (stage 1 as many gradients
    // back), one exposed; the two ends exchange the tied table's gradient; no data axis.
    const plan::LayoutSpec spec = spec_of(two_stage_gpt());
    std::map<std::string, plan::Collective> c;
    for (const plan::Collective& x : plan::step_collectives(spec, plan::device_layout(spec))) c[x.name] = x;
    ASSERT_EQ(c.size(), 2u);
    const plan::Collective& forward = c.at("PP send, activations (forward)");
    EXPECT_EQ(forward.kind, plan::CollectiveKind::kSend);
    EXPECT_EQ(forward.operations, 3);
    EXPECT_EQ(forward.exposed, 1);
    EXPECT_DOUBLE_EQ(forward.ici_bytes, message);
    EXPECT_DOUBLE_EQ(forward.dcn_bytes, 0.0);
    const plan::Collective& wte = c.at("PP send, tied embedding gradient (first <-> last stage)");
    EXPECT_EQ(wte.operations, 1);
    EXPECT_DOUBLE_EQ(wte.ici_bytes, tied);
    const plan::LinkBytes sends = plan::point_to_point_bytes(plan::step_collectives(spec, plan::device_layout(spec)));
    EXPECT_DOUBLE_EQ(sends.ici, 3 * message + tied);
    EXPECT_DOUBLE_EQ(sends.dcn, 0.0);
  }
  {
    // 4 stages, two per process, data 2 inside each: PERCORE 1.5 x 8 devices = 12 sequences, 6 per
    // pipeline in 3 microbatches of 2. Stage 1 sends the most: forward to stage 2 over DCN, backward
    // to stage 0 over ICI; the ends are in different processes; the data pair all-reduces each
    // stage's gradients over ICI: 2 x 1/2 x 4 P of the largest stage.
    const plan::LayoutSpec spec = spec_of(with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"ICI_MESH_SHAPE", "[2,2,1,1]"},
                                                           {"DCN_MESH_SHAPE", "[2,1,1,1]"}, {"PERCORE_BATCH_SIZE", "1.5"},
                                                           {"NUM_MICROBATCHES", "3"}}));
    const models::ParameterLayout layout = plan::device_layout(spec);
    std::map<std::string, plan::Collective> c;
    for (const plan::Collective& x : plan::step_collectives(spec, layout)) c[x.name] = x;
    ASSERT_EQ(c.size(), 4u);
    EXPECT_DOUBLE_EQ(c.at("PP send, activations (forward)").dcn_bytes, message);
    EXPECT_DOUBLE_EQ(c.at("PP send, activations (forward)").ici_bytes, 0.0);
    EXPECT_DOUBLE_EQ(c.at("PP send, activation gradients (backward)").ici_bytes, message);
    EXPECT_EQ(c.at("PP send, activation gradients (backward)").operations, 3);
    EXPECT_DOUBLE_EQ(c.at("PP send, tied embedding gradient (first <-> last stage)").dcn_bytes, tied);
    const plan::Collective& data = c.at("DP all-reduce, the stage's gradients");
    EXPECT_EQ(data.operations, 1);
    EXPECT_EQ(data.exposed, 1);
    EXPECT_DOUBLE_EQ(data.ici_bytes, 2 * 0.5 * 4.0 * static_cast<double>(layout.total()));
    EXPECT_DOUBLE_EQ(data.dcn_bytes, 0.0);
  }
  {
    // LLaMA's head is its own tensor: nothing tied to exchange.
    const plan::LayoutSpec spec = spec_of(with(odd_llama(), {{"NUM_LAYERS", "2"}, {"ICI_MESH_SHAPE", "[2,1,1,1]"}}));
    for (const plan::Collective& x : plan::step_collectives(spec, plan::device_layout(spec))) {
      EXPECT_EQ(x.name.find("tied"), std::string::npos) << x.name;
    }
  }
}

TEST(Plan, PipelineErrorsAreTheJobsInOneLine) {
  const struct {
    std::vector<std::pair<std::string, std::string>> overrides;
    std::string says;
  } cases[] = {
      {{{"NUM_LAYERS", "3"}, {"ICI_MESH_SHAPE", "[2,1,1,1]"}},
       "a stage axis of 2 does not split NUM_LAYERS=3 into stages of whole blocks"},
      {{{"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"NUM_SUB_BATCHES", "2"}}, "set NUM_MICROBATCHES instead"},
      {{{"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"NUM_MICROBATCHES", "3"}, {"MICROBATCH_SIZE", "2"}},
       "NUM_MICROBATCHES=3 and MICROBATCH_SIZE=2: set one of them"},
      {{{"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"NUM_MICROBATCHES", "4"}},
       "NUM_MICROBATCHES=4 does not divide the 6 sequences each pipeline runs per step"},
      {{{"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"MICROBATCH_SIZE", "4"}}, "MICROBATCH_SIZE=4 does not divide the 6 sequences"},
      {{{"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"PIPELINE_SCHEDULE", "zigzag"}}, "PIPELINE_SCHEDULE=zigzag"},
  };
  for (const auto& c : cases) {
    const std::string e = error_message<ConfigError>([&] { spec_of(with(odd_gpt(), c.overrides)); });
    EXPECT_NE(e.find(c.says), std::string::npos) << e;
    EXPECT_EQ(count_lines(e), 0) << e;
  }
  // MICROBATCH_SIZE is the job's arithmetic: 6 sequences of 3 are 2 microbatches.
  EXPECT_EQ(spec_of(with(odd_gpt(), {{"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"MICROBATCH_SIZE", "3"}})).microbatches(), 2);
  // Neither given: one sequence per microbatch.
  EXPECT_EQ(spec_of(with(odd_gpt(), {{"ICI_MESH_SHAPE", "[2,1,1,1]"}})).microbatches(), 6);
  // FSDP inside a stage is a layout: the fsdp axis splits the rows as data does (12 / 2 per pipeline).
  const plan::LayoutSpec fsdp = spec_of(with(odd_gpt(), {{"ICI_MESH_SHAPE", "[2,1,2,1]"}}));
  EXPECT_EQ(fsdp.describe(), "stage 2 x data 1 x fsdp 2 x tensor 1 = 4 devices (ICI [2,1,2,1] x DCN [1,1,1], 1 process)");
  EXPECT_EQ(fsdp.group_sequences(), 6);
  EXPECT_EQ(fsdp.microbatches(), 6);
}

// SEQUENCE_PARALLEL splits the rows of one pass (a microbatch, a sub-batch) over the tensor axis:
// the plan refuses what the job refuses (config/sequence_parallel_rules.h), in its words.
TEST(Plan, SequenceParallelRowsOfEveryPassAreTheJobsRule) {
  const auto odd_rows = with(odd_gpt(), {{"MAX_SEQ_LEN", "23"}, {"SEQUENCE_PARALLEL", "true"}});
  const struct {
    std::vector<std::pair<std::string, std::string>> overrides;
    std::string says;
  } cases[] = {
      {{{"ICI_MESH_SHAPE", "[1,1,2]"}, {"PERCORE_BATCH_SIZE", "0.5"}},
       "SEQUENCE_PARALLEL: a tensor group's batch of 1 sequence(s) has 1 x 23 = 23 rows (sequences x MAX_SEQ_LEN), "
       "which the tensor axis 2 does not divide; set PERCORE_BATCH_SIZE or MAX_SEQ_LEN"},
      {{{"ICI_MESH_SHAPE", "[1,1,2]"}, {"PERCORE_BATCH_SIZE", "1"}, {"NUM_SUB_BATCHES", "2"}},
       "a sub-batch of 1 sequence(s) (2 / NUM_SUB_BATCHES=2) has 1 x 23 = 23 rows (sequences x MAX_SEQ_LEN), which the "
       "tensor axis 2 does not divide; set NUM_SUB_BATCHES or MAX_SEQ_LEN"},
      {{{"ICI_MESH_SHAPE", "[2,1,1,2]"}, {"PERCORE_BATCH_SIZE", "1"}},
       "a microbatch of 1 sequence(s) (4 / 4 microbatches) has 1 x 23 = 23 rows (sequences x MAX_SEQ_LEN), which the "
       "tensor axis 2 does not divide; set NUM_MICROBATCHES or MICROBATCH_SIZE or MAX_SEQ_LEN"},
  };
  for (const auto& c : cases) {
    const std::string e = error_message<ConfigError>([&] { spec_of(with(odd_rows, c.overrides)); });
    EXPECT_NE(e.find(c.says), std::string::npos) << e;
    EXPECT_EQ(count_lines(e), 0) << e;
  }
  // Passes of 2 x 23 rows split; so does every pass without SEQUENCE_PARALLEL.
  EXPECT_EQ(spec_of(with(odd_rows, {{"ICI_MESH_SHAPE", "[2,1,1,2]"}, {"PERCORE_BATCH_SIZE", "1"}, {"MICROBATCH_SIZE", "2"}}))
                .microbatches(),
            2);
  EXPECT_EQ(spec_of(with(odd_rows, {{"ICI_MESH_SHAPE", "[1,1,2]"}, {"PERCORE_BATCH_SIZE", "1"}})).sub_batches, 1);
  EXPECT_EQ(spec_of(with(odd_rows, {{"ICI_MESH_SHAPE", "[2,1,1,2]"}, {"PERCORE_BATCH_SIZE", "1"},
                                    {"SEQUENCE_PARALLEL", "false"}}))
                .microbatches(),
            4);
}

// The circular schedule on odd_gpt with 4 blocks, 2 stages x CIRCULAR_REPEAT 2: virtual stages
// v = c x 2 + s of one block each, device 0 holding v = 0, 2 and device 1 v = 1, 3. PERCORE 2 x 2
// stages = 4 sequences per pipeline, NUM_MICROBATCHES 4: microbatches of 1 sequence, N = 24 rows.
std::vector<std::pair<std::string, std::string>> circular_gpt() {
  return with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"PERCORE_BATCH_SIZE", "2"}, {"ICI_MESH_SHAPE", "[2,1,1,1]"},
                          {"NUM_MICROBATCHES", "4"}, {"PIPELINE_SCHEDULE", "circular"}, {"CIRCULAR_REPEAT", "2"}});
}

TEST(Plan, CircularGptMemoryIsEachDevicesChunksSummedByHand) {
  const plan::LayoutSpec spec = spec_of(circular_gpt());
  EXPECT_EQ(spec.repeat, 2);
  EXPECT_EQ(spec.virtual_stages(), 4);
  EXPECT_EQ(spec.microbatches(), 4);
  EXPECT_EQ(spec.describe(), "stage 2 x data 1 x fsdp 1 x tensor 1 = 2 devices (ICI [2,1,1,1] x DCN [1,1,1], 1 process; "
                             "2 chunks per stage)");
  EXPECT_NE(spec.flags().find(" --fdl.NUM_MICROBATCHES=4 --fdl.PIPELINE_SCHEDULE=circular --fdl.CIRCULAR_REPEAT=2"),
            std::string::npos)
      << spec.flags();

  // Each virtual stage one block; v = 0 also wte and wpe, v = 3 lnf and the tied wte.
  const std::int64_t C = 40, H = 100, T = 24, Vp = 384;
  const std::int64_t block = 3 * C * C + 3 * C + C * C + C + H * C + H + C * H + C + 4 * C;
  std::vector<models::ParameterLayout> v;
  for (int i = 0; i < 4; ++i) v.push_back(plan::stage_layout(spec, i));
  EXPECT_EQ(v[0].parameter_count(), Vp * C + T * C + block);
  EXPECT_EQ(v[1].parameter_count(), block);
  EXPECT_EQ(v[2].parameter_count(), block);
  EXPECT_EQ(v[3].parameter_count(), block + 2 * C + Vp * C);
  const std::vector<models::ParameterLayout> d0 = plan::device_layouts(spec, 0), d1 = plan::device_layouts(spec, 1);
  ASSERT_EQ(d0.size(), 2u);
  ASSERT_EQ(d1.size(), 2u);
  EXPECT_EQ(d0[0].total(), v[0].total());
  EXPECT_EQ(d0[1].total(), v[2].total());
  EXPECT_EQ(d1[0].total(), v[1].total());
  EXPECT_EQ(d1[1].total(), v[3].total());
  EXPECT_EQ(plan::device_layout(spec).total(), std::max(v[0].total(), v[3].total()));  // one chunk's

  // The state: each chunk's parameters, gradients and Adam's m and v, summed on its device; the
  // device with the larger sum; every chunk's Adam has its own norm partial sums.
  const std::size_t device0 = v[0].total() + v[2].total(), device1 = v[1].total() + v[3].total();
  const plan::DeviceMemory m = plan::device_memory(spec);
  EXPECT_EQ(m.layout_floats, std::max(device0, device1));
  EXPECT_EQ(m.state(), 16 * std::max(device0, device1));
  auto partial_sums = [](const models::ParameterLayout& l) { return (l.total() + 4095) / 4096 * sizeof(float); };
  EXPECT_EQ(m.optimizer_workspace, device0 >= device1 ? partial_sums(v[0]) + partial_sums(v[2])
                                                      : partial_sums(v[1]) + partial_sums(v[3]));

  // The activations: every chunk holds all m = 4 microbatches' instances, each of one sequence over
  // its block; the middle virtual stages carry both stage buffers, the ends one each.
  auto instance = [&](int stage) {
    plan::ActivationShape shape;
    shape.sequences = 1;
    shape.seq_len = static_cast<std::size_t>(T);
    shape.stage = models::stage_span(4, 4, stage);
    return plan::activation_buffers(spec.model, shape);
  };
  const auto a1 = buffers_by_name(instance(1)), a2 = buffers_by_name(instance(2));
  for (const auto& a : {a1, a2}) {
    EXPECT_EQ(a.count("stage.input") + a.count("stage.output_gradient"), 2u);
    EXPECT_EQ(a.count("embedding.x") + a.count("lm_head.logits"), 0u);
  }
  auto held = [&](int first, int second) {
    return 4 * (plan::total_bytes(instance(first)) + plan::total_bytes(instance(second)));
  };
  // Every message is device to device (one process, ICI_ALGORITHM=ring), into a staging buffer per
  // microbatch on the receiver: device 0 receives v1's gradients into v0 and v1's activations and
  // v3's gradients into v2, device 1 likewise: 3 x 4 buffers of one (T, C) message each.
  const std::size_t staging = 3 * 4 * static_cast<std::size_t>(T * C) * sizeof(float);
  EXPECT_EQ(m.activations, std::max(held(0, 2), held(1, 3)) + staging);
  EXPECT_EQ(m.microbatches_in_flight, 4);  // per chunk
}

// A message is one microbatch's (M, C) activations or their gradient: 1 x 24 x 40 x 4 bytes.
TEST(Plan, CircularSendsAndBubbleByHand) {
  const double message = 1.0 * 24 * 40 * 4, tied = 384.0 * 40 * 4;
  auto collectives = [](const plan::LayoutSpec& spec) {
    std::map<std::string, plan::Collective> c;
    for (const plan::Collective& x : plan::step_collectives(spec, plan::device_layout(spec))) c[x.name] = x;
    return c;
  };
  {
    // One process. Device 0 (v = 0, 2) sends r m = 8 activations to device 1 and (r - 1) m = 4
    // gradients (v = 2 to 1; v = 0 has none to send); device 1 (v = 1, 3) 4 activations (v = 1 to
    // device 0's v = 2, the ring wrapping; v = 3 has none) and 8 gradients: a tie, device 0 counted.
    const plan::LayoutSpec spec = spec_of(circular_gpt());
    const std::map<std::string, plan::Collective> c = collectives(spec);
    ASSERT_EQ(c.size(), 3u);
    const plan::Collective& forward = c.at("PP send, activations (forward)");
    EXPECT_EQ(forward.operations, 8);
    EXPECT_EQ(forward.exposed, 1);
    EXPECT_DOUBLE_EQ(forward.ici_bytes, message);
    EXPECT_DOUBLE_EQ(forward.dcn_bytes, 0.0);
    EXPECT_EQ(c.at("PP send, activation gradients (backward)").operations, 4);
    EXPECT_DOUBLE_EQ(c.at("PP send, activation gradients (backward)").ici_bytes, message);
    EXPECT_EQ(c.at("PP send, tied embedding gradient (first <-> last stage)").operations, 1);
    EXPECT_DOUBLE_EQ(c.at("PP send, tied embedding gradient (first <-> last stage)").ici_bytes, tied);
    const plan::LinkBytes sends = plan::point_to_point_bytes(plan::step_collectives(spec, plan::device_layout(spec)));
    EXPECT_DOUBLE_EQ(sends.ici, 12 * message + tied);
    EXPECT_DOUBLE_EQ(sends.dcn, 0.0);
  }
  {
    // 4 stages x CIRCULAR_REPEAT 2 over 8 blocks, stages 0, 1 in one process and 2, 3 in the
    // other, data 2 inside each: PERCORE 1 x 8 devices = 8 sequences, 4 per pipeline in 4
    // microbatches of 1. In messages (DCN, ICI): device 0 sends 8 activations to 1 over ICI and
    // 4 gradients to 3 over DCN (v = 4 to 3, wrapping); device 1 8 activations over DCN, 8
    // gradients over ICI; device 2 likewise mirrored; device 3 4 activations to 0 over DCN, 8
    // gradients over ICI. Device 1 is counted. The ends (devices 0 and 3) are in different
    // processes. The data pair all-reduces each of a device's 2 chunks over ICI: 2 operations of
    // half the largest device's 4 P floats, 2 x 1/2 x that each.
    const plan::LayoutSpec spec = spec_of(with(odd_gpt(), {{"NUM_LAYERS", "8"}, {"ICI_MESH_SHAPE", "[2,2,1,1]"},
                                                           {"DCN_MESH_SHAPE", "[2,1,1,1]"}, {"PERCORE_BATCH_SIZE", "1"},
                                                           {"NUM_MICROBATCHES", "4"}, {"PIPELINE_SCHEDULE", "circular"},
                                                           {"CIRCULAR_REPEAT", "2"}}));
    const std::map<std::string, plan::Collective> c = collectives(spec);
    ASSERT_EQ(c.size(), 4u);
    EXPECT_EQ(c.at("PP send, activations (forward)").operations, 8);
    EXPECT_DOUBLE_EQ(c.at("PP send, activations (forward)").dcn_bytes, message);
    EXPECT_DOUBLE_EQ(c.at("PP send, activations (forward)").ici_bytes, 0.0);
    EXPECT_EQ(c.at("PP send, activation gradients (backward)").operations, 8);
    EXPECT_DOUBLE_EQ(c.at("PP send, activation gradients (backward)").ici_bytes, message);
    EXPECT_DOUBLE_EQ(c.at("PP send, tied embedding gradient (first <-> last stage)").dcn_bytes, tied);
    std::size_t most = 0;
    for (int s = 0; s < 4; ++s) most = std::max(most, plan::stage_layout(spec, s).total() + plan::stage_layout(spec, s + 4).total());
    const plan::Collective& data = c.at("DP all-reduce, the stage's gradients");
    EXPECT_EQ(data.operations, 2);
    EXPECT_EQ(data.exposed, 2);
    EXPECT_DOUBLE_EQ(data.bytes, 4.0 * static_cast<double>(most) / 2);
    EXPECT_DOUBLE_EQ(data.ici_bytes * 2, 2 * 0.5 * 4.0 * static_cast<double>(most));
    EXPECT_DOUBLE_EQ(data.dcn_bytes, 0.0);
  }
  // p 2, m 4, r 2: the bubble is (p-1)/(r m + p-1) = 1/9 of the step, compute x (p-1)/(r m).
  const plan::Plan p = plan::make_plan(spec_of(circular_gpt()), plan::known_accelerator("A100"));
  EXPECT_DOUBLE_EQ(p.bubble_fraction, 1.0 / 9);
  EXPECT_DOUBLE_EQ(p.time.bubble_s, p.time.compute_s / 8);
  EXPECT_DOUBLE_EQ(p.time.step_s, std::max(p.time.compute_s * 9 / 8, p.time.hidden_s) + p.time.exposed_s);
  const std::string text = plan::format_plan(p, "circular");
  for (const char* part : {"pipeline: 2 stages of 2 chunks of 1 block(s), PIPELINE_SCHEDULE circular x 2, 4 microbatches "
                           "of 1 sequence(s); at most 4 in flight per chunk; bubble (p-1)/(r*m+p-1) = 11.1% of the step",
                           "memory per device (the stage holding the most, its 2 chunks)",
                           "activations (4 microbatches in flight x 2 chunks)"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " missing from:\n" << text;
  }
  const nlohmann::json j = plan::plan_json(p, "circular");
  EXPECT_EQ(j["pipeline"]["schedule"].get<std::string>(), "circular");
  EXPECT_EQ(j["pipeline"]["circular_repeat"].get<int>(), 2);
  EXPECT_EQ(j["pipeline"]["blocks_per_chunk"].get<int>(), 1);
  EXPECT_DOUBLE_EQ(j["pipeline"]["bubble_fraction"].get<double>(), 1.0 / 9);
  EXPECT_EQ(j["layout"]["circular_repeat"].get<int>(), 2);
}

TEST(Plan, CircularRulesSurfaceThroughValidateInTheJobsWords) {
  const struct {
    std::vector<std::pair<std::string, std::string>> overrides;
    std::string says;
  } cases[] = {
      {{{"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"CIRCULAR_REPEAT", "2"}}, "CIRCULAR_REPEAT=2 needs PIPELINE_SCHEDULE=circular"},
      {{{"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"NUM_MICROBATCHES", "2"}, {"PIPELINE_SCHEDULE", "circular"},
        {"CIRCULAR_REPEAT", "2"}},
       "a stage axis of 2 x CIRCULAR_REPEAT=2 does not split NUM_LAYERS=2 into 4 chunks of whole blocks"},
      {{{"NUM_LAYERS", "4"}, {"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"NUM_MICROBATCHES", "3"},
        {"PIPELINE_SCHEDULE", "circular"}, {"CIRCULAR_REPEAT", "2"}},
       "3 microbatches is not a multiple"},
  };
  for (const auto& c : cases) {
    const std::string e = error_message<ConfigError>([&] { spec_of(with(odd_gpt(), c.overrides)); });
    EXPECT_NE(e.find(c.says), std::string::npos) << e;
    EXPECT_EQ(count_lines(e), 0) << e;
  }
  // LayoutSpec::validate itself, as for a spec built by hand (training's start-up check).
  plan::LayoutSpec spec = spec_of(circular_gpt());
  EXPECT_NO_THROW(spec.validate());
  spec.repeat = 3;
  EXPECT_NE(error_message<ConfigError>([&] { spec.validate(); }).find("does not split NUM_LAYERS=4 into 6 chunks"),
            std::string::npos);
  spec.repeat = 2;
  spec.num_microbatches = 1;
  EXPECT_NE(error_message<ConfigError>([&] { spec.validate(); }).find("1 microbatches is not a multiple"),
            std::string::npos);
  spec.num_microbatches = 4;
  spec.schedule = models::PipelineSchedule::kGpipe;
  EXPECT_NE(error_message<ConfigError>([&] { spec.validate(); }).find("needs PIPELINE_SCHEDULE=circular"),
            std::string::npos);
}

// One head (no tensor axis), two sequences, the circular schedule with CIRCULAR_REPEAT 2: the search
// tries stage axes whose p x 2 chunks split the blocks and whose microbatches fill the ring.
TEST(Plan, SearchTriesOnlyTheCircularStagesTheRulesAllow) {
  const auto base = with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"NUM_HEADS", "1"}, {"DIMS_PER_HEAD", "40"},
                                     {"PERCORE_BATCH_SIZE", "2"}, {"PIPELINE_SCHEDULE", "circular"},
                                     {"CIRCULAR_REPEAT", "2"}});
  // CHECKPOINT_POLICY and NUM_SUB_BATCHES given (as on a command line): the candidates keep them
  // (left open, FSDP with rematerialization would fit below the pipeline).
  auto given = [](plan::LayoutSpec s) {
    s.checkpoint_policy_given = s.sub_batches_given = true;
    return s;
  };
  auto smallest_other = [](const plan::LayoutSpec& spec) {  // one device or FSDP over both sequences
    plan::LayoutSpec fsdp2 = spec;
    plan::assign_mesh(fsdp2, 2, 1, 1);
    return std::min(plan::device_memory(spec).total(), plan::device_memory(fsdp2).total());
  };
  const plan::LayoutSpec spec = given(spec_of(base));
  plan::LayoutSpec two = spec;
  plan::assign_stage_mesh(two, 2, 1);
  const std::size_t stages2 = plan::device_memory(two).total(), other = smallest_other(spec);
  ASSERT_LT(stages2, other);
  const std::optional<plan::LayoutSpec> found =
      plan::smallest_fitting_layout(spec, {static_cast<double>(stages2 + other) / 2, 0});
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->stages(), 2);
  EXPECT_EQ(found->repeat, 2);
  EXPECT_EQ(found->flags(), "--fdl.ICI_MESH_SHAPE=[1,1,1] --fdl.DCN_MESH_SHAPE=[2,1,1,1] --fdl.PERCORE_BATCH_SIZE=1 "
                            "--fdl.NUM_MICROBATCHES=2 --fdl.PIPELINE_SCHEDULE=circular --fdl.CIRCULAR_REPEAT=2");
  // 6 blocks: p 2 makes 4 chunks, which do not split them; p 3 makes 6, but 2 microbatches do not
  // fill a ring of 3. No stage axis is left, so nothing fits below the other layouts.
  const plan::LayoutSpec six = given(spec_of(with(base, {{"NUM_LAYERS", "6"}})));
  EXPECT_FALSE(plan::smallest_fitting_layout(six, {static_cast<double>(smallest_other(six)) - 1, 0}).has_value());
}

// The settings left open are chosen for each candidate, as for the layout asked for: a gpipe
// pipeline holds all 16 of its microbatches, while one device with sub-batches runs the same
// global batch (a pipelined spec's 1 sub-batch once bound the candidates without stages).
TEST(Plan, SearchChoosesTheOpenSettingsForEachCandidate) {
  const auto base = with(odd_gpt(), {{"ICI_MESH_SHAPE", "[2,1,1,1]"}, {"PIPELINE_SCHEDULE", "gpipe"},
                                     {"PERCORE_BATCH_SIZE", "8"}});
  const plan::LayoutSpec spec = spec_of(base);
  plan::LayoutSpec one = spec;
  plan::assign_mesh(one, 1, 1, 1);
  one.sub_batches = 4;
  const double limit = static_cast<double>(plan::device_memory(one).total());
  ASSERT_GT(static_cast<double>(plan::device_memory(spec).total()), limit);
  one.sub_batches = 1;
  ASSERT_GT(static_cast<double>(plan::device_memory(one).total()), limit);
  const std::optional<plan::LayoutSpec> found = plan::smallest_fitting_layout(spec, {limit, 0});
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->devices(), 1);
  EXPECT_GE(found->sub_batches, 2);
  EXPECT_LE(found->sub_batches, 4);
  EXPECT_NE(found->flags().find("--fdl.NUM_SUB_BATCHES=" + std::to_string(found->sub_batches)), std::string::npos)
      << found->flags();
  EXPECT_FALSE(plan::misfit(plan::device_memory(*found), {limit, 0}));
  // Both given: every candidate keeps them, and one device does not fit.
  plan::LayoutSpec fixed = spec;
  fixed.checkpoint_policy_given = fixed.sub_batches_given = true;
  const std::optional<plan::LayoutSpec> kept = plan::smallest_fitting_layout(fixed, {limit, 0});
  if (kept) {
    EXPECT_GT(kept->devices(), 1) << kept->flags();
  }
}

// One sequence and one head: neither fsdp (nothing to split a global batch of 1) nor a tensor axis
// (one head) can spread this GPT; stages split it by depth.
TEST(Plan, SearchSplitsByDepthWhenOnlyStagesFit) {
  const plan::LayoutSpec spec = spec_of(with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"NUM_HEADS", "1"}, {"DIMS_PER_HEAD", "40"},
                                                         {"PERCORE_BATCH_SIZE", "1"}}));
  ASSERT_EQ(plan::tensor_sizes(spec.model, 1), std::vector<int>{1});
  plan::LayoutSpec two = spec;
  plan::assign_stage_mesh(two, 2, 1);
  const std::size_t one_device = plan::device_memory(spec).total(), two_stages = plan::device_memory(two).total();
  ASSERT_LT(two_stages, one_device);
  const plan::MemoryLimits limits{static_cast<double>(two_stages + one_device) / 2, 0};
  const std::optional<plan::LayoutSpec> found = plan::smallest_fitting_layout(spec, limits);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->stages(), 2);
  EXPECT_EQ(found->devices(), 2);
  EXPECT_EQ(found->global_batch, 1);
  EXPECT_EQ(found->flags(), "--fdl.ICI_MESH_SHAPE=[1,1,1] --fdl.DCN_MESH_SHAPE=[2,1,1,1] --fdl.PERCORE_BATCH_SIZE=0.5 "
                            "--fdl.NUM_MICROBATCHES=1 --fdl.PIPELINE_SCHEDULE=1f1b");
  const std::string e = error_message<ConfigError>([&] { plan::require_fits(spec, limits, "dev"); });
  EXPECT_NE(e.find("the smallest layout that fits is stage 2 x data 1 x fsdp 1 x tensor 1 = 2 devices"), std::string::npos)
      << e;
  // With two sequences FSDP over 2 devices fits as well: at equal devices it wins over stages.
  const plan::LayoutSpec batch2 = spec_of(with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"NUM_HEADS", "1"}, {"DIMS_PER_HEAD", "40"},
                                                           {"PERCORE_BATCH_SIZE", "2"}}));
  plan::LayoutSpec fsdp2 = batch2, stages2 = batch2;
  plan::assign_mesh(fsdp2, 2, 1, 1);
  plan::assign_stage_mesh(stages2, 2, 1);
  const double both = static_cast<double>(
      std::max(plan::device_memory(fsdp2).total(), plan::device_memory(stages2).total()));
  ASSERT_LT(both, static_cast<double>(plan::device_memory(batch2).total()));
  const std::optional<plan::LayoutSpec> tie = plan::smallest_fitting_layout(batch2, {both, 0});
  ASSERT_TRUE(tie.has_value());
  EXPECT_EQ(tie->stages(), 1) << tie->describe();
  EXPECT_EQ(tie->devices(), 2) << tie->describe();
}

// FSDP inside the stages (ZeRO-2, scheduler/pipeline_step.h): odd_gpt with 4 blocks on 2 stages x
// fsdp 2 (ICI) x 3 (DCN) = 12 devices, PERCORE 1: 12 sequences, 2 per pipeline in 2 microbatches.
// Each chunk keeps its P_c parameters and gradients whole; Adam's m and v cover the device's shard
// of the chunk's flat buffer, split on alignment blocks over the 3 processes, then the 2 devices:
// device (0, 0)'s is the largest. Counted here from the blocks, not through models::ShardPlan.
TEST(Plan, StageFsdpMemoryIsWholeParametersAndGradientsAndShardedAdamByHand) {
  const std::size_t a = 64;  // PoCL's 128-byte base address alignment: at least 64 floats
  auto largest_shard = [&](std::size_t P) {
    const std::size_t blocks = (P + a - 1) / a, process0 = (blocks + 2) / 3, device0 = (process0 + 1) / 2;
    return std::min(P, device0 * a);
  };
  bool uneven = false;  // some chunk's shard is not P_c / 6: a plain division would be caught
  for (const std::string dtype : {"float32", "bfloat16"}) {
    for (const bool circular : {false, true}) {
      auto overrides = with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"ICI_MESH_SHAPE", "[2,1,2,1]"},
                                        {"DCN_MESH_SHAPE", "[1,1,3,1]"}, {"PERCORE_BATCH_SIZE", "1"},
                                        {"NUM_MICROBATCHES", "2"}, {"FPROP_DTYPE", dtype}});
      if (circular) overrides = with(overrides, {{"PIPELINE_SCHEDULE", "circular"}, {"CIRCULAR_REPEAT", "2"}});
      const plan::LayoutSpec spec = spec_of(overrides);
      SCOPED_TRACE(dtype + (circular ? " circular" : " 1f1b"));
      ASSERT_EQ(spec.alignment_floats(), a);
      EXPECT_EQ(spec.describe(), std::string("stage 2 x data 1 x fsdp 6 x tensor 1 = 12 devices (ICI [2,1,2,1] x DCN "
                                             "[1,3,1], 3 processes") +
                                     (circular ? "; 2 chunks per stage)" : ")"));
      EXPECT_EQ(spec.group_sequences(), 2);
      const std::size_t copy = dtype == "float32" ? 0 : 2;  // the 16-bit weight copy's bytes per float
      struct Device {
        std::size_t P = 0, S = 0, state = 0, partial_sums = 0;
      };
      std::vector<Device> devices(2);
      for (int s = 0; s < 2; ++s) {
        for (int c = 0; c < spec.repeat; ++c) {
          const std::size_t P = plan::stage_layout(spec, c * 2 + s).total(), S = largest_shard(P);
          uneven = uneven || S * 6 != P;
          devices[s].P += P;
          devices[s].S += S;
          devices[s].state += (2 * P + 2 * S) * 4 + P * copy;
          devices[s].partial_sums += (S + 4095) / 4096 * 4;
        }
      }
      const Device& most = devices[0].state >= devices[1].state ? devices[0] : devices[1];
      const plan::DeviceMemory m = plan::device_memory(spec);
      EXPECT_EQ(m.state(), most.state);
      EXPECT_EQ(m.parameters, most.P * 4);
      EXPECT_EQ(m.gradients, most.P * 4);
      EXPECT_EQ(m.adam_moments, 2 * most.S * 4);
      EXPECT_EQ(m.weight_copy, most.P * copy);
      EXPECT_EQ(m.fsdp_resident, 0u);  // no gathered units: the stage's parameters stay whole
      EXPECT_EQ(m.layout_floats, most.P);
      EXPECT_EQ(m.shard_floats, most.S);
      EXPECT_EQ(m.optimizer_workspace, most.partial_sums);

      // The same pipeline with data 6 instead: the same rows, parameters, gradients, copy and
      // activations; only Adam's moments are whole.
      plan::LayoutSpec data = spec;
      data.ici = {2, 2, 1, 1};
      data.dcn = {1, 3, 1, 1};
      const plan::DeviceMemory d = plan::device_memory(data);
      EXPECT_EQ(d.parameters, m.parameters);
      EXPECT_EQ(d.gradients, m.gradients);
      EXPECT_EQ(d.weight_copy, m.weight_copy);
      EXPECT_EQ(d.adam_moments, 2 * m.parameters);
      EXPECT_EQ(d.activations, m.activations);
      EXPECT_EQ(d.microbatches_in_flight, m.microbatches_in_flight);
      EXPECT_LT(m.state(), d.state());
      // And a single pipeline of the same 2 sequences: the same activations.
      plan::LayoutSpec alone = spec;
      alone.ici = {2, 1, 1, 1};
      alone.dcn = {1, 1, 1, 1};
      alone.global_batch = 2;
      EXPECT_EQ(plan::device_memory(alone).activations, m.activations);
    }
  }
  EXPECT_TRUE(uneven);
}

// FSDP inside the stages, communication: odd_gpt, 4 blocks, ICI [2,1,2,1] x DCN [1,2,1,1] (data 2
// across processes), PERCORE 1: 8 sequences, 2 per pipeline in 2 microbatches of 1. After the last
// backward each chunk's gradient (4 P bytes) is reduce-scattered over the fsdp pair (ICI), its
// shard (4 P / 2) all-reduced over the data pair (DCN), and the updated parameters all-gathered.
TEST(Plan, StageFsdpCollectivesByHand) {
  const double message = 1.0 * 24 * 40 * 4;
  for (const int r : {1, 2}) {
    SCOPED_TRACE(r);
    auto overrides = with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"ICI_MESH_SHAPE", "[2,1,2,1]"}, {"DCN_MESH_SHAPE", "[1,2,1,1]"},
                                      {"PERCORE_BATCH_SIZE", "1"}, {"NUM_MICROBATCHES", "2"}});
    if (r == 2) overrides = with(overrides, {{"PIPELINE_SCHEDULE", "circular"}, {"CIRCULAR_REPEAT", "2"}});
    const plan::LayoutSpec spec = spec_of(overrides);
    std::map<std::string, plan::Collective> c;
    for (const plan::Collective& x : plan::step_collectives(spec, plan::device_layout(spec))) c[x.name] = x;
    EXPECT_EQ(c.count("DP all-reduce, the stage's gradients"), 0u);
    std::size_t most = 0;  // the device whose chunks hold the most
    for (int s = 0; s < 2; ++s) {
      std::size_t floats = 0;
      for (int k = 0; k < r; ++k) floats += plan::stage_layout(spec, k * 2 + s).total();
      most = std::max(most, floats);
    }
    const double chunk = 4.0 * static_cast<double>(most) / r;
    const plan::Collective& rs = c.at("FSDP reduce-scatter, the stage's gradients");
    const plan::Collective& ag = c.at("FSDP all-gather, the stage's updated parameters");
    const plan::Collective& dp = c.at("DP all-reduce of FSDP gradient shards, the stage's");
    EXPECT_EQ(rs.kind, plan::CollectiveKind::kReduceScatter);
    EXPECT_EQ(ag.kind, plan::CollectiveKind::kAllGather);
    EXPECT_EQ(rs.axis, MeshAxis::kFsdp);
    EXPECT_EQ(dp.axis, MeshAxis::kData);
    for (const plan::Collective* x : {&rs, &ag, &dp}) {
      EXPECT_EQ(x->operations, r) << x->name;
      EXPECT_EQ(x->exposed, r) << x->name;
    }
    EXPECT_DOUBLE_EQ(rs.bytes, chunk);
    EXPECT_DOUBLE_EQ(rs.ici_bytes, 0.5 * chunk);
    EXPECT_DOUBLE_EQ(rs.dcn_bytes, 0.0);
    EXPECT_DOUBLE_EQ(ag.ici_bytes, 0.5 * chunk);
    EXPECT_DOUBLE_EQ(ag.dcn_bytes, 0.0);
    // Together the data-parallel all-reduce's bytes over the fsdp pair: 2 x 1/2 x 4 P.
    EXPECT_DOUBLE_EQ(rs.ici_bytes + ag.ici_bytes, 2 * 0.5 * chunk);
    EXPECT_DOUBLE_EQ(dp.bytes, chunk / 2);
    EXPECT_DOUBLE_EQ(dp.ici_bytes, 0.0);
    EXPECT_DOUBLE_EQ(dp.dcn_bytes, 2 * 0.5 * chunk / 2);
    // The sends: a pipeline's microbatches of one sequence, as without the fsdp axis.
    const plan::Collective& forward = c.at("PP send, activations (forward)");
    EXPECT_DOUBLE_EQ(forward.ici_bytes, message);
    EXPECT_EQ(forward.operations, 2 * r);
    // Without a data axis, no all-reduce of the shards.
    plan::LayoutSpec one = spec;
    one.dcn = {1, 1, 1, 1};
    one.global_batch = 4;
    for (const plan::Collective& x : plan::step_collectives(one, plan::device_layout(one))) {
      EXPECT_NE(x.axis, MeshAxis::kData) << x.name;
    }
  }
}

// The report names what FSDP inside the stages shards (Adam's moments) and what it keeps whole.
TEST(Plan, StageFsdpReport) {
  const plan::Plan p = plan::make_plan(spec_of(with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"ICI_MESH_SHAPE", "[2,1,2,1]"},
                                                                {"NUM_MICROBATCHES", "3"}})),
                                       plan::known_accelerator("A100"));
  const std::string text = plan::format_plan(p, "stage x fsdp");
  for (const char* part : {"layout: stage 2 x data 1 x fsdp 2 x tensor 1 = 4 devices", "parameters (float32, the stage's)",
                           "gradients (float32, the stage's)", "Adam moments (2 x float32, FSDP shard of the stage's)",
                           "FSDP inside the stages: 2 pipelines (data 1 x fsdp 2) share the rows; each chunk's Adam "
                           "moments sharded over fsdp 2, its parameters and gradients whole",
                           "FSDP reduce-scatter, the stage's gradients", "FSDP all-gather, the stage's updated parameters"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " missing from:\n" << text;
  }
  EXPECT_EQ(text.find("FSDP gather buffers"), std::string::npos) << text;
  const nlohmann::json j = plan::plan_json(p, "stage x fsdp");
  EXPECT_EQ(j["pipeline"]["optimizer_shards"].get<int>(), 2);
  EXPECT_EQ(j["memory_bytes"]["adam_moments"].get<std::size_t>(), p.memory.adam_moments);
  EXPECT_LT(p.memory.adam_moments, p.memory.parameters + p.memory.gradients);
}

// A large vocabulary (GPT's tied table on both ends of a pipeline) and 2 sequences, one head: the
// state dominates, tensor parallelism is out, and FSDP over 2 still holds the whole table as a
// resident unit. Two stages with FSDP inside them (Adam's moments halved) fit where neither two
// stages nor FSDP alone does: the search proposes stage 2 x fsdp 2.
TEST(Plan, SearchProposesFsdpInsideTheStagesWhereOnlyThatFits) {
  const plan::LayoutSpec spec = spec_of(with(odd_gpt(), {{"NUM_LAYERS", "4"}, {"NUM_HEADS", "1"}, {"DIMS_PER_HEAD", "40"},
                                                         {"VOCAB_SIZE", "3000"}, {"PERCORE_BATCH_SIZE", "2"}}));
  ASSERT_EQ(spec.global_batch, 2);
  auto total = [&](int p, int f) {
    plan::LayoutSpec c = spec;
    if (p == 1) {
      plan::assign_mesh(c, f, 1, 1);
    } else {
      plan::assign_stage_mesh(c, p, 1, f);
    }
    return static_cast<double>(plan::device_memory(c).total());
  };
  const double stage_fsdp = total(2, 2);
  for (const auto& [p, f] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}}) {
    ASSERT_GT(total(p, f), stage_fsdp) << p << " x " << f;
  }
  const plan::MemoryLimits limits{stage_fsdp, 0};
  const std::optional<plan::LayoutSpec> found = plan::smallest_fitting_layout(spec, limits);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->describe(), "stage 2 x data 1 x fsdp 2 x tensor 1 = 4 devices (ICI [1,1,1] x DCN [2,1,2,1], 4 processes)");
  EXPECT_EQ(found->flags(), "--fdl.ICI_MESH_SHAPE=[1,1,1] --fdl.DCN_MESH_SHAPE=[2,1,2,1] --fdl.PERCORE_BATCH_SIZE=0.5 "
                            "--fdl.NUM_MICROBATCHES=1 --fdl.PIPELINE_SCHEDULE=1f1b");
  // Where four stages fit as well, on as many devices, the shallower pipeline wins (its bubble).
  const double both = std::max(total(4, 1), stage_fsdp);
  ASSERT_LT(both, std::min(total(2, 1), total(1, 2)));
  const std::optional<plan::LayoutSpec> tie = plan::smallest_fitting_layout(spec, {both, 0});
  ASSERT_TRUE(tie.has_value());
  EXPECT_EQ(tie->stages(), 2) << tie->describe();
  EXPECT_EQ(tie->along(MeshAxis::kFsdp), 2) << tie->describe();
  // Devices per process: fsdp first, then the stage axis.
  plan::LayoutSpec mesh = spec;
  plan::assign_stage_mesh(mesh, 2, 2, 2);
  EXPECT_EQ(mesh.ici, (device::MeshShape{1, 1, 2, 1}));
  EXPECT_EQ(mesh.dcn, (device::MeshShape{2, 1, 1, 1}));
  plan::assign_stage_mesh(mesh, 4, 8, 2);
  EXPECT_EQ(mesh.ici, (device::MeshShape{4, 1, 2, 1}));
  EXPECT_EQ(mesh.dcn, (device::MeshShape{1, 1, 1, 1}));
}

// "Will GPT175B fit on 256 H100s as ICI [1,8,1] x DCN [1,32,1], and how long is a step?"
TEST(Plan, Gpt175bOn256H100s) {
  const config::Experiment e = config::Experiment::named("GPT175B");
  plan::LayoutSpec spec = plan::layout_spec_of(e);
  const plan::Accelerator h100 = plan::known_accelerator("H100");
  spec.base_address_align_bytes = h100.base_address_align_bytes;
  const plan::Plan p = plan::make_plan(spec, h100);
  EXPECT_EQ(spec.devices(), 256);
  EXPECT_EQ(spec.global_batch, 6 * 256);
  // 175e9 float32 parameters over 256 devices: the shard, within its share of padding.
  const double params = static_cast<double>(models::ParameterLayout(spec.model, 1).parameter_count());
  EXPECT_NEAR(params, 175e9, 2e9);
  EXPECT_NEAR(static_cast<double>(p.memory.parameters), params * 4 / 256, 0.01 * params * 4 / 256);
  EXPECT_EQ(p.memory.adam_moments, 2 * p.memory.parameters);
  EXPECT_GT(p.memory.fsdp_resident, 0u);
  EXPECT_EQ(p.memory.weight_copy, p.memory.resident_floats * 2);  // bfloat16
  // About 1.08 TFLOP per token (Pax's estimate for 175B), 3.1M tokens a step.
  EXPECT_NEAR(p.flops_per_token, 1.08e12, 0.03e12);
  // Pax's SAVE_NOTHING recomputes every block's forward but the last's, less the MLP's output
  // projection (which the backward never reads): 8 of a block's 12 C^2 matmul parameters, a third
  // of their 6 FLOPs per token each, so about 2/9 more than the model's FLOPs.
  EXPECT_NEAR(p.recompute_flops_per_device / p.flops_per_device, 2.0 / 9, 0.01);
  EXPECT_NEAR(p.time.compute_s, (p.flops_per_device + p.recompute_flops_per_device) / (989.4e12 * 0.5), 1e-9);
  EXPECT_GT(p.time.step_s, p.time.compute_s);
  EXPECT_LT(p.time.step_s, 2 * p.time.compute_s);
  EXPECT_TRUE(p.time.unknown.empty());
  // Pax's layout and policy fit once each device's 6 sequences run as 2 sub-batches of 3, which the
  // plan chooses (the experiment names no NUM_SUB_BATCHES) and says so.
  EXPECT_EQ(p.spec.checkpoint_policy, models::CheckpointPolicy::kSaveNothing);
  EXPECT_EQ(p.spec.sub_batches, 2);
  ASSERT_TRUE(p.choice.has_value());
  EXPECT_NE(p.choice->find("NUM_SUB_BATCHES not given: CHECKPOINT_POLICY=SAVE_NOTHING NUM_SUB_BATCHES=2"), std::string::npos)
      << *p.choice;
  EXPECT_TRUE(p.fits) << p.verdict;
  EXPECT_LE(static_cast<double>(p.memory.total()), h100.memory_bytes);
  EXPECT_EQ(p.fits, p.verdict.rfind("fits:", 0) == 0);
  const std::string text = plan::format_plan(p, "GPT175B");
  EXPECT_NE(text.find("verdict: "), std::string::npos);
  const nlohmann::json j = plan::plan_json(p, "GPT175B");
  EXPECT_EQ(j["memory_bytes"]["total"].get<std::size_t>(), p.memory.total());
  EXPECT_EQ(j["layout"]["devices"].get<int>(), 256);
  EXPECT_EQ(j["layout"]["num_sub_batches"].get<int>(), 2);
  EXPECT_NE(text.find("chosen by the plan, NUM_SUB_BATCHES not given"), std::string::npos) << text;
}

// GPT5B at Pax's layout with Pax's policy fits as it is: nothing to choose.
TEST(Plan, Gpt5bWithPaxsPolicyFitsOn256H100s) {
  plan::LayoutSpec spec = plan::layout_spec_of(config::Experiment::named("GPT5B"));
  const plan::Accelerator h100 = plan::known_accelerator("H100");
  spec.base_address_align_bytes = h100.base_address_align_bytes;
  const plan::Plan p = plan::make_plan(spec, h100);
  EXPECT_EQ(p.spec.checkpoint_policy, models::CheckpointPolicy::kSaveDotWithNoBatchDim);
  EXPECT_EQ(p.spec.sub_batches, 1);
  EXPECT_FALSE(p.choice.has_value());
  EXPECT_TRUE(p.fits) << p.verdict;
  spec.checkpoint_policy = models::CheckpointPolicy::kSaveEverything;  // keeps more
  EXPECT_GT(plan::make_plan(spec, h100).memory.activations, p.memory.activations);
}

// Without a given policy or sub-batch count the plan picks the least recompute that fits, then the
// fewest sub-batches: checked against every (policy, count) candidate.
TEST(Plan, MemoryChoiceIsTheLeastRecomputeThatFits) {
  plan::Accelerator device = plan::known_accelerator("H100");
  const auto spec_with = [](const std::string& percore) {
    return spec_of({{"FPROP_DTYPE", "float32"}, {"NUM_LAYERS", "4"}, {"MODEL_DIMS", "512"}, {"HIDDEN_DIMS", "2048"},
                    {"NUM_HEADS", "8"}, {"DIMS_PER_HEAD", "64"}, {"MAX_SEQ_LEN", "1024"}, {"VOCAB_SIZE", "1000"},
                    {"PERCORE_BATCH_SIZE", percore}});
  };
  const auto memory = [&](plan::LayoutSpec s, const std::string& policy, int k) {
    s.checkpoint_policy = models::checkpoint_policy_from_name(policy);
    s.sub_batches = k;
    return static_cast<double>(plan::device_memory(s).total());
  };
  const auto expect_least_recompute = [&](const plan::LayoutSpec& spec, double bytes) -> plan::Plan {
    device.memory_bytes = bytes;
    const plan::Plan p = plan::make_plan(spec, device);
    EXPECT_TRUE(p.choice.has_value()) << p.verdict;
    EXPECT_TRUE(p.fits) << p.verdict;
    const auto key = [](double flops, int k) { return std::make_pair(flops, k); };
    const auto chosen = key(p.recompute_flops_per_device, p.spec.sub_batches);
    for (const std::string& name : models::checkpoint_policy_names()) {
      for (int k = 1; k <= spec.group_sequences(); ++k) {
        if (spec.group_sequences() % k != 0 || memory(spec, name, k) > bytes) continue;
        plan::LayoutSpec other = spec;
        other.checkpoint_policy = models::checkpoint_policy_from_name(name);
        other.sub_batches = k;
        other.checkpoint_policy_given = other.sub_batches_given = true;
        EXPECT_LE(chosen, key(plan::make_plan(other, device).recompute_flops_per_device, k)) << name << " x " << k;
      }
    }
    return p;
  };
  const plan::LayoutSpec four = spec_with("4");
  device.memory_bytes = 1e12;
  EXPECT_FALSE(plan::make_plan(four, device).choice.has_value());  // fits as it is: nothing chosen
  // Room for SAVE_EVERYTHING's state and one sequence's activations: no recompute, sub-batches.
  const plan::Plan split = expect_least_recompute(four, memory(four, "SAVE_EVERYTHING", 4));
  EXPECT_EQ(split.recompute_flops_per_device, 0.0);
  EXPECT_GT(split.spec.sub_batches, 1);
  // One sequence, less room than SAVE_EVERYTHING needs: a policy that recomputes.
  const plan::LayoutSpec one = spec_with("1");
  const plan::Plan remat = expect_least_recompute(
      one, (memory(one, "SAVE_EVERYTHING", 1) + memory(one, "SAVE_NOTHING", 1)) / 2);
  EXPECT_EQ(remat.spec.sub_batches, 1);
  EXPECT_TRUE(models::rematerializes(remat.spec.checkpoint_policy));
}

}  // namespace
}  // namespace paxocl::testing
