// Weight files: llm.c checkpoints and Hugging Face GPT-2 safetensors. The files read here are built
// by writers in this test from the formats' specifications (plain fwrite, hand-written JSON), not by
// weights_io.cpp; then round trips, and every kind of bad file.
#include "models/weights_io.h"

#include <gtest/gtest.h>

#include <limits>

#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "models/parameter_layout.h"
#include "tests/model_configs.h"
#include "tests/test_support.h"

namespace paxocl::models {
namespace {

namespace fs = std::filesystem;
using paxocl::testing::TempDir;

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
std::string f32_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)};
}
std::vector<float> floats(const std::string& bytes) {
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}
// Distinct per tensor and element, exact in fp32 (below 2^24 for these sizes).
float value(std::size_t tensor, std::size_t i) { return static_cast<float>(tensor * 100000 + i); }

// Error checks: an `Error` whose one-line message names the file and holds every word (reading
// fails as a FileError, writing as a DataError: common/atomic_file.h).
template <typename Error, typename F>
void expect_error_naming(F&& f, const fs::path& file, std::initializer_list<std::string_view> words) {
  try {
    f();
    ADD_FAILURE() << "no error for " << file;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(file.string()), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (std::string_view w : words) EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' not in: " << msg;
  }
}

template <class F>
void expect_file_error(F&& f, const fs::path& file, std::initializer_list<std::string_view> words) {
  expect_error_naming<FileError>(std::forward<F>(f), file, words);
}

// ---- an independent llm.c writer (layout from llm.c's train_gpt2.c) ----------------------------

struct Dims {
  int maxT, V, L, NH, C, Vp;
};

struct LlmcKind {
  std::string ours;  // our tensor name, or the suffix of h{l}.<suffix> when per_layer
  bool per_layer;
  std::size_t count;  // floats, per layer when per_layer
};

std::vector<LlmcKind> llmc_kinds(const Dims& d) {
  const std::size_t C = d.C;
  return {{"wte", false, d.Vp * C},         {"wpe", false, d.maxT * C},     {"ln1.scale", true, C},
          {"ln1.bias", true, C},            {"attn.qkv.w", true, 3 * C * C}, {"attn.qkv.b", true, 3 * C},
          {"attn.proj.w", true, C * C},     {"attn.proj.b", true, C},       {"ln2.scale", true, C},
          {"ln2.bias", true, C},            {"mlp.fc.w", true, 4 * C * C},  {"mlp.fc.b", true, 4 * C},
          {"mlp.proj.w", true, 4 * C * C},  {"mlp.proj.b", true, C},        {"lnf.scale", false, C},
          {"lnf.bias", false, C}};
}

std::size_t llmc_file_bytes(const Dims& d) {
  std::size_t floats_total = 0;
  for (const LlmcKind& k : llmc_kinds(d)) floats_total += k.count * (k.per_layer ? d.L : 1);
  return 256 * 4 + floats_total * 4;
}

// Element i of the k-th stacked tensor of the file holds value(k, i).
void write_llmc(const fs::path& file, const Dims& d, std::int32_t magic = 20240326, std::int32_t version = 3) {
  std::FILE* f = std::fopen(file.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::int32_t header[256] = {magic, version, d.maxT, d.V, d.L, d.NH, d.C, d.Vp};
  std::fwrite(header, sizeof(std::int32_t), 256, f);
  const auto kinds = llmc_kinds(d);
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    const std::size_t n = kinds[k].count * (kinds[k].per_layer ? d.L : 1);
    for (std::size_t i = 0; i < n; ++i) {
      const float v = value(k, i);
      std::fwrite(&v, sizeof v, 1, f);
    }
  }
  std::fclose(f);
}

// ---- an independent safetensors writer ---------------------------------------------------------

struct StTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::string bytes;  // raw little-endian data
  std::string dtype = "F32";
  std::optional<std::pair<std::uint64_t, std::uint64_t>> offsets;  // default: contiguous in list order
};

void write_safetensors_raw(const fs::path& file, std::uint64_t header_len, const std::string& header, const std::string& data) {
  write_bytes(file, std::string(reinterpret_cast<const char*>(&header_len), 8) + header + data);
}

