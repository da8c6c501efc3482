// Fuzzes the zero-shot task reader (inputs/zero_shot_examples.h): any file, read as Lambada and as
// BoolQ, gives examples whose every id is in the vocabulary, whose context and candidates are not
// empty and fit MAX_SEQ_LEN together (context + the longest candidate), with BoolQ's two candidates
// and an answer of 0 or 1 - or is refused with a DataError. No tokenizer: text lines are refused.
#include <algorithm>
#include <cstdint>

#include "common/errors.h"
#include "fuzz/fuzz_support.h"
#include "inputs/zero_shot_examples.h"

using namespace paxocl;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto file = fuzz::scratch_dir() / "task.jsonl";
  fuzz::write_file(file, data, size);
  constexpr int kVocab = 300, kMaxSeqLen = 16;
  for (const inputs::ZeroShotTask task : {inputs::ZeroShotTask::kLambada, inputs::ZeroShotTask::kBoolq}) {
    try {
      const auto examples = inputs::read_zero_shot_examples(file, task, {kVocab, kMaxSeqLen, nullptr});
      fuzz::require(!examples.empty(), "an empty example list was returned");
      for (const inputs::ZeroShotExample& e : examples) {
        fuzz::require(!e.context.empty(), "an example without context");
        fuzz::require(e.candidates.size() == (task == inputs::ZeroShotTask::kBoolq ? 2u : 1u), "wrong candidate count");
        fuzz::require(e.answer == 0 || e.answer == 1, "an answer other than 0 or 1");
        std::size_t longest = 0;
        for (const auto& c : e.candidates) {
          fuzz::require(!c.empty(), "an empty candidate");
          longest = std::max(longest, c.size());
          for (int id : c) fuzz::require(id >= 0 && id < kVocab, "a candidate id outside the vocabulary");
        }
        fuzz::require(e.context.size() + longest <= static_cast<std::size_t>(kMaxSeqLen), "an example longer than MAX_SEQ_LEN");
        for (int id : e.context) fuzz::require(id >= 0 && id < kVocab, "a context id outside the vocabulary");
      }
    } catch (const DataError&) {
    }
  }
  return 0;
}
