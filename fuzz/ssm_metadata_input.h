// The input of fuzz_ssm_metadata, shared with make_seeds. Byte 0: the low 2 bits pick one of
// models() (whose tensors the file holds: they fix the block kinds and the state count N), bit 2
// (kGiveHeads) loads with NUM_HEADS given. The rest is the file's __metadata__ as lines "key=value"
// ('\n' between them; split at the first '='; a line without one is a key with an empty value; a
// repeated key keeps its last value), the string map pax-ocl's export writes (gpt_file_settings.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "models/gpt_config.h"

namespace paxocl::fuzz::ssm_metadata_input {

inline constexpr std::uint8_t kModelBits = 3;
inline constexpr std::uint8_t kGiveHeads = 4;

// fuzz::tiny_config() shapes with: an attention,ssm hybrid (N=4, ss4d-legs, SSM_L_MAX 8), a pure
// SSM (N=2, ss4d-1d, SSM_L_MAX 0), an ssm,attention hybrid (N=3, ss4d-lagt, SSM_L_MAX 4), and no SSM.
const std::array<models::GptConfig, 4>& models();

nlohmann::ordered_json parse_metadata(std::string_view lines);
std::string metadata_lines(const nlohmann::json& metadata);  // the inverse, for string maps

}  // namespace paxocl::fuzz::ssm_metadata_input
