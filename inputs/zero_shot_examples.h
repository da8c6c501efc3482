// Zero-shot evaluation examples (Pax's `lambada_eval` task and CustomMetricsLM's BoolQ) from a
// JSON Lines file a user brings, one example per line (blank lines skipped):
//   Lambada  {"text": "... word"}: the last word (after the last space) is the target, scored
//            with its leading space; or {"inputs": "...", "targets": "..."}; or pre-tokenized
//            {"input_ids": [...], "target_ids": [...]}
//   BoolQ    {"question": "...", "passage": "...", "answer": true|false}: the prompt
//            "<passage>\nquestion: <question>?\nanswer:" (the question's own "?" not doubled) and
//            the candidates " yes" and " no"; or pre-tokenized
//            {"input_ids": [...], "yes_ids": [...], "no_ids": [...], "answer": true|false}
// Text is tokenized with the model's data tokenizer (SentencePiece), the inputs and each target
// apart, as seqio tokenizes a task's features. The inputs are then truncated from the left to
// MAX_SEQ_LEN minus the longest candidate, as Pax cuts them, so that the model reads the context
// and the candidate except its last token: at most MAX_SEQ_LEN - 1 positions.
// Every problem is a DataError of one line naming the file's line and the field: a line that is not
// a JSON object, a missing or mistyped field, empty inputs or targets, a candidate that leaves no
// room for one input token in MAX_SEQ_LEN, a token id outside the vocabulary, text with no tokenizer.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "inputs/tokenizer.h"

namespace paxocl::inputs {

enum class ZeroShotTask { kLambada, kBoolq };

// "lambada" or "boolq"; ConfigError naming the value and the two otherwise.
ZeroShotTask zero_shot_task_from_name(std::string_view name);

struct ZeroShotExample {
  long line = 0;                             // 1-based line in the file
  std::vector<int> context;                  // the inputs, truncated from the left
  std::vector<std::vector<int>> candidates;  // Lambada: the target; BoolQ: " yes", " no"
  int answer = 0;                            // the right candidate (Lambada: 0; BoolQ: 0 yes, 1 no)
};

struct ZeroShotLimits {
  int vocab_size = 0;                  // ids must be in [0, vocab_size)
  int max_seq_len = 0;                 // MAX_SEQ_LEN
  const Tokenizer* tokenizer = nullptr;  // for the text forms; null: pre-tokenized lines only
};

// Every example of `file` (DataError when it cannot be read or holds none).
std::vector<ZeroShotExample> read_zero_shot_examples(const std::filesystem::path& file, ZeroShotTask task,
                                                     const ZeroShotLimits& limits);

}  // namespace paxocl::inputs
