// manifest.pb, sealed: the CheckpointManifest protobuf followed by its own CRC32C as field 13
// (manifest_crc32c, fixed32: tag byte 0x6D then 4 little-endian bytes), so the file still parses as
// a plain CheckpointManifest anywhere, and a flipped bit in a tensor name or a piece's range reads as
// corruption (DataError: the restore falls back) rather than as another model (ConfigError).
//
// Reading trusts nothing: at most kMaxManifestBytes, the seal must match (format 2; format 1 had
// none and is still read), the recorded step must be the directory's, and every file name (files
// and pieces) must be a plain name inside the checkpoint directory, every piece's file a listed
// (so CRC-verified) file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/regular_file.h"
#include "proto/checkpoint.pb.h"

namespace paxocl::checkpoint {

inline constexpr std::uint32_t kManifestFormat = 2;
inline constexpr std::size_t kMaxManifestBytes = std::size_t{256} << 20;

// The bytes of manifest.pb for `manifest` (format_version is set to kManifestFormat).
std::string seal_manifest(proto::CheckpointManifest manifest);

// Reads and checks `directory`/manifest.pb of the checkpoint of `step`; DataError naming the file and
// what is wrong.
proto::CheckpointManifest open_manifest(const std::filesystem::path& directory, long step);

using paxocl::is_plain_file_name;  // common/regular_file.h

}  // namespace paxocl::checkpoint
