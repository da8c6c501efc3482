#include "config/hparam_values.h"

#include <charconv>
#include <cstdint>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::config {

namespace {
std::string strip(std::string_view text) {
  std::string s;
  for (char c : text) {
    if (c != '_' && c != ' ') s += c;  // Python literals allow 1_000
  }
  return s;
}
}  // namespace

long parse_int_value(std::string_view field, std::string_view text) {
  const std::string s = strip(text);
  long value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    throw ConfigError(fmt::format("--fdl.{}={}: expected an integer", field, text));
  }
  return value;
}

double parse_float_value(std::string_view field, std::string_view text) {
  const std::string s = strip(text);
  char* end = nullptr;
  const double value = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(value)) {
    throw ConfigError(fmt::format("--fdl.{}={}: expected a finite number", field, text));
  }
  return value;
}

bool parse_bool_value(std::string_view field, std::string_view text) {
  if (text == "true" || text == "True" || text == "1") return true;
  if (text == "false" || text == "False" || text == "0") return false;
  throw ConfigError(fmt::format("--fdl.{}={}: expected a boolean (True or False)", field, text));
}

namespace {
// Strings end up in experiment.json and checkpoint manifests, which must be valid UTF-8 (JSON).
bool is_valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    std::uint32_t cp = n == 1 ? c : c & (0x3F >> (n - 1));
    for (std::size_t k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b >> 6) != 0x2) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;  // overlong, too big, surrogate
    i += n;
  }
  return true;
}
}  // namespace

std::string parse_string_value(std::string_view field, std::string_view text) {
  if (!is_valid_utf8(text)) {
    throw ConfigError(fmt::format("--fdl.{}: the value is not valid UTF-8; use UTF-8 text (paths included)", field));
  }
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'')) {
    if (text.back() != text.front()) throw ConfigError(fmt::format("--fdl.{}={}: unterminated string", field, text));
    return std::string(text.substr(1, text.size() - 2));
  }
  return std::string(text);
}

std::vector<long> parse_int_list_value(std::string_view field, std::string_view text) {
  std::string body = parse_string_value(field, text);  // a shell may pass the list quoted
  if (!body.empty() && body.front() == '[') {
    if (body.back() != ']') throw ConfigError(fmt::format("--fdl.{}={}: expected a list of integers such as [8,1,1]", field, text));
    body = body.substr(1, body.size() - 2);
  }
  std::vector<long> values;
  std::size_t start = 0;
  while (start <= body.size()) {
    const std::size_t comma = std::min(body.find(',', start), body.size());
    const std::string item = body.substr(start, comma - start);
    try {
      values.push_back(parse_int_value(field, item));
    } catch (const ConfigError&) {
      throw ConfigError(fmt::format("--fdl.{}={}: expected a list of integers such as [8,1,1]", field, text));
    }
    start = comma + 1;
  }
  return values;
}

}  // namespace paxocl::config
