#include "scheduler/evaluation.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"

namespace paxocl::scheduler {

EvalInputs make_eval_inputs(const config::JobConfig& job) {
  inputs::InputParams p = job.input;
  p.batch_size = job.step.replica_batch;  // evaluated on one model replica per process
  p.is_training = false;
  p.prefetch_depth = 0;
  EvalInputs e;
  e.train = inputs::make_input(job.data, "train", p, job.model.vocab_size());
  try {
    e.test = inputs::make_input(job.data, "validation", p, job.model.vocab_size());
  } catch (const DataError& err) {
    spdlog::warn("no validation data ({}); eval_test is skipped", err.what());
  }
  return e;
}

models::LossStats job_total(const collectives::ProcessWorld& world, models::LossStats local) {
  std::vector<double> v = {local.weighted_loss, local.weight, local.correct};
  world.all_reduce_sum(v);
  return models::LossStats{v[0], v[1], v[2]};
}

models::LossStats evaluate(const collectives::ProcessWorld& world, StepProgram& program, inputs::BaseInput& input,
                           SummaryWriter* out, long step, const char* name) {
  input.reset();
  models::LossStats local;
  long batches = 0;
  std::optional<inputs::Batch> last;
  for (;;) {
    std::optional<inputs::Batch> batch = input.get_next();
    if (program.evaluation_is_collective()) {
      std::vector<double> any = {batch ? 1.0 : 0.0};
      world.all_reduce_sum(any);
      if (any[0] == 0) break;
      if (!batch && last) {
        batch = last;
        std::fill(batch->weights.begin(), batch->weights.end(), 0.0f);
      } else if (!batch) {
        throw DataError(fmt::format("{}: this process has no evaluation data while others do", name));
      }
    } else if (!batch) {
      break;
    }
    local += program.evaluate(*batch);
    ++batches;
    last = std::move(batch);
  }
  const models::LossStats total = job_total(world, local);
  if (out != nullptr) {
    out->scalar("loss", total.mean_loss(), step);
    out->scalar("log_pplx", total.mean_loss(), step);
    out->scalar("fraction_of_correct_next_step_preds", total.accuracy(), step);
  }
  spdlog::info("{} at step {}: loss {:.4f}  log_pplx {:.4f}  accuracy {:.4f}  ({} batches, {:.0f} tokens)", name, step,
               total.mean_loss(), total.mean_loss(), total.accuracy(), batches, total.weight);
  return total;
}

}  // namespace paxocl::scheduler
