// The sampling flags shared by the commands that decode (`pax-ocl sample`, `pax-ocl bench decode`):
//   --temperature=T  (default 1; 0 = greedy)
//   --top_k=K        (default 0 = off)
//   --top_p=P        (default 1 = off; top-k applies first, as in praxis)
// A command lists kSamplingFlags among the FlagSpecs it validates and reads them with
// sampling_options(); the rules are sampling::validate's.
#pragma once

#include "app/cli_args.h"
#include "sampling/sampler.h"

namespace paxocl::app {

inline const FlagSpec kSamplingFlags[] = {
    {"temperature", "T", "sampling temperature, >= 0; 0 = greedy (default 1)"},
    {"top_k", "K", "sample among the K most probable tokens; 0 = off (default 0)"},
    {"top_p", "P", "then among the smallest set whose probability reaches P, in (0, 1]; 1 = off (default 1)"},
};

// The options the flags give (defaults for absent ones), validated: a ConfigError naming the flag
// when a value is not a number of the right kind or breaks its rule.
sampling::SamplingOptions sampling_options(const CliArgs& args);

// An integer flag (`fallback` when absent); ConfigError "--NAME=TEXT: expected an integer".
int integer_flag(const CliArgs& args, const char* name, int fallback);

}  // namespace paxocl::app
