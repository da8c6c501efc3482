// `pax-ocl data prepare | inspect`: turn raw text (or the KJV) into a tokenizer and token shards,
// and look at the batches an input produces, decoded, as Pax advises before training.
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "config/hparam_values.h"
#include "common/errors.h"
#include "inputs/dataset.h"
#include "inputs/token_shard.h"
#include "inputs/tokenizer.h"

namespace paxocl::app {

namespace {

const FlagSpec kDataFlags[] = {
    kCommonFlags[0],
    kCommonFlags[1],
    {"output_dir", "DIR", "prepare: where the dataset goes (a new directory, or a dataset to replace)"},
    {"text", "FILE[,FILE]", "prepare: raw text files (UTF-8)"},
    {"corpus", "kjv", "prepare: a built-in corpus instead of --text (kjv: the King James Bible, package bible-kjv)"},
    {"vocab_size", "N", "prepare: SentencePiece vocabulary size (default 4096)"},
    {"model_type", "bpe|unigram", "prepare: SentencePiece model type (default bpe)"},
    {"spm_model", "FILE", "prepare: use this SentencePiece .model instead of training one"},
    {"validation_fraction", "F", "prepare --text: share of documents held out (default 0.05)"},
    {"data", "DIR|kjv|synthetic|SHARDS", "inspect: the data to read (DIR: a prepared dataset or llm.c *_train*.bin / *_val*.bin)"},
    {"split", "train|validation", "inspect: which split (default train)"},
    {"batches", "N", "inspect: how many batches to print (default 2)"},
    {"tokenizer", "FILE", "inspect: SentencePiece model to decode with (default DIR/tokenizer.model)"},
};
const std::string kDataFdl[] = {"MAX_SEQ_LEN", "PERCORE_BATCH_SIZE", "VOCAB_SIZE", "SEED"};

void print_help() {
  std::cout << "Usage: pax-ocl data prepare --output_dir=DIR (--text=FILES | --corpus=kjv) [flags]\n"
               "       pax-ocl data inspect --data=DIR [--split=train] [--batches=2] [--fdl.MAX_SEQ_LEN=..]\n\n"
               "prepare trains a SentencePiece tokenizer (or takes --spm_model) and writes token shards for the\n"
               "training and validation documents; inspect decodes and prints a few batches.\n\nFlags:\n"
            << format_flags(kDataFlags);
}

int prepare(const CliArgs& args) {
  const auto out = args.flag("output_dir");
  if (!out || out->empty()) throw ConfigError("data prepare needs --output_dir=DIR");
  const auto text = args.flag("text");
  const std::string corpus_name = args.flag("corpus").value_or("");
  if (text.has_value() == !corpus_name.empty()) throw ConfigError("data prepare needs exactly one of --text=FILES or --corpus=kjv");
  if (!corpus_name.empty() && corpus_name != "kjv") throw ConfigError(fmt::format("--corpus={}: the built-in corpus is kjv", corpus_name));
  inputs::PrepareOptions options;
  options.output_dir = *out;
  options.vocab_size = static_cast<int>(config::parse_int_value("vocab_size", args.flag("vocab_size").value_or("4096")));
  options.model_type = args.flag("model_type").value_or("bpe");
  if (const auto m = args.flag("spm_model")) options.spm_model = *m;
  inputs::Corpus corpus;
  std::string source = "kjv";
  if (text) {
    std::vector<std::filesystem::path> files;
    std::size_t start = 0;
    while (start <= text->size()) {
      const std::size_t comma = std::min(text->find(',', start), text->size());
      if (comma > start) files.emplace_back(text->substr(start, comma - start));
      start = comma + 1;
    }
    const double fraction = args.flag("validation_fraction")
                                ? config::parse_float_value("validation_fraction", *args.flag("validation_fraction"))
                                : inputs::kDefaultValidationFraction;
    corpus = inputs::read_text_files(files, fraction);
    source = *text;
  } else {
    corpus = inputs::read_kjv();
  }
  const inputs::DatasetInfo info = inputs::prepare_dataset(corpus, options, source);
  std::cout << fmt::format("prepared {}: vocabulary {}, train {} documents / {} tokens, validation {} documents / {} tokens\n",
                           options.output_dir.string(), info.vocab_size, info.train_documents, info.train_tokens,
                           info.validation_documents, info.validation_tokens);
  return kExitOk;
}

int inspect(const CliArgs& args) {
  const std::string data = args.flag("data").value_or("kjv");
  inputs::InputParams params;
  params.seq_len = static_cast<int>(config::parse_int_value("MAX_SEQ_LEN", args.fdl("MAX_SEQ_LEN").value_or("64")));
  params.batch_size = static_cast<int>(config::parse_int_value("PERCORE_BATCH_SIZE", args.fdl("PERCORE_BATCH_SIZE").value_or("2")));
  params.seed = static_cast<std::uint64_t>(config::parse_int_value("SEED", args.fdl("SEED").value_or("1234")));
  params.prefetch_depth = 0;
  const std::string split = args.flag("split").value_or("train");
  params.is_training = split == "train";
  // The vocabulary: VOCAB_SIZE if given, else the dataset's own.
  std::filesystem::path dir = data == "kjv" ? inputs::prepared_kjv(inputs::default_data_root(), 4096, "bpe") : std::filesystem::path(data);
  int vocab = 0;
  if (const auto v = args.fdl("VOCAB_SIZE")) vocab = static_cast<int>(config::parse_int_value("VOCAB_SIZE", *v));
  else if (std::filesystem::is_regular_file(dir / "dataset.json")) vocab = inputs::read_dataset_info(dir).vocab_size;
  else throw ConfigError("data inspect of shard files, llm.c directories or synthetic data needs --fdl.VOCAB_SIZE");
  auto input = inputs::make_input(data == "kjv" ? dir.string() : data, split, params, vocab);
  std::optional<inputs::Tokenizer> tokenizer;
  if (const auto t = args.flag("tokenizer")) tokenizer.emplace(*t);
  else if (std::filesystem::is_regular_file(dir / "tokenizer.model")) tokenizer.emplace(dir / "tokenizer.model");
  const long batches = config::parse_int_value("batches", args.flag("batches").value_or("2"));
  for (long b = 0; b < batches; ++b) {
    const auto batch = input->get_next();
    if (!batch) break;
    for (int r = 0; r < batch->batch; ++r) {
      const auto begin = batch->ids.begin() + static_cast<std::ptrdiff_t>(r) * batch->seq_len;
      const std::vector<int> ids(begin, begin + batch->seq_len);
      float weight = 0;
      for (int t = 0; t < batch->seq_len; ++t) weight += batch->weights[static_cast<std::size_t>(r * batch->seq_len + t)];
      std::cout << fmt::format("batch {} row {} (weight {:.0f}/{}): ids [{}, {}, {}, ...]\n", b, r, weight, batch->seq_len,
                               ids[0], ids.size() > 1 ? ids[1] : 0, ids.size() > 2 ? ids[2] : 0);
      if (tokenizer) std::cout << "  " << tokenizer->decode(ids) << "\n";
    }
  }
  return kExitOk;
}

}  // namespace

int run_data(const CliArgs& args, const collectives::ProcessWorld& world) {
  if (args.flag_bool("help") || args.positionals().empty()) {
    if (world.rank() == 0) print_help();
    return args.flag_bool("help") ? kExitOk : kExitUsage;
  }
  args.validate(kDataFlags, kDataFdl);
  const std::string& what = args.positionals().front();
  if (what == "prepare") return prepare(args);
  if (what == "inspect") return inspect(args);
  throw ConfigError(fmt::format("unknown data command '{}'; use prepare or inspect", what));
}

}  // namespace paxocl::app