// The JSON header is written by hand, space-padded to a multiple of 8 bytes.
void write_safetensors(const fs::path& file, const std::vector<StTensor>& tensors, const std::string& extra_data = "") {
  std::string header = R"({"__metadata__":{"format":"pt"})", data;
  for (const StTensor& t : tensors) {
    auto [b, e] = t.offsets.value_or(std::pair<std::uint64_t, std::uint64_t>(data.size(), data.size() + t.bytes.size()));
    std::string shape;
    for (std::int64_t s : t.shape) shape += fmt::format("{}{}", shape.empty() ? "" : ",", s);
    header += fmt::format(R"(,"{}":{{"dtype":"{}","shape":[{}],"data_offsets":[{},{}]}})", t.name, t.dtype, shape, b, e);
    data += t.bytes;
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  write_safetensors_raw(file, header.size(), header, data + extra_data);
}

// How a Hugging Face GPT-2 tensor maps onto ours (our names from parameter_layout.h).
struct HfMapping {
  std::string hf;    // without prefix
  std::string ours;
  bool conv1d;       // stored (in, out)
};

std::vector<HfMapping> hf_mappings(int L) {
  std::vector<HfMapping> m{{"wte.weight", "wte", false}, {"wpe.weight", "wpe", false}};
  for (int l = 0; l < L; ++l) {
    const std::string h = fmt::format("h.{}.", l), o = fmt::format("h{}.", l);
    m.insert(m.end(), {{h + "ln_1.weight", o + "ln1.scale", false},     {h + "ln_1.bias", o + "ln1.bias", false},
                       {h + "attn.c_attn.weight", o + "attn.qkv.w", true}, {h + "attn.c_attn.bias", o + "attn.qkv.b", false},
                       {h + "attn.c_proj.weight", o + "attn.proj.w", true}, {h + "attn.c_proj.bias", o + "attn.proj.b", false},
                       {h + "ln_2.weight", o + "ln2.scale", false},     {h + "ln_2.bias", o + "ln2.bias", false},
                       {h + "mlp.c_fc.weight", o + "mlp.fc.w", true},    {h + "mlp.c_fc.bias", o + "mlp.fc.b", false},
                       {h + "mlp.c_proj.weight", o + "mlp.proj.w", true}, {h + "mlp.c_proj.bias", o + "mlp.proj.b", false}});
  }
  m.insert(m.end(), {{"ln_f.weight", "lnf.scale", false}, {"ln_f.bias", "lnf.bias", false}});
  return m;
}

// A GPT-2 as transformers saves it, H the MLP width: the parameters in HF shapes plus the extras a
// real file holds (tied lm_head.weight, attn.bias / attn.masked_bias buffers), listed in reverse so
// nothing depends on the order. Tensor k (in list order) holds value(k, i) at flat index i.
std::vector<StTensor> hf_model(const Dims& d, int H, const std::string& prefix = "transformer.") {
  const std::int64_t C = d.C;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> specs{{"wte.weight", {d.V, C}}, {"wpe.weight", {d.maxT, C}}};
  for (int l = 0; l < d.L; ++l) {
    const std::string h = fmt::format("h.{}.", l);
    specs.insert(specs.end(), {{h + "ln_1.weight", {C}},           {h + "ln_1.bias", {C}},
                               {h + "attn.bias", {1, 1, d.maxT, d.maxT}}, {h + "attn.masked_bias", {}},
                               {h + "attn.c_attn.weight", {C, 3 * C}}, {h + "attn.c_attn.bias", {3 * C}},
                               {h + "attn.c_proj.weight", {C, C}},   {h + "attn.c_proj.bias", {C}},
                               {h + "ln_2.weight", {C}},             {h + "ln_2.bias", {C}},
                               {h + "mlp.c_fc.weight", {C, H}},      {h + "mlp.c_fc.bias", {H}},
                               {h + "mlp.c_proj.weight", {H, C}},    {h + "mlp.c_proj.bias", {C}}});
  }
  specs.insert(specs.end(), {{"ln_f.weight", {C}}, {"ln_f.bias", {C}}});
  if (!prefix.empty()) specs.push_back({"../lm_head.weight", {d.V, C}});  // GPT2LMHeadModel only
  std::vector<StTensor> out;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    std::size_t n = 1;
    for (std::int64_t s : specs[k].second) n *= static_cast<std::size_t>(s);
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = value(k, i);
    const std::string& name = specs[k].first;
    out.push_back({name.starts_with("../") ? name.substr(3) : prefix + name, specs[k].second, f32_bytes(v), "F32", {}});
  }
  return {out.rbegin(), out.rend()};
}

StTensor& find(std::vector<StTensor>& ts, const std::string& name) {
  for (StTensor& t : ts) {
    if (t.name == name) return t;
  }
  throw std::out_of_range(name);
}

const std::vector<std::size_t> kAlignments{1, 16};
const Dims kPadded{16, 50, 2, 2, 8, 64};  // Vp > V, two layers

// ---- llm.c --------------------------------------------------------------------------------------

TEST(WeightsIo, LlmcLoadPutsEveryTensorInPlace) {
  for (const Dims& d : {kPadded, Dims{8, 64, 1, 4, 16, 64}}) {
    for (std::size_t alignment : kAlignments) {
      SCOPED_TRACE(fmt::format("V={} Vp={} alignment={}", d.V, d.Vp, alignment));
      TempDir dir;
      const fs::path file = dir.path() / "model.bin";
      write_llmc(file, d);
      const HostWeights w = load_llmc(file, alignment);
      const GptConfig& c = w.config.gpt();
      EXPECT_EQ(c.num_layers, d.L);
      EXPECT_EQ(c.model_dims, d.C);
      EXPECT_EQ(c.hidden_dims, 4 * d.C);
      EXPECT_EQ(c.num_heads, d.NH);
      EXPECT_EQ(c.dims_per_head, d.C / d.NH);
      EXPECT_EQ(c.max_seq_len, d.maxT);
      EXPECT_EQ(c.vocab_size, d.V);
      EXPECT_EQ(c.padded_vocab(), d.Vp);
      EXPECT_EQ(w.alignment, alignment);
      const ParameterLayout layout(c, alignment);
      ASSERT_EQ(w.data.size(), layout.total());

      std::vector<bool> covered(w.data.size(), false);
      const auto kinds = llmc_kinds(d);
      for (std::size_t k = 0; k < kinds.size(); ++k) {
        for (int l = 0; l < (kinds[k].per_layer ? d.L : 1); ++l) {
          const std::string name = kinds[k].per_layer ? ParameterLayout::layer_name(l, kinds[k].ours) : kinds[k].ours;
          const TensorSpec& t = layout.at(name);
          ASSERT_EQ(t.count, kinds[k].count) << name;
          for (std::size_t j = 0; j < t.count; ++j) {
            ASSERT_EQ(w.data[t.offset + j], value(k, l * t.count + j)) << name << "[" << j << "]";
            covered[t.offset + j] = true;
          }
        }
      }
      for (std::size_t i = 0; i < w.data.size(); ++i) {
        if (!covered[i]) {
          ASSERT_EQ(w.data[i], 0.0f) << "alignment gap at " << i;
        }
      }
    }
  }
}

TEST(WeightsIo, LlmcSaveReproducesTheFileByteForByte) {
  for (std::size_t alignment : kAlignments) {
    TempDir dir;
    write_llmc(dir.path() / "in.bin", kPadded);
    save_llmc(dir.path() / "out.bin", load_llmc(dir.path() / "in.bin", alignment));
    EXPECT_EQ(read_bytes(dir.path() / "out.bin"), read_bytes(dir.path() / "in.bin"));
  }
}

TEST(WeightsIo, SaveIsAtomicAndOverwrites) {
  TempDir dir;
  write_llmc(dir.path() / "in.bin", kPadded);
  const HostWeights w = load_llmc(dir.path() / "in.bin", 1);
  write_bytes(dir.path() / "out.bin", "old contents");
  save_llmc(dir.path() / "out.bin", w);
  save_safetensors(dir.path() / "out.safetensors", w);
  EXPECT_EQ(read_bytes(dir.path() / "out.bin"), read_bytes(dir.path() / "in.bin"));
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
  const fs::path nowhere = dir.path() / "no-such-dir" / "out.bin";
  expect_error_naming<DataError>([&] { save_llmc(nowhere, w); }, nowhere, {"cannot create", "No such file"});
}

