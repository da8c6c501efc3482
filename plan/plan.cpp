#include "plan/plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/errors.h"
#include "plan/layout_search.h"
#include "plan/memory_choice.h"

namespace paxocl::plan {

namespace {

StepTime step_time(const Plan& p, const PlanOptions& options) {
  StepTime t;
  t.peak_gflops = p.accelerator.peak_gflops(p.spec.fprop);
  t.mfu = options.mfu.value_or(p.accelerator.default_mfu);
  t.ici_gbps = options.ici_gbps.value_or(p.accelerator.ici_gbps);
  t.dcn_gbps = options.dcn_gbps.value_or(p.accelerator.dcn_gbps);
  if (t.peak_gflops > 0) {
    t.compute_s = (p.flops_per_device + p.recompute_flops_per_device) / (t.peak_gflops * 1e9 * t.mfu);
  } else {
    t.unknown.emplace_back("peak FLOP rate");
  }
  auto seconds = [&](double bytes, double gbps, const char* link) {
    if (bytes <= 0) return 0.0;
    if (gbps <= 0) {
      if (std::find(t.unknown.begin(), t.unknown.end(), link) == t.unknown.end()) t.unknown.emplace_back(link);
      return 0.0;
    }
    return bytes / (gbps * 1e9);
  };
  for (const Collective& c : p.collectives) {
    const double op = seconds(c.ici_bytes, t.ici_gbps, "ICI") + seconds(c.dcn_bytes, t.dcn_gbps, "DCN");
    t.exposed_s += op * static_cast<double>(c.exposed);
    t.hidden_s += op * static_cast<double>(c.operations - c.exposed);
  }
  // A pipeline's stages idle (p - 1) of every r m + p - 1 chunk-microbatch slots
  // (models::bubble_fraction; r = 1 but under the circular schedule).
  t.bubble_s = t.compute_s * (p.spec.stages() - 1) / (p.spec.repeat * p.spec.microbatches());
  t.step_s = std::max(t.compute_s + t.bubble_s, t.hidden_s) + t.exposed_s;
  return t;
}

MemoryLimits limits_of(const Accelerator& a) { return MemoryLimits{a.memory_bytes, a.max_alloc_bytes}; }

}  // namespace

Plan make_plan(const LayoutSpec& spec, const Accelerator& accelerator, const PlanOptions& options) {
  spec.validate();
  if (options.mfu && !(*options.mfu > 0 && *options.mfu <= 1)) {
    throw ConfigError(fmt::format("--mfu={}: must be in (0, 1]", *options.mfu));
  }
  Plan p;
  p.spec = spec;
  p.accelerator = accelerator;
  const MemoryLimits limits = limits_of(accelerator);
  if ((!spec.checkpoint_policy_given || !spec.sub_batches_given) && misfit(device_memory(spec), limits)) {
    if (const std::optional<LayoutSpec> chosen = memory_choice(spec, limits)) {
      p.spec = *chosen;
      p.choice = fmt::format("{}: CHECKPOINT_POLICY={} NUM_SUB_BATCHES={}, the least recompute that fits this layout "
                             "({:.2f} TFLOP per token recomputed)",
                             spec.checkpoint_policy_given ? "NUM_SUB_BATCHES not given"
                             : spec.sub_batches_given     ? "CHECKPOINT_POLICY not given"
                                                          : "CHECKPOINT_POLICY and NUM_SUB_BATCHES not given",
                             models::checkpoint_policy_name(chosen->checkpoint_policy), chosen->sub_batches,
                             recompute_flops_per_token(*chosen) / 1e12);
    }
  }
  const models::ParameterLayout layout = device_layout(p.spec);
  p.memory = device_memory(p.spec, layout);
  const int T = p.spec.model.max_seq_len();
  p.flops_per_token = p.spec.model.flops_per_token(T);
  p.tokens_per_step = static_cast<double>(p.spec.global_batch) * T;
  p.flops_per_device = p.flops_per_token * p.tokens_per_step / p.spec.devices();
  p.recompute_flops_per_device = recompute_flops_per_token(p.spec) * p.tokens_per_step / p.spec.devices();
  p.collectives = step_collectives(p.spec, layout);
  p.bubble_fraction =
      p.spec.stages() > 1 ? models::bubble_fraction(p.spec.stages(), p.spec.microbatches(), p.spec.repeat) : 0.0;
  p.time = step_time(p, options);

  const std::optional<std::string> why = misfit(p.memory, limits);
  p.fits = !why;
  if (p.fits) {
    p.verdict = fmt::format("fits: needs {:.1f} GiB per device, the device has {:.1f} GiB",
                            gib(static_cast<double>(p.memory.total())), gib(limits.memory_bytes));
    return p;
  }
  p.verdict = "does not fit: " + *why;
  p.smallest = smallest_fitting_layout(p.spec, limits);
  if (p.smallest) p.smallest_memory = device_memory(*p.smallest);
  return p;
}

void require_fits(const LayoutSpec& spec, const MemoryLimits& limits, const std::string& device_name) {
  const DeviceMemory memory = device_memory(spec);
  const std::optional<std::string> why = misfit(memory, limits);
  if (!why) return;
  const std::optional<LayoutSpec> smallest = smallest_fitting_layout(spec, limits);
  LayoutSpec open = spec;  // what rematerialization or sub-batches would fit on this layout
  open.checkpoint_policy_given = open.sub_batches_given = false;
  const std::optional<LayoutSpec> remat = memory_choice(open, limits);
  throw ConfigError(fmt::format(
      "the layout {} does not fit '{}': it {}; {}{} (`pax-ocl plan` with the same flags shows the details)",
      spec.describe(), device_name, *why,
      remat ? fmt::format("on this layout --fdl.CHECKPOINT_POLICY={} --fdl.NUM_SUB_BATCHES={} fits; ",
                          models::checkpoint_policy_name(remat->checkpoint_policy), remat->sub_batches)
            : std::string(),
      smallest ? fmt::format("the smallest layout that fits is {} ({})", smallest->describe(), smallest->flags())
               : std::string("no stage x data x fsdp x tensor layout of this global batch fits: lower "
                             "PERCORE_BATCH_SIZE or MAX_SEQ_LEN")));
}

}  // namespace paxocl::plan
