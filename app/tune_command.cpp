// `pax-ocl tune`: tunes the device's GEMMs for the GEMM shapes of an experiment's training step and
// stores the results, so every later run on this device uses them:
//  - CLBlast's Xgemm parameters (its own search: CLBlast's tuner compiles thousands of variants,
//    hours on PoCL), kept in kernels_cl/clblast_tuning.h's file; CLBlast's GFLOP/s per shape
//    before and after;
//  - the direct GEMM's tile (direct_gemm.h) among direct_tile_candidates(), kept in
//    kernels_cl/direct_gemm_tuning.h's file. A candidate is cut off as soon as its time over the
//    shapes so far exceeds 3x the best candidate's whole total: a search of minutes, not hours.
// Each set wins by its total over the step (each shape's time times its count).
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
#include "kernels_cl/direct_gemm.h"
#include "kernels_cl/direct_gemm_tuning.h"
#include "config/experiment.h"

namespace paxocl::app {

namespace {
const FlagSpec kTuneFlags[] = {
    kCommonFlags[0],
    kCommonFlags[1],
    {"devices", "auto|gpu|cpu|0", "the device to tune (the first selected)"},
    {"fdl_config", "NAME", "the experiment whose training GEMM shapes are tuned for (default Default)"},
    {"batch", "N", "sequences per device for those shapes (default 1)"},
    {"candidates", "N", "CLBlast parameter sets tried, its current one included (default 24)"},
    {"gemm", "all|clblast|direct", "which GEMMs to tune (default all)"},
};

// A candidate whose time passes this multiple of the best total is cut off.
constexpr double kCutOff = 3.0;

// CLBlast's time in a step for every shape, in seconds, with the parameters in effect now.
std::vector<double> time_shapes(device::Device& device, const std::vector<bench::GemmCase>& cases) {
  const auto gemm = kernels::make_clblast_gemm(device);
  bench::GemmTimer timer(device, cases);
  std::vector<double> seconds;  // each shape's time in a step: one GEMM's, times its count
  for (const auto& c : cases) seconds.push_back(timer.seconds(*gemm, c.shape, 3) * static_cast<double>(c.count));
  return seconds;
}

// One shape's row: GFLOP/s before and after (from its time in a step; 0 when not measured).
void print_shape(const bench::GemmCase& c, double before, double after) {
  const auto gflops = [&](double seconds) {
    return seconds > 0 ? bench::GemmTimer::gflops(c.shape, seconds / static_cast<double>(c.count)) : 0.0;
  };
  std::cout << fmt::format("  {:<14} m={:<6} n={:<6} k={:<6} before {:7.1f}  after {:7.1f}\n", c.name, c.shape.m,
                           c.shape.n, c.shape.k, gflops(before), gflops(after));
}

// CLBlast's Xgemm parameters: its current set, then up to `limit` - 1 others; stores the best if
// it beats the current one.
void tune_clblast(device::Device& device, const std::vector<bench::GemmCase>& cases, std::size_t limit,
                  const std::string& note) {
  clblast::ClearCache();  // measure CLBlast's own defaults, not an earlier tuning
  const kernels::ClblastParameters current = kernels::current_clblast_gemm(device);
  const std::vector<double> before = time_shapes(device, cases);
  double best_total = 0;
  for (double t : before) best_total += t;
  std::optional<kernels::ClblastParameters> best;
  std::vector<double> after = before;
  const auto candidates = kernels::clblast_gemm_candidates(current, limit);
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
  std::cout << "CLBlast SGEMM, GFLOP/s:\n";
  for (std::size_t i = 0; i < cases.size(); ++i) print_shape(cases[i], before[i], after[i]);
  if (!best) {
    std::cout << "no tuned parameters beat CLBlast's defaults; nothing stored\n";
    return;
  }
  kernels::save_clblast_tuning(device.info(), *best, note);
  std::cout << fmt::format("stored in {}; CLBlast GEMMs on this device use it from now on\n",
                           kernels::clblast_tuning_file(device.info()).string());
}

// The direct GEMM's tile: every candidate that fits the device, the default first; a candidate is
// cut off once its running total passes kCutOff x the best total so far. Stores the winner.
void tune_direct(device::Device& device, const std::vector<bench::GemmCase>& cases, const std::string& note) {
  device::ProgramCache cache;
  bench::GemmTimer timer(device, cases);
  const auto candidates = kernels::direct_tile_candidates(device.info());
  if (candidates.empty()) throw DeviceError(fmt::format("no direct GEMM tile fits {}", device.info().name));
  std::optional<kernels::DirectTile> best;
  double best_total = 0;
  std::vector<double> first, after;  // per shape: the first tile's that ran (the default's), the winner's
  std::string first_name;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const kernels::DirectTile& tile = candidates[i];
    try {
      kernels::DirectGemm gemm(cache, device, tile);
      std::vector<double> t;
      double total = 0;
      for (const auto& c : cases) {
        t.push_back(timer.seconds(gemm, c.shape, 3) * static_cast<double>(c.count));
        total += t.back();
        if (best && total > kCutOff * best_total) break;
      }
      if (best && total > kCutOff * best_total) {
        spdlog::info("direct tile {}/{} {}: cut off after {} of {} shapes ({:.1f} ms > {}x best {:.1f})", i + 1,
                     candidates.size(), tile.name(), t.size(), cases.size(), 1e3 * total, kCutOff, 1e3 * best_total);
        continue;
      }
      spdlog::info("direct tile {}/{} {}: {:.1f} ms over the {} shapes", i + 1, candidates.size(), tile.name(),
                   1e3 * total, cases.size());
      if (first.empty()) {
        first = t;
        first_name = tile.name();
      }
      if (!best || total < best_total) {
        best = tile;
        best_total = total;
        after = t;
      }
    } catch (const DeviceError& e) {  // a tile this device's compiler or runtime refuses
      spdlog::info("direct tile {}/{} {} skipped: {}", i + 1, candidates.size(), tile.name(), e.what());
    }
  }
  if (!best) throw DeviceError(fmt::format("no direct GEMM tile ran on {}", device.info().name));
  std::cout << fmt::format("direct GEMM, GFLOP/s with tile {} (before) and the best, {} (after):\n", first_name,
                           best->name());
  for (std::size_t i = 0; i < cases.size(); ++i) print_shape(cases[i], first[i], after[i]);
  const auto file = kernels::direct_gemm_tuning_file(device.info());
  kernels::save_direct_gemm_tuning(file, device.info(), *best, note);
  std::cout << fmt::format("stored {} in {}; direct GEMMs on this device use it from now on\n", best->name(), file.string());
}
}  // namespace

