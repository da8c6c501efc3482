#include "inputs/tokenizer.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/errors.h"
#include "common/regular_file.h"

namespace paxocl::inputs {

namespace {

// The libpaxocl_spm bridge (inputs/spm_bridge.cpp), loaded once into a link-map namespace of its
// own. Buffers it returns come from that namespace's malloc and go back through `release`.
struct Bridge {
  void* (*load)(const char*, char*, std::size_t) = nullptr;
  void (*free_model)(void*) = nullptr;
  void (*release)(void*) = nullptr;
  int (*vocab_size)(void*) = nullptr;
  int (*eos_id)(void*) = nullptr;
  int (*splits_at_whitespace)(void*) = nullptr;
  int (*encode)(void*, const char*, std::size_t, int**, std::size_t*, char*, std::size_t) = nullptr;
  int (*decode)(void*, const int*, std::size_t, char**, char*, std::size_t) = nullptr;
  int (*train)(const char*, const char* const*, const char* const*, std::size_t, char*, std::size_t) = nullptr;
};

std::string bridge_path() {
  if (const char* env = std::getenv("PAX_OCL_SPM_BRIDGE"); env != nullptr && *env != '\0') return env;
  // Next to the executable (an installed pax-ocl), else where the build put it.
  char exe[4096] = {};
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    const std::filesystem::path beside = std::filesystem::path(std::string(exe, static_cast<std::size_t>(n))).parent_path() /
                                         "libpaxocl_spm.so";
    if (std::filesystem::exists(beside)) return beside.string();
  }
  return PAXOCL_SPM_BRIDGE;
}

const Bridge& bridge() {
  static Bridge b;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string path = bridge_path();
    // dlmopen rather than dlopen(RTLD_DEEPBIND): the sanitizer runtimes refuse DEEPBIND, and deep
    // binding still shared the C++ runtime's globals with the executable.
    void* handle = ::dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      throw DataError(fmt::format("cannot load the SentencePiece bridge {} ({}); rebuild pax-ocl or set PAX_OCL_SPM_BRIDGE",
                                  path, ::dlerror()));
    }
    auto sym = [&](const char* name) {
      void* f = ::dlsym(handle, name);
      if (f == nullptr) throw DataError(fmt::format("{}: missing symbol {}", path, name));
      return f;
    };
    b.load = reinterpret_cast<decltype(b.load)>(sym("paxocl_spm_load"));
    b.free_model = reinterpret_cast<decltype(b.free_model)>(sym("paxocl_spm_free"));
    b.release = reinterpret_cast<decltype(b.release)>(sym("paxocl_spm_release"));
    b.vocab_size = reinterpret_cast<decltype(b.vocab_size)>(sym("paxocl_spm_vocab_size"));
    b.eos_id = reinterpret_cast<decltype(b.eos_id)>(sym("paxocl_spm_eos_id"));
    b.splits_at_whitespace = reinterpret_cast<decltype(b.splits_at_whitespace)>(sym("paxocl_spm_splits_at_whitespace"));
    b.encode = reinterpret_cast<decltype(b.encode)>(sym("paxocl_spm_encode"));
    b.decode = reinterpret_cast<decltype(b.decode)>(sym("paxocl_spm_decode"));
    b.train = reinterpret_cast<decltype(b.train)>(sym("paxocl_spm_train_lines"));
  });
  return b;
}

}  // namespace

Tokenizer::Tokenizer(const std::filesystem::path& model) : path_(model) {
  // SentencePiece opens the file by name: a FIFO would block it.
  if (const std::string why = why_not_regular_file(model); !why.empty()) {
    throw DataError(fmt::format("tokenizer {}: {}; run `pax-ocl data prepare` or pass a SentencePiece .model",
                                model.string(), why));
  }
  char err[512] = {};
  sp_ = bridge().load(model.c_str(), err, sizeof err);
  if (sp_ == nullptr) throw DataError(fmt::format("tokenizer {}: not a SentencePiece model ({})", model.string(), err));
}

Tokenizer::~Tokenizer() {
  if (sp_ != nullptr) bridge().free_model(sp_);
}

Tokenizer::Tokenizer(Tokenizer&& other) noexcept : sp_(std::exchange(other.sp_, nullptr)), path_(std::move(other.path_)) {}

int Tokenizer::vocab_size() const { return bridge().vocab_size(sp_); }
int Tokenizer::eos_id() const { return bridge().eos_id(sp_); }
bool Tokenizer::splits_at_whitespace() const { return bridge().splits_at_whitespace(sp_) != 0; }

std::vector<int> Tokenizer::encode(std::string_view text) const {
  int* ids = nullptr;
  std::size_t count = 0;
  char err[512] = {};
  if (bridge().encode(sp_, text.data(), text.size(), &ids, &count, err, sizeof err) != 0) {
    throw DataError(fmt::format("tokenizer {}: encoding failed ({})", path_.string(), err));
  }
  std::vector<int> out(ids, ids + count);
  bridge().release(ids);
  return out;
}

std::string Tokenizer::decode(std::span<const int> ids) const {
  char* text = nullptr;
  char err[512] = {};
  if (bridge().decode(sp_, ids.data(), ids.size(), &text, err, sizeof err) != 0) {
    throw DataError(fmt::format("tokenizer {}: decoding failed ({})", path_.string(), err));
  }
  std::string out(text);
  bridge().release(text);
  return out;
}

void train_tokenizer(const std::filesystem::path& text_file, const std::filesystem::path& model_prefix, int vocab_size,
                     const std::string& model_type) {
  if (model_type != "bpe" && model_type != "unigram") {
    throw ConfigError(fmt::format("--model_type={}: use bpe or unigram", model_type));
  }
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  // Options as key/value pairs (see paxocl_spm_train_lines: paths may hold spaces or commas).
  const std::vector<std::pair<std::string, std::string>> options = {
      {"model_prefix", model_prefix.string()}, {"vocab_size", std::to_string(vocab_size)},
      {"model_type", model_type},              {"character_coverage", "1.0"},
      {"num_threads", std::to_string(threads)}, {"minloglevel", "2"}};
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : options) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  char err[1024] = {};
  if (bridge().train(text_file.c_str(), keys.data(), values.data(), options.size(), err, sizeof err) != 0) {
    throw DataError(fmt::format("SentencePiece training on {} failed: {}", text_file.string(), err));
  }
}

}  // namespace paxocl::inputs
