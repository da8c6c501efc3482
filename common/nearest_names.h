// Typo suggestions for unknown names (flags, hyper-parameters, experiments, commands), as Fiddle
// suggests the nearest attribute.
#pragma once

#include <algorithm>
#include <cctype>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace paxocl {

// Case-insensitive Levenshtein distance.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Up to three candidates closest to `name`, closest first; empty when none is plausibly a typo.
inline std::vector<std::string> nearest_names(std::string_view name, std::span<const std::string> candidates) {
  const std::size_t limit = std::max<std::size_t>(2, name.size() / 3);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(name, c);
    if (d <= limit) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < 3; ++i) out.push_back(scored[i].second);
  return out;
}

// " (did you mean --x or --y?)" or "", for error messages.
inline std::string did_you_mean(std::string_view name, std::span<const std::string> candidates, std::string_view prefix) {
  const std::vector<std::string> near = nearest_names(name, candidates);
  if (near.empty()) return "";
  std::string s = " (did you mean ";
  for (std::size_t i = 0; i < near.size(); ++i) {
    if (i > 0) s += i + 1 == near.size() ? " or " : ", ";
    s += std::string(prefix) + near[i];
  }
  return s + "?)";
}

}  // namespace paxocl
