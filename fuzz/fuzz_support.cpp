#include "fuzz/fuzz_support.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "models/parameter_layout.h"

namespace paxocl::fuzz {

namespace fs = std::filesystem;

namespace {
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    path = base / ("paxocl-fuzz-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
}  // namespace

const fs::path& scratch_dir() {
  static const ScratchDir dir;
  return dir.path;
}

void write_file(const fs::path& file, std::string_view bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  require(static_cast<bool>(out), "cannot write the fuzz input to the scratch directory");
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  require(static_cast<bool>(in), "cannot read back a file the target wrote");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Sections split_sections(const std::uint8_t* data, std::size_t size, std::size_t count) {
  Sections s;
  std::size_t pos = 0;
  if (size > 0) s.flags = data[pos++];
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t n = size - pos;
    if (i + 1 < count) {
      std::uint32_t length = 0;
      for (int b = 0; b < 4 && pos < size; ++b) length |= static_cast<std::uint32_t>(data[pos++]) << (8 * b);
      n = std::min<std::size_t>(length, size - pos);
    }
    s.parts.emplace_back(reinterpret_cast<const char*>(data) + pos, n);
    pos += n;
  }
  return s;
}

std::string join_sections(std::uint8_t flags, const std::vector<std::string>& parts) {
  std::string out(1, static_cast<char>(flags));
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i + 1 < parts.size()) {
      for (int b = 0; b < 4; ++b) out += static_cast<char>(parts[i].size() >> (8 * b));
    }
    out += parts[i];
  }
  return out;
}

void require(bool ok, std::string_view what) {
  if (ok) return;
  std::fprintf(stderr, "FUZZ PROPERTY VIOLATED: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

models::GptConfig tiny_config() {
  models::GptConfig c;
  c.num_layers = 1;
  c.model_dims = 8;
  c.hidden_dims = 32;
  c.num_heads = kTinyHeads;
  c.dims_per_head = 4;
  c.max_seq_len = 4;
  c.vocab_size = 16;
  c.padded_vocab_size = 16;
  return c;
}

models::LlamaConfig tiny_llama_config() {
  models::LlamaConfig c;
  c.num_layers = 1;
  c.model_dims = 8;
  c.hidden_dims = 16;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.dims_per_head = 4;
  c.max_seq_len = 4;
  c.vocab_size = 16;
  return c;
}

models::HostWeights tiny_weights(const models::ModelConfig& config) {
  models::HostWeights w{config, 1, {}};
  w.data.resize(models::ParameterLayout(config, 1).total());
  for (std::size_t i = 0; i < w.data.size(); ++i) w.data[i] = static_cast<float>(i % 97) / 64.0f - 0.5f;
  return w;
}

}  // namespace paxocl::fuzz
