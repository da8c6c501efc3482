// Which files the process opened: every open(2) call the project's code makes is recorded (path as
// passed, opened or not), so a target can check that a reader touched nothing outside its input.
// Every file pax-ocl reads by name is opened by common/regular_file.cpp's open_regular_file, so
// this sees all of them. The recording is a link-time wrapper: a target using it links
// open_log.cpp with -Wl,--wrap=open (fuzz/CMakeLists.txt), which sends the project's static
// libraries' calls of open() through __wrap_open here (the C++ runtime's own calls are not seen).
#pragma once

#include <filesystem>
#include <vector>

namespace paxocl::fuzz {

// The paths passed to open() since the last call, in call order; clears the record.
std::vector<std::filesystem::path> take_opened_paths();

}  // namespace paxocl::fuzz
