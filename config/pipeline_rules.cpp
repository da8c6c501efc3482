#include "config/pipeline_rules.h"

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::config {

int pipeline_microbatches(const PipelineRequest& r) {
  if (r.repeat > 1 && !r.circular) {
    throw ConfigError(fmt::format("CIRCULAR_REPEAT={} needs PIPELINE_SCHEDULE=circular", r.repeat));
  }
  if (r.stages == 1) return 1;
  if (r.repeat > 1 && r.blocks % (r.stages * r.repeat) != 0) {
    throw ConfigError(fmt::format("a stage axis of {} x CIRCULAR_REPEAT={} does not split NUM_LAYERS={} into {} chunks "
                                  "of whole blocks; choose them so that their product divides {}",
                                  r.stages, r.repeat, r.blocks, r.stages * r.repeat, r.blocks));
  }
  if (r.blocks % r.stages != 0) {
    throw ConfigError(fmt::format("a stage axis of {} does not split NUM_LAYERS={} into stages of whole blocks; choose "
                                  "a stage axis that divides {}",
                                  r.stages, r.blocks, r.blocks));
  }
  if (r.sub_batches > 1) {
    throw ConfigError(fmt::format("NUM_SUB_BATCHES={} with a stage axis: a pipeline already accumulates its "
                                  "microbatches' gradients; set NUM_MICROBATCHES instead",
                                  r.sub_batches));
  }
  const long count = r.num_microbatches, size = r.microbatch_size, batch = r.batch;
  if (count > 0 && size > 0) {
    throw ConfigError(fmt::format("NUM_MICROBATCHES={} and MICROBATCH_SIZE={}: set one of them", count, size));
  }
  const long microbatches = count > 0 ? count : size > 0 ? (batch % size == 0 ? batch / size : 0) : batch;
  if (microbatches < 1 || batch % microbatches != 0) {
    throw ConfigError(fmt::format("{} does not divide the {} sequences each pipeline runs per step "
                                  "(PERCORE_BATCH_SIZE={} x {} stage(s)); choose a divisor of {}",
                                  count > 0 ? fmt::format("NUM_MICROBATCHES={}", count)
                                            : fmt::format("MICROBATCH_SIZE={}", size),
                                  batch, r.percore_batch, r.stages, batch));
  }
  if (r.circular && microbatches % r.stages != 0) {
    throw ConfigError(fmt::format("PIPELINE_SCHEDULE=circular runs microbatches around the ring of {} stages in groups "
                                  "of {}: {} microbatches is not a multiple; set NUM_MICROBATCHES to one",
                                  r.stages, r.stages, microbatches));
  }
  return static_cast<int>(microbatches);
}

}  // namespace paxocl::config
