// Fuzzes the safetensors reader (common/safetensors.h) and the GPT weight loader on top of it
// (models::load_safetensors): a file either reads, its entries tiling data that lies inside the
// file, or is refused with a documented error. Weights that load save and load again unchanged.
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "common/errors.h"
#include "common/safetensors.h"
#include "fuzz/fuzz_support.h"
#include "models/parameter_layout.h"
#include "models/weights_io.h"

using namespace paxocl;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto file = fuzz::scratch_dir() / "weights.safetensors";
  fuzz::write_file(file, data, size);

  try {
    const SafetensorsReader reader(file);
    for (const auto& [name, entry] : reader.entries()) {
      fuzz::require(entry.begin <= entry.end && entry.end <= size, "an entry's byte range reaches past the file");
      std::vector<char> bytes(entry.end - entry.begin);
      reader.read(entry, bytes.data());
      if (entry.dtype == "F32") {
        fuzz::require(reader.read_f32(name).size() * 4 == bytes.size(), "read_f32 returned another size than the entry's");
      }
    }
  } catch (const DataError&) {
  } catch (const ConfigError&) {
  }

  std::optional<models::HostWeights> w;
  try {
    w = models::load_safetensors(file, fuzz::kTinyHeads, 1);
  } catch (const DataError&) {
  } catch (const ConfigError&) {
  }
  if (!w) return 0;
  fuzz::require(w->data.size() == models::ParameterLayout(w->config, w->alignment).total(),
                "loaded weights do not fill the layout of their config");
  const auto copy = fuzz::scratch_dir() / "resaved.safetensors";
  models::save_safetensors(copy, *w);  // anything this loads must save
  const models::HostWeights again = models::load_safetensors(copy, fuzz::kTinyHeads, 1);
  fuzz::require(again.data.size() == w->data.size() &&
                    std::memcmp(again.data.data(), w->data.data(), w->data.size() * sizeof(float)) == 0,
                "weights changed in a save + load round trip");
  return 0;
}
