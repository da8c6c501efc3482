// InputParams: how one process's input is configured (Pax's BaseInput hyper-parameters), and the
// batch arithmetic of multi-host data parallelism:
//   global batch = PERCORE_BATCH_SIZE x number of devices (may be fractional per device, e.g. when
//   tensor parallelism splits a batch), per-host batch = global batch / number of hosts.
#pragma once

#include <cstdint>
#include <string>

namespace paxocl::inputs {

struct InputParams {
  int seq_len = 128;               // MAX_SEQ_LEN: tokens per sequence
  int batch_size = 8;              // sequences per get_next() on this host
  int num_infeed_hosts = 1;        // processes feeding input (Pax: num_infeed_hosts)
  int infeed_host_index = 0;       // this process (Pax: infeed_host_index)
  bool is_training = true;         // shuffled, endless; else sequential evaluation passes
  std::uint64_t seed = 1234;       // shuffling order
  long eval_loop_num_batches = -1; // evaluation: N batches per pass, or -1 for exactly one epoch
  int prefetch_depth = 2;          // batches prepared ahead by a background thread (0: none)
  std::string tokenizer_model;     // SentencePiece .model for raw-text sources ("text:FILES")

  void validate() const;  // ConfigError naming the bad field
};

// Throws ConfigError when the per-host batch is not a whole positive number, with the numbers.
int per_host_batch_size(double percore_batch_size, int total_devices, int num_hosts);

}  // namespace paxocl::inputs