int run_tune(const CliArgs& args, const collectives::ProcessWorld& world) {
  if (args.flag_bool("help")) {
    if (world.rank() == 0) {
      std::cout << "Usage: pax-ocl tune [--fdl_config=NAME] [--batch=N] [--candidates=N] [--gemm=all|clblast|direct] [--devices=...]\n\n"
                   "Tunes CLBlast's GEMM and the direct GEMM's tile for an experiment's shapes on this device and\n"
                   "stores the results, which every later GEMM of those kinds on the device uses.\n\nFlags:\n"
                << format_flags(kTuneFlags);
    }
    return kExitOk;
  }
  args.validate(kTuneFlags, {});
  const int limit = std::stoi(args.flag("candidates").value_or("24"));
  const std::string which = args.flag("gemm").value_or("all");
  if (which != "all" && which != "clblast" && which != "direct") {
    throw ConfigError(fmt::format("--gemm={}: use all, clblast or direct", which));
  }
  if (limit < 2) throw ConfigError("--candidates must be at least 2 (CLBlast's current set and one more)");
  const auto selected = device::select_devices(device::enumerate_devices(),
                                               device::parse_device_selection(device::device_spec_from(args.flag("devices"))));
  device::Device device(selected.front());
  const models::GptConfig model = config::Experiment::named(args.flag("fdl_config").value_or("Default")).model_config().gpt();
  const std::size_t batch = static_cast<std::size_t>(std::stoi(args.flag("batch").value_or("1")));
  const std::size_t tokens = batch * static_cast<std::size_t>(model.max_seq_len);
  std::vector<bench::GemmCase> cases = bench::model_gemm_cases(model, batch);

  const std::string note = fmt::format("pax-ocl tune --fdl_config={} --batch={}", args.flag("fdl_config").value_or("Default"),
                                      args.flag("batch").value_or("1"));
  std::cout << fmt::format("GEMMs on {} for {} (batch x seq = {} tokens)\n", device.info().name,
                           args.flag("fdl_config").value_or("Default"), tokens);
  if (which == "all" || which == "clblast") tune_clblast(device, cases, static_cast<std::size_t>(limit), note);
  if (which == "all" || which == "direct") tune_direct(device, cases, note);
  return kExitOk;
}

}  // namespace paxocl::app
