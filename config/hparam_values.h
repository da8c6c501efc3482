// Parsing of --fdl.NAME=VALUE override values by the field's type, with errors that name the
// field and the type it expects (as Fiddle reports a bad override).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace paxocl::config {

long parse_int_value(std::string_view field, std::string_view text);      // "12", "-3", "1_000"
double parse_float_value(std::string_view field, std::string_view text);  // "6e-4", "0.5", "3"
bool parse_bool_value(std::string_view field, std::string_view text);     // true/false/True/False/1/0
std::string parse_string_value(std::string_view field, std::string_view text);  // quotes optional
std::vector<long> parse_int_list_value(std::string_view field, std::string_view text);  // "[8, 1, 1]" or "8,1,1"

}  // namespace paxocl::config
