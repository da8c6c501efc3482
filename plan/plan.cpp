#include "plan/plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/errors.h"
#include "plan/layout_search.h"

namespace paxocl::plan {

namespace {

StepTime step_time(const Plan& p, const PlanOptions& options) {
  StepTime t;
  t.peak_gflops = p.accelerator.peak_gflops(p.spec.fprop);
  t.mfu = options.mfu.value_or(p.accelerator.default_mfu);
  t.ici_gbps = options.ici_gbps.value_or(p.accelerator.ici_gbps);
  t.dcn_gbps = options.dcn_gbps.value_or(p.accelerator.dcn_gbps);
  if (t.peak_gflops > 0) {
    t.compute_s = p.flops_per_device / (t.peak_gflops * 1e9 * t.mfu);
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
  t.step_s = std::max(t.compute_s, t.hidden_s) + t.exposed_s;
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
  const models::ParameterLayout layout = device_layout(spec);
  p.memory = device_memory(spec, layout);
  const int T = spec.model.max_seq_len();
  p.flops_per_token = spec.model.flops_per_token(T);
  p.tokens_per_step = static_cast<double>(spec.global_batch) * T;
  p.flops_per_device = p.flops_per_token * p.tokens_per_step / spec.devices();
  p.collectives = step_collectives(spec, layout);
  p.time = step_time(p, options);

  const MemoryLimits limits = limits_of(accelerator);
  const std::optional<std::string> why = misfit(p.memory, limits);
  p.fits = !why;
  if (p.fits) {
    p.verdict = fmt::format("fits: needs {:.1f} GiB per device, the device has {:.1f} GiB",
                            gib(static_cast<double>(p.memory.total())), gib(limits.memory_bytes));
    return p;
  }
  p.verdict = "does not fit: " + *why;
  p.smallest = smallest_fitting_layout(spec, limits);
  if (p.smallest) p.smallest_memory = device_memory(*p.smallest);
  return p;
}

void require_fits(const LayoutSpec& spec, const MemoryLimits& limits, const std::string& device_name) {
  const DeviceMemory memory = device_memory(spec);
  const std::optional<std::string> why = misfit(memory, limits);
  if (!why) return;
  const std::optional<LayoutSpec> smallest = smallest_fitting_layout(spec, limits);
  throw ConfigError(fmt::format(
      "the layout {} does not fit '{}': it {}; {} (`pax-ocl plan` with the same flags shows the details)",
      spec.describe(), device_name, *why,
      smallest ? fmt::format("the smallest layout that fits is {} ({})", smallest->describe(), smallest->flags())
               : std::string("no data x fsdp x tensor layout of this global batch fits: lower PERCORE_BATCH_SIZE or "
                             "MAX_SEQ_LEN")));
}

}  // namespace paxocl::plan
