// Zero-shot task files (inputs/zero_shot_examples.h): Lambada and BoolQ examples in each form,
// tokenized with a SentencePiece model trained here and compared with its own encoding of the
// pieces the reader must cut; inputs truncated from the left to MAX_SEQ_LEN minus the longest
// candidate; and every bad line a one-line DataError naming its line number and field.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "common/errors.h"
#include "inputs/zero_shot_examples.h"
#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

using inputs::ZeroShotTask;

class ZeroShotExamples : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_dir_ = new TempDir;
    const auto text = write_word_story(model_dir_->path(), 40, 3);
    inputs::train_tokenizer(text, model_dir_->path() / "m", 100, "bpe");
    tokenizer_ = new inputs::Tokenizer(model_dir_->path() / "m.model");
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete model_dir_;
  }

  std::filesystem::path file(const std::string& lines) {
    const auto path = dir_.path() / ("task" + std::to_string(files_++) + ".jsonl");
    std::ofstream(path) << lines;
    return path;
  }
  std::vector<inputs::ZeroShotExample> read(const std::string& lines, ZeroShotTask task, int max_seq_len = 64,
                                            bool with_tokenizer = true) {
    return inputs::read_zero_shot_examples(file(lines), task,
                                           {100, max_seq_len, with_tokenizer ? tokenizer_ : nullptr});
  }
  // The one-line error of reading `lines`, which must name `line` and `field`.
  void expect_error(const std::string& lines, ZeroShotTask task, long line, const std::string& field,
                    const std::string& why, bool with_tokenizer = true) {
    SCOPED_TRACE(lines);
    try {
      read(lines, task, 16, with_tokenizer);
      ADD_FAILURE() << "no error";
    } catch (const DataError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(" line " + std::to_string(line) + ": " + field), std::string::npos) << what;
      EXPECT_NE(what.find(why), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }

  static inputs::Tokenizer* tokenizer_;
  static TempDir* model_dir_;
  TempDir dir_;
  int files_ = 0;
};
inputs::Tokenizer* ZeroShotExamples::tokenizer_ = nullptr;
TempDir* ZeroShotExamples::model_dir_ = nullptr;

TEST_F(ZeroShotExamples, LambadaInEveryForm) {
  const auto examples = read(
      "{\"text\": \"the king went into the house\"}\n"
      "\n"
      "{\"inputs\": \"and the lord said\", \"targets\": \" unto\"}\n"
      "{\"input_ids\": [5, 6, 7], \"target_ids\": [8, 9]}\n",
      ZeroShotTask::kLambada);
  ASSERT_EQ(examples.size(), 3u);
  EXPECT_EQ(examples[0].line, 1);
  EXPECT_EQ(examples[0].context, tokenizer_->encode("the king went into the"));
  EXPECT_EQ(examples[0].candidates, std::vector<std::vector<int>>{tokenizer_->encode(" house")});
  EXPECT_EQ(examples[0].answer, 0);
  EXPECT_EQ(examples[1].line, 3);  // blank lines count
  EXPECT_EQ(examples[1].context, tokenizer_->encode("and the lord said"));
  EXPECT_EQ(examples[1].candidates, std::vector<std::vector<int>>{tokenizer_->encode(" unto")});
  EXPECT_EQ(examples[2].context, (std::vector<int>{5, 6, 7}));
  EXPECT_EQ(examples[2].candidates, (std::vector<std::vector<int>>{{8, 9}}));
}

TEST_F(ZeroShotExamples, BoolqPromptsAndCandidates) {
  const auto examples = read(
      "{\"question\": \"is the king in the house\", \"passage\": \"the king went into the house\", \"answer\": true}\n"
      "{\"question\": \"did the lord speak?\", \"passage\": \"and the lord said\", \"answer\": false}\n"
      "{\"input_ids\": [3, 4], \"yes_ids\": [10], \"no_ids\": [11, 12], \"answer\": false}\n",
      ZeroShotTask::kBoolq, 256);
  ASSERT_EQ(examples.size(), 3u);
  EXPECT_EQ(examples[0].context,
            tokenizer_->encode("the king went into the house\nquestion: is the king in the house?\nanswer:"));
  const std::vector<std::vector<int>> yes_no = {tokenizer_->encode(" yes"), tokenizer_->encode(" no")};
  EXPECT_EQ(examples[0].candidates, yes_no);
  EXPECT_EQ(examples[0].answer, 0);
  EXPECT_EQ(examples[1].context, tokenizer_->encode("and the lord said\nquestion: did the lord speak?\nanswer:"));
  EXPECT_EQ(examples[1].answer, 1);
  EXPECT_EQ(examples[2].context, (std::vector<int>{3, 4}));
  EXPECT_EQ(examples[2].candidates, (std::vector<std::vector<int>>{{10}, {11, 12}}));
  EXPECT_EQ(examples[2].answer, 1);
}

