// `pax-ocl bench`: the hardware and training benchmarks (bench/suite/), written as CSV + JSON
// (with the machine described inside), gnuplot PNGs and a markdown summary; or, with --compare,
// the ratios between two such result files (two machines, two commits).
#include <ctime>
#include <iostream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "app/device_report.h"
#include "bench/suite/benches.h"
#include "bench/suite/roofline.h"
#include "common/errors.h"
#include "device/device_selection.h"
#include "device/host_topology.h"
#include "device/known_peaks.h"
#include "config/experiment.h"

namespace paxocl::app {

namespace {
const char* const kBenches[] = {"gemm", "memory", "launch", "fft", "collectives", "train", "decode"};

const FlagSpec kBenchFlags[] = {
    kCommonFlags[0],
    kCommonFlags[1],
    {"output", "DIR", "where the results go (default bench-results/<time>)"},
    {"devices", "auto|gpu|cpu|0,1", "devices: the first is measured; collectives use all selected"},
    {"quick", "", "fewer and smaller sizes: a first look in seconds"},
    {"fdl_config", "NAME", "gemm: the experiment whose training GEMM shapes are measured (default Pile126M); decode: the "
                           "model (default Default)"},
    {"batch", "N", "gemm: sequences per device for those shapes (default 1)"},
    {"experiments", "A,B", "train: experiments (default Default)"},
    {"batches", "1,2,4", "train: PERCORE_BATCH_SIZE values (default 1,2,4); decode: sequences side by side (default 1,4,16)"},
    {"prompt_len", "N", "decode: prompt tokens (default 32)"},
    {"decode_steps", "N", "decode: tokens written per sequence (default 64; --quick 16)"},
    {"dtype", "float32|bfloat16|float16", "decode: the activations' dtype (default float32)"},
    {"meshes", "[1,1,1];[2,1,1]", "train: ICI meshes, ';'-separated (default [1,1,1])"},
    {"steps", "N", "train: steps per run (default 20)"},
    {"train_flags", "\"--fdl.X=Y ...\"", "train: more flags for every run"},
    {"compare", "A.json,B.json", "print B/A ratios of two results.json files instead of measuring"},
    {"roofline", "", "with `kernels`: the H100 roofline of a training step's kernels (bytes, FLOPs, lower bounds "
                     "beside PyTorch's times), computed from the shapes; no device"},
};

// `pax-ocl bench kernels --roofline`: Markdown to stdout, computed, not measured.
int roofline() {
  const bench::RooflinePeak peak = bench::h100_fp32();
  std::cout << "## Roofline of a training step's kernels (pax-ocl bench kernels --roofline)\n";
  for (const bench::RooflineCase& c : bench::h100_roofline_cases()) std::cout << "\n" << bench::roofline_markdown(c, peak);
  return kExitOk;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

nlohmann::json machine_json(const std::vector<device::DeviceInfo>& devices) {
  const device::HostTopology topology;
  const device::TopologySummary host = topology.summary();
  nlohmann::json j{{"pax_ocl_version", PAXOCL_VERSION},
                   {"time", std::time(nullptr)},
                   {"host", {{"hostname", host.hostname}, {"cpu_model", host.cpu_model}, {"packages", host.packages},
                             {"numa_nodes", host.numa_nodes}, {"cores", host.cores}, {"hardware_threads", host.hardware_threads}}},
                   {"devices", nlohmann::json::array()}};
  for (const auto& d : devices) {
    nlohmann::json dj = device_json(d, true);
    if (const auto peak = device::known_peak(d.name)) {
      dj["datasheet"] = {{"model", peak->model}, {"fp32_tflops", peak->fp32_tflops}, {"bf16_tflops", peak->bf16_tflops}};
    }
    j["devices"].push_back(dj);
  }
  j["summary"] = fmt::format("pax-ocl {} on {} ({} cores, {}): {}", PAXOCL_VERSION, host.hostname, host.cores,
                             host.cpu_model, devices.empty() ? "no device" : devices.front().name + ", " +
                                                                                 devices.front().driver_version);
  return j;
}

int compare(const std::string& files) {
  const auto paths = split(files, ',');
  if (paths.size() != 2) throw ConfigError("--compare needs two files: --compare=A/results.json,B/results.json");
  const bench::Report a = bench::Report::load(paths[0]), b = bench::Report::load(paths[1]);
  std::cout << fmt::format("B/A ratios\n  A: {}\n  B: {}\n", a.machine.value("summary", paths[0]),
                           b.machine.value("summary", paths[1]));
  for (const bench::Table& ta : a.tables) {
    for (const bench::Table& tb : b.tables) {
      if (ta.name != tb.name) continue;
      std::vector<std::size_t> keys, values;
      for (std::size_t c = 0; c < ta.columns.size(); ++c) {
        const bool key = std::find(ta.key.begin(), ta.key.end(), ta.columns[c]) != ta.key.end();
        (key ? keys : values).push_back(c);
      }
      std::cout << fmt::format("\n{}\n", ta.title);
      for (const auto& ra : ta.rows) {
        for (const auto& rb : tb.rows) {
          if (rb.size() != ra.size() ||
              !std::all_of(keys.begin(), keys.end(), [&](std::size_t c) { return ra[c] == rb[c]; })) {
            continue;
          }
          std::string line;
          for (std::size_t c : keys) line += (ra[c].is_string() ? ra[c].get<std::string>() : ra[c].dump()) + " ";
          for (std::size_t c : values) {
            if (ra[c].is_number() && rb[c].is_number() && ra[c].get<double>() != 0) {
              line += fmt::format(" {} {:.2f}x", ta.columns[c], rb[c].get<double>() / ra[c].get<double>());
            }
          }
          std::cout << "  " << line << "\n";
        }
      }
    }
  }
  return kExitOk;
}
}  // namespace

int run_bench(const CliArgs& args, const collectives::ProcessWorld& world) {
  if (args.flag_bool("help")) {
    if (world.rank() == 0) {
      std::cout << "Usage: pax-ocl bench [all|gemm|memory|launch|fft|collectives|train ...] [flags]\n"
                   "       pax-ocl bench kernels --roofline\n\n"
                   "Measures the devices and training; writes CSV, results.json (machine described inside), PNG plots\n"
                   "(gnuplot) and summary.md into --output. --compare=A.json,B.json prints the ratios of two runs.\n"
                   "`kernels --roofline` prints, without a device, each step kernel's bytes, FLOPs and H100 lower bound.\n\nFlags:\n"
                << format_flags(kBenchFlags);
    }
    return kExitOk;
  }
  args.validate(kBenchFlags, {});
  if (const auto files = args.flag("compare")) return compare(*files);
  const auto& names = args.positionals();
  if (std::find(names.begin(), names.end(), "kernels") != names.end() || args.flag_bool("roofline")) {
    if (names.size() != 1 || names.front() != "kernels" || !args.flag_bool("roofline")) {
      throw ConfigError("bench kernels has one mode so far: `pax-ocl bench kernels --roofline` (alone: no other "
                        "benchmark beside it)");
    }
    return roofline();
  }
  if (world.size() > 1) {
    throw ConfigError("pax-ocl bench runs as one process; for collective bandwidth across processes run "
                      "`mpirun -np N build/bench/bench_collectives mpi|hier`");
  }

  std::set<std::string> chosen;
  for (const std::string& name : args.positionals()) {
    if (name == "all") {
      chosen.insert(std::begin(kBenches), std::end(kBenches));
    } else if (std::find(std::begin(kBenches), std::end(kBenches), name) != std::end(kBenches)) {
      chosen.insert(name);
    } else {
      throw ConfigError(fmt::format("unknown benchmark '{}': use all, gemm, memory, launch, fft, collectives, train or decode", name));
    }
  }
  if (chosen.empty()) chosen.insert(std::begin(kBenches), std::end(kBenches));
  const bool quick = args.flag_bool("quick");
  const auto selected = device::select_devices(device::enumerate_devices(),
                                               device::parse_device_selection(device::device_spec_from(args.flag("devices"))));
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  const std::filesystem::path out = args.flag("output").value_or(fmt::format("bench-results/{}", stamp));

  bench::Report report;
  report.machine = machine_json(selected);
  device::Device device(selected.front());
  device::ProgramCache cache;
  // Checked before any bench runs.
  const device::DType decode_dtype = [&] {
    const std::string name = args.flag("dtype").value_or("float32");
    try {
      return device::dtype_from_name(name);
    } catch (const ConfigError&) {
      throw ConfigError("--dtype=" + name + " is not a dtype: use float32, bfloat16 or float16");
    }
  }();
  auto run = [&](const std::string& name, const std::function<bench::Table()>& measure) {
    if (!chosen.contains(name)) return;
    spdlog::info("bench {}...", name);
    report.tables.push_back(measure());
  };
  run("gemm", [&] {
    const models::GptConfig model = config::Experiment::named(args.flag("fdl_config").value_or("Pile126M")).model_config().gpt();
    return bench::bench_gemm(device, cache, model, std::stoi(args.flag("batch").value_or("1")), quick);
  });
  run("memory", [&] { return bench::bench_memory(device, cache, quick); });
  run("launch", [&] { return bench::bench_launch(device, cache); });
  run("fft", [&] { return bench::bench_fft(device, quick); });
  run("collectives", [&] { return bench::bench_collectives(selected, quick); });
  run("train", [&] {
    const std::string meshes = args.flag("meshes").value_or("[1,1,1]");
    return bench::bench_training(std::filesystem::read_symlink("/proc/self/exe").string(), split(args.flag("experiments").value_or("Default"), ','),
                                 split(args.flag("batches").value_or("1,2,4"), ','), split(meshes, ';'),
                                 std::stoi(args.flag("steps").value_or(quick ? "5" : "20")),
                                 args.flag("train_flags").value_or(""));
  });
  run("decode", [&] {
    std::vector<int> batches;
    for (const std::string& b : split(args.flag("batches").value_or("1,4,16"), ',')) batches.push_back(std::stoi(b));
    return bench::bench_decode(device, cache, config::Experiment::named(args.flag("fdl_config").value_or("Default")).model_config(),
                               batches, std::stoi(args.flag("prompt_len").value_or("32")),
                               std::stoi(args.flag("decode_steps").value_or(quick ? "16" : "64")),
                               decode_dtype);
  });
  for (const auto& file : report.write(out)) std::cout << file.string() << "\n";
  if (const auto gemm = std::find_if(report.tables.begin(), report.tables.end(), [](const auto& t) { return t.name == "gemm"; });
      gemm != report.tables.end()) {
    std::cout << fmt::format("measured GEMM peak: {:.1f} GFLOP/s on {}\n", bench::peak_of(*gemm), device.info().name);
  }
  return kExitOk;
}

}  // namespace paxocl::app