TEST(WeightsIo, LlmcSaveRejectsConfigsTheFormatCannotHold) {
  GptConfig c;  // defaults: C=128, H=512, NH*hs=128
  c.hidden_dims = 3 * c.model_dims;
  TempDir dir;
  EXPECT_THROW(save_llmc(dir.path() / "x.bin", HostWeights{c, 1, std::vector<float>(ParameterLayout(c, 1).total())}),
               ConfigError);
  c = GptConfig{};
  c.dims_per_head = 16;  // D = 64 != C
  EXPECT_THROW(save_llmc(dir.path() / "x.bin", HostWeights{c, 1, std::vector<float>(ParameterLayout(c, 1).total())}),
               ConfigError);
  EXPECT_THROW(save_safetensors(dir.path() / "x.st", HostWeights{c, 1, std::vector<float>(ParameterLayout(c, 1).total())}),
               ConfigError);
  EXPECT_FALSE(fs::exists(dir.path() / "x.bin"));
}

// ---- safetensors --------------------------------------------------------------------------------

TEST(WeightsIo, SafetensorsLoadTransposesConv1dWeights) {
  const Dims d = kPadded;
  const int H = 24;  // not 4C: the MLP width comes from the file
  for (std::size_t alignment : kAlignments) {
    SCOPED_TRACE(fmt::format("alignment={}", alignment));
    TempDir dir;
    const fs::path file = dir.path() / "model.safetensors";
    auto tensors = hf_model(d, H);
    write_safetensors(file, tensors);
    const HostWeights w = load_safetensors(file, d.NH, alignment);
    const GptConfig& c = w.config.gpt();
    EXPECT_EQ(c.num_layers, d.L);
    EXPECT_EQ(c.model_dims, d.C);
    EXPECT_EQ(c.hidden_dims, H);
    EXPECT_EQ(c.num_heads, d.NH);
    EXPECT_EQ(c.dims_per_head, d.C / d.NH);
    EXPECT_EQ(c.max_seq_len, d.maxT);
    EXPECT_EQ(c.vocab_size, d.V);
    EXPECT_EQ(c.padded_vocab(), 128);  // default rounding of V=50
    const ParameterLayout layout(c, alignment);
    ASSERT_EQ(w.data.size(), layout.total());

    for (const HfMapping& m : hf_mappings(d.L)) {
      const StTensor& f = find(tensors, "transformer." + m.hf);
      const std::vector<float> file_values = floats(f.bytes);
      const TensorSpec& t = layout.at(m.ours);
      if (m.conv1d) {
        const std::size_t in = f.shape[0], out = f.shape[1];
        ASSERT_EQ(t.shape, (std::vector<std::int64_t>{static_cast<std::int64_t>(out), static_cast<std::int64_t>(in)})) << m.ours;
        for (std::size_t o = 0; o < out; ++o) {
          for (std::size_t i = 0; i < in; ++i) {
            ASSERT_EQ(w.data[t.offset + o * in + i], file_values[i * out + o]) << m.ours << "[" << o << "][" << i << "]";
          }
        }
        continue;
      }
      for (std::size_t j = 0; j < file_values.size(); ++j) ASSERT_EQ(w.data[t.offset + j], file_values[j]) << m.ours;
      for (std::size_t j = file_values.size(); j < t.count; ++j) ASSERT_EQ(w.data[t.offset + j], 0.0f) << m.ours << " padding";
    }
  }
}

TEST(WeightsIo, SafetensorsWithoutTransformerPrefixLoadAlike) {
  TempDir dir;
  write_safetensors(dir.path() / "lm.safetensors", hf_model(kPadded, 32));
  write_safetensors(dir.path() / "bare.safetensors", hf_model(kPadded, 32, ""));
  const HostWeights a = load_safetensors(dir.path() / "lm.safetensors", 2, 4);
  const HostWeights b = load_safetensors(dir.path() / "bare.safetensors", 2, 4);
  EXPECT_EQ(a.data, b.data);
}

TEST(WeightsIo, SafetensorsSaveIsCanonicalAndRoundTrips) {
  TempDir dir;
  write_safetensors(dir.path() / "hf.safetensors", hf_model(kPadded, 24));
  const HostWeights w = load_safetensors(dir.path() / "hf.safetensors", kPadded.NH, 16);
  save_safetensors(dir.path() / "a.safetensors", w);
  const HostWeights w2 = load_safetensors(dir.path() / "a.safetensors", kPadded.NH, 16);
  EXPECT_EQ(w2.data, w.data);
  save_safetensors(dir.path() / "b.safetensors", w2);
  const std::string a = read_bytes(dir.path() / "a.safetensors");
  EXPECT_EQ(read_bytes(dir.path() / "b.safetensors"), a);

  // The file's structure, by the safetensors specification.
  std::uint64_t n = 0;
  std::memcpy(&n, a.data(), 8);
  ASSERT_EQ(n % 8, 0u);
  ASSERT_LE(8 + n, a.size());
  const auto header = nlohmann::json::parse(a.substr(8, n));
  EXPECT_EQ(header["__metadata__"]["format"], "pt");
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    EXPECT_TRUE(name.starts_with("transformer.")) << name;
    EXPECT_EQ(name.find("lm_head"), std::string::npos);
    EXPECT_FALSE(name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias")) << name;
    EXPECT_EQ(t["dtype"], "F32") << name;
    std::uint64_t count = 4;
    for (const auto& s : t["shape"]) count *= s.get<std::uint64_t>();
    ranges.emplace_back(t["data_offsets"][0], t["data_offsets"][1]);
    EXPECT_EQ(ranges.back().second - ranges.back().first, count) << name;
  }
  EXPECT_EQ(ranges.size(), hf_mappings(kPadded.L).size());
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t end = 0;
  for (const auto& [b, e] : ranges) {
    EXPECT_EQ(b, end);
    end = e;
  }
  EXPECT_EQ(8 + n + end, a.size());
  EXPECT_EQ(header.at("transformer.wte.weight")["shape"], (std::vector<int>{kPadded.V, kPadded.C}));
}

