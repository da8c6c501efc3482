// Fuzzes the llm.c checkpoint loader (models::load_llmc): a file either loads, filling the
// parameter layout of the config its header gives, or is refused with a documented error.
// Weights that load save and load again bit for bit (padding rows included).
#include <cstdint>
#include <cstring>
#include <optional>

#include "common/errors.h"
#include "fuzz/fuzz_support.h"
#include "models/parameter_layout.h"
#include "models/weights_io.h"

using namespace paxocl;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto file = fuzz::scratch_dir() / "model.bin";
  fuzz::write_file(file, data, size);
  std::optional<models::HostWeights> w;
  try {
    w = models::load_llmc(file, 1);
  } catch (const DataError&) {
  } catch (const ConfigError&) {
  }
  if (!w) return 0;
  fuzz::require(w->data.size() == models::ParameterLayout(w->config, w->alignment).total(),
                "loaded weights do not fill the layout of their config");
  fuzz::require(w->data.size() * sizeof(float) <= size, "more weights loaded than the file holds");
  const auto copy = fuzz::scratch_dir() / "resaved.bin";
  models::save_llmc(copy, *w);  // anything this loads must save
  const models::HostWeights again = models::load_llmc(copy, 1);
  fuzz::require(again.data.size() == w->data.size() &&
                    std::memcmp(again.data.data(), w->data.data(), w->data.size() * sizeof(float)) == 0,
                "weights changed in a save + load round trip");
  return 0;
}
