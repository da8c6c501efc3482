#include "fuzz/fuzz_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

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

}  // namespace paxocl::fuzz
