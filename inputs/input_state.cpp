#include "inputs/input_state.h"

#include <charconv>
#include <map>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::inputs {

std::string InputState::to_string() const {
  std::string s = fmt::format("epoch={},index={}", epoch, index);
  if (geometry) s += fmt::format(",seq_len={},global_batch={},tokens={}", geometry->seq_len, geometry->global_batch, geometry->tokens);
  return s;
}

InputState InputState::parse(const std::string& text) {
  auto fail = [&](const std::string& why) -> InputState {
    throw DataError(fmt::format("input state '{}' is malformed ({}); expected epoch=N,index=M[,seq_len=T,global_batch=G,tokens=K]",
                                text, why));
  };
  std::map<std::string, std::uint64_t> values;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) return fail(fmt::format("'{}' is not key=value", item));
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key != "epoch" && key != "index" && key != "seq_len" && key != "global_batch" && key != "tokens") {
      return fail(fmt::format("unknown key '{}'", key));
    }
    std::uint64_t v = 0;
    // from_chars takes no sign, so "-1" is rejected rather than wrapped to 2^64 - 1.
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
      return fail(fmt::format("{}={} is not an unsigned number", key, value));
    }
    if (!values.emplace(key, v).second) return fail(fmt::format("{} given twice", key));
  }
  if (!values.contains("epoch") || !values.contains("index")) return fail("epoch and index are required");
  InputState s;
  s.epoch = values["epoch"];
  s.index = values["index"];
  const std::size_t geometry_keys = values.size() - 2;
  if (geometry_keys == 3) {
    s.geometry = WindowGeometry{values["seq_len"], values["global_batch"], values["tokens"]};
    if (s.geometry->seq_len == 0 || s.geometry->global_batch == 0 || s.geometry->tokens == 0) {
      return fail("seq_len, global_batch and tokens must be positive");
    }
  } else if (geometry_keys != 0) {
    return fail("seq_len, global_batch and tokens go together");
  }
  return s;
}

}  // namespace paxocl::inputs
