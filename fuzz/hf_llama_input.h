// The input of fuzz_hf_llama, shared with make_seeds: fuzz::split_sections into kSections sections,
// written as these files of a Hugging Face LLaMA checkpoint directory (models/hf_llama_io.h), and
// the flag bits that vary how the checkpoint is laid out and loaded.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace paxocl::fuzz::hf_llama_input {

inline constexpr std::size_t kSections = 4;
// Section i is written to kFiles[i] in the checkpoint directory.
inline constexpr std::array<const char*, kSections> kFiles = {
    "config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
inline constexpr std::size_t kConfig = 0, kIndex = 1, kShard1 = 2, kShard2 = 3;

// Shard 1's bytes are also written as model.safetensors (the single-file form; the reader then
// ignores the index).
inline constexpr std::uint8_t kSingleFile = 1;
// Load the shard 1 file by its path (a .safetensors file with config.json beside it), not the directory.
inline constexpr std::uint8_t kLoadFile = 2;
// Write no index file.
inline constexpr std::uint8_t kNoIndex = 4;
// Load with an alignment of 16 floats (gaps between the tensors of the layout), not 1.
inline constexpr std::uint8_t kAligned = 8;

}  // namespace paxocl::fuzz::hf_llama_input
