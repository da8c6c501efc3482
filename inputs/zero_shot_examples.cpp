#include "inputs/zero_shot_examples.h"

#include <algorithm>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "common/bounded_json.h"
#include "common/errors.h"
#include "common/regular_file.h"

namespace paxocl::inputs {

namespace {

using nlohmann::json;

// One line's fields, with errors that name the file, the line and the field.
class Line {
 public:
  Line(const std::filesystem::path& file, long number, json object, const ZeroShotLimits& limits)
      : file_(file), number_(number), object_(std::move(object)), limits_(limits) {}

  bool has(const char* field) const { return object_.contains(field); }

  std::string text(const char* field) const {
    const json& v = at(field);
    if (!v.is_string()) fail(field, fmt::format("must be a string, not {}", v.type_name()));
    return v.get<std::string>();
  }
  bool boolean(const char* field) const {
    const json& v = at(field);
    if (!v.is_boolean()) fail(field, fmt::format("must be true or false, not {}", v.type_name()));
    return v.get<bool>();
  }
  std::vector<int> ids(const char* field) const {
    const json& v = at(field);
    if (!v.is_array()) fail(field, fmt::format("must be a list of token ids, not {}", v.type_name()));
    std::vector<int> out;
    for (const json& id : v) {
      if (!id.is_number_integer()) fail(field, fmt::format("holds {}, not a token id", id.dump()));
      const auto value = id.get<long long>();
      if (value < 0 || value >= limits_.vocab_size) {
        fail(field, fmt::format("token id {} is outside the vocabulary [0, {})", value, limits_.vocab_size));
      }
      out.push_back(static_cast<int>(value));
    }
    return out;
  }
  // `value` (text from `field`) as token ids, with the model's tokenizer.
  std::vector<int> tokens(const char* field, std::string_view value) const {
    if (limits_.tokenizer == nullptr) {
      fail(field, "is text, but the model has no SentencePiece tokenizer (a weights file, or data with none): give "
                  "token ids (input_ids and target_ids or yes_ids/no_ids), or the tokenizer: --fdl.TOKENIZER=FILE.model "
                  "or --fdl.DATA=DIR of a prepared dataset");
    }
    std::vector<int> out = limits_.tokenizer->encode(value);
    for (int id : out) {
      if (id < 0 || id >= limits_.vocab_size) {
        fail(field, fmt::format("the tokenizer gives id {}, outside the model's vocabulary [0, {})", id,
                                limits_.vocab_size));
      }
    }
    return out;
  }

  // The tokens of a context, of which only the last MAX_SEQ_LEN can be kept (fit() cuts contexts
  // from the left): a long one is tokenized from a tail of its text, so a 40 MB line costs what a
  // few pages do (tokenizing it whole took 5.3 GB and 35 s). SentencePiece splits text at
  // whitespace and encodes each word alone, so a tail starting at a space encodes its words as the
  // whole text does; only its first word is in doubt, and the tail is used only when it holds
  // MAX_SEQ_LEN tokens after that word (else a 4x longer tail, up to the whole text). Short texts
  // (every ordinary example), and every text of a model whose pieces span whitespace
  // (split_by_whitespace=false), are tokenized whole.
  std::vector<int> context_tokens(const char* field, const std::string& value) const {
    const auto keep = static_cast<std::size_t>(std::max(limits_.max_seq_len, 1));
    const bool words_alone = limits_.tokenizer == nullptr || limits_.tokenizer->splits_at_whitespace();
    for (std::size_t bytes = 64 * keep + 65536; words_alone && bytes < value.size(); bytes *= 4) {
      const std::size_t start = value.find(' ', value.size() - bytes);
      if (start == std::string::npos) break;
      const std::size_t word = value.find_first_not_of(' ', start);
      if (word == std::string::npos) break;
      const std::size_t word_end = std::min(value.find(' ', word), value.size());
      const std::size_t first_word = tokens(field, value.substr(word, word_end - word)).size();
      std::vector<int> tail = tokens(field, std::string_view(value).substr(start));
      if (tail.size() >= keep + first_word) {
        tail.erase(tail.begin(), tail.end() - static_cast<std::ptrdiff_t>(keep));
        return tail;
      }
    }
    return tokens(field, value);
  }

  [[noreturn]] void fail(const char* field, const std::string& why) const {
    throw DataError(fmt::format("{} line {}: {}: {}", file_.string(), number_, field, why));
  }