// Pax keeps the last MAX_SEQ_LEN - |targets| input tokens (the longest candidate's, for BoolQ).
TEST_F(ZeroShotExamples, InputsAreTruncatedFromTheLeft) {
  const auto lambada = read("{\"input_ids\": [1, 2, 3, 4, 5, 6, 7, 8], \"target_ids\": [9, 10, 11]}\n",
                            ZeroShotTask::kLambada, 8);
  EXPECT_EQ(lambada[0].context, (std::vector<int>{4, 5, 6, 7, 8}));
  const auto boolq = read("{\"input_ids\": [1, 2, 3, 4, 5, 6, 7, 8], \"yes_ids\": [9], \"no_ids\": [10, 11], "
                          "\"answer\": true}\n",
                          ZeroShotTask::kBoolq, 8);
  EXPECT_EQ(boolq[0].context, (std::vector<int>{3, 4, 5, 6, 7, 8}));
  // A target of MAX_SEQ_LEN - 1 tokens keeps one input token.
  const auto tight = read("{\"input_ids\": [1, 2, 3], \"target_ids\": [4, 5, 6, 7, 8, 9, 10]}\n", ZeroShotTask::kLambada, 8);
  EXPECT_EQ(tight[0].context, (std::vector<int>{3}));
}

// A long context is tokenized from a tail of its text (only MAX_SEQ_LEN tokens of it can be kept):
// the tokens kept must be those of the whole text's encoding, whatever the words at the cut (runs
// of spaces, words outside the tokenizer's vocabulary, punctuation), for text over the reader's
// 64 x MAX_SEQ_LEN + 64 KiB bytes; and text with no space to cut at is encoded whole.
TEST_F(ZeroShotExamples, ALongContextKeepsTheTokensOfItsWholeEncoding) {
  const char* words[] = {"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog.", "and", "runs", "far",
                         "away", "  ", "Zebra", "x", "éé", "dog,", "\n", "aw", "qu"};
  for (std::uint64_t seed : {1, 2, 3}) {
    std::string text, json_text;  // json_text: the same, escaped for the line
    std::uint64_t state = seed * 0x9E3779B97F4A7C15ull;
    while (text.size() < 400000) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const std::string word = words[(state >> 33) % 20];
      text += word + ' ';
      json_text += (word == "\n" ? std::string("\\n") : word) + ' ';
    }
    text += "end";
    json_text += "end";
    for (int max_seq_len : {16, 64}) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", MAX_SEQ_LEN " << max_seq_len);
      const auto examples = read("{\"inputs\": \"" + json_text + "\", \"targets\": \" house\"}\n",
                                 ZeroShotTask::kLambada, max_seq_len);
      const std::vector<int> whole = tokenizer_->encode(text);
      const std::size_t room = max_seq_len - tokenizer_->encode(" house").size();
      ASSERT_EQ(examples[0].context.size(), room);
      EXPECT_EQ(examples[0].context, std::vector<int>(whole.end() - static_cast<std::ptrdiff_t>(room), whole.end()));
    }
  }
  const std::string no_space(200000, 'q');
  const auto one_word = read("{\"inputs\": \"" + no_space + "\", \"targets\": \" fox\"}\n", ZeroShotTask::kLambada, 16);
  const std::vector<int> whole = tokenizer_->encode(no_space);
  const std::size_t room = 16 - tokenizer_->encode(" fox").size();
  EXPECT_EQ(one_word[0].context, std::vector<int>(whole.end() - static_cast<std::ptrdiff_t>(room), whole.end()));
}

