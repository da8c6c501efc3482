#include "common/safetensors.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/bounded_json.h"
#include "common/errors.h"
#include "common/saturating.h"

namespace paxocl {

std::uint64_t element_count(const TensorShape& shape) {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) n = mul_sat(n, static_cast<std::uint64_t>(d));
  return n;
}

namespace {

std::size_t dtype_bytes(std::string_view dtype) {
  static const std::map<std::string_view, std::size_t> kSizes{
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"U16", 2}, {"I16", 2},
      {"F16", 2},  {"BF16", 2}, {"U32", 4}, {"I32", 4},     {"F32", 4},     {"U64", 8}, {"I64", 8}, {"F64", 8}};
  const auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

// Parses and checks the header of every tensor (extras too): dtype, shape and offsets that tile the
// data buffer exactly, as the safetensors specification requires.
std::map<std::string, SafetensorsReader::Entry> parse_safetensors_header(const std::filesystem::path& file, const nlohmann::json& header,
                                                                        std::uint64_t data_bytes) {
  if (!header.is_object()) throw FileError(file, "invalid safetensors JSON header: not an object");
  std::map<std::string, SafetensorsReader::Entry> entries;
  for (const auto& [name, j] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string& tensor = name;  // clang < 16 cannot capture a structured binding (the fuzz build)
    auto bad = [&](std::string_view what) { throw FileError(file, fmt::format("tensor {}: {}", tensor, what)); };
    if (!j.is_object() || !j.contains("dtype") || !j["dtype"].is_string() || !j.contains("shape") ||
        !j["shape"].is_array() || !j.contains("data_offsets") || !j["data_offsets"].is_array()) {
      bad("header entry needs \"dtype\" (string), \"shape\" and \"data_offsets\" (arrays)");
    }
    SafetensorsReader::Entry e;
    e.dtype = j["dtype"].get<std::string>();
    for (const auto& d : j["shape"]) {
      if (!d.is_number_unsigned()) bad(fmt::format("bad shape {}", j["shape"].dump()));
      e.shape.push_back(static_cast<std::int64_t>(std::min<std::uint64_t>(d.get<std::uint64_t>(), std::numeric_limits<std::int64_t>::max())));
    }
    const auto& off = j["data_offsets"];
    if (off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      bad(fmt::format("bad data_offsets {}", off.dump()));
    }
    e.begin = off[0].get<std::uint64_t>();
    e.end = off[1].get<std::uint64_t>();
    if (e.begin > e.end || e.end > data_bytes) {
      bad(fmt::format("data_offsets [{}, {}] out of range: the data holds {} bytes", e.begin, e.end, data_bytes));
    }
    const std::size_t elem = dtype_bytes(e.dtype);
    if (elem == 0) bad(fmt::format("unknown dtype {}", e.dtype));
    const std::uint64_t need = mul_sat(element_count(e.shape), elem);
    if (e.end - e.begin != need) {
      bad(fmt::format("data_offsets [{}, {}] span {} bytes, but shape [{}] of {} needs {}", e.begin, e.end,
                      e.end - e.begin, fmt::join(e.shape, ", "), e.dtype, need));
    }
    entries.emplace(name, std::move(e));
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;  // (begin, end), sorted
  for (const auto& [name, e] : entries) ranges.emplace_back(e.begin, e.end);
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t covered = 0;
  for (const auto& [b, e] : ranges) {
    if (b < covered) throw FileError(file, fmt::format("overlapping tensors: data_offsets [{}, {}] start inside bytes before {}", b, e, covered));
    if (b > covered) throw FileError(file, fmt::format("bytes [{}, {}) of the data belong to no tensor", covered, b));
    covered = e;
  }
  if (covered != data_bytes) throw FileError(file, fmt::format("bytes [{}, {}) of the data belong to no tensor", covered, data_bytes));
  return entries;
}

}  // namespace

SafetensorsReader::SafetensorsReader(const std::filesystem::path& file) : in_(file) {
  std::uint64_t header_bytes = 0;
  if (in_.size() < sizeof header_bytes) {
    throw FileError(file, fmt::format("truncated: expected at least 8 bytes (the safetensors header length), got {}", in_.size()));
  }
  in_.read(0, &header_bytes, sizeof header_bytes);
  if (header_bytes > in_.size() - sizeof header_bytes) {
    throw FileError(file, fmt::format("safetensors header length {} runs past the end of the file ({} bytes): truncated or not "
                           "a safetensors file", header_bytes, in_.size()));
  }
  if (header_bytes > kMaxHeaderBytes) {
    throw FileError(file, fmt::format("safetensors header of {} bytes; the format allows at most {}", header_bytes, kMaxHeaderBytes));
  }
  std::string text(header_bytes, '\0');
  in_.read(sizeof header_bytes, text.data(), text.size());
  data_start_ = sizeof header_bytes + header_bytes;
  nlohmann::json header;
  try {
    header = parse_json_bounded(text);
  } catch (const std::invalid_argument& e) {
    throw FileError(file, fmt::format("invalid safetensors JSON header: {}", e.what()));
  }
  entries_ = parse_safetensors_header(file, header, in_.size() - data_start_);
  if (header.contains("__metadata__")) metadata_ = std::move(header["__metadata__"]);
}

void SafetensorsReader::read(const Entry& entry, void* dst) const {
  in_.read(data_start_ + entry.begin, dst, entry.end - entry.begin);
}

std::vector<float> SafetensorsReader::read_f32(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) throw FileError(in_.path(), fmt::format("missing tensor {}", name));
  if (it->second.dtype != "F32") throw FileError(in_.path(), fmt::format("tensor {} has dtype {}, expected F32", name, it->second.dtype));
  std::vector<float> data((it->second.end - it->second.begin) / sizeof(float));
  read(it->second, data.data());
  return data;
}

SafetensorsWriter::SafetensorsWriter(const std::filesystem::path& file, const std::vector<std::pair<std::string, TensorShape>>& tensors,
                                     const nlohmann::ordered_json& metadata)
    : file_(file), out_(file) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t pos = 0;
  for (const auto& [name, shape] : tensors) {
    const std::uint64_t bytes = element_count(shape) * sizeof(float);
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {pos, pos + bytes}}};
    sizes_.push_back(element_count(shape));
    pos += bytes;
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');  // the data starts 8-byte aligned, as Python's writer does
  const std::uint64_t header_bytes = text.size();
  out_.write(&header_bytes, sizeof header_bytes);
  out_.write(text.data(), text.size());
}

void SafetensorsWriter::add(std::span<const float> data) {
  if (next_ >= sizes_.size() || data.size() != sizes_[next_]) {
    throw std::logic_error(fmt::format("{}: tensor {} written with {} floats", file_.string(), next_, data.size()));
  }
  out_.write(data.data(), data.size_bytes());
  ++next_;
}

void SafetensorsWriter::commit() {
  if (next_ != sizes_.size()) throw std::logic_error(fmt::format("{}: {} of {} tensors written", file_.string(), next_, sizes_.size()));
  out_.commit();
}

}  // namespace paxocl
