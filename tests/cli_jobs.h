// What the training-job CLI tests share: the binary, the launchers, and a tiny model's 10-step
// schedule. For test targets compiled with PAXOCL_BINARY and PAXOCL_MPIEXEC (tests/CMakeLists.txt).
#pragma once

#include <string>

namespace paxocl::testing {

inline const std::string kBinary = PAXOCL_BINARY;
inline const std::string kMpirun = std::string(PAXOCL_MPIEXEC) + " --oversubscribe -np 2 ";
inline const std::string kFourDevices = "env 'POCL_DEVICES=pthread pthread pthread pthread' ";

// 10 steps of a tiny model of `layers` blocks, a loss line per step, one GEMM for every shape (auto
// may pick another implementation for a device's narrower matrices, which moves the last bits),
// float32 whatever FPROP_DTYPE=auto would pick (a test of 16 bits names its dtype after these
// flags: the last one wins).
inline std::string tiny_schedule(int layers) {
  return " --fdl.DATA=synthetic --fdl.VOCAB_SIZE=500 --fdl.NUM_LAYERS=" + std::to_string(layers) +
         " --fdl.MODEL_DIMS=64 --fdl.NUM_HEADS=4 --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=32 --fdl.MAX_STEPS=10"
         " --fdl.SUMMARY_INTERVAL_STEPS=1 --fdl.EVAL_INTERVAL_STEPS=0 --fdl.EVAL_LOOP_NUM_BATCHES=1"
         " --fdl.LR_COS_WARMUP=2 --fdl.LR_COS_DECAY_START=3 --fdl.LR_COS_DECAY_END=10 --gemm=cpu-12x32"
         " --fdl.FPROP_DTYPE=float32";
}

}  // namespace paxocl::testing
