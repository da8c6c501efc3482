// Files read by name must be regular files (directories where a directory is expected), and are
// checked before they are opened: open(2) of a FIFO for reading waits for a writer (forever, when
// none comes; an HF index naming a FIFO as a shard hung `pax-ocl eval`), and a device such as
// /dev/zero never ends. Every refusal is one clause naming what the path is instead.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/unique_fd.h"

namespace paxocl {

// Why `file` is not a regular file (symlinks followed), as a clause without the path: "is a FIFO,
// not a regular file", "is a directory, not a regular file", "no such file or directory", ...; empty when it is one.
std::string why_not_regular_file(const std::filesystem::path& file);
// Why `dir` is not a directory, alike ("is a regular file, not a directory"); empty when it is one.
std::string why_not_directory(const std::filesystem::path& dir);

// Throw FileError("<path>: <why>") unless `file` is a regular file / `dir` a directory: for callers
// that open by name through another library (std::ifstream, SentencePiece) and for directories.
void require_regular_file(const std::filesystem::path& file);
void require_directory(const std::filesystem::path& dir);

// A name a file in a given directory may have, read from a file (a checkpoint manifest, an HF
// index): not empty, not "." or "..", no '/' (nothing outside the directory) and no NUL (which
// the C library would end the name at: "a\0b" would open "a").
bool is_plain_file_name(std::string_view name);

// A regular file opened for reading, or why it was refused.
struct OpenedFile {
  UniqueFd fd;             // invalid when refused; blocking (O_NONBLOCK cleared), close-on-exec
  std::uint64_t size = 0;  // bytes, from fstat of fd
  std::string refused;     // the reason, a clause without the path ("cannot open for reading: <errno>;
                           // check the path", "is a FIFO, not a regular file"); empty when opened
};
// Opens without blocking (O_NONBLOCK: a FIFO opens at once) and checks the descriptor itself with
// fstat, so a file swapped after a check by name is still refused. Never throws for the file's sake.
OpenedFile open_regular_file(const std::filesystem::path& file);

}  // namespace paxocl
