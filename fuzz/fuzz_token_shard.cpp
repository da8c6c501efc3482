// Fuzzes the token-shard reader (inputs/token_shard.h): any file either opens, with every token
// readable and below the vocabulary bound asked for, or is refused with a DataError.
#include <cstdint>

#include "common/errors.h"
#include "fuzz/fuzz_support.h"
#include "inputs/token_shard.h"

using namespace paxocl;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto file = fuzz::scratch_dir() / "shard.bin";
  fuzz::write_file(file, data, size);
  for (const std::uint32_t max_vocab : {0u, 300u}) {
    try {
      const inputs::TokenShard shard(file, max_vocab);
      fuzz::require(shard.size() * 2 <= size, "a shard holds more tokens than its file has bytes");
      std::uint64_t sum = 0;
      for (std::size_t i = 0; i < shard.size(); ++i) {
        const std::uint32_t token = shard[i];
        fuzz::require(max_vocab == 0 || token < max_vocab, "a token at or above the vocabulary bound was accepted");
        sum += token;
      }
      volatile std::uint64_t sink = sum;  // every token is read
      (void)sink;
    } catch (const DataError&) {
    } catch (const ConfigError&) {
    }
  }
  return 0;
}
