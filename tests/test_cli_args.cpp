// Pax-style argument parsing and typo suggestions.
#include <gtest/gtest.h>

#include "app/cli_args.h"
#include "app/sampling_flags.h"
#include "common/errors.h"

namespace paxocl::app {
namespace {

CliArgs parse(std::vector<std::string> words) {
  std::vector<char*> argv;
  static std::string program = "pax-ocl";
  argv.push_back(program.data());
  for (auto& w : words) argv.push_back(w.data());
  return CliArgs(static_cast<int>(argv.size()), argv.data());
}

TEST(CliArgs, SplitsCommandFlagsAndOverrides) {
  const CliArgs a = parse({"devices", "--json", "--devices=0,1", "--fdl.ICI_MESH_SHAPE=[2,1,1]", "extra"});
  EXPECT_EQ(a.command(), "devices");
  EXPECT_TRUE(a.flag_bool("json"));
  EXPECT_EQ(a.flag("devices"), "0,1");
  EXPECT_EQ(a.fdl("ICI_MESH_SHAPE"), "[2,1,1]");
  EXPECT_FALSE(a.fdl("DCN_MESH_SHAPE").has_value());
  EXPECT_EQ(a.positionals(), (std::vector<std::string>{"extra"}));
}

TEST(CliArgs, MalformedArgumentsAreConfigErrors) {
  EXPECT_THROW(parse({"devices", "--fdl.ICI_MESH_SHAPE"}), ConfigError);
  EXPECT_THROW(parse({"devices", "--fdl.=3"}), ConfigError);
  EXPECT_THROW(parse({"devices", "--=3"}), ConfigError);
  EXPECT_THROW(parse({"devices", "--json=maybe"}).flag_bool("json"), ConfigError);
}

TEST(CliArgs, UnknownNamesSuggestTheNearest) {
  const FlagSpec flags[] = {{"json", "", ""}, {"devices", "", ""}};
  const std::string fdl[] = {"ICI_MESH_SHAPE", "DCN_MESH_SHAPE"};
  try {
    parse({"devices", "--jsno"}).validate(flags, fdl);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown flag --jsno (did you mean --json?)"), std::string::npos) << e.what();
  }
  try {
    parse({"devices", "--fdl.ici_mesh_shape=[1,1,1]"}).validate(flags, fdl);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean --fdl.ICI_MESH_SHAPE"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(parse({"devices", "--json", "--fdl.DCN_MESH_SHAPE=[1,1,1]"}).validate(flags, fdl));
}

TEST(NearestNames, RanksByEditDistanceAndDropsFarOnes) {
  const std::vector<std::string> names = {"PERCORE_BATCH_SIZE", "MAX_SEQ_LEN", "MODEL_DIMS", "NUM_LAYERS"};
  EXPECT_EQ(nearest_names("PERCORE_BATCHSIZE", names), (std::vector<std::string>{"PERCORE_BATCH_SIZE"}));
  EXPECT_EQ(nearest_names("NUM_LAYER", names), (std::vector<std::string>{"NUM_LAYERS"}));
  EXPECT_TRUE(nearest_names("LEARNING_RATE", names).empty());
}

TEST(SamplingFlags, ParseTheOptionsWithDefaultsForAbsentFlags) {
  const CliArgs a = parse({"sample", "--temperature=0.7", "--top_k=40", "--top_p=0.95"});
  EXPECT_NO_THROW(a.validate(kSamplingFlags, std::span<const std::string>{}));
  const sampling::SamplingOptions o = sampling_options(a);
  EXPECT_EQ(o.temperature, 0.7f);
  EXPECT_EQ(o.top_k, 40);
  EXPECT_EQ(o.top_p, 0.95f);
  const sampling::SamplingOptions d = sampling_options(parse({"sample"}));
  EXPECT_EQ(d.temperature, 1.0f);
  EXPECT_EQ(d.top_k, 0);
  EXPECT_EQ(d.top_p, 1.0f);
  EXPECT_EQ(sampling_options(parse({"sample", "--temperature=0"})).temperature, 0.0f) << "greedy";
}

TEST(SamplingFlags, BadValuesAreOneLineConfigErrorsNamingTheFlag) {
  const struct {
    const char* arg;
    const char* says;
  } cases[] = {
      {"--temperature=warm", "--temperature=warm: expected a finite number"},
      {"--temperature=1e40", "--temperature=1e40: expected a finite number"},
      {"--temperature", "--temperature=true: expected a finite number"},
      {"--temperature=-1", "--temperature=-1: must be a finite number >= 0 (0 = greedy)"},
      {"--top_k=1.5", "--top_k=1.5: expected an integer"},
      {"--top_k=99999999999", "--top_k=99999999999: expected an integer"},
      {"--top_k=-3", "--top_k=-3: must be >= 0 (0 = off)"},
      {"--top_p=0", "--top_p=0: must be in (0, 1] (1 = off)"},
      {"--top_p=1.01", "--top_p=1.01: must be in (0, 1]"},
      {"--top_p=", "--top_p=: expected a finite number"},
  };
  for (const auto& c : cases) {
    try {
      sampling_options(parse({"sample", c.arg}));
      ADD_FAILURE() << c.arg << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace paxocl::app