// A GPT with SSM blocks (BLOCK_KINDS): praxis's SSM variables in place of attention's, and the
// frozen hyper-parameters in the metadata, so the file alone rebuilds the model.
TEST(WeightsIo, SsmBlocksRoundTripThroughSafetensorsWithTheirHyperParameters) {
  TempDir dir;
  GptConfig c;
  c.num_layers = 4;
  c.model_dims = 16;
  c.hidden_dims = 24;
  c.num_heads = 2;
  c.dims_per_head = 8;
  c.max_seq_len = 12;
  c.vocab_size = 50;
  c.block_kinds = {BlockKind::kSsm, BlockKind::kAttention};
  c.ssm.state_size = 6;
  c.ssm.step_size = 0.02f;
  c.ssm.hippo_type = "ss4d-legs";
  c.ssm.l_max = 40;
  const ParameterLayout layout(c, 16);
  HostWeights w{c, layout.alignment(), std::vector<float>(layout.total(), 0.0f)};
  for (const TensorSpec& t : layout.tensors()) {
    for (std::size_t i = 0; i < t.count; ++i) w.data[t.offset + i] = static_cast<float>((t.offset + i) % 97) / 97.0f;
  }
  for (std::size_t i = c.vocab_size * 16; i < layout.at("wte").count; ++i) w.data[layout.at("wte").offset + i] = 0.0f;
  save_safetensors(dir.path() / "ssm.safetensors", w);
  const HostWeights back = load_safetensors(dir.path() / "ssm.safetensors", c.num_heads, 16);
  const GptConfig& b = back.config.gpt();
  EXPECT_EQ(block_kinds_text(b.block_kinds), "ssm,attention");  // the per-layer kinds' shortest period
  EXPECT_EQ(b.ssm.state_size, 6);
  EXPECT_EQ(b.ssm.step_size, 0.02f);
  EXPECT_EQ(b.ssm.hippo_type, "ss4d-legs");
  EXPECT_EQ(b.ssm.l_max, 40);
  EXPECT_EQ(back.data, w.data);
  const std::string bytes = read_bytes(dir.path() / "ssm.safetensors");
  EXPECT_NE(bytes.find("\"transformer.h.2.ssm.C_im\""), std::string::npos);
  EXPECT_EQ(bytes.find("transformer.h.0.attn"), std::string::npos);
  // Without pax-ocl's metadata the step size is unknown: a one-line error naming the key.
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  header["__metadata__"].erase("pax_ocl.ssm_step_size");
  std::string stripped = header.dump();
  stripped.append((8 - stripped.size() % 8) % 8, ' ');
  write_safetensors_raw(dir.path() / "stripped.safetensors", stripped.size(), stripped, bytes.substr(8 + n));
  expect_file_error([&] { load_safetensors(dir.path() / "stripped.safetensors", 2, 16); },
                    dir.path() / "stripped.safetensors", {"pax_ocl.ssm_step_size", "re-export"});
  // Hostile SSM settings in the metadata (issue 42): each a one-line error naming the file and the setting.
  const struct {
    const char* key;
    const char* value;
    const char* says;
  } hostile[] = {{"pax_ocl.ssm_hippo_type", "bogus", "SSM_HIPPO_TYPE=bogus"},
                 {"pax_ocl.ssm_l_max", "8", "SSM_L_MAX=8 is below MAX_SEQ_LEN=12"},
                 {"pax_ocl.ssm_step_size", "-1", "SSM_STEP_SIZE=-1"},
                 {"pax_ocl.ssm_step_size", "nan", "SSM_STEP_SIZE=nan"},
                 {"pax_ocl.ssm_step_size", "x", "is not a number"},
                 {"pax_ocl.ssm_nheads", "0", "the tensors give"},
                 {"pax_ocl.ssm_nheads", "99999999999", "the tensors give"}};
  for (const auto& h : hostile) {
    auto edited = nlohmann::json::parse(bytes.substr(8, n));
    edited["__metadata__"][h.key] = h.value;
    std::string text = edited.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    const fs::path f = dir.path() / "hostile.safetensors";
    write_safetensors_raw(f, text.size(), text, bytes.substr(8 + n));
    SCOPED_TRACE(std::string(h.key) + "=" + h.value);
    expect_file_error([&] { load_safetensors(f, std::nullopt, 16); }, f, {h.says});
  }
  // A file of pax-ocl before it recorded every setting (the SSM settings alone; NUM_HEADS given)
  // loads; a number with more after it, or blanks before it, is refused, not read as its prefix
  // (fuzz_ssm_metadata found "5.size=0" loading as a step size of 5).
  nlohmann::json before = {{"format", "pt"}};
  for (const char* k : {"pax_ocl.block_kinds", "pax_ocl.ssm_step_size", "pax_ocl.ssm_hippo_type", "pax_ocl.ssm_l_max"}) {
    before[k] = nlohmann::json::parse(bytes.substr(8, n))["__metadata__"][k];
  }
  auto write_before = [&](const nlohmann::json& metadata) {
    auto edited = nlohmann::json::parse(bytes.substr(8, n));
    edited["__metadata__"] = metadata;
    std::string text = edited.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    const fs::path f = dir.path() / "before.safetensors";
    write_safetensors_raw(f, text.size(), text, bytes.substr(8 + n));
    return f;
  };
  const GptConfig old = load_safetensors(write_before(before), c.num_heads, 16).config.gpt();
  EXPECT_EQ(old.ssm.step_size, 0.02f);
  EXPECT_EQ(old.ssm.l_max, 40);
  for (const auto& [key, value] : {std::pair{"pax_ocl.ssm_step_size", "5.size=0"}, std::pair{"pax_ocl.ssm_step_size", " 0.02"},
                                   std::pair{"pax_ocl.ssm_l_max", "40abc"}}) {
    nlohmann::json edited = before;
    edited[key] = value;
    SCOPED_TRACE(std::string(key) + "=" + value);
    const fs::path f = write_before(edited);
    expect_file_error([&] { load_safetensors(f, c.num_heads, 16); }, f, {key, "is not a number"});
  }
  // A file of SSM blocks alone has no attention tensor to check its head width against: the record's
  // NUM_HEADS x DIMS_PER_HEAD must still be MODEL_DIMS, as in every file save_safetensors writes
  // (fuzz_ssm_metadata found 2 x 9 with MODEL_DIMS 8 loading, then refused by the export).
  GptConfig pure = c;
  pure.block_kinds = {BlockKind::kSsm};
  const ParameterLayout pure_layout(pure, 16);
  save_safetensors(dir.path() / "pure.safetensors", HostWeights{pure, pure_layout.alignment(),
                                                                std::vector<float>(pure_layout.total(), 0.25f)});
  const std::string pure_bytes = read_bytes(dir.path() / "pure.safetensors");
  std::uint64_t pure_n = 0;
  std::memcpy(&pure_n, pure_bytes.data(), 8);
  auto wide_head = nlohmann::json::parse(pure_bytes.substr(8, pure_n));
  wide_head["__metadata__"]["pax_ocl.dims_per_head"] = "9";
  std::string wide_text = wide_head.dump();
  wide_text.append((8 - wide_text.size() % 8) % 8, ' ');
  const fs::path wide = dir.path() / "wide_head.safetensors";
  write_safetensors_raw(wide, wide_text.size(), wide_text, pure_bytes.substr(8 + pure_n));
  expect_file_error([&] { load_safetensors(wide, std::nullopt, 16); }, wide, {"pax_ocl.dims_per_head", "MODEL_DIMS=16"});
  // llm.c's format cannot hold an SSM block.
  EXPECT_THROW(save_llmc(dir.path() / "ssm.bin", w), ConfigError);
  EXPECT_FALSE(fs::exists(dir.path() / "ssm.bin"));
}

