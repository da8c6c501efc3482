#include "checkpoint/manifest_file.h"

#include <cstring>
#include <set>

#include <fmt/format.h>

#include "checkpoint/checkpoint_dir.h"
#include "common/bounded_read.h"
#include "common/crc32c.h"
#include "common/errors.h"

namespace paxocl::checkpoint {

namespace {
constexpr unsigned char kSealTag = (13 << 3) | 5;  // field 13, wire type 5 (fixed32)
constexpr std::size_t kSealBytes = 5;
}  // namespace

std::string seal_manifest(proto::CheckpointManifest manifest) {
  manifest.set_format_version(kManifestFormat);
  manifest.clear_manifest_crc32c();
  std::string bytes = manifest.SerializeAsString();
  const std::uint32_t crc = crc32c(bytes);
  bytes.push_back(static_cast<char>(kSealTag));
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  return bytes;
}

proto::CheckpointManifest open_manifest(const std::filesystem::path& directory, long step) {
  const std::filesystem::path file = directory / CheckpointDir::kManifest;
  auto bad = [&](const std::string& what) { throw DataError(fmt::format("{}: {}", file.string(), what)); };
  if (!std::filesystem::exists(file)) bad("missing; the checkpoint is incomplete");
  std::string bytes;
  try {
    bytes = read_file_bounded(file, kMaxManifestBytes);
  } catch (const std::invalid_argument& e) {
    bad(fmt::format("{}: not a checkpoint manifest", e.what()));
  }
  proto::CheckpointManifest m;
  if (!m.ParseFromString(bytes)) bad("not a checkpoint manifest (corrupt)");
  if (m.format_version() != 1 && m.format_version() != kManifestFormat) {
    bad(fmt::format("format version {}; this pax-ocl reads versions 1 and {}", m.format_version(), kManifestFormat));
  }
  if (m.format_version() >= 2) {
    const auto* end = reinterpret_cast<const unsigned char*>(bytes.data() + bytes.size());
    std::uint32_t sealed = 0;
    if (bytes.size() < kSealBytes || end[-5] != kSealTag) bad("its checksum is missing (corrupt or truncated)");
    for (int i = 0; i < 4; ++i) sealed |= static_cast<std::uint32_t>(end[-4 + i]) << (8 * i);
    const std::uint32_t actual = crc32c(std::string_view(bytes).substr(0, bytes.size() - kSealBytes));
    if (actual != sealed || m.manifest_crc32c() != sealed) {
      bad(fmt::format("CRC32C {:08x}, the manifest records {:08x} (corrupt)", actual, sealed));
    }
  }
  if (m.step() != step) bad(fmt::format("records step {}, but its directory is that of step {} (corrupt or moved)", m.step(), step));
  std::set<std::string> listed;
  for (const auto& f : m.files()) {
    if (!is_plain_file_name(f.name())) bad(fmt::format("file name '{}' is not a plain file name in the checkpoint directory", f.name()));
    listed.insert(f.name());
  }
  for (const auto& t : m.tensors()) {
    for (const auto& p : t.pieces()) {
      if (!listed.contains(p.file())) {
        bad(fmt::format("a piece of {} lies in '{}', which is not among the checkpoint's verified files", t.name(), p.file()));
      }
    }
  }
  return m;
}

}  // namespace paxocl::checkpoint
