// pax-ocl: train GPT-style language models on OpenCL devices.
//   pax-ocl <command> [--flags] [--fdl.NAME=VALUE ...]
// Exit codes: 0 ok, 2 usage/config error, 3 data error, 4 device/runtime error, 75 preempted (requeue).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/agreed_step.h"
#include "app/cli_args.h"
#include "app/commands.h"
#include "app/logging.h"
#include "collectives/process_world.h"
#include "device/device.h"
#include "common/errors.h"
#include "kernels_cl/blis_gemm.h"
#include "kernels_cl/openmp_wait_policy.h"

namespace {

using paxocl::app::CliArgs;

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const CliArgs&, const paxocl::collectives::ProcessWorld&);
};

const Command kCommands[] = {
    {"devices", "list OpenCL devices, the host topology and the device mesh", paxocl::app::run_devices},
    {"train", "train an experiment (default: Default, a small GPT on the KJV)", paxocl::app::run_train},
    {"plan", "memory, FLOPs, communication and step time of a layout, and whether it fits (no device work)",
     paxocl::app::run_plan},
    {"eval", "evaluate an experiment on eval_train and eval_test", paxocl::app::run_eval},
    {"data", "prepare a dataset (tokenizer + token shards) or inspect batches", paxocl::app::run_data},
    {"bench", "measure GEMM, memory, launches, FFT, collectives and training; CSV, JSON, plots", paxocl::app::run_bench},
    {"tune", "tune CLBlast's GEMM for an experiment's shapes on this device (kept for later runs)", paxocl::app::run_tune},
    {"export", "write a job's checkpoint as Hugging Face safetensors (GPT-2, LLaMA) or llm.c .bin", paxocl::app::run_export},
    {"sample", "write text with a trained model (key/value-cached decoding, temperature, top-k, top-p)", paxocl::app::run_sample},
};

void print_usage() {
  std::cout << "pax-ocl " PAXOCL_VERSION " - train GPT-style language models on OpenCL devices\n\n"
               "Usage: pax-ocl <command> [--flag=value ...] [--fdl.NAME=VALUE ...]\n\nCommands:\n";
  for (const Command& c : kCommands) std::cout << fmt::format("  {:<10} {}\n", c.name, c.summary);
  std::cout << "\nRun `pax-ocl <command> --help` for a command's flags.\n";
}

int dispatch(const CliArgs& args, const paxocl::collectives::ProcessWorld& world) {
  if (args.command().empty() || args.command() == "help") {
    if (world.rank() == 0) print_usage();
    return args.command().empty() && !args.flag_bool("help") && !args.flag("version") ? paxocl::kExitUsage
                                                                                      : paxocl::kExitOk;
  }
  for (const Command& c : kCommands) {
    if (args.command() == c.name) return c.run(args, world);
  }
  std::vector<std::string> names;
  for (const Command& c : kCommands) names.emplace_back(c.name);
  throw paxocl::ConfigError(fmt::format("unknown command '{}'{}; run `pax-ocl --help` for the list", args.command(),
                                        paxocl::app::did_you_mean(args.command(), names, "")));
}

}  // namespace

int main(int argc, char** argv) {
  paxocl::kernels::restart_with_passive_openmp_waits(argv);  // before any thread starts
  const std::string blis_warning = paxocl::kernels::ignore_blis_arch_type_where_it_aborts();
  std::unique_ptr<paxocl::collectives::ProcessWorld> world;
  try {
    world = std::make_unique<paxocl::collectives::ProcessWorld>(&argc, &argv);
    const CliArgs args(argc, argv);
    if (args.flag("version")) {
      if (world->rank() == 0) std::cout << "pax-ocl " PAXOCL_VERSION "\n";
      return paxocl::kExitOk;
    }
    world->check_slurm_agrees();
    paxocl::device::OpenCpuDevice::set_processes_on_host(static_cast<unsigned>(world->local_size()));
    paxocl::app::init_logging(args.flag("log_level"), world->rank(), world->size());
    if (!blis_warning.empty()) spdlog::warn(blis_warning);
    return dispatch(args, *world);
  } catch (const paxocl::app::AgreedError& e) {
    // Every process knows this error; rank 0 reports it once and all exit cleanly.
    if (world->rank() == 0) std::cerr << "pax-ocl: error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    const int code = paxocl::app::exit_code_for(e);
    const bool multi = world && world->size() > 1;
    std::cerr << "pax-ocl: error: " << (multi ? fmt::format("[rank {}] ", world->rank()) : "") << e.what() << "\n";
    // Raised by one process only: the others may be waiting in a collective, so end them all.
    if (multi) world->abort(code);
    return code;
  }
}
