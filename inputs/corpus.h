// Corpora: raw text as documents, split into training and validation by whole documents.
//   kjv   the King James Bible from Debian's bible-kjv package (`bible -f "Gen1:1-Rev22:21"`),
//         one document per book; eight whole books are held out for validation.
//   text  files; each file is a document, or, for a single file, each blank-line-separated
//         paragraph; every k-th document is held out to reach the validation fraction.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace paxocl::inputs {

inline constexpr double kDefaultValidationFraction = 0.05;

struct Document {
  std::string name;
  std::string text;
};

struct Corpus {
  std::vector<Document> train, validation;
};

Corpus read_kjv();  // DataError with install advice when the `bible` program is missing
Corpus read_text_files(const std::vector<std::filesystem::path>& files, double validation_fraction);

// The books of the KJV held out for validation (as `bible` abbreviates them).
const std::vector<std::string>& kjv_validation_books();

}  // namespace paxocl::inputs
