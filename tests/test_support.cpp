#include "tests/test_support.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include <unistd.h>

#include "common/rng.h"
#include "proto/tensorboard.pb.h"

namespace paxocl::testing {

namespace {
std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

CommandResult run_command(const std::string& command) {
  TempDir dir;
  const auto out = dir.path() / "stdout", err = dir.path() / "stderr";
  const std::string full = "(" + command + ") </dev/null >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(full.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::filesystem::path write_word_story(const std::filesystem::path& dir, int paragraphs, std::uint64_t seed) {
  const auto file = dir / "story.txt";
  std::ofstream out(file);
  const char* words[] = {"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "and", "runs", "far", "away"};
  Rng rng(seed);
  for (int p = 0; p < paragraphs; ++p) {
    for (int s = 0; s < 20; ++s) {
      for (int w = 0; w < 8; ++w) out << (w ? " " : "") << words[rng.next_u64() % 12];
      out << ".\n";
    }
    out << "\n";  // paragraph = document
  }
  return file;
}

void write_llmc_tokens(const std::filesystem::path& file, const std::vector<std::uint32_t>& tokens, std::int32_t magic,
                       std::int32_t version, int bytes_per_token, std::optional<std::int32_t> count) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  auto put = [&](std::uint64_t value, int bytes) {  // little-endian, lowest byte first
    for (int b = 0; b < bytes; ++b) out.put(static_cast<char>((value >> (8 * b)) & 0xff));
  };
  put(static_cast<std::uint32_t>(magic), 4);
  put(static_cast<std::uint32_t>(version), 4);
  put(static_cast<std::uint32_t>(count.value_or(static_cast<std::int32_t>(tokens.size()))), 4);
  for (int i = 3; i < 256; ++i) put(0, 4);
  for (std::uint32_t t : tokens) put(t, bytes_per_token);
}

TempDir::TempDir() {
  std::random_device rd;
  path_ = std::filesystem::temp_directory_path() / ("pax-ocl-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

ScopedEnv::ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
  if (const char* v = std::getenv(name_.c_str())) old_ = v;
  if (value) {
    ::setenv(name_.c_str(), value->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

ScopedEnv::~ScopedEnv() {
  if (old_) {
    ::setenv(name_.c_str(), old_->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

std::map<std::string, std::vector<ScalarPoint>> read_scalars(const std::filesystem::path& summary_dir) {
  std::map<std::string, std::vector<ScalarPoint>> scalars;
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(summary_dir)) {
    if (f.path().filename().string().rfind("events.out.tfevents.", 0) == 0) files.push_back(f.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::uint64_t length = 0;
    // TFRecord: length (8), its masked CRC (4), the Event, its masked CRC (4).
    while (in.read(reinterpret_cast<char*>(&length), 8) && in.ignore(4)) {
      std::string data(length, '\0');
      if (!in.read(data.data(), static_cast<std::streamsize>(length)) || !in.ignore(4)) break;
      proto::tensorboard::Event event;
      if (!event.ParseFromString(data)) break;
      for (const auto& v : event.summary().value()) scalars[v.tag()].push_back({static_cast<long>(event.step()), v.simple_value()});
    }
  }
  return scalars;
}

std::vector<float> train_losses(const std::filesystem::path& job_dir, long first_step) {
  std::map<long, float> by_step;  // event files are read oldest run first: later runs overwrite
  const auto scalars = read_scalars(job_dir / "summaries" / "train");  // named: range-for would not extend its life
  if (const auto it = scalars.find("loss"); it != scalars.end()) {
    for (const ScalarPoint& p : it->second) by_step[p.step] = p.value;
  }
  std::vector<float> losses;
  for (const auto& [step, value] : by_step) {
    if (step >= first_step) losses.push_back(value);
  }
  return losses;
}

double reported_mib(const std::string& out, const std::string& key) {
  const std::size_t at = out.find(key);
  return at == std::string::npos ? -1.0 : std::stod(out.substr(at + key.size()));
}

double activation_mib(const std::string& out) { return reported_mib(out, "activations: "); }

std::string file_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<float> weights_of(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  in.seekg(256 * 4);
  std::vector<float> w;
  float v = 0;
  while (in.read(reinterpret_cast<char*>(&v), sizeof v)) w.push_back(v);
  return w;
}

}  // namespace paxocl::testing
