// Where the golden files (tests/golden) are: $PAX_OCL_GOLDEN_DIR when set (a relocated bundle sets it
// to its share/golden), else the source tree's, compiled in as PAXOCL_GOLDEN_DIR.
#pragma once

#include <cstdlib>
#include <filesystem>

#ifndef PAXOCL_GOLDEN_DIR
#error "PAXOCL_GOLDEN_DIR must name tests/golden"
#endif

inline std::filesystem::path golden_dir() {
  const char* dir = std::getenv("PAX_OCL_GOLDEN_DIR");
  return dir != nullptr && *dir != '\0' ? std::filesystem::path(dir) : std::filesystem::path(PAXOCL_GOLDEN_DIR);
}
