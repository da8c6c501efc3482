// Fuzzes reading a checkpoint back (checkpoint/checkpoint_reader.h): a manifest.pb and one part
// file in a checkpoint directory, read for the tiny GPT's layout. A checkpoint either restores the
// whole state or is skipped (DataError) or refused (ConfigError: another model's).
//
// Input (fuzz::split_sections): byte 0 flags, bytes 1..4 the manifest's length n (little-endian;
// clamped to what is there), then n bytes of manifest.pb, then the bytes of part-00000.safetensors. With flag bit 0
// set, the target rewrites the size and CRC32C the manifest records for the part file to match it
// (when the manifest parses), so mutations of the part get past verification to the pieces.
#include <cstdint>
#include <filesystem>
#include <string>

#include "checkpoint/checkpoint_reader.h"
#include "common/crc32c.h"
#include "common/errors.h"
#include "fuzz/fuzz_support.h"
#include "models/parameter_layout.h"
#include "proto/checkpoint.pb.h"

using namespace paxocl;

namespace {
constexpr const char* kPart = "part-00000.safetensors";
constexpr long kStep = 7;

std::string fix_part_record(const std::string& manifest_bytes, const std::string& part) {
  proto::CheckpointManifest manifest;
  if (!manifest.ParseFromString(manifest_bytes)) return manifest_bytes;
  for (auto& f : *manifest.mutable_files()) {
    if (f.name() != kPart) continue;
    f.set_size(part.size());
    f.set_crc32c(crc32c(part));
  }
  return manifest.SerializeAsString();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const models::ParameterLayout layout(fuzz::tiny_config(), 1);
  if (size < 5) return 0;
  const fuzz::Sections in = fuzz::split_sections(data, size, 2);
  const std::string part(in.parts[1]);
  std::string manifest(in.parts[0]);
  if ((in.flags & 1) != 0) manifest = fix_part_record(manifest, part);

  const checkpoint::CheckpointDir dir(fuzz::scratch_dir() / "checkpoints");
  std::filesystem::remove_all(dir.root());
  std::filesystem::create_directories(dir.final_path(kStep));
  fuzz::write_file(dir.final_path(kStep) / checkpoint::CheckpointDir::kManifest, manifest);
  fuzz::write_file(dir.final_path(kStep) / kPart, part);

  try {
    (void)checkpoint::read_manifest_summary(dir, kStep);
  } catch (const DataError&) {
  } catch (const ConfigError&) {
  }
  try {
    const auto state = checkpoint::read_latest_checkpoint(dir, layout, nullptr, [](const std::string&) {});
    if (state) {
      fuzz::require(state->params.size() == layout.total() && state->m.size() == layout.total() &&
                        state->v.size() == layout.total(),
                    "a restored state does not fill the layout");
    }
  } catch (const ConfigError&) {
  } catch (const DataError&) {
  }
  return 0;
}
