#include "common/bounded_json.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>

namespace paxocl {

namespace {
struct TooDeep {};
}  // namespace

nlohmann::json parse_json_bounded(std::string_view text, int max_depth, std::size_t max_bytes) {
  if (text.size() > max_bytes) {
    throw std::invalid_argument(fmt::format("{} bytes of JSON, more than the {} accepted", text.size(), max_bytes));
  }
  try {
    return nlohmann::json::parse(text, [max_depth](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > max_depth) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    throw std::invalid_argument(fmt::format("JSON nested deeper than {} levels", max_depth));
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(e.what());
  }
}

nlohmann::json read_json_file_bounded(const std::filesystem::path& file, int max_depth, std::size_t max_bytes) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot be read");
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      throw std::invalid_argument(fmt::format("more than the {} bytes of JSON accepted", max_bytes));
    }
  }
  if (in.bad()) throw std::invalid_argument("read error");
  return parse_json_bounded(text, max_depth, max_bytes);
}

}  // namespace paxocl
