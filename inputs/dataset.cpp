#include "inputs/dataset.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/atomic_file.h"
#include "common/bounded_json.h"
#include "common/errors.h"
#include "common/file_lock.h"
#include "common/unique_fd.h"
#include "inputs/prefetch_input.h"
#include "inputs/synthetic_stream.h"
#include "inputs/token_shard.h"
#include "inputs/tokenizer.h"
#include "inputs/windowed_input.h"

namespace paxocl::inputs {

namespace fs = std::filesystem;

namespace {

// Every document's tokens followed by EOS, in order.
std::vector<std::uint32_t> encode_documents(const Tokenizer& tokenizer, const std::vector<Document>& docs) {
  std::vector<std::uint32_t> tokens;
  for (const Document& d : docs) {
    for (int id : tokenizer.encode(d.text)) tokens.push_back(static_cast<std::uint32_t>(id));
    tokens.push_back(static_cast<std::uint32_t>(tokenizer.eos_id()));
  }
  return tokens;
}

// Removes a directory when the scope ends, unless released (a failed preparation leaves nothing).
struct RemoveOnExit {
  fs::path dir;
  ~RemoveOnExit() {
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
};

// DIR as an absolute path without a trailing separator, so that its siblings are its siblings.
fs::path normalized_dir(const fs::path& dir) {
  fs::path d = fs::absolute(dir).lexically_normal();
  return d.has_filename() ? d : d.parent_path();
}

fs::path lock_file(const fs::path& dir) { return fs::path(dir).concat(".lock"); }

// A new empty directory `DIR.<tag>.XXXXXX` beside DIR. Made with mkdir (the umask applies, as to
// any directory), not mkdtemp, whose 0700 would lock other users out of a shared data cache once
// the directory becomes the dataset.
fs::path make_sibling_dir(const fs::path& dir, const char* tag) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::random_device random;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = dir.string() + "." + tag + ".";
    for (int i = 0; i < 6; ++i) name += kChars[random() % (sizeof kChars - 1)];
    if (::mkdir(name.c_str(), 0777) == 0) return name;
    if (errno != EEXIST) break;
  }
  throw DataError(fmt::format("cannot create a directory beside {}: {}", dir.string(), std::strerror(errno)));
}

bool is_dataset(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(fs::symlink_status(dir, ec)) && fs::is_regular_file(dir / "dataset.json", ec);
}

// prepare replaces DIR: only when it is missing or a dataset.
void check_replaceable(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec)) || is_dataset(dir)) return;
  throw ConfigError(fmt::format("{} exists and is not a prepared dataset (no dataset.json); preparing replaces only "
                                "datasets: choose a new --output_dir, or remove this one yourself",
                                dir.string()));
}

// fsync of every file directly in `dir` (SentencePiece writes its model without), then of `dir`.
void sync_files_in(const fs::path& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const UniqueFd fd(::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC));
    const bool ok = fd.valid() && ::fsync(fd.get()) == 0;
    const int err = errno;
    if (!ok) throw DataError(fmt::format("cannot sync {}: {}", entry.path().string(), std::strerror(err)));
  }
  sync_directory(dir);
}

// Puts the finished `fresh` in place of `dir`: the old dataset aside, the new one in, the old one
// deleted. If the new one cannot go in, the old one is put back.
void install(const fs::path& fresh, const fs::path& dir) {
  std::error_code ec;
  fs::path old;
  if (fs::exists(fs::symlink_status(dir, ec))) {
    old = make_sibling_dir(dir, "old");
    if (::rename(dir.c_str(), old.c_str()) != 0) {  // onto the empty directory, which it replaces
      const int err = errno;
      fs::remove(old, ec);
      throw DataError(fmt::format("cannot move the old dataset {} aside: {}", dir.string(), std::strerror(err)));
    }
  }
  if (::rename(fresh.c_str(), dir.c_str()) != 0) {
    const int err = errno;
    if (!old.empty()) ::rename(old.c_str(), dir.c_str());
    throw DataError(fmt::format("cannot move the dataset into {}: {}", dir.string(), std::strerror(err)));
  }
  sync_directory(dir.parent_path());
  if (!old.empty()) {
    fs::remove_all(old, ec);
    if (ec) spdlog::warn("the replaced dataset {} could not be deleted ({}); remove it by hand", old.string(), ec.message());
  }
}

