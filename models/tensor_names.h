// The GPT's tensor names, defined once. ParameterLayout creates the tensors under these names,
// GptModel binds its layers to them, weight files (weights_io.cpp) map them to llm.c's order and to
// Hugging Face's names, and checkpoints store them (checkpoint/ takes them from the layout).
// A block's tensors are "<kBlockPrefix><l>.<suffix>" (ParameterLayout::layer_name), e.g. "h3.mlp.fc.w".
#pragma once

#include <array>
#include <string_view>

namespace paxocl::models::tensor_names {

inline constexpr char kBlockPrefix = 'h';

// Outside the blocks.
inline constexpr std::string_view kTokenEmbedding = "wte";  // tied to the LM head
inline constexpr std::string_view kPositionEmbedding = "wpe";
inline constexpr std::string_view kFinalNormScale = "lnf.scale";
inline constexpr std::string_view kFinalNormBias = "lnf.bias";

// Inside block l (suffixes of ParameterLayout::layer_name(l, suffix)).
inline constexpr std::string_view kLn1Scale = "ln1.scale";
inline constexpr std::string_view kLn1Bias = "ln1.bias";
inline constexpr std::string_view kQkvWeight = "attn.qkv.w";
inline constexpr std::string_view kQkvBias = "attn.qkv.b";
inline constexpr std::string_view kAttnProjWeight = "attn.proj.w";
inline constexpr std::string_view kAttnProjBias = "attn.proj.b";
inline constexpr std::string_view kLn2Scale = "ln2.scale";
inline constexpr std::string_view kLn2Bias = "ln2.bias";
inline constexpr std::string_view kFcWeight = "mlp.fc.w";
inline constexpr std::string_view kFcBias = "mlp.fc.b";
inline constexpr std::string_view kFcProjWeight = "mlp.proj.w";
inline constexpr std::string_view kFcProjBias = "mlp.proj.b";
// An SSM block's mixer (praxis's SSM variables C_re, C_im, D) in place of attn.*.
inline constexpr std::string_view kSsmCRe = "ssm.c_re";
inline constexpr std::string_view kSsmCIm = "ssm.c_im";
inline constexpr std::string_view kSsmD = "ssm.d";

// Hugging Face GPT-2 (models/weights_io.h): GPT2LMHeadModel prefixes every name with kHfPrefix,
// GPT2Model does not; a block's tensors are "<kBlockPrefix><l>.<suffix>", e.g. "h.3.mlp.c_fc.bias".
namespace hf {
inline constexpr std::string_view kPrefix = "transformer.";
inline constexpr std::string_view kBlockPrefix = "h.";
inline constexpr std::string_view kTokenEmbedding = "wte.weight";
inline constexpr std::string_view kPositionEmbedding = "wpe.weight";
inline constexpr std::string_view kFinalNormScale = "ln_f.weight";
inline constexpr std::string_view kFinalNormBias = "ln_f.bias";
inline constexpr std::string_view kMlpFcWeight = "mlp.c_fc.weight";  // its shape gives HIDDEN_DIMS

// A block tensor of a Hugging Face file and ours; conv1d: HF's Conv1D stores it (in, out), the
// transpose of our (out, in). In the order save_safetensors writes a block.
struct BlockTensor {
  std::string_view hf, ours;
  bool conv1d;
};
inline constexpr std::array<BlockTensor, 12> kBlockTensors{{
    {"ln_1.weight", kLn1Scale, false},        {"ln_1.bias", kLn1Bias, false},
    {"attn.c_attn.weight", kQkvWeight, true}, {"attn.c_attn.bias", kQkvBias, false},
    {"attn.c_proj.weight", kAttnProjWeight, true}, {"attn.c_proj.bias", kAttnProjBias, false},
    {"ln_2.weight", kLn2Scale, false},        {"ln_2.bias", kLn2Bias, false},
    {kMlpFcWeight, kFcWeight, true},          {"mlp.c_fc.bias", kFcBias, false},
    {"mlp.c_proj.weight", kFcProjWeight, true}, {"mlp.c_proj.bias", kFcProjBias, false},
}};
// An SSM block (BLOCK_KINDS) stores, in place of attn.c_attn and attn.c_proj, praxis's variables
// (Hugging Face has no S4D block; pax-ocl and any safetensors reader read them):
// "h.{l}.ssm.C_re" (N, C), "h.{l}.ssm.C_im" (N, C), "h.{l}.ssm.D" (C). The frozen hyper-parameters
// go into the file's __metadata__ under these keys.
inline constexpr std::array<BlockTensor, 3> kSsmTensors{{
    {"ssm.C_re", kSsmCRe, false}, {"ssm.C_im", kSsmCIm, false}, {"ssm.D", kSsmD, false}}};
// Every other setting that shapes a GPT's computation goes there too (gpt_file_settings.h).
inline constexpr std::string_view kMetaBlockKinds = "pax_ocl.block_kinds";
inline constexpr std::string_view kMetaSsmStepSize = "pax_ocl.ssm_step_size";
inline constexpr std::string_view kMetaSsmHippoType = "pax_ocl.ssm_hippo_type";
inline constexpr std::string_view kMetaSsmLMax = "pax_ocl.ssm_l_max";
}  // namespace hf

// The LLaMA family (llama_config.h). Blocks use the same prefix and layer_name scheme.
namespace llama {
inline constexpr std::string_view kTokenEmbedding = "embed";
inline constexpr std::string_view kLmHead = "lm_head";
inline constexpr std::string_view kFinalNormScale = "norm.scale";
inline constexpr std::string_view kAttnNormScale = "attn_norm.scale";
inline constexpr std::string_view kQkvWeight = "attn.qkv.w";
inline constexpr std::string_view kAttnProjWeight = "attn.proj.w";
inline constexpr std::string_view kMlpNormScale = "mlp_norm.scale";
inline constexpr std::string_view kGateUpWeight = "mlp.gate_up.w";
inline constexpr std::string_view kDownWeight = "mlp.down.w";
}  // namespace llama

}  // namespace paxocl::models::tensor_names
