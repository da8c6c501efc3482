#include "inputs/input_params.h"

#include <cmath>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::inputs {

void InputParams::validate() const {
  if (seq_len < 1) throw ConfigError(fmt::format("MAX_SEQ_LEN={}: must be at least 1", seq_len));
  if (batch_size < 1) throw ConfigError(fmt::format("per-host batch {}: must be at least 1", batch_size));
  if (num_infeed_hosts < 1 || infeed_host_index < 0 || infeed_host_index >= num_infeed_hosts) {
    throw ConfigError(fmt::format("infeed host {} of {}: need 0 <= index < hosts", infeed_host_index, num_infeed_hosts));
  }
  if (eval_loop_num_batches == 0 || eval_loop_num_batches < -1) {
    throw ConfigError(fmt::format("EVAL_LOOP_NUM_BATCHES={}: use a positive count or -1 (one epoch)", eval_loop_num_batches));
  }
  if (prefetch_depth < 0) throw ConfigError(fmt::format("prefetch depth {}: must be >= 0", prefetch_depth));
}

int per_host_batch_size(double percore_batch_size, int total_devices, int num_hosts) {
  const double global = percore_batch_size * total_devices;
  const double per_host = global / num_hosts;
  if (!(percore_batch_size > 0) || std::abs(per_host - std::round(per_host)) > 1e-9 || std::round(per_host) < 1) {
    throw ConfigError(fmt::format(
        "PERCORE_BATCH_SIZE={} x {} device(s) = global batch {} is not a whole number of sequences per host for {} "
        "host(s) ({}); choose PERCORE_BATCH_SIZE so that it is",
        percore_batch_size, total_devices, global, num_hosts, per_host));
  }
  return static_cast<int>(std::round(per_host));
}

}  // namespace paxocl::inputs