// The preparation itself; the caller holds DIR's lock.
DatasetInfo prepare_locked(const Corpus& corpus, const PrepareOptions& options, const fs::path& dir,
                           const std::string& source) {
  check_replaceable(dir);
  const fs::path tmp = make_sibling_dir(dir, "tmp");
  RemoveOnExit cleanup{tmp};
  std::error_code ec;
  if (options.spm_model) {
    fs::copy_file(*options.spm_model, tmp / "tokenizer.model", ec);
    if (ec) throw DataError(fmt::format("cannot read SentencePiece model {}: {}", options.spm_model->string(), ec.message()));
  } else {
    const fs::path text = tmp / "tokenizer_training.txt";
    {
      AtomicFile out(text);  // errors name the file and the reason (e.g. No space left on device)
      for (const Document& d : corpus.train) {
        out.write(d.text);
        out.write("\n");
      }
      out.commit();
    }
    train_tokenizer(text, tmp / "tokenizer", options.vocab_size, options.model_type);
    fs::remove(text, ec);
  }
  const Tokenizer tokenizer(tmp / "tokenizer.model");
  DatasetInfo info;
  info.source = source;
  info.vocab_size = tokenizer.vocab_size();
  info.train_documents = corpus.train.size();
  info.validation_documents = corpus.validation.size();
  const auto train = encode_documents(tokenizer, corpus.train);
  info.train_tokens = train.size();
  write_token_shard(tmp / "train.tokens", train, static_cast<std::uint32_t>(info.vocab_size));
  if (!corpus.validation.empty()) {
    const auto validation = encode_documents(tokenizer, corpus.validation);
    info.validation_tokens = validation.size();
    write_token_shard(tmp / "validation.tokens", validation, static_cast<std::uint32_t>(info.vocab_size));
  }
  const nlohmann::json j = {{"source", info.source},
                            {"vocab_size", info.vocab_size},
                            {"model_type", options.spm_model ? "given" : options.model_type},
                            {"train_documents", info.train_documents},
                            {"validation_documents", info.validation_documents},
                            {"train_tokens", info.train_tokens},
                            {"validation_tokens", info.validation_tokens},
                            {"eos_id", tokenizer.eos_id()},
                            {"packing", "concat-then-split, EOS after every document"}};
  write_file_atomically(tmp / "dataset.json", j.dump(2) + "\n");
  sync_files_in(tmp);
  install(tmp, dir);
  cleanup.dir.clear();
  return info;
}

// Creates DIR's parent and opens DIR's lock file in it.
FileLock open_lock(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  if (ec) throw DataError(fmt::format("cannot create {}: {}", dir.parent_path().string(), ec.message()));
  return FileLock(lock_file(dir));
}

// Whether `entry` is `DIR.<tag>.XXXXXX` as make_sibling_dir names them.
bool is_sibling_dir(const fs::path& entry, const fs::path& dir, const std::string& tag) {
  const std::string name = entry.filename().string(), prefix = dir.filename().string() + "." + tag + ".";
  return name.size() == prefix.size() + 6 && name.compare(0, prefix.size(), prefix) == 0 &&
         std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                     [](unsigned char c) { return std::isalnum(c) != 0; });
}

// What an interrupted preparation left beside DIR (only the lock's holder makes these): a
// `DIR.old.*` dataset while DIR is missing (killed between the two renames) goes back in place;
// the rest (`DIR.tmp.*`, other `DIR.old.*`) is deleted.
void recover_interrupted(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(dir.parent_path(), ec)) {
    if (is_sibling_dir(entry.path(), dir, "tmp") || is_sibling_dir(entry.path(), dir, "old")) stale.push_back(entry.path());
  }
  for (const fs::path& p : stale) {
    if (!fs::exists(fs::symlink_status(dir, ec)) && is_sibling_dir(p, dir, "old") && is_dataset(p) &&
        ::rename(p.c_str(), dir.c_str()) == 0) {
      spdlog::warn("{} was missing after an interrupted preparation; put {} back", dir.string(), p.string());
      continue;
    }
    spdlog::info("removing {}, left by an interrupted preparation", p.string());
    fs::remove_all(p, ec);
  }
}

