// `pax-ocl tune`: searches CLBlast's GEMM parameters on this device for the GEMM shapes of an
// experiment's training step (its own search over CLBlast's Xgemm parameters: CLBlast's tuner
// compiles thousands of variants, hours on PoCL), keeps the set that runs those shapes fastest in
// total, and stores it
// (kernels_cl/clblast_tuning.h) so every later run on this device uses it. Prints CLBlast's
// GFLOP/s per shape before and after.
#include <iostream>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <clblast.h>

#include "app/commands.h"
#include "bench/suite/benches.h"
#include "common/errors.h"
#include "device/device_selection.h"
#include "kernels_cl/clblast_tuning.h"
#include "config/experiment.h"

namespace paxocl::app {

namespace {
const FlagSpec kTuneFlags[] = {
    kCommonFlags[0],
    kCommonFlags[1],
    {"devices", "auto|gpu|cpu|0", "the device to tune (the first selected)"},
    {"fdl_config", "NAME", "the experiment whose training GEMM shapes are tuned for (default Default)"},
    {"batch", "N", "sequences per device for those shapes (default 1)"},
    {"candidates", "N", "parameter sets tried, CLBlast's current one included (default 24)"},
};

// CLBlast's time in a step for every shape, in seconds, with the parameters in effect now.
std::vector<double> time_shapes(device::Device& device, const std::vector<bench::GemmCase>& cases) {
  const auto gemm = kernels::make_clblast_gemm(device);
  bench::GemmTimer timer(device, cases);
  std::vector<double> seconds;  // each shape's time in a step: one GEMM's, times its count
  for (const auto& c : cases) seconds.push_back(timer.seconds(*gemm, c.shape, 3) * static_cast<double>(c.count));
  return seconds;
}
}  // namespace

int run_tune(const CliArgs& args, const collectives::ProcessWorld& world) {
  if (args.flag_bool("help")) {
    if (world.rank() == 0) {
      std::cout << "Usage: pax-ocl tune [--fdl_config=NAME] [--batch=N] [--candidates=N] [--devices=...]\n\n"
                   "Tunes CLBlast's GEMM for an experiment's shapes on this device and stores the result, which every\n"
                   "later CLBlast GEMM on the device uses.\n\nFlags:\n"
                << format_flags(kTuneFlags);
    }
    return kExitOk;
  }
  args.validate(kTuneFlags, {});
  const int limit = std::stoi(args.flag("candidates").value_or("24"));
  if (limit < 2) throw ConfigError("--candidates must be at least 2 (CLBlast's current set and one more)");
  const auto selected = device::select_devices(device::enumerate_devices(),
                                               device::parse_device_selection(device::device_spec_from(args.flag("devices"))));
  device::Device device(selected.front());
  const models::GptConfig model = config::Experiment::named(args.flag("fdl_config").value_or("Default")).model_config().gpt();
  const std::size_t batch = static_cast<std::size_t>(std::stoi(args.flag("batch").value_or("1")));
  const std::size_t tokens = batch * static_cast<std::size_t>(model.max_seq_len);
  std::vector<bench::GemmCase> cases = bench::model_gemm_cases(model, batch);

  clblast::ClearCache();  // measure CLBlast's own defaults, not an earlier tuning
  const kernels::ClblastParameters current = kernels::current_clblast_gemm(device);
  const std::vector<double> before = time_shapes(device, cases);
  double best_total = 0;
  for (double t : before) best_total += t;
  std::optional<kernels::ClblastParameters> best;
  std::vector<double> after = before;
  const auto candidates = kernels::clblast_gemm_candidates(current, static_cast<std::size_t>(limit));
  for (std::size_t i = 1; i < candidates.size(); ++i) {  // [0] is the current set, measured above
    clblast::ClearCache();
    try {
      kernels::override_clblast_gemm(device, candidates[i]);
      const std::vector<double> t = time_shapes(device, cases);
      double total = 0;
      for (double x : t) total += x;
      spdlog::info("candidate {}/{}: {:.1f} ms over the {} shapes (best {:.1f})", i, candidates.size() - 1, 1e3 * total,
                   cases.size(), 1e3 * best_total);
      if (total < best_total) {
        best_total = total;
        best = candidates[i];
        after = t;
      }
    } catch (const DeviceError& e) {  // a combination CLBlast's kernel cannot build or run here
      spdlog::info("candidate {}/{} skipped: {}", i, candidates.size() - 1, e.what());
    }
  }
  clblast::ClearCache();
  std::cout << fmt::format("CLBlast SGEMM on {} for {} (batch x seq = {} tokens), GFLOP/s:\n", device.info().name,
                           args.flag("fdl_config").value_or("Default"), tokens);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::cout << fmt::format("  {:<14} m={:<6} n={:<6} k={:<6} before {:7.1f}  after {:7.1f}\n", cases[i].name,
                             cases[i].shape.m, cases[i].shape.n, cases[i].shape.k, bench::GemmTimer::gflops(cases[i].shape, before[i] / cases[i].count),
                             bench::GemmTimer::gflops(cases[i].shape, after[i] / cases[i].count));
  }
  if (!best) {
    std::cout << "no tuned parameters beat CLBlast's defaults; nothing stored\n";
    return kExitOk;
  }
  kernels::save_clblast_tuning(device.info(), *best, fmt::format("pax-ocl tune --fdl_config={} --batch={}",
                                                                  args.flag("fdl_config").value_or("Default"),
                                                                  args.flag("batch").value_or("1")));
  std::cout << fmt::format("stored in {}; CLBlast GEMMs on this device use it from now on\n",
                           kernels::clblast_tuning_file(device.info()).string());
  return kExitOk;
}

}  // namespace paxocl::app