// A GPT's safetensors records its heads, head width and padded vocabulary (and every other setting):
// loaded with no NUM_HEADS they come back; a contradicting NUM_HEADS, a tampered record, a bare
// Hugging Face file with no config.json and no NUM_HEADS are one-line refusals; a config.json beside a
// Hugging Face file supplies n_head, and its other fields must agree with the tensors.
TEST(WeightsIo, SafetensorsRecordEverySettingAndTheFileRules) {
  TempDir dir;
  fs::create_directories(dir.path() / "hf");
  const fs::path hf = dir.path() / "hf" / "model.safetensors";
  write_safetensors(hf, hf_model(kPadded, 24));
  GptConfig wide = load_safetensors(hf, kPadded.NH, 16).config.gpt();
  wide.padded_vocab_size = 128;  // not the default rounding of 50: must come back from the file
  const ParameterLayout layout(wide, 16);
  HostWeights padded{wide, layout.alignment(), std::vector<float>(layout.total(), 0.5f)};
  const fs::path mine = dir.path() / "mine.safetensors";
  save_safetensors(mine, padded);
  const GptConfig back = load_safetensors(mine, std::nullopt, 16).config.gpt();
  EXPECT_EQ(back.num_heads, kPadded.NH);
  EXPECT_EQ(back.dims_per_head, wide.dims_per_head);
  EXPECT_EQ(back.padded_vocab(), 128);
  EXPECT_EQ(load_safetensors(mine, kPadded.NH, 16).config.gpt().num_heads, kPadded.NH);  // agreeing: fine
  expect_error_naming<ConfigError>([&] { load_safetensors(mine, 4, 16); }, mine, {"NUM_HEADS=4", "records 2 heads"});

  // A record that disagrees with the tensors, or that this pax-ocl does not know.
  const std::string bytes = read_bytes(mine);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  auto tampered = [&](const std::string& key, const std::string& value, const std::string& name) {
    auto header = nlohmann::json::parse(bytes.substr(8, n));
    header["__metadata__"][key] = value;
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    write_safetensors_raw(dir.path() / name, text.size(), text, bytes.substr(8 + n));
    return dir.path() / name;
  };
  const fs::path layers = tampered("pax_ocl.num_layers", "3", "layers.safetensors");
  expect_file_error([&] { load_safetensors(layers, std::nullopt, 16); }, layers, {"pax_ocl.num_layers", "\"3\"", "the tensors give"});
  const fs::path eps = tampered("pax_ocl.layer_norm_epsilon", "1e-06", "eps.safetensors");
  expect_file_error([&] { load_safetensors(eps, std::nullopt, 16); }, eps, {"pax_ocl.layer_norm_epsilon"});
  const fs::path unknown = tampered("pax_ocl.rope_scaling", "2", "unknown.safetensors");
  expect_file_error([&] { load_safetensors(unknown, std::nullopt, 16); }, unknown, {"pax_ocl.rope_scaling", "does not know"});

  // A Hugging Face file: no record and no config.json -> NUM_HEADS is required; with config.json, n_head.
  expect_error_naming<ConfigError>([&] { load_safetensors(hf, std::nullopt, 16); }, hf, {"head count", "--fdl.NUM_HEADS"});
  const fs::path config = dir.path() / "hf" / "config.json";
  write_bytes(config, R"({"model_type": "gpt2", "n_head": 2, "n_embd": 8, "n_layer": 2, "layer_norm_epsilon": 1e-05})");
  EXPECT_EQ(load_safetensors(hf, std::nullopt, 16).config.gpt().num_heads, 2);
  expect_error_naming<ConfigError>([&] { load_safetensors(hf, 4, 16); }, hf, {"NUM_HEADS=4", "records 2 heads"});
  write_bytes(config, R"({"model_type": "gpt2", "n_head": 2, "n_embd": 32})");
  expect_file_error([&] { load_safetensors(hf, std::nullopt, 16); }, config, {"n_embd", "32", "give 8"});
  write_bytes(config, R"({"model_type": "gpt2", "n_head": 2, "layer_norm_epsilon": 1e-6})");
  expect_file_error([&] { load_safetensors(hf, std::nullopt, 16); }, config, {"layer_norm_epsilon"});
  write_bytes(config, R"({"model_type": "gpt2", "n_head": 2, "activation_function": "relu"})");
  expect_file_error([&] { load_safetensors(hf, std::nullopt, 16); }, config, {"activation_function", "relu"});
  // Not strings (issue 42): one-line errors, not nlohmann's type_error (found in the LLaMA reader's twin).
  write_bytes(config, R"({"model_type": 2, "n_head": 2})");
  expect_file_error([&] { load_safetensors(hf, std::nullopt, 16); }, config, {"model_type is 2"});
  write_bytes(config, R"({"model_type": "gpt2", "n_head": 2, "activation_function": 1})");
  expect_file_error([&] { load_safetensors(hf, std::nullopt, 16); }, config, {"activation_function", "is 1"});
  // GPT2Config's switches of the attention arithmetic: the value pax-ocl computes loads, another is refused.
  write_bytes(config, R"({"model_type": "gpt2", "n_head": 2, "scale_attn_weights": true,
                          "scale_attn_by_inverse_layer_idx": false, "reorder_and_upcast_attn": true})");
  EXPECT_EQ(load_safetensors(hf, std::nullopt, 16).config.gpt().num_heads, 2);
  write_bytes(config, R"({"model_type": "gpt2", "n_head": 2, "scale_attn_weights": false})");
  expect_file_error([&] { load_safetensors(hf, std::nullopt, 16); }, config, {"\"scale_attn_weights\" is false"});
  write_bytes(config, R"({"model_type": "gpt2", "n_head": 2, "scale_attn_by_inverse_layer_idx": true})");
  expect_file_error([&] { load_safetensors(hf, std::nullopt, 16); }, config,
                    {"\"scale_attn_by_inverse_layer_idx\" is true"});
  write_bytes(config, R"({"model_type": "gpt2", "n_head": 2, "add_cross_attention": true})");
  expect_file_error([&] { load_safetensors(hf, std::nullopt, 16); }, config, {"\"add_cross_attention\" is true"});
  write_bytes(config, R"({"model_type": "gpt2", "n_head": 2, "scale_attn_weights": "yes"})");
  expect_file_error([&] { load_safetensors(hf, std::nullopt, 16); }, config, {"scale_attn_weights", "expected true or false"});
}