// Takes the lock (saying so when another process holds it), then tidies up after interrupted runs.
void acquire(FileLock& lock, const fs::path& dir) {
  if (!lock.try_lock()) {
    spdlog::info("waiting for another process preparing {} (lock {})", dir.string(), lock.path().string());
    lock.lock();
  }
  recover_interrupted(dir);
}

}  // namespace

DatasetInfo prepare_dataset(const Corpus& corpus, const PrepareOptions& options, const std::string& source) {
  const fs::path dir = normalized_dir(options.output_dir);
  check_replaceable(dir);  // before waiting for the lock (checked again under it)
  FileLock lock = open_lock(dir);
  acquire(lock, dir);
  return prepare_locked(corpus, options, dir, source);
}

bool ensure_dataset(const PrepareOptions& options, const std::function<Corpus()>& read_corpus, const std::string& source) {
  const fs::path dir = normalized_dir(options.output_dir);
  if (is_dataset(dir)) return false;  // whole or absent: datasets appear by rename
  FileLock lock = open_lock(dir);
  acquire(lock, dir);
  if (is_dataset(dir)) {
    spdlog::info("using {}, prepared by another process meanwhile", dir.string());
    return false;
  }
  prepare_locked(read_corpus(), options, dir, source);
  return true;
}

DatasetInfo read_dataset_info(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir / "dataset.json", ec)) {  // anything else there is refused by the read below
    throw DataError(fmt::format("{} is not a prepared dataset (no dataset.json); create one with `pax-ocl data prepare`",
                                dir.string()));
  }
  try {
    const nlohmann::json j = read_json_file_bounded(dir / "dataset.json", kMaxJsonDepth, 1 << 20);
    DatasetInfo info;
    info.source = j.at("source");
    info.vocab_size = j.at("vocab_size");
    info.train_documents = j.at("train_documents");
    info.validation_documents = j.at("validation_documents");
    info.train_tokens = j.at("train_tokens");
    info.validation_tokens = j.at("validation_tokens");
    return info;
  } catch (const std::exception& e) {  // std::invalid_argument (syntax, depth, size) or nlohmann's type errors
    throw DataError(fmt::format("{}/dataset.json is malformed: {}", dir.string(), e.what()));
  }
}

fs::path default_data_root() {
  if (const char* env = std::getenv("PAX_OCL_DATA_DIR"); env != nullptr && *env != '\0') return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') return fs::path(xdg) / "pax-ocl" / "data";
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr ? home : ".") / ".cache" / "pax-ocl" / "data";
}

fs::path prepared_kjv(const fs::path& root, int vocab_size, const std::string& model_type) {
  const PrepareOptions options{root / fmt::format("kjv-{}-{}", model_type, vocab_size), vocab_size, model_type, std::nullopt};
  const bool prepared = ensure_dataset(
      options,
      [&] {
        spdlog::info("preparing the KJV corpus for a {} tokenizer of {} pieces in {} (first use only)", model_type,
                     vocab_size, options.output_dir.string());
        return read_kjv();
      },
      "kjv");
  if (!prepared) spdlog::debug("using the prepared KJV corpus in {}", options.output_dir.string());
  return options.output_dir;
}

std::vector<fs::path> llmc_split_files(const fs::path& dir, const std::string& split) {
  const char* pattern = split == "train" ? "*_train*.bin" : "*_val*.bin";
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // FNM_PERIOD: a leading dot is not matched by `*`, as glob does not list hidden files.
    if (::fnmatch(pattern, name.c_str(), FNM_PERIOD) == 0 && entry.is_regular_file(ec)) files.push_back(entry.path());
  }
  if (ec) throw DataError(fmt::format("cannot list {}: {}", dir.string(), ec.message()));
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

