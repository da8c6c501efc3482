// Helpers shared by the tests: running the pax-ocl binary as a child process, temporary
// directories, and a scoped environment variable.
#pragma once

#include <algorithm>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace paxocl::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `command` through /bin/sh with stdin closed; captures stdout and stderr separately.
CommandResult run_command(const std::string& command);

// The scalars of the TensorBoard event files in `summary_dir` (e.g. job/summaries/train), by tag:
// (step, value) in the order written, values as stored (float32, bit for bit).
struct ScalarPoint {
  long step = 0;
  float value = 0;
};
std::map<std::string, std::vector<ScalarPoint>> read_scalars(const std::filesystem::path& summary_dir);

// The training loss of every summarised step >= first_step of the job in `job_dir`, in step order,
// as TensorBoard stores it (float32, bit for bit: compare with ==, not with printed text). A step
// summarised by several runs (a resume that repeats steps) has the latest run's value.
std::vector<float> train_losses(const std::filesystem::path& job_dir, long first_step = 1);
// The parameters of an llm.c weight file (--save_weights), after its 256-int header.
std::vector<float> weights_of(const std::filesystem::path& file);

// The number of MiB after `key` in a training job's start-up lines (e.g. "training state: 1.5 MiB
// per device"); -1 when the output has none.
double reported_mib(const std::string& out, const std::string& key);
// The activation memory ("activations: 3.1 MiB per device ...").
double activation_mib(const std::string& out);

// A file's bytes ("" when it cannot be read), for byte-for-byte comparisons of written files.
std::string file_bytes(const std::filesystem::path& file);

// Lines of a command's output (its newline characters): one-line errors are 1.
inline int count_lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// Writes `paragraphs` paragraphs of 20 random sentences over a 12-word vocabulary (blank-line
// separated) to dir/story.txt, so small tokenizers train in a moment; returns the path.
std::filesystem::path write_word_story(const std::filesystem::path& dir, int paragraphs, std::uint64_t seed);

// Writes `tokens` as llm.c's dev/data/data_common.py write_datafile does, byte by byte (independent
// of the reader's structs): an int32[256] header (magic, version, token count, then zeros) and the
// tokens as little-endian integers of bytes_per_token bytes. `count` replaces the header's token
// count (default: tokens.size()), for corrupt files.
void write_llmc_tokens(const std::filesystem::path& file, const std::vector<std::uint32_t>& tokens,
                       std::int32_t magic = 20240520, std::int32_t version = 1, int bytes_per_token = 2,
                       std::optional<std::int32_t> count = std::nullopt);

// The what() of the E that `f` throws, or "(no error)": for asserting on one-line error messages.
template <typename E, typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

// A fresh empty directory under the build tree's temp area, removed when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Sets (or unsets, with nullopt) an environment variable for the scope; restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace paxocl::testing
