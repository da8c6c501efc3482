#include "common/bounded_json.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>

#include "common/bounded_read.h"

namespace paxocl {

namespace {
// The deepest nesting of [ and { outside strings. Linear; a malformed text is the parser's to report.
// (nlohmann's callback parser could enforce the depth too, but it is quadratic in an object's keys.)
int nesting_depth(std::string_view text, int stop_above) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // skip the escaped character
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > stop_above) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}
}  // namespace

nlohmann::json parse_json_bounded(std::string_view text, int max_depth, std::size_t max_bytes) {
  if (text.size() > max_bytes) {
    throw std::invalid_argument(fmt::format("{} bytes of JSON, more than the {} accepted", text.size(), max_bytes));
  }
  if (nesting_depth(text, max_depth) > max_depth) {
    throw std::invalid_argument(fmt::format("JSON nested deeper than {} levels", max_depth));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(e.what());
  }
}

nlohmann::json read_json_file_bounded(const std::filesystem::path& file, int max_depth, std::size_t max_bytes) {
  return parse_json_bounded(read_file_bounded(file, max_bytes), max_depth, max_bytes);
}

}  // namespace paxocl