TEST(WeightsIo, BlockKindsParseAsAPattern) {
  EXPECT_EQ(parse_block_kinds("attention,ssm"), (std::vector<BlockKind>{BlockKind::kAttention, BlockKind::kSsm}));
  EXPECT_EQ(parse_block_kinds("[ssm, 'attention']"), (std::vector<BlockKind>{BlockKind::kSsm, BlockKind::kAttention}));
  EXPECT_EQ(parse_block_kinds("ssm"), (std::vector<BlockKind>{BlockKind::kSsm}));
  EXPECT_THROW(parse_block_kinds("attention,,ssm"), ConfigError);
  EXPECT_THROW(parse_block_kinds("mamba"), ConfigError);
  GptConfig c;
  c.num_layers = 3;
  c.block_kinds = {BlockKind::kAttention, BlockKind::kSsm};
  EXPECT_THROW(c.validate(), ConfigError);  // 2 kinds do not repeat over 3 layers
  c.num_layers = 4;
  EXPECT_EQ(c.block_kind(2), BlockKind::kAttention);
  EXPECT_EQ(c.block_kind(3), BlockKind::kSsm);
  EXPECT_EQ(c.ssm_blocks(), 2);
}

TEST(WeightsIo, LlmcThroughSafetensorsKeepsEveryRealParameter) {
  TempDir dir;
  write_llmc(dir.path() / "in.bin", kPadded);
  const HostWeights orig = load_llmc(dir.path() / "in.bin", 16);
  save_safetensors(dir.path() / "mid.safetensors", orig);
  const HostWeights mid = load_safetensors(dir.path() / "mid.safetensors", kPadded.NH, 16);
  save_llmc(dir.path() / "out.bin", mid);
  const HostWeights back = load_llmc(dir.path() / "out.bin", 16);

  const ParameterLayout lo(orig.config, 16);
  for (const HostWeights* w : {&mid, &back}) {
    const GptConfig& c = w->config.gpt();
    EXPECT_EQ(c.num_layers, kPadded.L);
    EXPECT_EQ(c.model_dims, kPadded.C);
    EXPECT_EQ(c.hidden_dims, 4 * kPadded.C);
    EXPECT_EQ(c.num_heads, kPadded.NH);
    EXPECT_EQ(c.max_seq_len, kPadded.maxT);
    EXPECT_EQ(c.vocab_size, kPadded.V);
    EXPECT_EQ(c.padded_vocab(), kPadded.Vp);  // pax-ocl's safetensors record Vp (not the default rounding, 128)
    const ParameterLayout lw(c, 16);
    for (const TensorSpec& t : lo.tensors()) {
      const TensorSpec& u = lw.at(t.name);
      const std::size_t real = t.name == "wte" ? static_cast<std::size_t>(kPadded.V * kPadded.C) : t.count;
      for (std::size_t j = 0; j < real; ++j) ASSERT_EQ(w->data[u.offset + j], orig.data[t.offset + j]) << t.name << "[" << j << "]";
      for (std::size_t j = real; j < u.count; ++j) ASSERT_EQ(w->data[u.offset + j], 0.0f) << t.name << " padding";
    }
  }
}

// ---- bad files ----------------------------------------------------------------------------------

TEST(WeightsIo, LlmcErrorsNameTheFileAndTheProblem) {
  TempDir dir;
  const fs::path f = dir.path() / "bad.bin";
  auto load = [&] { load_llmc(f, 1); };

  expect_file_error(load, f, {"cannot open", "No such file"});
  fs::create_directory(f);
  expect_file_error(load, f, {"not a regular file"});
  fs::remove(f);

  write_bytes(f, std::string(100, '\0'));
  expect_file_error(load, f, {"truncated", "got 100"});

  write_llmc(f, kPadded, 1234);
  expect_file_error(load, f, {"not an llm.c checkpoint: magic 1234, expected 20240326"});
  write_llmc(f, kPadded, 20240326, 5);
  expect_file_error(load, f, {"unsupported", "version 5", "float32"});

  const std::size_t size = llmc_file_bytes(kPadded);
  write_llmc(f, kPadded);
  ASSERT_EQ(fs::file_size(f), size);
  fs::resize_file(f, size - 4);
  expect_file_error(load, f, {"truncated", fmt::format("expected {} bytes, got {}", size, size - 4)});
  fs::resize_file(f, size + 4);
  expect_file_error(load, f, {"trailing", fmt::format("expected {} bytes, got {}", size, size + 4)});

  write_llmc(f, Dims{16, 50, 2, 3, 8, 64});
  expect_file_error(load, f, {"C=8 is not a multiple of NH=3"});
  write_llmc(f, Dims{16, 50, 2, 2, 8, 40});
  expect_file_error(load, f, {"Vp=40 is smaller than V=50"});
  write_llmc(f, Dims{16, 50, 0, 2, 8, 64});
  expect_file_error(load, f, {"L=0"});
  // Each dimension of the header at 0 is refused by its own name (NH = 0 would divide by zero):
  // a good file, then one header field (ints 2..7: maxT V L NH C Vp) overwritten.
  const char* const fields[] = {"maxT", "V", "L", "NH", "C", "Vp"};
  for (int i = 0; i < 6; ++i) {
    write_llmc(f, kPadded);
    std::fstream io(f, std::ios::binary | std::ios::in | std::ios::out);
    const std::int32_t zero = 0;
    io.seekp(static_cast<std::streamoff>((2 + i) * sizeof zero));
    io.write(reinterpret_cast<const char*>(&zero), sizeof zero);
    io.close();
    expect_file_error(load, f, {fmt::format("bad llm.c header: {}=0, must be at least 1", fields[i])});
  }
}

