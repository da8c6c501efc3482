// `pax-ocl plan`: memory, FLOPs, communication and step time of an experiment's layout on a named
// accelerator (or this host's CPU), with no device work: whether a layout fits, and how long a
// step takes, before anyone books a cluster (plan/plan.h states the model).
#include <iostream>

#include <fmt/format.h>

#include "app/commands.h"
#include "app/experiment_flags.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "config/hparam_values.h"
#include "kernels_cl/flash_attention.h"
#include "kernels_cl/ssm_kernels.h"
#include "plan/plan_report.h"

namespace paxocl::app {

namespace {

const FlagSpec kPlanFlags[] = {
    kCommonFlags[0],
    kCommonFlags[1],
    {"fdl_config", "NAME", "the experiment (default: Default)"},
    {"fdl_config_file", "FILE.json", "an experiment file: {\"fdl_config\": \"<base>\", \"NAME\": value, ...}"},
    {"accelerator", "host|H100|A100|...", "the device to plan for: a datasheet entry of device/known_peaks (default "
                                          "host: this machine's CPU, shared by the process's devices)"},
    {"mfu", "F", "assumed model FLOPs utilisation, in (0, 1] (default 0.5 for an accelerator, 0.8 for the host CPU)"},
    {"ici_bandwidth", "GB/s", "bandwidth each way between the devices of a process (default: the accelerator's)"},
    {"dcn_bandwidth", "GB/s", "bandwidth each way per device between processes (default: the accelerator's)"},
    {"json", "FILE", "also write the plan as JSON (bytes, FLOPs, seconds)"},
};

void print_help() {
  std::cout << "Usage: pax-ocl plan [--fdl_config=NAME | --fdl_config_file=FILE] [--fdl.NAME=VALUE ...] "
               "[--accelerator=NAME] [--json=FILE]\n\n"
               "Plans an experiment's layout (ICI_MESH_SHAPE x DCN_MESH_SHAPE over [stage, data, fsdp, tensor]) without any\n"
               "device work: per device the memory of parameters, gradients, Adam moments, FSDP gather buffers, the\n"
               "16-bit weight copy and activations (with and without sequence parallelism); the FLOPs of a step; the\n"
               "bytes each collective moves over ICI and DCN; a step time at an assumed MFU; and whether it fits,\n"
               "with the smallest layout that does when it does not. No mpirun needed: the processes are\n"
               "product(DCN_MESH_SHAPE).\n\nFlags:\n"
            << format_flags(kPlanFlags) << "\n"
            << experiments_help();
}

std::optional<double> positive_flag(const CliArgs& args, const char* name) {
  const auto text = args.flag(name);
  if (!text) return std::nullopt;
  const double v = config::parse_float_value(name, *text);
  if (!(v > 0)) throw ConfigError(fmt::format("--{}={}: must be a positive number", name, *text));
  return v;
}

}  // namespace

int run_plan(const CliArgs& args, const collectives::ProcessWorld& world) {
  if (args.flag_bool("help")) {
    if (world.rank() == 0) print_help();
    return kExitOk;
  }
  args.validate(kPlanFlags, hparam_names());
  const config::Experiment experiment = experiment_from_flags(args);
  plan::LayoutSpec spec = plan::layout_spec_of(experiment);
  const std::string accelerator = args.flag("accelerator").value_or("host");
  const plan::Accelerator target = accelerator == "host" ? plan::host_accelerator(device::product(spec.ici))
                                                         : plan::known_accelerator(accelerator);
  spec.base_address_align_bytes = target.base_address_align_bytes;
  if (!target.host_cpu) {  // a GPU runs the GPU kernel set: flash attention where its tiles fit
    spec.flash_attention = [](std::size_t hs) {
      return kernels::flash_tiles(hs, kernels::kGpuDefaultGroupSize, kernels::kFlashLocalBudget).has_value();
    };
  } else {  // the host's CPU devices: SSM_CONVOLUTION=auto by the kernel set they run
    device::DeviceInfo cpu;
    cpu.kind = device::DeviceKind::kCpu;
    spec.ssm_fft = [cpu](const std::string& convolution, std::size_t T) {
      return kernels::ssm_fft_requested(convolution, cpu, T);
    };
  }
  plan::PlanOptions options;
  options.mfu = positive_flag(args, "mfu");
  options.ici_gbps = positive_flag(args, "ici_bandwidth");
  options.dcn_gbps = positive_flag(args, "dcn_bandwidth");
  const plan::Plan p = plan::make_plan(spec, target, options);
  if (world.rank() != 0) return kExitOk;
  std::cout << plan::format_plan(p, experiment.name()) << std::flush;
  if (const auto json = args.flag("json")) write_file_atomically(*json, plan::plan_json(p, experiment.name()).dump(2) + "\n");
  return kExitOk;
}

}  // namespace paxocl::app
