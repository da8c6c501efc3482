#include "inputs/corpus.h"

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "common/errors.h"
#include "common/regular_file.h"

namespace paxocl::inputs {

const std::vector<std::string>& kjv_validation_books() {
  // Narrative, poetry, prophecy and letters from both testaments, about 4% of the text.
  static const std::vector<std::string> books = {"Ruth", "Eccl", "Lam", "Jonah", "Mark", "Gal", "Jas", "Jude"};
  return books;
}

Corpus read_kjv() {
  FILE* pipe = ::popen("bible -f 'Gen1:1-Rev22:21' 2>/dev/null", "r");
  std::string text;
  if (pipe != nullptr) {
    char buffer[1 << 16];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, n);
    ::pclose(pipe);
  }
  if (text.empty()) {
    throw DataError("the KJV corpus needs the `bible` program of Debian's bible-kjv package: apt-get install bible-kjv");
  }
  // Lines: "<Book><chapter>:<verse> <text>", e.g. "Ge1:1 In the beginning ...".
  static const std::regex line_re(R"(^([0-9]?[A-Za-z]+)[0-9]+:[0-9]+ (.*)$)");
  Corpus corpus;
  std::istringstream in(text);
  std::string line;
  Document* current = nullptr;
  std::vector<Document> books;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, line_re)) continue;
    if (books.empty() || books.back().name != m[1]) books.push_back({m[1], ""});
    current = &books.back();
    current->text += m[2].str() + "\n";
  }
  if (books.size() != 66) throw DataError(fmt::format("the KJV text from `bible` has {} books, expected 66", books.size()));
  const auto& held_out = kjv_validation_books();
  for (Document& b : books) {
    const bool validation = std::find(held_out.begin(), held_out.end(), b.name) != held_out.end();
    (validation ? corpus.validation : corpus.train).push_back(std::move(b));
  }
  return corpus;
}

Corpus read_text_files(const std::vector<std::filesystem::path>& files, double validation_fraction) {
  if (!(validation_fraction >= 0 && validation_fraction < 1)) {
    throw ConfigError(fmt::format("--validation_fraction={}: must be in [0, 1)", validation_fraction));
  }
  std::vector<Document> docs;
  for (const auto& f : files) {
    if (const std::string why = why_not_regular_file(f); !why.empty()) {  // a FIFO would block the open below
      throw DataError(fmt::format("text file {}: cannot be read ({}); check the path", f.string(), why));
    }
    std::ifstream in(f, std::ios::binary);
    if (!in) throw DataError(fmt::format("text file {}: cannot be read; check the path and permissions", f.string()));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw DataError(fmt::format("text file {}: read error", f.string()));
    if (files.size() > 1) {
      docs.push_back({f.filename().string(), std::move(text)});
      continue;
    }
    std::size_t start = 0, index = 0;
    while (start < text.size()) {
      std::size_t end = text.find("\n\n", start);
      if (end == std::string::npos) end = text.size();
      if (text.find_first_not_of(" \t\r\n", start) < end) {
        docs.push_back({fmt::format("{}#{}", f.filename().string(), index++), text.substr(start, end - start) + "\n"});
      }
      start = end + 2;
    }
  }
  if (docs.empty()) throw DataError("the text files hold no text");
  Corpus corpus;
  const std::size_t every = validation_fraction > 0 ? static_cast<std::size_t>(std::max(1.0, 1.0 / validation_fraction)) : 0;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const bool validation = every > 0 && docs.size() > 1 && i % every == every - 1;
    (validation ? corpus.validation : corpus.train).push_back(std::move(docs[i]));
  }
  if (corpus.train.empty()) throw DataError("no training documents left after holding out validation");
  return corpus;
}

}  // namespace paxocl::inputs
