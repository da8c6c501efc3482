#include "app/agreed_step.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::app {

int exit_code_for(const std::exception& error) {
  if (dynamic_cast<const ConfigError*>(&error) != nullptr) return kExitUsage;
  if (dynamic_cast<const DataError*>(&error) != nullptr) return kExitData;
  if (const auto* agreed = dynamic_cast<const AgreedError*>(&error)) return agreed->exit_code();
  return kExitDevice;
}

void agree_on_failure(const collectives::ProcessWorld& world, int exit_code, const std::string& message) {
  if (world.size() == 1) {
    if (exit_code != 0) throw AgreedError(message, exit_code);
    return;
  }
  const std::vector<int> codes = world.all_gather(exit_code);
  if (std::all_of(codes.begin(), codes.end(), [](int c) { return c == 0; })) return;
  const std::vector<std::string> messages = world.all_gather(message);
  // One line when every failing rank says the same; otherwise each rank's line.
  std::string merged;
  bool same = true;
  std::string first;
  for (std::size_t r = 0; r < codes.size(); ++r) {
    if (codes[r] == 0) continue;
    if (first.empty()) first = messages[r];
    same = same && messages[r] == first;
    merged += fmt::format("{}rank {}: {}", merged.empty() ? "" : "\n", r, messages[r]);
  }
  throw AgreedError(same ? first : merged, *std::max_element(codes.begin(), codes.end()));
}

}  // namespace paxocl::app