// Headers that claim huge models in small files: the size check comes before anything is allocated
// or built from the header (before the fix, L = 2^31-1 ran out of memory building the layout).
TEST(WeightsIo, LlmcHeadersClaimingHugeModelsFailOnTheFileSize) {
  TempDir dir;
  const fs::path f = dir.path() / "huge.bin";
  for (const Dims d : {Dims{1024, 50257, 1 << 28, 12, 768, 50304},
                       Dims{std::numeric_limits<std::int32_t>::max(), std::numeric_limits<std::int32_t>::max(),
                            std::numeric_limits<std::int32_t>::max(), 1, std::numeric_limits<std::int32_t>::max() / 4,
                            std::numeric_limits<std::int32_t>::max()}}) {
    std::int32_t header[256] = {20240326, 3, d.maxT, d.V, d.L, d.NH, d.C, d.Vp};
    write_bytes(f, std::string(reinterpret_cast<const char*>(header), sizeof header) + std::string(40000, '\0'));
    try {
      load_llmc(f, 1);
      ADD_FAILURE() << "a 41 KB file loaded as a model of L=" << d.L;
    } catch (const FileError& e) {
      const std::string msg = e.what();
      EXPECT_TRUE(msg.find("truncated") != std::string::npos || msg.find("unusable model shape") != std::string::npos) << msg;
    }
  }
}

// A real file of many thin layers loads in linear time: tensors are found by name through a map
// (before the fix, 20000 layers meant ~10^10 name comparisons).
TEST(WeightsIo, LlmcWithManyLayersLoads) {
  TempDir dir;
  const fs::path f = dir.path() / "deep.bin";
  const Dims deep{1, 1, 20000, 1, 1, 1};
  write_llmc(f, deep);
  const HostWeights w = load_llmc(f, 1);
  EXPECT_EQ(w.config.num_blocks(), 20000);
  const ParameterLayout layout(w.config, 1);
  EXPECT_EQ(w.data[layout.at("h19999.mlp.proj.b").offset], value(13, 19999));  // kind 13 (fcprojb), layer 19999
}

TEST(WeightsIo, SafetensorsNamesAloneCannotClaimAHugeModel) {
  TempDir dir;
  const fs::path f = dir.path() / "names.safetensors";
  // Real wte / wpe / h.0.mlp.c_fc, then 100000 layers named by zero-element tensors: the layout
  // this implies (100000 x ~12.6M floats) must be refused from the file's size, not allocated.
  auto tensor = [](std::string name, std::vector<std::int64_t> shape) {
    std::size_t n = 1;
    for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
    return StTensor{std::move(name), std::move(shape), std::string(n * 4, '\0'), "F32", std::nullopt};
  };
  std::vector<StTensor> tensors = {tensor("transformer.wte.weight", {2, 1024}), tensor("transformer.wpe.weight", {2, 1024}),
                                   tensor("transformer.h.0.mlp.c_fc.weight", {1024, 4096})};
  for (int l = 1; l < 100000; ++l) tensors.push_back(tensor(fmt::format("transformer.h.{}.ln_1.weight", l), {0}));
  write_safetensors(f, tensors);
  expect_file_error([&] { load_safetensors(f, 8, 1); }, f, {"100000-layer model", "truncated or not"});
}

TEST(WeightsIo, DeeplyNestedOrOversizedSafetensorsHeadersAreRefused) {
  TempDir dir;
  const fs::path f = dir.path() / "nested.safetensors";
  // 100000 levels in __metadata__: parsed, then copied recursively (stack overflow) before the fix.
  const std::string nested = R"({"__metadata__":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  write_safetensors_raw(f, nested.size(), nested, "");
  expect_file_error([&] { load_safetensors(f, 1, 1); }, f, {"nested deeper than 64 levels"});
  // A header length beyond the format's 100 MB cap (the file is sparse: no disk is used).
  const std::uint64_t huge = (std::uint64_t{100} << 20) + 8;
  write_safetensors_raw(f, huge, "{}", "");
  fs::resize_file(f, 8 + huge);
  expect_file_error([&] { load_safetensors(f, 1, 1); }, f, {"the format allows at most"});
}

