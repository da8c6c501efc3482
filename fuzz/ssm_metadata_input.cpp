#include "fuzz/ssm_metadata_input.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "fuzz/fuzz_support.h"

namespace paxocl::fuzz::ssm_metadata_input {

namespace {
models::GptConfig with_ssm(int layers, std::vector<models::BlockKind> kinds, int n, float step, const char* hippo,
                           int l_max) {
  models::GptConfig c = tiny_config();
  c.num_layers = layers;
  c.block_kinds = std::move(kinds);
  c.ssm.state_size = n;
  c.ssm.step_size = step;
  c.ssm.hippo_type = hippo;
  c.ssm.l_max = l_max;
  return c;
}
}  // namespace

const std::array<models::GptConfig, 4>& models() {
  using models::BlockKind;
  static const std::array<models::GptConfig, 4> all = {
      with_ssm(2, {BlockKind::kAttention, BlockKind::kSsm}, 4, 0.02f, "ss4d-legs", 8),
      with_ssm(1, {BlockKind::kSsm}, 2, 0.01f, "ss4d-1d", 0),
      with_ssm(2, {BlockKind::kSsm, BlockKind::kAttention}, 3, 0.5f, "ss4d-lagt", 4),
      tiny_config(),
  };
  return all;
}

nlohmann::ordered_json parse_metadata(std::string_view lines) {
  nlohmann::ordered_json m = nlohmann::ordered_json::object();
  while (!lines.empty()) {
    const std::size_t end = std::min(lines.find('\n'), lines.size());
    const std::string_view line = lines.substr(0, end);
    lines.remove_prefix(std::min(end + 1, lines.size()));
    const std::size_t eq = line.find('=');
    m[std::string(line.substr(0, eq))] = eq == std::string_view::npos ? std::string() : std::string(line.substr(eq + 1));
  }
  return m;
}

std::string metadata_lines(const nlohmann::json& metadata) {
  std::string out;
  for (const auto& [key, value] : metadata.items()) out += key + "=" + value.get<std::string>() + "\n";
  return out;
}

}  // namespace paxocl::fuzz::ssm_metadata_input
