// Sequence parallelism's rule over the batch, one function for the job (config::resolve_job) and
// the planner (plan::LayoutSpec), so both refuse the same layouts in the same words: every pass
// (a pipeline's microbatch, a NUM_SUB_BATCHES sub-batch, else the replica's whole batch) splits its
// N = sequences x MAX_SEQ_LEN rows over the tensor axis t (models/layers/sequence_parallel.h), so t
// divides N. Checked at configuration time: the model's own check (BlockModel::start_pass) would
// only fire at the first pass, after devices were opened and checkpoint 0 written.
// Host only, like pipeline_rules.h.
#pragma once

namespace paxocl::config {

struct SequenceParallelRequest {
  int tensor = 1;         // the mesh's tensor axis (ici x dcn); 1: nothing to check
  long batch = 1;         // sequences each model replica (tensor group or pipeline) runs per step
  long seq_len = 1;       // MAX_SEQ_LEN
  int sub_batches = 1;    // NUM_SUB_BATCHES
  int stages = 1;         // the mesh's stage axis
  int microbatches = 1;   // a pipeline's microbatches (pipeline_microbatches; 1 without stages)
};

// ConfigError, one line naming the numbers and the settings that fix it, when SEQUENCE_PARALLEL
// is on and t does not divide one pass's rows.
void check_sequence_parallel_rows(const SequenceParallelRequest& request);

}  // namespace paxocl::config
