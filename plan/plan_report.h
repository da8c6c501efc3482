// A Plan as `pax-ocl plan` prints it (a table per part, the step time and a one-line verdict) and
// as its --json file holds it (bytes, FLOPs and seconds, unrounded).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plan/plan.h"

namespace paxocl::plan {

std::string format_plan(const Plan& plan, const std::string& experiment);
nlohmann::json plan_json(const Plan& plan, const std::string& experiment);

}  // namespace paxocl::plan