TEST(WeightsIo, SafetensorsErrorsNameTheFileAndTheProblem) {
  TempDir dir;
  const fs::path f = dir.path() / "bad.safetensors";
  auto load = [&] { load_safetensors(f, kPadded.NH, 1); };
  const auto good = hf_model(kPadded, 32);
  auto write_with = [&](auto&& edit) {
    auto tensors = good;
    edit(tensors);
    write_safetensors(f, tensors);
  };

  expect_file_error(load, f, {"cannot open", "No such file"});
  write_bytes(f, "abc");
  expect_file_error(load, f, {"truncated", "got 3"});
  write_safetensors_raw(f, 1000, "{}", "0123456789");
  expect_file_error(load, f, {"header length 1000", "past the end"});
  write_safetensors_raw(f, 9, "{not json", "");
  expect_file_error(load, f, {"invalid safetensors JSON header"});

  write_with([](auto& ts) { std::erase_if(ts, [](const StTensor& t) { return t.name == "transformer.h.1.mlp.c_fc.bias"; }); });
  expect_file_error(load, f, {"missing tensor transformer.h.1.mlp.c_fc.bias"});
  write_with([](auto& ts) { find(ts, "transformer.h.1.attn.c_attn.weight").shape = {24, 8}; });
  expect_file_error(load, f, {"tensor transformer.h.1.attn.c_attn.weight has shape [24, 8], expected [8, 24]"});
  for (const char* dtype : {"F16", "BF16"}) {
    write_with([&](auto& ts) {
      StTensor& t = find(ts, "transformer.ln_f.weight");
      t.dtype = dtype;
      t.bytes.resize(t.bytes.size() / 2);
    });
    expect_file_error(load, f, {"tensor transformer.ln_f.weight has dtype", dtype, "only F32"});
  }
  // A whole float16 file (half the bytes float32 shapes imply) is named by its dtype, not called truncated.
  write_with([](auto& ts) {
    for (StTensor& t : ts) {
      t.dtype = "F16";
      t.bytes.resize(t.bytes.size() / 2);
    }
  });
  expect_file_error(load, f, {"has dtype F16", "only F32"});

  // Offsets: the last-listed tensor (wte.weight, 50*8 floats) is moved about.
  const std::uint64_t data_bytes = [&] {
    std::uint64_t n = 0;
    for (const StTensor& t : good) n += t.bytes.size();
    return n;
  }();
  const std::uint64_t wte_bytes = 50 * 8 * 4, wte_begin = data_bytes - wte_bytes;
  write_with([&](auto& ts) { ts.back().offsets = {{wte_begin, data_bytes + 4}}; });
  expect_file_error(load, f, {"transformer.wte.weight", "data_offsets", "out of range"});
  write_with([&](auto& ts) { ts.back().offsets = {{wte_begin, data_bytes - 4}}; });
  expect_file_error(load, f, {"transformer.wte.weight", "data_offsets", fmt::format("needs {}", wte_bytes)});
  write_with([&](auto& ts) { ts.back().offsets = {{wte_begin - 4, data_bytes - 4}}; });
  expect_file_error(load, f, {"overlapping"});
  write_safetensors(f, good, "junk");
  expect_file_error(load, f, {"belong to no tensor"});

  write_with([](auto& ts) {
    std::erase_if(ts, [](const StTensor& t) { return t.name.starts_with("transformer.h.0."); });
  });
  expect_file_error(load, f, {"layer transformer.h.0 is missing"});
  // No layer at all: the error names the first tensor of layer 0.
  write_with([](auto& ts) { std::erase_if(ts, [](const StTensor& t) { return t.name.starts_with("transformer.h."); }); });
  expect_file_error(load, f, {"no transformer layers", "missing tensor transformer.h.0.ln_1.weight"});
  // The parameters alone (no lm_head.weight, no attn.bias / attn.masked_bias buffers) with one
  // tensor emptied (shape [0], no bytes; ln_f's shape gives no dimension): the names and shapes
  // still imply every byte of the complete file, which the message states before anything is read.
  auto params_only = good;
  std::erase_if(params_only, [](const StTensor& t) {
    return t.name.ends_with(".attn.bias") || t.name.ends_with(".attn.masked_bias") || t.name == "lm_head.weight";
  });
  std::uint64_t params_bytes = 0;
  for (const StTensor& t : params_only) params_bytes += t.bytes.size();
  StTensor& ln_f = find(params_only, "transformer.ln_f.weight");
  const std::uint64_t ln_f_bytes = ln_f.bytes.size();
  ln_f.shape = {0};
  ln_f.bytes.clear();
  write_safetensors(f, params_only);
  expect_file_error(load, f, {fmt::format("a {}-layer model of {} bytes, but the file holds {} bytes", kPadded.L,
                                          params_bytes, params_bytes - ln_f_bytes)});

  write_safetensors(f, good);
  EXPECT_THROW(load_safetensors(f, 3, 1), ConfigError);  // 3 does not divide C=8
  EXPECT_NO_THROW(load());
}

// Where save_weights_file may write, by the model and the suffix, checked before any work.
TEST(WeightsIo, TheDestinationIsCheckedBeforeAnyWork) {
  TempDir dir;
  const ModelConfig gpt = testing::gpt_config(2, 8, 32, 2, 4, 4, 50);
  ModelConfig ssm = gpt;
  GptConfig with_ssm = gpt.gpt();
  with_ssm.block_kinds = {BlockKind::kAttention, BlockKind::kSsm};
  ssm = with_ssm;
  const ModelConfig llama = testing::tiny_llama_config();
  EXPECT_NO_THROW(check_weights_destination(dir.path() / "a.bin", gpt, "save_weights", {}));
  EXPECT_NO_THROW(check_weights_destination(dir.path() / "a.safetensors", ssm, "save_weights", {}));
  EXPECT_NO_THROW(check_weights_destination(dir.path() / "a.safetensors", llama, "save_weights", {}));
  EXPECT_NO_THROW(check_weights_destination(dir.path() / "new-dir", llama, "save_weights", {}));
  expect_error_naming<ConfigError>([&] { check_weights_destination(dir.path() / "a.bin", ssm, "save_weights", {}); },
                                   "--save_weights=" + (dir.path() / "a.bin").string(),
                                   {"an llm.c checkpoint holds attention blocks only"});
  expect_error_naming<ConfigError>([&] { check_weights_destination(dir.path() / "a.bin", llama, "output", {}); },
                                   "--output=" + (dir.path() / "a.bin").string(),
                                   {"llm.c format (.bin) holds GPT-2 models only", "FILE.safetensors", "a directory"});
  const fs::path missing = dir.path() / "missing";
  for (const ModelConfig& m : {gpt, llama}) {
    expect_error_naming<ConfigError>([&] { check_weights_destination(missing / "a.safetensors", m, "save_weights", {}); },
                                     missing, {"the directory", "create it first"});
  }
  expect_error_naming<ConfigError>([&] { check_weights_destination(missing / "out", llama, "save_weights", {}); },
                                   missing, {"the directory", "create it first"});
  // Into the job directory that train creates first (with its parents): allowed, not elsewhere.
  const fs::path job = dir.path() / "runs" / "job";
  EXPECT_NO_THROW(check_weights_destination(job / "final.safetensors", gpt, "save_weights", job));
  expect_error_naming<ConfigError>([&] { check_weights_destination(missing / "a.bin", gpt, "save_weights", job); },
                                   missing, {"the directory", "create it first"});
  expect_error_naming<ConfigError>([&] { check_weights_destination(dir.path(), gpt, "save_weights", {}); }, dir.path(),
                                   {"is a directory; give a file name"});
  // save_weights_file refuses the same, writing nothing.
  HostWeights w{llama, 1, std::vector<float>(ParameterLayout(llama, 1).total())};
  EXPECT_THROW(save_weights_file(dir.path() / "b.bin", w), ConfigError);
  EXPECT_FALSE(fs::exists(dir.path() / "b.bin"));
}

}  // namespace
}  // namespace paxocl::models
