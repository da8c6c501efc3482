#include "config/sequence_parallel_rules.h"

#include <string>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::config {

void check_sequence_parallel_rows(const SequenceParallelRequest& r) {
  if (r.tensor <= 1) return;
  const long pass = r.batch / (static_cast<long>(r.sub_batches) * r.microbatches);
  const long rows = pass * r.seq_len;
  if (rows % r.tensor == 0) return;
  std::string unit, fix;
  if (r.stages > 1) {
    unit = fmt::format("a microbatch of {} sequence(s) ({} / {} microbatches)", pass, r.batch, r.microbatches);
    fix = "NUM_MICROBATCHES or MICROBATCH_SIZE";
  } else if (r.sub_batches > 1) {
    unit = fmt::format("a sub-batch of {} sequence(s) ({} / NUM_SUB_BATCHES={})", pass, r.batch, r.sub_batches);
    fix = "NUM_SUB_BATCHES";
  } else {
    unit = fmt::format("a tensor group's batch of {} sequence(s)", pass);
    fix = "PERCORE_BATCH_SIZE";
  }
  throw ConfigError(fmt::format("SEQUENCE_PARALLEL: {} has {} x {} = {} rows (sequences x MAX_SEQ_LEN), which the "
                                "tensor axis {} does not divide; set {} or MAX_SEQ_LEN so that it does (or "
                                "SEQUENCE_PARALLEL=false)",
                                unit, pass, r.seq_len, rows, r.tensor, fix));
}

}  // namespace paxocl::config
