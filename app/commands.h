// The sub-commands of `pax-ocl`. Each validates its own flags and returns the process exit code.
#pragma once

#include "app/cli_args.h"
#include "collectives/process_world.h"

namespace paxocl::app {

// Flags every command accepts.
inline const FlagSpec kCommonFlags[] = {
    {"help", "", "show this help"},
    {"log_level", "trace|debug|info|warn|error|off", "log verbosity (default info; env PAX_OCL_LOG_LEVEL)"},
};

int run_devices(const CliArgs& args, const collectives::ProcessWorld& world);
int run_train(const CliArgs& args, const collectives::ProcessWorld& world);
int run_data(const CliArgs& args, const collectives::ProcessWorld& world);
int run_eval(const CliArgs& args, const collectives::ProcessWorld& world);
int run_export(const CliArgs& args, const collectives::ProcessWorld& world);
int run_bench(const CliArgs& args, const collectives::ProcessWorld& world);
int run_tune(const CliArgs& args, const collectives::ProcessWorld& world);
int run_sample(const CliArgs& args, const collectives::ProcessWorld& world);
int run_plan(const CliArgs& args, const collectives::ProcessWorld& world);

}  // namespace paxocl::app