// The token stream of a directory given as DATA: a prepared dataset, or llm.c's files.
TokenStream directory_stream(const fs::path& dir, const std::string& split, int vocab_size) {
  if (!fs::is_regular_file(dir / "dataset.json")) {
    if (!llmc_split_files(dir, "train").empty()) {
      const std::vector<fs::path> files = llmc_split_files(dir, split);
      if (files.empty()) {
        throw DataError(fmt::format("{} has llm.c training files but no {} files ({})", dir.string(), split,
                                    split == "train" ? "*_train*.bin" : "*_val*.bin"));
      }
      return TokenStream::from_shards(files, static_cast<std::uint32_t>(vocab_size));
    }
    throw DataError(fmt::format("{} is neither a prepared dataset (no dataset.json; create one with `pax-ocl data "
                                "prepare`) nor a directory of llm.c token files (*_train*.bin, *_val*.bin)",
                                dir.string()));
  }
  const DatasetInfo info = read_dataset_info(dir);
  if (info.vocab_size != vocab_size) {
    throw DataError(fmt::format("the tokenizer of {} has {} pieces but VOCAB_SIZE={}; set --fdl.VOCAB_SIZE={} or "
                                "prepare the data with --vocab_size={}",
                                dir.string(), info.vocab_size, vocab_size, info.vocab_size, vocab_size));
  }
  return TokenStream::from_shards({dir / (split + ".tokens")}, static_cast<std::uint32_t>(vocab_size));
}

}  // namespace

std::unique_ptr<BaseInput> make_input(const std::string& source, const std::string& split, const InputParams& params,
                                      int vocab_size) {
  if (split != "train" && split != "validation") throw ConfigError(fmt::format("split '{}': use train or validation", split));
  TokenStream stream;
  if (source.rfind("text:", 0) == 0) {
    if (params.tokenizer_model.empty()) {
      throw ConfigError(fmt::format("DATA={} needs a SentencePiece model: set --fdl.TOKENIZER=FILE.model", source));
    }
    const Tokenizer tokenizer(params.tokenizer_model);
    if (tokenizer.vocab_size() != vocab_size) {
      throw DataError(fmt::format("the tokenizer {} has {} pieces but VOCAB_SIZE={}; set --fdl.VOCAB_SIZE={}",
                                  params.tokenizer_model, tokenizer.vocab_size(), vocab_size, tokenizer.vocab_size()));
    }
    std::vector<fs::path> files;
    for (const auto& f : expand_shard_spec(source.substr(5))) files.push_back(f);
    const Corpus corpus = read_text_files(files, kDefaultValidationFraction);
    stream = TokenStream::from_tokens(encode_documents(tokenizer, split == "train" ? corpus.train : corpus.validation));
  } else if (source == "synthetic") {
    // Training and validation draw different streams from the same structure (same successor map).
    const SyntheticStream synthetic(vocab_size, 1u << 20, params.seed);
    const auto& all = synthetic.tokens();
    const std::size_t cut = all.size() * 9 / 10;
    std::vector<std::uint32_t> tokens = split == "train" ? std::vector<std::uint32_t>(all.begin(), all.begin() + cut)
                                                         : std::vector<std::uint32_t>(all.begin() + cut, all.end());
    stream = TokenStream::from_tokens(std::move(tokens));
  } else {
    fs::path dir = source;
    if (source == "kjv") dir = prepared_kjv(default_data_root(), vocab_size, "bpe");
    if (fs::is_directory(dir)) {
      stream = directory_stream(dir, split, vocab_size);
    } else {
      stream = TokenStream::from_shards(expand_shard_spec(source), static_cast<std::uint32_t>(vocab_size));
    }
  }
  auto input = std::make_unique<WindowedInput>(std::move(stream), params);
  if (params.prefetch_depth > 0) return std::make_unique<PrefetchInput>(std::move(input), params.prefetch_depth);
  return input;
}

std::optional<fs::path> tokenizer_of(const std::string& source, int vocab_size, const std::string& tokenizer) {
  if (source.rfind("text:", 0) == 0) return tokenizer.empty() ? std::nullopt : std::optional<fs::path>(tokenizer);
  if (source == "synthetic") return std::nullopt;
  const fs::path dir = source == "kjv" ? prepared_kjv(default_data_root(), vocab_size, "bpe") : fs::path(source);
  if (fs::is_directory(dir) && fs::exists(dir / "tokenizer.model")) return dir / "tokenizer.model";
  return std::nullopt;
}

}  // namespace paxocl::inputs
