// Pax-style argument parsing and typo suggestions.
#include <gtest/gtest.h>

#include "app/cli_args.h"
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

}  // namespace
}  // namespace paxocl::app
