#include <cstdio>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "bench/suite/benches.h"

namespace paxocl::bench {

namespace {
// stdout and stderr of a command, and its exit status.
std::pair<int, std::string> capture(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

double number(const std::string& text, const std::string& pattern) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(pattern)) ? std::stod(m[1]) : 0.0;
}
}  // namespace

Table bench_training(const std::string& binary, const std::vector<std::string>& experiments,
                     const std::vector<std::string>& batches, const std::vector<std::string>& meshes, int steps,
                     const std::string& extra_flags) {
  Table t{"training", "Training throughput: experiments x PERCORE_BATCH_SIZE x ICI meshes",
          {"experiment", "percore_batch_size", "ici_mesh", "devices", "tokens_per_sec", "step_ms", "mfu_percent",
           "state_mib_per_device", "loss", "status"},
          {}, plot_of("percore_batch_size", "tokens_per_sec", "ici_mesh"), {"experiment", "percore_batch_size", "ici_mesh"}};
  t.plot->log_x = false;
  t.plot->y_label = "tokens/s";
  const std::filesystem::path jobs = std::filesystem::temp_directory_path() / fmt::format("pax-ocl-bench-{}", ::getpid());
  for (const std::string& experiment : experiments) {
    for (const std::string& batch : batches) {
      for (const std::string& mesh : meshes) {
        const std::string command = fmt::format(
            "'{}' train --fdl_config={} --fdl.PERCORE_BATCH_SIZE={} --fdl.ICI_MESH_SHAPE={} --fdl.DCN_MESH_SHAPE=[1,1,1] "
            "--fdl.MAX_STEPS={} --fdl.SUMMARY_INTERVAL_STEPS={} --fdl.EVAL_INTERVAL_STEPS=0 "
            "--enable_checkpoint_saving=false --job_log_dir='{}' {}",
            binary, experiment, batch, mesh, steps, steps, (jobs / fmt::format("{}-{}-{}", experiment, batch, t.rows.size())).string(),
            extra_flags);
        const auto [status, out] = capture(command);
        int devices = 1;
        for (char c : mesh) devices *= std::isdigit(static_cast<unsigned char>(c)) ? (c - '0') : 1;
        const double tokens_per_step = number(out, R"((\d+) x \d+ tokens per step)") * number(out, R"(\d+ x (\d+) tokens per step)");
        const double tps = number(out, R"((\d+) tok/s)");
        std::string reason = "ok";
        if (status != 0) {
          const auto error = out.rfind("error: ");
          reason = error == std::string::npos ? fmt::format("exit {}", status) : out.substr(error + 7, out.find('\n', error) - error - 7);
        }
        t.add({experiment, std::stod(batch), mesh, devices, tps, tps > 0 ? 1e3 * tokens_per_step / tps : 0.0,
               number(out, R"(MFU ([0-9.]+)%)"), number(out, R"(training state: ([0-9.]+) MiB)"),
               number(out, R"(loss ([0-9.]+)  log_pplx)"), reason});
      }
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(jobs, ec);
  return t;
}

}  // namespace paxocl::bench
