// libpaxocl_spm: a tiny C API over libsentencepiece, loaded by inputs/tokenizer.cpp into a link-map
// namespace of its own (dlmopen(LM_ID_NEWLM)). Debian's libsentencepiece embeds its own protobuf 3.14
// with the same symbol names as the system libprotobuf 3.21 that pax-ocl uses for its manifests and
// TensorBoard events; in one global symbol scope the two versions bind to each other's code and
// crash at start-up. In its own namespace sentencepiece sees only its own copy (and its own C and
// C++ runtimes), so nothing allocated here may be freed outside: buffers go back through
// paxocl_spm_release. The namespace holds no sanitizer runtime either, so this library is always
// built uninstrumented (inputs/CMakeLists.txt).
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {
void set_error(char* err, std::size_t len, const std::string& what) {
  if (err != nullptr && len > 0) {
    std::strncpy(err, what.c_str(), len - 1);
    err[len - 1] = '\0';
  }
}

// The lines of a text file, for SentencePiece's trainer.
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(const char* path) : in_(path, std::ios::binary), path_(path) {
    if (!in_) status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kNotFound, "cannot read " + path_);
    Next();
  }
  bool done() const override { return done_; }
  void Next() override {
    done_ = !status_.ok() || !std::getline(in_, line_);
    if (done_ && in_.bad()) status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kDataLoss, "read error in " + path_);
  }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return status_; }

 private:
  std::ifstream in_;
  std::string path_, line_;
  bool done_ = false;
  sentencepiece::util::Status status_;
};

}  // namespace

extern "C" {

void* paxocl_spm_load(const char* model, char* err, std::size_t err_len) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  const auto status = sp->Load(model);
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    delete sp;
    return nullptr;
  }
  return sp;
}

void paxocl_spm_free(void* sp) { delete static_cast<sentencepiece::SentencePieceProcessor*>(sp); }

// Frees a buffer paxocl_spm_encode or paxocl_spm_decode returned (with this namespace's free()).
void paxocl_spm_release(void* buffer) { std::free(buffer); }

int paxocl_spm_vocab_size(void* sp) { return static_cast<sentencepiece::SentencePieceProcessor*>(sp)->GetPieceSize(); }

int paxocl_spm_eos_id(void* sp) { return static_cast<sentencepiece::SentencePieceProcessor*>(sp)->eos_id(); }

// TrainerSpec.split_by_whitespace (ModelProto field 2, TrainerSpec field 22, default true), read
// from the model's wire format: Debian installs no sentencepiece_model.pb.h to read it through.
// 1 when pieces never span whitespace, 0 when the model was trained with split_by_whitespace=false.
int paxocl_spm_splits_at_whitespace(void* sp) {
  const std::string bytes = static_cast<sentencepiece::SentencePieceProcessor*>(sp)->serialized_model_proto();
  // Calls `on_field(number, wire_type, value, payload)` for each field of [p, end): value holds a
  // varint, payload a length-delimited field's bytes; false on a malformed message.
  const auto fields = [](const char* p, const char* end, const auto& on_field) {
    const auto varint = [&p, end](std::uint64_t& v) {
      v = 0;
      for (int shift = 0; p < end && shift < 64; shift += 7) {
        const auto byte = static_cast<unsigned char>(*p++);
        v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) return true;
      }
      return false;
    };
    while (p < end) {
      std::uint64_t key = 0, value = 0;
      if (!varint(key)) return false;
      std::string_view payload;
      switch (key & 7) {
        case 0: if (!varint(value)) return false; break;
        case 1: if (end - p < 8) return false; p += 8; break;
        case 5: if (end - p < 4) return false; p += 4; break;
        case 2:
          if (!varint(value) || value > static_cast<std::uint64_t>(end - p)) return false;
          payload = std::string_view(p, value);
          p += value;
          break;
        default: return false;  // groups: not in SentencePiece's messages
      }
      on_field(key >> 3, key & 7, value, payload);
    }
    return true;
  };
  int splits = 1;  // the last occurrence wins, as protobuf merges repeated fields
  fields(bytes.data(), bytes.data() + bytes.size(), [&](std::uint64_t number, std::uint64_t wire, std::uint64_t, std::string_view trainer) {
    if (number != 2 || wire != 2) return;
    fields(trainer.data(), trainer.data() + trainer.size(), [&](std::uint64_t n, std::uint64_t w, std::uint64_t v, std::string_view) {
      if (n == 22 && w == 0) splits = v != 0 ? 1 : 0;
    });
  });
  return splits;
}

// *ids is malloc'ed here; the caller returns it with paxocl_spm_release.
int paxocl_spm_encode(void* sp, const char* text, std::size_t len, int** ids, std::size_t* count, char* err,
                      std::size_t err_len) {
  std::vector<int> out;
  const auto status = static_cast<sentencepiece::SentencePieceProcessor*>(sp)->Encode(std::string(text, len), &out);
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    return 1;
  }
  *count = out.size();
  *ids = static_cast<int*>(std::malloc(sizeof(int) * (out.empty() ? 1 : out.size())));
  std::memcpy(*ids, out.data(), sizeof(int) * out.size());
  return 0;
}

// *text is malloc'ed here and NUL-terminated; the caller returns it with paxocl_spm_release.
int paxocl_spm_decode(void* sp, const int* ids, std::size_t count, char** text, char* err, std::size_t err_len) {
  std::string out;
  const auto status =
      static_cast<sentencepiece::SentencePieceProcessor*>(sp)->Decode(std::vector<int>(ids, ids + count), &out);
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    return 1;
  }
  *text = static_cast<char*>(std::malloc(out.size() + 1));
  std::memcpy(*text, out.c_str(), out.size() + 1);
  return 0;
}

// Trains on the lines of the file `input` with the options keys[i] = values[i] (SentencePiece's
// flag names, without "--"). The options go in as a map and the text through an iterator, never
// through SentencePiece's argument string: that is split at spaces (and its input list at
// commas), which broke paths holding either.
int paxocl_spm_train_lines(const char* input, const char* const* keys, const char* const* values, std::size_t count,
                           char* err, std::size_t err_len) {
  std::unordered_map<std::string, std::string> options;
  for (std::size_t i = 0; i < count; ++i) options[keys[i]] = values[i];
  LineIterator lines(input);
  const auto status = sentencepiece::SentencePieceTrainer::Train(options, &lines);
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    return 1;
  }
  return 0;
}

}  // extern "C"
