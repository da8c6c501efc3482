// Shared by the libFuzzer targets in fuzz/ (docs/hardening.md).
//
// The readers under test take paths, so every target writes its input into a scratch directory of
// its own process (under /dev/shm when there is one: no disk traffic), removed when the process
// exits normally. The project's documented errors (ConfigError, DataError and subclasses such as
// FileError) are the expected answer to bad input; everything else is a finding:
// a crash, a sanitizer report, another exception escaping (std::terminate aborts), a huge
// allocation (libFuzzer's -rss_limit_mb / -malloc_limit_mb) or a hang (-timeout).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "models/gpt_config.h"
#include "models/llama_config.h"
#include "models/weights_io.h"

namespace paxocl::fuzz {

// This process's scratch directory (created on first use; removed at exit).
const std::filesystem::path& scratch_dir();

// Writes `bytes` to `file`, replacing it (plain writes: atomicity is not what is under test).
void write_file(const std::filesystem::path& file, std::string_view bytes);
inline void write_file(const std::filesystem::path& file, const std::uint8_t* data, std::size_t size) {
  write_file(file, std::string_view(reinterpret_cast<const char*>(data), size));
}
std::string read_file(const std::filesystem::path& file);

// Targets whose input is several files: byte 0 is a flags byte, then every section but the last is
// a 4-byte little-endian length n (clamped to what is left) and n bytes; the last section is the
// rest. Missing bytes give empty sections (and flags 0), so every input splits.
struct Sections {
  std::uint8_t flags = 0;
  std::vector<std::string_view> parts;
};
Sections split_sections(const std::uint8_t* data, std::size_t size, std::size_t count);
// The input split_sections(…, parts.size()) splits into these: for make_seeds.
std::string join_sections(std::uint8_t flags, const std::vector<std::string>& parts);

// A property the target checks: when it does not hold, print `what` and abort (a libFuzzer crash).
void require(bool ok, std::string_view what);

// The smallest GPT the weight and checkpoint targets use (their seed corpora are written for it):
// 1 layer, C=8, H=32, 2 heads of 4, 4 positions, vocabulary 16 (no padding rows).
models::GptConfig tiny_config();
inline constexpr int kTinyHeads = 2;
// The smallest LLaMA fuzz_hf_llama's seeds hold: 1 layer, C=8, F=16, 2 query heads and 1 key/value
// head of 4, 4 positions, vocabulary 16.
models::LlamaConfig tiny_llama_config();
// Deterministic weights for `config` (alignment 1): small distinct values; seeds and templates.
models::HostWeights tiny_weights(const models::ModelConfig& config);

}  // namespace paxocl::fuzz
