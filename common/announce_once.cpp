#include "common/announce_once.h"

#include <mutex>
#include <set>
#include <string>

namespace paxocl {

bool announce_once(std::string_view key) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> said;
  const std::lock_guard lock(mutex);
  return said.emplace(key).second;
}

}  // namespace paxocl