 private:
  const json& at(const char* field) const {
    if (!object_.contains(field)) fail(field, "missing");
    return object_.at(field);
  }
  const std::filesystem::path& file_;
  long number_;
  json object_;
  const ZeroShotLimits& limits_;
};

// The fields a line's context and candidates came from, for the size errors.
struct Fields {
  const char* inputs;
  const char* targets;
};

// Lambada: the context and the one target of a line (text, inputs/targets or token ids).
ZeroShotExample lambada(const Line& line, Fields& fields) {
  ZeroShotExample e;
  if (line.has("input_ids")) {
    fields = {"input_ids", "target_ids"};
    e.context = line.ids("input_ids");
    e.candidates = {line.ids("target_ids")};
  } else if (line.has("inputs")) {
    fields = {"inputs", "targets"};
    e.context = line.context_tokens("inputs", line.text("inputs"));
    e.candidates = {line.tokens("targets", line.text("targets"))};
  } else {
    fields = {"text", "text"};
    const std::string text = line.text("text");
    const std::size_t cut = text.find_last_of(' ');
    if (cut == std::string::npos || cut == 0 || cut + 1 == text.size()) {
      line.fail("text", "needs words before the last one, which is the target (separated by a space)");
    }
    e.context = line.context_tokens("text", text.substr(0, cut));
    e.candidates = {line.tokens("text", text.substr(cut))};  // the target keeps its leading space
  }
  return e;
}

// BoolQ: the prompt and the candidates " yes" and " no"; answer 0 for true, 1 for false.
ZeroShotExample boolq(const Line& line, Fields& fields) {
  ZeroShotExample e;
  if (line.has("input_ids")) {
    fields = {"input_ids", "yes_ids/no_ids"};
    e.context = line.ids("input_ids");
    e.candidates = {line.ids("yes_ids"), line.ids("no_ids")};
  } else {
    fields = {"passage", "answer"};
    std::string question = line.text("question");
    if (question.empty() || question.back() != '?') question += '?';
    e.context = line.context_tokens("passage", line.text("passage") + "\nquestion: " + question + "\nanswer:");
    e.candidates = {line.tokens("answer", " yes"), line.tokens("answer", " no")};
  }
  e.answer = line.boolean("answer") ? 0 : 1;
  return e;
}

// Checks sizes and cuts the context from the left so the longest candidate fits MAX_SEQ_LEN.
void fit(const Line& line, ZeroShotExample& e, int max_seq_len, Fields fields) {
  const char* targets = fields.targets;
  const char* inputs = fields.inputs;
  std::size_t longest = 0;
  for (const std::vector<int>& c : e.candidates) {
    if (c.empty()) line.fail(targets, "is empty");
    longest = std::max(longest, c.size());
  }
  if (e.context.empty()) line.fail(inputs, "is empty: a target needs at least one token before it");
  const auto T = static_cast<std::size_t>(max_seq_len);
  if (longest >= T) {
    line.fail(targets, fmt::format("has {} tokens; MAX_SEQ_LEN={} leaves room for at most {} after one input token",
                                   longest, max_seq_len, max_seq_len - 1));
  }
  const std::size_t room = T - longest;
  if (e.context.size() > room) e.context.erase(e.context.begin(), e.context.end() - static_cast<std::ptrdiff_t>(room));
}

}  // namespace

ZeroShotTask zero_shot_task_from_name(std::string_view name) {
  if (name == "lambada") return ZeroShotTask::kLambada;
  if (name == "boolq") return ZeroShotTask::kBoolq;
  throw ConfigError(fmt::format("--task={}: unknown; use lambada or boolq", name));
}

std::vector<ZeroShotExample> read_zero_shot_examples(const std::filesystem::path& file, ZeroShotTask task,
                                                     const ZeroShotLimits& limits) {
  if (const std::string why = why_not_regular_file(file); !why.empty()) {
    throw DataError(fmt::format("{}: {}", file.string(), why));
  }
  std::ifstream in(file);
  if (!in) throw DataError(fmt::format("{}: cannot be opened", file.string()));
  std::vector<ZeroShotExample> examples;
  std::string text;
  for (long number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    json object;
    try {
      object = parse_json_bounded(text);
    } catch (const std::invalid_argument& e) {
      throw DataError(fmt::format("{} line {}: not JSON: {}", file.string(), number, e.what()));
    }
    if (!object.is_object()) {
      throw DataError(fmt::format("{} line {}: a JSON object per line, not {}", file.string(), number, object.type_name()));
    }
    const Line line(file, number, std::move(object), limits);
    Fields fields{};
    ZeroShotExample e = task == ZeroShotTask::kBoolq ? boolq(line, fields) : lambada(line, fields);
    fit(line, e, limits.max_seq_len, fields);
    e.line = number;
    examples.push_back(std::move(e));
  }
  if (in.bad()) throw DataError(fmt::format("{}: read error", file.string()));
  if (examples.empty()) throw DataError(fmt::format("{}: no examples (one JSON object per line)", file.string()));
  return examples;
}

}  // namespace paxocl::inputs