// split_by_whitespace is read from the model (TrainerSpec field 22 inside ModelProto field 2). A
// model whose pieces may span spaces has its long contexts tokenized whole: the tail's first word
// proves nothing there. The field is set by appending a second trainer_spec to a trained model's
// bytes, which protobuf merges into the first (the last value wins).
TEST_F(ZeroShotExamples, AModelWhosePiecesSpanSpacesTokenizesLongContextsWhole) {
  EXPECT_TRUE(tokenizer_->splits_at_whitespace());
  const auto with_split = [&](const std::string& name, char value) {
    std::ifstream in(model_dir_->path() / "m.model", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes += std::string{'\x12', '\x03', '\xb0', '\x01', value};  // field 2, 3 bytes: field 22 (varint) = value
    const auto path = dir_.path() / name;
    std::ofstream(path, std::ios::binary) << bytes;
    return inputs::Tokenizer(path);
  };
  EXPECT_TRUE(with_split("on.model", '\x01').splits_at_whitespace());
  const inputs::Tokenizer spanning = with_split("off.model", '\x00');
  EXPECT_FALSE(spanning.splits_at_whitespace());
  std::string text;
  for (int i = 0; text.size() < 300000; ++i) text += (i % 3 == 0 ? "fox " : "the  dog ");
  text += "end";
  const auto examples = inputs::read_zero_shot_examples(
      file("{\"inputs\": \"" + text + "\", \"targets\": \" fox\"}\n"), ZeroShotTask::kLambada, {100, 16, &spanning});
  const std::vector<int> whole = spanning.encode(text);
  const std::size_t room = 16 - spanning.encode(" fox").size();
  EXPECT_EQ(examples[0].context, std::vector<int>(whole.end() - static_cast<std::ptrdiff_t>(room), whole.end()));
}

TEST_F(ZeroShotExamples, BadLinesAreOneLineErrorsNamingTheLineAndField) {
  const auto L = ZeroShotTask::kLambada;
  const auto B = ZeroShotTask::kBoolq;
  const std::string ok = "{\"input_ids\": [1], \"target_ids\": [2]}\n";
  expect_error(ok + "{\"input_ids\": [1, \n", L, 2, "not JSON", "");
  expect_error(ok + "[1, 2]\n", L, 2, "a JSON object per line", "array");
  expect_error(ok + ok + "{\"input_ids\": [1]}\n", L, 3, "target_ids", "missing");
  expect_error("{\"input_ids\": [1], \"target_ids\": []}\n", L, 1, "target_ids", "is empty");
  expect_error("{\"input_ids\": [], \"target_ids\": [2]}\n", L, 1, "input_ids", "at least one token before it");
  expect_error("{\"input_ids\": [1], \"target_ids\": [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]}\n", L, 1,
               "target_ids", "MAX_SEQ_LEN=16 leaves room for at most 15");
  expect_error("{\"input_ids\": [1, 100], \"target_ids\": [2]}\n", L, 1, "input_ids", "token id 100 is outside the vocabulary [0, 100)");
  expect_error("{\"input_ids\": [1], \"target_ids\": [-1]}\n", L, 1, "target_ids", "outside the vocabulary");
  expect_error("{\"input_ids\": [1.5], \"target_ids\": [2]}\n", L, 1, "input_ids", "not a token id");
  expect_error("{\"inputs\": 7, \"targets\": \" x\"}\n", L, 1, "inputs", "must be a string");
  expect_error("{\"text\": \"oneword\"}\n", L, 1, "text", "needs words before the last one");
  expect_error("{\"text\": \"the king\"}\n", L, 1, "text", "no SentencePiece tokenizer", false);
  expect_error("{\"question\": \"q\", \"passage\": \"p\"}\n", B, 1, "answer", "missing");
  expect_error("{\"question\": \"q\", \"passage\": \"p\", \"answer\": \"yes\"}\n", B, 1, "answer", "must be true or false");
  expect_error("{\"input_ids\": [1], \"yes_ids\": [2], \"answer\": true}\n", B, 1, "no_ids", "missing");
  try {
    read("\n\n", L);
    ADD_FAILURE() << "no error for an empty file";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("no examples"), std::string::npos) << e.what();
  }
  EXPECT_THROW(inputs::read_zero_shot_examples(dir_.path() / "absent.jsonl", L, {100, 16, nullptr}), DataError);
  EXPECT_THROW(inputs::zero_shot_task_from_name("squad"), ConfigError);
  EXPECT_EQ(inputs::zero_shot_task_from_name("boolq"), B);
}

}  // namespace
}  // namespace paxocl::testing
