// The settings that define what a model computes, as an experiment records them: a checkpoint
// resumes (or is evaluated, exported) only under the same ones, since parameters trained for one
// model are wrong numbers for another even when every tensor's shape happens to fit (fewer layers
// drop blocks; 8 heads of 32 reuse 4 heads of 64; VOCAB_SIZE 4000 and 4096 pad to the same rows;
// another ROPE_BASE or NORM_EPSILON changes the activations).
//
// Defining: ARCHITECTURE, NUM_LAYERS, MODEL_DIMS, HIDDEN_DIMS, NUM_HEADS, DIMS_PER_HEAD, VOCAB_SIZE,
// TOKENIZER (the ids' meaning); gpt: MAX_SEQ_LEN (the position embedding's rows), BLOCK_KINDS and,
// with SSM blocks, SSM_NHEADS, SSM_STEP_SIZE, SSM_HIPPO_TYPE; llama: NUM_KV_HEADS (0 read as
// NUM_HEADS), ROPE_BASE, NORM_EPSILON. Everything else (batch, learning rate, steps, mesh, dtypes,
// INIT_STD, which only draws the first parameters, SSM_CONVOLUTION, an implementation choice) may
// change between runs of one job.
#pragma once

#include <string>
#include <vector>

#include "config/experiment.h"

namespace paxocl::config {

struct SettingDifference {
  std::string name;       // "NUM_LAYERS"
  std::string saved;      // "4"
  std::string requested;  // "2"; "(unused)" when the setting does not apply to that model
};

// The defining settings whose values differ, in the order above; empty when the models are the
// same. Throws ConfigError when either experiment does not describe a valid model.
std::vector<SettingDifference> model_setting_differences(const Experiment& saved, const Experiment& requested);

// "NUM_LAYERS 4 (saved) vs 2 (requested), ROPE_BASE 10000 vs 500000": for one-line messages.
std::string describe_differences(const std::vector<SettingDifference>& differences);

}  // namespace paxocl::config
